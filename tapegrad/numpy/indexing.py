"""Indexing primitives of tapegrad.numpy, each with its VJP, JVP and batching rule.

``getitem`` (``x[index]``), ``index_add`` (its transpose: zeros with values
added at ``index``) and ``setitem`` (``x[index] = v`` as a value) take an
``Index``, a NumPy index normalised once. ``getitem`` and ``index_add`` take
leading batch axes (``nb``), so their rules and their batching rules tell
them one more. An index computed per example (``logp[y]``, ``x[idx]``,
``x[mask]``) gets the batch as one more integer array, an arange over it:
one gather or scatter for the whole batch (``_plan``). Their front-ends lift
the indexed array to the vmap levels of such an index (``lift``).

``where3`` (the three-argument ``where``) is elementwise: see elementwise.py.
The rules reshape and transpose with the array methods (``x.reshape``,
``x.transpose``: the ``reshape`` and ``transpose`` primitives on traced
values), so that shapes.py, whose ``pad`` rule scatters with ``index_add``,
can import this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad import batching  # (batching.loop_rule looked up at each call: tests count the loops)
from tapegrad.backend import array_module
from tapegrad.batching import BatchTrace, defbatch, move_to_front
from tapegrad.compile.facts import defjit
from tapegrad.core.primitive import defjvp, defvjp, primitive, top_tape
from tapegrad.core.traced import Traced, value
from tapegrad.numpy._define import batch_all, nbatch

Args = Sequence[Any]
Rule = Callable[[Any], Any]


# --- the index -------------------------------------------------------------------------------
class Index:
    """A normalised NumPy index: a tuple with ``...`` expanded, lists made arrays.

    ``kind`` is ``"basic"`` (ints, slices, None), ``"mask"`` (boolean arrays,
    each position written at most once) or ``"int"`` (integer arrays).
    ``traces`` holds the vmap levels (``BatchTrace``)
    of the entries that are batched values (indices computed per example,
    such as a per-example class label): empty for a plain index. ``traced``
    says whether any entry (or slice bound) is traced, by a vmap or a jit.
    """

    __slots__ = ("key", "kind", "unique", "traces", "traced")

    def __init__(self, key: Any, ndim: int) -> None:
        if not isinstance(key, tuple):
            key = (key,)
        items: list[Any] = []
        kind = "basic"
        traces: tuple[Any, ...] = ()
        traced = False
        for k in key:
            if type(k) is Traced:
                k = value(k)
                traced = traced or type(k) is Traced  # (a vmap's or a jit's value stays traced)
                if type(k) is Traced and type(k._level) is BatchTrace:  # per-example values
                    traces += (k._level,)
                    kind = "mask" if k.dtype == bool and kind == "basic" else ("int" if k.dtype != bool else kind)
                    items.append(k)
                    continue
            elif type(k) is slice and Traced in (type(k.start), type(k.stop), type(k.step)):
                traced = True  # (bounds a jit traced: x[n:])
            if isinstance(k, list) or (hasattr(k, "dtype") and getattr(k, "ndim", 0) > 0):
                if isinstance(k, list):
                    k = np.asarray(k) if len(k) else np.zeros(0, dtype=np.intp)
                if k.dtype == bool:
                    kind = "mask" if kind == "basic" else kind
                else:
                    kind = "int"
            elif hasattr(k, "dtype") and k.dtype == bool:  # 0-d boolean
                kind = "mask" if kind == "basic" else kind
            items.append(k)
        used = 0
        for k in items:
            if k is None or k is Ellipsis:
                continue
            used += k.ndim if (hasattr(k, "dtype") and k.dtype == bool) else 1
        if any(k is Ellipsis for k in items):
            at = next(i for i, k in enumerate(items) if k is Ellipsis)
            items[at : at + 1] = [slice(None)] * (ndim - used)
        self.key = tuple(items)
        self.kind = kind
        self.traces = traces
        self.traced = traced
        # (batched entries: repeats are unknown until each example is seen; positions a
        # trace computed: add.at, always right; a jit's program normalises them again
        # on each call's values)
        self.unique = not traces and (kind != "int" or (not traced and _unique_int_index(self.key)))

def _by_index(prim_fn: Any, args: tuple[Any, ...]) -> Any:
    """A call whose only traced argument is in an index's key (a constant, a
    cotangent, indexed by positions a ``jit`` trace computed): that trace
    records it. None when no trace takes it (a vmap's: NumPy then refuses)."""
    parts = [p for k in args[1].key for p in ((k.start, k.stop, k.step) if type(k) is slice else (k,))]
    tape = top_tape(parts)
    if tape is None or not tape.abstract or type(tape) is BatchTrace:
        return None
    return tape.process(prim_fn.primitive, args, {})

def _unique_int_index(key: tuple[Any, ...]) -> bool:
    """True when one non-negative integer array is the only advanced index and
    holds no repeats: then the scatter can assign instead of ``add.at``."""
    arrays = [k for k in key if hasattr(k, "dtype") and getattr(k, "ndim", 0) > 0]
    if len(arrays) != 1:
        return False
    a = arrays[0]
    if a.size == 0:
        return True
    if type(a) is not np.ndarray and array_module(a) is not np:  # (a device index: reading it is a sync)
        return False
    return bool(a.min() >= 0 and array_module(a).unique(a).size == a.size)

def _batched_view(x: Any, nb: int) -> Any:
    """``x`` with its ``nb`` leading batch axes moved to the end (a view)."""
    if nb == 0:
        return x
    return array_module(x).moveaxis(x, tuple(range(nb)), tuple(range(-nb, 0)))

def _unbatched(y: Any, nb: int) -> Any:
    if nb == 0:
        return y
    return array_module(y).moveaxis(y, tuple(range(-nb, 0)), tuple(range(nb)))


# --- lifting: the indexed array meets a per-example index on its vmap levels -----------------
def _batch_like(x: Any, marker: Any) -> Any:
    """``x`` itself; under vmap, ``x`` batched like ``marker`` (see ``lift``)."""
    return x

batch_like = primitive(_batch_like, "batch_like", batched=True)

def _batch_like_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    """``x`` the same in every example: a broadcast view (its gradient sums over the batch)."""
    return batch_all(args[0], batched[0], size)

defvjp(batch_like, lambda ans, x, marker: lambda g: g, None)

defjvp(batch_like, lambda ans, x, marker: lambda t: t, None)

defbatch(batch_like, _batch_like_rule)

def lift(x: Any, traces: tuple[Any, ...]) -> Any:
    """``x`` made a batched value of each vmap level in ``traces`` it is not
    batched on yet (the same value for every example: a broadcast view, no
    copy), so that an index batched on those levels meets ``x`` there.

    A primitive runs at the highest level among its *arguments*; the entries
    of an ``Index`` are not arguments, so ``W[y]`` with a per-example
    label ``y`` and a ``W`` that does not vary over the batch (a parameter)
    would never reach ``y``'s level: the indexing primitives' front-ends
    below lift ``W`` to it first."""
    have = set()
    y = x
    while type(y) is Traced:  # the levels x already lives on
        t = y._level
        have.add(id(t))
        y = t.lower(y)
    for t in traces:
        if id(t) not in have and t.entered:
            have.add(id(t))
            x = batch_like(x, t.wrap(np.zeros(t.size, dtype=bool)))
    return x

def _lifting(prim_fn: Any) -> Any:
    """The front-end of indexing primitive ``prim_fn(x, index, ...)``: ``x``
    lifted to the vmap levels of ``index``'s batched entries (see ``lift``).
    Its ``.primitive`` is ``prim_fn``'s (rules are defined on either)."""

    def front(x: Any, index: Index, *args: Any, **kwargs: Any) -> Any:
        if index.traces:
            x = lift(x, index.traces)
        return prim_fn(x, index, *args, **kwargs)

    front.__name__ = front.__qualname__ = prim_fn.__name__
    front.__doc__ = prim_fn.__doc__
    front.primitive = prim_fn.primitive  # type: ignore[attr-defined]
    return front


# --- batching an index: the plan shared by the three rules -----------------------------------
# A plain index: getitem and index_add take leading batch axes already (they are told one
# more); setitem gets the batch as a leading slice, or as one more integer array beside the
# index's own. Entries batched on this level (a per-example label ``logp[y]``, per-example
# positions ``x[idx]``, masks): the batch becomes an integer array too, an arange over it,
# broadcast against the entries' arrays (batch first): ONE gather or scatter for the batch.
def _levels(x: Any) -> set[int]:
    """The levels (tape ids) ``x`` lives on: its own, its value's, and so on down."""
    have = set()
    while type(x) is Traced:
        t = x._level
        have.add(id(t))
        x = t.lower(x)
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
    return [i for i, k in enumerate(index.key) if type(k) is Traced and id(k._level) not in have]

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
            k = k._array
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
    arrays = [index.key[i]._array for i in own]
    return batching.loop_rule(one, [*args, *arrays], [*batched, *[True] * len(own)], size)


# --- getitem ---------------------------------------------------------------------------------
def _getitem(x: Any, index: Index, nb: int = 0) -> Any:
    """``x[index]`` on the trailing axes of ``x``; its ``nb`` leading axes are batch."""
    if index.traced:
        out = _by_index(getitem, (x, index, nb))
        if out is not None:
            return out
    if nb == 0:
        return x[index.key]
    return _unbatched(_batched_view(x, nb)[index.key], nb)

getitem = _lifting(primitive(_getitem, "getitem", batched=True))
defjit(getitem, shape_from_index=True)  # (tg.jit: a mask or a traced slice bound sets its shape)

def _vjp_getitem(ans: Any, x: Any, idx: Index, nb: int = 0) -> Rule:
    nd, xs = ans.ndim, x.shape[nb:]
    return lambda g: index_add(g, idx, xs, g.ndim - nd + nb)

def _getitem_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    x, index = args[0], args[1]
    nb = args[2] if len(args) > 2 else nb
    own = _own_entries(index, (x,))
    if not own:
        return getitem(x, index, nb + 1)
    x = batch_all(x, batched[0], size)
    plan = _plan(index.key, own, tuple(x.shape[1 + nb:]), size)
    if plan is None:
        return _loop_index(getitem, [x, index, nb], [True, False, False], own, size)
    if nb:  # the batch after the primitive's own batch axes
        x = x.transpose((*range(1, nb + 1), 0, *range(nb + 1, x.ndim)))
    out = getitem(x, Index(plan.key, 0), nb)
    order = _order(plan, nb, out.ndim)
    return out if order is None else out.transpose(order)

defvjp(getitem, _vjp_getitem)

defjvp(getitem, lambda ans, x, idx, nb=0: lambda t: getitem(t, idx, nb + nbatch(t, x)))

defbatch(getitem, _getitem_rule)


# --- index_add (the transpose of getitem) ----------------------------------------------------
def _index_add(g: Any, index: Index, shape: tuple[int, ...], nb: int) -> Any:
    """Zeros of ``batch + shape`` with ``g`` added at ``index`` (an ``Index``;
    repeated positions accumulate): the transpose of ``x[index]``. ``g``'s
    ``nb`` leading axes are ``batch``."""
    if index.traced:
        out = _by_index(index_add, (g, index, shape, nb))
        if out is not None:
            return out
    xp = array_module(g)
    out = xp.zeros(g.shape[:nb] + tuple(shape), dtype=g.dtype)
    view = _batched_view(out, nb)
    gv = _batched_view(g, nb)
    if index.unique:
        view[index.key] = gv
    else:
        xp.add.at(view, index.key, gv)
    return out

index_add = _lifting(primitive(_index_add, "index_add", batched=True))

def _vjp_index_add(ans: Any, g0: Any, idx: Index, shape: Any, nb: int) -> Rule:
    nd = ans.ndim
    return lambda g: getitem(g, idx, g.ndim - nd + nb)

def _index_add_rule(args: Args, batched: Sequence[bool], size: int, nb: int = 0) -> Any:
    g, index, shape = args[0], args[1], tuple(args[2])
    nb = args[3] if len(args) > 3 else nb
    own = _own_entries(index, (g,))
    if not own:
        return index_add(g, index, shape, nb + 1)
    g = batch_all(g, batched[0], size)
    plan = _plan(index.key, own, shape, size)
    if plan is None:
        return _loop_index(index_add, [g, index, shape, nb], [True, False, False, False], own, size)
    order = _order(plan, nb, g.ndim)
    if order is not None:  # (the transpose of getitem's rule)
        g = g.transpose(_inverse(order))
    out = index_add(g, Index(plan.key, 0), (size,) + shape, nb)
    return out if not nb else out.transpose((nb, *range(nb), *range(nb + 1, out.ndim)))

defvjp(index_add, _vjp_index_add)

defjvp(index_add, lambda ans, g, idx, shape, nb: lambda t: index_add(t, idx, shape, nb + nbatch(t, g)))

defbatch(index_add, _index_add_rule)


# --- setitem ---------------------------------------------------------------------------------
def _setitem(x: Any, index: Index, v: Any) -> Any:
    """A copy of ``x`` with ``v`` written at ``index`` (an ``Index``):
    ``x[index] = v`` without changing ``x``. The gradient to ``x`` is zero at
    ``index``; ``v`` gets the cotangent's entries at ``index``."""
    if index.traced:
        new = _by_index(setitem, (x, index, v))
        if new is not None:
            return new
    out = x.copy()
    out[index.key] = v
    return out

setitem = _lifting(primitive(_setitem, "setitem", batched=True))

def _vjp_setitem_x(ans: Any, x: Any, idx: Index, v: Any) -> Rule:
    keep = array_module(value(x)).ones(x.shape, dtype=bool)
    if idx.traced:  # (positions a jit trace computed: it records the mask)
        keep = setitem(keep, idx, False)
    else:
        keep[idx.key] = False
    return lambda g: g * keep

def _vjp_setitem_v(ans: Any, x: Any, idx: Index, v: Any) -> Rule:
    nd, vshape = ans.ndim, np.shape(v)

    def vjp(g: Any) -> Any:
        nb = g.ndim - nd
        s = getitem(g, idx, nb)
        extra = len(vshape) - (s.ndim - nb)
        if extra > 0:  # v had leading ones NumPy dropped when it assigned (v (1, 4) into (4,))
            s = s.reshape(tuple(s.shape[:nb]) + (1,) * extra + tuple(s.shape[nb:]))
        return s

    return vjp

def _setitem_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, index, v = args
    if not batched[2] and type(v) is not Traced and not hasattr(v, "shape"):
        v = array_module(x).asarray(v)  # (a list, a Python scalar: on x's device)
    own = _own_entries(index, (x, v))
    x = batch_all(x, batched[0], size)
    if any(_is_bool(index.key[i]) for i in own):
        out = _setitem_mask(x, index, own, v, batched[2], size)
        if out is None:
            return _loop_index(setitem, [x, index, v], [True, False, batched[2]], own, size)
        return out
    plan = _plan(index.key, own, tuple(x.shape[1:]), size)
    if plan is None:
        return _loop_index(setitem, [x, index, v], [True, False, batched[2]], own, size)
    nd = len(plan.shape)
    vnd = np.ndim(v) - batched[2]
    if vnd > nd:  # (NumPy drops a value's extra leading ones)
        vshape = tuple(np.shape(v))
        v = v.reshape(vshape[:batched[2]] + vshape[batched[2] + vnd - nd:])
        vnd = nd
    if batched[2]:  # v in the batch-first layout of the selection
        v = move_to_front(v, nd)
    if plan.perm is not None and (batched[2] or vnd):  # ... then in NumPy's
        if not batched[2]:
            v = v.reshape((1,) * (nd + 1 - vnd) + tuple(np.shape(v)))
        v = v.transpose(_inverse(plan.perm))
    return setitem(x, Index(plan.key, 0), v)

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
    mask = key[m]._array
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
        vs = getitem(v, Index((nz[0],), 0), 0)
        v = vs.reshape((len(nz[0]),) + (1,) * (m + after - vnd) + tuple(v.shape[1:]))
    return setitem(x, Index((nz[0], *key[:m], *nz[1:], *key[m + 1:]), 0), v)

defvjp(setitem, _vjp_setitem_x, None, _vjp_setitem_v)

defjvp(setitem, lambda ans, x, idx, vv: lambda t: _vjp_setitem_x(ans, x, idx, vv)(t))

defbatch(setitem, _setitem_rule)

