"""custom_jvp / custom_vjp as JAX's documentation uses them: nondiff_argnums,
defjvps, decorator forms, keyword arguments, how often the function runs, and
forward mode of a custom_vjp function."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def test_defjvp_returns_the_rule_so_the_decorator_keeps_its_name() -> None:
    @tg.custom_jvp
    def f(x, y):  # noqa: ANN001, ANN202
        return tnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):  # noqa: ANN001, ANN202
        x, y = primals
        x_dot, y_dot = tangents
        return f(x, y), tnp.cos(x) * x_dot * y + tnp.sin(x) * y_dot

    assert callable(f_jvp) and f_jvp.__name__ == "f_jvp"
    y, y_dot = tg.jvp(f, (2.0, 3.0), (1.0, 0.0))
    np.testing.assert_allclose((y, y_dot), (np.sin(2.0) * 3.0, np.cos(2.0) * 3.0))
    np.testing.assert_allclose(tg.grad(f, argnums=(0, 1))(2.0, 3.0), (np.cos(2.0) * 3.0, np.sin(2.0)))


def test_defjvps_one_tangent_function_per_argument() -> None:
    @tg.custom_jvp
    def f(x, y):  # noqa: ANN001, ANN202
        return tnp.sin(x) * y

    f.defjvps(lambda x_dot, out, x, y: tnp.cos(x) * x_dot * y,
              lambda y_dot, out, x, y: tnp.sin(x) * y_dot)
    np.testing.assert_allclose(tg.grad(f, argnums=(0, 1))(2.0, 3.0), (np.cos(2.0) * 3.0, np.sin(2.0)))
    np.testing.assert_allclose(tg.jvp(f, (2.0, 3.0), (1.0, 1.0))[1], np.cos(2.0) * 3.0 + np.sin(2.0))

    @tg.custom_jvp
    def g(x, k):  # noqa: ANN001, ANN202
        return x * k

    g.defjvps(lambda t, out, x, k: 2.0 * t, None)  # None: no dependence on k
    np.testing.assert_allclose(tg.grad(g, argnums=(0, 1))(1.0, 5.0), (2.0, 0.0))

    h = tg.custom_jvp(lambda f_, x: f_(x), nondiff_argnums=(0,))
    with pytest.raises(TypeError, match="defjvps"):
        h.defjvps(None)


def test_custom_jvp_nondiff_argnums_go_first_to_the_rule() -> None:
    seen = []

    @functools.partial(tg.custom_jvp, nondiff_argnums=(0,))
    def app(f, x):  # noqa: ANN001, ANN202
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):  # noqa: ANN001, ANN202
        seen.append(f)
        (x,), (x_dot,) = primals, tangents
        return app(f, x), 2.0 * x_dot  # (a rule that shows it was used: not f's derivative)

    assert app(tnp.sin, 1.0) == np.sin(1.0)
    assert tg.grad(lambda x: app(tnp.sin, x))(1.0) == 2.0
    assert tg.jvp(lambda x: app(tnp.sin, x), (1.0,), (1.0,))[1] == 2.0
    assert tg.vmap(tg.grad(lambda x: app(tnp.sin, x)))(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert seen and all(f is tnp.sin for f in seen)


def test_custom_vjp_nondiff_argnums_fwd_gets_all_bwd_gets_them_first() -> None:
    @functools.partial(tg.custom_vjp, nondiff_argnums=(0,))
    def clip_gradient(lo_hi, x):  # noqa: ANN001, ANN202
        return x

    def fwd(lo_hi, x):  # noqa: ANN001, ANN202
        assert lo_hi == (-1.0, 1.0)
        return x, None

    def bwd(lo_hi, res, g):  # noqa: ANN001, ANN202
        return (tnp.clip(g, *lo_hi),)  # one cotangent: for x only

    clip_gradient.defvjp(fwd, bwd)
    assert tg.grad(lambda x: 3 * clip_gradient((-1.0, 1.0), x))(2.0) == 1.0
    assert tg.grad(lambda x: -3 * clip_gradient((-1.0, 1.0), x))(2.0) == -1.0
    assert tg.grad(lambda x: 0.5 * clip_gradient((-1.0, 1.0), x))(2.0) == 0.5


def test_keyword_arguments_reach_the_rule_by_position() -> None:
    @tg.custom_vjp
    def f(x, scale=2.0):  # noqa: ANN001, ANN202
        return x * scale

    f.defvjp(lambda x, scale: (f(x, scale), scale), lambda s, g: (g * s, None))
    assert tg.grad(lambda x: f(x, scale=5.0))(1.0) == 5.0
    assert tg.grad(lambda x: f(x))(1.0) == 2.0


def test_grad_of_custom_jvp_runs_the_function_once() -> None:
    calls: list[str] = []

    @tg.custom_jvp
    def f(x):  # noqa: ANN001, ANN202
        calls.append("f")
        return tnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):  # noqa: ANN001, ANN202
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return f(x), tnp.cos(x) * t

    assert tg.grad(f)(0.5) == pytest.approx(np.cos(0.5))
    assert calls == ["f_jvp", "f"]  # (the rule, which calls f once; f does not run again)
    calls.clear()
    np.testing.assert_allclose(tg.jacrev(f)(np.array([0.1, 0.2])), np.diag(np.cos([0.1, 0.2])))
    assert calls == ["f_jvp", "f"]
    calls.clear()
    assert tg.grad(tg.grad(f))(0.5) == pytest.approx(-np.sin(0.5))
    assert tg.value_and_grad(f)(0.5)[0] == pytest.approx(np.sin(0.5))


def test_jvp_of_a_custom_vjp_function_raises_jax_type_error() -> None:
    @tg.custom_vjp
    def f(x):  # noqa: ANN001, ANN202
        return tnp.sin(x)

    f.defvjp(lambda x: (f(x), tnp.cos(x)), lambda c, g: (g * c,))
    msg = r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\."
    with pytest.raises(TypeError, match=msg):
        tg.jvp(f, (0.5,), (1.0,))
    with pytest.raises(TypeError, match=msg):
        tg.jacfwd(f)(np.array([0.5]))
    # forward over reverse differentiates bwd (fwd calls f itself): hessian and hvp work
    assert tg.hessian(f)(0.5) == pytest.approx(-np.sin(0.5))
    assert tg.hvp(f, (0.5,), (2.0,))[1] == pytest.approx(-2 * np.sin(0.5))
