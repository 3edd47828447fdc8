"""tapegrad.scipy.{linalg, signal, integrate}: SciPy's values, gradients checked
against finite differences, batching."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

sl = pytest.importorskip("scipy.linalg")

from tapegrad.scipy import linalg as L  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
SPD = A @ A.T


def test_scipy_is_imported_lazily() -> None:
    code = ("import sys, tapegrad, tapegrad.scipy.linalg, tapegrad.scipy.signal, tapegrad.scipy.integrate; "
            "assert 'scipy' not in sys.modules, 'scipy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- linalg --------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("bshape", [(4,), (4, 2)])
def test_solve_triangular(trans, lower, unit, bshape) -> None:
    b = RNG.normal(size=bshape)

    def f(a, b):
        return L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

    np.testing.assert_allclose(f(A, b), sl.solve_triangular(A, b, trans=trans, lower=lower, unit_diagonal=unit))
    tg.check_grads(f, [A, b], order=2)


def test_solve_triangular_reads_one_triangle() -> None:
    g = tg.grad(lambda a: tnp.sum(L.solve_triangular(a, np.ones(4), lower=True)))(A)
    assert np.all(np.triu(g, 1) == 0)
    g = tg.grad(lambda a: tnp.sum(L.solve_triangular(a, np.ones(4), unit_diagonal=True)))(A)
    assert np.all(np.tril(g) == 0)


def test_solve_triangular_complex() -> None:
    a = A + 1j * RNG.normal(size=(4, 4))
    b = RNG.normal(size=4) + 1j * RNG.normal(size=4)
    for trans in (0, 1, 2):
        np.testing.assert_allclose(L.solve_triangular(a, b, trans=trans, lower=True),
                                   sl.solve_triangular(a, b, trans=trans, lower=True))


def test_solve_triangular_batching() -> None:
    As = RNG.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    Bs = RNG.normal(size=(3, 4))
    got = tg.vmap(lambda a, b: L.solve_triangular(a, b, lower=True))(As, Bs)
    np.testing.assert_allclose(got, [sl.solve_triangular(a, b, lower=True) for a, b in zip(As, Bs)])
    got = tg.vmap(lambda b: L.solve_triangular(A, b, trans=1))(Bs)
    np.testing.assert_allclose(got, [sl.solve_triangular(A, b, trans=1) for b in Bs])
    got = tg.vmap(lambda a: L.solve_triangular(a, Bs[0]))(As)
    np.testing.assert_allclose(got, [sl.solve_triangular(a, Bs[0]) for a in As])
    f = lambda a: L.solve_triangular(a, Bs[0], lower=True)  # noqa: E731
    np.testing.assert_allclose(tg.jacrev(f)(A), tg.jacfwd(f)(A))
    np.testing.assert_allclose(tg.jit(f)(A), f(A))
    g = tg.grad(lambda a: tnp.sum(tg.vmap(f)(a) ** 2))(As)
    np.testing.assert_allclose(g, [tg.grad(lambda a: tnp.sum(f(a) ** 2))(a) for a in As])


def test_solve_triangular_errors() -> None:
    with pytest.raises(ValueError, match="trans"):
        L.solve_triangular(A, np.ones(4), trans=3)
    with pytest.raises(ValueError, match="incompatible"):
        L.solve_triangular(A, np.ones(3))


def test_cholesky_defaults_to_upper() -> None:
    np.testing.assert_allclose(L.cholesky(SPD), sl.cholesky(SPD))
    np.testing.assert_allclose(L.cholesky(SPD, lower=True), sl.cholesky(SPD, lower=True))
    # only the upper (lower) triangle is read, as SciPy
    junk = np.triu(SPD) + np.tril(RNG.normal(size=(4, 4)), -1)
    np.testing.assert_allclose(L.cholesky(junk), sl.cholesky(junk))
    tg.check_grads(lambda a: L.cholesky(a @ a.T), [A], order=2)
    tg.check_grads(lambda a: L.cholesky(a @ a.T, lower=True), [A], order=2)
    traced = tg.vjp(lambda a: L.cholesky(a), junk)[0]
    np.testing.assert_allclose(traced, sl.cholesky(junk))


def test_sqrtm_spd() -> None:
    np.testing.assert_allclose(L.sqrtm(SPD), sl.sqrtm(SPD))
    tg.check_grads(lambda a: L.sqrtm(a @ a.T), [A], modes=("rev",), order=2)
    tg.check_grads(lambda a: L.sqrtm(a @ a.T), [A], modes=("fwd",), order=1)
    x = tg.grad(lambda s: tnp.trace(L.sqrtm(s)))(SPD)  # d tr sqrt(S) = 1/2 S^-1/2
    np.testing.assert_allclose(x, 0.5 * np.linalg.inv(sl.sqrtm(SPD)), rtol=1e-8)


def test_sqrtm_batching() -> None:
    As = RNG.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    S = As @ As.transpose(0, 2, 1)
    np.testing.assert_allclose(tg.vmap(L.sqrtm)(S), [sl.sqrtm(s) for s in S])
    np.testing.assert_allclose(L.sqrtm(S), [sl.sqrtm(s) for s in S])
    f = lambda a: L.sqrtm(a @ a.T)  # noqa: E731
    np.testing.assert_allclose(tg.jacrev(f)(A), tg.jacfwd(f)(A), atol=1e-10)


def test_solve_sylvester() -> None:
    b = RNG.normal(size=(4, 4)) + 3 * np.eye(4)
    q = RNG.normal(size=(4, 4))
    np.testing.assert_allclose(L.solve_sylvester(A, b, q), sl.solve_sylvester(A, b, q))
    tg.check_grads(L.solve_sylvester, [A, b, q], modes=("rev",), order=2)


# --- signal --------------------------------------------------------------------------------------

from tapegrad.scipy.signal import convolve  # noqa: E402

SHAPES = [((7,), (3,)), ((3,), (7,)), ((6,), (4,)), ((5, 4), (2, 3)), ((2, 3), (5, 4)), ((5, 5), (3, 2))]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("method", ["direct", "fft"])
def test_convolve(shapes, mode, method) -> None:
    ss = pytest.importorskip("scipy.signal")
    x, y = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    np.testing.assert_allclose(convolve(x, y, mode, method), ss.convolve(x, y, mode, method), atol=1e-12)
    tg.check_grads(lambda a, b: convolve(a, b, mode=mode, method=method), [x, y], order=2)


def test_convolve_batching_and_errors() -> None:
    ss = pytest.importorskip("scipy.signal")
    xs, y = RNG.normal(size=(3, 7)), RNG.normal(size=3)
    f = lambda x: convolve(x, y, "same")  # noqa: E731
    np.testing.assert_allclose(tg.vmap(f)(xs), [ss.convolve(x, y, "same") for x in xs])
    np.testing.assert_allclose(tg.jit(f)(xs[0]), f(xs[0]))
    np.testing.assert_allclose(tg.jacrev(f)(xs[0]), tg.jacfwd(f)(xs[0]))
    with pytest.raises(ValueError, match="mode"):
        convolve(xs[0], y, "nope")


# --- integrate -----------------------------------------------------------------------------------

from tapegrad.scipy.integrate import odeint  # noqa: E402

CHECK = dict(modes=("rev",), order=1, rtol=1e-4, atol=1e-5, eps=1e-5)


def _decay(y, t, k):
    return -k * y


def test_odeint_exponential_decay() -> None:
    pytest.importorskip("scipy.integrate")
    t, y0, k = np.linspace(0.0, 2.0, 5), np.array([1.0, 2.0]), np.array(0.7)
    np.testing.assert_allclose(odeint(_decay, y0, t, k), y0 * np.exp(-0.7 * t)[:, None], atol=1e-7)
    tg.check_grads(lambda y0, t, k: odeint(_decay, y0, t, k), [y0, t, k], **CHECK)
    # analytic: d/dk sum y(t) = sum(-t y0 exp(-k t))
    g = tg.grad(lambda k: tnp.sum(odeint(_decay, y0, t, k)))(k)
    np.testing.assert_allclose(g, np.sum(-t[:, None] * y0 * np.exp(-0.7 * t)[:, None]), rtol=1e-5)


def test_odeint_linear_system() -> None:
    sla = pytest.importorskip("scipy.linalg")
    M = np.array([[-0.5, 1.0], [-1.0, -0.3]])
    t, y0 = np.linspace(0.0, 2.0, 4), np.array([1.0, 2.0])

    def lin(y, t, M):
        return tnp.dot(M, y)

    np.testing.assert_allclose(odeint(lin, y0, t, M), [sla.expm(M * s) @ y0 for s in t], atol=1e-7)
    tg.check_grads(lambda y0, t, M: odeint(lin, y0, t, M), [y0, t, M], **CHECK)


def test_odeint_lotka_volterra_and_pytree_args() -> None:
    pytest.importorskip("scipy.integrate")

    def lv(y, t, p):
        return tnp.stack([p["a"] * y[0] - p["b"] * y[0] * y[1], -p["c"] * y[1] + p["d"] * y[0] * y[1]])

    keys = "abcd"

    def f(y0, t, a, b, c, d):
        return odeint(lv, y0, t, dict(zip(keys, (a, b, c, d))))

    ps = [np.array(1.0), np.array(0.5), np.array(1.0), np.array(0.3)]
    tg.check_grads(f, [np.array([1.0, 0.8]), np.linspace(0.0, 3.0, 4), *ps], **CHECK)


def test_odeint_vmap_and_second_order() -> None:
    pytest.importorskip("scipy.integrate")
    t, k = np.linspace(0.0, 1.0, 3), np.array(0.5)
    y0s = np.array([[1.0], [2.0], [3.0]])
    got = tg.vmap(lambda y0: odeint(_decay, y0, t, k))(y0s)
    np.testing.assert_allclose(got, [odeint(_decay, y0, t, k) for y0 in y0s])
    # d2/dk2 sum_i y0 exp(-k t_i) = sum_i t_i^2 y0 exp(-k t_i)
    d2 = tg.grad(tg.grad(lambda k: tnp.sum(odeint(_decay, y0s[0], t, k))))(k)
    np.testing.assert_allclose(d2, np.sum(t ** 2 * np.exp(-0.5 * t)), rtol=1e-6)
