"""What HIPS autograd's programs call and now find: odeint's SciPy-style
``args=``, multivariate_normal.entropy, solve_banded, convolve's ``axes=`` and
``dot_axes=``, distributions' ``rvs``, and grad of a size-1 output (refused,
with the one-line fix). Values against SciPy, gradients against closed forms
and finite differences."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

pytest.importorskip("scipy")
import scipy.linalg as sla  # noqa: E402
import scipy.signal as ssig  # noqa: E402
import scipy.stats as ss  # noqa: E402

from tapegrad.scipy import linalg as L  # noqa: E402
from tapegrad.scipy import stats as st  # noqa: E402
from tapegrad.scipy.integrate import odeint  # noqa: E402
from tapegrad.scipy.signal import convolve  # noqa: E402

# --- odeint(..., args=(...)) ------------------------------------------------------------------------


def _decay(y: Any, t: Any, k: Any, c: Any) -> Any:
    return -k * y + c


def test_odeint_takes_scipys_args_keyword() -> None:
    t, y0, k, c = np.linspace(0.0, 2.0, 5), np.array([1.0, 2.0]), np.array(0.7), np.array(0.1)
    got = odeint(_decay, y0, t, args=(k, c))
    np.testing.assert_allclose(got, odeint(_decay, y0, t, k, c), rtol=0, atol=0)
    want = c / k + (y0 - c / k) * np.exp(-0.7 * t)[:, None]
    np.testing.assert_allclose(got, want, atol=1e-7)
    tg.check_grads(lambda y0, t, k, c: odeint(_decay, y0, t, args=(k, c)), [y0, t, k, c],
                   modes=("rev",), order=1, rtol=1e-4, atol=1e-5, eps=1e-5)
    # closed form: d/dk of sum over t of y(t)
    g = tg.grad(lambda k: tnp.sum(odeint(_decay, y0, t, args=(k, c))))(k)
    dk = (-c / k ** 2 + (c / k ** 2 - t[:, None] * (y0 - c / k)) * np.exp(-k * t)[:, None]).sum()
    np.testing.assert_allclose(g, dk, rtol=1e-5)


def test_odeint_args_one_value_and_both_forms_refused() -> None:
    t, y0 = np.linspace(0.0, 1.0, 3), np.array([1.0])
    got = odeint(lambda y, t, k: -k * y, y0, t, args=np.array(0.5))  # not a tuple: the only argument
    np.testing.assert_allclose(got[:, 0], np.exp(-0.5 * t), atol=1e-7)
    with pytest.raises(TypeError, match="not both"):
        odeint(_decay, y0, t, 0.5, args=(0.1,))


# --- multivariate_normal.entropy ---------------------------------------------------------------------


def test_multivariate_normal_entropy_matches_scipy_and_differentiates() -> None:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    C = A @ A.T + np.eye(3)
    for mean, cov in ((None, C), (np.zeros(2), 2.0), (np.zeros(2), np.array([1.0, 3.0])), (None, 0.7),
                      (None, np.diag([1.0, 2.0, 0.0]))):  # (the last one singular: rank and pseudo-determinant)
        np.testing.assert_allclose(st.multivariate_normal.entropy(mean, cov),
                                   ss.multivariate_normal.entropy(mean, cov), rtol=1e-14)
    # d/dC (log det C) / 2 = C^-1 / 2; second order along a symmetric V: -C^-1 V C^-1 / 2
    g = tg.grad(lambda c: st.multivariate_normal.entropy(cov=c))(C)
    np.testing.assert_allclose(g, 0.5 * np.linalg.inv(C), rtol=1e-12, atol=1e-15)
    Ci = np.linalg.inv(C)
    V = rng.standard_normal((3, 3))
    V = V + V.T
    h = tg.hessian(lambda c: st.multivariate_normal.entropy(cov=c))(C)
    np.testing.assert_allclose(np.einsum("ijkl,kl->ij", h, V), -0.5 * Ci @ V @ Ci, rtol=1e-10, atol=1e-14)


def test_multivariate_normal_entropy_refuses_an_indefinite_cov() -> None:
    with pytest.raises(ValueError, match="positive semidefinite"):
        st.multivariate_normal.entropy(cov=np.diag([1.0, -1.0]))


# --- solve_banded --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("l", "u"), [(1, 1), (2, 0), (0, 2), (1, 2), (0, 0)])
def test_solve_banded(l: int, u: int) -> None:
    rng = np.random.default_rng(l * 3 + u)
    n = 5
    ab = rng.standard_normal((l + u + 1, n))
    ab[u] += 5.0  # diagonally dominant
    b, B = rng.standard_normal(n), rng.standard_normal((n, 2))
    np.testing.assert_allclose(L.solve_banded((l, u), ab, b), sla.solve_banded((l, u), ab, b), rtol=1e-14)
    np.testing.assert_allclose(L.solve_banded((l, u), ab, B), sla.solve_banded((l, u), ab, B), rtol=1e-14)
    tg.check_grads(lambda ab, B: L.solve_banded((l, u), ab, B), (ab, B), order=2)
    tg.check_grads(lambda ab, b: L.solve_banded((l, u), ab, b), (ab, b), order=1)
    # the unused corners of ab are never read: no gradient there
    g = tg.grad(lambda ab: tnp.sum(L.solve_banded((l, u), ab, b)))(ab)
    for r in range(l + u + 1):
        for j in range(n):
            if not 0 <= j + r - u < n:
                assert g[r, j] == 0.0


def test_solve_banded_under_vmap() -> None:
    rng = np.random.default_rng(7)
    ab = rng.standard_normal((3, 4))
    ab[1] += 5.0
    bs, abs_ = rng.standard_normal((3, 4)), ab + 0.1 * rng.standard_normal((3, 3, 4))
    want = np.stack([sla.solve_banded((1, 1), ab, b) for b in bs])
    np.testing.assert_allclose(tg.vmap(lambda b: L.solve_banded((1, 1), ab, b))(bs), want, rtol=1e-13)
    want = np.stack([sla.solve_banded((1, 1), a, bs[0]) for a in abs_])
    np.testing.assert_allclose(tg.vmap(lambda a: L.solve_banded((1, 1), a, bs[0]))(abs_), want, rtol=1e-13)
    g = tg.vmap(tg.grad(lambda b: tnp.sum(L.solve_banded((1, 1), ab, b) ** 2)))(bs)
    want = np.stack([tg.grad(lambda b: tnp.sum(L.solve_banded((1, 1), ab, b) ** 2))(b) for b in bs])
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_solve_banded_errors() -> None:
    with pytest.raises(ValueError, match="l\\+u\\+1"):
        L.solve_banded((1, 1), np.ones((2, 4)), np.ones(4))
    with pytest.raises(ValueError, match="incompatible"):
        L.solve_banded((1, 1), np.ones((3, 4)), np.ones(3))


# --- convolve(..., axes=, dot_axes=) ----------------------------------------------------------------


def _reference(A: np.ndarray, B: np.ndarray, axes: Any, dot_axes: Any, mode: str) -> np.ndarray:
    """autograd's definition, spelled out: for each pair of the other axes,
    the sum over the contracted axes of SciPy's convolutions."""
    conv_a, conv_b = list(axes[0]), list(axes[1])
    dot_a, dot_b = list(dot_axes[0]), list(dot_axes[1])
    rest_a = [i for i in range(A.ndim) if i not in conv_a + dot_a]
    rest_b = [j for j in range(B.ndim) if j not in conv_b + dot_b]
    At = np.transpose(A, rest_a + dot_a + conv_a)
    Bt = np.transpose(B, rest_b + dot_b + conv_b)
    ra, rb = At.shape[:len(rest_a)], Bt.shape[:len(rest_b)]
    dots = At.shape[len(rest_a):len(rest_a) + len(dot_a)]
    out = None
    for ia in itertools.product(*map(range, ra)):
        for ib in itertools.product(*map(range, rb)):
            acc = sum(ssig.convolve(At[ia + d], Bt[ib + d], mode=mode) for d in itertools.product(*map(range, dots)))
            if out is None:
                out = np.zeros(ra + rb + np.shape(acc))
            out[ia + ib] = acc
    assert out is not None
    return out


