"""More defects: mean's dtype tape entry, pad's JVP mode, lists of traced values,
heaviside under jit/vmap, custom_vjp's bwd under jacrev."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = np.array([0.0, 0.5, 1.5])


# --- 1. mean(..., dtype=) records one `mean` entry ------------------------------------------------
def test_mean_with_dtype_is_one_tape_entry():
    with tg.Tape() as tape:
        h = tape.watch(np.array([1.0, 2.0, 4.0]))
        m = tnp.mean(h**2, dtype=np.float64)
    assert [e.primitive for e in tape] == ["power", "mean"]
    assert "mean" in str(tape) and "sum" not in str(tape) and "divide" not in str(tape)
    np.testing.assert_allclose(tg.value(m), 7.0)


def test_mean_with_dtype_casts_and_differentiates():
    x32 = np.array([1.0, 2.0, 4.0], np.float32)
    out = tnp.mean(x32, dtype=np.float64)
    assert out.dtype == np.mean(x32, dtype=np.float64).dtype
    g = tg.grad(lambda x: tnp.mean(x**2, dtype=np.float64))(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x32 / 3, rtol=1e-6)
    np.testing.assert_allclose(tg.jvp(lambda x: tnp.mean(x, axis=0, dtype=np.float64), (np.ones((2, 3)),),
                                      (np.ones((2, 3)),))[1], np.ones(3))
    np.testing.assert_allclose(tg.vmap(lambda x: tnp.mean(x, dtype=np.float64))(np.arange(6.0).reshape(2, 3)),
                               [1.0, 4.0])
