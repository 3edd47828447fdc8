"""Reductions and scans of tapegrad.numpy, each with its VJP, JVP and batching rule.

``sum``, the fused ``mean``, ``prod``, ``max`` / ``min``, ``logsumexp`` and the
fused ``weighted_sum`` reduce over ``axis``; ``cumsum`` and ``cumprod`` scan
along it. A reduction's cotangent is reshaped with the reduced axes kept as
size 1 and broadcast back; its JVP is a (weighted) sum of the tangent over
the same axes, counted from the end so that leading batch axes of the
tangent stay. Their batching rule shifts ``axis`` by one (``_reduction``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axes, normalize_axis
from tapegrad.backend import array_module
from tapegrad.batching import defbatch, elementwise_rule, shift_axes, shift_axis
from tapegrad.core.engine_ops import broadcast_to
from tapegrad.core.primitive import defjvp, defvjp, primitive
from tapegrad.core.traced import Traced, concrete, value
from tapegrad.numpy._define import bound, nbatch, neg_axes
from tapegrad.numpy.elementwise import exp, multiply
from tapegrad.numpy.shapes import (
    concatenate_args,
    expand_dims,
    flip,
    moveaxis,
    reshape_c,
    transpose,
)
from tapegrad.typing import ArrayFunction, Reduction

Args = Sequence[Any]
Rule = Callable[[Any], Any]


# --- helpers of the rules --------------------------------------------------------------------
def reduction_size(shape: tuple[int, ...], axis: Any) -> int:
    """How many elements a reduction over ``axis`` of an array of ``shape`` combines into each result."""
    return math.prod(shape[a] for a in normalize_axes(axis, len(shape)))


def _kept_shape(shape: tuple[int, ...], axis: Any) -> tuple[int, ...]:
    """``shape`` with the axes a reduction over ``axis`` removes kept as size 1."""
    axes = normalize_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _unreduce(g: Any, nd: int, kept: tuple[int, ...]) -> Any:
    """A reduction's cotangent ``g`` (batch + an ``nd``-dim result) reshaped to
    batch + ``kept``: it broadcasts against the reduced argument."""
    return reshape_c(g, g.shape[: g.ndim - nd] + kept)


def _bcast(g: Any, nd: int, kept: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """A reduction's cotangent broadcast back over the reduced axes: batch + ``shape``."""
    nb = g.ndim - nd
    lead = g.shape[:nb]
    if nd != len(kept) and (nd or nb):  # put the reduced axes back as size 1 (not needed
        g = reshape_c(g, lead + kept)  # with keepdims, nor for a full reduction's scalar)
    return broadcast_to(g, lead + shape)


def _kept(ans: Any, shape: tuple[int, ...], axis: Any) -> Any:
    """``ans`` of a reduction reshaped with the reduced axes kept as size 1."""
    return reshape_c(ans, _kept_shape(shape, axis))


def _jvp_weighted(weights: Callable[..., Any]) -> Callable[..., Rule]:
    """The JVP maker of a reduction whose tangent is ``sum(t * weights(ans, x, axis))``."""
    def maker(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
        axes = neg_axes(axis, x.ndim)
        wts = weights(ans, x, axis)
        return lambda t: sum(t * wts, axis=axes, keepdims=keepdims)
    return maker


def _reduction(fn: Callable[..., Any], impl: Callable[..., Any]) -> None:
    """Give reduction ``fn`` (with ``impl``'s signature) its batching rule: ``axis`` shifted by one."""
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = bound(impl, args, kwargs)
        kw["axis"] = shift_axes(kw.get("axis"), x.ndim - 1)
        return fn(x, **kw)

    defbatch(fn, rule)


def _scan(fn: Callable[..., Any], impl: Callable[..., Any]) -> None:
    """Give scan ``fn`` (with ``impl``'s signature) its batching rule: ``axis``
    shifted by one, or each example flattened for ``axis=None``."""
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = bound(impl, args, kwargs)
        if kw.get("axis") is None:  # over the flattened example
            x = reshape_c(x, (size, math.prod(x.shape[1:])))
            kw["axis"] = 1
        else:
            kw["axis"] = shift_axis(kw["axis"], x.ndim - 1)
        return fn(x, **kw)

    defbatch(fn, rule)


# --- sum -------------------------------------------------------------------------------------
def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    if type(a) is np.ndarray:  # what np.sum calls, without its Python-level wrapper
        return np.add.reduce(a, axis, dtype, out, keepdims, **kw)
    return array_module(a).sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)


