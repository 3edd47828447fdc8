"""Facade defects the op table's strict xfails documented (in-place
composites, alpha, node names, scalar-first function forms, view errors).
Each test runs without PyTorch: exact values, gradients, node names and
messages (read off PyTorch 2.x once); ``tests/test_torch_optable.py``
compares the same rows with PyTorch when it is installed."""

from __future__ import annotations

from typing import Any

import numpy as np
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



# --- function forms with a Python number first --------------------------------------------------

_XS = [0.3, 1.1, 2.7]
_SCALAR_FIRST = {  # name: (NumPy's value of f(s, xs), node, next_functions)
    "add": (lambda s, a: s + a, "AddBackward0", [None, "AccumulateGrad"]),
    "sub": (lambda s, a: s - a, "SubBackward0", [None, "AccumulateGrad"]),
    "subtract": (lambda s, a: s - a, "SubBackward0", [None, "AccumulateGrad"]),
    "mul": (lambda s, a: s * a, "MulBackward0", [None, "AccumulateGrad"]),
    "multiply": (lambda s, a: s * a, "MulBackward0", [None, "AccumulateGrad"]),
    "div": (lambda s, a: s / a, "DivBackward0", [None, "AccumulateGrad"]),
    "divide": (lambda s, a: s / a, "DivBackward0", [None, "AccumulateGrad"]),
    "true_divide": (lambda s, a: s / a, "DivBackward0", [None, "AccumulateGrad"]),
    "pow": (lambda s, a: s ** a, "PowBackward2", ["AccumulateGrad"]),
    "xlogy": (lambda s, a: s * np.log(a), "XlogyBackward1", ["AccumulateGrad"]),
}


@pytest.mark.parametrize("name", sorted(_SCALAR_FIRST))
@pytest.mark.parametrize("s", [1.7, 2])
def test_scalar_first_function_forms_are_exact_in_float64(name: str, s: float) -> None:
    want, node, edges = _SCALAR_FIRST[name]
    x = _leaf(_XS)
    r = getattr(torch, name)(s, x)
    assert r.dtype == F64
    assert r.tolist() == want(s, np.array(_XS)).tolist()  # exactly: the number is not rounded to float32
    assert type(r.grad_fn).__name__ == node and _names(r) == edges


def test_scalar_first_pow_gradient_and_float32() -> None:
    x = _leaf(_XS)
    torch.pow(1.7, x).sum().backward()
    assert x.grad.tolist() == (1.7 ** np.array(_XS) * np.log(1.7)).tolist()
    x32 = _leaf(_XS, torch.float32)
    r = torch.pow(1.7, x32)
    assert r.dtype == torch.float32 and r.tolist() == (np.float32(1.7) ** np.array(_XS, np.float32)).tolist()
    assert torch.add(1.7, x32).tolist() == (np.float32(1.7) + np.array(_XS, np.float32)).tolist()


def test_scalar_first_alpha_and_integer_tensors() -> None:
    x = _leaf([1.0, 2.0])
    assert torch.add(1.5, x, alpha=2).tolist() == [3.5, 5.5]
    assert torch.sub(1.5, x, alpha=2).tolist() == [-0.5, -2.5]
    i = torch.tensor([1, 2, 4])
    for r, dtype, want in [(torch.add(1.5, i), torch.float32, [2.5, 3.5, 5.5]),
                           (torch.pow(2, i), torch.int64, [2, 4, 16]),
                           (torch.div(3, i), torch.float32, [3.0, 1.5, 0.75]),
                           (torch.sub(2.5, i), torch.float32, [1.5, 0.5, -1.5]),
                           (torch.mul(True, i), torch.int64, [1, 2, 4])]:
        assert r.dtype == dtype and r.tolist() == want


