"""Batching rules of tapegrad.numpy's primitives (see ``tapegrad.batching``).

Each rule takes the primitive's arguments with every batched one as its
array, batch on axis 0, and runs the whole batch in one call of primitives
(so tapes below the vmap level record it): elementwise primitives broadcast,
reductions and shape primitives shift their axes by one, products get the
batch as a leading stack axis, and the primitives that already take leading
batch axes (``getitem``, ``index_add``, ``sum_to``) are told one more. An
index computed per example (``logp[y]``, ``x[idx]``, ``x[mask]``) gets the
batch as one more integer array, an arange over it: one gather or scatter.
No rule loops over the batch; a rule returns None (the generic loop) only
where each example's result has a shape of its own to find (a 0-d boolean
index, a boolean mask batched on two vmap levels) or for a ``roll`` whose
shift differs per example.
"""

from __future__ import annotations

import inspect
import string
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad import batching
from tapegrad.batching import (
    defbatch,
    elementwise_rule,
    move_to_front,
    shift_axis,
)
from tapegrad.numpy import wrap as w
from tapegrad.numpy.wrap import Index
from tapegrad.primitive import broadcast_to
from tapegrad.tracer import Traced

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


# --- reductions and scans along ``axis`` -----------------------------------------------------


# --- shape ---------------------------------------------------------------------------------


def _transpose_rule(args: Args, batched: Sequence[bool], size: int, axes: Any = None) -> Any:
    x = args[0]
    axes = args[1] if len(args) > 1 else axes
    nd = x.ndim - 1
    axes = tuple(range(nd))[::-1] if axes is None else tuple(shift_axis(a, nd) - 1 for a in axes)
    return w.transpose(x, (0,) + tuple(a + 1 for a in axes))


# --- indexing ------------------------------------------------------------------------------
# A plain index: getitem and index_add take leading batch axes already (they are told one
# more); setitem gets the batch as a leading slice, or as one more integer array beside the
# index's own. Entries batched on this level (a per-example label ``logp[y]``, per-example
# positions ``x[idx]``, masks): the batch becomes an integer array too, an arange over it,
# broadcast against the entries' arrays (batch first): ONE gather or scatter for the batch.


def _levels(x: Any) -> set[int]:
    """The levels (tape ids) ``x`` lives on: its own, its value's, and so on down."""
    have = set()
    while type(x) is Traced:
        t = x._tape
        have.add(id(t))
        x = x._node if getattr(t, "batching", False) else x._value
    return have


def _own_entries(index: Index, arrays: Args) -> list[int]:
    """Positions of ``index``'s entries batched on the level whose rule runs.

    The indexing front-ends lift the indexed array to every level of the
    index (``wrap.lift``), so entries of the levels below this one are on
    the levels of the rule's arguments (all below it); this level's are not."""
    if not index.traces:
        return []
    have: set[int] = set()
    for a in arrays:
        have |= _levels(a)
    return [i for i, k in enumerate(index.key) if type(k) is Traced and id(k._tape) not in have]


class _Plan(NamedTuple):
    key: tuple[Any, ...]  # indexes an array of shape (size,) + per-example shape
    perm: tuple[int, ...] | None  # NumPy's layout of the result -> (size,) + per-example layout
    shape: tuple[int, ...]  # the per-example result


def _is_bool(k: Any) -> bool:
    return isinstance(k, (bool, np.bool_)) or (hasattr(k, "dtype") and k.dtype == bool)