sum: Reduction = primitive(_sum, "sum", batched=True)  # noqa: A001


def _vjp_sum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
    shape, nd = x.shape, ans.ndim
    kept = _kept_shape(shape, axis)
    return lambda g: _bcast(g, nd, kept, shape)


def _jvp_sum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
    axes = neg_axes(axis, x.ndim)
    return lambda t: sum(t, axis=axes, dtype=dtype, keepdims=keepdims)


defvjp(sum, _vjp_sum)
defjvp(sum, _jvp_sum)
_reduction(sum, _sum)


# --- mean (fused: one entry where sum / n records two) ---------------------------------------
def _mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The mean of ``x`` over ``axis`` (None: every axis): ``sum / n`` in
    ``x``'s dtype, as ONE tape entry where ``sum(x) / n`` records two."""
    if type(x) is np.ndarray:  # the ufunc's reduction: np.sum's wrapper costs as much
        s = np.add.reduce(x, axis, keepdims=keepdims)  # type: ignore[call-overload]
    else:
        s = array_module(x).sum(x, axis=axis, keepdims=keepdims)
    return s / reduction_size(x.shape, axis)


mean = primitive(_mean, "mean", batched=True)


def _vjp_mean(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Rule:
    shape, nd, n = x.shape, ans.ndim, reduction_size(x.shape, axis)
    kept = _kept_shape(shape, axis)

    def vjp(g: Any) -> Any:
        lead = g.shape[: g.ndim - nd]
        return broadcast_to(reshape_c(g / n, lead + kept), lead + shape)

    return vjp


def _jvp_mean(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Rule:
    axes, n = neg_axes(axis, x.ndim), reduction_size(x.shape, axis)
    return lambda t: sum(t, axis=axes, keepdims=keepdims) / n


defvjp(mean, _vjp_mean)
defjvp(mean, _jvp_mean)
_reduction(mean, _mean)


# --- prod ------------------------------------------------------------------------------------
prod: Reduction = primitive(np.prod, batched=True)


def _prod_of_others(x: Any, axis: Any) -> Any:
    """For each entry, the product of the *other* entries along ``axis``:
    exclusive cumulative products from both ends, exact when x holds zeros."""
    shape = x.shape
    axes = normalize_axes(axis, len(shape))
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    if math.prod(shape[i] for i in axes) == 0:  # (nothing reduced: x is empty, and so is this)
        return array_module(value(x)).zeros(shape, dtype=value(x).dtype)
    perm = rest + axes
    xt = reshape_c(transpose(x, perm), tuple(shape[i] for i in rest) + (math.prod(shape[i] for i in axes),))
    ones = array_module(value(x)).ones(xt.shape[:-1] + (1,), dtype=value(x).dtype)
    left = cumprod(concatenate_args(xt.ndim - 1, ones, xt[..., :-1]), axis=-1)
    right = flip(cumprod(concatenate_args(xt.ndim - 1, ones, flip(xt, -1)[..., :-1]), axis=-1), -1)
    others = reshape_c(left * right, tuple(shape[i] for i in perm))
    return transpose(others, tuple(np.argsort(perm)))


def _no_zeros(x: Any) -> bool:
    """Does ``x`` hold no zero? Only asked of concrete values: any other ``x``
    takes the rule that is exact with zeros too, which needs no decision on
    its values."""
    v = concrete(x)
    return v is not None and bool(np.all(v != 0))


def _vjp_prod(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    if _no_zeros(x):
        return lambda g: _unreduce(g, nd, kept) * (reshape_c(ans, kept) / x)
    return lambda g: _unreduce(g, nd, kept) * _prod_of_others(x, axis)


def _prod_weights(ans: Any, x: Any, axis: Any) -> Any:
    if _no_zeros(x):
        return _kept(ans, x.shape, axis) / x
    return _prod_of_others(x, axis)


defvjp(prod, _vjp_prod)
defjvp(prod, _jvp_weighted(_prod_weights))
_reduction(prod, np.prod)


# --- max, min --------------------------------------------------------------------------------
amax: Reduction = primitive(np.amax, "max", batched=True)
amin: Reduction = primitive(np.amin, "min", batched=True)


def _vjp_chooser(ans: Any, x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
    """max / min: the cotangent goes to the winners, split evenly among ties."""
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    hit = value(x) == value(ans).reshape(kept)
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return lambda g: _unreduce(g, nd, kept) * share


def _chooser_weights(ans: Any, x: Any, axis: Any) -> Any:
    hit = value(x) == value(_kept(ans, x.shape, axis))
    return hit / np.sum(hit, axis=axis, keepdims=True)


def _jvp_amax(ans: Any, x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Rule:
    return _jvp_weighted(_chooser_weights)(ans, x, axis, keepdims=keepdims)


defvjp(amax, _vjp_chooser)
defjvp(amax, _jvp_amax)
_reduction(amax, np.amax)
defvjp(amin, _vjp_chooser)
defjvp(amin, _jvp_amax)
_reduction(amin, np.amin)


# --- logsumexp (a primitive for numerical stability: its rule reuses the stable answer) ------
def _logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    xp = array_module(a)
    if xp is np and a.size:  # the ufuncs' own reductions: fromnumeric's wrappers cost as much
        m = np.maximum.reduce(a, axis, None, None, True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.add.reduce(np.exp(a - m), axis, None, None, True)) + m
    else:
        m = xp.max(a, axis=axis, keepdims=True) if a.size else xp.zeros((1,) * a.ndim, a.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        out = xp.log(xp.sum(xp.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


_logsumexp.__doc__ = """``log(sum(exp(a), axis))``, computed stably (the maximum taken out first).

The primitive behind ``tapegrad.numpy.logsumexp`` (no ``b``, no
``return_sign``): one tape entry, and its rule reuses the stable answer."""

logsumexp = primitive(_logsumexp, "logsumexp", batched=True)


def _vjp_logsumexp(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Rule:
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    return lambda g: _unreduce(g, nd, kept) * exp(x - reshape_c(ans, kept))


def _logsumexp_weights(ans: Any, x: Any, axis: Any) -> Any:
    return exp(x - _kept(ans, x.shape, axis))


defvjp(logsumexp, _vjp_logsumexp)
defjvp(logsumexp, lambda ans, x, axis=None, keepdims=False: _jvp_weighted(_logsumexp_weights)(
    ans, x, axis, keepdims=keepdims))
_reduction(logsumexp, _logsumexp)


# --- weighted_sum (fused: sum(x * weights), the weights a constant) --------------------------
def _weighted_sum(x: Any, weights: Any, axis: int | None = None) -> Any:
    """``sum(x * weights)`` over every axis (``axis`` None) or over ``axis``,
    as ONE tape entry. ``weights`` (of ``x``'s shape) is a constant: it gets
    no gradient (a negative log-likelihood is this with the weights of each
    sample at its target class and 0 elsewhere: no gather, no scatter)."""
    prod = x * weights
    if type(prod) is np.ndarray:
        return np.add.reduce(prod, axis)
    return array_module(prod).sum(prod, axis=axis)


weighted_sum = primitive(_weighted_sum, "weighted_sum", batched=True)


def _vjp_weighted_sum(ans: Any, x: Any, weights: Any, axis: int | None = None) -> Rule:
    kept = tuple(1 if axis is None or i == axis else n for i, n in enumerate(x.shape))
    nd = ans.ndim
    return lambda g: reshape_c(g, g.shape[: g.ndim - nd] + kept) * weights


def _jvp_weighted_sum(ans: Any, x: Any, weights: Any, axis: int | None = None) -> Rule:
    axes = tuple(range(-x.ndim, 0)) if axis is None else (axis - x.ndim if axis >= 0 else axis)
    return lambda t: sum(t * weights, axis=axes)


def _weighted_sum_rule(args: Args, batched: Sequence[bool], size: int, axis: Any = None) -> Any:
    x, weights = args[0], args[1]
    axis = args[2] if len(args) > 2 else axis
    nd = max(x.ndim - batched[0], np.ndim(weights) - batched[1])
    prod = elementwise_rule(multiply)([x, weights], batched[:2], size)
    return sum(prod, axis=shift_axes(axis, nd))


defvjp(weighted_sum, _vjp_weighted_sum, None)
defjvp(weighted_sum, _jvp_weighted_sum, None)
defbatch(weighted_sum, _weighted_sum_rule)


# --- cumsum, cumprod -------------------------------------------------------------------------
cumsum: ArrayFunction = primitive(np.cumsum, batched=True)
cumprod: ArrayFunction = primitive(np.cumprod, batched=True)


def _rev_cumsum(g: Any, axis: int) -> Any:
    return flip(cumsum(flip(g, axis), axis=axis), axis)


def _vjp_cumsum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Rule:
    shape = x.shape
    if axis is None:
        return lambda g: reshape_c(_rev_cumsum(g, -1), g.shape[: nbatch(g, ans)] + shape)
    ax = normalize_axis(axis, x.ndim) - x.ndim
    return lambda g: _rev_cumsum(g, ax)


def _jvp_cumsum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Rule:
    if axis is None:
        return lambda t: cumsum(reshape_c(t, t.shape[: nbatch(t, x)] + (x.size,)), axis=-1)
    ax = normalize_axis(axis, x.ndim) - x.ndim
    return lambda t: cumsum(t, axis=ax)


def _vjp_cumprod(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Rule:
    if axis is None:
        shape = x.shape
        inner = _vjp_cumprod(ans, reshape_c(x, (x.size,)), -1)
        return lambda g: reshape_c(inner(reshape_c(g, g.shape[: nbatch(g, ans)] + (x.size,))), g.shape[: nbatch(g, ans)] + shape)
    ax = normalize_axis(axis, x.ndim) - x.ndim
    if _no_zeros(x):  # sum_{j >= i} g_j ans_j / x_i
        return lambda g: _rev_cumsum(g * ans, ax) / x
    return lambda g: _cumprod_grad_with_zeros(g, x, ax)


def _cumprod_grad_with_zeros(g: Any, x: Any, ax: int) -> Any:
    """d cumprod with zeros in x: grad_i = L_i * S_i with L_i = prod_{k<i} x_k and
    S_i = g_i + x_{i+1} S_{i+1}, a recurrence along the axis (exact, O(n) ops)."""
    gm, xm = moveaxis(g, ax, -1), moveaxis(x, ax, -1)
    n = xm.shape[-1]
    if n == 0:  # (an empty axis: the cotangent is empty too)
        return g
    s = [gm[..., n - 1]]
    for i in range(n - 2, -1, -1):
        s.append(gm[..., i] + xm[..., i + 1] * s[-1])
    s.reverse()
    left = [array_module(value(xm)).ones(xm.shape[:-1], dtype=value(xm).dtype)]
    for i in range(1, n):
        left.append(left[-1] * xm[..., i - 1])
    parts = [lf * si for lf, si in zip(left, s)]
    if not any(type(p) is Traced for p in parts):
        return np.moveaxis(np.stack(parts, axis=-1), -1, ax)
    stacked = concatenate_args(parts[0].ndim, *[expand_dims(p, -1) for p in parts])
    return moveaxis(stacked, -1, ax)


defvjp(cumsum, _vjp_cumsum)
defjvp(cumsum, _jvp_cumsum)
_scan(cumsum, np.cumsum)
defvjp(cumprod, _vjp_cumprod)
_scan(cumprod, np.cumprod)

