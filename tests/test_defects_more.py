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


# --- 3. lists and tuples holding traced values are array_like ----------------------------------
_C = np.array([True, False, True])
_LISTED = {
    "sum": lambda x: tnp.sum([x, x]),
    "sum axis": lambda x: tnp.sum(tnp.sum([x, 2 * x], axis=0)),
    "prod": lambda x: tnp.sum(tnp.prod([x, x + 1], axis=0)),
    "amax": lambda x: tnp.amax([x, 2 * x]),
    "amin": lambda x: tnp.amin([x, 2 * x]),
    "max": lambda x: tnp.max([x, 2 * x]),
    "where x": lambda x: tnp.sum(tnp.where(_C, [x, x**2], 0.0)),
    "where y": lambda x: tnp.sum(tnp.where(_C, 0.0, [x, x**2])),
    "where traced": lambda x: tnp.sum(tnp.where(x > 1.5, [x, x**2], x)),
    "clip": lambda x: tnp.sum(tnp.clip([x, x**2], 1.5, 5.0)),
    "clip bound": lambda x: tnp.sum(tnp.clip(x**2, [x, x], 5.0)),
    "concatenate": lambda x: tnp.sum(tnp.concatenate([[x, x], [x**2]])),
    "maximum": lambda x: tnp.sum(tnp.maximum([x, x**2], 2.0)),
    "minimum": lambda x: tnp.sum(tnp.minimum(2.0, [x, x**2])),
    "maximum traced": lambda x: tnp.sum(tnp.maximum(x, [x**2, 2 * x])),
    "sin": lambda x: tnp.sum(tnp.sin([x, x])),
    "exp tuple": lambda x: tnp.sum(tnp.exp((x, x**2))),
    "add": lambda x: tnp.sum(tnp.add([x, x], 1.0)),
    "cumsum": lambda x: tnp.sum(tnp.cumsum([x, x**2])),
    "nested": lambda x: tnp.sum(tnp.sin([[x, x], [x**2, x]])),
}


@pytest.mark.parametrize("name", sorted(_LISTED))
def test_lists_of_traced_values(name):
    f = _LISTED[name]
    x = np.array([0.5, 1.7, 2.6])  # (no ties with the bounds)
    xs = np.stack([x, x + 0.125])
    eps = 1e-6
    fd = np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    g = tg.grad(f)(x)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), g)
    np.testing.assert_allclose(tg.grad(tg.jit(f))(x), g)
    np.testing.assert_allclose(tg.jacfwd(f)(x), g)
    np.testing.assert_allclose(tg.jit(tg.jacfwd(f))(x), g)
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), np.stack([g, tg.grad(f)(xs[1])]))
    np.testing.assert_allclose(tg.grad(lambda a: tnp.sum(tg.vmap(f)(a)))(xs)[0], g)
    assert np.allclose(f(x), tg.jit(f)(x))


def test_lists_of_traced_values_errors_stand():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):  # a plain TypeError is not swallowed
        tnp.sum(x, axis="a")
    with pytest.raises(TypeError):
        tg.grad(lambda x: tnp.sum(tnp.sin(x, "bad")))(x)


# --- 4. heaviside's rule under jit and vmap --------------------------------------------------------
def test_heaviside_rule_under_jit_and_vmap():
    a = np.array([-1.0, 0.0, 2.0, 0.0])
    b = np.array([0.5, 0.3, 0.2, 0.1])

    def f(a, b):
        return tnp.sum(tnp.heaviside(a, b) * b)

    want = np.array([0.0, 0.6, 1.0, 0.2])
    np.testing.assert_allclose(tg.grad(f, 1)(a, b), want)
    np.testing.assert_allclose(tg.jit(tg.grad(f, 1))(a, b), want)
    ga, gb = tg.jit(tg.grad(f, (0, 1)))(a, b)
    np.testing.assert_array_equal(ga, np.zeros(4))
    np.testing.assert_allclose(gb, want)
    a2 = np.array([3.0, 2.0, 0.0, 2.0])
    np.testing.assert_allclose(tg.vmap(tg.grad(f, 1))(np.stack([a, a2]), np.stack([b, b])),
                               [want, [1.0, 1.0, 0.4, 1.0]])
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(f, 1)))(np.stack([a, a2]), np.stack([b, b])),
                               [want, [1.0, 1.0, 0.4, 1.0]])
    g = lambda a, b: tnp.sum(tnp.heaviside(a, b))  # noqa: E731  (the brief's example)
    np.testing.assert_allclose(tg.jit(tg.grad(g, 1))(a, b), [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(tg.vmap(tg.grad(g, 1))(np.stack([a, a2]), np.stack([b, b])),
                               [[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]])


# --- 5. custom_vjp's bwd is mapped over a batch of cotangents (jacrev) ------------------------------
def test_custom_vjp_bwd_mapped_under_jacrev():
    W = np.arange(6.0).reshape(2, 3)
    seen = []

    @tg.custom_vjp
    def f(x, y):
        return tnp.dot(W, x) * y

    def fwd(x, y):
        return f(x, y), (x, y)

    def bwd(res, g):
        x, y = res
        seen.append(np.shape(g))
        assert np.shape(g) == (2,)  # written for one cotangent
        return tnp.dot(g, W) * y, tnp.dot(g, tnp.dot(W, x))

    f.defvjp(fwd, bwd)
    x, y = np.array([1.0, 2.0, 3.0]), 2.0
    jx, jy = tg.jacrev(f, (0, 1))(x, y)
    np.testing.assert_allclose(jx, W * y)
    np.testing.assert_allclose(jy, W @ x)
    assert seen and all(s == (2,) for s in seen)
    jx2, jy2 = tg.jit(tg.jacrev(f, (0, 1)))(x, y)
    np.testing.assert_allclose(jx2, jx)
    np.testing.assert_allclose(jy2, jy)
    np.testing.assert_allclose(tg.vmap(tg.jacrev(f))(np.stack([x, x]), np.array([1.0, 2.0])), [W, 2 * W])
    hess = tg.jacrev(tg.jacrev(lambda x: tnp.sum(f(x, y) ** 2)))(x)
    np.testing.assert_allclose(hess, 2 * (W * y).T @ (W * y))
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x, y)))(x), W.sum(0) * y)
