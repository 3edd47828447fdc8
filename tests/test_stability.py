"""Numerical stability: gradients stay finite where the math is finite
(docs/numerics.md), including the ``where`` trap and its double-``where`` fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.scipy.special as ts


@pytest.fixture(autouse=True)
def _no_floating_point_warnings():  # noqa: ANN202
    """Stable code paths must not even warn (overflow, divide by zero, invalid)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_logsumexp_of_huge_inputs() -> None:
    x = np.array([1000.0, 999.0, -1000.0, 1000.0])
    assert np.isfinite(tnp.logsumexp(x))
    g = tg.grad(tnp.logsumexp)(x)
    np.testing.assert_allclose(g, _softmax(x), rtol=1e-12)
    h = tg.hessian(tnp.logsumexp)(x)
    p = _softmax(x)
    np.testing.assert_allclose(h, np.diag(p) - np.outer(p, p), atol=1e-14)
    g = tg.grad(lambda v: tnp.sum(tnp.logsumexp(v, axis=1)))(np.array([[-1e4, -1e4], [1e4, 0.0]]))
    np.testing.assert_allclose(g, [[0.5, 0.5], [1.0, 0.0]])


@pytest.mark.parametrize("xv", [-1000.0, -40.0, 0.0, 40.0, 1000.0])
def test_expit_at_extremes(xv: float) -> None:
    x = np.array(xv)
    e = 1 / (1 + np.exp(-min(xv, 700))) if xv > -700 else 0.0
    np.testing.assert_allclose(ts.expit(x), e, rtol=1e-15)
    g = tg.grad(ts.expit)(x)
    gg = tg.grad(tg.grad(ts.expit))(x)
    assert np.isfinite(g) and np.isfinite(gg)
    np.testing.assert_allclose(g, e * (1 - e), rtol=1e-12, atol=1e-300)


def test_log1p_and_logaddexp() -> None:
    x = np.array([1e-20, -1e-20, 1e-10])
    np.testing.assert_allclose(tg.elementwise_grad(tnp.log1p)(x), 1 / (1 + x), rtol=1e-15)
    a, b = np.array([1000.0, -1000.0, 0.0]), np.array([1000.0, 1000.0, -800.0])
    assert np.all(np.isfinite(tnp.logaddexp(a, b)))
    ga, gb = tg.grad(lambda u, v: tnp.sum(tnp.logaddexp(u, v)), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, [0.5, 0.0, 1.0], atol=1e-300)
    np.testing.assert_allclose(ga + gb, np.ones(3), rtol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e6])
def test_softmax_cross_entropy_written_with_logsumexp(scale: float) -> None:
    rng = np.random.default_rng(0)
    logits = scale * rng.standard_normal((5, 4))
    labels = np.eye(4)[[0, 3, 1, 1, 2]]

    def xent(z):  # noqa: ANN001
        return tnp.mean(tnp.logsumexp(z, axis=1) - tnp.sum(labels * z, axis=1))

    assert np.isfinite(xent(logits))
    g = tg.grad(xent)(logits)
    np.testing.assert_allclose(g, (_softmax(logits) - labels) / 5, atol=1e-15)
    assert np.all(np.isfinite(tg.hessian(xent)(logits)))


def test_abs_at_zero_has_gradient_zero() -> None:
    np.testing.assert_array_equal(tg.elementwise_grad(tnp.abs)(np.array([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])
    assert tg.grad(tnp.abs)(0.0) == 0.0


def test_sqrt_at_zero_and_the_double_where() -> None:
    with np.errstate(divide="ignore"):
        assert tg.grad(tnp.sqrt)(0.0) == np.inf  # the math: d sqrt / dx is infinite at 0

    def safe_sqrt(x):  # noqa: ANN001
        pos = x > 0
        return tnp.where(pos, tnp.sqrt(tnp.where(pos, x, 1.0)), 0.0)

    x = np.array([0.0, 4.0, -1.0])
    np.testing.assert_array_equal(safe_sqrt(x), [0.0, 2.0, 0.0])
    np.testing.assert_allclose(tg.elementwise_grad(safe_sqrt)(x), [0.0, 0.25, 0.0])
    np.testing.assert_allclose(tg.elementwise_grad(tg.elementwise_grad(safe_sqrt))(x), [0.0, -1 / 32, 0.0])


def test_the_where_trap_is_what_the_docs_say() -> None:
    """where(x > 0, sqrt(x), 0) at x = 0: the untaken branch gets a zero
    cotangent, but sqrt's rule multiplies it by 1/(2 sqrt(0)) = inf: NaN."""
    naive = lambda x: tnp.where(x > 0, tnp.sqrt(x), 0.0)  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        g = tg.elementwise_grad(naive)(np.array([0.0, 4.0]))
    assert np.isnan(g[0]) and g[1] == 0.25


def test_norm_and_hypot_at_zero() -> None:
    g = tg.grad(lambda v: tnp.linalg.norm(v))(np.zeros(3))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_slogdet_of_a_badly_scaled_matrix() -> None:
    a = np.diag([1e-200, 1e-200, 1e-100, 1e100])  # det underflows, logdet is fine
    assert np.linalg.det(a) == 0.0
    ld = tnp.linalg.slogdet(a)[1]
    assert np.isfinite(ld)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.linalg.slogdet(x)[1])(a), np.diag(1 / np.diag(a)))
