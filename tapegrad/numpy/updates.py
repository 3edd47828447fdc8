"""Functional indexed updates, JAX's ``x.at[idx].set(v)`` idiom.

``x.at[idx]`` on a traced value, and ``tnp.at(x)[idx]`` on any array (plain
or traced), give an object whose methods return an updated copy of ``x``;
``x`` never changes. Every update is made of the indexing primitives
(``getitem``, ``setitem``, ``index_add``) and elementwise ones, so it
differentiates, maps and compiles as they do.

Repeated positions: ``add`` accumulates them (one ``index_add``); ``set``,
``multiply``, ``divide``, ``power``, ``min``, ``max`` and ``apply`` are
applied in rounds, each round a set of distinct positions (the first
occurrence of each, then the second...), so every update is applied in turn
and the gradient goes to the update that wrote the value (for ``set``, the
last one: it wins, as in NumPy). Indices computed under ``vmap`` or ``jit``
are used as one round (as NumPy would), except by ``add``.

Out-of-bound indices follow JAX: ``mode=None`` drops them in updates and
clips them in ``get``; ``"clip"``, ``"drop"``, ``"fill"`` (with
``fill_value`` in ``get``; NaN for inexact dtypes) and ``"promise_in_bounds"``
(NumPy's check) choose; negative indices count from the end unless
``wrap_negative_indices=False``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.engine_ops import broadcast_to
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import elementwise as e
from tapegrad.numpy.indexing import Index, getitem, index_add, setitem

_MODES = ("clip", "drop", "fill", "promise_in_bounds")


def _mode(mode: Any, default: str) -> str:
    if mode is None:
        return default
    m = getattr(mode, "name", mode)  # (an enum, as JAX's GatherScatterMode)
    m = str(m).lower()
    if m == "fill_or_drop":
        m = "drop"
    if m not in _MODES:
        raise ValueError(f'Unknown gather mode "{mode}"')
    return m


def _is_int(k: Any) -> bool:
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return hasattr(k, "dtype") and np.dtype(k.dtype).kind in "iu"


def _is_bool_array(k: Any) -> bool:
    return hasattr(k, "dtype") and np.dtype(k.dtype) == bool and np.ndim(k) > 0


class _Plan:
    """Where an indexed update writes: ``rounds`` of ``(Index, positions)``,
    each with distinct targets (``positions``: which of the broadcast index's
    flattened entries it writes, or None for the whole index as given), the
    axis ``start`` of the selection where the index's entries lie, the
    selection's ``shape``, and ``valid`` (per entry of the broadcast index,
    or None when all are in bounds)."""

    __slots__ = ("rounds", "start", "bshape", "shape", "valid", "flat_key", "empty")

    def __init__(self) -> None:
        self.rounds: list[tuple[Index, Any]] = []
        self.start = 0
        self.bshape: tuple[int, ...] = ()
        self.shape: tuple[int, ...] = ()
        self.valid: Any = None
        self.flat_key: Any = None
        self.empty = False  # (no position is written: the update is x itself)


def _traced_key(key: tuple[Any, ...]) -> bool:
    for k in key:
        if type(k) is Traced:
            return True
        if type(k) is slice and Traced in (type(k.start), type(k.stop), type(k.step)):
            return True
    return False


def _plan(x: Any, index: Any, mode: str, wrap: bool, for_get: bool) -> _Plan:
    xshape = tuple(np.shape(x))
    idx = Index(index, len(xshape))
    plan = _Plan()
    key = list(idx.key)
    if idx.traced or _traced_key(idx.key) or any(hasattr(k, "dtype") and np.ndim(k) == 0 and np.dtype(k.dtype) == bool
                                                 for k in key):
        plan.rounds = [(idx, None)]  # (positions only a trace knows: NumPy's meaning, one round)
        plan.shape = tuple(np.shape(getitem(value(x), idx)))
        return plan
    has_int_array = any(_is_int(k) and np.ndim(k) > 0 for k in key)
    if any(_is_bool_array(k) for k in key) and (has_int_array or any(_is_int(k) for k in key)):
        key = [p for k in key for p in (np.nonzero(k) if _is_bool_array(k) else (k,))]
        has_int_array = True
    # the x axis each entry indexes (None adds one, a mask takes its ndim)
    axes, ax = [], 0
    for k in key:
        axes.append(ax)
        if k is not None:
            ax += np.ndim(k) if _is_bool_array(k) else 1
    ints = [i for i, k in enumerate(key) if _is_int(k)]
    valid: Any = True
    changed = False
    for i in ints:
        dim = xshape[axes[i]] if axes[i] < len(xshape) else 0
        a = np.asarray(key[i]).astype(np.intp, copy=False)
        if wrap:
            a = np.where(a < 0, a + dim, a)
        elif bool(np.any(a < 0)) and mode == "promise_in_bounds":
            mode = "drop"  # (a negative index names no position then)
        if mode == "clip" and dim > 0:
            a = np.clip(a, 0, dim - 1)
        elif mode != "promise_in_bounds":
            ok = (a >= 0) & (a < dim)
            if not bool(np.all(ok)):
                valid = valid & ok
                a = np.where(ok, a, 0)
        changed = changed or not (np.shape(a) == np.shape(key[i]) and np.array_equal(a, key[i]))
        key[i] = a if (has_int_array or np.ndim(a) > 0) else int(a)
    plan.shape = tuple(np.shape(np.broadcast_to(np.zeros((), np.int8), xshape)[tuple(key)]))
    adv = [i for i, k in enumerate(key) if _is_int(k) and has_int_array]
    if not adv:  # basic indexing (ints, slices, a mask): no repeats
        if valid is not True and not bool(np.all(valid)):
            if for_get:
                plan.valid = np.bool_(False)
            else:
                plan.empty = True
        plan.rounds = [(idx if not changed else Index(tuple(key), len(xshape)), None)]
        return plan
    arrays = np.broadcast_arrays(*[key[i] for i in adv])
    bshape = arrays[0].shape if arrays else ()
    plan.bshape = tuple(bshape)
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    plan.start = sum(1 for k in key[: adv[0]] if k is None or type(k) is slice) if contiguous else 0
    vb = np.broadcast_to(valid, bshape) if valid is not True else None
    if for_get:
        plan.valid = vb
        plan.rounds = [(idx if not changed else Index(tuple(key), len(xshape)), None)]
        return plan
    dims = [xshape[axes[i]] for i in adv]
    flat = [np.ravel(a) for a in arrays]
    keep = np.arange(flat[0].size) if vb is None else np.flatnonzero(vb)
    if keep.size == 0:
        plan.empty = True
        return plan
    ids = np.ravel_multi_index(tuple(f[keep] for f in flat), dims) if dims else np.zeros(keep.size, np.intp)
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    first = np.r_[True, sid[1:] != sid[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(sid.size), 0))
    rank = np.empty(sid.size, np.intp)
    rank[order] = np.arange(sid.size) - group_start
    nrounds = int(rank.max()) + 1
    if nrounds == 1 and vb is None and not changed:
        plan.rounds = [(idx, None)]  # (the index as given: distinct, in bounds)
        return plan
    plan.flat_key = (key, adv, flat)
    for r in range(nrounds):
        pos = keep[rank == r]
        rk = list(key)
        for i, f in zip(adv, flat):
            rk[i] = f[pos]
        plan.rounds.append((Index(tuple(rk), len(xshape)), pos))
    return plan


def _values(x: Any, v: Any, plan: _Plan) -> Any:
    """``v`` cast to ``x``'s dtype and broadcast to the selection's shape."""
    dt = x.dtype if hasattr(x, "dtype") else np.result_type(x)
    if type(v) is Traced:
        if v.dtype != dt:
            v = d.astype(v, dt)
    else:
        v = np.asarray(v)
        if v.dtype != dt:
            v = v.astype(dt)
    if tuple(np.shape(v)) != plan.shape:
        v = broadcast_to(v, plan.shape)
    return v


def _pick(v: Any, plan: _Plan, pos: Any) -> Any:
    """The values of round ``pos`` (entries of the flattened broadcast index)."""
    if pos is None:
        return v
    s, nb = plan.start, len(plan.bshape)
    shape = tuple(np.shape(v))
    flat = v.reshape(shape[:s] + (-1,) + shape[s + nb:])
    return getitem(flat, Index((slice(None),) * s + (pos,), len(shape) - nb + 1))


class _IndexUpdateRef:
    """``x.at[idx]``: methods that return ``x`` updated at ``idx`` (a copy)."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
            fill_value: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx]``; out-of-bound indices clipped (``mode="fill"``: ``fill_value``, NaN by default)."""
        x = self.array
        plan = _plan(x, self.index, _mode(mode, "clip"), wrap_negative_indices, for_get=True)
        out = getitem(x, plan.rounds[0][0])
        if plan.valid is None:
            return out
        if fill_value is None:
            dt = np.dtype(x.dtype)
            fill_value = (np.nan if dt.kind in "fc" else np.iinfo(dt).min if dt.kind == "i"
                          else np.iinfo(dt).max if dt.kind == "u" else True)
        nb = len(plan.bshape)
        mask = np.reshape(plan.valid, (1,) * plan.start + tuple(np.shape(plan.valid))
                          + (1,) * (len(plan.shape) - plan.start - nb))
        return e.where3(mask, out, np.asarray(fill_value, dtype=x.dtype))

    def _update(self, values: Any, op: Callable[[Any, Any], Any] | None, mode: Any, wrap: bool) -> Any:
        x = self.array
        if type(x) is not Traced:
            x = np.asarray(x)
        plan = _plan(x, self.index, _mode(mode, "drop"), wrap, for_get=False)
        if plan.empty:
            return x if type(x) is Traced else x.copy()
        v = _values(x, values, plan) if values is not None else None
        for ix, pos in plan.rounds:
            vr = _pick(v, plan, pos) if v is not None else None
            new = vr if op is None else op(getitem(x, ix), vr)
            x = setitem(x, ix, new)
        return x

    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] = values``, as a new array (of repeated positions, the last one wins)."""
        return self._update(values, None, mode, wrap_negative_indices)

    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] += values``, as a new array; repeated positions accumulate."""
        x = self.array
        if type(x) is not Traced:
            x = np.asarray(x)
        plan = _plan(x, self.index, _mode(mode, "drop"), wrap_negative_indices, for_get=False)
        if plan.empty:
            return x if type(x) is Traced else x.copy()
        v = _values(x, values, plan)
        xshape = tuple(np.shape(x))
        if plan.flat_key is None:
            return e.add(x, index_add(v, plan.rounds[0][0], xshape, 0))
        key, adv, flat = plan.flat_key
        pos = np.concatenate([p for _, p in plan.rounds])
        k = list(key)
        for i, f in zip(adv, flat):
            k[i] = f[pos]
        return e.add(x, index_add(_pick(v, plan, pos), Index(tuple(k), len(xshape)), xshape, 0))

    def subtract(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] -= values``, as a new array; repeated positions accumulate."""
        return self.add(e.negative(values) if type(values) is Traced else np.negative(values),
                        mode=mode, wrap_negative_indices=wrap_negative_indices)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] *= values``, as a new array; repeated positions multiply in turn."""
        return self._update(values, e.multiply, mode, wrap_negative_indices)

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
               mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] /= values``, as a new array; repeated positions divide in turn."""
        return self._update(values, e.divide, mode, wrap_negative_indices)

    def power(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] **= values``, as a new array; repeated positions apply in turn."""
        return self._update(values, e.power, mode, wrap_negative_indices)

    def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] = minimum(x[idx], values)``, as a new array."""
        return self._update(values, e.minimum, mode, wrap_negative_indices)

    def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x[idx] = maximum(x[idx], values)``, as a new array."""
        return self._update(values, e.maximum, mode, wrap_negative_indices)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``func.at(x, idx)`` for a unary function, as a new array: ``func`` once
        per occurrence of a position (differentiable if ``func`` is)."""
        return self._update(None, lambda cur, _: func(cur), mode, wrap_negative_indices)


class _IndexUpdateHelper:
    """``x.at``: index it (``x.at[idx]``) for the update methods."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


def at(x: Any) -> _IndexUpdateHelper:
    """JAX's ``x.at`` for any array: ``tnp.at(x)[idx].set(v)`` returns a copy of
    ``x`` with ``v`` written at ``idx`` (``x`` does not change), and so do
    ``add``, ``subtract``, ``multiply``, ``divide``, ``power``, ``min``,
    ``max``, ``apply`` and ``get``, all differentiable. A traced value has the
    same as a property, ``x.at[idx]``. Repeated positions: ``add`` accumulates,
    ``set`` keeps the last; out-of-bound updates are dropped, as in JAX.

    Examples:
        >>> x = np.zeros(4)
        >>> tnp.at(x)[1].set(5.0)
        array([0., 5., 0., 0.])
        >>> tnp.at(x)[np.array([0, 0, 3])].add(1.0)      # repeats accumulate
        array([2., 0., 0., 1.])
        >>> tg.grad(lambda v: tnp.sum(tnp.at(x)[2].set(v) ** 2))(3.0)
        np.float64(6.0)
    """
    return _IndexUpdateHelper(x)