CONV_CASES = [
    ((4, 3), (2, 3), ([0], [0]), ([1], [1])),          # a batch of 1-D signals summed over channels
    ((2, 5, 3), (3, 2, 2), ([1], [2]), ([2], [0])),    # other axes on both sides
    ((5, 6), (2, 3), ([0, 1], [0, 1]), ([], [])),      # plain 2-D (autograd's default axes)
    ((3, 5, 4), (4, 2, 3), ([1], [1]), ([2, 0], [0, 2])),
]


@pytest.mark.parametrize(("sa", "sb", "axes", "dot_axes"), CONV_CASES)
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_axes_and_dot_axes(sa: Any, sb: Any, axes: Any, dot_axes: Any, mode: str) -> None:
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal(sa), rng.standard_normal(sb)
    got = convolve(A, B, mode, axes=axes, dot_axes=dot_axes)
    np.testing.assert_allclose(got, _reference(A, B, axes, dot_axes, mode), rtol=1e-12, atol=1e-12)
    tg.check_grads(lambda A, B: convolve(A, B, mode, axes=axes, dot_axes=dot_axes), (A, B), order=2)


def test_convolve_default_axes_and_autograds_positional_order() -> None:
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((2, 2))
    np.testing.assert_allclose(convolve(A, B, dot_axes=((), ())), ssig.convolve(A, B), rtol=1e-12)
    with pytest.raises(TypeError, match="axes= and dot_axes= by name"):
        convolve(A, B, [[0], [0]], [[1], [1]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="same lengths"):
        convolve(A, B, axes=([0], [0]), dot_axes=([1], [1]))


# --- rvs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "args"), [("norm", (1.0, 2.0)), ("t", (3.0,)), ("gamma", (2.5,)), ("chi2", (3.0,)),
                                            ("beta", (2.0, 3.0)), ("poisson", (3.0,)),
                                            ("dirichlet", (np.array([1.0, 2.0]),)),
                                            ("multivariate_normal", (np.zeros(2), np.eye(2)))])
