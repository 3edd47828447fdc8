"""``tg.jit`` on every op of the op table (tests/optable.py): same results as eager.

For each case: the value, the gradient (reverse mode), a JVP (forward mode)
and a Hessian-vector product (forward over reverse, order 2) computed by a
jitted function equal eager's (float64, relative 1e-12). Each jitted
function is called twice with different inputs of the same shapes: the first
call traces, the second runs the compiled program (it traces again only where
a guard fails: :data:`RETRACES`). Inputs are never modified, and the arrays
the first call returned are not changed by the second.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from optable import EMPTY, OPS, Case

import tapegrad as tg
import tapegrad.numpy as tnp

# Cases whose second call (new values, same shapes) may take another path
# than the first: each decision on values is a guard, and a failed guard
# traces again. The results are right either way (the tests check them).
RETRACES = {
    "index_mask": "x[x > 0]: the result's length depends on the values (a shape guard)",
}


def _args(case: Case, seed: int, dtype: Any = np.float64) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for make in case.args:
        a = make(rng)
        out.append(a.astype(np.result_type(a.dtype, dtype) if np.iscomplexobj(a) else dtype))
    return out


def _like(rng: np.random.Generator, x: Any) -> np.ndarray:
    """A random array of ``x``'s shape and dtype (complex for a complex ``x``)."""
    u = rng.standard_normal(np.shape(x))
    if np.iscomplexobj(x):
        u = u + 1j * rng.standard_normal(np.shape(x))
    return np.asarray(u).astype(np.result_type(x))


def _close(got: Any, want: Any, what: str) -> None:
    g_leaves, g_def = tg.tree_flatten(got)
    w_leaves, w_def = tg.tree_flatten(want)
    assert g_def == w_def, f"{what}: structure {g_def} != {w_def}"
    for k, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        assert type(g) is not tg.core.traced.Traced, f"{what}[{k}]: a traced value came back"
        assert np.shape(g) == np.shape(w), f"{what}[{k}]: shape {np.shape(g)} != {np.shape(w)}"
        assert np.result_type(g) == np.result_type(w), f"{what}[{k}]: dtype {np.result_type(g)} != {np.result_type(w)}"
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{what}[{k}]")


def _copies(tree: Any) -> list[Any]:
    return [np.array(x, copy=True) for x in tg.tree_flatten(tree)[0]]


def _unchanged(tree: Any, copies: list[Any], what: str) -> None:
    for k, (x, c) in enumerate(zip(tg.tree_flatten(tree)[0], copies)):
        np.testing.assert_array_equal(x, c, err_msg=f"{what}[{k}] changed")


def _check_twice(case: Case, make: Callable[[Callable[..., Any]], Callable[..., Any]],
                 inputs: Callable[[int], list[Any]], what: str) -> None:
    """``jit(make(f))`` equals ``make(f)`` on two sets of inputs (seeds 0 and 1);
    ``f`` traces once (twice at most for a case of RETRACES)."""
    traces: list[int] = []

    def f(*xs: Any) -> Any:
        traces.append(1)
        return case.fn(tnp, *xs)

    eager = make(lambda *xs: case.fn(tnp, *xs))
    jitted = tg.jit(make(f))
    firsts = None
    for seed in (0, 1):
        args = inputs(seed)
        before = _copies(args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = eager(*args)
            got = jitted(*args)
        _unchanged(args, before, f"{what}: input")
        _close(got, want, f"{what} (call {seed + 1})")
        if firsts is None:
            firsts, kept = got, _copies(got)
    _unchanged(firsts, kept, f"{what}: the first call's result, after the second call,")
    assert len(traces) == 1 or (case.name in RETRACES and len(traces) == 2), \
        f"{what}: traced {len(traces)} times for one signature"


def _weigh(out: Any) -> Any:
    """A real scalar of a case's output: its inner product with a fixed
    weighting of its shape (any shape: x[x > 0] has the length the values give)."""
    total = 0.0
    for o in tg.tree_flatten(out)[0]:
        k = np.arange(np.size(o), dtype=float).reshape(np.shape(o))
        w = np.cos(k) + (1j * np.sin(1.3 * k + 0.5) if np.iscomplexobj(o) else 0.0)
        total = total + tnp.sum(tnp.real(o * w))
    return total


@pytest.mark.parametrize("case", OPS + EMPTY, ids=lambda c: c.name)
def test_value(case: Case) -> None:
    _check_twice(case, lambda f: f, lambda seed: _args(case, seed), "jit(f)")


@pytest.mark.parametrize("case", OPS + EMPTY, ids=lambda c: c.name)
def test_value_float32(case: Case) -> None:
    """Single precision stays single precision (NumPy's promotion, as eager)."""
    args = _args(case, 0, np.float32)
    f = lambda *xs: case.fn(tnp, *xs)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f(*args)
        got = tg.jit(f)(*args)
    for g, w in zip(tg.tree_flatten(got)[0], tg.tree_flatten(want)[0]):
        assert np.result_type(g) == np.result_type(w)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_grad(case: Case) -> None:
    """Reverse mode: the backward pass is part of the compiled program."""
    nums = tuple(range(len(case.args)))
    def make(f: Callable[..., Any]) -> Callable[..., Any]:
        return tg.value_and_grad(lambda *xs: _weigh(f(*xs)), argnums=nums)

    _check_twice(case, make, lambda seed: _args(case, seed), "jit(value_and_grad(f))")


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_jvp(case: Case) -> None:
    """Forward mode: primals and tangents are both arguments of the jitted function."""
    n = len(case.args)

    def inputs(seed: int) -> list[Any]:
        xs = _args(case, seed)
        rng = np.random.default_rng(100 + seed)
        return xs + [_like(rng, x) for x in xs]

    def make(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a: tg.jvp(f, tuple(a[:n]), tuple(a[n:]))

    _check_twice(case, make, inputs, "jit(jvp(f))")


@pytest.mark.parametrize("case", [c for c in OPS if c.order >= 2], ids=lambda c: c.name)
def test_hvp(case: Case) -> None:
    """Order 2: forward over reverse (a Hessian-vector product in a random direction)."""
    n = len(case.args)
    def inputs(seed: int) -> list[Any]:
        xs = _args(case, seed)
        rng = np.random.default_rng(200 + seed)
        return xs + [_like(rng, x) for x in xs]

    def make(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a: tg.hvp(lambda *xs: _weigh(f(*xs)), tuple(a[:n]), tuple(a[n:]))

    _check_twice(case, make, inputs, "jit(hvp(f))")
