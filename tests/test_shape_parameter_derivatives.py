"""Derivatives of gammainc, gammaincc, betainc in their shape parameters and of
iv, ive in their order (series and continued fractions), and of the
distribution functions built on them (gamma, chi2, beta, t): against finite
differences of SciPy's functions (1e-6 relative), second order against finite
differences of the first, and against mpmath's arbitrary precision where it
is installed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad as tg

sp = pytest.importorskip("scipy.special")
ss = pytest.importorskip("scipy.stats")
import tapegrad.scipy.special as ts  # noqa: E402
import tapegrad.scipy.stats as st  # noqa: E402


def fd(f: Any, x: float, h: float) -> float:
    """Five-point central difference (error O(h^4))."""
    return float((f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h))


def close(got: Any, want: float, rtol: float = 1e-6, atol: float = 1e-14) -> None:
    np.testing.assert_allclose(float(got), want, rtol=rtol, atol=atol)


GAMMA_POINTS = [(a, x) for a in (0.3, 0.8, 1.5, 2.5, 7.0, 30.0) for x in (0.05, 0.5, 1.3, 3.0, 10.0, 40.0)]


@pytest.mark.parametrize(("a", "x"), GAMMA_POINTS)
def test_gammainc_in_a_matches_finite_differences(a: float, x: float) -> None:
    h = 1e-3 * a
    # (the tail that is small is the one whose differences keep their digits)
    if x < a + 1:
        close(tg.grad(lambda s: ts.gammainc(s, x))(a), fd(lambda s: sp.gammainc(s, x), a, h))
    else:
        close(tg.grad(lambda s: ts.gammaincc(s, x))(a), fd(lambda s: sp.gammaincc(s, x), a, h), atol=1e-300)
    # the two are each other's negative
    np.testing.assert_allclose(tg.grad(lambda s: ts.gammainc(s, x))(a),
                               -tg.grad(lambda s: ts.gammaincc(s, x))(a), rtol=1e-15)


@pytest.mark.parametrize(("a", "x"), GAMMA_POINTS[::3])
def test_gammainc_second_order(a: float, x: float) -> None:
    d1 = tg.grad(lambda s, y: ts.gammainc(s, y), argnums=(0, 1))
    hess = tg.hessian(lambda p: ts.gammainc(p[0], p[1]))(np.array([a, x]))
    h = 1e-3 * min(a, x)
    for i in range(2):
        row = [fd(lambda s: d1(s, x)[i], a, h), fd(lambda y: d1(a, y)[i], x, h)]
        np.testing.assert_allclose(hess[i], row, rtol=1e-6, atol=1e-13)
    np.testing.assert_allclose(hess[0, 1], hess[1, 0], rtol=1e-9)


BETA_POINTS = [(a, b, x) for a, b in ((0.5, 0.5), (2.0, 3.0), (0.3, 7.0), (20.0, 5.0), (60.0, 45.0))
               for x in (0.01, 0.2, 0.5, 0.7, 0.95)]


@pytest.mark.parametrize(("a", "b", "x"), BETA_POINTS)
def test_betainc_in_a_and_b_match_finite_differences(a: float, b: float, x: float) -> None:
    ga, gb = tg.grad(lambda p, q: ts.betainc(p, q, x), argnums=(0, 1))(a, b)
    small = sp.betainc(a, b, x) < 0.5  # difference the smaller tail

    def tail(p: float, q: float) -> float:
        return float(sp.betainc(p, q, x) if small else sp.betaincc(p, q, x))

    sign = 1.0 if small else -1.0
    close(ga, sign * fd(lambda p: tail(p, b), a, 1e-3 * a), atol=1e-12)
    close(gb, sign * fd(lambda q: tail(a, q), b, 1e-3 * b), atol=1e-12)


@pytest.mark.parametrize(("a", "b", "x"), BETA_POINTS[1::4])
def test_betainc_hessian_in_all_three(a: float, b: float, x: float) -> None:
    f = lambda p: ts.betainc(p[0], p[1], p[2])  # noqa: E731
    g = tg.grad(f)
    p0 = np.array([a, b, x])
    hess = tg.hessian(f)(p0)
    for j in range(3):
        h = 1e-4 * p0[j] * (1 - x if j == 2 else 1)
        e = np.eye(3)[j]
        col = (g(p0 - 2 * h * e) - 8 * g(p0 - h * e) + 8 * g(p0 + h * e) - g(p0 + 2 * h * e)) / (12 * h)
        np.testing.assert_allclose(hess[:, j], col, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize(("v", "x"), [(v, x) for v in (-1.3, 0.3, 1.0, 2.5, 10.0) for x in (0.1, 1.5, 20.0)])
def test_iv_and_ive_in_the_order(v: float, x: float) -> None:
    close(tg.grad(lambda s: ts.ive(s, x))(v), fd(lambda s: sp.ive(s, x), v, 1e-3), atol=1e-15)
    close(tg.grad(lambda s: ts.iv(s, x))(v), fd(lambda s: sp.iv(s, x), v, 1e-3), atol=1e-15)
    d1 = tg.grad(lambda s, y: ts.ive(s, y), argnums=0)
    close(tg.grad(d1)(v, x), fd(lambda s: d1(s, x), v, 1e-3), atol=1e-13)
    close(tg.grad(d1, argnums=1)(v, x), fd(lambda y: d1(v, y), x, 1e-4 * x), atol=1e-13)


def test_against_arbitrary_precision() -> None:
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for a, x in ((0.3, 40.0), (7.0, 40.0), (150.0, 160.0), (0.001, 0.2)):
        want = mp.diff(lambda s: mp.gammainc(s, 0, x, regularized=True), a)
        close(tg.grad(lambda s: ts.gammainc(s, x))(a), float(want), rtol=1e-10, atol=0)
        want2 = mp.diff(lambda s: mp.gammainc(s, 0, x, regularized=True), a, 2)
        close(tg.grad(tg.grad(lambda s: ts.gammainc(s, x)))(a), float(want2), rtol=1e-9, atol=0)
    for a, b, x in ((0.001, 2.0, 0.2), (0.001, 2.0, 0.99), (100.0, 80.0, 0.6)):
        def f(p: Any, q: Any) -> Any:
            return mp.betainc(p, q, 0, x, regularized=True)

        ga, gb = tg.grad(lambda p, q: ts.betainc(p, q, x), argnums=(0, 1))(a, b)
        close(ga, float(mp.diff(lambda p: f(p, b), a)), rtol=1e-10, atol=0)
        close(gb, float(mp.diff(lambda q: f(a, q), b)), rtol=1e-10, atol=0)
    for v, x in ((10.0, 0.1), (0.3, 300.0), (40.0, 5.0)):
        want = mp.diff(lambda s: mp.besseli(s, x) * mp.exp(-x), v)
        close(tg.grad(lambda s: ts.ive(s, x))(v), float(want), rtol=1e-9, atol=0)


def test_edges_of_the_domain() -> None:
    """At x = 0 (and x = 1 for betainc) the function is constant in its parameters."""
    assert tg.grad(lambda a: ts.gammainc(a, 0.0))(1.5) == 0.0
    assert tg.grad(lambda a: ts.betainc(a, 2.0, 1.0))(1.5) == 0.0
    assert tg.grad(lambda b: ts.betainc(2.0, b, 0.0))(1.5) == 0.0
    assert np.isnan(tg.grad(lambda a: ts.gammainc(a, 1.0))(-1.0))  # outside the domain, as the value


def test_forward_mode_and_vmap() -> None:
    a = np.array([0.7, 1.5, 4.0])
    want = tg.elementwise_grad(lambda s: ts.gammainc(s, 2.0))(a)
    _, tangent = tg.jvp(lambda s: ts.gammainc(s, 2.0), (a,), (np.ones(3),))
    np.testing.assert_allclose(tangent, want, rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda s: ts.gammainc(s, 2.0)))(a), want, rtol=1e-14)
    np.testing.assert_allclose(np.diag(tg.jacfwd(lambda s: ts.betainc(s, 2.0, 0.4))(a)),
                               tg.elementwise_grad(lambda s: ts.betainc(s, 2.0, 0.4))(a), rtol=1e-14)


# --- the distribution functions in their shape parameters ------------------------------------------

CDFS = [
    ("gamma", lambda s, x: st.gamma.cdf(x, s), lambda s, x: ss.gamma.cdf(x, s), (0.7, 2.5, 9.0), (0.4, 2.0, 6.0)),
    ("gamma_sf", lambda s, x: st.gamma.sf(x, s), lambda s, x: ss.gamma.sf(x, s), (0.7, 2.5), (0.4, 6.0)),
    ("chi2", lambda s, x: st.chi2.cdf(x, s), lambda s, x: ss.chi2.cdf(x, s), (1.0, 3.0, 12.0), (0.5, 3.0, 9.0)),
    ("chi2_logsf", lambda s, x: st.chi2.logsf(x, s), lambda s, x: ss.chi2.logsf(x, s), (1.0, 3.0), (0.5, 9.0)),
    ("beta_a", lambda s, x: st.beta.cdf(x, s, 2.0), lambda s, x: ss.beta.cdf(x, s, 2.0), (0.5, 2.0, 8.0),
     (0.1, 0.5, 0.9)),
    ("beta_b", lambda s, x: st.beta.sf(x, 2.0, s), lambda s, x: ss.beta.sf(x, 2.0, s), (0.5, 2.0, 8.0),
     (0.1, 0.5, 0.9)),
    ("t", lambda s, x: st.t.cdf(x, s), lambda s, x: ss.t.cdf(x, s), (0.7, 2.0, 5.5, 30.0),
     (-3.0, -0.5, 0.3, 2.0, 8.0)),
    ("t_sf", lambda s, x: st.t.sf(x, s), lambda s, x: ss.t.sf(x, s), (0.7, 5.5), (-3.0, 0.3, 8.0)),
]


@pytest.mark.parametrize(("name", "ours", "theirs", "shapes", "xs"), CDFS, ids=[c[0] for c in CDFS])
def test_distribution_functions_in_their_shape_parameters(name: str, ours: Any, theirs: Any,
                                                          shapes: Any, xs: Any) -> None:
    for s in shapes:
        for x in xs:
            close(tg.grad(ours)(s, x), fd(lambda p: theirs(p, x), s, 1e-3 * s), atol=1e-11)


def test_t_cdf_at_zero_and_second_order() -> None:
    assert tg.grad(lambda df: st.t.cdf(0.0, df))(3.0) == 0.0
    g = tg.grad(lambda df, x: st.t.cdf(x, df), argnums=(0, 1))
    hess = tg.hessian(lambda p: st.t.cdf(p[1], p[0]))(np.array([3.0, 1.2]))
    for i in range(2):
        row = [fd(lambda d: g(d, 1.2)[i], 3.0, 1e-3), fd(lambda x: g(3.0, x)[i], 1.2, 1e-3)]
        np.testing.assert_allclose(hess[i], row, rtol=1e-6, atol=1e-12)
