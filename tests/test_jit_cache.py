"""``tg.jit``'s compiled programs belong to the function: shared by every
``tg.jit(f)`` of the same ``f`` with the same options (``tg.jit(f)(x)`` in a
loop traces once), held weakly (``f`` collected, its programs go), and bounded
(``MAX_SIGNATURES`` signatures per function, the least recently used dropped,
one warning)."""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any

import numpy as np
import pytest
from jithelp import close as _close

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile import jit as jit_module
from tapegrad.compile.jit import MAX_SIGNATURES, Compiled


def _counting() -> tuple[Any, list[Any]]:
    traces: list[Any] = []

    def f(x: Any) -> Any:
        traces.append(np.shape(x))
        return tnp.sin(x) * 2.0

    return f, traces


def _live_programs() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Compiled)


# --- shared ----------------------------------------------------------------------------------------


def test_jit_of_f_in_a_loop_traces_once() -> None:
    f, traces = _counting()
    x = np.linspace(0, 1, 5)
    for _ in range(10):
        _close(tg.jit(f)(x), np.sin(x) * 2.0)
    assert traces == [(5,)]
    a, b = tg.jit(f), tg.jit(f)
    assert a is not b and a.cache is b.cache


def test_other_options_have_their_own_programs() -> None:
    traces: list[Any] = []

    def f(x: Any, n: Any) -> Any:
        traces.append(type(n))
        return x * n

    x = np.ones(3)
    tg.jit(f)(x, 2)
    tg.jit(f)(x, 2)
    tg.jit(f, static_argnums=1)(x, 2)
    tg.jit(f, static_argnums=1)(x, 2)
    tg.jit(f, static_argnames="n")(x, 2)  # (the same static argument, its own entry as given)
    assert traces == [tg.core.traced.Traced, int, int]
    assert tg.jit(f).cache is not tg.jit(f, static_argnums=1).cache


def test_bound_methods_share_per_object() -> None:
    class Model:
        def __init__(self, scale: float) -> None:
            self.scale = scale
            self.traces = 0

        def apply(self, x: Any) -> Any:
            self.traces += 1
            return x * self.scale

    m1, m2 = Model(2.0), Model(3.0)
    x = np.ones(2)
    for _ in range(5):
        _close(tg.jit(m1.apply)(x), x * 2.0)
        _close(tg.jit(m2.apply)(x), x * 3.0)  # (another object: its own programs, its own constants)
    assert (m1.traces, m2.traces) == (1, 1)
    ref = weakref.ref(m1)
    del m1
    gc.collect()
    assert ref() is None


def test_programs_are_freed_with_the_function() -> None:
    before = _live_programs()
    f, traces = _counting()
    jf = tg.jit(f)
    for n in range(1, 4):
        jf(np.ones(n))
    g = tg.grad(lambda x, f=f: tnp.sum(f(x)))
    tg.jit(g)(np.ones(2))  # (the Jitted object goes at once; g keeps its program)
    assert _live_programs() == before + 4
    ref, gref = weakref.ref(f), weakref.ref(g)
    del f, jf, g
    gc.collect()
    assert ref() is None and gref() is None
    assert _live_programs() == before


def test_a_function_that_cannot_be_held_weakly_gets_its_own_cache() -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __init__(self) -> None:
            self.traces = 0

        def __call__(self, x: Any) -> Any:
            self.traces += 1
            return x + 1.0

    f = Unhashable()
    jf = tg.jit(f)
    for _ in range(3):
        _close(jf(np.ones(2)), np.ones(2) + 1.0)
    assert f.traces == 1


# --- bounded ---------------------------------------------------------------------------------------


def test_twenty_thousand_shapes_keep_at_most_max_signatures_programs() -> None:
    """The loop that kept 20,000 programs (207 MB) alive: now at most
    ``MAX_SIGNATURES``, with one warning, and the programs dropped are freed."""
    assert MAX_SIGNATURES == 256  # (the number docs/jit.md gives)
    before = _live_programs()

    def f(x: Any) -> Any:
        return x * 2.0

    jf = tg.jit(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 20_001):
            jf(np.ones(n))
    msgs = [str(w.message) for w in caught if "input signatures" in str(w.message)]
    assert len(msgs) == 1 and "more than 256 input signatures" in msgs[0]
    assert caught[0].filename == __file__  # (it points at the call)
    assert len(jf.cache) == MAX_SIGNATURES
    assert _live_programs() - before <= MAX_SIGNATURES
    # the most recent signatures are the ones kept, and run without tracing again
    kept = sorted(key[1][0][1][0] for key in jf.cache)
    assert kept == list(range(20_001 - MAX_SIGNATURES, 20_001))


def test_least_recently_used_signature_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_module, "MAX_SIGNATURES", 3)
    f, traces = _counting()
    jf = tg.jit(f)
    a, b, c, d, e = (np.ones(n) for n in range(1, 6))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        # (by keyword: every call looks its signature up, none runs through a fast entry)
        for x in (a, b, c):
            jf(x=x)
        jf(x=d)  # drops a, the least recently used
        jf(x=b)
        jf(x=c)  # b and c ran since d: d is now the least recently used
        assert len(traces) == 4
        jf(x=e)  # drops d
        jf(x=b)
        jf(x=c)
        assert len(traces) == 5
        jf(x=d)  # traced again
        jf(x=a)
        assert traces == [(1,), (2,), (3,), (4,), (5,), (4,), (1,)]
        assert len(jf.cache) == 3


def test_a_signature_run_by_the_fast_entries_is_not_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_module, "MAX_SIGNATURES", 6)
    f, traces = _counting()
    jf = tg.jit(f)
    hot = np.ones(70)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jf(hot)
        for n in range(1, 20):  # every other call is the hot one, run by its entry without a lookup
            jf(np.ones(n))
            jf(hot)
    assert traces.count((70,)) == 1 and len(traces) == 1 + 19
    assert len(jf.cache) == 6
