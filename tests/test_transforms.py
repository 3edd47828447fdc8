"""grad, value_and_grad, vjp, elementwise_grad, stop_gradient, value (SPEC section 3)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def test_grad_of_scalar_function() -> None:
    x = np.array([0.1, 0.5, -1.0])
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(tnp.sin(x) * x))(x), np.cos(x) * x + np.sin(x))


def test_value_and_grad() -> None:
    v, g = tg.value_and_grad(lambda x: tnp.sum(x**2))(np.array([1.0, 2.0]))
    assert v == 5.0 and type(v) is not tg.core.traced.Traced
    np.testing.assert_allclose(g, [2.0, 4.0])


def test_argnums_int_and_tuple() -> None:
    f = lambda x, y, z: x * y**2 + z  # noqa: E731
    assert tg.grad(f, argnums=1)(2.0, 3.0, 1.0) == 12.0
    gx, gz = tg.grad(f, argnums=(0, 2))(2.0, 3.0, 1.0)
    assert (gx, gz) == (9.0, 1.0)
    assert tg.grad(f, argnums=-1)(2.0, 3.0, 1.0) == 1.0


def test_one_grad_function_called_with_different_arities() -> None:
    g = tg.grad(lambda *xs: xs[0] * xs[-1] ** 2, argnums=-1)  # argnums depend on the arity
    assert g(2.0, 3.0) == 12.0
    assert g(2.0, 5.0, 3.0) == 12.0
    assert g(3.0) == 27.0
    for _ in range(2):  # an out-of-range call raises every time
        with pytest.raises(TypeError, match="out of range"):
            tg.grad(lambda x: x, argnums=1)(1.0)
    g1 = tg.value_and_grad(lambda x, y=0.0: x * y, argnums=1)
    for _ in range(2):
        with pytest.raises(TypeError, match="argnums=1 is out of range"):
            g1(1.0)
    assert g1(2.0, 3.0) == (6.0, 2.0)


def test_has_aux() -> None:
    def f(x):  # noqa: ANN001, ANN202
        y = tnp.sum(x**2)
        return y, {"mean": tnp.mean(x), "label": "ok"}

    g, aux = tg.grad(f, has_aux=True)(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, [2.0, 6.0])
    assert aux["label"] == "ok" and aux["mean"] == 2.0
    assert type(aux["mean"]) is not tg.core.traced.Traced
    (v, aux2), g2 = tg.value_and_grad(f, has_aux=True)(np.array([1.0, 3.0]))
    assert v == 10.0 and aux2["mean"] == 2.0


Point = namedtuple("Point", ["x", "y"])


def test_pytree_inputs_keep_their_structure() -> None:
    params = {"w": np.array([1.0, 2.0]), "b": (np.array(0.5), [np.array([3.0])]), "none": None,
              "p": Point(np.array(1.0), np.array(2.0))}

    def loss(p):  # noqa: ANN001, ANN202
        return tnp.sum(p["w"] ** 2) * p["b"][0] + tnp.sum(p["b"][1][0]) + p["p"].x * p["p"].y

    g = tg.grad(loss)(params)
    assert set(g) == set(params) and g["none"] is None
    assert isinstance(g["b"], tuple) and isinstance(g["b"][1], list) and isinstance(g["p"], Point)
    np.testing.assert_allclose(g["w"], [1.0, 2.0])
    np.testing.assert_allclose(g["b"][0], 5.0)
    np.testing.assert_allclose(g["b"][1][0], [1.0])
    assert g["p"].x == 2.0 and g["p"].y == 1.0


def test_pytree_outputs_of_vjp() -> None:
    x = np.array([1.0, 2.0])
    out, vjp_fn = tg.vjp(lambda x: {"a": x * 2, "b": (tnp.sum(x), None)}, x)
    assert set(out) == {"a", "b"} and out["b"][1] is None
    (g,) = vjp_fn({"a": np.array([1.0, 1.0]), "b": (np.array(3.0), None)})
    np.testing.assert_allclose(g, [5.0, 5.0])


def test_unused_input_gets_zeros_of_its_shape_and_dtype() -> None:
    gx, gy = tg.grad(lambda x, y: tnp.sum(x), argnums=(0, 1))(np.ones(2), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(gy, np.zeros((2, 3)))
    assert gy.dtype == np.float32
    assert tg.grad(lambda x: 3.0)(1.0) == 0.0


def test_dtypes_preserved() -> None:
    g32 = tg.grad(lambda x: tnp.sum(x * 2.0))(np.ones(3, np.float32))
    assert g32.dtype == np.float32
    g = tg.grad(lambda x: x * x)(3.0)
    assert isinstance(g, np.float64) and g == 6.0
    g0 = tg.grad(lambda x: x * x)(np.array(3.0))
    assert isinstance(g0, np.ndarray) and g0.shape == ()


def test_inputs_are_never_modified_and_results_are_writeable() -> None:
    x = np.array([1.0, 2.0])
    keep = x.copy()

    def f(x):  # noqa: ANN001, ANN202
        x[0] = 10.0
        x += 1.0
        return tnp.sum(x)

    g = tg.grad(f)(x)
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(g, [0.0, 1.0])
    g2 = tg.grad(lambda x: tnp.sum(x))(np.ones(3))  # broadcast cotangent: must be copied out
    g2 += 1.0
    np.testing.assert_array_equal(g2, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("f", [
    lambda W, x: tnp.sum(tnp.tanh(x @ W.T)),       # the matmul rule: a W.T operand
    lambda W, x: tnp.sum(tnp.tanh(W.T @ x[:3])),
    lambda W, x: tnp.sum(W.T * x[:3, :2].T[:, :1]),  # elementwise on a transposed view
], ids=["x@W.T", "W.T@x", "W.T*c"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_gradients_have_the_primal_memory_layout(f, order) -> None:  # noqa: ANN001
    # as PyTorch's do: an optimizer's update over mismatched layouts is far slower
    rng = np.random.default_rng(0)
    W = np.asarray(rng.standard_normal((3, 2)), order=order)
    x = rng.standard_normal((4, 2))
    g = tg.grad(f)(W, x)
    assert g.flags.c_contiguous if order == "C" else g.flags.f_contiguous
    eps = 1e-6
    num = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        d = np.zeros_like(W)
        d[i] = eps
        num[i] = (f(W + d, x) - f(W - d, x)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_vjp_fn_called_many_times() -> None:
    out, vjp_fn = tg.vjp(lambda x: tnp.sin(x), np.array([0.0, 1.0]))
    a = vjp_fn(np.ones(2))
    b = vjp_fn(np.array([2.0, 0.0]))
    np.testing.assert_allclose(a[0], np.cos([0.0, 1.0]))
    np.testing.assert_allclose(b[0], [2.0, 0.0])
    assert isinstance(a, tuple)


def test_vjp_multiple_primals_and_aux() -> None:
    out, vjp_fn, aux = tg.vjp(lambda x, y: (x * y, "aux"), np.array(2.0), np.array(3.0), has_aux=True)
    assert aux == "aux" and out == 6.0
    assert vjp_fn(np.array(1.0)) == (3.0, 2.0)


def test_elementwise_grad() -> None:
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(tg.elementwise_grad(tnp.tanh)(x), 1 - np.tanh(x) ** 2)


def test_stop_gradient_and_value() -> None:
    f = lambda x: x * tg.stop_gradient(x)  # noqa: E731
    assert tg.grad(f)(3.0) == 3.0
    assert tg.grad(lambda x: x * tg.value(x))(3.0) == 3.0
    assert tg.value(5) == 5
    # stop_gradient stops every level, inside nesting too
    assert tg.grad(tg.grad(lambda x: x**2 * tg.stop_gradient(x)))(2.0) == 4.0


def test_control_flow_on_values() -> None:
    def f(x):  # noqa: ANN001, ANN202
        if x > 0:
            return x**2
        return -x

    assert tg.grad(f)(3.0) == 6.0
    assert tg.grad(f)(-3.0) == -1.0


def test_complex_holomorphic_grad() -> None:
    z = np.complex128(1.0 + 2.0j)
    g = tg.grad(lambda z: z * z, holomorphic=True)(z)
    np.testing.assert_allclose(g, 2 * z)


def test_real_function_of_complex_input_follows_jax() -> None:
    # grad of |z|^2 is 2*conj(z) in JAX's convention
    z = np.array([3.0 + 4.0j])
    g = tg.grad(lambda z: tnp.sum(tnp.abs(z) ** 2))(z)
    np.testing.assert_allclose(g, 2 * np.conj(z))


# --- errors: what and where ------------------------------------------------------------


def test_grad_of_non_scalar_output_names_the_shape() -> None:
    def f(x):  # noqa: ANN001, ANN202
        return x * 2

    with pytest.raises(TypeError, match=r"grad\(f\).*scalar.*shape \(3,\)"):
        tg.grad(f)(np.ones(3))


def test_grad_of_complex_output() -> None:
    with pytest.raises(TypeError, match="real-valued.*complex128.*holomorphic"):
        tg.grad(lambda z: z * 1j)(1.0)


@pytest.mark.parametrize("bad", [np.array([1, 2]), 3, np.array([True])], ids=["int_array", "python_int", "bool"])
def test_grad_wrt_integer_input_names_the_dtype(bad: object) -> None:
    dtype = np.asarray(bad).dtype
    with pytest.raises(TypeError, match=rf"argument 0 has dtype {dtype}"):
        tg.grad(lambda x: tnp.sum(x * 1.0))(bad)


def test_argnums_out_of_range() -> None:
    with pytest.raises(TypeError, match=r"argnums=2 is out of range.*2 positional"):
        tg.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int"):
        tg.grad(lambda x: x, argnums="0")(1.0)


def test_has_aux_without_a_pair() -> None:
    def loss(x):  # noqa: ANN001, ANN202
        return x * 2

    with pytest.raises(TypeError, match=r"grad\(loss\).*has_aux=True.*pair.*returned"):
        tg.grad(loss, has_aux=True)(1.0)


def test_vjp_cotangent_of_wrong_structure() -> None:
    _, vjp_fn = tg.vjp(lambda x: (x, x * 2), np.ones(2))
    with pytest.raises(TypeError, match="structure"):
        vjp_fn(np.ones(2))


def test_vjp_cotangent_of_wrong_shape_names_both_shapes() -> None:
    _, vjp_fn = tg.vjp(lambda x: x * 2, np.ones(2))
    with pytest.raises(ValueError, match=r"shape \(3,\).*output shape \(2,\)"):
        vjp_fn(np.ones(3))


def test_grad_of_non_array_output() -> None:
    with pytest.raises(TypeError, match="scalar"):
        tg.grad(lambda x: [x])(1.0)


def test_vjp_fn_takes_a_cotangent_in_an_array_wrapper() -> None:
    import tapegrad.torch as torch

    out, vjp_fn = tg.vjp(lambda t: t.sin(), torch.tensor([0.5, 1.0]))
    (g,) = vjp_fn(torch.tensor([1.0, 2.0]))
    assert isinstance(out, torch.Tensor) and isinstance(g, torch.Tensor)
    np.testing.assert_allclose(g.numpy(), np.cos([0.5, 1.0]) * [1.0, 2.0], rtol=1e-6)
