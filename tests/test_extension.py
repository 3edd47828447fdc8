"""The extension API (SPEC section 5): primitive, defvjp, defjvp, check_grads."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


@tg.primitive
def logsin(x):  # noqa: ANN001, ANN201
    return np.log(np.sin(x))


tg.defvjp(logsin, lambda ans, x: lambda g: g / tnp.tan(x))


@tg.primitive
def scaled_add(x, y, scale=1.0):  # noqa: ANN001, ANN201
    return scale * x + y


tg.defvjp(scaled_add, lambda ans, x, y, scale=1.0: lambda g: g * scale, None)
tg.defvjp(scaled_add, lambda ans, x, y, scale=1.0: lambda g: g, argnums=(1,))


def test_user_primitive_plain_call_is_the_function() -> None:
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(logsin(x), np.log(np.sin(x)))


def test_user_primitive_differentiates_to_second_order_both_modes() -> None:
    tg.check_grads(logsin, (np.array([0.5, 1.0, 2.0]),), modes=("rev", "fwd"), order=2)


def test_defvjp_with_argnums_and_kwargs() -> None:
    gx, gy = tg.grad(lambda x, y: tnp.sum(scaled_add(x, y, scale=3.0)), argnums=(0, 1))(np.ones(2), np.ones(2))
    np.testing.assert_allclose(gx, [3.0, 3.0])
    np.testing.assert_allclose(gy, [1.0, 1.0])


def test_vjp_only_primitive_works_in_forward_mode() -> None:
    x = np.array([0.5, 1.0])
    _, t = tg.jvp(logsin, (x,), (np.array([1.0, 2.0]),))
    np.testing.assert_allclose(t, np.array([1.0, 2.0]) / np.tan(x))


def test_missing_rule_is_an_error_not_a_zero() -> None:
    @tg.primitive
    def half_ruled(x, y):  # noqa: ANN001, ANN202
        return x * y

    tg.defvjp(half_ruled, lambda ans, x, y: lambda g: g * y)
    with pytest.raises(NotImplementedError, match="VJP of `half_ruled` with respect to argument 1"):
        tg.grad(half_ruled, argnums=1)(2.0, 3.0)


def test_check_grads_reports_the_worst_entry() -> None:
    @tg.primitive
    def bad_square(x):  # noqa: ANN001, ANN202
        return x**2

    tg.defvjp(bad_square, lambda ans, x: lambda g: g * 2 * x * (1 + 0.1 * (x > 1.5)))
    with pytest.raises(AssertionError, match=r"reverse mode.*worst entry \(2,\)"):
        tg.check_grads(bad_square, (np.array([0.5, 1.0, 2.0]),), modes=("rev",), order=1)


def test_check_grads_catches_a_wrong_second_derivative() -> None:
    @tg.primitive
    def cube(x):  # noqa: ANN001, ANN202
        return x**3

    # right first derivative, but written with value(): not differentiable again
    tg.defvjp(cube, lambda ans, x: lambda g: g * 3 * tg.value(x) ** 2)
    tg.check_grads(cube, (np.array([0.5, 1.0]),), modes=("rev",), order=1)
    with pytest.raises(AssertionError, match="order 2"):  # the second derivative is the wrong one
        tg.check_grads(cube, (np.array([0.5, 1.0]),), modes=("rev",), order=2)


def test_defjvp_is_accepted() -> None:
    @tg.primitive
    def twice(x):  # noqa: ANN001, ANN202
        return 2 * x

    tg.defvjp(twice, lambda ans, x: lambda g: 2 * g)
    tg.defjvp(twice, lambda ans, x: lambda t: 2 * t)
    assert twice.primitive.jvps[0] is not None
    tg.check_grads(twice, (np.array([1.0]),))


def test_defvjp_on_a_plain_function_is_an_error() -> None:
    with pytest.raises(TypeError, match="not a tapegrad primitive"):
        tg.defvjp(np.sin, lambda ans, x: lambda g: g)
