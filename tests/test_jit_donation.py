"""``donate_argnums``: a donated argument's memory may take the program's
results; a donated array that shares memory with another argument, or that
an earlier call overwrote, is refused with a clear error; ``backend=``'s
bad values."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from jithelp import close as _close

import tapegrad as tg
import tapegrad.numpy as tnp


def _step(p, m, g):
    m = 0.9 * m + 0.1 * g
    return p - 0.01 * m, m, tnp.sum(m)


def _donating(f, argnums):
    return tg.jit(f, donate_argnums=argnums)


def test_donated_arguments_take_the_results_in_place_and_give_eagers_values():
    jf = _donating(_step, (0, 1))
    p, m, g = np.ones(5), np.zeros(5), np.arange(5.0)
    want = _step(p.copy(), m.copy(), g)
    jf.lower(p, m, g)  # (compiled now: the call below runs the program)
    got = jf(p, m, g)
    _close(got, want)
    assert got[0] is p and got[1] is m  # (their memory took the results)
    np.testing.assert_array_equal(g, np.arange(5.0))  # (what is not donated is never written)


def test_without_donation_the_callers_arrays_are_never_written():
    jf = tg.jit(_step)
    p, m, g = np.ones(5), np.zeros(5), np.arange(5.0)
    for _ in range(2):
        got = jf(p, m, g)
    assert got[0] is not p and got[1] is not m
    np.testing.assert_array_equal(p, np.ones(5))
    np.testing.assert_array_equal(m, np.zeros(5))


def test_a_training_loop_passes_back_what_it_got():
    jf = _donating(_step, (0, 1))
    p, m, g = np.ones(5), np.zeros(5), np.arange(5.0)
    pe, me = p.copy(), m.copy()
    for _ in range(4):
        p, m, _s = jf(p, m, g)
        pe, me, _s = _step(pe, me, g)
    _close((p, m), (pe, me))


def test_a_donated_array_that_shares_memory_with_another_argument_is_refused():
    jf = _donating(_step, (0,))
    p, g = np.ones(5), np.arange(5.0)
    jf(p, np.zeros(5), g)
    with pytest.raises(ValueError, match="donated argument shares memory"):
        jf(p, p[::1], g)


def test_a_donated_array_the_call_overwrote_and_did_not_return_is_read_only_after():
    def f(x, y):
        return tnp.sum(x * 2.0 + y)  # (x's memory takes x * 2.0; only a number comes back)

    jf = _donating(f, (0,))
    x, y = np.ones(4), np.ones(4)
    jf.lower(x, y)
    assert jf(x, y) == 12.0
    assert not x.flags.writeable
    with pytest.raises(ValueError, match="donated argument is read-only"):
        jf(x, y)


@pytest.mark.parametrize("bad", ["cuda", "Numba", ""])
def test_an_unknown_backend_lists_the_known_ones(bad):
    with pytest.raises(ValueError, match="'numpy', 'numba'"):
        tg.jit(_step, backend=bad)


@pytest.mark.skipif(importlib.util.find_spec("numba") is not None, reason="numba is installed here")
def test_the_numba_backend_without_numba_names_the_extra():
    with pytest.raises(ImportError, match=r'pip install "tapegrad\[numba\]"'):
        tg.jit(_step, backend="numba")


def test_the_numba_backend_is_never_imported_unless_asked_for():
    import subprocess
    import sys

    code = ("import sys, numpy as np, tapegrad as tg; f = tg.jit(lambda x: x * 2.0 + 1.0); f(np.ones(3)); "
            "print('numba' in sys.modules, 'tapegrad.compile.backends.numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
