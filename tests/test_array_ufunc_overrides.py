"""Traced values follow NumPy's operator protocol (NEP 13) with operands that
override ufuncs, as ndarray's operators do: an operand with its own
``__array_ufunc__`` gets the ufunc (and may compute with the traced value,
which then differentiates); one with ``__array_ufunc__ = None`` gets its
reflected operator. Each case is checked against what an ndarray does."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


class Wrapped:
    """A duck array in the style of pint/xarray: it unwraps itself, calls the
    ufunc and wraps the answer. No arithmetic operators of its own."""

    def __init__(self, v):
        self.v = v

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        ins = [i.v if isinstance(i, Wrapped) else i for i in inputs]
        return Wrapped(getattr(ufunc, method)(*ins, **kwargs))


class OptsOut:
    __array_ufunc__ = None

    def __init__(self, v):
        self.v = v

    def __rmul__(self, other):
        return ("rmul", other)


OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod,
       operator.floordiv, operator.lt, operator.ge, operator.eq]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
def test_an_override_gets_the_ufunc_as_with_an_ndarray(op):
    x = np.array([1.5, 2.0, 3.0])
    w = np.array([2.0, 0.5, 4.0])
    want = op(x, Wrapped(w))
    assert isinstance(want, Wrapped)
    with tg.Tape() as tape:
        got = op(tape.watch(x), Wrapped(w))
        assert isinstance(got, Wrapped)
        np.testing.assert_allclose(tg.value(got.v), want.v)
        got_r = op(Wrapped(w), tape.watch(x))
        np.testing.assert_allclose(tg.value(got_r.v), op(Wrapped(w), x).v)


def test_gradients_flow_through_the_override():
    w = np.array([2.0, 0.5, 4.0])
    x = np.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum((x * Wrapped(w)).v))(x), w)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum((Wrapped(w) * x).v))(x), w)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum((x ** Wrapped(w)).v))(x), w * x ** (w - 1))
    np.testing.assert_allclose(tg.grad(lambda x: (x @ Wrapped(w)).v)(x), w)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(np.sin(Wrapped(x)).v))(x), np.cos(x))
    np.testing.assert_allclose(tg.vmap(lambda x: (x * Wrapped(w)).v)(np.ones((2, 3))), np.tile(w, (2, 1)))
    np.testing.assert_allclose(tg.jit(lambda x: (x * Wrapped(w)).v)(x), x * w)
    _, t = tg.jvp(lambda x: (x * Wrapped(w)).v, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, w)


def test_an_operand_that_opts_out_gets_its_reflected_operator():
    x = np.array([1.0, 2.0])
    assert (x * OptsOut(1.0))[0] == "rmul"
    with tg.Tape() as tape:
        got = tape.watch(x) * OptsOut(1.0)
    assert got[0] == "rmul"
    with pytest.raises(TypeError):  # no __radd__: Python's TypeError, as for an ndarray
        _ = x + OptsOut(1.0)
    with pytest.raises(TypeError), tg.Tape() as tape:
        _ = tape.watch(x) + OptsOut(1.0)


def test_numpy_ufunc_calls_give_the_override_its_turn():
    w = Wrapped(np.array([2.0, 3.0]))
    with tg.Tape() as tape:
        x = tape.watch(np.array([1.0, 1.0]))
        assert isinstance(np.multiply(x, w), Wrapped)
        assert isinstance(np.add(w, x), Wrapped)
        assert isinstance(np.maximum(x, w), Wrapped)
