"""tg.fixed_point (HIPS autograd's misc.fixed_points.fixed_point): the value,
and the gradient in the parameters by the implicit function theorem, first
and second order, reverse and forward mode, against closed forms and finite
differences."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def newton_sqrt_iter(a: Any) -> Any:
    return lambda x: 0.5 * (x + a / x)


def distance(x: Any, y: Any) -> Any:
    return tnp.abs(x - y)


def test_newton_sqrt_as_autograd_tests_it() -> None:
    """autograd's own test: grad of the square root found by Newton's iteration."""
    def fun(a: Any) -> Any:
        return tg.fixed_point(newton_sqrt_iter, a, 1.0, distance, 1e-4)

    np.testing.assert_allclose(fun(2.0), np.sqrt(2.0), rtol=1e-6)
    np.testing.assert_allclose(tg.grad(fun)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-6)


def test_closed_forms_to_second_order() -> None:
    def fun(a: Any) -> Any:
        return tg.fixed_point(newton_sqrt_iter, a, np.ones_like(tg.value(a)))

    a = np.array([2.0, 3.0, 5.0])
    np.testing.assert_allclose(fun(a), np.sqrt(a), rtol=1e-14)
    np.testing.assert_allclose(tg.jacrev(fun)(a), np.diag(0.5 / np.sqrt(a)), rtol=1e-12)
    np.testing.assert_allclose(tg.jacfwd(fun)(a), np.diag(0.5 / np.sqrt(a)), rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(lambda a: tnp.sum(fun(a)))(a), np.diag(-0.25 * a ** -1.5), rtol=1e-10)
    np.testing.assert_allclose(tg.vmap(tg.grad(lambda s: tg.fixed_point(newton_sqrt_iter, s, 1.0)))(a),
                               0.5 / np.sqrt(a), rtol=1e-12)


def test_pytree_parameters_against_finite_differences() -> None:
    """A contraction x = tanh(W x + b): gradients in W and b, first and second order."""
    rng = np.random.default_rng(0)
    W, b = 0.3 * rng.standard_normal((3, 3)), rng.standard_normal(3)

    def solve(W: Any, b: Any) -> Any:
        step = lambda p: lambda x: tnp.tanh(p["W"] @ x + p["b"])  # noqa: E731
        return tg.fixed_point(step, {"W": W, "b": b}, np.zeros(3), tolerance=1e-14)

    x = solve(W, b)
    np.testing.assert_allclose(x, np.tanh(W @ x + b), atol=1e-13)
    tg.check_grads(solve, (W, b), modes=("rev", "fwd"), order=2)


def test_the_start_has_no_gradient_and_no_convergence_raises() -> None:
    g = tg.grad(lambda x0: tg.fixed_point(newton_sqrt_iter, 2.0, x0))(1.0)
    assert g == 0.0
    with pytest.raises(RuntimeError, match="no convergence"):
        tg.fixed_point(lambda a: lambda x: -x, 1.0, 1.0, max_iter=50)