def test_scalar_first_forms_pytorch_refuses() -> None:
    x = _leaf(_XS)
    with pytest.raises(TypeError, match=r"^atan2\(\): argument 'input' \(position 1\) must be Tensor, not float$"):
        torch.atan2(1.7, x)
    with pytest.raises(TypeError, match=r"^maximum\(\): argument 'input' \(position 1\) must be Tensor, not int$"):
        torch.maximum(2, x)
    with pytest.raises(TypeError, match=r"^fmod\(\) received an invalid combination of arguments - got "
                                        r"\(float, Tensor\), but expected one of:"):
        torch.fmod(1.7, x)


def test_scalar_first_bool_subtraction_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"^Subtraction, the `-` operator, with a bool tensor is not supported"):
        torch.sub(True, _leaf(_XS))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("name", sorted(_SCALAR_FIRST) + ["remainder"])
def test_scalar_first_function_forms_as_pytorch(name: str, dtype: str, real_torch: Any) -> None:
    """dtype, values (float32: to an ulp of libm), next_functions, node, gradient."""
    for s in (1.7, 2) if name == "pow" else (1.7, 2, True):  # (PyTorch's pow(True, x) fails an internal assert)
        got: list[Any] = []
        want: list[Any] = []
        for t, out in ((torch, got), (real_torch, want)):
            x = t.tensor([1.5, 2.0, 3.0], dtype=getattr(t, dtype))
            if dtype != "int64":
                x.requires_grad_()
            try:
                r = getattr(t, name)(s, x)
            except RuntimeError as e:
                out.append(str(e))
                continue
            fn = r.grad_fn
            out += [str(r.dtype), r.detach().numpy()]
            if fn is not None and name != "remainder":  # (PyTorch: remainder's derivative is not implemented)
                out += [type(fn).__name__, [None if f is None else type(f).__name__ for f, _ in fn.next_functions]]
                r.sum().backward()
                out.append(x.grad.numpy())
        assert len(got) == len(want), (s, got, want)
        if len(want) == 1:
            assert got == want
            continue
        assert got[0] == want[0] and got[2:4] == want[2:4], (s, got, want)
        np.testing.assert_allclose(got[1], want[1], rtol=0 if dtype == "float64" else 2e-7)
        if len(want) > 4:
            np.testing.assert_allclose(got[4], want[4], rtol=1e-15 if dtype == "float64" else 1e-6)


# --- view / reshape to an impossible shape: PyTorch's RuntimeError ------------------------------

_SHAPE_ERRORS = [  # (numel, shape, PyTorch's message)
    (2, (3,), "shape '[3]' is invalid for input of size 2"),
    (6, (-1, 4), "shape '[-1, 4]' is invalid for input of size 6"),
    (6, (4, 2), "shape '[4, 2]' is invalid for input of size 6"),
    (6, (-1, 0), "shape '[-1, 0]' is invalid for input of size 6"),
    (0, (-1, 0), "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 "
                 "can be any value and is ambiguous"),
    (6, (2, -1, -1), "only one dimension can be inferred"),
    (6, (-2, 3), "invalid shape dimension -2 at index 0 of shape [-2, 3]"),
]


@pytest.mark.parametrize("method", ["view", "reshape"])
@pytest.mark.parametrize(("numel", "shape", "message"), _SHAPE_ERRORS)
def test_view_and_reshape_errors(method: str, numel: int, shape: tuple[int, ...], message: str) -> None:
    x = torch.zeros(numel, dtype=F64, requires_grad=True)
    for args in (shape, (shape,)):
        with pytest.raises(RuntimeError) as e:
            getattr(x, method)(*args)
        assert str(e.value) == message


def test_view_and_reshape_still_infer_a_dimension() -> None:
    x = torch.arange(6.0)
    assert x.view(-1, 3).shape == (2, 3) and x.reshape(3, -1).shape == (3, 2)
    assert torch.zeros(0).view(-1, 5).shape == (0, 5) and torch.zeros(2, 0).reshape(0, 2).shape == (0, 2)


@pytest.mark.parametrize("method", ["view", "reshape"])
@pytest.mark.parametrize(("numel", "shape", "message"), _SHAPE_ERRORS)
def test_view_and_reshape_errors_as_pytorch(method: str, numel: int, shape: tuple[int, ...], message: str,
                                            real_torch: Any) -> None:
    with pytest.raises(RuntimeError) as e:
        getattr(real_torch.zeros(numel), method)(*shape)
    assert str(e.value) == message


