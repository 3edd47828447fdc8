"""VJP rules of tapegrad.numpy: one line per primitive where a line fits.

Rules are staged, ``lambda ans, *args, **kwargs: lambda g: ...``: the outer
call runs when the op is recorded (what it closes over is what the tape
keeps); the inner one runs in the backward pass. Rules are written with
tapegrad's own functions, so a backward pass recorded on an outer tape is
differentiable again. ``g`` may carry leading batch axes; rules return
cotangents in (a broadcast of) the argument's shape with the same leading
axes, and the engine sums them back and casts them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w
from tapegrad.numpy.wrap import Index
from tapegrad.primitive import defvjp, defvjp_argnum
from tapegrad.tracer import Traced, value

Vjp = Callable[[Any], Any]


def _nb(g: Any, ans: Any) -> int:
    """Number of leading batch axes of cotangent ``g`` for an output ``ans``."""
    return g.ndim - ans.ndim


def _kept_shape(shape: tuple[int, ...], axis: Any) -> tuple[int, ...]:
    """``shape`` with the axes a reduction over ``axis`` removes kept as size 1."""
    axes = d.normalize_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _unreduce(g: Any, nd: int, kept: tuple[int, ...]) -> Any:
    """A reduction's cotangent ``g`` (batch + an ``nd``-dim result) reshaped to
    batch + ``kept``: it broadcasts against the reduced argument."""
    return w.reshape_c(g, g.shape[: g.ndim - nd] + kept)


def _bcast(g: Any, nd: int, kept: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """A reduction's cotangent broadcast back over the reduced axes: batch + ``shape``."""
    nb = g.ndim - nd
    lead = g.shape[:nb]
    if nd != len(kept) and (nd or nb):  # put the reduced axes back as size 1 (not needed
        g = w.reshape_c(g, lead + kept)  # with keepdims, nor for a full reduction's scalar)
    return w.broadcast_to(g, lead + shape)


def _kept(ans: Any, shape: tuple[int, ...], axis: Any) -> Any:
    """``ans`` of a reduction reshaped with the reduced axes kept as size 1."""
    return w.reshape_c(ans, _kept_shape(shape, axis))


# --- reductions and scans ----------------------------------------------------------------------


def _vjp_sum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Vjp:
    shape, nd = x.shape, ans.ndim
    kept = _kept_shape(shape, axis)
    return lambda g: _bcast(g, nd, kept, shape)


