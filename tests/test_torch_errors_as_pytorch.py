"""Bad input to the facade raises what PyTorch 2.13 raises (type and text):
integer division by zero, sizes that are no ints, ``mm`` of a vector, a tensor
of ``None``, and operands of ``**``, ``maximum``, ``minimum`` and ``atan2``
whose shapes do not broadcast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as tt

BROADCAST = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
UNPACK = 'failed to unpack the object at pos 2 with error "type must be tuple of ints,but got float"'
CASES: list[tuple[str, Callable[[Any], Any], type, str]] = [
    ("int // 0", lambda t: t.tensor([1, 2]) // 0, RuntimeError, "ZeroDivisionError"),
    ("int % 0", lambda t: t.tensor([1, 2]) % 0, RuntimeError, "ZeroDivisionError"),
    ("5 // int 0", lambda t: 5 // t.tensor([0]), RuntimeError, "ZeroDivisionError"),
    ("ones(2.5)", lambda t: t.ones(2.5), TypeError,
     "ones(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("zeros(2, 2.5)", lambda t: t.zeros(2, 2.5), TypeError, "zeros(): argument 'size' " + UNPACK),
    ("randn((2, 2.5))", lambda t: t.randn((2, 2.5)), TypeError, "randn(): argument 'size' " + UNPACK),
    ("empty([2.0])", lambda t: t.empty([2.0]), TypeError,
     "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    ("mm of a vector", lambda t: t.mm(t.ones(2, 2), t.ones(2)), RuntimeError, "mat2 must be a matrix"),
    ("vector.mm", lambda t: t.ones(2).mm(t.ones(2, 2)), RuntimeError, "self must be a matrix"),
    ("tensor(None)", lambda t: t.tensor(None), RuntimeError, "Could not infer dtype of NoneType"),
    ("tensor(generator)", lambda t: t.tensor(x for x in [1.0]), RuntimeError, "Could not infer dtype of generator"),
    ("**", lambda t: t.ones(2) ** t.ones(3), RuntimeError, BROADCAST),
    ("maximum", lambda t: t.maximum(t.ones(2), t.ones(3)), RuntimeError, BROADCAST),
    ("minimum", lambda t: t.minimum(t.ones(2), t.ones(3)), RuntimeError, BROADCAST),
    ("atan2", lambda t: t.atan2(t.ones(2), t.ones(3)), RuntimeError, BROADCAST),
    ("unsqueeze_ of a view of a leaf", lambda t: t.ones(2, 3, requires_grad=True).t().unsqueeze_(0), RuntimeError,
     "a view of a leaf Variable that requires grad is being used in an in-place operation."),
]


@pytest.mark.parametrize(("what", "call", "kind", "text"), CASES, ids=[c[0] for c in CASES])
def test_the_facade_raises_pytorchs_error(what: str, call: Callable[[Any], Any], kind: type, text: str) -> None:
    with pytest.raises(kind) as got:
        call(tt)
    assert str(got.value) == text


@pytest.mark.parametrize(("what", "call", "kind", "text"), CASES, ids=[c[0] for c in CASES])
def test_pytorch_raises_the_same(what: str, call: Callable[[Any], Any], kind: type, text: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(kind) as got:
        call(torch)
    assert str(got.value).split("\n")[0] == text


def test_the_good_cases_still_work() -> None:
    y = (tt.ones(2, 3, requires_grad=True) * 1).t()
    assert tuple(y.unsqueeze_(0).shape) == (1, 3, 2) and y.grad_fn.name() == "UnsqueezeBackward1"
    with tt.no_grad():
        assert tuple(tt.ones(2, 3, requires_grad=True).t().unsqueeze_(0).shape) == (1, 3, 2)
    assert (tt.tensor([7, 8]) // 2).tolist() == [3, 4]
    with np.errstate(divide="ignore"):  # (NumPy warns where PyTorch is silent: docs/torch.md)
        assert (tt.tensor([7.0]) // 0).tolist() == [float("inf")]  # (floats divide by 0 as PyTorch's do)
    assert tt.ones(2, 3).shape == (2, 3) and tt.zeros([2]).shape == (2,)
    assert tt.mm(tt.ones(2, 3), tt.ones(3, 1)).shape == (2, 1)


GATHER_CASES: list[tuple[str, Callable[[Any], Any]]] = [
    ("index past the end", lambda t: t.tensor([[1.0, 2.0]]).gather(1, t.tensor([[5]]))),
    ("negative index", lambda t: t.tensor([[1.0, 2.0]]).gather(1, t.tensor([[-1]]))),
    ("float index", lambda t: t.tensor([[1.0, 2.0]]).gather(1, t.tensor([[0.5]]))),
    ("index larger than self", lambda t: t.tensor([[1.0, 2.0]]).gather(1, t.tensor([[0], [0]]))),
    ("index of another rank", lambda t: t.tensor([[1.0, 2.0]]).gather(1, t.tensor([0]))),
    ("dim out of range", lambda t: t.tensor([[1.0, 2.0]]).gather(2, t.tensor([[0]]))),
]


@pytest.mark.parametrize(("what", "call"), GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
def test_gather_refuses_bad_indices_as_pytorch(what: str, call: Callable[[Any], Any]) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(tt)
    assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_gather_with_an_index_smaller_than_self() -> None:
    y = tt.arange(12.0).reshape(3, 4).requires_grad_()
    g = y.gather(1, tt.tensor([[3], [0]]))  # (rows 0 and 1 only, as PyTorch reads them)
    assert g.tolist() == [[3.0], [4.0]] and g.grad_fn.name() == "GatherBackward0"
    g.sum().backward()
    assert y.grad.tolist() == [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
