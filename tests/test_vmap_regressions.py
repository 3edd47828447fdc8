"""Defects found while building vmap, each reproduced as its user met it."""

from __future__ import annotations

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp


def test_per_example_grad_of_a_matrix_product_with_its_transpose() -> None:
    # the matmul rule asked a batched value for its memory layout (.flags)
    X = np.random.default_rng(0).standard_normal((2, 3, 3))
    got = tg.vmap(tg.grad(lambda x: tnp.sum(x @ x.T)))(X)
    want = np.stack([tg.grad(lambda x: tnp.sum(x @ x.T))(x) for x in X])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_boolean_operators_on_traced_values() -> None:
    x = np.array([[-0.5, 0.5, 1.5], [0.2, 2.0, -1.0]])
    np.testing.assert_array_equal(tg.vmap(lambda v: (v > 0) & (v < 1))(x), (x > 0) & (x < 1))
    np.testing.assert_array_equal(tg.vmap(lambda v: (v < 0) | (v > 1))(x), (x < 0) | (x > 1))
    np.testing.assert_array_equal(tg.vmap(lambda v: (v > 0) ^ True)(x), (x > 0) ^ True)
    np.testing.assert_array_equal(tg.vmap(lambda v: True & (v > 0))(x), x > 0)
    g = tg.grad(lambda v: tnp.sum(tnp.where((v > 0) & (v < 1), v * v, v)))(x[0])
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0])


def test_a_no_gradient_function_with_a_batched_keyword_argument() -> None:
    got = tg.vmap(lambda v: tnp.searchsorted(np.arange(3.0), v=v))(np.array([[0.5, 2.5], [1.5, -1.0]]))
    np.testing.assert_array_equal(got, [[1, 3], [2, 0]])


def test_gradient_of_imag_of_a_0d_value() -> None:
    # -1j * np.float64(2.0) is a Python complex, which has no shape
    assert tg.grad(lambda a: tnp.imag(a) * 2.0)(np.array(1 + 1j)) == -2j
    assert tg.grad(lambda a: tnp.imag(a) * 2.0)(np.array(1.0)) == 0.0


def test_gradient_of_assigning_a_value_with_leading_ones() -> None:
    # NumPy drops v's leading ones when it assigns v (1, 4) into y[0] (4,): the
    # cotangent of v gets them back
    def f(x, v):
        y = x * 1.0
        y[0] = v
        return tnp.sum(y * y)

    x, v = np.arange(12.0).reshape(3, 4), np.ones((1, 4))
    gx, gv = tg.grad(f, (0, 1))(x, v)
    assert gv.shape == (1, 4)
    np.testing.assert_allclose(gv, 2 * v)
    np.testing.assert_allclose(gx, np.concatenate([np.zeros((1, 4)), 2 * x[1:]]))
