"""The explicit tape (SPEC section 4)."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def test_spec_example() -> None:
    with tg.Tape(persistent=False) as tape:
        x = tape.watch(np.array([1.0, 2.0]))
        y = tnp.sum(tnp.sin(x) * x)
    dx = tape.gradient(y, x)
    np.testing.assert_allclose(dx, np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]))
    assert len(tape) == 3
    assert [e.primitive for e in tape] == ["sin", "multiply", "sum"]
    assert str(tape).splitlines() == [
        "# inputs: %0 (2,) float64",
        "%1 = sin(%0)    # (2,) float64",
        "%2 = multiply(%1, %0)    # (2,) float64",
        "%3 = sum(%2)    # () float64",
    ]


def test_watch_returns_pytree_and_gradient_follows_sources() -> None:
    with tg.Tape() as tape:
        p = tape.watch({"a": np.array(2.0), "b": [np.array([1.0, 3.0])]})
        y = p["a"] * tnp.sum(p["b"][0])
    g = tape.gradient(y, p)
    assert g["a"] == 4.0
    np.testing.assert_allclose(g["b"][0], [2.0, 2.0])


def test_list_of_targets_sums_and_output_gradients() -> None:
    with tg.Tape(persistent=True) as tape:
        x = tape.watch(np.array([1.0, 2.0]))
        y1 = x * 2
        targets = [tnp.sum(y1), tnp.sum(x * x)]
    np.testing.assert_allclose(tape.gradient(targets, x), 2 + 2 * np.array([1.0, 2.0]))
    g = tape.gradient(y1, x, output_gradients=np.array([1.0, -1.0]))
    np.testing.assert_allclose(g, [2.0, -2.0])


def test_second_call_raises_unless_persistent() -> None:
    with tg.Tape() as tape:
        x = tape.watch(np.array(1.0))
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="only be called once"):
        tape.gradient(y, x)


def test_gradient_inside_the_with_block() -> None:
    with tg.Tape() as tape:
        x = tape.watch(np.array(3.0))
        y = x * x
        g = tape.gradient(y, x)
    assert g == 6.0 and type(g) is not tg.core.traced.Traced


def test_unconnected_source_gets_zeros() -> None:
    with tg.Tape() as tape:
        x = tape.watch(np.array([1.0, 2.0]))
        z = tape.watch(np.zeros(3, np.float32))
        y = tnp.sum(x)
    gz = tape.gradient(y, z)
    assert gz.dtype == np.float32 and gz.shape == (3,) and not gz.any()


def test_watch_outside_with_block_and_of_integers() -> None:
    tape = tg.Tape()
    with pytest.raises(RuntimeError, match="inside `with tape:`"):
        tape.watch(np.ones(2))
    with tg.Tape() as tape, pytest.raises(TypeError, match="int64"):
        tape.watch(np.array([1, 2], dtype=np.int64))


def test_tape_repr_and_entry_fields() -> None:
    with tg.Tape() as tape:
        x = tape.watch(np.ones(2))
        y = x + 1.0
    (e,) = tape
    assert e.primitive == "add" and e.inputs == (x._node.index,) and e.outputs == (y._node.index,)
    assert "1 entries" in repr(tape) and "closed" in repr(tape)
