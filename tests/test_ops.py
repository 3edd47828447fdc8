"""Every differentiable operation, from one table (tests/optable.py).

For each op: the value matches NumPy; reverse and forward mode match central
differences at first and second order; a batch of 3 cotangents in one replay
matches 3 single replays; float32 stays float32.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from optable import EMPTY, OPS, Case

import tapegrad as tg
import tapegrad.numpy as tnp

rng_seed = 1234


def _args(case: Case, dtype: type = np.float64) -> list[np.ndarray]:
    rng = np.random.default_rng(rng_seed)
    out = []
    for make in case.args:
        a = make(rng)
        out.append(a.astype(np.result_type(a.dtype, dtype) if np.iscomplexobj(a) else dtype))
    return out


def _fn(case: Case, m):  # noqa: ANN001
    return lambda *xs: case.fn(m, *xs)


@pytest.mark.parametrize("case", OPS + EMPTY, ids=lambda c: c.name)
def test_value_matches_numpy(case: Case) -> None:
    args = _args(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _fn(case, np)(*args)
        got = _fn(case, tnp)(*args)
    assert type(got) is not tg.core.traced.Traced
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(want)
    assert np.result_type(got) == np.result_type(want)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_grads_against_finite_differences(case: Case) -> None:
    tg.check_grads(_fn(case, tnp), _args(case), modes=("rev", "fwd"), order=case.order)


@pytest.mark.parametrize("case", EMPTY, ids=lambda c: c.name)
def test_empty_arrays(case: Case) -> None:
    args = _args(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, vjp_fn = tg.vjp(_fn(case, tnp), *args)
        grads = vjp_fn(np.ones_like(out))
    for k, (g, a) in enumerate(zip(grads, args)):
        assert g.shape == a.shape, f"argument {k}: gradient shape {g.shape}, input shape {a.shape}"
        assert g.dtype == a.dtype, f"argument {k}: gradient dtype {g.dtype}, input dtype {a.dtype}"
        assert np.all(np.isfinite(g)), f"argument {k}: non-finite gradient"
        if np.size(out) == 0:  # nothing flows back from an empty output: a non-empty input gets zeros
            np.testing.assert_array_equal(g, np.zeros_like(a), err_msg=f"argument {k}")


def _random_cotangent(rng: np.random.Generator, out: np.ndarray, batch: tuple[int, ...] = ()) -> np.ndarray:
    u = rng.standard_normal(batch + np.shape(out))
    if np.iscomplexobj(out):
        u = u + 1j * rng.standard_normal(batch + np.shape(out))
    return u.astype(np.result_type(out))


@pytest.mark.parametrize("nested", [False, True], ids=["first_order", "second_order"])
@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_batched_cotangents(case: Case, nested: bool) -> None:
    """One replay of a batch of 3 cotangents equals 3 single replays, for the
    op's rules and (nested) for the rules of its backward pass."""
    if nested and case.order < 2:
        pytest.skip("op is only differentiable once")
    f = _fn(case, tnp)
    args = _args(case)
    rng = np.random.default_rng(0)
    if nested:
        out0 = f(*args)
        u0 = _random_cotangent(rng, out0)
        inner = f
        f = lambda *xs: tg.vjp(inner, *xs)[1](u0)  # noqa: E731
    out, vjp_fn = tg.vjp(f, *args)
    leaves, tdef = tg.tree_flatten(out)
    us = [[_random_cotangent(rng, o) for o in leaves] for _ in range(3)]
    singles = [vjp_fn(tg.tree_unflatten(tdef, u)) for u in us]
    stacked = tg.tree_unflatten(tdef, [np.stack([u[k] for u in us]) for k in range(len(leaves))])
    batched = vjp_fn.batched(stacked, (3,))
    for k, b in enumerate(batched):
        assert b.shape == (3,) + np.shape(args[k])
        for j in range(3):
            np.testing.assert_allclose(b[j], singles[j][k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_float32_stays_float32(case: Case) -> None:
    args64 = _args(case)
    if any(np.iscomplexobj(a) for a in args64):
        args32 = [a.astype(np.complex64) for a in args64]
    else:
        args32 = [a.astype(np.float32) for a in args64]
    f = _fn(case, tnp)
    out32, vjp32 = tg.vjp(f, *args32)
    out64, vjp64 = tg.vjp(f, *args64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.result_type(out32) == np.result_type(case.fn(np, *args32))  # NumPy's promotion
    u = np.ones(np.shape(out64))
    g32 = vjp32(u.astype(np.result_type(out32)))
    g64 = vjp64(u.astype(np.result_type(out64)))
    for a, g, h in zip(args32, g32, g64):
        assert g.dtype == a.dtype, f"gradient dtype {g.dtype} for a {a.dtype} input"
        np.testing.assert_allclose(g, h, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_forward_mode_by_transposing_the_vjp(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every JVP rule switched off, forward mode transposes the VJP rules:
    the fallback path, checked for every op, first and second order."""
    from tapegrad.core.primitive import Primitive

    monkeypatch.setattr(Primitive, "jvp_maker", lambda self, argnum: None)
    tg.check_grads(_fn(case, tnp), _args(case), modes=("fwd",), order=case.order)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_batched_tangents(case: Case) -> None:
    """jacfwd (one pass, a batch of basis tangents) equals jacrev (one replay,
    a batch of basis cotangents), for every op."""
    f = _fn(case, tnp)
    args = _args(case)
    if any(np.iscomplexobj(a) for a in args):
        pytest.skip("Jacobians of complex inputs need holomorphic functions")
    nums = tuple(range(len(args)))
    jf = tg.jacfwd(f, argnums=nums)(*args)
    jr = tg.jacrev(f, argnums=nums)(*args)
    for a, b in zip(tg.tree_flatten(jf)[0], tg.tree_flatten(jr)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_product_with_an_identity_is_numpy_s(side: str, dtype: type) -> None:
    # the identity shortcut of matmul (basis tangents of jacfwd / hessian)
    # gives what np.matmul gives: values, dtype, a new C-ordered array
    rng = np.random.default_rng(0)
    eye = np.eye(120)
    other = rng.standard_normal((120, 120)).astype(dtype)[:, ::-1]  # not C-ordered
    a, b = (eye, other) if side == "left" else (other, eye)
    got = tnp.matmul(a, b)
    want = np.matmul(a, b)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.flags.c_contiguous and got.flags.writeable
    assert not np.shares_memory(got, other)
    other[0, 0] = np.inf  # 0 * inf is nan in a real product: no shortcut then
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(tnp.matmul(a, b), np.matmul(a, b))


def test_hessian_through_a_product_with_the_identity_basis() -> None:
    rng = np.random.default_rng(1)
    A = rng.standard_normal((110, 110)) / 11
    x = rng.standard_normal(110)
    t = np.tanh(A @ x)
    want = A.T @ ((2 * (1 - t * t) ** 2 - 4 * t * t * (1 - t * t))[:, None] * A)
    np.testing.assert_allclose(tg.hessian(lambda x: tnp.sum(tnp.tanh(A @ x) ** 2))(x), want, rtol=1e-10, atol=1e-12)