def _plan(key: tuple[Any, ...], own: Sequence[int], xshape: tuple[int, ...], size: int) -> _Plan | None:
    """How one NumPy index on the batch does what ``key`` does to each example.

    ``own`` are the positions of ``key``'s entries batched on this level.
    NumPy puts the broadcast shape of the advanced entries (integers and
    integer arrays) where the first of them is when they are adjacent, else
    first; with an arange over the batch as the first advanced entry the
    result is ``(size,) + broadcast + basic dims`` either way, and ``perm``
    moves the broadcast dims after the leading basic ones where each example
    has them there. None: no such index (a 0-d boolean, a mask batched on
    another level too); a mask batched here must select equally many
    entries in each example."""
    entries: list[tuple[Any, bool]] = []
    for i, k in enumerate(key):
        b = i in own
        if b:
            k = k._node
        if not _is_bool(k):
            entries.append((k, b))
            continue
        if np.ndim(k) - b == 0 or type(k) is Traced:
            return None
        nz = np.nonzero(k)  # a mask is its nonzero() arrays
        if not b:
            entries += [(a, False) for a in nz]
            continue
        counts = np.bincount(nz[0], minlength=size)
        if size and (counts != counts[0]).any():
            raise ValueError(
                "tapegrad.vmap: a boolean index selects a different number of entries in each "
                f"example ({', '.join(map(str, counts[:8]))}{', ...' if size > 8 else ''}): the "
                "results have no common shape; select with tnp.where instead"
            )
        c = int(counts[0]) if size else 0
        entries += [(a.reshape(size, c), True) for a in nz[1:]]
    dims: list[int] = []  # the basic dims of the result, in order
    bshapes = []
    adv: list[int] = []
    before = ax = 0
    for pos, (k, b) in enumerate(entries):
        if k is None or isinstance(k, slice):
            if k is None:
                dims.append(1)
            else:
                if ax >= len(xshape):
                    raise IndexError(f"too many indices for array: array is {len(xshape)}-dimensional")
                dims.append(len(range(*k.indices(xshape[ax]))))
                ax += 1
            before += not adv
            continue
        adv.append(pos)
        bshapes.append(tuple(k.shape[1:]) if b else np.shape(k))
        ax += 1
    if ax > len(xshape):
        raise IndexError(f"too many indices for array: array is {len(xshape)}-dimensional, but {ax} were indexed")
    dims += xshape[ax:]
    plain = [k for k, _ in entries]
    if not adv:  # basic indexing alone: the batch is a leading slice
        return _Plan((slice(None), *plain), None, tuple(dims))
    bs = np.broadcast_shapes(*bshapes)
    nb = len(bs)
    keys = [k.reshape((size,) + (1,) * (nb - k.ndim + 1) + tuple(k.shape[1:])) if b and k.ndim - 1 < nb else k
            for k, b in entries]
    arange = np.arange(size).reshape((size,) + (1,) * nb)
    if adv != list(range(adv[0], adv[0] + len(adv))) or not before:  # (size,) + bs + dims, as NumPy's
        return _Plan((arange, *keys), None, bs + tuple(dims))
    perm = (0, *range(1 + nb, 1 + nb + before), *range(1, 1 + nb), *range(1 + nb + before, 1 + nb + len(dims)))
    return _Plan((arange, *keys), perm, tuple(dims[:before]) + bs + tuple(dims[before:]))


def _order(plan: _Plan, nb: int, ndim: int) -> tuple[int, ...] | None:
    """The transpose from a batched indexing primitive's result (``nb``
    leading batch axes, then NumPy's layout of ``plan.key``) to the batch
    first, the ``nb`` axes, then each example's layout (None: no change)."""
    perm = plan.perm or tuple(range(ndim - nb))
    order = (nb, *range(nb), *(nb + p for p in perm[1:]))
    return None if order == tuple(range(ndim)) else order


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(perm))


def _loop_index(fn: Callable[..., Any], args: Args, batched: Sequence[bool], own: Sequence[int],
                size: int) -> Any:
    """``fn(x, index, ...)`` called per example, the index's entries batched
    on this level sliced with the other arguments: the generic loop, for the
    indices no one NumPy index can do (a 0-d boolean, a boolean mask batched
    on an outer level too). Every example's result must have the same shape."""
    index = args[1]
    n = len(args)

    def one(*a: Any) -> Any:
        key = list(index.key)
        for i, k in zip(own, a[n:]):
            key[i] = k
        return fn(a[0], Index(tuple(key), 0), *a[2:n])

    one.__name__ = fn.primitive.name  # type: ignore[attr-defined]
    arrays = [index.key[i]._node for i in own]
    return batching.loop_rule(one, [*args, *arrays], [*batched, *[True] * len(own)], size)


def _getitem_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    x, index = args[0], args[1]
    nb = args[2] if len(args) > 2 else nb
    own = _own_entries(index, (x,))
    if not own:
        return w.getitem(x, index, nb + 1)
    x = batch_all(x, batched[0], size)
    plan = _plan(index.key, own, tuple(x.shape[1 + nb:]), size)
    if plan is None:
        return _loop_index(w.getitem, [x, index, nb], [True, False, False], own, size)
    if nb:  # the batch after the primitive's own batch axes
        x = w.transpose(x, (*range(1, nb + 1), 0, *range(nb + 1, x.ndim)))
    out = w.getitem(x, Index(plan.key, 0), nb)
    order = _order(plan, nb, out.ndim)
    return out if order is None else w.transpose(out, order)


