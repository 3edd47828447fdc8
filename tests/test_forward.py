"""Forward mode and Jacobians (SPEC section 3): jvp, jacfwd, jacrev, hessian, hvp."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

rng = np.random.default_rng(7)
A = rng.standard_normal((4, 3))


def f_vec(x):  # noqa: ANN001, ANN201
    return tnp.tanh(A @ x) * x[0]


def test_jvp_matches_jacobian_times_vector() -> None:
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    out, t = tg.jvp(f_vec, (x,), (v,))
    np.testing.assert_allclose(out, f_vec(x))
    np.testing.assert_allclose(t, tg.jacrev(f_vec)(x) @ v, rtol=1e-12)


def test_jacobian_shapes_and_agreement() -> None:
    x = rng.standard_normal((2, 3))
    f = lambda x: tnp.sin(x) @ x.T  # (2, 2) out of (2, 3) in  # noqa: E731
    jf, jr = tg.jacfwd(f)(x), tg.jacrev(f)(x)
    assert jf.shape == jr.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    assert tg.jacobian is tg.jacrev


def test_jacobians_of_pytrees_and_argnums() -> None:
    def f(p, s):  # noqa: ANN001, ANN202
        return {"y": p["w"] * s, "z": tnp.sum(p["b"] ** 2)}

    p = {"w": np.array([1.0, 2.0]), "b": np.array([3.0])}
    s = np.array(2.0)
    for jac in (tg.jacfwd, tg.jacrev):
        j = jac(f, argnums=(0, 1))(p, s)
        assert set(j) == {"y", "z"}
        jp, js = j["y"]
        np.testing.assert_allclose(jp["w"], 2 * np.eye(2))
        np.testing.assert_allclose(jp["b"], np.zeros((2, 1)))
        np.testing.assert_allclose(js, [1.0, 2.0])
        np.testing.assert_allclose(j["z"][0]["b"], [6.0])


def test_hessian_of_quadratic_form_and_float32() -> None:
    M = rng.standard_normal((3, 3))
    f = lambda x: x @ M @ x  # noqa: E731
    x = rng.standard_normal(3)
    np.testing.assert_allclose(tg.hessian(f)(x), M + M.T, rtol=1e-12)
    h32 = tg.hessian(f)(x.astype(np.float32))
    assert h32.dtype == np.float32


def test_hessian_matches_closed_form() -> None:
    B = rng.standard_normal((6, 4))
    f = lambda x: tnp.sum(tnp.tanh(B @ x) ** 2)  # noqa: E731
    x = rng.standard_normal(4)
    s = np.tanh(B @ x)
    d2 = 2 * (1 - s**2) ** 2 - 4 * s**2 * (1 - s**2)
    np.testing.assert_allclose(tg.hessian(f)(x), B.T @ (d2[:, None] * B), rtol=1e-10)


def test_hessian_of_matrix_input_has_doubled_shape() -> None:
    h = tg.hessian(lambda w: tnp.sum(w**3))(np.ones((2, 2)))
    assert h.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(h.reshape(4, 4), 6 * np.eye(4))


def test_hvp_without_forming_h() -> None:
    B = rng.standard_normal((5, 3))
    f = lambda x: tnp.sum(tnp.tanh(B @ x) ** 2)  # noqa: E731
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    val, hv = tg.hvp(f, (x,), (v,))
    np.testing.assert_allclose(val, f(x))
    np.testing.assert_allclose(hv, tg.hessian(f)(x) @ v, rtol=1e-10)


def test_hvp_of_several_and_pytree_primals() -> None:
    f = lambda a, p: tnp.sum(tnp.sin(a) * p["w"] ** 2) * p["s"]  # noqa: E731
    a, w, s = rng.standard_normal(2), rng.standard_normal(2), 1.5
    va, vw, vs = rng.standard_normal(2), rng.standard_normal(2), 0.5
    val, (ha, hp) = tg.hvp(f, (a, {"w": w, "s": s}), (va, {"w": vw, "s": vs}))
    assert val == f(a, {"w": w, "s": s}) and sorted(hp) == ["s", "w"]
    flat = lambda z: f(z[:2], {"w": z[2:4], "s": z[4]})  # noqa: E731
    want = tg.hessian(flat)(np.concatenate([a, w, [s]])) @ np.concatenate([va, vw, [vs]])
    np.testing.assert_allclose(np.concatenate([ha, hp["w"], [hp["s"]]]), want, rtol=1e-10)
    # an integer tangent is taken in its primal's dtype, as jvp takes it
    _, h32 = tg.hvp(lambda x: tnp.sum(x**3), (np.ones(2, np.float32),), (np.array([1, 2]),))
    assert h32.dtype == np.float32 and list(h32) == [6.0, 12.0]


def test_hvp_errors_name_hvp_and_the_function() -> None:
    def f(x):  # noqa: ANN001, ANN202
        return x**2

    with pytest.raises(TypeError, match=r"hvp\(f\) requires a scalar output.*shape \(2,\)"):
        tg.hvp(f, (np.ones(2),), (np.ones(2),))
    with pytest.raises(ValueError, match=r"hvp\(f\): tangent 0 has shape \(3,\)"):
        tg.hvp(f, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match=r"hvp\(f\) requires floating-point.*dtype int64"):
        tg.hvp(f, (np.array([1, 2]),), (np.array([1, 2]),))


def test_compositions_of_modes() -> None:
    f = lambda x: tnp.sum(tnp.sin(x) * x**2)  # noqa: E731
    x = rng.standard_normal(3)
    h1 = tg.jacfwd(tg.jacrev(f))(x)
    h2 = tg.jacrev(tg.jacfwd(f))(x)
    h3 = tg.jacrev(tg.jacrev(f))(x)
    h4 = tg.jacfwd(tg.jacfwd(f))(x)
    h5 = tg.hessian(f)(x)
    h6 = tg.jacfwd(tg.grad(f))(x)
    for h in (h2, h3, h4, h5, h6):
        np.testing.assert_allclose(h, h1, rtol=1e-12)


@pytest.mark.parametrize("mode", ["rrr", "frf", "ffr", "fff", "rfr", "rrf"])
def test_third_derivatives_through_mixed_modes(mode: str) -> None:
    def d(fun, m):  # noqa: ANN001, ANN202
        if m == "r":
            return tg.grad(fun)
        return lambda x: tg.jvp(fun, (x,), (1.0,))[1]

    f = tnp.tanh
    for m in mode:
        f = d(f, m)
    x = 0.4
    t = math.tanh(x)
    np.testing.assert_allclose(f(x), -2 * (1 - t**2) * (1 - 3 * t**2), rtol=1e-12)


def test_fourth_derivative_forward_over_reverse_over_forward() -> None:
    f = lambda x: tg.jvp(tg.grad(tg.grad(tnp.exp)), (x,), (1.0,))[1]  # noqa: E731
    np.testing.assert_allclose(tg.grad(f)(0.3), math.exp(0.3), rtol=1e-12)


def test_hessian_of_function_calling_grad() -> None:
    inner = tg.grad(lambda x: tnp.sum(x**4))
    h = tg.hessian(lambda x: tnp.sum(inner(x)))(np.array([1.0, 2.0]))  # d2/dx2 sum(4 x^3)
    np.testing.assert_allclose(h, np.diag([24.0, 48.0]))


def test_jvp_pytrees_and_zero_tangent_for_constant_output() -> None:
    out, t = tg.jvp(lambda p: (p["a"] * 2, np.ones(2)), ({"a": np.array(1.5)},), ({"a": np.array(1.0)},))
    assert out[0] == 3.0 and t[0] == 2.0
    np.testing.assert_array_equal(t[1], np.zeros(2))


def test_tangent_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(3,\), but its primal has shape \(2,\)"):
        tg.jvp(tnp.sin, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match="tangent 0 has dtype complex128, but its primal has dtype float64"):
        tg.jvp(tnp.sin, (np.ones(2),), (np.ones(2) * 1j,))
    with pytest.raises(TypeError, match="tangent 0 has structure"):
        tg.jvp(lambda p: p[0], ((np.ones(2),),), (np.ones(2),))
    with pytest.raises(TypeError, match="got 1 primals but 2 tangents"):
        tg.jvp(tnp.sin, (np.ones(2),), (np.ones(2), np.ones(2)))
    with pytest.raises(TypeError, match="must be tuples"):
        tg.jvp(tnp.sin, np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match=r"jacfwd\(f_vec\).*argument 0 has dtype int64"):
        tg.jacfwd(f_vec)(np.array([1, 2, 3]))
