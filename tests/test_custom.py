"""custom_vjp, custom_jvp, checkpoint, and the tape made visible."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


@tg.custom_vjp
def clip_gradient(x):  # noqa: ANN001, ANN201
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (tnp.clip(g, -1.0, 1.0),))


@tg.custom_vjp
def my_sin(x):  # noqa: ANN001, ANN201
    return tnp.sin(x)


my_sin.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (g * tnp.cos(x),))


@tg.custom_jvp
def log1pexp(x):  # noqa: ANN001, ANN201
    return tnp.log1p(tnp.exp(x))


log1pexp.defjvp(lambda p, t: (log1pexp(p[0]), t[0] * (1 - 1 / (1 + tnp.exp(p[0])))))


def test_custom_vjp_replaces_the_gradient() -> None:
    assert tg.grad(lambda x: 3 * clip_gradient(x))(2.0) == 1.0
    assert clip_gradient(2.0) == 2.0


def test_custom_vjp_under_every_transform_and_nesting() -> None:
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(my_sin(x)))(x), np.cos(x))
    np.testing.assert_allclose(tg.jacrev(my_sin)(x), np.diag(np.cos(x)))
    np.testing.assert_allclose(tg.hessian(lambda x: tnp.sum(my_sin(x)))(x), np.diag(-np.sin(x)))
    assert np.isclose(tg.grad(tg.grad(tg.grad(my_sin)))(0.5), -np.cos(0.5))
    tg.check_grads(my_sin, (x,), modes=("rev",), order=2)


def test_custom_vjp_with_pytree_inputs_and_outputs() -> None:
    @tg.custom_vjp
    def f(p):  # noqa: ANN001, ANN202
        return {"s": p["a"] * p["b"], "t": p["a"] + 1.0}

    def fwd(p):  # noqa: ANN001, ANN202
        return f(p), p

    def bwd(p, g):  # noqa: ANN001, ANN202
        return ({"a": g["s"] * p["b"] + g["t"], "b": g["s"] * p["a"]},)

    f.defvjp(fwd, bwd)
    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    g = tg.grad(lambda p: tnp.sum(f(p)["s"]) + tnp.sum(f(p)["t"] ** 2))(p)
    np.testing.assert_allclose(g["a"], p["b"] + 2 * (p["a"] + 1))
    np.testing.assert_allclose(g["b"], p["a"])


def test_custom_vjp_backward_of_wrong_structure() -> None:
    @tg.custom_vjp
    def f(x, y):  # noqa: ANN001, ANN202
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1],))
    with pytest.raises(TypeError, match=r"custom_vjp\(f\).*one cotangent per primal argument \(2\).*length 1"):
        tg.grad(f)(2.0, 3.0)
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], np.ones(3)))
    with pytest.raises(ValueError, match=r"custom_vjp\(f\): cotangent 1 has shape \(3,\)"):
        tg.grad(f)(2.0, 3.0)
    g = tg.custom_vjp(lambda x: x)
    with pytest.raises(TypeError, match="defvjp"):
        g(1.0)


def test_custom_jvp_forward_reverse_and_stability() -> None:
    with np.errstate(over="ignore"):  # (the primal's exp(1000) overflows on purpose)
        assert tg.grad(log1pexp)(1000.0) == 1.0  # the naive rule would give nan
    assert np.isfinite(log1pexp(30.0))
    x = 0.3
    want = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(tg.jvp(log1pexp, (x,), (2.0,))[1], 2 * want)
    np.testing.assert_allclose(tg.grad(log1pexp)(x), want)
    np.testing.assert_allclose(tg.grad(tg.grad(log1pexp))(x), want * (1 - want))
    np.testing.assert_allclose(tg.jacfwd(log1pexp)(np.array([0.1, 0.3])), np.diag(1 / (1 + np.exp(-np.array([0.1, 0.3])))))


def test_checkpoint_gives_the_same_gradients() -> None:
    rng = np.random.default_rng(0)
    Ws = [rng.standard_normal((8, 8)) * 0.5 for _ in range(3)]
    x = rng.standard_normal((4, 8))
    layer = lambda w, h: tnp.tanh(h @ w)  # noqa: E731
    ck = tg.checkpoint(layer)

    def net(ws, f):  # noqa: ANN001, ANN202
        h = x
        for w in ws:
            h = f(w, h)
        return tnp.sum(h**2)

    g1 = tg.grad(lambda ws: net(ws, layer))(Ws)
    g2 = tg.grad(lambda ws: net(ws, ck))(Ws)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    h1 = tg.hessian(lambda w: net([w], layer))(Ws[0][:2, :2].copy() if False else np.eye(8) * 0.3)
    h2 = tg.hessian(lambda w: net([w], ck))(np.eye(8) * 0.3)
    np.testing.assert_allclose(h1, h2, rtol=1e-10)


def test_checkpoint_stores_only_inputs() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, 256))

    def block(h):  # noqa: ANN001, ANN202
        for _ in range(4):
            h = tnp.tanh(h * 1.01)
        return h

    def peak(f) -> int:  # noqa: ANN001
        def deep(h):  # noqa: ANN001, ANN202
            for _ in range(8):  # 8 blocks of 4 layers
                h = f(h)
            return tnp.sum(h)

        tracemalloc.start()
        try:
            tg.grad(deep)(x)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    plain, remat = peak(block), peak(tg.checkpoint(block))
    assert remat < 0.5 * plain, (plain, remat)


def test_checkpoint_refuses_side_effects() -> None:
    def mutates(x):  # noqa: ANN001, ANN202
        x[0] = 0.0
        return x * 2

    with pytest.raises(TypeError, match=r"checkpoint\(mutates\).*modified one of its arguments"):
        tg.grad(lambda x: tnp.sum(tg.checkpoint(mutates)(x)))(np.ones(3))

    def closes(x):  # noqa: ANN001, ANN202
        def inner(y):  # noqa: ANN001, ANN202
            return y * x  # closes over a traced x: made an argument (SPEC section 3)

        return tnp.sum(tg.checkpoint(inner)(x * 2))

    np.testing.assert_allclose(tg.grad(closes)(np.arange(3.0)), 4 * np.arange(3.0))

    class Box:
        pass

    def leaks(x):  # noqa: ANN001, ANN202
        box = Box()
        box.v = x  # a traced value stored by a side effect: not in any closure

        def inner(y):  # noqa: ANN001, ANN202
            return y * box.v

        return tnp.sum(tg.checkpoint(inner)(x * 2))

    with pytest.raises(TypeError, match=r"checkpoint\(inner\).*traced value that is not among its arguments"):
        tg.grad(leaks)(np.ones(3))


def test_to_dot_and_nested_listing() -> None:
    with tg.Tape() as outer:
        x = outer.watch(np.array([1.0, 2.0]))
        with tg.Tape() as inner:
            xi = inner.watch(x)
            y = tnp.sum(tnp.sin(xi) * xi)
        inner.gradient(y, xi)
    dot = inner.to_dot()
    assert dot.startswith("digraph tape {") and dot.rstrip().endswith("}")
    assert 'label="%1 = sin\\n(2,) float64"' in dot
    assert dot.count("->") == 4
    text = str(inner)
    assert "# tape at level 2" in text and "(traced on level 1)" in text
    assert "cos" in str(outer)  # the inner backward pass was recorded outside
