"""Higher order by nesting, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def nth(f, n):  # noqa: ANN001, ANN202
    """grad nested n times: grad(grad(...grad(f)))."""
    for _ in range(n):
        f = tg.grad(f)
    return f


def _tanh_derivs(x: float) -> list[float]:
    t = math.tanh(x)
    return [
        t,
        1 - t**2,
        -2 * t * (1 - t**2),
        -2 * (1 - t**2) * (1 - 3 * t**2),
        8 * t * (1 - t**2) * (2 - 3 * t**2),
    ]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("x", [-0.7, 0.3, 1.5])
def test_tanh_nth_derivative(n: int, x: float) -> None:
    np.testing.assert_allclose(nth(tnp.tanh, n)(x), _tanh_derivs(x)[n], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_exp_and_sin_nth_derivative(n: int) -> None:
    x = 0.8
    np.testing.assert_allclose(nth(tnp.exp, n)(x), math.exp(x), rtol=1e-13)
    want = [math.sin, math.cos, lambda v: -math.sin(v), lambda v: -math.cos(v)][n % 4](x)
    np.testing.assert_allclose(nth(tnp.sin, n)(x), want, rtol=1e-13)


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_power_nth_derivative(k: int, n: int) -> None:
    x = 1.3
    want = math.perm(k, n) * x ** (k - n) if n <= k else 0.0
    np.testing.assert_allclose(nth(lambda x: x**k, n)(x), want, rtol=1e-12, atol=1e-12)


def test_fourth_derivative_is_nested_not_repeated() -> None:
    calls = []

    def f(x):  # noqa: ANN001, ANN202
        calls.append(type(x))
        return tnp.tanh(x)

    nth(f, 4)(0.5)
    # f ran once, on a value traced four levels deep
    assert len(calls) == 1
    v = tg.grad(tg.grad(tg.grad(tg.grad(f))))(0.5)
    np.testing.assert_allclose(v, _tanh_derivs(0.5)[4], rtol=1e-12)


def test_perturbation_confusion() -> None:
    assert tg.grad(lambda x: x * tg.grad(lambda y: x + y)(1.0))(2.0) == 1.0


def test_closure_over_outer_traced_value() -> None:
    # d/dx [ d/dy (x * y^2) at y=3 ] = d/dx (6x) = 6
    assert tg.grad(lambda x: tg.grad(lambda y: x * y**2)(3.0))(2.0) == 6.0
    # d/dx [ x * d/dy(x*y) ] = d/dx x^2 = 2x
    assert tg.grad(lambda x: x * tg.grad(lambda y: x * y)(1.0))(3.0) == 6.0


def test_grad_of_function_calling_vjp() -> None:
    def f(x):  # noqa: ANN001, ANN202
        _, vjp_fn = tg.vjp(tnp.sin, x)
        return tnp.sum(vjp_fn(tnp.ones_like(x) * x)[0])  # sum(x cos x)

    x = np.array([0.3, 1.1])
    np.testing.assert_allclose(tg.grad(f)(x), np.cos(x) - x * np.sin(x))


def test_hessian_by_nesting_on_vectors() -> None:
    A = np.array([[2.0, 1.0], [1.0, 3.0]])

    def f(x):  # noqa: ANN001, ANN202
        return 0.5 * x @ A @ x + tnp.sum(tnp.sin(x))

    x = np.array([0.4, -0.2])
    rows = [tg.grad(lambda x, i=i: tg.grad(f)(x)[i])(x) for i in range(2)]
    np.testing.assert_allclose(np.array(rows), A - np.diag(np.sin(x)), rtol=1e-12)


def test_nested_explicit_tapes() -> None:
    x0 = np.array([0.5, 1.0])
    with tg.Tape() as outer:
        x = outer.watch(x0)
        with tg.Tape() as inner:
            xi = inner.watch(x)
            y = tnp.sum(tnp.sin(xi) ** 2)
        dy = inner.gradient(y, xi)  # 2 sin cos = sin(2x), recorded on outer
        z = tnp.sum(dy)
    np.testing.assert_allclose(outer.gradient(z, x), 2 * np.cos(2 * x0))


def test_jvp_of_grad_and_grad_of_jvp() -> None:
    f = lambda x: tnp.sum(tnp.tanh(x) ** 3)  # noqa: E731
    x = np.array([0.2, -0.5])
    v = np.array([1.0, 2.0])
    _, hv = tg.jvp(tg.grad(f), (x,), (v,))
    hv2 = tg.grad(lambda x: tg.jvp(f, (x,), (v,))[1])(x)
    np.testing.assert_allclose(hv, hv2, rtol=1e-12)
