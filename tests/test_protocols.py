"""Plain NumPy on traced values, conversions that would drop gradients, in-place updates."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def test_numpy_functions_dispatch_to_tapegrad() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = np.concatenate([np.sin(x), np.exp(x) * 2])
        return np.sum(np.tanh(y)) + np.mean(x**2) + np.max(x)

    x = np.array([0.1, -0.4, 0.7])
    g = tg.grad(f)(x)
    num = tg.grad(lambda x: tnp.sum(tnp.tanh(tnp.concatenate([tnp.sin(x), tnp.exp(x) * 2])))
                  + tnp.mean(x**2) + tnp.max(x))(x)
    np.testing.assert_allclose(g, num)


def test_plain_numpy_logistic_regression_differentiates_as_written() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = (rng.random(20) > 0.5).astype(float)

    def loss(w):  # noqa: ANN001, ANN202
        p = 1 / (1 + np.exp(-(X @ w)))
        return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))

    w = np.array([0.1, -0.2, 0.3])
    p = 1 / (1 + np.exp(-(X @ w)))
    np.testing.assert_allclose(tg.grad(loss)(w), X.T @ (p - y) / 20, rtol=1e-12)


def test_numpy_function_without_a_rule_raises_naming_it() -> None:
    with pytest.raises(TypeError, match=r"numpy\.\w*unwrap has no differentiation rule"):
        tg.grad(lambda x: np.sum(np.unwrap(x)))(np.ones(4))
    with pytest.raises(TypeError, match=r"numpy\.spacing has no differentiation rule"):
        tg.grad(lambda x: np.sum(np.spacing(x)))(np.ones(4))


def test_ufunc_methods_and_out_are_refused() -> None:
    with pytest.raises(TypeError, match=r"numpy\.add\.reduce is not differentiable"):
        tg.grad(lambda x: np.add.reduce(x))(np.ones(3))
    with pytest.raises(TypeError, match="out="):
        tg.grad(lambda x: np.sum(np.sin(x, out=np.empty(3))))(np.ones(3))


@pytest.mark.parametrize("convert", [float, int, complex, math.sin, np.asarray, np.array, lambda x: x.item()],
                         ids=["float", "int", "complex", "math.sin", "np.asarray", "np.array", "item"])
def test_implicit_conversions_raise_and_point_to_value(convert) -> None:  # noqa: ANN001
    with pytest.raises(TypeError, match=r"tapegrad.*tg\.value\(x\)"):
        tg.grad(lambda x: convert(x))(1.0)


def test_assigning_traced_into_plain_array_suggests_stack() -> None:
    def f(x):  # noqa: ANN001, ANN202
        out = np.zeros(3)
        out[1:] = x
        return tnp.sum(out)

    with pytest.raises(TypeError, match="tnp.stack"):
        tg.grad(f)(np.ones(2))


def test_tnp_asarray_stays_traced_and_value_reads() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = tnp.asarray(x)
        assert isinstance(tg.value(y), np.ndarray)
        return tnp.sum(y * 3)

    np.testing.assert_allclose(tg.grad(f)(np.ones(2)), [3.0, 3.0])


def test_traced_value_attributes_and_iteration() -> None:
    def f(x):  # noqa: ANN001, ANN202
        assert x.shape == (3, 2) and x.ndim == 2 and x.size == 6 and x.dtype == np.float64
        assert len(x) == 3
        rows = list(x)
        assert len(rows) == 3 and rows[0].shape == (2,)
        assert "Traced" in repr(x)
        return tnp.sum(rows[2] * 2) + tnp.sum(x.T[0])

    g = tg.grad(f)(np.ones((3, 2)))
    np.testing.assert_allclose(g, [[1, 0], [1, 0], [3, 2]])


def test_truthiness_and_comparisons_are_plain() -> None:
    def f(x):  # noqa: ANN001, ANN202
        mask = x > 0
        assert type(mask) is np.ndarray and mask.dtype == bool
        return tnp.sum(tnp.where(mask, x, 0.0) * 2) if (x[0] > 0) else tnp.sum(x)

    np.testing.assert_allclose(tg.grad(f)(np.array([1.0, -1.0])), [2.0, 0.0])


def test_in_place_updates_are_functional() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = tnp.zeros(4) + 0.0 * x[0]
        for i in range(4):
            y[i] = x[i] ** 2
        y += x
        y[1:3] *= 2
        return tnp.sum(y)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(tg.grad(f)(x), [2 * 1 + 1, 2 * (4 + 1), 2 * (6 + 1), 8 + 1])


def test_setitem_keeps_earlier_uses_intact() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = x * 1.0
        z = y * y  # uses the old y
        y[0] = 0.0
        return tnp.sum(z) + tnp.sum(y)

    np.testing.assert_allclose(tg.grad(f)(np.array([1.0, 2.0])), [2.0, 5.0])


def test_tnp_on_plain_arrays_returns_plain_arrays() -> None:
    x = np.array([1.0, 2.0])
    for out in (tnp.sin(x), tnp.sum(x), tnp.stack([x, x]), tnp.concatenate([x, x]), tnp.mean(x)):
        assert type(out) in (np.ndarray, np.float64)
    assert tnp.float32 is np.float32 and tnp.pi == np.pi