# --- cross_entropy with probability targets: PyTorch's graph ------------------------------------


def _chain(fn: Any, depth: int) -> Any:
    if fn is None:
        return None
    return (type(fn).__name__, [_chain(f, depth - 1) for f, _ in fn.next_functions] if depth else [])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_probabilities_as_pytorch_builds_it(reduction: str) -> None:
    x = torch.zeros(2, 2, dtype=F64, requires_grad=True)
    p = torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=F64)
    r = torch.nn.functional.cross_entropy(x, p, reduction=reduction)
    mul = ("MulBackward0", [("LogSoftmaxBackward0", []), None])
    want = {"mean": ("DivBackward1", [("NegBackward0", [("SumBackward0", [mul])])]),
            "sum": ("NegBackward0", [("SumBackward0", [mul])]),
            "none": ("NegBackward0", [("SumBackward1", [mul])])}[reduction]
    assert _chain(r.grad_fn, 4 if reduction == "mean" else 3) == want
    ln2 = float(np.log(2.0))
    assert r.tolist() == {"mean": ln2, "sum": 2 * ln2, "none": [ln2, ln2]}[reduction]
    r.sum().backward()
    scale = 0.5 if reduction == "mean" else 1.0
    assert x.grad.tolist() == [[0.0, 0.0], [-0.5 * scale, 0.5 * scale]]


# --- vstack / hstack: atleast_2d / atleast_1d as PyTorch's ---------------------------------------


def test_vstack_and_hstack_shape_their_inputs_as_pytorch() -> None:
    s, v, m = _leaf(1.0), _leaf([1.0, 2.0]), _leaf([[3.0, 4.0]])
    r = torch.vstack([v, m])
    assert r.tolist() == [[1.0, 2.0], [3.0, 4.0]] and _names(r) == ["UnsqueezeBackward0", "AccumulateGrad"]
    r = torch.vstack([s, s])
    assert r.tolist() == [[1.0], [1.0]] and _names(r) == ["ViewBackward0", "ViewBackward0"]
    r = torch.hstack([s, v])
    assert r.tolist() == [1.0, 1.0, 2.0] and _names(r) == ["ViewBackward0", "AccumulateGrad"]
    (torch.vstack([v, m]) * torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)).sum().backward()
    assert v.grad.tolist() == [1.0, 2.0] and m.grad.tolist() == [[3.0, 4.0]]


# --- matmul: PyTorch's composites for a vector times a matrix and a folded batch ---------------------


def test_matmul_vector_matrix_and_folded_batch_graphs() -> None:
    v, m = _leaf([1.0, 2.0]), _leaf([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]])
    r = v @ m
    assert r.tolist() == [7.0, 2.0, 2.0]
    assert _chain(r.grad_fn, 3) == ("SqueezeBackward4", [("MmBackward0", [
        ("UnsqueezeBackward0", [("AccumulateGrad", [])]), ("AccumulateGrad", [])])])
    r.sum().backward()
    assert v.grad.tolist() == [3.0, 4.0] and m.grad.tolist() == [[1.0] * 3, [2.0] * 3]
    b = _leaf(np.arange(12.0).reshape(2, 3, 2))
    for other, node, shape in ((m, "MmBackward0", (2, 3, 3)), (v, "MvBackward0", (2, 3))):
        r = b @ other
        assert tuple(r.shape) == shape
        assert r.tolist() == (np.arange(12.0).reshape(2, 3, 2) @ other.detach().numpy()).tolist()
        assert _chain(r.grad_fn, 2) == ("UnsafeViewBackward0", [(node, [("ViewBackward0", []), ("AccumulateGrad", [])])])
    b.grad = None
    (b @ m).sum().backward()
    assert b.grad.tolist() == [[[3.0, 4.0]] * 3] * 2
