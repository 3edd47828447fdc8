"""``tg.jit`` as JAX users write it: the decorator-factory form, static
arguments mapped through the signature (by position or by keyword, whichever
way they are passed), ``static_argnums``/``static_argnames``/``donate_argnums``
naming no argument raising JAX's ``ValueError``, and ``donate_argnums`` kept."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
import pytest
from jithelp import close as _close

import tapegrad as tg
import tapegrad.numpy as tnp


def _power(traces: list[Any]) -> Any:
    def power(x: Any, n: int) -> Any:
        traces.append(n)
        out = x
        for _ in range(n - 1):  # (a Python loop bound: n must be static)
            out = out * x
        return out

    return power


# --- the decorator-factory form ----------------------------------------------------------------


def test_jit_without_f_returns_a_decorator() -> None:
    traces: list[Any] = []

    @tg.jit(static_argnums=1)
    def power(x: Any, n: int) -> Any:
        traces.append(n)
        return x ** n

    x = np.arange(3.0)
    _close(power(x, 2), x ** 2)
    _close(power(x + 1, 2), (x + 1) ** 2)
    _close(power(x, 3), x ** 3)
    assert traces == [2, 3]
    assert power.__name__ == "power" and power.static_argnums == (1,)


def test_jit_with_no_options_as_a_decorator_factory() -> None:
    @tg.jit()
    def f(x: Any) -> Any:
        return tnp.sin(x)

    _close(f(np.ones(2)), np.sin(np.ones(2)))


def test_functools_partial_of_jit() -> None:
    traces: list[Any] = []

    @functools.partial(tg.jit, static_argnames="n")
    def power(x: Any, n: int) -> Any:
        traces.append(n)
        return x ** n

    x = np.arange(3.0)
    _close(power(x, n=2), x ** 2)
    _close(power(x, n=2), x ** 2)
    assert traces == [2]
    _close(power(x, 2), x ** 2)  # by position: static too (another call form, traced once, as in JAX)
    _close(power(x + 1, 2), (x + 1) ** 2)
    assert traces == [2, 2] and all(type(n) is int for n in traces)


# --- static arguments through the signature ------------------------------------------------------


def test_static_argnames_argument_passed_by_position_is_static() -> None:
    traces: list[Any] = []
    jf = tg.jit(_power(traces), static_argnames="n")
    assert jf.static_argnums == (1,) and jf.static_argnames == ("n",)
    x = np.linspace(0.5, 1.5, 4)
    _close(jf(x, 3), x ** 3)  # n passed by position: a Python int for the loop
    _close(jf(x, 4), x ** 4)
    _close(jf(x, n=3), x ** 3)  # by keyword: the same static value, its own call form
    assert traces[:2] == [3, 4] and all(type(n) is int for n in traces)


def test_static_argnums_argument_passed_by_keyword_is_static() -> None:
    traces: list[Any] = []
    jf = tg.jit(_power(traces), static_argnums=1)
    assert jf.static_argnames == ("n",)
    x = np.linspace(0.5, 1.5, 4)
    _close(jf(x, n=3), x ** 3)
    _close(jf(x * 2, n=3), (x * 2) ** 3)
    _close(jf(x, n=2), x ** 2)
    assert traces == [3, 2]


def test_both_given_nothing_is_inferred() -> None:
    # as JAX: given both lists, each means only what it says
    jf = tg.jit(lambda x, n, m=1: x * n * m, static_argnums=1, static_argnames="m")
    assert jf.static_argnums == (1,) and jf.static_argnames == ("m",)


def test_keyword_only_and_positional_only_parameters() -> None:
    traces: list[Any] = []

    def f(x: Any, /, k: int, *, axis: int) -> Any:
        traces.append((k, axis))
        return tnp.sum(x, axis=axis) * k

    jf = tg.jit(f, static_argnames=("k", "axis"))
    assert jf.static_argnums == (1,)  # (k by position too; axis is keyword-only)
    x = np.arange(6.0).reshape(2, 3)
    _close(jf(x, 2, axis=0), x.sum(0) * 2)
    _close(jf(x, k=2, axis=1), x.sum(1) * 2)
    assert traces == [(2, 0), (2, 1)]
    with pytest.raises(ValueError, match="positional-only"):
        tg.jit(f, static_argnames="x")


def test_jitted_method_with_static_self() -> None:
    class Model:
        def __init__(self, depth: int) -> None:
            self.depth = depth

        def __hash__(self) -> int:
            return hash(self.depth)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Model) and other.depth == self.depth

        @functools.partial(tg.jit, static_argnums=0)
        def apply(self, x: Any) -> Any:
            for _ in range(self.depth):
                x = tnp.tanh(x)
            return x

    x = np.linspace(-1, 1, 3)
    _close(Model(2).apply(x), np.tanh(np.tanh(x)))
    _close(Model(1).apply(x), np.tanh(x))


# --- names and positions that match no argument -----------------------------------------------------


@pytest.mark.parametrize("nums", [2, (0, 5), -3])
def test_static_argnums_out_of_range_raises_value_error(nums: Any) -> None:
    with pytest.raises(ValueError, match=r"Jitted function has static_argnums=.*but only accepts 2 positional "
                                         r"arguments"):
        tg.jit(lambda x, y: x + y, static_argnums=nums)


def test_static_argnums_of_a_function_with_star_args_are_not_checked() -> None:
    jf = tg.jit(lambda *xs: xs[0] * len(xs), static_argnums=3)
    _close(jf(np.ones(2), np.ones(2)), np.ones(2) * 2)


def test_unknown_static_argnames_raise_value_error() -> None:
    with pytest.raises(ValueError, match=r"Jitted function has invalid argnames \{'nn'\} in static_argnames. "
                                         "Function does not take these args"):
        tg.jit(lambda x, n: x * n, static_argnames="nn")
    jf = tg.jit(lambda x, **kw: x * kw["scale"], static_argnames="scale")  # (**kwargs takes any name)
    _close(jf(np.ones(2), scale=3.0), np.ones(2) * 3.0)


def test_argnums_of_the_wrong_type_raise_type_error() -> None:
    with pytest.raises(TypeError, match="static_argnums must be an int or a tuple of ints"):
        tg.jit(lambda x: x, static_argnums="0")
    with pytest.raises(TypeError, match="static_argnames must be a str"):
        tg.jit(lambda x: x, static_argnames=(0,))
    with pytest.raises(TypeError, match="donate_argnums must be an int or a tuple of ints"):
        tg.jit(lambda x: x, donate_argnums=1.5)


def test_a_builtin_without_a_signature_is_not_checked() -> None:
    jf = tg.jit(max, static_argnums=5)  # (Python cannot tell the signature of max)
    assert jf.static_argnums == (5,)


# --- donate_argnums --------------------------------------------------------------------------------


def test_donate_argnums_is_accepted_checked_and_kept() -> None:
    def step(w: Any, g: Any, lr: float) -> Any:
        return w - lr * g

    jstep = tg.jit(step, donate_argnums=(0, 1))
    assert jstep.donate_argnums == (0, 1)
    w, g = np.ones(3), np.full(3, 0.5)
    _close(jstep(w, g, 0.1), np.ones(3) - 0.05)
    assert tg.jit(step, donate_argnums=0).donate_argnums == (0,)
    assert tg.jit(step).donate_argnums == ()

    @tg.jit(donate_argnums=0)
    def update(w: Any) -> Any:
        return w * 2

    assert update.donate_argnums == (0,)
    with pytest.raises(ValueError, match=r"donate_argnums=\(3,\), but only accepts 3 positional arguments"):
        tg.jit(step, donate_argnums=3)
    with pytest.raises(ValueError, match="cannot intersect"):
        tg.jit(step, static_argnums=2, donate_argnums=(1, 2))


def test_static_argnames_reach_through_grad_by_position():
    # grad keeps f's signature (``__wrapped__``, as JAX's wraps), so jit maps
    # a static name to its position through it
    def loss(w, n):
        return tnp.sum(w ** n)

    g = tg.jit(tg.grad(loss), static_argnames="n")
    w = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(w, 3), 3 * w ** 2)
    np.testing.assert_allclose(g(w, 2), 2 * w)
    assert inspect.signature(tg.grad(loss)) == inspect.signature(loss)
