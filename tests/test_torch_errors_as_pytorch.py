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
    assert (tt.tensor([7, 8]) // 2).tolist() == [3, 4]
    with np.errstate(divide="ignore"):  # (NumPy warns where PyTorch is silent: docs/torch.md)
        assert (tt.tensor([7.0]) // 0).tolist() == [float("inf")]  # (floats divide by 0 as PyTorch's do)
    assert tt.ones(2, 3).shape == (2, 3) and tt.zeros([2]).shape == (2,)
    assert tt.mm(tt.ones(2, 3), tt.ones(3, 1)).shape == (2, 1)
