"""tg.optimizers: PyTorch's formulas step for step, dtypes, pytrees, errors, meta-gradients."""

from __future__ import annotations

import collections
import doctest

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad import optimizers

OPTS = {"sgd": optimizers.sgd, "adam": optimizers.adam, "rmsprop": optimizers.rmsprop}


def _grad_sequence(shapes, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [{k: rng.standard_normal(s) for k, s in shapes.items()} for _ in range(steps)]


# --- against torch.optim -----------------------------------------------------------------------

TORCH_CASES = [
    ("sgd", dict(learning_rate=0.1), "SGD", dict(lr=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9), "SGD", dict(lr=0.1, momentum=0.9)),
    ("sgd", dict(learning_rate=0.05, momentum=0.8, dampening=0.3), "SGD",
     dict(lr=0.05, momentum=0.8, dampening=0.3)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, nesterov=True), "SGD",
     dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("sgd", dict(learning_rate=0.1, weight_decay=0.05), "SGD", dict(lr=0.1, weight_decay=0.05)),
    ("sgd", dict(learning_rate=0.1, momentum=0.7, weight_decay=0.05, nesterov=True), "SGD",
     dict(lr=0.1, momentum=0.7, weight_decay=0.05, nesterov=True)),
    ("adam", dict(), "Adam", dict()),
    ("adam", dict(learning_rate=0.01), "Adam", dict(lr=0.01)),
    ("adam", dict(learning_rate=0.02, b1=0.8, b2=0.95, eps=1e-6, weight_decay=0.1), "Adam",
     dict(lr=0.02, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("adam", dict(learning_rate=0.02, b1=0.3), "Adam", dict(lr=0.02, betas=(0.3, 0.999))),
    ("rmsprop", dict(), "RMSprop", dict()),
    ("rmsprop", dict(learning_rate=0.01, centered=True), "RMSprop", dict(lr=0.01, centered=True)),
    ("rmsprop", dict(learning_rate=0.01, momentum=0.5), "RMSprop", dict(lr=0.01, momentum=0.5)),
    ("rmsprop", dict(learning_rate=0.003, alpha=0.9, eps=1e-6, momentum=0.9, centered=True,
                     weight_decay=0.1), "RMSprop",
     dict(lr=0.003, alpha=0.9, eps=1e-6, momentum=0.9, centered=True, weight_decay=0.1)),
]

# our state's fields -> torch's per-parameter state keys
STATE_KEYS = {"momentum_buffer": "momentum_buffer", "exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq",
              "square_avg": "square_avg", "grad_avg": "grad_avg"}


@pytest.mark.parametrize("name,kw,tname,tkw", TORCH_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TORCH_CASES)])
def test_matches_torch_optim_float64(name, kw, tname, tkw):
    torch = pytest.importorskip("torch")
    shapes = {"w": (3, 4), "b": (4,), "s": ()}
    rng = np.random.default_rng(1)
    params = {k: rng.standard_normal(s) for k, s in shapes.items()}
    tparams = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    topt = getattr(torch.optim, tname)(list(tparams.values()), **tkw)
    opt = OPTS[name](**kw)
    state = opt.init(params)
    for grads in _grad_sequence(shapes, 6):
        for k, t in tparams.items():
            t.grad = torch.tensor(grads[k], dtype=torch.float64)
        topt.step()
        params, state = opt.update(grads, state, params)
        for k, t in tparams.items():
            np.testing.assert_allclose(params[k], t.detach().numpy(), rtol=1e-12, atol=1e-14)
            assert params[k].dtype == np.float64
    for field in state._fields:
        if field == "step" or getattr(state, field) is None:
            continue
        for k, t in tparams.items():
            np.testing.assert_allclose(getattr(state, field)[k], topt.state[t][STATE_KEYS[field]].numpy(),
                                       rtol=1e-12, atol=1e-14)
    assert int(state.step) == 6


def test_schedule_matches_torch_lambdalr():
    torch = pytest.importorskip("torch")
    lam = lambda k: 0.5 ** (k // 2)
    p = np.array([1.0, -2.0, 0.5])
    t = torch.tensor(p, requires_grad=True)
    topt = torch.optim.SGD([t], lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(topt, lam)
    opt = optimizers.sgd(lambda step: 0.1 * lam(step), momentum=0.9)
    state = opt.init(p)
    for g in _grad_sequence({"x": (3,)}, 5):
        t.grad = torch.tensor(g["x"])
        topt.step()
        sched.step()
        p, state = opt.update(g["x"], state, p)
        np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-12)


def test_float32_matches_torch_float32():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    p = rng.standard_normal(5).astype(np.float32)
    for name, kw, tname, tkw in TORCH_CASES:
        t = torch.tensor(p, requires_grad=True)
        topt = getattr(torch.optim, tname)([t], **tkw)
        opt = OPTS[name](**kw)
        q, state = p, opt.init(p)
        for g in _grad_sequence({"x": (5,)}, 4):
            g32 = g["x"].astype(np.float32)
            t.grad = torch.tensor(g32)
            topt.step()
            q, state = opt.update(g32, state, q)
            assert q.dtype == np.float32
            np.testing.assert_allclose(q, t.detach().numpy(), rtol=2e-6, atol=1e-6, err_msg=name)


# --- against hand-written NumPy formulas -------------------------------------------------------


def _two_grads():
    rng = np.random.default_rng(3)
    return rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(4)


def _run(opt, p, gs):
    state = opt.init(p)
    out = []
    for g in gs:
        p, state = opt.update(g, state, p)
        out.append(p)
    return out, state


def test_sgd_two_steps_by_hand():
    p0, g1, g2 = _two_grads()
    lr, mu, tau, wd = 0.1, 0.9, 0.25, 0.01
    (p1, p2), _ = _run(optimizers.sgd(lr), p0, [g1, g2])
    np.testing.assert_allclose(p1, p0 - lr * g1, rtol=1e-14)
    np.testing.assert_allclose(p2, p1 - lr * g2, rtol=1e-14)

    (p1, p2), state = _run(optimizers.sgd(lr, momentum=mu, dampening=tau, weight_decay=wd), p0, [g1, g2])
    d1 = g1 + wd * p0
    b1 = d1                                   # first step: no dampening
    e1 = p0 - lr * b1
    d2 = g2 + wd * e1
    b2 = mu * b1 + (1 - tau) * d2
    np.testing.assert_allclose(p1, e1, rtol=1e-14)
    np.testing.assert_allclose(p2, e1 - lr * b2, rtol=1e-14)
    np.testing.assert_allclose(state.momentum_buffer, b2, rtol=1e-14)

    (p1, p2), _ = _run(optimizers.sgd(lr, momentum=mu, nesterov=True), p0, [g1, g2])
    b1 = g1
    e1 = p0 - lr * (g1 + mu * b1)
    b2 = mu * b1 + g2
    np.testing.assert_allclose(p1, e1, rtol=1e-14)
    np.testing.assert_allclose(p2, e1 - lr * (g2 + mu * b2), rtol=1e-14)


def test_adam_two_steps_by_hand():
    p0, g1, g2 = _two_grads()
    lr, b1, b2, eps, wd = 0.01, 0.8, 0.95, 1e-6, 0.1
    (p1, p2), state = _run(optimizers.adam(lr, b1, b2, eps, weight_decay=wd), p0, [g1, g2])
    p, m, v = p0, 0.0, 0.0
    for t, g in ((1, g1), (2, g2)):
        g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
        np.testing.assert_allclose(p1 if t == 1 else p2, p, rtol=1e-13)
    np.testing.assert_allclose(state.exp_avg, m, rtol=1e-13)
    np.testing.assert_allclose(state.exp_avg_sq, v, rtol=1e-13)
    assert state.step == 2 and np.issubdtype(np.asarray(state.step).dtype, np.integer)


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [0.0, 0.7])
def test_rmsprop_two_steps_by_hand(centered, momentum):
    p0, g1, g2 = _two_grads()
    lr, alpha, eps, wd = 0.01, 0.9, 1e-8, 0.05
    opt = optimizers.rmsprop(lr, alpha, eps, momentum=momentum, centered=centered, weight_decay=wd)
    (p1, p2), state = _run(opt, p0, [g1, g2])
    p, v, a, b = p0, 0.0, 0.0, 0.0
    for i, g in enumerate((g1, g2)):
        g = g + wd * p
        v = alpha * v + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g
        d = (np.sqrt(v - a * a) if centered else np.sqrt(v)) + eps
        if momentum:
            b = momentum * b + g / d
            p = p - lr * b
        else:
            p = p - lr * g / d
        np.testing.assert_allclose(p1 if i == 0 else p2, p, rtol=1e-13)
    assert (state.momentum_buffer is None) == (momentum == 0)
    assert (state.grad_avg is None) == (not centered)


def test_schedule_gets_the_count_of_updates_done():
    seen = []

    def schedule(step):
        seen.append(int(step))
        return 0.1 / (1 + step)

    p0, g1, g2 = _two_grads()
    (p1, p2), _ = _run(optimizers.sgd(schedule), p0, [g1, g2])
    assert seen == [0, 1]
    np.testing.assert_allclose(p1, p0 - 0.1 * g1, rtol=1e-14)
    np.testing.assert_allclose(p2, p1 - 0.05 * g2, rtol=1e-14)


# --- dtypes and pytrees ------------------------------------------------------------------------

ALL_ON = {
    "sgd": dict(learning_rate=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov": dict(learning_rate=0.1, momentum=0.9, nesterov=True),
    "adam": dict(learning_rate=0.1, weight_decay=0.01),
    "rmsprop": dict(learning_rate=0.1, momentum=0.9, centered=True, weight_decay=0.01),
}


def _factory(key):
    return OPTS[key.split("_")[0]]


@pytest.mark.parametrize("key", list(ALL_ON))
@pytest.mark.parametrize("lr", ["float", "array", "schedule"])
def test_float32_stays_float32(key, lr):
    kw = dict(ALL_ON[key])
    base = kw.pop("learning_rate")
    rate = {"float": base, "array": np.array(base), "schedule": lambda s: base * 0.9 ** s}[lr]
    opt = _factory(key)(rate, **kw)
    params = {"w": np.ones((2, 3), np.float32), "b": np.float32(0.5)}
    state = opt.init(params)
    for _ in range(3):
        grads = {"w": np.full((2, 3), 0.3, np.float32), "b": np.float64(0.2)}  # a float64 grad is cast
        params, state = opt.update(grads, state, params)
        for leaf in tg.tree_flatten(params)[0] + tg.tree_flatten(state[1:])[0]:
            assert leaf.dtype == np.float32, (key, leaf)


def test_float16_and_scalar_leaves():
    opt = optimizers.adam(0.1)
    p16 = np.ones(3, np.float16)
    out, _ = opt.update(np.ones(3, np.float16), opt.init(p16), p16)
    assert out.dtype == np.float16
    for opt in (optimizers.sgd(0.1, momentum=0.5), optimizers.adam(0.1), optimizers.rmsprop(0.1)):
        p, state = opt.update(2.0, opt.init(1.0), 1.0)
        assert isinstance(p, np.floating) and np.asarray(p).dtype == np.float64
        assert np.ndim(p) == 0 and p < 1.0


Pair = collections.namedtuple("Pair", ["a", "b"])


@pytest.mark.parametrize("name", list(OPTS))
def test_pytree_structures(name):
    opt = OPTS[name](0.1)
    params = {"layer": (np.ones(2), (np.zeros((2, 2)), None)), "pair": Pair(np.ones(1), [1.5, None]),
              "none": None}
    grads = tg.tree_map(lambda x: np.ones_like(np.asarray(x)), params)
    state = opt.init(params)
    new, state2 = opt.update(grads, state, params)
    assert tg.tree_flatten(new)[1] == tg.tree_flatten(params)[1]
    assert new["none"] is None and new["layer"][1][1] is None and new["pair"].b[1] is None
    assert isinstance(new["pair"], Pair)
    assert tg.tree_flatten(state2)[1] == tg.tree_flatten(state)[1]
    for a, b in zip(tg.tree_flatten(new)[0], tg.tree_flatten(params)[0]):
        assert np.shape(a) == np.shape(b) and np.all(np.asarray(a) < np.asarray(b))


def test_update_is_pure():
    params = {"w": np.arange(3.0)}
    grads = {"w": np.ones(3)}
    for opt in (optimizers.sgd(0.1, momentum=0.9), optimizers.adam(0.1),
                optimizers.rmsprop(0.1, momentum=0.9, centered=True)):
        state = opt.init(params)
        snapshot = [np.copy(x) for x in tg.tree_flatten((params, grads, state))[0]]
        new, new_state = opt.update(grads, state, params)
        again, _ = opt.update(grads, state, params)
        np.testing.assert_array_equal(new["w"], again["w"])
        for before, after in zip(snapshot, tg.tree_flatten((params, grads, state))[0]):
            np.testing.assert_array_equal(before, after)


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(OPTS))
def test_structure_mismatch_names_both(name):
    opt = OPTS[name](0.1, momentum=0.5) if name != "adam" else OPTS[name](0.1)
    params = {"w": np.ones(2), "b": np.ones(1)}
    state = opt.init(params)
    with pytest.raises(ValueError, match=r"grads \{'w': \*\} and params \{'b': \*, 'w': \*\}"):
        opt.update({"w": np.ones(2)}, state, params)
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        opt.update({"w": np.ones(3), "b": np.ones(1)}, state, params)
    with pytest.raises(ValueError, match="init"):
        opt.update((np.ones(2),), state, (np.ones(2),))
    with pytest.raises(TypeError, match="State"):
        opt.update(params, {"step": 0}, params)


@pytest.mark.parametrize("name", list(OPTS))
def test_non_float_params_raise_typeerror(name):
    opt = OPTS[name](0.1)
    with pytest.raises(TypeError, match="int64"):
        opt.init({"w": np.arange(3)})
    with pytest.raises(TypeError, match="bool"):
        opt.update([True], opt.init([1.0]), [True])
    with pytest.raises(TypeError, match="complex128"):
        opt.init(np.ones(2, complex))


def test_invalid_hyperparameters():
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.sgd(-0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optimizers.sgd(0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        optimizers.sgd(0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="b2"):
        optimizers.adam(b2=1.0)
    with pytest.raises(ValueError, match="eps"):
        optimizers.rmsprop(eps=-1.0)


# --- differentiating through an update ---------------------------------------------------------


def _loss(p):
    return tnp.sum((p["w"] - 1.5) ** 4) + tnp.sum(tnp.sin(p["b"]) * p["w"][:2])


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


META = {
    "sgd": lambda lr: optimizers.sgd(lr, momentum=0.9, weight_decay=0.1, nesterov=True),
    "adam": lambda lr: optimizers.adam(lr, weight_decay=0.1),
    "rmsprop": lambda lr: optimizers.rmsprop(lr, momentum=0.5, centered=True),
    "rmsprop_schedule": lambda lr: optimizers.rmsprop(lambda step: lr / (1 + step)),
}


@pytest.mark.parametrize("key", list(META))
def test_meta_gradient_wrt_learning_rate(key):
    params = {"w": np.array([0.3, -0.2, 0.8]), "b": np.array([0.5, 1.0])}

    def after_two_steps(lr):
        opt = META[key](lr)
        p, state = params, opt.init(params)
        for _ in range(2):  # the second gradient depends on lr through the first step
            p, state = opt.update(tg.grad(_loss)(p), state, p)
        return _loss(p)

    g = tg.grad(after_two_steps)(0.05)
    np.testing.assert_allclose(g, _fd(after_two_steps, 0.05), rtol=1e-6)
    assert g != 0


@pytest.mark.parametrize("name", list(OPTS))
def test_gradient_through_an_update_wrt_params(name):
    """MAML's inner step: d/dp0 of the loss after one update, second order through the inner grad."""
    opt = OPTS[name](0.1)
    w0 = np.array([0.3, -0.2, 0.8])
    b = np.array([0.5, 1.0])

    def outer(w):
        p = {"w": w, "b": b}
        new, _ = opt.update(tg.grad(_loss)(p), opt.init(p), p)
        return _loss(new)

    g = tg.grad(outer)(w0)
    fd = np.array([_fd(lambda t, i=i: outer(w0 + t * np.eye(3)[i]), 0.0) for i in range(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


def test_meta_gradient_of_float32_learning_rate_keeps_params_float32():
    p = np.ones(2, np.float32)

    def f(lr):
        new, _ = optimizers.adam(lr).update(np.array([1.0, -2.0], np.float32), optimizers.adam(lr).init(p), p)
        assert new.dtype == np.float32
        return tnp.sum(new * new)

    assert np.isfinite(tg.grad(f)(0.1))


# --- a training loop ---------------------------------------------------------------------------


@pytest.mark.parametrize("opt", [
    optimizers.sgd(0.05), optimizers.sgd(0.02, momentum=0.9, nesterov=True), optimizers.adam(0.05),
    optimizers.rmsprop(lambda step: 0.01 / (1 + step / 100)),
    optimizers.rmsprop(0.005, momentum=0.5, centered=True),
], ids=["sgd", "nesterov", "adam", "rmsprop-decaying", "rmsprop-centered"])
def test_training_loop_converges_on_a_quadratic(opt):
    rng = np.random.default_rng(4)
    m = rng.standard_normal((4, 4))
    a = m @ m.T + 4 * np.eye(4)
    b = rng.standard_normal(4)
    target = np.linalg.solve(a, b)
    loss = lambda p: 0.5 * p["x"] @ a @ p["x"] - b @ p["x"]
    params = {"x": np.zeros(4)}
    state = opt.init(params)
    step = tg.value_and_grad(loss)
    first, _ = step(params)
    for _ in range(1500):
        _, g = step(params)
        params, state = opt.update(g, state, params)
    assert loss(params) < first
    np.testing.assert_allclose(params["x"], target, atol=2e-3)


def test_docstring_examples():
    res = doctest.testmod(optimizers, extraglobs={"np": np, "tg": tg, "tnp": tnp},
                          optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted >= 10 and res.failed == 0


def test_public():
    assert tg.optimizers is optimizers and "optimizers" in tg.__all__
    for name in ("sgd", "adam", "rmsprop"):
        assert getattr(tg.optimizers, name).__doc__
        opt = getattr(tg.optimizers, name)(0.1)
        assert isinstance(opt, optimizers.Optimizer) and callable(opt.init) and callable(opt.update)


@pytest.mark.parametrize("name", list(OPTS))
def test_update_under_vmap_equals_the_whole_batch(name):
    """An ensemble: vmap of update over stacked parameters equals one update of the stack."""
    opt = OPTS[name](0.1, weight_decay=0.1)
    rng = np.random.default_rng(5)
    params, grads = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    state = opt.init(params)
    axes = tuple(None if f == "step" or getattr(state, f) is None else 0 for f in state._fields)
    out, new_state = tg.vmap(opt.update, in_axes=(0, axes, 0), out_axes=(0, axes))(grads, state, params)
    ref, ref_state = opt.update(grads, state, params)
    np.testing.assert_allclose(out, ref, rtol=1e-14)
    for a, b in zip(tg.tree_flatten(new_state)[0], tg.tree_flatten(ref_state)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-14)
