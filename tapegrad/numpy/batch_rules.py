"""Batching rules of tapegrad.numpy's primitives (see :mod:`tapegrad.batching`).

Each rule takes the primitive's arguments with every batched one as its
array, batch on axis 0, and runs the whole batch in one call of primitives
(so tapes below the vmap level record it): elementwise primitives broadcast,
reductions and shape primitives shift their axes by one, products get the
batch as a leading stack axis, and the primitives that already take leading
batch axes (``getitem``, ``index_add``, ``sum_to``) are told one more.
"""

from __future__ import annotations

import inspect
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.batching import (
    BatchRule,
    defbatch,
    elementwise_rule,
    move_to_front,
    shift_axes,
    shift_axis,
)
from tapegrad.numpy import wrap as w
from tapegrad.primitive import broadcast_to, sum_to

Args = Sequence[Any]


def _bound(fn: Callable[..., Any], args: Args, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The first argument and the rest as keywords (positional ones named)."""
    names = list(inspect.signature(fn).parameters)
    kw = dict(kwargs)
    for name, a in zip(names[1:], args[1:]):
        kw[name] = a
    return args[0], kw


def batch_all(x: Any, batched: bool, size: int) -> Any:
    """``x`` with a batch axis (broadcast along it when ``x`` is not batched)."""
    if batched:
        return x
    return broadcast_to(x, (size,) + tuple(np.shape(x)))


# --- elementwise -----------------------------------------------------------------------------
_ELEMENTWISE = """negative positive absolute sqrt cbrt square exp exp2 expm1 log log2 log10 log1p
sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh reciprocal deg2rad rad2deg
conjugate real imag sinc add subtract multiply divide power arctan2 maximum minimum fmax fmin hypot
logaddexp logaddexp2 remainder fmod clip where3 copy cast_to astype_float""".split()

for _name in _ELEMENTWISE:
    _fn = getattr(w, _name, None)
    if _fn is None:
        from tapegrad import primitive as _p

        _fn = getattr(_p, _name)
    defbatch(_fn, elementwise_rule(_fn))


# --- reductions and scans along ``axis`` -----------------------------------------------------
def _reduction(fn: Callable[..., Any], impl: Callable[..., Any]) -> None:
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = _bound(impl, args, kwargs)
        kw["axis"] = shift_axes(kw.get("axis"), x.ndim - 1)
        return fn(x, **kw)

    defbatch(fn, rule)


for _fn, _impl in [(w.sum, w._sum), (w.mean, w._mean), (w.prod, np.prod), (w.amax, np.amax),
                   (w.amin, np.amin), (w.logsumexp, w._logsumexp)]:
    _reduction(_fn, _impl)


def _scan(fn: Callable[..., Any], impl: Callable[..., Any]) -> None:
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = _bound(impl, args, kwargs)
        if kw.get("axis") is None:  # over the flattened example
            x = w.reshape_c(x, (size, -1))
            kw["axis"] = 1
        else:
            kw["axis"] = shift_axis(kw["axis"], x.ndim - 1)
        return fn(x, **kw)

    defbatch(fn, rule)


_scan(w.cumsum, np.cumsum)
_scan(w.cumprod, np.cumprod)


# --- shape ---------------------------------------------------------------------------------
def _reshape_rule(args: Args, batched: Sequence[bool], size: int, shape: Any = None) -> Any:
    x = args[0]
    shape = args[1] if len(args) > 1 else shape
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return w.reshape_c(x, (size,) + shape)


defbatch(w.reshape_c, _reshape_rule)


def _transpose_rule(args: Args, batched: Sequence[bool], size: int, axes: Any = None) -> Any:
    x = args[0]
    axes = args[1] if len(args) > 1 else axes
    nd = x.ndim - 1
    axes = tuple(range(nd))[::-1] if axes is None else tuple(shift_axis(a, nd) - 1 for a in axes)
    return w.transpose(x, (0,) + tuple(a + 1 for a in axes))


defbatch(w.transpose, _transpose_rule)


def _broadcast_to_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, shape = args
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return broadcast_to(move_to_front(x, len(shape)), (size,) + shape)


defbatch(broadcast_to, _broadcast_to_rule)


def _sum_to_rule(args: Args, batched: Sequence[bool], size: int, nbatch: int = 0) -> Any:
    x, shape = args[0], args[1]
    nbatch = args[2] if len(args) > 2 else nbatch
    return sum_to(x, shape, nbatch + 1)


defbatch(sum_to, _sum_to_rule)


def _concatenate_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    axis = args[0]
    arrays = [batch_all(a, b, size) for a, b in zip(args[1:], batched[1:])]
    return w.concatenate_args(axis + 1, *arrays)


defbatch(w.concatenate_args, _concatenate_rule)


def _flip_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = _bound(np.flip, args, kwargs)
    kw["axis"] = shift_axes(kw.get("axis"), x.ndim - 1)
    return w.flip(x, **kw)


def _flat(x: Any, size: int) -> Any:
    """Each example of batched ``x`` flattened: ``(size, -1)``."""
    return w.reshape_c(x, (size, -1))


def _roll_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = _bound(np.roll, args, kwargs)
    if any(batched[1:]):
        return None  # a shift that differs per example: a loop
    if kw.get("axis") is None:  # over each flattened example
        return w.reshape_c(w.roll(_flat(x, size), kw["shift"], 1), tuple(x.shape))
    kw["axis"] = shift_axes(kw["axis"], x.ndim - 1)
    return w.roll(x, **kw)


_PER_AXIS = ("constant_values", "end_values", "stat_length")  # pad's (before, after) per axis


def _pad_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = _bound(np.pad, args, kwargs)
    if any(batched[1:]):
        return None
    nd = x.ndim - 1
    kw["pad_width"] = _per_axis(kw["pad_width"], nd, 0)
    for name in _PER_AXIS:
        if name in kw and np.ndim(kw[name]):  # (a scalar is the same for every axis)
            kw[name] = _per_axis(kw[name], nd, 1 if name == "stat_length" else 0)
    return w.pad(x, **kw)


def _per_axis(spec: Any, nd: int, fill: Any) -> Any:
    """pad's ``((before, after),) * nd`` form of ``spec``, a pair ``(fill, fill)``
    first for the batch axis."""
    pairs = np.broadcast_to(np.asarray(spec), (nd, 2))
    return np.concatenate([np.full((1, 2), fill, dtype=pairs.dtype), pairs]).tolist()


def _tri_rule(fn: Callable[..., Any]) -> BatchRule:
    def rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        x, kw = _bound(np.triu, args, kwargs)
        if x.ndim < 2:
            return None  # (a 0-d example: NumPy's error, from the loop)
        if x.ndim == 2:  # a vector is the rows of a square matrix
            n = x.shape[1]
            x = broadcast_to(w.reshape_c(x, (size, 1, n)), (size, n, n))
        return fn(x, **kw)  # (the last two axes: each example's)

    return rule


def _diagonal_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    x, kw = _bound(np.diagonal, args, kwargs)
    nd = x.ndim - 1
    kw["axis1"] = shift_axis(kw.get("axis1", 0), nd)
    kw["axis2"] = shift_axis(kw.get("axis2", 1), nd)
    return w.diagonal(x, **kw)  # (the diagonal last, the batch first: as each example's)


def _diag_rule(args: Args, batched: Sequence[bool], size: int, k: int = 0) -> Any:
    v = args[0]
    k = args[1] if len(args) > 1 else k
    if v.ndim == 3:  # (a matrix: its diagonal, as np.diag's)
        return w.diagonal(v, k, 1, 2)
    if v.ndim != 2:
        return None  # (NumPy's error, from the loop)
    n = v.shape[1] + abs(k)
    return w.diag_embed(v, k, -2, -1, (n, n))


def _diag_embed_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    g, offset, a1, a2, shape = args
    # axes >= 0 count the leading batch axes of g: one more now
    return w.diag_embed(g, offset, a1 + (a1 >= 0), a2 + (a2 >= 0), shape)


defbatch(w.flip, _flip_rule)
defbatch(w.roll, _roll_rule)
defbatch(w.pad, _pad_rule)
defbatch(w.triu, _tri_rule(w.triu))
defbatch(w.tril, _tri_rule(w.tril))
defbatch(w.diagonal, _diagonal_rule)
defbatch(w.diag_from_vector, _diag_rule)
defbatch(w.diag_embed, _diag_embed_rule)


# --- indexing: the primitives take leading batch axes already ------------------------------
def _getitem_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    x, index = args[0], args[1]
    nb = args[2] if len(args) > 2 else nb
    if _index_batched(index):
        return None
    return w.getitem(x, index, nb + 1)


def _index_batched(index: Any) -> bool:
    from tapegrad.batching import is_batched

    return any(is_batched(k) for k in index.key)


def _index_add_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    g, index, shape = args[0], args[1], args[2]
    nb = args[3] if len(args) > 3 else nb
    if _index_batched(index):
        return None
    return w.index_add(g, index, shape, nb + 1)


defbatch(w.getitem, _getitem_rule)
defbatch(w.index_add, _index_add_rule)


# --- products ------------------------------------------------------------------------------
def _matmul_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """Vectors made matrices, the batch as the leading stack axis, one matmul."""
    a, b = args
    ba, bb = batched
    ka = a.ndim - ba
    kb = b.ndim - bb
    if ka == 0 or kb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ka == 1:
        a = w.reshape_c(a, tuple(a.shape[:-1]) + (1, a.shape[-1]))
    if kb == 1:
        b = w.reshape_c(b, tuple(b.shape) + (1,))
    r = max(max(ka, 2), max(kb, 2)) - 2  # stack rank of the per-example product
    if ba:
        a = move_to_front(a, r + 2)
    if bb:
        b = move_to_front(b, r + 2)
    out = w.matmul(a, b, **kwargs)
    if ka == 1 and kb == 1:
        return w.reshape_c(out, (size,) + tuple(out.shape[1:-2]))
    if ka == 1:
        return w.reshape_c(out, tuple(out.shape[:-2]) + (out.shape[-1],))
    if kb == 1:
        return w.reshape_c(out, tuple(out.shape[:-1]))
    return out


defbatch(w.matmul, _matmul_rule)


def _linear_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, wt, b = args
    if not (batched[1] or batched[2]):
        return w.linear(x, wt, b)  # x @ w.T + b takes any leading axes of x
    # stacked weights (an ensemble): the product and the sum, each batched
    wt_t = _transpose_rule([wt], [True], size) if batched[1] else w.transpose(wt)
    out = _matmul_rule([x, wt_t], [batched[0], batched[1]], size)
    return elementwise_rule(w.add)([out, b], [True, batched[2]], size)


defbatch(w.linear, _linear_rule)


def _weighted_sum_rule(args: Args, batched: Sequence[bool], size: int, axis: Any = None) -> Any:
    x, weights = args[0], args[1]
    axis = args[2] if len(args) > 2 else axis
    nd = max(x.ndim - batched[0], np.ndim(weights) - batched[1])
    prod = elementwise_rule(w.multiply)([x, weights], batched[:2], size)
    return w.sum(prod, axis=shift_axes(axis, nd))


defbatch(w.weighted_sum, _weighted_sum_rule)


def _einsum_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """A new label for the batch, on the batched operands and the output."""
    spec = args[0].replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if not arrow:  # the implicit output: labels used once, sorted, after the ellipsis
        labels = [c for c in ins if c.isalpha()]
        out = ("..." if "..." in ins else "") + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    free = [c for c in string.ascii_letters if c not in spec]
    label = free[0]
    terms = [label + t if b else t for t, b in zip(terms, batched[1:])]
    return w.einsum_args(",".join(terms) + "->" + label + out, *args[1:], **kwargs)


defbatch(w.einsum_args, _einsum_rule)

