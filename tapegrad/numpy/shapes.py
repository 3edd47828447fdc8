"""Shape primitives of tapegrad.numpy, each with its VJP, JVP and batching rule.

One banner per primitive: its definition, then its VJP rule, its JVP rule
and its batching rule (``vmap``). Shape rules keep shapes and ranks, never
the arrays: nothing stays alive for them, and in the facade a later in-place
change of the input is no conflict. Cotangents and tangents may carry
leading batch axes, so axes are counted from the end where they can be.
Batching rules shift each example's axes by one (the batch is axis 0).

Also here: the batching and forward rules of the engine's own
``broadcast_to`` and ``sum_to`` (``tapegrad.core.primitive``), and the few shape
functions the rules of every family use on arrays (``moveaxis``,
``swapaxes``, ``expand_dims``, ``transpose_batched``, ``swap_last``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axes, normalize_axis
from tapegrad.backend import array_module
from tapegrad.batching import BatchRule, defbatch, move_to_front, shift_axes, shift_axis
from tapegrad.core.engine_ops import broadcast_to, sum_to
from tapegrad.core.primitive import (
    defjvp,
    defjvp_argnum,
    defvjp,
    defvjp_argnum,
    primitive,
)
from tapegrad.numpy._define import batch_all, bound, nbatch, neg_axes
from tapegrad.numpy.indexing import Index, index_add
from tapegrad.typing import ArrayFunction

Args = Sequence[Any]
Rule = Callable[[Any], Any]


# --- reshape ---------------------------------------------------------------------------------
def _reshape(a: Any, shape: Any) -> Any:
    return a.reshape(shape)


reshape_c = primitive(_reshape, "reshape", batched=True)


def _vjp_reshape(ans: Any, x: Any, shape: Any) -> Rule:
    nd, xs = ans.ndim, x.shape
    return lambda g: reshape_c(g, g.shape[: g.ndim - nd] + xs)


def _reshape_rule(args: Args, batched: Sequence[bool], size: int, shape: Any = None) -> Any:
    x = args[0]
    shape = args[1] if len(args) > 1 else shape
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if -1 in shape:  # spelled out: each example's size says what it is (a batch of 0 cannot)
        known = math.prod(n for n in shape if n != -1)
        if known:
            shape = tuple(math.prod(x.shape[1:]) // known if n == -1 else n for n in shape)
    return reshape_c(x, (size,) + shape)


defvjp(reshape_c, _vjp_reshape)
defjvp(reshape_c, lambda ans, x, shape: lambda t: reshape_c(t, t.shape[: nbatch(t, x)] + ans.shape))
defbatch(reshape_c, _reshape_rule)


# --- transpose -------------------------------------------------------------------------------
def _transpose(a: Any, axes: Any = None) -> Any:
    if type(a) is np.ndarray:  # the method: np.transpose is a Python-level wrapper around it
        return a.transpose(axes)
    return array_module(a).transpose(a, axes)


transpose = primitive(_transpose, "transpose", batched=True)


def transpose_batched(g: Any, perm: tuple[int, ...], nb: int) -> Any:
    """``transpose(g, perm)`` on the trailing axes of ``g``, its ``nb`` leading axes kept."""
    if not nb:
        return transpose(g, perm)
    return transpose(g, tuple(range(nb)) + tuple(nb + i for i in perm))


def _vjp_transpose(ans: Any, x: Any, axes: Any = None) -> Rule:
    perm = tuple(range(x.ndim))[::-1] if axes is None else normalize_axes(axes, x.ndim)
    inv = tuple(sorted(range(len(perm)), key=perm.__getitem__))  # the inverse permutation
    nd = ans.ndim
    return lambda g: transpose_batched(g, inv, g.ndim - nd)


def _jvp_transpose(ans: Any, x: Any, axes: Any = None) -> Rule:
    perm = tuple(range(x.ndim))[::-1] if axes is None else normalize_axes(axes, x.ndim)
    return lambda t: transpose_batched(t, perm, nbatch(t, x))


def _transpose_rule(args: Args, batched: Sequence[bool], size: int, axes: Any = None) -> Any:
    x = args[0]
    axes = args[1] if len(args) > 1 else axes
    nd = x.ndim - 1
    axes = tuple(range(nd))[::-1] if axes is None else tuple(shift_axis(a, nd) - 1 for a in axes)
    return transpose(x, (0,) + tuple(a + 1 for a in axes))


defvjp(transpose, _vjp_transpose)
defjvp(transpose, _jvp_transpose)
defbatch(transpose, _transpose_rule)


# --- broadcast_to and sum_to (the engine's primitives: their VJPs are in tapegrad.core.primitive) ---
def _jvp_broadcast_to(ans: Any, x: Any, shape: Any) -> Rule:
    lead = len(shape) - x.ndim
    def jvp(t: Any) -> Any:
        batch = t.shape[: nbatch(t, x)]
        return broadcast_to(reshape_c(t, batch + (1,) * lead + x.shape), batch + tuple(shape))
    return jvp


def _broadcast_to_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, shape = args
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return broadcast_to(move_to_front(x, len(shape)), (size,) + shape)


def _sum_to_rule(args: Args, batched: Sequence[bool], size: int, nbatch: int = 0) -> Any:
    x, shape = args[0], args[1]
    nbatch = args[2] if len(args) > 2 else nbatch
    return sum_to(x, shape, nbatch + 1)


defjvp(broadcast_to, _jvp_broadcast_to)
defbatch(broadcast_to, _broadcast_to_rule)
defjvp(sum_to, lambda ans, x, shape, nbatch=0: lambda t: sum_to(t, shape, nbatch + t.ndim - np.ndim(x)))
defbatch(sum_to, _sum_to_rule)


# --- concatenate (the arrays as positional arguments, the axis first) ------------------------
def _concatenate(axis: int, *arrays: Any) -> Any:
    return array_module(*arrays).concatenate(arrays, axis=axis)


concatenate_args = primitive(_concatenate, "concatenate", batched=True)


def _vjp_concatenate(argnum: int, ans: Any, axis: int, *arrays: Any) -> Rule:
    start = sum(a.shape[axis] for a in arrays[: argnum - 1])
    stop = start + arrays[argnum - 1].shape[axis]
    back = axis - ans.ndim  # counted from the end: batch axes do not move it
    return lambda g: g[(Ellipsis, slice(start, stop)) + (slice(None),) * (-back - 1)]


def _jvp_concatenate(argnum: int, ans: Any, axis: int, *arrays: Any) -> Rule:
    start = sum(a.shape[axis] for a in arrays[: argnum - 1])
    stop = start + arrays[argnum - 1].shape[axis]
    widths = [(0, 0)] * ans.ndim
    widths[axis] = (start, ans.shape[axis] - stop)
    def jvp(t: Any) -> Any:
        return pad(t, [(0, 0)] * nbatch(t, arrays[argnum - 1]) + widths)
    return jvp


def _concatenate_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    axis = args[0]
    arrays = [batch_all(a, b, size) for a, b in zip(args[1:], batched[1:])]
    return concatenate_args(axis + 1, *arrays)


defvjp_argnum(concatenate_args, _vjp_concatenate)
defjvp_argnum(concatenate_args, _jvp_concatenate)
defbatch(concatenate_args, _concatenate_rule)


# --- flip ------------------------------------------------------------------------------------
flip: ArrayFunction = primitive(np.flip, batched=True)


def _vjp_flip(ans: Any, x: Any, axis: Any = None) -> Rule:
    axes = tuple(a - x.ndim for a in normalize_axes(axis, x.ndim))
    return lambda g: flip(g, axes)


def _flip_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = bound(np.flip, args, kwargs)
    kw["axis"] = shift_axes(kw.get("axis"), x.ndim - 1)
    return flip(x, **kw)


defvjp(flip, _vjp_flip)
defjvp(flip, lambda ans, x, axis=None: lambda t: flip(t, neg_axes(axis, x.ndim)))
defbatch(flip, _flip_rule)


# --- roll ------------------------------------------------------------------------------------
roll: ArrayFunction = primitive(np.roll, batched=True)


def _vjp_roll(ans: Any, x: Any, shift: Any, axis: Any = None) -> Rule:
    neg = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    if axis is None:
        shape = x.shape
        def vjp(g: Any) -> Any:
            lead = g.shape[: nbatch(g, ans)]
            return reshape_c(roll(reshape_c(g, lead + (ans.size,)), neg, -1), lead + shape)
        return vjp
    axes = tuple(a - x.ndim for a in normalize_axes(axis, x.ndim))
    return lambda g: roll(g, neg, axes if isinstance(axis, (tuple, list)) else axes[0])


def _jvp_roll(ans: Any, x: Any, shift: Any, axis: Any = None) -> Rule:
    if axis is None:
        return lambda t: reshape_c(roll(reshape_c(t, t.shape[: nbatch(t, x)] + (x.size,)), shift, -1), t.shape)
    axes = neg_axes(axis, x.ndim)
    return lambda t: roll(t, shift, axes if isinstance(axis, (tuple, list)) else axes[0])


def _flat(x: Any, size: int) -> Any:
    """Each example of batched ``x`` flattened: ``(size, n)``."""
    return reshape_c(x, (size, math.prod(x.shape[1:])))


def _roll_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = bound(np.roll, args, kwargs)
    if any(batched[1:]):
        return None  # a shift that differs per example: a loop
    if kw.get("axis") is None:  # over each flattened example
        return reshape_c(roll(_flat(x, size), kw["shift"], 1), tuple(x.shape))
    kw["axis"] = shift_axes(kw["axis"], x.ndim - 1)
    return roll(x, **kw)


defvjp(roll, _vjp_roll)
defjvp(roll, _jvp_roll)
defbatch(roll, _roll_rule)


# --- pad -------------------------------------------------------------------------------------
pad = primitive(np.pad, batched=True)


def _vjp_pad(ans: Any, x: Any, pad_width: Any, mode: str = "constant", **kw: Any) -> Rule:
    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric") and kw.get("reflect_type", "even") == "even"):
        # a gather: the transpose scatter-adds each entry of g onto its source (NumPy pads an index array)
        src = Index((np.pad(np.arange(x.size).reshape(x.shape), pad_width, mode=mode).ravel(),), 1)
        nd = ans.ndim

        def vjp(g: Any) -> Any:
            lead = tuple(g.shape[: g.ndim - nd])
            flat = index_add(reshape_c(g, lead + (ans.size,)), src, (x.size,), len(lead))
            return reshape_c(flat, lead + tuple(x.shape))

        return vjp
    if mode not in ("constant", "empty"):
        raise NotImplementedError(f"VJP of the primitive `pad` with mode={mode!r} is not defined: tnp.pad derives it")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))
    key = (Ellipsis,) + tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))
    return lambda g: g[key]


def _jvp_pad(ans: Any, x: Any, pad_width: Any, mode: Any = "constant", **kw: Any) -> Rule:
    # every mode but maximum / minimum / median (and a function) is linear in x, less
    # constant_values / end_values: the tangent padded the same way, with those zero
    if callable(mode) or mode in ("maximum", "minimum", "median"):
        raise NotImplementedError(f"JVP of the primitive `pad` with mode={mode!r} is not defined: tnp.pad derives it")
    widths = [tuple(p) for p in np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))]
    mode = "constant" if mode == "empty" else mode
    kw = {k: val for k, val in kw.items() if k not in ("constant_values", "end_values")}

    def jvp(t: Any) -> Any:
        nb = nbatch(t, x)
        extra = dict(kw)
        if np.ndim(extra.get("stat_length")):  # per axis: one pair more for each batch axis
            pairs = np.broadcast_to(np.asarray(extra["stat_length"]), (x.ndim, 2)).tolist()
            extra["stat_length"] = [(1, 1)] * nb + pairs
        return pad(t, [(0, 0)] * nb + widths, mode=mode, **extra)

    return jvp


_PER_AXIS = ("constant_values", "end_values", "stat_length")  # pad's (before, after) per axis


def _pad_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = bound(np.pad, args, kwargs)
    if any(batched[1:]):
        return None
    nd = x.ndim - 1
    kw["pad_width"] = _per_axis(kw["pad_width"], nd, 0)
    for name in _PER_AXIS:
        if name in kw and np.ndim(kw[name]):  # (a scalar is the same for every axis)
            kw[name] = _per_axis(kw[name], nd, 1 if name == "stat_length" else 0)
    return pad(x, **kw)


def _per_axis(spec: Any, nd: int, fill: Any) -> Any:
    """pad's ``((before, after),) * nd`` form of ``spec``, a pair ``(fill, fill)``
    first for the batch axis."""
    pairs = np.broadcast_to(np.asarray(spec), (nd, 2))
    return np.concatenate([np.full((1, 2), fill, dtype=pairs.dtype), pairs]).tolist()


defvjp(pad, _vjp_pad)
defjvp(pad, _jvp_pad)
defbatch(pad, _pad_rule)


# --- triu, tril --------------------------------------------------------------------------------
triu: ArrayFunction = primitive(np.triu, batched=True)
tril: ArrayFunction = primitive(np.tril, batched=True)


def _tri_rule(fn: Callable[..., Any]) -> BatchRule:
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = bound(np.triu, args, kwargs)
        if x.ndim < 2:
            return None  # (a 0-d example: NumPy's error, from the loop)
        if x.ndim == 2:  # a vector is the rows of a square matrix
            n = x.shape[1]
            x = broadcast_to(reshape_c(x, (size, 1, n)), (size, n, n))
        return fn(x, **kw)  # (the last two axes: each example's)

    return rule


defvjp(triu, lambda ans, x, k=0: lambda g: triu(g, k))
defjvp(triu, lambda ans, x, k=0: lambda t: triu(t, k))
defbatch(triu, _tri_rule(triu))
defvjp(tril, lambda ans, x, k=0: lambda g: tril(g, k))
defjvp(tril, lambda ans, x, k=0: lambda t: tril(t, k))
defbatch(tril, _tri_rule(tril))


# --- diagonal, diag (a vector on a diagonal) and diag_embed (its transpose) ------------------
diagonal: ArrayFunction = primitive(np.diagonal, batched=True)


def _diag_from_vector(v: Any, k: int = 0) -> Any:
    return array_module(v).diag(v, k)


diag_from_vector = primitive(_diag_from_vector, "diag", batched=True)


def _diag_embed(g: Any, offset: int, axis1: int, axis2: int, shape: tuple[int, ...]) -> Any:
    """Zeros of ``batch + shape`` with ``g`` written on the given diagonal."""
    xp = array_module(g)
    nb = g.ndim - (len(shape) - 1)
    out = xp.zeros(g.shape[:nb] + tuple(shape), dtype=g.dtype)
    view = xp.moveaxis(out, (axis1, axis2), (-2, -1))
    n = g.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    view[..., rows, cols] = g
    return out


diag_embed = primitive(_diag_embed, "diag_embed", batched=True)


def _vjp_diagonal(ans: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Rule:
    a1 = normalize_axis(axis1, x.ndim) - x.ndim
    a2 = normalize_axis(axis2, x.ndim) - x.ndim
    return lambda g: diag_embed(g, offset, a1, a2, x.shape)


def _diagonal_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = bound(np.diagonal, args, kwargs)
    nd = x.ndim - 1
    kw["axis1"] = shift_axis(kw.get("axis1", 0), nd)
    kw["axis2"] = shift_axis(kw.get("axis2", 1), nd)
    return diagonal(x, **kw)  # (the diagonal last, the batch first: as each example's)


def _diag_rule(args: Args, batched: Sequence[bool], size: int, k: int = 0) -> Any:
    v = args[0]
    k = args[1] if len(args) > 1 else k
    if v.ndim == 3:  # (a matrix: its diagonal, as np.diag's)
        return diagonal(v, k, 1, 2)
    if v.ndim != 2:
        return None  # (NumPy's error, from the loop)
    n = v.shape[1] + abs(k)
    return diag_embed(v, k, -2, -1, (n, n))


def _diag_embed_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    g, offset, a1, a2, shape = args
    # axes >= 0 count the leading batch axes of g: one more now
    return diag_embed(g, offset, a1 + (a1 >= 0), a2 + (a2 >= 0), shape)


defvjp(diagonal, _vjp_diagonal)
defjvp(diagonal, lambda ans, x, offset=0, axis1=0, axis2=1: lambda t: diagonal(
    t, offset, normalize_axis(axis1, x.ndim) - x.ndim, normalize_axis(axis2, x.ndim) - x.ndim))
defbatch(diagonal, _diagonal_rule)
defvjp(diag_from_vector, lambda ans, v, k=0: lambda g: diagonal(g, k, -2, -1))
defjvp(diag_from_vector, lambda ans, vec, k=0: lambda t: diag_embed(t, k, -2, -1, ans.shape))
defbatch(diag_from_vector, _diag_rule)
defvjp(diag_embed, lambda ans, g0, offset, a1, a2, shape: lambda g: diagonal(g, offset, a1, a2))
defjvp(diag_embed, lambda ans, g, offset, a1, a2, shape: lambda t: diag_embed(t, offset, a1, a2, shape))
defbatch(diag_embed, _diag_embed_rule)


# --- shape functions the rules use on arrays (tapegrad.numpy's take array-likes too) ---------
def expand_dims(a: Any, axis: Any) -> Any:
    """``np.expand_dims`` of an array or traced value: one ``reshape``."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    axes = sorted(normalize_axis(x, nd) for x in axes)
    shape = list(a.shape)
    for x in axes:
        shape.insert(x, 1)
    return reshape_c(a, tuple(shape))


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """``np.moveaxis`` of an array or traced value: one ``transpose``."""
    src = normalize_axes(source, a.ndim)
    dst = normalize_axes(destination, a.ndim)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """``np.swapaxes`` of an array or traced value: one ``transpose``."""
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, tuple(perm))


def swap_last(a: Any) -> Any:
    """``a`` with its last two axes swapped (leading batch axes kept)."""
    return transpose(a) if a.ndim == 2 else swapaxes(a, -1, -2)


