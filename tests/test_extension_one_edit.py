"""An elementwise primitive added the documented way (docs/extending.md) gets every rule.

A module written to a temporary directory defines two primitives with one
``elementwise(...)`` call each, as tapegrad/numpy/elementwise.py does:
``float_power`` (NumPy's function: it gets NumPy's dispatch and the name in
``tapegrad.numpy``) and ``softplus`` (no NumPy name). Nothing else is
registered, yet each one differentiates in reverse and forward mode to second
order, batches under ``vmap`` without a loop, and compiles under ``jit``; one
op-table row then exposes ``softplus`` on the PyTorch facade.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad import batching
from tapegrad.core.traced import NUMPY_DISPATCH
from tapegrad.numpy._define import NUMPY_NAMES

MODULE = '''
import numpy as np

import tapegrad.numpy as tnp
from tapegrad import elementwise

# x ** y in float64: one edit gives the VJPs, the JVPs, the batching rule, np.float_power's dispatch
float_power = elementwise(np.float_power,
                          lambda ans, x, y: lambda g: g * y * float_power(x, y - 1),
                          lambda ans, x, y: lambda g: g * tnp.log(x) * ans)


def _softplus(x):
    return np.logaddexp(0.0, x)


softplus = elementwise(_softplus, lambda ans, x: lambda g: g * tnp.exp(x - ans), name="softplus")
'''


@pytest.fixture
def ext(tmp_path: Path) -> Iterator[ModuleType]:
    """The extension module, imported from a file; what it registered is undone afterwards."""
    path = tmp_path / "my_prims.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("my_prims", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    before = NUMPY_DISPATCH.get(np.float_power)
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        NUMPY_NAMES.pop("float_power", None)
        if before is None:
            NUMPY_DISPATCH.pop(np.float_power, None)
        else:
            NUMPY_DISPATCH[np.float_power] = before
        sys.modules.pop("my_prims", None)


@pytest.fixture
def no_loops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions vmap maps by a loop over the batch while a test runs."""
    seen: list[str] = []
    loop = batching.loop_rule

    def counting(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(getattr(fn, "__name__", "?"))
        return loop(fn, *args, **kwargs)

    monkeypatch.setattr(batching, "loop_rule", counting)
    return seen


X = np.array([0.5, 1.25, 2.0])
Y = np.array([1.5, 3.0, 0.5])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_it_is_numpys_function_on_plain_arrays_and_a_numpy_name(ext: ModuleType) -> None:
    np.testing.assert_array_equal(ext.float_power(X, Y), np.float_power(X, Y))
    assert tnp.float_power is ext.float_power  # the name in tapegrad.numpy
    assert ext.float_power.primitive.name == "float_power"
    assert ext.softplus.primitive.name == "softplus"
    assert "softplus" not in NUMPY_NAMES  # no NumPy name: no export
    # np.float_power on a traced value records the primitive
    g = tg.grad(lambda x: np.sum(np.float_power(x, 3.0)))(X)
    np.testing.assert_allclose(g, 3 * X**2, rtol=1e-14)


def test_grad_matches_the_closed_forms(ext: ModuleType) -> None:
    gx, gy = tg.grad(lambda x, y: tnp.sum(ext.float_power(x, y)), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, Y * X ** (Y - 1), rtol=1e-13)
    np.testing.assert_allclose(gy, np.log(X) * X**Y, rtol=1e-13)
    np.testing.assert_allclose(tg.elementwise_grad(ext.softplus)(X), _sigmoid(X), rtol=1e-13)


def test_jvp_matches_the_closed_forms(ext: ModuleType) -> None:
    tx, ty = np.array([1.0, -2.0, 0.5]), np.array([0.25, 1.0, -1.0])
    out, tan = tg.jvp(ext.float_power, (X, Y), (tx, ty))
    np.testing.assert_allclose(out, X**Y, rtol=1e-14)
    np.testing.assert_allclose(tan, Y * X ** (Y - 1) * tx + np.log(X) * X**Y * ty, rtol=1e-13)
    # a broadcast argument: its tangent lines up with the answer's axes
    _, tan = tg.jvp(lambda y: ext.float_power(np.ones((2, 3)) * X, y), (2.0,), (1.0,))
    np.testing.assert_allclose(tan, np.broadcast_to(np.log(X) * X**2, (2, 3)), rtol=1e-13)
    _, tan = tg.jvp(ext.softplus, (X,), (tx,))
    np.testing.assert_allclose(tan, _sigmoid(X) * tx, rtol=1e-13)


def test_hessian_matches_the_closed_form_and_finite_differences(ext: ModuleType) -> None:
    h = tg.hessian(lambda x: tnp.sum(ext.float_power(x, 3.0)))(X)
    np.testing.assert_allclose(h, np.diag(6 * X), rtol=1e-13)
    h = tg.hessian(lambda x: tnp.sum(ext.softplus(x)))(X)
    s = _sigmoid(X)
    np.testing.assert_allclose(h, np.diag(s * (1 - s)), rtol=1e-12)
    tg.check_grads(ext.float_power, (X, Y), modes=("fwd", "rev"), order=2)
    tg.check_grads(ext.softplus, (X,), modes=("fwd", "rev"), order=2)


def test_vmap_batches_in_one_call_and_matches_a_loop(ext: ModuleType, no_loops: list[str]) -> None:
    xs = np.linspace(0.5, 2.0, 12).reshape(4, 3)
    got = tg.vmap(ext.float_power, in_axes=(0, None))(xs, Y)
    np.testing.assert_allclose(got, np.stack([np.float_power(x, Y) for x in xs]), rtol=1e-14)
    got = tg.vmap(ext.float_power, in_axes=(None, 0))(X, xs)  # batched exponent, broadcast base
    np.testing.assert_allclose(got, np.stack([np.float_power(X, y) for y in xs]), rtol=1e-14)
    grads = tg.vmap(tg.grad(lambda x: tnp.sum(ext.softplus(x) * ext.float_power(x, 2.0))))(xs)
    want = [tg.grad(lambda x: tnp.sum(ext.softplus(x) * ext.float_power(x, 2.0)))(x) for x in xs]
    np.testing.assert_allclose(grads, np.stack(want), rtol=1e-13)
    assert no_loops == []  # the broadcasting rule, not a loop over the batch
    jac = tg.jacrev(ext.softplus)(X)  # a batch of cotangents through the batched rule
    np.testing.assert_allclose(jac, np.diag(_sigmoid(X)), rtol=1e-13)


def test_jit_matches_eager(ext: ModuleType) -> None:
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return tnp.sum(ext.softplus(ext.float_power(x, y)) * x)

    fast = tg.jit(f)
    np.testing.assert_allclose(fast(X, Y), f(X, Y), rtol=1e-14)
    np.testing.assert_allclose(fast(X + 0.25, Y), f(X + 0.25, Y), rtol=1e-14)  # (the compiled program)
    g = tg.jit(tg.grad(f, argnums=(0, 1)))(X, Y)
    want = tg.grad(f, argnums=(0, 1))(X, Y)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_one_op_table_row_exposes_it_on_the_facade(ext: ModuleType) -> None:
    import tapegrad.torch as torch
    from tapegrad.torch import _ops

    forms = _ops.add_row(_ops.unary("softplus", ext.softplus, "SoftplusBackward0", saves="0"))
    try:
        x = torch.tensor(X, requires_grad=True)
        y = x.softplus()
        assert y.grad_fn.name() == "SoftplusBackward0"
        np.testing.assert_allclose(y.detach().numpy(), np.logaddexp(0.0, X), rtol=1e-14)
        np.testing.assert_allclose(forms["softplus"](x).detach().numpy(), np.logaddexp(0.0, X), rtol=1e-14)
        (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), _sigmoid(X), rtol=1e-13)
        g.sum().backward()  # second order through the facade
        s = _sigmoid(X)
        np.testing.assert_allclose(x.grad.numpy(), s * (1 - s), rtol=1e-12)
        z = x.detach() * 1.0
        z.softplus_()  # the in-place twin, with the row's node name
        np.testing.assert_allclose(z.numpy(), np.logaddexp(0.0, X), rtol=1e-14)
    finally:
        for name in ("softplus", "softplus_"):  # (other tests list Tensor's methods)
            if name in vars(torch.Tensor):
                delattr(torch.Tensor, name)