def _index_add_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    g, index, shape = args[0], args[1], tuple(args[2])
    nb = args[3] if len(args) > 3 else nb
    own = _own_entries(index, (g,))
    if not own:
        return w.index_add(g, index, shape, nb + 1)
    g = batch_all(g, batched[0], size)
    plan = _plan(index.key, own, shape, size)
    if plan is None:
        return _loop_index(w.index_add, [g, index, shape, nb], [True, False, False, False], own, size)
    order = _order(plan, nb, g.ndim)
    if order is not None:  # (the transpose of getitem's rule)
        g = w.transpose(g, _inverse(order))
    out = w.index_add(g, Index(plan.key, 0), (size,) + shape, nb)
    return out if not nb else w.transpose(out, (nb, *range(nb), *range(nb + 1, out.ndim)))


def _setitem_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, index, v = args
    if not batched[2] and type(v) is not Traced and not hasattr(v, "shape"):
        v = np.asarray(v)  # (a list, a Python scalar)
    own = _own_entries(index, (x, v))
    x = batch_all(x, batched[0], size)
    if any(_is_bool(index.key[i]) for i in own):
        out = _setitem_mask(x, index, own, v, batched[2], size)
        if out is None:
            return _loop_index(w.setitem, [x, index, v], [True, False, batched[2]], own, size)
        return out
    plan = _plan(index.key, own, tuple(x.shape[1:]), size)
    if plan is None:
        return _loop_index(w.setitem, [x, index, v], [True, False, batched[2]], own, size)
    nd = len(plan.shape)
    vnd = np.ndim(v) - batched[2]
    if vnd > nd:  # (NumPy drops a value's extra leading ones)
        vshape = tuple(np.shape(v))
        v = w.reshape_c(v, vshape[:batched[2]] + vshape[batched[2] + vnd - nd:])
        vnd = nd
    if batched[2]:  # v in the batch-first layout of the selection
        v = move_to_front(v, nd)
    if plan.perm is not None and (batched[2] or vnd):  # ... then in NumPy's
        if not batched[2]:
            v = w.reshape_c(v, (1,) * (nd + 1 - vnd) + tuple(np.shape(v)))
        v = w.transpose(v, _inverse(plan.perm))
    return w.setitem(x, Index(plan.key, 0), v)


def _setitem_mask(x: Any, index: Index, own: Sequence[int], v: Any, bv: bool, size: int) -> Any:
    """``x[mask] = v`` with a mask batched on this level: the mask's nonzero
    entries over the whole batch, one scatter (each example may select a
    different number of entries). Only for one mask among slices and
    ``None``, and a ``v`` that broadcasts along the selected entries; None
    for the rest."""
    key = index.key
    if len(own) != 1:
        return None
    m = own[0]
    mask = key[m]._node
    if type(mask) is Traced or mask.ndim < 2:
        return None
    if any(i != m and not (k is None or isinstance(k, slice)) for i, k in enumerate(key)):
        return None
    # each example's selection: the m dims of the entries before the mask, the selected
    # entries, then `after` dims; NumPy's layout of the whole batch's: (all selected,) + the rest
    used = sum(isinstance(k, slice) for k in key) + mask.ndim - 1
    after = len(key) - m - 1 + (x.ndim - 1 - used)
    vnd = np.ndim(v) - bv
    if vnd > after:
        return None  # (v runs along the selected entries: their count differs per example)
    nz = np.nonzero(mask)
    if bv:  # each selected entry gets its example's v
        vs = w.getitem(v, Index((nz[0],), 0), 0)
        v = w.reshape_c(vs, (len(nz[0]),) + (1,) * (m + after - vnd) + tuple(v.shape[1:]))
    return w.setitem(x, Index((nz[0], *key[:m], *nz[1:], *key[m + 1:]), 0), v)


defbatch(w.getitem, _getitem_rule)
defbatch(w.index_add, _index_add_rule)
defbatch(w.setitem, _setitem_rule)
def _batch_like_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    """``x`` the same in every example: a broadcast view (its gradient sums over the batch)."""
    return batch_all(args[0], batched[0], size)


defbatch(w.batch_like, _batch_like_rule)


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

