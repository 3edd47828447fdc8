"""tg.linearize and tg.linear_transpose, as JAX defines them."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

rng = np.random.default_rng(3)
A = rng.normal(size=(3, 2))


def test_linear_transpose_of_a_matrix_product_is_the_transposed_matrix() -> None:
    f_t = tg.linear_transpose(lambda x: A @ x, np.zeros(2))
    ct = rng.normal(size=3)
    (got,) = f_t(ct)
    np.testing.assert_allclose(got, A.T @ ct)
    g_t = tg.linear_transpose(lambda x, y: 2.0 * x + y, 1.0, 1.0)
    assert g_t(3.0) == (6.0, 3.0)


def test_linear_transpose_takes_pytrees_and_shapes_only() -> None:
    class Spec:  # (JAX's ShapeDtypeStruct: only shape and dtype are read)
        shape, dtype = (2,), np.dtype(np.float64)

    f_t = tg.linear_transpose(lambda p: {"s": p["a"] * 3.0, "t": tnp.sum(p["b"])},
                              {"a": Spec(), "b": np.ones(4)})
    (got,) = f_t({"s": np.array([1.0, 2.0]), "t": np.float64(5.0)})
    np.testing.assert_allclose(got["a"], [3.0, 6.0])
    np.testing.assert_allclose(got["b"], np.full(4, 5.0))


def test_linear_transpose_refuses_bad_cotangents_and_integers() -> None:
    f_t = tg.linear_transpose(lambda x: A @ x, np.zeros(2))
    with pytest.raises(TypeError, match="cotangent type does not match function output"):
        f_t(np.ones(4))
    with pytest.raises(TypeError, match="cotangent tree does not match function output"):
        f_t((np.ones(3),))
    with pytest.raises(TypeError, match="float or complex"):
        tg.linear_transpose(lambda x: x, np.zeros(2, dtype=int))


def test_linearize_value_and_jvp_function() -> None:
    x = np.array([0.3, 1.1])
    out, f_jvp = tg.linearize(lambda x: tnp.sin(x) * x, x)
    np.testing.assert_allclose(out, np.sin(x) * x)
    t = np.array([1.0, -2.0])
    np.testing.assert_allclose(f_jvp(t), (np.cos(x) * x + np.sin(x)) * t)
    np.testing.assert_allclose(f_jvp(2 * t), 2 * f_jvp(t))  # (linear, reusable)
    out2, f2, aux = tg.linearize(lambda x, y: (tnp.sum(x * y), "aux"), x, x, has_aux=True)
    assert aux == "aux" and out2 == pytest.approx(np.sum(x * x))
    assert f2(t, np.zeros(2)) == pytest.approx(np.sum(t * x))
    with pytest.raises(TypeError, match="one per"):
        f2(t)
