"""Facade defects the op table's strict xfails documented (in-place
composites, alpha, node names, scalar-first function forms, view errors).
Each test runs without PyTorch: exact values, gradients, node names and
messages (read off PyTorch 2.x once); ``tests/test_torch_optable.py``
compares the same rows with PyTorch when it is installed."""

from __future__ import annotations

from typing import Any

import pytest

import tapegrad.torch as torch

F64 = torch.float64


def _leaf(data: Any, dtype: Any = F64) -> Any:
    return torch.tensor(data, dtype=dtype, requires_grad=True)


def _names(t: Any) -> list[str | None]:
    return [None if f is None else type(f).__name__ for f, _ in t.grad_fn.next_functions]


# --- in-place composites: one node, self's gradient through it -----------------------------------


def test_lerp_inplace_with_a_constant_end_differentiates_self() -> None:
    x = _leaf([1.0, 2.0])
    y = x * 1
    y.lerp_(torch.tensor([3.0, 5.0], dtype=F64), 0.25)
    assert y.tolist() == [1.5, 2.75]
    assert type(y.grad_fn).__name__ == "LerpBackward0"
    assert _names(y) == ["MulBackward0", None]
    y.sum().backward()
    assert x.grad.tolist() == [0.75, 0.75]  # 1 - weight, not 1


def test_lerp_inplace_with_an_end_that_requires_grad() -> None:
    x, e = _leaf([1.0, 2.0]), _leaf([3.0, 5.0])
    y = x * 1
    y.lerp_(e, 0.25)
    assert _names(y) == ["MulBackward0", "AccumulateGrad"]
    (y * torch.tensor([1.0, 2.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [0.75, 1.5] and e.grad.tolist() == [0.25, 0.5]


def test_lerp_inplace_with_a_tensor_weight() -> None:
    x, e = _leaf([1.0, 2.0]), _leaf([3.0, 5.0])
    w = torch.tensor(0.25, dtype=F64)
    y = x * 1
    y.lerp_(e, w)
    assert type(y.grad_fn).__name__ == "LerpBackward1"
    assert _names(y) == ["MulBackward0", "AccumulateGrad", None]
    y.sum().backward()
    assert x.grad.tolist() == [0.75, 0.75] and e.grad.tolist() == [0.25, 0.25]


@pytest.mark.parametrize("method", ["addcmul_", "addcdiv_"])
def test_addcmul_and_addcdiv_inplace_take_the_factors_as_edges(method: str) -> None:
    x, a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0]), _leaf([2.0, 8.0])
    y = x * 1
    getattr(y, method)(a, b, value=0.5)
    name = "AddcmulBackward0" if method == "addcmul_" else "AddcdivBackward0"
    assert type(y.grad_fn).__name__ == name
    assert _names(y) == ["MulBackward0", "AccumulateGrad", "AccumulateGrad"]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    if method == "addcmul_":
        assert y.tolist() == [4.0, 18.0]
        assert a.grad.tolist() == [1.0, 4.0] and b.grad.tolist() == [1.5, 2.0]
    else:
        assert y.tolist() == [1.75, 2.25]
        assert a.grad.tolist() == [0.25, 0.0625] and b.grad.tolist() == [-0.375, -0.03125]


# --- alpha: one node over both inputs ----------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "add_", "sub_"])
def test_alpha_is_part_of_the_node(op: str) -> None:
    x, z = _leaf([1.0, 2.0]), _leaf([4.0, 8.0])
    y = x * 1 if op.endswith("_") else x
    r = getattr(y, op)(z, alpha=-0.5)
    name = "AddBackward0" if op.startswith("add") else "SubBackward0"
    assert type(r.grad_fn).__name__ == name
    assert _names(r) == ["MulBackward0" if op.endswith("_") else "AccumulateGrad", "AccumulateGrad"]
    sign = 1.0 if op.startswith("add") else -1.0
    assert r.tolist() == [1.0 - sign * 2.0, 2.0 - sign * 4.0]
    r.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and z.grad.tolist() == [-0.5 * sign] * 2


def test_alpha_with_a_python_number_keeps_a_none_edge() -> None:
    x = _leaf([1.0, 2.0])
    r = x.add(2.0, alpha=3)
    assert r.tolist() == [7.0, 8.0] and _names(r) == ["AccumulateGrad", None]


# --- node names ---------------------------------------------------------------------------------


def test_node_names_as_pytorch() -> None:
    x = _leaf([[0.25, -1.5], [2.0, 3.0]])
    assert type(x.sgn().grad_fn).__name__ == "SgnBackward0"
    assert type(torch.sgn(x).grad_fn).__name__ == "SgnBackward0"
    assert type(x.sign().grad_fn).__name__ == "SignBackward0"
    assert type(x.round().grad_fn).__name__ == "RoundBackward0"
    assert type(x.round(decimals=0).grad_fn).__name__ == "RoundBackward1"
    assert type(x.round(decimals=1).grad_fn).__name__ == "RoundBackward1"
    assert x.round(decimals=1).tolist() == [[0.2, -1.5], [2.0, 3.0]]
    assert type(x.diag().grad_fn).__name__ == "DiagonalBackward0_copy"
    assert type(x.diag(1).grad_fn).__name__ == "DiagonalBackward0_copy"
    assert type(x[0].diag().grad_fn).__name__ == "DiagEmbedBackward0"
    y = x * 1
    y **= torch.tensor([2.0, 1.0], dtype=F64)
    assert type(y.grad_fn).__name__ == "PowBackward1" and _names(y) == ["MulBackward0", None]
    y = x * 1
    y **= 2
    assert type(y.grad_fn).__name__ == "PowBackward0"

