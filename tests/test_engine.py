"""The engine alone: tape, levels, replay, accumulation. No tapegrad.numpy here:
primitives are defined on raw NumPy with rules written against the engine."""

from __future__ import annotations

import numpy as np
import pytest

from tapegrad.core.engine_ops import broadcast_to, sum_to
from tapegrad.core.graph_tape import reachable
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.tape import Entry, Tape, backprop
from tapegrad.core.traced import Traced, value

# Rules call the primitives themselves, so they are differentiable again.
mul = primitive(lambda x, y: np.multiply(x, y), "mul")
add = primitive(lambda x, y: np.add(x, y), "add")
sin = primitive(lambda x: np.sin(x), "sin")
cos = primitive(lambda x: np.cos(x), "cos")
neg = primitive(lambda x: np.negative(x), "neg")
defvjp(mul, lambda ans, x, y: lambda g: mul(g, y), lambda ans, x, y: lambda g: mul(g, x))
defvjp(add, lambda ans, x, y: lambda g: g, lambda ans, x, y: lambda g: g)
defvjp(sin, lambda ans, x: lambda g: mul(g, cos(x)))
defvjp(cos, lambda ans, x: lambda g: mul(g, neg(sin(x))))
defvjp(neg, lambda ans, x: lambda g: neg(g))


def _grad(f, x):  # noqa: ANN001, ANN202
    with Tape() as tape:
        t = tape.watch(x)
        y = f(t)
    return tape.gradient(y, t)


def test_plain_arrays_record_nothing() -> None:
    x = np.arange(3.0)
    out = sin(mul(x, x))
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.sin(x * x))


def test_entries_have_increasing_indices_and_parents() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0, 2.0]))
        y = mul(sin(x), x)
    assert len(tape) == 2
    (e1, e2) = list(tape)
    assert e1.index < e2.index
    assert e1.primitive == "sin" and e2.primitive == "mul"
    assert e2.inputs == (e1.index, x._node.index)
    assert e2.outputs == (e2.index,) and y._node is e2


def test_reverse_replay_accumulates_fan_out() -> None:
    x = np.array([0.3, -1.2])
    g = _grad(lambda t: add(mul(t, t), sin(t)), x)
    np.testing.assert_allclose(g, 2 * x + np.cos(x))


def test_residuals_dropped_after_use() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = sin(sin(x))
    tape.gradient(y, x)
    assert all(e.vjps is None for e in tape)


def test_persistent_tape_keeps_residuals_and_answers_twice() -> None:
    with Tape(persistent=True) as tape:
        x = tape.watch(np.array([1.0]))
        y = sin(x)
    g1 = tape.gradient(y, x)
    g2 = tape.gradient(y, x)
    np.testing.assert_array_equal(g1, g2)


def test_second_gradient_on_non_persistent_tape_raises() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = sin(x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_unreached_entries_are_skipped() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = sin(x)
        z = cos(x)  # noqa: F841  (never reached from y)
    np.testing.assert_allclose(tape.gradient(y, x), np.cos(1.0))


def test_levels_nest_and_lower_values_are_constants() -> None:
    """Closing over an outer traced value inside an inner tape: the inner
    gradient treats it as a constant, and is itself recorded on the outer."""
    with Tape() as outer:
        a = outer.watch(np.array(2.0))
        with Tape() as inner:
            b = inner.watch(a)
            y = mul(mul(b, b), a)  # a * b^2
        dy_db = inner.gradient(y, b)  # 2 a b, recorded on `outer`
        assert type(dy_db) is Traced and dy_db._level is outer
    # d/da (2 a * a) = 4a = 8
    np.testing.assert_allclose(outer.gradient(dy_db, a), 8.0)


def test_mixing_levels_lifts_to_the_highest() -> None:
    with Tape() as outer:
        a = outer.watch(np.array(1.0))
        with Tape() as inner:
            b = inner.watch(np.array(3.0))
            c = mul(a, b)
    assert c._level is inner and type(c._value) is Traced and c._value._level is outer


def test_values_of_closed_tapes_are_constants() -> None:
    with Tape() as tape:
        x = tape.watch(np.array(1.5))
    out = sin(x)  # the tape is closed: nothing recorded
    assert type(out) is not Traced
    np.testing.assert_allclose(out, np.sin(1.5))


def test_batched_seed_pushes_many_cotangents_at_once() -> None:
    with Tape(persistent=True) as tape:
        x = tape.watch(np.array([0.5, 1.0, 2.0]))
        y = mul(sin(x), x)
    seeds = np.eye(3)  # a batch of 3 basis cotangents: rows of the Jacobian
    ct = backprop(reversed(tape.entries), {y._node.index: seeds}, retain=True)
    jac = ct[x._node.index]
    xv = value(x)
    np.testing.assert_allclose(jac, np.diag(np.cos(xv) * xv + np.sin(xv)))


def test_broadcast_cotangent_is_summed_back_by_the_engine() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0, 2.0]))
        y = mul(x, np.ones((3, 2)))  # the rule returns a (3, 2) cotangent
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g, [3.0, 3.0])


