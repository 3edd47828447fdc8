"""``tg.jit`` composed with the other transforms (SPEC section 8): ``jit`` of
``value_and_grad``, ``grad`` of ``grad``, ``hessian``, ``hvp``, ``jacfwd``,
``jacrev``, ``vmap`` (both orders), custom rules and ``checkpoint`` inside,
whole training steps with ``tg.optimizers`` compiled as one program, a
``tg.Tape`` inside, nested ``jit``."""

from __future__ import annotations

import numpy as np
import pytest
from jithelp import close as _close
from jithelp import counted as _counted
from jithelp import rng as _rng

import tapegrad as tg
import tapegrad.numpy as tnp

# --- composition with the transforms ----------------------------------------------------------


def _mlp_params(rng, sizes=(4, 8, 3), dtype=np.float64):
    return [{"w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), "b": np.zeros(n, dtype)}
            for m, n in zip(sizes[:-1], sizes[1:])]


def _mlp_loss(params, x, y):
    h = x
    for i, layer in enumerate(params):
        h = h @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            h = tnp.tanh(h)
    logp = h - tg.scipy.special.logsumexp(h, axis=-1, keepdims=True) if hasattr(tg, "scipy") else h
    return -tnp.mean(tnp.sum(logp * y, axis=-1))


def _data(rng, n=16, d=4, k=3):
    x = rng.standard_normal((n, d))
    y = np.eye(k)[rng.integers(0, k, n)]
    return x, y


def test_jit_of_value_and_grad_of_an_mlp():
    rng = _rng()
    params = _mlp_params(rng)
    f, calls = _counted(_mlp_loss)
    step = tg.jit(tg.value_and_grad(f))
    for _ in range(3):
        x, y = _data(rng)
        _close(step(params, x, y), tg.value_and_grad(_mlp_loss)(params, x, y))
    assert len(calls) == 1


def test_grad_of_jit():
    f = tg.jit(lambda x: tnp.sum(tnp.sin(x) ** 2))
    x = np.linspace(-1, 1, 5)
    _close(tg.grad(f)(x), 2 * np.sin(x) * np.cos(x))
    _close(f(x), np.sum(np.sin(x) ** 2))
    _close(tg.grad(tg.grad(lambda s: tg.jit(lambda u: tnp.sin(u) * s)(s)))(0.3), -np.sin(0.3) * 0.3 + 2 * np.cos(0.3))


def test_jit_of_grad_of_grad():
    f = lambda x: tnp.sin(x) * x ** 3  # noqa: E731
    jf = tg.jit(tg.grad(tg.grad(f)))
    for x in (0.3, 1.7, -2.0):
        _close(jf(x), tg.grad(tg.grad(f))(x))
    d3 = tg.jit(tg.grad(tg.grad(tg.grad(f))))
    _close(d3(0.4), tg.grad(tg.grad(tg.grad(f)))(0.4))


def test_jit_of_hessian_hvp_jacfwd_jacrev():
    f = lambda x: tnp.sum(tnp.tanh(x) ** 3) + tnp.prod(x)  # noqa: E731
    g = lambda x: tnp.sin(x) * tnp.sum(x ** 2)  # noqa: E731
    rng = _rng()
    for _ in range(2):
        x, v = rng.standard_normal(4), rng.standard_normal(4)
        _close(tg.jit(tg.hessian(f))(x), tg.hessian(f)(x))
        _close(tg.jit(lambda x, v: tg.hvp(f, (x,), (v,)))(x, v), tg.hvp(f, (x,), (v,)))
        _close(tg.jit(tg.jacfwd(g))(x), tg.jacfwd(g)(x))
        _close(tg.jit(tg.jacrev(g))(x), tg.jacrev(g)(x))
        _close(tg.jit(tg.jacfwd(tg.jacrev(f)))(x), tg.hessian(f)(x), rtol=1e-10)
        _close(tg.jit(lambda x, v: tg.jvp(g, (x,), (v,)))(x, v), tg.jvp(g, (x,), (v,)))
        out, vjp_fn = tg.vjp(g, x)
        _close(tg.jit(lambda x, u: tg.vjp(g, x)[1](u))(x, v), vjp_fn(v))


def test_jit_and_vmap_in_both_orders():
    f = lambda x, w: tnp.tanh(x @ w).sum()  # noqa: E731
    rng = _rng()
    X, w = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))
    want = np.array([np.tanh(x @ w).sum() for x in X])
    _close(tg.jit(tg.vmap(f, in_axes=(0, None)))(X, w), want)
    _close(tg.vmap(tg.jit(f), in_axes=(0, None))(X, w), want)
    _close(tg.vmap(tg.jit(tg.vmap(f, in_axes=(0, None))), in_axes=(None, 0))(X, np.stack([w, 2 * w])),
           np.stack([want, np.array([np.tanh(x @ (2 * w)).sum() for x in X])]))


def test_per_example_gradients_jit_of_vmap_of_grad():
    def loss(w, x, y):
        return (tnp.dot(x, w) - y) ** 2

    rng = _rng()
    w, X, Y = rng.standard_normal(3), rng.standard_normal((6, 3)), rng.standard_normal(6)
    per_example = tg.jit(tg.vmap(tg.grad(loss), in_axes=(None, 0, 0)))
    want = np.stack([tg.grad(loss)(w, x, y) for x, y in zip(X, Y)])
    _close(per_example(w, X, Y), want)
    _close(per_example(w + 1, X, Y), np.stack([tg.grad(loss)(w + 1, x, y) for x, y in zip(X, Y)]))


