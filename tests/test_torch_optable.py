"""Every differentiable facade op, from one table (tests/torch_optable.py).

Without PyTorch, per row: the result's ``grad_fn`` is named as the table says;
reverse mode through the facade (``y.backward(gradient)``, and
``torch.autograd.grad(..., create_graph=True)`` then ``backward`` for the
second order) matches central differences in float64; ``tg.check_grads``
drives the same op as a function on arrays (tensors boxed with
``Tensor.__tapegrad_box__``) in both modes at the row's order.
With PyTorch (skipped without it): values, gradients (first and second
order), ``grad_fn`` names and the names of ``grad_fn.next_functions`` equal
PyTorch's. A completeness test holds every
public method of ``Tensor`` (and every ``nn.functional`` function) to a row
or to a commented exclusion.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import TorchDiff, assert_close, graph_chain, node_name
from torch_optable import BUGS, ROWS, Row

import tapegrad as tg
import tapegrad.torch as tt
import tapegrad.torch.nn.functional as F

SEED = 1234
EPS, RTOL, ATOL = 1e-6, 1e-5, 1e-6  # central differences in float64, as tg.check_grads


def _arrays(row: Row) -> list[np.ndarray]:
    rng = np.random.default_rng(SEED)
    return [np.asarray(make(rng), dtype=np.float64) for make in row.args]


def _weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _leaves(t: Any, arrays: list[np.ndarray]) -> list[Any]:
    return [t.tensor(a, requires_grad=True) for a in arrays]


def _numeric_grads(f: Callable[[list[np.ndarray]], float], arrays: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for j in np.ndindex(*a.shape):
            hi, lo = [x.copy() for x in arrays], [x.copy() for x in arrays]
            hi[k][j] += EPS
            lo[k][j] -= EPS
            g[j] = (f(hi) - f(lo)) / (2 * EPS)
        out.append(g)
    return out


def _first(t: Any, row: Row, xs: list[Any]) -> tuple[Any, ...]:
    """d/dx of sum(u * fn(x)) (u fixed), as a graph (create_graph=True)."""
    y = row.fn(t, *xs)
    u = t.tensor(_weights(tuple(y.shape), 1))
    return t.autograd.grad((y * u).sum(), xs, create_graph=True, allow_unused=True)


def _second_scalar(t: Any, row: Row, xs: list[Any], gs: tuple[Any, ...]) -> Any:
    """sum_k sum(v_k * g_k), v_k fixed: its gradient is a Hessian-vector product."""
    total = 0.0
    for k, (x, g) in enumerate(zip(xs, gs)):
        if g is not None:
            total = total + (g * t.tensor(_weights(tuple(x.shape), 10 + k))).sum()
    return total


def _hvp(t: Any, row: Row, arrays: list[np.ndarray]) -> list[np.ndarray]:
    xs = _leaves(t, arrays)
    s = _second_scalar(t, row, xs, _first(t, row, xs))
    if not getattr(s, "requires_grad", False):  # the gradient is constant in x
        return [np.zeros_like(a) for a in arrays]
    hs = t.autograd.grad(s, xs, allow_unused=True)
    return [np.zeros_like(a) if h is None else h.detach().numpy(force=True) for a, h in zip(arrays, hs)]


SECOND = [r for r in ROWS if r.order >= 2]


def _params(rows: list[Row], test: str) -> list[Any]:
    """The rows as parameters; a known bug of (row, test) makes it a strict xfail."""
    out = []
    for r in rows:
        bug = BUGS.get(r.name, {}).get(test)
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        out.append(pytest.param(r, id=r.name, marks=marks))
    return out


# --- without PyTorch ------------------------------------------------------------------------


@pytest.mark.parametrize("row", _params(ROWS, "name"))
def test_grad_fn_name(row: Row) -> None:
    y = row.fn(tt, *_leaves(tt, _arrays(row)))
    assert node_name(y.grad_fn) == row.grad_fn
    assert y.requires_grad and not y.is_leaf


@pytest.mark.parametrize("row", _params(ROWS, "backward"))
@pytest.mark.filterwarnings("ignore")
def test_backward_against_finite_differences(row: Row) -> None:
    """y.backward(u) leaves sum(u * y)'s gradient in each leaf's .grad."""
    arrays = _arrays(row)
    xs = _leaves(tt, arrays)
    y = row.fn(tt, *xs)
    u = _weights(tuple(y.shape), 1)
    y.backward(tt.tensor(u))
    want = _numeric_grads(lambda a: float((row.fn(tt, *[tt.tensor(b) for b in a]) * tt.tensor(u)).sum()), arrays)
    for k, (x, w) in enumerate(zip(xs, want)):
        got = np.zeros_like(w) if x.grad is None else x.grad.numpy()
        np.testing.assert_allclose(got, w, rtol=RTOL, atol=ATOL, err_msg=f"input {k}")


@pytest.mark.parametrize("row", _params(SECOND, "double_backward"))
@pytest.mark.filterwarnings("ignore")
def test_double_backward_against_finite_differences(row: Row) -> None:
    """autograd.grad(create_graph=True), then backward through the gradient:
    a Hessian-vector product, against central differences of the gradient."""
    arrays = _arrays(row)
    got = _hvp(tt, row, arrays)

    def scalar(a: list[np.ndarray]) -> float:
        xs = _leaves(tt, a)
        s = _second_scalar(tt, row, xs, _first(tt, row, xs))
        return float(s.detach() if hasattr(s, "detach") else s)

    want = _numeric_grads(scalar, arrays)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"input {k}")


@pytest.mark.parametrize("row", _params(ROWS, "check_grads"))
@pytest.mark.filterwarnings("ignore")
def test_check_grads_both_modes(row: Row) -> None:
    """tg.check_grads drives the facade op: the function takes arrays, boxes
    them as tensors (Tensor.__tapegrad_box__) and returns a tensor."""
    box = tt.Tensor.__tapegrad_box__

    def f(*xs: Any) -> Any:
        return row.fn(tt, *[box(x, None) for x in xs])

    tg.check_grads(f, _arrays(row), modes=("rev", "fwd"), order=row.order)


# --- with PyTorch -------------------------------------------------------------------------


def _run(t: Any, row: Row, arrays: list[np.ndarray]) -> tuple[np.ndarray, str | None, list[np.ndarray | None]]:
    xs = _leaves(t, arrays)
    y = row.fn(t, *xs)
    name = node_name(y.grad_fn)
    y.backward(t.tensor(_weights(tuple(y.shape), 1)))
    return y.detach().numpy().copy(), name, [None if x.grad is None else x.grad.numpy(force=True).copy() for x in xs]


@pytest.mark.parametrize("row", _params(ROWS, "torch_values"))
@pytest.mark.filterwarnings("ignore")
def test_values_and_gradients_as_pytorch(row: Row, torch_diff: TorchDiff) -> None:
    arrays = _arrays(row)
    got, _, got_grads = _run(tt, row, arrays)
    want, want_name, want_grads = _run(torch_diff.real, row, arrays)
    assert want_name == row.grad_fn, "the table's grad_fn name is not PyTorch's"
    assert_close(got, want, "value", rtol=1e-12, atol=1e-14)
    for k, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert_close(g, w, f"gradient of input {k}", rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("row", _params(SECOND, "torch_second"))
@pytest.mark.filterwarnings("ignore")
def test_second_order_as_pytorch(row: Row, torch_diff: TorchDiff) -> None:
    arrays = _arrays(row)
    for k, (g, w) in enumerate(zip(_hvp(tt, row, arrays), _hvp(torch_diff.real, row, arrays))):
        assert_close(g, w, f"Hessian-vector product, input {k}", rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("row", _params(ROWS, "name"))
def test_grad_fn_name_as_pytorch(row: Row, torch_diff: TorchDiff) -> None:
    arrays = _arrays(row)
    assert node_name(row.fn(tt, *_leaves(tt, arrays)).grad_fn) == \
        node_name(row.fn(torch_diff.real, *_leaves(torch_diff.real, arrays)).grad_fn)


# --- completeness --------------------------------------------------------------------------

# Public Tensor methods without a row, and why. Keep it honest: an entry that
# gains a row, or a method that disappears, fails the test below.
_NOT_DIFFERENTIABLE = {
    # comparisons, predicates, integer and boolean results
    "all", "any", "allclose", "argmax", "argmin", "argsort", "bincount", "count_nonzero", "eq", "equal", "ge", "gt",
    "isclose", "isfinite", "isinf", "isnan", "le", "logical_and", "logical_not", "logical_or", "lt", "ne",
    "nonzero", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "__and__", "__or__", "__xor__", "__rand__", "__ror__", "__rxor__", "__invert__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
    # asinh_ acosh_ atanh_: PyTorch's nodes (Backward1) raise "not implemented" in backward
    "asinh_", "acosh_", "atanh_",
    # unique: PyTorch's grad_fn (Unique2Backward0) raises "not implemented" in backward
    "unique",
    # floor division: integer-valued, PyTorch defines no derivative
    "__floordiv__", "__rfloordiv__",
    # Scalar % Tensor: PyTorch's grad_fn is NotImplemented (no derivative to compare against)
    "__rmod__",
}
_NOT_AN_OP = {
    # graph and autograd control
    "__class__",  # the class of Tensor (PyTorchNamed: it prints as torch.Tensor)
    "backward", "detach", "detach_", "register_hook", "requires_grad_", "retain_grad",
    # shape, size and metadata queries
    "dim", "ndimension", "nelement", "numel", "size", "stride", "element_size", "is_complex",
    "is_contiguous", "is_floating_point", "type",
    # leaving the tensor world
    "item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__", "__complex__",
    "__len__", "__iter__", "__dlpack__", "__dlpack_device__", "__tapegrad_value__", "__tapegrad_box__",
    # Python object protocol
    "__getattr__",  # only a miss: the AttributeError that names what the facade lacks
    "__repr__", "__str__", "__format__", "__hash__", "__reduce_ex__", "__deepcopy__", "__new__",
    "__init_subclass__", "__subclasshook__",
    # identity on a contiguous float64 input (PyTorch returns the tensor itself: no node)
    "contiguous", "__pos__",
    # dtype/device conversions: the identity in float64 (no node), or a rounding to float32/float16
    # that float64 central differences cannot see through
    "to", "cpu", "cuda", "float", "double", "half", "type_as", "bool", "int", "long",
    # creation from a tensor's dtype/device: new leaves
    "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros",
    # random draws (fills included): no reproducible value to difference; their zero
    # gradients and nodes are tested in test_torch_random.py
    "normal_", "uniform_", "bernoulli", "bernoulli_", "multinomial",
}
# nn.functional functions without a row
_F_EXCLUDED = {
    "one_hot": "integer result",
}


def _tensor_methods() -> set[str]:
    out = set()
    for n in dir(tt.Tensor):
        if isinstance(inspect.getattr_static(tt.Tensor, n), property):
            continue
        v = getattr(tt.Tensor, n)
        if callable(v) and (not n.startswith("_") or (n.startswith("__") and getattr(object, n, None) is not v)):
            out.add(n)
    return out


def test_every_differentiable_method_has_a_row() -> None:
    covered = {r.op for r in ROWS}
    excluded = _NOT_DIFFERENTIABLE | _NOT_AN_OP
    methods = _tensor_methods()
    assert not excluded & covered, f"excluded but has a row: {sorted(excluded & covered)}"
    assert not excluded - methods, f"excluded but not a Tensor method: {sorted(excluded - methods)}"
    missing = sorted(m for m in methods - excluded - covered)
    assert not missing, f"Tensor methods with no row and no exclusion: {missing}"
    functional = {f"F.{n}" for n in F.__all__}
    f_excluded = {f"F.{n}" for n in _F_EXCLUDED}
    assert not f_excluded - functional and not f_excluded & covered
    missing_f = sorted(functional - covered - f_excluded)
    assert not missing_f, f"nn.functional functions with no row and no exclusion: {missing_f}"


def test_rows_name_real_ops() -> None:
    """Every row's op is a Tensor method, a torch.* function or an nn.functional one;
    row names are unique; every known bug names a row and a test."""
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names))
    tests = {"name", "backward", "double_backward", "check_grads", "torch_values", "torch_second", "chain"}
    for name, bugs in BUGS.items():
        assert name in names and set(bugs) <= tests, name
    for r in ROWS:
        if r.op.startswith("torch."):
            assert callable(getattr(tt, r.op[6:], None)), r.name
        elif r.op.startswith("F."):
            assert r.op[2:] in F.__all__, r.name
        else:
            assert r.op in _tensor_methods(), r.name


@pytest.mark.parametrize("row", _params(ROWS, "chain"))
def test_next_functions_as_pytorch(row: Row, torch_diff: TorchDiff) -> None:
    """The result's grad_fn.next_functions (one level down) are named as PyTorch's."""
    arrays = _arrays(row)
    got = graph_chain(row.fn(tt, *_leaves(tt, arrays)), depth=1)
    want = graph_chain(row.fn(torch_diff.real, *_leaves(torch_diff.real, arrays)), depth=1)
    assert got[1] == want[1]


# --- errors of shape ops ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ["view", "reshape"])
def test_view_of_another_size_raises_as_pytorch_does(method: str) -> None:
    with pytest.raises(RuntimeError, match=r"^shape '\[3\]' is invalid for input of size 2$"):
        getattr(tt.zeros(2), method)(3)


def test_every_row_of_the_package_op_table_is_tested_here() -> None:
    """The facade's op table (tapegrad/torch/_ops.py) drives these tests: each
    of its rows and in-place twins has a row here, or is excluded above."""
    from tapegrad.torch._ops import TABLE

    covered = {r.op for r in ROWS}
    excluded = _NOT_DIFFERENTIABLE | _NOT_AN_OP
    names = set()
    for op in TABLE:
        names.update((op.name, *op.aliases))
        if op.twin is not None:
            names.add(op.twin)
    missing = sorted(n for n in names - covered - excluded if not n.startswith("_"))
    assert not missing, f"op-table rows with no test row and no exclusion: {missing}"