@pytest.mark.parametrize("shape, target, nbatch", [
    ((5, 3), (3,), 0),            # leading axes of a float array: the GEMV path
    ((2, 4, 3), (3,), 0),
    ((5, 3), (1, 3), 0),          # a kept size-1 axis
    ((5, 3), (5, 1), 0),
    ((4, 5, 3), (3,), 1),         # leading batch axis kept
    ((0, 3), (3,), 0),            # empty
    ((5, 3), (), 0),              # to a scalar
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_sum_to_matches_numpy(shape, target, nbatch, dtype) -> None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    lead = x.ndim - nbatch - len(target)
    axes = tuple(range(nbatch, nbatch + lead)) + tuple(
        nbatch + lead + i for i, n in enumerate(target) if n == 1 and shape[nbatch + lead + i] != 1)
    want = x.sum(axis=axes, keepdims=True).reshape(shape[:nbatch] + target)
    for arr in (x, np.asfortranarray(x)):  # contiguous and not
        got = sum_to(arr, target, nbatch)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("shape, target", [
    ((3, 1), (3, 4)), ((), (2, 3)), ((4,), (2, 3, 4)), ((2, 1, 3), (2, 5, 3)), ((1,), (0,)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64, np.int64, bool])
def test_broadcast_to_is_a_read_only_view(shape, target, dtype) -> None:  # noqa: ANN001
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    got = broadcast_to(x, target)
    assert got.shape == target and got.dtype == x.dtype and not got.flags.writeable
    np.testing.assert_array_equal(got, np.broadcast_to(x, target))
    assert np.shares_memory(got, x) or got.size == 0
    with pytest.raises(ValueError):
        broadcast_to(np.ones((2, 3)), (4, 3, 2))


def test_branches_between_chain_links_accumulate() -> None:
    # links hand their cotangent straight to the next entry; a branch recorded
    # in between must still receive and return its share
    x = np.array([0.4, -0.7])

    def f(t):  # noqa: ANN001, ANN202
        a = sin(t)
        b = mul(a, 2.0)       # b's parent is the previous entry (a carried link)
        c = cos(t)            # a branch recorded between
        d = mul(b, a)         # a used twice
        return add(mul(d, 3.0), c)

    want = 3 * 2 * 2 * np.sin(x) * np.cos(x) - np.sin(x)
    np.testing.assert_allclose(_grad(f, x), want)


def test_cotangent_cast_to_input_dtype() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0, 2.0], dtype=np.float32))
        y = mul(x, np.array([2.0, 2.0]))  # float64 result
    g = tape.gradient(y, x)
    assert g.dtype == np.float32


def test_deep_chain_does_not_recurse() -> None:
    n = 200_000
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = x
        for _ in range(n):
            y = mul(y, 1.0)
    assert len(tape) == n
    np.testing.assert_allclose(tape.gradient(y, x), [1.0])


def test_graph_walk_by_sequence_number() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        a = sin(x)
        b = mul(a, a)
        c = add(b, a)
    order = [n.index for n in reachable([c._node])]
    assert order == sorted(order, reverse=True)
    assert set(order) == {a._node.index, b._node.index, c._node.index}
    ct = backprop(reachable([c._node]), {c._node.index: np.ones(1)}, retain=True)
    np.testing.assert_allclose(ct[x._node.index], (2 * np.sin(1.0) + 1) * np.cos(1.0))


def test_hooks_see_and_replace_a_node_cotangent() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        a = sin(x)
        y = mul(a, 3.0)
    seen = []
    hooks = {a._node.index: [lambda g: (seen.append(g), g * 0.0)[1]]}
    ct = backprop(reversed(tape.entries), {y._node.index: np.ones(1)}, retain=False, hooks=hooks)
    np.testing.assert_allclose(seen[0], [3.0])
    np.testing.assert_allclose(ct[x._node.index], [0.0])


