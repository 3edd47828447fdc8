"""Long loops do not grow memory; deep graphs do not recurse."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

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

    train(200)  # warm caches
    gc.collect()
    tracemalloc.start()
    try:
        train(1000)
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        train(9000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 9000 steps"


def test_no_tape_left_open_after_transforms() -> None:
    from tapegrad.tape import _stack

    tg.grad(lambda x: x * x)(1.0)
    try:
        tg.grad(lambda x: x.undefined_attribute)(1.0)
    except AttributeError:
        pass
    assert _stack.tapes == []


def test_deep_chain_through_transforms() -> None:
    def f(x):  # noqa: ANN001, ANN202
        for _ in range(200_000):
            x = x * 1.0
        return tnp.sum(x)

    np.testing.assert_allclose(tg.grad(f)(np.ones(2)), [1.0, 1.0])
