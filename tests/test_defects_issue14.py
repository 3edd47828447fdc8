"""Issue 14: defects found by trying tapegrad as a new user would."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = np.array([0.0, 0.5, 1.5])


# --- 1. clip with keyword bounds -------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(a_min=0.1, a_max=1.1), dict(min=0.1, max=1.1)])
def test_clip_keyword_bounds(kw):
    g = tg.grad(lambda x: tnp.sum(tnp.clip(x, **kw)))(X)
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(tnp.clip(X, **kw), np.clip(X, 0.1, 1.1))


def test_clip_traced_keyword_bounds_get_gradients():
    def f(x, lo, hi):
        return tnp.sum(tnp.clip(x, a_min=lo, a_max=hi) * np.array([1.0, 2.0, 3.0]))

    gx, glo, ghi = tg.grad(f, argnums=(0, 1, 2))(X, 0.25, 1.0)
    np.testing.assert_array_equal(gx, [0.0, 2.0, 0.0])
    assert glo == 1.0 and ghi == 3.0
    # a bound read from x itself
    g = tg.grad(lambda x: tnp.sum(tnp.clip(x, a_min=x[1], max=1.1)))(X)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0])
    g = tg.grad(lambda x: tnp.sum(np.clip(x, min=x[1], max=1.1)))(X)  # NumPy's own clip, dispatched
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0])


def test_clip_keyword_errors():
    with pytest.raises(TypeError, match="a_min or min"):
        tnp.clip(X, 0.0, a_max=1.0, min=0.1)
    with pytest.raises(TypeError, match="out="):
        tg.grad(lambda x: tnp.sum(tnp.clip(x, 0.0, 1.0, out=np.empty(3))))(X)


# --- 2. imag / angle of a Python complex -------------------------------------------------------
def test_complex_python_scalars():
    assert tg.grad(lambda z: 2.0 * tnp.imag(z))(0.3 + 0.4j) == -2j
    np.testing.assert_allclose(tg.grad(tnp.angle)(0.3 + 0.4j), -1.6 - 1.2j)
    np.testing.assert_allclose(tg.grad(np.angle)(0.3 + 0.4j), -1.6 - 1.2j)
    np.testing.assert_allclose(tg.value_and_grad(lambda z: z.imag * 2.0)(0.3 + 0.4j)[1], -2j)


# --- 3. operators defer to objects that override NumPy's ufuncs ----------------------------------
class NoUfuncs:
    __array_ufunc__ = None

    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return type(self)(other * self.v)

    __rmul__ = __mul__

    def __lt__(self, other):
        return "lt"

    def __gt__(self, other):
        return "gt"


class OwnUfuncs(NoUfuncs):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return NotImplemented


@pytest.mark.parametrize("cls", [NoUfuncs])
def test_operators_defer_to_array_ufunc_overrides(cls):
    assert tg.grad(lambda x: (x * cls(3.0)).v)(2.0) == 3.0
    assert tg.grad(lambda x: (cls(3.0) * x).v)(2.0) == 3.0
    assert tg.grad(lambda x: (x * np.array(2.0) * cls(3.0)).v)(2.0) == 6.0
    assert tg.grad(lambda x: tg.grad(lambda y: (y * x * cls(3.0)).v)(1.0))(2.0) == 3.0

    def cmp(x):
        assert (x < cls(1.0)) == "gt"  # reflected: cls.__gt__
        return x * 1.0

    tg.grad(cmp)(2.0)


def test_an_override_that_returns_notimplemented_raises_as_ndarray_does():
    # ndarray's operators call the ufunc for an operand with its own __array_ufunc__
    # (NEP 13), which then refuses: TypeError, not the operand's reflected operator
    with pytest.raises(TypeError, match="NotImplemented"):
        np.array(2.0) * OwnUfuncs(3.0)
    with pytest.raises(TypeError, match="NotImplemented"):
        tg.grad(lambda x: (x * OwnUfuncs(3.0)).v)(2.0)


# --- 4. check_grads checks a rule's rules, the cotangent's included ------------------------------
def _rule_calling_a_wrong_rule():
    @tg.primitive
    def q(g, x):
        return g * np.cos(x)

    tg.defvjp(q, lambda ans, g, x: lambda c: 2.0 * c * tnp.cos(x),  # wrong: the factor 2
              lambda ans, g, x: lambda c: -c * g * tnp.sin(x))

    @tg.primitive
    def p(x):
        return np.sin(x)

    tg.defvjp(p, lambda ans, x: lambda g: q(g, x))
    return p


def test_check_grads_checks_the_vjp_in_its_cotangent():
    p = _rule_calling_a_wrong_rule()
    x = np.array([0.3, -0.7])
    tg.check_grads(p, [x], modes=("rev",), order=1)  # p's own rule is right
    with pytest.raises(AssertionError, match="order 2"):
        tg.check_grads(p, [x], modes=("rev",), order=2)
    tg.check_grads(tnp.sin, [x], order=3)  # right rules still pass


def test_check_grads_names_the_order_that_fails():
    @tg.primitive
    def bad(x):
        return x ** 2

    tg.defvjp(bad, lambda ans, x: lambda g: 3.0 * g * x)
    with pytest.raises(AssertionError, match="order 1"):
        tg.check_grads(bad, [np.array([0.5, 1.5])], modes=("rev",), order=2)


# --- 5. checkpoint of a closure over traced values -------------------------------------------------
W0 = np.array([[0.5, -0.3], [0.2, 0.4]])


def _layer(w, h):
    return tnp.tanh(w @ h)


def _net(w, remat):
    h = tnp.sin(w[0])
    for _ in range(3):
        step = lambda h: _layer(w, h)  # noqa: E731  # closes over the traced weights
        h = (tg.checkpoint(step) if remat else step)(h)
    return tnp.sum(h)


def test_checkpoint_converts_closures():
    want = tg.grad(lambda w: _net(w, False))(W0)
    np.testing.assert_allclose(tg.grad(lambda w: _net(w, True))(W0), want)
    np.testing.assert_allclose(tg.hessian(lambda w: _net(w, True))(W0), tg.hessian(lambda w: _net(w, False))(W0))
    # the closed-over values in a container, in a nested function, and no traced argument at all
    got = tg.grad(lambda w: tnp.sum(tg.checkpoint(lambda h: (lambda: _layer([w][0], h))())(np.ones(2))))(W0)
    np.testing.assert_allclose(got, tg.grad(lambda w: tnp.sum(_layer(w, np.ones(2))))(W0))
    ws = tg.grad(lambda w: tnp.sum(tg.checkpoint(lambda h: _layer(pair[0] * pair[1], h))(w[1]))
                 if (pair := (w, w)) else 0.0)(W0)
    np.testing.assert_allclose(ws, tg.grad(lambda w: tnp.sum(_layer(w * w, w[1])))(W0))


def test_checkpoint_closure_under_vmap():
    def f(w, remat):
        step = lambda h: _layer(w, h)  # noqa: E731
        return tnp.sum(tg.vmap(tg.checkpoint(step) if remat else step)(np.ones((3, 2)) * w[0]))

    np.testing.assert_allclose(tg.grad(lambda w: f(w, True))(W0), tg.grad(lambda w: f(w, False))(W0))


# --- 7. no-gradient functions that did drop gradients --------------------------------------------
XS = np.array([0.3, -1.2, 2.0, 0.7, 1.6])


def test_histogram_edges_and_densities_have_gradients():
    tg.check_grads(lambda x: np.histogram(x, bins=3)[1], [XS], modes=("rev",), order=1)
    tg.check_grads(lambda x: np.histogram(x, bins=3, density=True)[0], [XS], modes=("rev",), order=1)
    hist, edges = tnp.histogram(tg.stop_gradient(XS), bins=3)
    want = np.histogram(XS, bins=3)
    np.testing.assert_array_equal(hist, want[0])
    np.testing.assert_allclose(edges, want[1])
    g = tg.grad(lambda x: tnp.sum(np.histogram(x, bins=np.array([-2.0, 0.0, 3.0]))[0] * 1.0) + x[0])(XS)
    np.testing.assert_array_equal(g, [1.0, 0, 0, 0, 0])  # given edges: counts only, no gradient
    with pytest.raises(TypeError, match="histogram"):
        tg.grad(lambda x: tnp.sum(np.histogram(x, bins=3, range=(-1.0, 1.0))[1]))(XS)


def test_unique_values_are_a_gather():
    x = np.array([0.3, -1.2, 2.0, 0.7, 2.0])
    g = tg.grad(lambda x: tnp.sum(np.unique(x) * np.arange(4.0)))(x)
    np.testing.assert_array_equal(g, [1.0, 0.0, 3.0, 2.0, 0.0])
    vals, idx, inv, counts = tnp.unique(tg.stop_gradient(x), return_index=True, return_inverse=True,
                                        return_counts=True)
    for got, want in zip((vals, idx, inv, counts), np.unique(x, True, True, True)):
        np.testing.assert_array_equal(got, want)

    def f(x):
        v, c = np.unique(x, return_counts=True)
        np.testing.assert_array_equal(c, [1, 1, 1, 2])
        return tnp.sum(v)

    np.testing.assert_array_equal(tg.grad(f)(x), [1.0, 1.0, 1.0, 1.0, 0.0])


def test_bincount_is_linear_in_its_weights():
    i = np.array([0, 2, 2, 1, 0])
    g = tg.grad(lambda w: tnp.sum(np.bincount(i, weights=w, minlength=5) * np.arange(5.0)))(XS)
    np.testing.assert_array_equal(g, [0.0, 2.0, 2.0, 1.0, 0.0])
    np.testing.assert_allclose(tnp.bincount(i, tg.stop_gradient(XS)), np.bincount(i, XS))


def test_heaviside_x2_gets_the_gradient_where_x1_is_zero():
    x1 = np.array([0.0, 1.0, -1.0, 0.0])
    g1, g2 = tg.grad(lambda a, b: tnp.sum(np.heaviside(a, b)), argnums=(0, 1))(x1, np.full(4, 0.5))
    np.testing.assert_array_equal(g1, np.zeros(4))
    np.testing.assert_array_equal(g2, [1.0, 0.0, 0.0, 1.0])
    assert tg.grad(lambda b: tnp.heaviside(0.0, b))(0.25) == 1.0