def _vjp_chooser(ans: Any, x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Vjp:
    """max / min: the cotangent goes to the winners, split evenly among ties."""
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    hit = value(x) == value(ans).reshape(kept)
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return lambda g: _unreduce(g, nd, kept) * share


def _prod_of_others(x: Any, axis: Any) -> Any:
    """For each entry, the product of the *other* entries along ``axis``:
    exclusive cumulative products from both ends, exact when x holds zeros."""
    shape = x.shape
    axes = d.normalize_axes(axis, len(shape))
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    perm = rest + axes
    xt = d.reshape(w.transpose(x, perm), tuple(shape[i] for i in rest) + (-1,))
    ones = np.ones(xt.shape[:-1] + (1,), dtype=value(x).dtype)
    left = w.cumprod(w.concatenate_args(xt.ndim - 1, ones, xt[..., :-1]), axis=-1)
    right = w.flip(w.cumprod(w.concatenate_args(xt.ndim - 1, ones, w.flip(xt, -1)[..., :-1]), axis=-1), -1)
    others = d.reshape(left * right, tuple(shape[i] for i in perm))
    return w.transpose(others, tuple(np.argsort(perm)))


def _no_zeros(x: Any) -> bool:
    """Does ``x`` hold no zero? Only asked of plain values: a batched (vmap) or
    traced (jit) ``x`` takes the rule that is exact with zeros too, which needs
    no decision on its values."""
    v = value(x)
    return type(v) is not Traced and bool(np.all(v != 0))


def _vjp_prod(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Vjp:
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    if _no_zeros(x):
        return lambda g: _unreduce(g, nd, kept) * (w.reshape_c(ans, kept) / x)
    return lambda g: _unreduce(g, nd, kept) * _prod_of_others(x, axis)


def _vjp_cumsum(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Vjp:
    shape = x.shape
    if axis is None:
        return lambda g: d.reshape(_rev_cumsum(g, -1), g.shape[: _nb(g, ans)] + shape)
    ax = d.normalize_axis(axis, x.ndim) - x.ndim
    return lambda g: _rev_cumsum(g, ax)


def _rev_cumsum(g: Any, axis: int) -> Any:
    return w.flip(w.cumsum(w.flip(g, axis), axis=axis), axis)


def _vjp_cumprod(ans: Any, x: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Vjp:
    if axis is None:
        shape = x.shape
        inner = _vjp_cumprod(ans, d.ravel(x), -1)
        return lambda g: d.reshape(inner(d.reshape(g, g.shape[: _nb(g, ans)] + (-1,))), g.shape[: _nb(g, ans)] + shape)
    ax = d.normalize_axis(axis, x.ndim) - x.ndim
    if _no_zeros(x):  # sum_{j >= i} g_j ans_j / x_i
        return lambda g: _rev_cumsum(g * ans, ax) / x
    return lambda g: _cumprod_grad_with_zeros(g, x, ax)


def _cumprod_grad_with_zeros(g: Any, x: Any, ax: int) -> Any:
    """d cumprod with zeros in x: grad_i = L_i * S_i with L_i = prod_{k<i} x_k and
    S_i = g_i + x_{i+1} S_{i+1}, a recurrence along the axis (exact, O(n) ops)."""
    gm, xm = d.moveaxis(g, ax, -1), d.moveaxis(x, ax, -1)
    n = xm.shape[-1]
    s = [gm[..., n - 1]]
    for i in range(n - 2, -1, -1):
        s.append(gm[..., i] + xm[..., i + 1] * s[-1])
    s.reverse()
    left = [np.ones(xm.shape[:-1], dtype=value(xm).dtype)]
    for i in range(1, n):
        left.append(left[-1] * xm[..., i - 1])
    return d.moveaxis(d.stack([lf * si for lf, si in zip(left, s)], axis=-1), -1, ax)


def _vjp_logsumexp(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Vjp:
    nd, kept = ans.ndim, _kept_shape(x.shape, axis)
    return lambda g: _unreduce(g, nd, kept) * w.exp(x - w.reshape_c(ans, kept))


def _vjp_mean(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Vjp:
    shape, nd, n = x.shape, ans.ndim, w.reduction_size(x.shape, axis)
    kept = _kept_shape(shape, axis)

    def vjp(g: Any) -> Any:
        lead = g.shape[: g.ndim - nd]
        return w.broadcast_to(w.reshape_c(g / n, lead + kept), lead + shape)

    return vjp


defvjp(w.sum, _vjp_sum)
defvjp(w.mean, _vjp_mean)
defvjp(w.prod, _vjp_prod)
defvjp(w.amax, _vjp_chooser)
defvjp(w.amin, _vjp_chooser)
defvjp(w.cumsum, _vjp_cumsum)
defvjp(w.cumprod, _vjp_cumprod)
defvjp(w.logsumexp, _vjp_logsumexp)

# --- shape ------------------------------------------------------------------------------------
# (shape and indexing rules keep shapes and ranks, never the arrays: nothing
# stays alive for them, and in the facade a later in-place change of the
# input is no conflict)


# --- indexing ---------------------------------------------------------------------------------
def _vjp_getitem(ans: Any, x: Any, idx: Index, nb: int = 0) -> Vjp:
    nd, xs = ans.ndim, x.shape[nb:]
    return lambda g: w.index_add(g, idx, xs, g.ndim - nd + nb)


def _vjp_index_add(ans: Any, g0: Any, idx: Index, shape: Any, nb: int) -> Vjp:
    nd = ans.ndim
    return lambda g: w.getitem(g, idx, g.ndim - nd + nb)


defvjp(w.getitem, _vjp_getitem)
defvjp(w.index_add, _vjp_index_add)


def _vjp_setitem_x(ans: Any, x: Any, idx: Index, v: Any) -> Vjp:
    keep = np.ones(x.shape, dtype=bool)
    if idx.traced:  # (positions a jit trace computed: it records the mask)
        keep = w.setitem(keep, idx, False)
    else:
        keep[idx.key] = False
    return lambda g: g * keep


def _vjp_setitem_v(ans: Any, x: Any, idx: Index, v: Any) -> Vjp:
    nd, vshape = ans.ndim, np.shape(v)

    def vjp(g: Any) -> Any:
        nb = g.ndim - nd
        s = w.getitem(g, idx, nb)
        extra = len(vshape) - (s.ndim - nb)
        if extra > 0:  # v had leading ones NumPy dropped when it assigned (v (1, 4) into (4,))
            s = w.reshape_c(s, tuple(s.shape[:nb]) + (1,) * extra + tuple(s.shape[nb:]))
        return s

    return vjp


defvjp(w.setitem, _vjp_setitem_x, None, _vjp_setitem_v)

# --- products ---------------------------------------------------------------------------------


def _vjp_matmul_a(ans: Any, a: Any, b: Any, **kw: Any) -> Vjp:
    if b.ndim == 1:
        return lambda g: d.expand_dims(g, -1) * b
    if a.ndim == 1:
        if b.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: w.matmul(g, w.transpose(b))
        return lambda g: w.matmul(d.expand_dims(g, -2), d.swapaxes(b, -1, -2))[..., 0, :]
    swap = _swap_last(b.ndim)
    if _column_major(a):  # a (a transposed view) gets its cotangent as one too: (b g^T)^T
        return lambda g: w.transpose(w.matmul(b, w.transpose(g))) if g.ndim == 2 else w.matmul(g, w.transpose(b, swap))
    return lambda g: w.matmul(g, w.transpose(b, swap))


def _column_major(x: Any) -> bool:
    """Is ``x`` a column-major matrix (typically ``W.T``)? Its cotangent is then
    made column-major too, at no cost: its transpose is the row-major gradient
    of ``W``, which the update that follows reads fastest."""
    flags = getattr(value(x), "flags", None)  # (a batched value (vmap) has no layout of its own)
    return flags is not None and x.ndim == 2 and not flags.c_contiguous and flags.f_contiguous


def _swap_last(nd: int) -> tuple[int, ...]:
    """The permutation that swaps the last two of ``nd`` axes (a matrix transpose)."""
    return tuple(range(nd - 2)) + (nd - 1, nd - 2)


def _vjp_matmul_b(ans: Any, a: Any, b: Any, **kw: Any) -> Vjp:
    if a.ndim == 1:
        if b.ndim == 1:
            return lambda g: d.expand_dims(g, -1) * a
        return lambda g: d.expand_dims(a, -1) * d.expand_dims(g, -2)
    if b.ndim == 1:
        if a.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: w.matmul(g, a)
        return lambda g: w.matmul(d.expand_dims(g, -2), a)[..., 0, :]
    swap = _swap_last(a.ndim)
    if _column_major(b):  # (g^T a)^T: see _column_major
        return lambda g: w.transpose(w.matmul(w.transpose(g), a)) if g.ndim == 2 else w.matmul(w.transpose(a, swap), g)
    return lambda g: w.matmul(w.transpose(a, swap), g)


defvjp(w.matmul, _vjp_matmul_a, _vjp_matmul_b)


def swap_last(a: Any) -> Any:
    """``a`` with its last two axes swapped (leading batch axes kept)."""
    return w.transpose(a) if a.ndim == 2 else d.swapaxes(a, -1, -2)


defvjp(w.linear,     lambda ans, x, wt, b: lambda g: w.matmul(g, wt),
                     lambda ans, x, wt, b: lambda g: w.matmul(swap_last(g), x),
                     lambda ans, x, wt, b: lambda g: w.sum(g, axis=-2))


def _vjp_weighted_sum(ans: Any, x: Any, weights: Any, axis: int | None = None) -> Vjp:
    kept = tuple(1 if axis is None or i == axis else n for i, n in enumerate(x.shape))
    nd = ans.ndim
    return lambda g: w.reshape_c(g, g.shape[: g.ndim - nd] + kept) * weights


defvjp(w.weighted_sum, _vjp_weighted_sum, None)


def _einsum_letters(subscripts: str, operands: tuple[Any, ...]) -> tuple[list[str], str]:
    """Explicit per-operand subscripts and output, with ``...`` spelled out."""
    used = set(subscripts) - set("-> .,")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    lhs, _, rhs = subscripts.replace(" ", "").partition("->")
    ins = lhs.split(",")
    ell_nd = max((np.ndim(o) - (len(s) - 3) for s, o in zip(ins, operands) if "..." in s), default=0)
    ell = "".join(spare[:ell_nd])
    ins = [s.replace("...", ell[len(ell) - (np.ndim(o) - (len(s) - 3)):] if np.ndim(o) - (len(s) - 3) else "")
           if "..." in s else s for s, o in zip(ins, operands)]
    if "->" not in subscripts:
        counts = {c: "".join(ins).count(c) for c in set("".join(ins))}
        rhs = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return ins, rhs


def _vjp_einsum(argnum: int, ans: Any, subscripts: str, *operands: Any, **kw: Any) -> Vjp:
    ins, out = _einsum_letters(subscripts, operands)
    i = argnum - 1
    target = ins[i]
    others = [(s, o) for j, (s, o) in enumerate(zip(ins, operands)) if j != i]
    avail = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    used = set("".join(ins)) | set(out)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    x = operands[i]
    extra: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    result = ""
    for pos, c in enumerate(target):
        n = x.shape[pos]
        if c in seen:  # a repeated index: the cotangent lives on a diagonal
            fresh = spare.pop()
            extra.append((c + fresh, np.eye(n, dtype=value(x).dtype)))
            result += fresh
            continue
        seen[c] = pos
        if c not in avail:  # summed over this operand alone: broadcast back
            extra.append((c, np.ones(n, dtype=value(x).dtype)))
        result += c

    def vjp(g: Any) -> Any:
        batch = "".join(spare[-1 - k] for k in range(_nb(g, ans)))[::-1] if _nb(g, ans) else ""
        subs = ",".join([batch + out] + [s for s, _ in others] + [s for s, _ in extra]) + "->" + batch + result
        return w.einsum_args(subs, g, *[o for _, o in others], *[o for _, o in extra], **kw)

    return vjp


defvjp_argnum(w.einsum_args, _vjp_einsum)
