"""Helpers shared by the jit tests (tests/test_jit*.py)."""

from __future__ import annotations

import numpy as np

import tapegrad as tg


def rng(seed=0):
    return np.random.default_rng(seed)


def close(got, want, rtol=1e-12, atol=1e-12):
    g_leaves, g_def = tg.tree_flatten(got)
    w_leaves, w_def = tg.tree_flatten(want)
    assert g_def == w_def, (g_def, w_def)
    for g, w in zip(g_leaves, w_leaves):
        assert type(g) is not tg.core.traced.Traced
        assert np.shape(g) == np.shape(w)
        assert np.result_type(g) == np.result_type(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def counted(f):
    """``f`` and a list that gets one entry per call of ``f`` (per trace, under jit)."""
    calls = []

    def g(*args, **kwargs):
        calls.append(1)
        return f(*args, **kwargs)

    g.__name__ = getattr(f, "__name__", "g")
    return g, calls
