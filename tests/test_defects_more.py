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


# --- 2. the JVP of the `pad` primitive pads the tangent in the same mode ---------------------------
_PAD_CASES = [
    ("constant", {"constant_values": 7.0}),
    ("empty", {}),
    ("edge", {}),
    ("wrap", {}),
    ("reflect", {}),
    ("symmetric", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {"reflect_type": "odd"}),
    ("linear_ramp", {"end_values": (3.0, -2.0)}),
    ("mean", {}),
    ("mean", {"stat_length": ((1, 2), (2, 1))}),
]


@pytest.mark.parametrize("mode,kw", _PAD_CASES)
def test_pad_primitive_jvp_follows_mode(mode, kw):
    from tapegrad.numpy import wrap

    x = np.arange(1.0, 7.0).reshape(2, 3) ** 1.5
    t = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    widths = ((1, 2), (2, 1))

    def f(a):
        return wrap.pad(a, widths, mode=mode, **kw)

    out, tan = tg.jvp(f, (x,), (t,))
    ref = np.pad(t, widths, mode="constant" if mode == "empty" else mode,
                 **{k: val for k, val in kw.items() if k not in ("constant_values", "end_values")})
    np.testing.assert_allclose(tan, ref, atol=1e-12)
    if mode != "empty":  # every other mode is affine in x: the tangent is the difference
        np.testing.assert_allclose(tan, f(x + t) - f(x), atol=1e-12)
    # batched tangents (jacfwd) and vmap
    jac = tg.jacfwd(lambda a: wrap.pad(a, widths, mode=mode, **kw))(x)
    assert jac.shape == out.shape + x.shape
    np.testing.assert_allclose(np.einsum("ijkl,kl->ij", jac, t), tan, atol=1e-12)
    vt = tg.vmap(lambda a, b: tg.jvp(f, (a,), (b,))[1])(np.stack([x, 2 * x]), np.stack([t, -t]))
    np.testing.assert_allclose(vt, np.stack([tan, -tan]), atol=1e-12)


def test_pad_primitive_jvp_edge_issue_example():
    from tapegrad.numpy import wrap

    tan = tg.jvp(lambda x: wrap.pad(x, 1, mode="edge"), (np.arange(1.0, 4),), (np.ones(3),))[1]
    np.testing.assert_array_equal(tan, np.ones(5))
    # tnp.pad (derived) agrees in every mode, forward and reverse
    for mode in ("edge", "maximum", "median", "linear_ramp"):
        f = lambda x, m=mode: tnp.pad(x, 1, mode=m)  # noqa: E731
        np.testing.assert_allclose(tg.jacfwd(f)(np.array([1.0, 3.0, 2.0])), tg.jacrev(f)(np.array([1.0, 3.0, 2.0])))
