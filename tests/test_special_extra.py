"""tapegrad.scipy.special, issue 14's functions: values equal SciPy's, the
derivatives have their closed forms (the derivatives with no closed form:
tests/test_shape_parameter_derivatives.py), the integer orders are not
differentiable, and vmap maps each in one call."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.batching as batching
import tapegrad.scipy.special as ts

sp = pytest.importorskip("scipy.special")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.linspace(0.3, 3.0, 7)  # positive
S = np.linspace(-0.9, 0.9, 7)  # signed, in (-1, 1)
A = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 7.0])  # shape parameters, orders


# --- values ------------------------------------------------------------------------------------

VALUES: list[tuple[str, tuple[Any, ...]]] = [
    ("gamma", (X,)), ("gamma", (-X - 0.5,)), ("gamma", (np.array([0.0, -1.0, -2.0, 171.7]),)),
    ("rgamma", (X,)), ("rgamma", (np.array([0.0, -1.0, -2.5]),)),
    ("gammasgn", (np.array([-2.5, -1.5, -0.5, 0.5, 3.0]),)),
    ("beta", (X, A)), ("beta", (X[:, None], A)), ("beta", (-X - 0.5, A)), ("betaln", (X, 2.5)),
    ("gammainc", (A, X)), ("gammaincc", (A, X)), ("betainc", (A, 1.7, X / 3.1)),
    ("psi", (X,)), ("polygamma", (np.array([0, 1, 2, 3, 0, 1, 2]), X)),
    ("erfinv", (S,)), ("erfcinv", (S + 1.0,)),
    ("j0", (S * 5,)), ("j1", (S * 5,)), ("jn", (3, S * 5)), ("jn", (np.arange(7), S * 5)),
    ("y0", (X,)), ("y1", (X,)), ("yn", (2, X)), ("yn", (np.arange(7), X)),
    ("i0", (S * 5,)), ("i1", (S * 5,)), ("iv", (A, X)), ("iv", (2, S * 5)),
    ("ive", (A, X)), ("ive", (3, S * 5)), ("ive", (A[:, None], S * 50)),
]


@pytest.mark.parametrize(("name", "args"), VALUES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(VALUES)])
def test_values_match_scipy(name: str, args: tuple[Any, ...]) -> None:
    with np.errstate(all="ignore"):
        want = getattr(sp, name)(*args)
        got = getattr(ts, name)(*args)
    np.testing.assert_array_equal(got, want)
    assert np.result_type(got) == np.result_type(want)


@pytest.mark.parametrize("name", ["gamma", "rgamma", "erfinv", "j0", "j1", "i0", "i1", "gammasgn"])
def test_float32_values_match_scipy(name: str) -> None:
    x = (S * 0.9).astype(np.float32) if name == "erfinv" else X.astype(np.float32)
    got, want = getattr(ts, name)(x), getattr(sp, name)(x)
    np.testing.assert_array_equal(got, want)
    assert np.result_type(got) == np.result_type(want)


def test_multigammaln_matches_scipy_and_is_a_sum_of_gammaln() -> None:
    a = np.array([[2.0, 3.5], [4.0, 10.25]])
    for d in (1, 2, 3, 5):
        np.testing.assert_array_equal(ts.multigammaln(a + d, d), sp.multigammaln(a + d, d))
    assert ts.multigammaln(3.0, 2) == sp.multigammaln(3.0, 2)
    assert np.result_type(ts.multigammaln(a.astype(np.float32) + 2, 2)) == np.result_type(
        sp.multigammaln(a.astype(np.float32) + 2, 2))
    g = tg.grad(lambda a: ts.multigammaln(a, 3))(2.5)
    np.testing.assert_allclose(g, sum(sp.digamma(2.5 - j / 2) for j in range(3)), rtol=1e-13)


def test_multigammaln_checks_its_arguments_as_scipy_does() -> None:
    with pytest.raises(ValueError, match="d should be a positive integer"):
        ts.multigammaln(3.0, 1.5)
    with pytest.raises(ValueError, match=r"a \(.*\) > 0.5 \* \(d-1\)"):
        ts.multigammaln(np.array([3.0, 1.0]), 3)
    with pytest.raises(ValueError, match=r"> 0.5 \* \(d-1\)"):
        tg.grad(lambda a: ts.multigammaln(a, 4))(1.2)


def test_psi_is_digamma() -> None:
    assert ts.psi is ts.digamma


# --- derivatives against their closed forms ----------------------------------------------------

def _d(f: Any, x: np.ndarray) -> np.ndarray:
    return np.asarray(tg.elementwise_grad(f)(x))


def test_derivatives_have_their_closed_forms() -> None:
    c = dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_d(ts.gamma, X), sp.gamma(X) * sp.digamma(X), **c)
    np.testing.assert_allclose(_d(ts.rgamma, X), -sp.digamma(X) / sp.gamma(X), **c)
    np.testing.assert_allclose(_d(lambda a: ts.beta(a, 2.5), X),
                               sp.beta(X, 2.5) * (sp.digamma(X) - sp.digamma(X + 2.5)), **c)
    np.testing.assert_allclose(_d(lambda b: ts.betaln(1.5, b), X), sp.digamma(X) - sp.digamma(X + 1.5), **c)
    np.testing.assert_allclose(_d(lambda x: ts.gammainc(A, x), X),
                               X ** (A - 1) * np.exp(-X) / sp.gamma(A), **c)
    np.testing.assert_allclose(_d(lambda x: ts.gammaincc(A, x), X),
                               -X ** (A - 1) * np.exp(-X) / sp.gamma(A), **c)
    u = X / 3.1
    np.testing.assert_allclose(_d(lambda x: ts.betainc(A, 1.7, x), u),
                               u ** (A - 1) * (1 - u) ** 0.7 / sp.beta(A, 1.7), **c)
    np.testing.assert_allclose(_d(ts.erfinv, S), math.sqrt(math.pi) / 2 * np.exp(sp.erfinv(S) ** 2), **c)
    np.testing.assert_allclose(_d(ts.erfcinv, S + 1), -math.sqrt(math.pi) / 2 * np.exp(sp.erfcinv(S + 1) ** 2), **c)
    np.testing.assert_allclose(_d(ts.j0, X), -sp.j1(X), **c)
    np.testing.assert_allclose(_d(ts.j1, X), sp.j0(X) - sp.j1(X) / X, **c)
    np.testing.assert_allclose(_d(lambda x: ts.jn(4, x), X), (sp.jn(3, X) - sp.jn(5, X)) / 2, **c)
    np.testing.assert_allclose(_d(ts.y0, X), -sp.y1(X), **c)
    np.testing.assert_allclose(_d(ts.y1, X), sp.y0(X) - sp.y1(X) / X, rtol=1e-11)
    np.testing.assert_allclose(_d(lambda x: ts.yn(3, x), X), (sp.yn(2, X) - sp.yn(4, X)) / 2, **c)
    np.testing.assert_allclose(_d(ts.i0, S), sp.i1(S), **c)
    np.testing.assert_allclose(_d(ts.i1, X), sp.i0(X) - sp.i1(X) / X, **c)
    np.testing.assert_allclose(_d(lambda x: ts.iv(A, x), X), (sp.iv(A - 1, X) + sp.iv(A + 1, X)) / 2, **c)
    np.testing.assert_allclose(_d(lambda x: ts.ive(A, x), S * 4),
                               (sp.iv(A - 1, S * 4) + sp.iv(A + 1, S * 4)) / 2 * np.exp(-np.abs(S * 4))
                               - np.sign(S) * sp.ive(A, S * 4), rtol=1e-10, atol=1e-14)


def test_gammasgn_has_no_gradient() -> None:
    x = np.array([-2.5, -1.5, 0.5, 2.0])
    g = tg.grad(lambda x: (ts.gammasgn(x) * x).sum())(x)
    np.testing.assert_array_equal(g, sp.gammasgn(x))
    np.testing.assert_array_equal(tg.vmap(ts.gammasgn)(x[:, None]), sp.gammasgn(x[:, None]))


def test_second_derivatives() -> None:
    h = tg.grad(tg.grad(lambda x: ts.jn(2, x)))(1.3)
    np.testing.assert_allclose(h, (sp.jn(0, 1.3) - 2 * sp.jn(2, 1.3) + sp.jn(4, 1.3)) / 4, rtol=1e-12)
    h = tg.grad(tg.grad(ts.gamma))(1.7)
    np.testing.assert_allclose(h, sp.gamma(1.7) * (sp.digamma(1.7) ** 2 + sp.polygamma(1, 1.7)), rtol=1e-12)
    tg.check_grads(lambda x: ts.gammainc(2.5, x) * ts.betainc(1.5, 2.0, x / 4), [X], order=2)


# --- integer orders: not differentiable --------------------------------------------------------

@pytest.mark.parametrize("name", ["jn", "yn", "polygamma"])
def test_integer_order_is_not_differentiable(name: str) -> None:
    f = getattr(ts, name)
    with pytest.raises(NotImplementedError, match=rf"`{name}` with respect to argument 0"):
        tg.grad(lambda n: f(n, 1.5))(2.0)
    n = np.array([0, 1, 2, 3])  # an integer array of orders, a constant: the gradient in x is there
    g = tg.grad(lambda x: f(n, x).sum())(np.full(4, 1.5))
    want = {"jn": (sp.jn(n - 1, 1.5) - sp.jn(n + 1, 1.5)) / 2, "yn": (sp.yn(n - 1, 1.5) - sp.yn(n + 1, 1.5)) / 2,
            "polygamma": sp.polygamma(n + 1, 1.5)}[name]
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_jn_order_zero_uses_minus_one() -> None:
    """jn(0)' = (j_{-1} - j_1)/2 = -j_1: SciPy's negative orders are right."""
    np.testing.assert_allclose(tg.grad(lambda x: ts.jn(0, x))(0.7), -sp.j1(0.7), rtol=1e-13)
    np.testing.assert_allclose(tg.grad(lambda x: ts.yn(0, x))(0.7), -sp.y1(0.7), rtol=1e-13)


# --- vmap: one call per primitive, integer orders batched too ----------------------------------

def test_vmap_maps_each_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = batching.loop_rule
    monkeypatch.setattr(batching, "loop_rule", lambda fn, *a, **k: (calls.append(fn), real(fn, *a, **k))[1])
    n = np.array([[0, 1, 2], [3, 2, 1]])
    x = np.array([[0.5, 1.5, 2.5], [1.0, 2.0, 3.0]])
    for name in ("jn", "yn", "iv", "ive", "gammainc", "gammaincc", "beta", "betaln"):
        f = getattr(ts, name)
        got = tg.vmap(f)(n + 0.0 if name in ("iv", "ive", "gammainc", "gammaincc", "beta", "betaln") else n, x)
        np.testing.assert_array_equal(got, getattr(sp, name)(n, x))
    got = tg.vmap(lambda x: ts.betainc(2.0, x, x / 4), in_axes=1)(x)
    np.testing.assert_allclose(got, sp.betainc(2.0, x, x / 4).T, rtol=1e-14)
    g = tg.vmap(tg.grad(lambda x: ts.ive(1.5, x) + ts.erfinv(x / 4) + ts.gamma(x) + ts.y1(x)))(x[0])
    want = [tg.grad(lambda x: ts.ive(1.5, x) + ts.erfinv(x / 4) + ts.gamma(x) + ts.y1(x))(v) for v in x[0]]
    np.testing.assert_allclose(g, want, rtol=1e-13)
    assert calls == []


def test_every_new_function_is_exported_and_batched() -> None:
    code = ("import tapegrad.scipy.special as ts\n"
            "names = 'gamma beta betaln betainc gammainc gammaincc gammasgn rgamma polygamma psi multigammaln "
            "erfinv erfcinv j0 j1 jn y0 y1 yn i0 i1 iv ive'.split()\n"
            "assert all(n in ts.__all__ and callable(getattr(ts, n)) for n in names)\n"
            "from tapegrad.core.primitive import REGISTRY\n"
            "from tapegrad.batching import BATCH_RULES\n"
            "print(sorted(p.name for p in REGISTRY if BATCH_RULES.get(p) is None or not p.vjps_batched))")
    # (tapegrad.scipy's convolve declares rules of one cotangent at a time, which the engine
    # maps over a batch; odeint's adaptive solve has no batching rule: vmap loops,
    # each example solved to its own tolerance, as a separate call would; so is fixed_point's
    # iteration, and solve_banded, SciPy's solver of one banded matrix)
    allowed = "['convolve', 'fixed_point', 'odeint', 'solve_banded']"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == allowed


def test_rgamma_derivative_at_the_poles_of_gamma() -> None:
    """rgamma is entire: at 0, -1, -2... its derivative is cos(pi x) gamma(1 - x) = (-1)^n n!, not 0 * nan."""
    x = np.array([0.0, -1.0, -2.0, -3.0, 0.5, -1.5])
    with np.errstate(invalid="ignore"):
        want = np.where(x == np.floor(x), np.cos(np.pi * x) * sp.gamma(1 - x), -sp.rgamma(x) * sp.digamma(x))
        np.testing.assert_allclose(want[:4], [1.0, -1.0, 2.0, -6.0])
        np.testing.assert_allclose(tg.elementwise_grad(ts.rgamma)(x), want, rtol=1e-13)
        np.testing.assert_allclose(tg.vmap(tg.grad(ts.rgamma))(x), want, rtol=1e-13)
        np.testing.assert_allclose(tg.jvp(ts.rgamma, (x,), (np.ones(6),))[1], want, rtol=1e-13)
        np.testing.assert_allclose(tg.jit(tg.grad(ts.rgamma))(-2.0), 2.0, rtol=1e-13)