def test_custom_vjp_custom_jvp_and_checkpoint_inside_jit():
    @tg.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (tnp.clip(g, -0.1, 0.1),))

    @tg.custom_jvp
    def softplus(x):
        return tnp.log1p(tnp.exp(x))

    @softplus.defjvp
    def _softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1 + tnp.exp(-x))

    def f(x):
        h = tg.checkpoint(lambda u: tnp.sin(u) * u)(x)
        return tnp.sum(clip_gradient(h) ** 2 + softplus(x) ** 2)

    x = np.linspace(-1.5, 1.5, 5)
    _close(tg.jit(f)(x), f(x))
    _close(tg.jit(tg.grad(f))(x), tg.grad(f)(x))
    _close(tg.jit(tg.grad(f))(x * 0.5), tg.grad(f)(x * 0.5))
    _close(tg.jit(lambda x, t: tg.jvp(softplus, (x,), (t,)))(x, x), tg.jvp(softplus, (x,), (x,)))
    _close(tg.jit(tg.grad(lambda x: tnp.sum(softplus(x) * softplus(x))))(x),
           tg.grad(lambda x: tnp.sum(softplus(x) * softplus(x)))(x))


@pytest.mark.parametrize("name", ["adam", "sgd", "rmsprop"])
def test_a_whole_training_step_compiled_as_one_program(name):
    opt = {"adam": lambda: tg.optimizers.adam(0.05),
           "sgd": lambda: tg.optimizers.sgd(0.1, momentum=0.9),
           "rmsprop": lambda: tg.optimizers.rmsprop(0.01, momentum=0.5, centered=True)}[name]()

    def train_step(params, state, x, y):
        loss, grads = tg.value_and_grad(_mlp_loss)(params, x, y)
        params, state = opt.update(grads, state, params)
        return params, state, loss

    f, calls = _counted(train_step)
    step = tg.jit(f)
    rng = _rng()
    params = _mlp_params(rng)
    state = opt.init(params)
    p_eager, s_eager = params, state
    losses = []
    for _ in range(5):
        x, y = _data(rng)
        params, state, loss = step(params, state, x, y)
        p_eager, s_eager, loss_eager = train_step(p_eager, s_eager, x, y)
        _close((params, state, loss), (p_eager, s_eager, loss_eager), rtol=1e-11, atol=1e-12)
        losses.append(loss)
    assert len(calls) == 1
    assert int(state.step) == 5


def test_training_step_in_float32_stays_float32():
    opt = tg.optimizers.adam(0.01)

    @tg.jit
    def step(params, state, x, y):
        grads = tg.grad(_mlp_loss)(params, x, y)
        return opt.update(grads, state, params)

    rng = _rng()
    params = _mlp_params(rng, dtype=np.float32)
    state = opt.init(params)
    x, y = (a.astype(np.float32) for a in _data(rng))
    for _ in range(2):
        params, state = step(params, state, x, y)
    assert all(leaf.dtype == np.float32 for leaf in tg.tree_flatten((params, state.exp_avg))[0])


def test_first_call_of_a_training_step_traces_it_once():
    opt = tg.optimizers.adam(0.01)

    def train_step(params, state, x, y):
        grads = tg.grad(_mlp_loss)(params, x, y)
        return opt.update(grads, state, params)

    rng = _rng()
    params = _mlp_params(rng, sizes=(4, 32, 32, 3))
    state = opt.init(params)
    x, y = _data(rng)
    train_step(params, state, x, y)  # (imports, caches)
    counted, calls = _counted(train_step)
    jstep = tg.jit(counted)
    want = train_step(params, state, x, y)
    got = jstep(params, state, x, y)  # the first call: one run of the function, traced
    assert len(calls) == 1 and len(jstep.cache) == 1
    _close(got, want)
    _close(jstep(params, state, x, y), want)  # compiled: no second trace
    assert len(calls) == 1
    # (its time, milliseconds where XLA takes hundreds: benchmarks/run.py's "first call" row;
    # no wall-clock limit here, on a machine of unknown load)


def test_tape_inside_a_jitted_function():
    def f(x):
        with tg.Tape() as tape:
            w = tape.watch(x)
            y = tnp.sum(tnp.sin(w) * w)
        return y, tape.gradient(y, w)

    jf = tg.jit(f)
    for x in (np.linspace(-1, 1, 4), np.linspace(0, 2, 4)):
        y, g = f(x)
        _close(jf(x), (tg.value(y), g))  # (y, traced on the closed tape, comes back plain)


def test_nested_jit():
    inner_calls = []

    @tg.jit
    def inner(x):
        inner_calls.append(1)
        return tnp.sin(x) * 2.0

    outer = tg.jit(lambda x: inner(x) + inner(x * 2.0))
    x = np.linspace(-1, 1, 3)
    for _ in range(2):
        _close(outer(x), 2 * np.sin(x) + 2 * np.sin(2 * x))
    assert len(inner_calls) == 2  # inlined in the outer trace (twice), never run again
    _close(inner(x), 2 * np.sin(x))
    _close(tg.jit(tg.grad(lambda x: tnp.sum(inner(x))))(x), 2 * np.cos(x))