def test_second_replay_of_freed_entries_raises() -> None:
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = sin(x)
    backprop(reachable([y._node]), {y._node.index: np.ones(1)}, retain=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        backprop(reachable([y._node]), {y._node.index: np.ones(1)}, retain=False)


def test_node_repr_and_missing_rule() -> None:
    f = primitive(lambda x: x * 2, "double")
    with Tape() as tape:
        x = tape.watch(np.array([1.0]))
        y = f(x)
    assert "double" in repr(y._node) and isinstance(y._node, Entry)
    with pytest.raises(NotImplementedError, match="VJP of `double` with respect to argument 0"):
        tape.gradient(y, x)


def test_graph_tape_owns_its_graph_and_differentiates_its_backward() -> None:
    """The facade's tape: level 0, no list, traced residuals, so a replay with
    recording on is itself recorded (create_graph) and one with it off is plain."""
    import gc
    import weakref

    from tapegrad.core.graph_tape import GraphTape

    gt = GraphTape()
    x = gt.watch(np.array([0.5, 1.0]))
    y = mul(sin(x), x)  # x sin x
    assert type(y) is Traced and y._level is gt and not hasattr(gt, "entries")

    gt.active = True  # create_graph: record the backward pass itself
    ct = backprop(reachable([y._node]), {y._node.index: np.ones(2)}, retain=True)
    dy = ct[x._node.index]  # cos(x) x + sin(x), traced on gt
    assert type(dy) is Traced and dy._level is gt
    ct2 = backprop(reachable([dy._node]), {dy._node.index: np.ones(2)}, retain=True)
    xv = value(x)
    np.testing.assert_allclose(value(ct2[x._node.index]), 2 * np.cos(xv) - xv * np.sin(xv))

    gt.active = False  # plain replay: traced residuals read as values
    ct3 = backprop(reachable([y._node]), {y._node.index: np.ones(2)}, retain=False)
    assert type(ct3[x._node.index]) is np.ndarray
    gt.active = True

    ref = weakref.ref(y._node)
    del y, dy, ct, ct2
    gc.collect()
    assert ref() is None  # the graph went with the values that owned it


def test_graph_tape_rules_keep_a_twin_of_their_output() -> None:
    """A rule that keeps the entry's output gets a node-less twin (no cycle:
    the graph is freed by reference counting alone); connect_residuals links
    the twins before a recorded replay, which then differentiates through them."""
    import gc
    import weakref

    from tapegrad.core.graph_tape import GraphTape, connect_residuals

    ex = primitive(lambda x: np.exp(x), "ex")
    defvjp(ex, lambda ans, x: lambda g: mul(g, ans))
    gt = GraphTape()
    x = gt.watch(np.array([0.5, -1.0]))
    y = ex(mul(x, x))  # exp(x^2)
    assert y._node.res is not y and value(y._node.res) is value(y)
    ref = weakref.ref(y._node)
    was = gc.isenabled()
    gc.disable()
    try:
        del y
        assert ref() is None
    finally:
        if was:
            gc.enable()

    y = ex(mul(x, x))
    order = reachable([y._node])
    connect_residuals(order)
    ct = backprop(order, {y._node.index: np.ones(2)}, retain=True)
    dy = ct[x._node.index]  # 2 x exp(x^2), traced on gt
    ct2 = backprop(reachable([dy._node]), {dy._node.index: np.ones(2)}, retain=True)
    xv = value(x)
    np.testing.assert_allclose(value(ct2[x._node.index]), (2 + 4 * xv**2) * np.exp(xv**2))


def test_cyclic_gc_paused_while_recording_and_restored() -> None:
    import gc

    assert gc.isenabled()
    with Tape() as outer:
        assert not gc.isenabled()
        with Tape():
            assert not gc.isenabled()
        assert not gc.isenabled()
        x = outer.watch(np.array([1.0]))
        y = sin(x)
    assert gc.isenabled()
    outer.gradient(y, x)
    assert gc.isenabled()
    try:
        with Tape():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled()
    gc.disable()  # a user who turned it off keeps it off
    try:
        with Tape():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_recording_paths_build_no_closure_cells() -> None:
    # a comprehension or lambda reading an argument of these makes it a cell, built on
    # every call (about 0.1 us an op): the n-ary cases live in functions of their own
    import tapegrad.torch  # noqa: F401  (FacadeTape)
    from tapegrad.core.graph_tape import GraphTape
    from tapegrad.torch._graph import FacadeTape

    for fn in (Tape.record, GraphTape.rules, FacadeTape.record):
        assert fn.__code__.co_cellvars == (), fn.__qualname__
