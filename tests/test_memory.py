"""Long loops do not grow memory; deep graphs do not recurse."""

from __future__ import annotations

import numpy as np
from memgrowth import growth

import tapegrad as tg
import tapegrad.numpy as tnp


def _loss(params, x, y):  # noqa: ANN001, ANN202
    h = tnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    return tnp.mean(tnp.logsumexp(logits, axis=1) - tnp.sum(logits * y, axis=1))


def test_10000_steps_of_value_and_grad_do_not_grow_memory() -> None:
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((4, 8)) * 0.1, "b1": np.zeros(8), "w2": rng.standard_normal((8, 3)) * 0.1}
    x = rng.standard_normal((5, 4))
    y = np.eye(3)[[0, 1, 2, 0, 1]]
    step = tg.value_and_grad(_loss)

    def train(n: int) -> None:
        for _ in range(n):
            _, g = step(params, x, y)
            for k in params:
                params[k] = params[k] - 0.01 * g[k]

    grown = growth(train)
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 9000 steps"


def test_no_tape_left_open_after_transforms() -> None:
    from tapegrad.core.level import entered

    tg.grad(lambda x: x * x)(1.0)
    try:
        tg.grad(lambda x: x.undefined_attribute)(1.0)
    except AttributeError:
        pass
    assert entered() == []


def test_deep_chain_through_transforms() -> None:
    def f(x):  # noqa: ANN001, ANN202
        for _ in range(200_000):
            x = x * 1.0
        return tnp.sum(x)

    np.testing.assert_allclose(tg.grad(f)(np.ones(2)), [1.0, 1.0])


def test_rules_reuse_residual_buffers_only_when_nobody_else_sees_them() -> None:
    """tanh's rule may write into its saved output when the walk frees it anyway;
    never when the caller still holds it, nor when the tape is replayed again."""
    x = np.linspace(-2, 2, 7)
    want = 1 - np.tanh(x) ** 2

    # the caller keeps the forward value (as aux): it must come back intact
    g, aux = tg.grad(lambda x: (tnp.sum(tnp.tanh(x)), tg.value(tnp.tanh(x))), has_aux=True)(x)
    np.testing.assert_allclose(g, want)

    def f(x):  # noqa: ANN001, ANN202
        h = tnp.tanh(x)
        kept.append(tg.value(h))
        return tnp.sum(h)

    kept: list[np.ndarray] = []
    np.testing.assert_allclose(tg.grad(f)(x), want)
    np.testing.assert_allclose(kept[0], np.tanh(x))  # not overwritten

    # replayed twice (vjp_fn and persistent tapes retain their residuals)
    _, vjp_fn = tg.vjp(tnp.tanh, x)
    np.testing.assert_allclose(vjp_fn(np.ones(7))[0], want)
    np.testing.assert_allclose(vjp_fn(np.ones(7))[0], want)
    with tg.Tape(persistent=True) as tape:
        t = tape.watch(x)
        y = tnp.sum(tnp.tanh(t) * 2.0)
    np.testing.assert_allclose(tape.gradient(y, t), 2 * want)
    np.testing.assert_allclose(tape.gradient(y, t), 2 * want)

    # and when nothing else holds it, the rule writes into the saved output
    import weakref

    refs: list[weakref.ref] = []

    def g(x):  # noqa: ANN001, ANN202
        h = tnp.tanh(x)
        refs.append(weakref.ref(tg.value(h)))  # a weak reference holds nothing
        return tnp.sum(h)

    grad = tg.grad(g)(x)
    np.testing.assert_allclose(grad, want)
    assert refs[0]() is grad  # the residual's buffer became the cotangent
