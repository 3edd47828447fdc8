"""Horizontal fusion under ``tg.jit``: the same elementwise chain over every
leaf of a pytree (an optimizer update, weight decay, clipping, an EMA) runs
once over flat arrays. The results are the per-leaf program's, bit for bit,
and eager's to rounding; the arrays returned keep the pytree's structure and
are never written by a later call; arguments are never written unless
donated; a returned array mutated by the caller is what the next call reads."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest
from jithelp import close, counted

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile import horizontal
from tapegrad.compile.facts import Instr, Var


def _params(dtype=np.float64, seed=0):
    r = np.random.default_rng(seed)
    return {"w1": r.standard_normal((7, 5)).astype(dtype), "b1": r.standard_normal(7).astype(dtype),
            "w2": r.standard_normal((3, 7)).astype(dtype), "b2": r.standard_normal(3).astype(dtype),
            "scale": r.standard_normal((2, 2, 2)).astype(dtype)}


def _loss(p, x):
    h = tnp.tanh(x @ p["w1"].T + p["b1"])
    z = h @ p["w2"].T + p["b2"]
    return tnp.sum(z ** 2) + tnp.sum(p["scale"] ** 2)


def _x(seed=1):
    return np.random.default_rng(seed).standard_normal((4, 5))


def _unfused(f, **kw):
    """``tg.jit(f)`` whose programs are traced without horizontal fusion (the
    reference; a function of its own, so that it shares no programs with ``tg.jit(f)``)."""
    jf = tg.jit(functools.wraps(f)(lambda *a, **k: f(*a, **k)), **kw)
    real = horizontal.horizontal

    def trace(*a, _t=jf._trace):
        horizontal.horizontal = lambda program, *args, **kwargs: program
        try:
            return _t(*a)
        finally:
            horizontal.horizontal = real

    jf._trace = trace
    return jf


OPTIMIZERS = [
    ("sgd", lambda: tg.optimizers.sgd(0.1)),
    ("sgd_wd", lambda: tg.optimizers.sgd(0.1, weight_decay=0.01)),
    ("momentum", lambda: tg.optimizers.sgd(0.1, momentum=0.9, dampening=0.1)),
    ("nesterov", lambda: tg.optimizers.sgd(0.1, momentum=0.9, nesterov=True)),
    ("adam", lambda: tg.optimizers.adam(1e-2)),
    ("adam_wd", lambda: tg.optimizers.adam(1e-2, weight_decay=0.1)),
    ("rmsprop", lambda: tg.optimizers.rmsprop(1e-2)),
    ("rmsprop_centered", lambda: tg.optimizers.rmsprop(1e-2, momentum=0.5, centered=True)),
]


@pytest.mark.parametrize("name, make", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_jitted_training_step_gives_the_per_leaf_programs_results_and_eagers(name, make, dtype):
    opt = make()

    def step(p, s, x):
        g = tg.grad(_loss)(p, x)
        return opt.update(g, s, p)

    fused, plain = tg.jit(step), _unfused(step)
    x = _x().astype(dtype)
    runs = {k: (_params(dtype), opt.init(_params(dtype))) for k in ("fused", "eager")}
    plain(*runs["eager"], x)  # (both traced: a trace returns what the trace computed, as eager code)
    fused.lower(*runs["eager"], x)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for _ in range(4):
        copy = tg.tree_map(np.copy, runs["fused"])
        runs["fused"] = fused(*runs["fused"], x)
        runs["eager"] = step(*runs["eager"], x)
        close(runs["fused"], runs["eager"], rtol=tol, atol=tol)
        # the compiled per-leaf program, from the same arguments: the same ufuncs on the same numbers
        for got, want in zip(tg.tree_flatten(runs["fused"])[0], tg.tree_flatten(plain(*copy, x))[0]):
            np.testing.assert_array_equal(got, want)
    source = fused.lower(*runs["fused"], x).as_text()
    assert "flat_gather" in source  # (fused: the five leaves' chains are one)
    p, s = runs["fused"]
    assert set(p) == set(_params()) and type(s) is type(opt.init(p))
    assert all(p[k].shape == _params()[k].shape and p[k].dtype == dtype for k in p)


def test_one_call_per_ufunc_for_all_the_leaves():
    opt = tg.optimizers.adam(1e-2)
    step = tg.jit(lambda p, s, g: opt.update(g, s, p))
    p = _params()
    g = {k: np.ones_like(v) for k, v in p.items()}
    source = step.lower(p, opt.init(p), g).as_text()
    # one divide for the five leaves; two square roots: one of them the bias correction's, a scalar
    assert source.count("divide(") == 1 and source.count("sqrt(") == 2


def test_leaves_of_other_dtypes_are_fused_apart():
    r = np.random.default_rng(0)
    shapes = [(2, 3), (4,), (3, 1, 2), (5,)]
    p = {f"{dt.__name__}_{i}": r.standard_normal(s).astype(dt) for dt in (np.float64, np.float32)
         for i, s in enumerate(shapes)}

    def ema(avg, p):
        return {k: 0.9 * avg[k] + 0.1 * p[k] for k in p}

    jf = tg.jit(ema)
    avg = {k: np.zeros_like(v) for k, v in p.items()}
    for _ in range(3):
        want = ema(avg, p)
        avg = jf(avg, p)
        close(avg, want)
    assert {k: v.dtype for k, v in avg.items()} == {k: v.dtype for k, v in p.items()}
    source = jf.lower(avg, p).as_text()
    assert source.count("flat_gather") == 4  # (the averages and the parameters: once per dtype)


def test_clipping_weight_decay_and_an_ema_of_the_parameters():
    opt = tg.optimizers.sgd(0.1, momentum=0.9)

    def step(p, s, ema, x):
        g = tg.grad(_loss)(p, x)
        norm = tnp.sqrt(sum(tnp.sum(v * v) for v in g.values()))
        scale = tnp.minimum(1.0, 0.5 / (norm + 1e-6))
        g = {k: v * scale + 1e-3 * p[k] for k, v in g.items()}  # (clipped, with weight decay)
        p, s = opt.update(g, s, p)
        ema = {k: 0.99 * ema[k] + 0.01 * p[k] for k in p}
        return p, s, ema

    jf, ref = tg.jit(step), _unfused(step)
    p = _params()
    a = c = (p, opt.init(p), {k: np.zeros_like(v) for k, v in p.items()})
    ref(*a, _x())
    jf.lower(*a, _x())
    for _ in range(4):
        copy = tg.tree_map(np.copy, a)
        a, c = jf(*a, _x()), step(*c, _x())
        close(a, c)
        for got, want in zip(tg.tree_flatten(a)[0], tg.tree_flatten(ref(*copy, _x()))[0]):
            np.testing.assert_array_equal(got, want)


def _adam_step():
    opt = tg.optimizers.adam(1e-2)

    def step(p, s, x):
        return opt.update(tg.grad(_loss)(p, x), s, p)

    return opt, step


def test_the_callers_arrays_are_never_written_and_returned_arrays_never_change():
    opt, step = _adam_step()
    jf = tg.jit(step)
    p, s = _params(), opt.init(_params())
    kept = []
    for _ in range(6):
        before = [a.copy() for a in tg.tree_flatten((p, s))[0]]
        p2, s2 = jf(p, s, _x())
        for a, b in zip(tg.tree_flatten((p, s))[0], before):
            np.testing.assert_array_equal(a, b)  # (the arguments: untouched)
        kept.append(((p2, s2), [a.copy() for a in tg.tree_flatten((p2, s2))[0]]))
        p, s = p2, s2
    for held, values in kept:  # (what a call returned: never written by a later one)
        for a, b in zip(tg.tree_flatten(held)[0], values):
            np.testing.assert_array_equal(a, b)


def test_returned_arrays_do_not_share_memory_with_each_other():
    opt, step = _adam_step()
    jf = tg.jit(step)
    p, s = _params(), opt.init(_params())
    for _ in range(3):
        p, s = jf(p, s, _x())
    leaves = [a for a in tg.tree_flatten((p, s))[0] if isinstance(a, np.ndarray) and a.ndim]
    for i, a in enumerate(leaves):
        for b in leaves[i + 1:]:
            assert not np.shares_memory(a, b)


def test_a_returned_array_changed_in_place_is_what_the_next_call_reads():
    opt, step = _adam_step()
    jf = tg.jit(step)
    p, s = _params(), opt.init(_params())
    pe, se = _params(), opt.init(_params())
    for i in range(5):
        p, s = jf(p, s, _x())
        pe, se = step(pe, se, _x())
        if i == 2:  # (the caller edits what it got, as a training loop may: clamp, zero a row)
            for tree in (p, pe):
                tree["w1"][0] = 0.0
                tree["b2"] *= 0.5
    close((p, s), (pe, se))


def test_a_new_array_in_place_of_a_returned_one_is_read():
    opt, step = _adam_step()
    jf = tg.jit(step)
    p, s = _params(), opt.init(_params())
    pe, se = _params(), opt.init(_params())
    for i in range(5):
        p, s = jf(p, s, _x())
        pe, se = step(pe, se, _x())
        if i == 2:
            p = dict(p, w2=np.full((3, 7), 0.25))
            pe = dict(pe, w2=np.full((3, 7), 0.25))
    close((p, s), (pe, se))


def test_fusion_does_not_retrace():
    opt, step = _adam_step()
    counted_step, traces = counted(step)
    jf = tg.jit(counted_step)
    p, s = _params(), opt.init(_params())
    for _ in range(6):
        p, s = jf(p, s, _x())
    assert len(traces) == 1 and sum(len(v) for v in jf.cache.values()) == 1


def test_donated_parameters_and_state_are_updated_in_place():
    opt, step = _adam_step()
    jf, ref = tg.jit(step, donate_argnums=(0, 1)), tg.jit(step)
    p, s = _params(), opt.init(_params())
    pr, sr = _params(), opt.init(_params())
    same = []
    for _ in range(6):
        passed = tg.tree_flatten((p, s))[0]
        p, s = jf(p, s, _x())
        pr, sr = ref(pr, sr, _x())
        for a, b in zip(tg.tree_flatten((p, s))[0], tg.tree_flatten((pr, sr))[0]):
            np.testing.assert_array_equal(a, b)
        same.append(all(a is b for a, b in zip(tg.tree_flatten(p)[0], passed)))
    assert same[-1]  # (from the third call on, the arrays passed in take the results)
    assert "flat_scratch" in jf.lower(p, s, _x()).as_text()


def test_a_donated_view_passed_twice_is_refused():
    opt, step = _adam_step()
    jf = tg.jit(lambda p, s, x, q: (step(p, s, x), q * 2), donate_argnums=(0,))
    p, s = _params(), opt.init(_params())
    for _ in range(3):
        (p, s), _ = jf(p, s, _x(), np.ones(3))
    with pytest.raises(ValueError, match="shares memory"):
        jf(p, s, _x(), p["b2"])


def test_threads_calling_one_jitted_step_get_their_own_results():
    opt, step = _adam_step()
    jf = tg.jit(step)
    p0, s0 = _params(), opt.init(_params())
    jf(p0, s0, _x())  # (traced once)
    results: dict[int, object] = {}

    def train(seed: int) -> None:
        p, s = _params(seed=seed), opt.init(_params())
        for _ in range(20):
            p, s = jf(p, s, _x(seed))
        results[seed] = (p, s)

    threads = [threading.Thread(target=train, args=(seed,)) for seed in (3, 4, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in (3, 4, 5):
        p, s = _params(seed=seed), opt.init(_params())
        for _ in range(20):
            p, s = step(p, s, _x(seed))
        close(results[seed], (p, s))


# --- the pass on its own ------------------------------------------------------------------------


def _program(*chains):
    """A program of elementwise chains ``[(fn, a, b), ...]`` over the Vars and constants given."""
    return [Instr(fn, fn.__name__, (a, b), (), (out,), False) for chain in chains for fn, a, b, out in chain]


def test_isomorphic_chains_share_a_form_and_other_scalars_do_not():
    values = [np.ones(3), np.ones(4), np.ones(3), np.ones(4), np.ones(3), np.ones(4), np.ones(4)]
    program = _program([(np.multiply, 0.5, Var(0), 2)], [(np.multiply, 0.5, Var(1), 3)],
                       [(np.multiply, 0.25, Var(1), 6)])
    values[2], values[3], values[6] = values[0] * 0.5, values[1] * 0.5, values[1] * 0.25
    forms = [c.form for c in horizontal.chains(program, values)]
    assert forms[0] == forms[1] != forms[2]


def test_a_chain_reading_another_chains_result_through_another_call_is_not_fused():
    # v2 = 2 * v0; v3 = sum(v2) (not elementwise) ...; v5 = 2 * v4 where v4 depends on v3:
    # the two chains are alike but the second needs the first's result first
    values: list = [np.ones(3), None, np.full(3, 2.0), 6.0, np.ones(3), np.full(3, 2.0)]
    program = [Instr(np.multiply, "multiply", (2.0, Var(0)), (), (2,), False),
               Instr(np.sum, "sum", (Var(2),), (), (3,), False),
               Instr(np.full, "full", ((3,), Var(3)), (), (4,), False),
               Instr(np.multiply, "multiply", (2.0, Var(4)), (), (5,), False)]
    out = horizontal.horizontal(program, values, [0], [5])
    assert out == program


@pytest.mark.skipif(not horizontal.RECYCLE, reason="buffers are recycled where CPython counts references")
def test_a_pool_hands_a_buffer_back_only_once_nothing_else_holds_it_or_a_view_of_it():
    pool = horizontal.FlatPool(5, np.float64, [slice(0, 2), slice(2, 5)], [(2,), (3,)], None)
    entry = pool()
    flat1 = entry[0]
    del entry
    entry = pool()  # (the first buffer is referenced: a new one)
    flat2 = entry[0]
    assert flat2 is not flat1
    del entry, flat2
    entry = pool()  # (the second is free again: it comes back, with its views)
    assert entry[0] is not flat1
    view = entry[2][1:]  # (a view of a view: its base is the buffer)
    del entry
    held = pool()
    assert not np.shares_memory(held[0], view) and held[0] is not flat1
    assert [a.shape for a in held] == [(5,), (2,), (3,)] and np.shares_memory(held[0], held[2])