def test_rvs_passes_through_to_scipy(name: str, args: Any) -> None:
    ours = getattr(st, name).rvs(*args, size=4, random_state=3)
    theirs = getattr(ss, name).rvs(*args, size=4, random_state=3)
    np.testing.assert_array_equal(ours, theirs)


def test_rvs_reads_traced_parameters_by_value() -> None:
    def f(mu: Any) -> Any:
        draws = st.norm.rvs(mu, 1.0, size=3, random_state=0)  # no gradient through the draw itself
        return tnp.sum(st.norm.logpdf(draws, mu, 1.0))

    draws = ss.norm.rvs(0.5, 1.0, size=3, random_state=0)
    np.testing.assert_allclose(tg.grad(f)(0.5), np.sum(draws - 0.5), rtol=1e-12)


# --- grad of a size-1 output --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_grad_of_a_size_one_output_says_the_one_line_fix(shape: tuple[int, ...]) -> None:
    f = lambda x: tnp.reshape(tnp.sum(x ** 2), shape)  # noqa: E731
    with pytest.raises(TypeError, match=r"shape \(1,?.*\) \(size 1\).*return out\.reshape\(\(\)\)"):
        tg.grad(f)(np.array([1.0, 2.0]))
    # the fix works
    np.testing.assert_allclose(tg.grad(lambda x: f(x).reshape(()))(np.array([1.0, 2.0])), [2.0, 4.0])
