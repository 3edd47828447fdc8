"""Indexing: ``__getitem__`` / ``__setitem__`` and the index ops (gather, scatter, index_add, take...).

Import direction: imports ``_tensor``, ``_promote``, ``_inplace`` (views);
the op table (``_ops.py``) installs ``IndexingOps``' methods on ``Tensor``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from numpy import ndarray

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.torch._graph import (
    SCALAR_TYPE,
    FacadeEntry,
)
from tapegrad.torch._inplace import _DONE
from tapegrad.torch._promote import _INT_INDEX, _broadcast_shape, _cast, _check_bounds, _dim
from tapegrad.torch._shape_errors import index_device_clash
from tapegrad.torch._tensor_base import OpsBase as _Base
from tapegrad.torch._tensor_base import Tensor, TensorBase, _new, _result, _v, _viewed


def _index_arg(index: Any, dtypes: tuple[str, ...], exc: type[Exception], msg: str) -> Any:
    """The values of index tensor ``index``; ``exc(msg)`` when its dtype is not
    one of ``dtypes`` (``{}`` in ``msg``: PyTorch's name of the dtype)."""
    idx = np.asarray(value(_v(index)))
    if idx.dtype.name not in dtypes:
        raise exc(msg.format(SCALAR_TYPE.get(idx.dtype.name, idx.dtype.name)))
    return idx


def _scatter_key(x: TensorBase, dim: int, index: Any, src: Any) -> tuple[tuple[Any, ...], tuple[slice, ...]]:
    """For ``x.scatter(dim, index, src)`` and ``scatter_add``: the NumPy index
    of the elements of ``x`` written (``index`` along ``dim``, its own
    positions along the others) and the part of ``src`` read, after
    PyTorch's checks."""
    shape = x._value.shape
    nd = len(shape)
    d = _dim(dim, nd)
    idx = _index_arg(index, _INT_INDEX, RuntimeError, "scatter(): Expected dtype int32/int64 for index")
    if idx.ndim != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    big = builtins.any(n > shape[k] for k, n in enumerate(idx.shape) if k != d)
    msg = f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from dimension {d}"
    if isinstance(src, Tensor):
        if src.ndim != nd:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if src._value.dtype != x._value.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        big = big or builtins.any(n > m for n, m in zip(idx.shape, src.shape))
        msg += f" and to be no larger size than src {list(src.shape)}"
    if big:
        raise RuntimeError(msg)
    _check_bounds(idx, shape[d] if nd else 1, d)
    key = tuple(idx if k == d else np.arange(n).reshape((-1,) + (1,) * (nd - k - 1)) for k, n in enumerate(idx.shape))
    return key, tuple(slice(0, n) for n in idx.shape)


def _put(x: TensorBase, key: tuple[Any, ...], v: Any, src: Tensor | None, name: str) -> Tensor:
    """``x`` with ``v`` (values of tensor ``src``, or a number) written at NumPy
    index ``key``: node ``name`` with inputs ``x`` (and ``src``). Written-over
    elements get no gradient; each written value the gradient where it went."""
    a = x._value
    dt = value(a).dtype
    v = _cast(v, dt) if src is not None else np.asarray(v, dt)
    return _result(tp.index_set(a, tp.NormalizedIndex(key, a.ndim), v), name, (x,) if src is None else (x, src))


def _added(x: TensorBase, key: tuple[Any, ...], v: Any, src: Tensor, name: str) -> Tensor:
    """``x`` with values ``v`` of tensor ``src`` added at NumPy index ``key``
    (repeated positions add up): node ``name`` with inputs ``x`` and ``src``."""
    a = x._value
    return _result(tnp.add(a, tp.scatter_add(v, tp.NormalizedIndex(key, a.ndim), a.shape, 0)), name, (x, src))


def _index_key(key: Any) -> Any:
    """A PyTorch index with tensors read as NumPy arrays."""
    if isinstance(key, tuple):
        return tuple(_index_key(k) for k in key)
    if isinstance(key, Tensor):
        return value(key._value)
    if isinstance(key, list) and builtins.any(isinstance(k, Tensor) for k in key):
        return [_index_key(k) for k in key]
    return key


def _basic_key(k: Any) -> builtins.bool:
    """Does index ``k`` pick a view (ints, slices, None, ``...``), not a copy?"""
    items = k if isinstance(k, tuple) else (k,)
    return builtins.all(i is None or i is Ellipsis or isinstance(i, (slice, builtins.int, np.integer))
                        and not isinstance(i, (builtins.bool, np.bool_)) for i in items)


def _index_steps(k: Any, shape: tuple[int, ...]) -> list[str]:
    """The view ops PyTorch applies for basic index ``k`` on ``shape``, in
    order: ``None`` unsqueezes, an int selects, a slice that is no no-op
    slices (``x[-1, -2:]``: select, then slice)."""
    items = list(k) if isinstance(k, tuple) else [k]
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * fill
    steps, dim = [], 0
    for i in items:
        if i is None:
            steps.append("UnsqueezeBackward0")
            continue
        if isinstance(i, slice):
            if i.indices(shape[dim]) != (0, shape[dim], 1):
                steps.append("SliceBackward0")
        else:
            steps.append("SelectBackward0")
        dim += 1
    return steps


def _index_name(key: Any, setting: bool = False) -> str:
    items = key if isinstance(key, tuple) else (key,)
    advanced = False
    for k in items:
        if isinstance(k, (list, ndarray)) or (isinstance(k, Tensor)):
            advanced = True
    if setting:
        return "IndexPutBackward0" if advanced else "CopySlices"
    if advanced:
        return "IndexBackward0"
    if isinstance(key, slice):
        return "SliceBackward0"
    last = "AliasBackward0"
    for k in items:
        if k is None:
            last = "UnsqueezeBackward0"
        elif isinstance(k, slice):
            if k != slice(None):
                last = "SliceBackward0"
        elif k is not Ellipsis:
            last = "SelectBackward0"
    return last


class IndexingOps(_Base):
    """The methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    def index_select(self, dim: builtins.int, index: Tensor) -> Tensor:
        key = (slice(None),) * (dim % self.ndim) + (value(_v(index)),)
        return _result(self._value[key], "IndexSelectBackward0", (self,))

    def gather(self, dim: builtins.int, index: Tensor) -> Tensor:
        """The elements along ``dim`` at ``index``; as PyTorch, ``index`` may be
        smaller than ``self`` in the other dimensions (their first positions are read)."""
        idx = value(_v(index))
        d = _dim(dim, self.ndim)
        if idx.dtype.name not in _INT_INDEX:
            raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        if idx.ndim != self.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        shape = tuple(self.shape)
        for k in range(idx.ndim):
            if k != d and idx.shape[k] > shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(idx.shape)} to be "
                                   f"no larger than self {list(shape)} apart from dimension {d}")
        if type(idx) is not Traced:  # (indices batched by vmap: NumPy's own check, per example)
            _check_bounds(idx, shape[d] if shape else 1, d)
        src = self._value
        if any(idx.shape[k] != shape[k] for k in range(idx.ndim) if k != d):  # (the first positions only)
            src = src[tuple(slice(None) if k == d else slice(0, idx.shape[k]) for k in range(idx.ndim))]
        return _result(tnp.take_along_axis(src, idx, d), "GatherBackward0", (self,))

    def nonzero(self, as_tuple: builtins.bool = False) -> Any:
        nz = np.nonzero(value(self._value))
        if as_tuple:
            return tuple(_new(np.asarray(i, np.int64)) for i in nz)
        return _new(np.stack(nz, axis=1).astype(np.int64))


    def take(self, index: Tensor) -> Tensor:
        """The elements of the flattened tensor at ``index`` (negatives count from the end)."""
        if not isinstance(index, Tensor):
            raise TypeError(f"take(): argument 'index' (position 1) must be Tensor, not {type(index).__name__}")
        idx = _index_arg(index, ("int64",), RuntimeError, "take(): Expected a long tensor for index, but got {}")
        n = self.numel()
        if n == 0 and idx.size:
            raise IndexError("take(): tried to take from an empty tensor")
        bad = (idx >= n) | (idx < -n)
        if bad.any():
            raise IndexError(f"out of range: tried to access index {idx[bad].flat[0]} on a tensor of {n} elements.")
        return _result(tnp.take(self._value, idx), "TakeBackward0", (self,))

    def masked_select(self, mask: Tensor) -> Tensor:
        """The elements where boolean ``mask`` (broadcast with ``self``) holds, as a 1-D tensor."""
        m = np.asarray(value(_v(mask)))
        if m.dtype != np.bool_:
            raise RuntimeError("masked_select: expected BoolTensor for mask")
        a = self._value
        shape = _broadcast_shape(m.shape, a.shape)
        if a.shape != shape:
            a = tnp.broadcast_to(a, shape)
        return _result(a[np.broadcast_to(m, shape)], "MaskedSelectBackward0", (self,))


    def scatter(self, dim: builtins.int, index: Tensor, src: Any = None, value: Any = None, *,
                reduce: str | None = None) -> Tensor:
        """``self`` with ``src`` (a tensor, or a number: ``value``) written along
        ``dim`` at ``index``: ``out[i][index[i][j]] = src[i][j]`` for ``dim=1``.
        A position written twice keeps the last write; every element of ``src``
        gets the gradient of the position it went to, as in PyTorch."""
        if reduce is not None:
            raise NotImplementedError("tapegrad.torch: scatter(reduce=...) is not supported; use scatter_add")
        s = value if src is None else src
        key, part = _scatter_key(self, dim, index, s)
        if isinstance(s, Tensor):
            return _put(self, key, s._value[part], s, "ScatterBackward0")
        return _put(self, key, s, None, "ScatterBackward1")

    def scatter_add(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        """``self`` with ``src`` added along ``dim`` at ``index`` (repeats add up)."""
        if not isinstance(src, Tensor):
            raise TypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
        key, part = _scatter_key(self, dim, index, src)
        return _added(self, key, src._value[part], src, "ScatterAddBackward0")

    def index_add(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """``self`` with ``alpha * source`` added at positions ``index`` along ``dim`` (repeats add up)."""
        a, s = self._value, source._value
        d = _dim(dim, a.ndim)
        idx = _index_arg(index, _INT_INDEX, RuntimeError, "index_add_(): Expected dtype int32/int64 for index but got: {}")
        if idx.ndim > 1:
            raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
                             f"{SCALAR_TYPE[idx.dtype.name]} and size: {list(idx.shape)}")
        idx = idx.reshape(-1)
        if s.dtype != a.dtype:
            raise RuntimeError(f"index_add_(): self ({SCALAR_TYPE[a.dtype.name]}) and source "
                               f"({SCALAR_TYPE[s.dtype.name]}) must have the same scalar type")
        if s.ndim != a.ndim or builtins.any(p != q for k, (p, q) in enumerate(zip(s.shape, a.shape)) if k != d):
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(a.shape)} source.shape = {list(s.shape)}")
        if s.shape[d] != idx.size:
            raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                               f"source.size(dim): ({s.shape[d]}), for dim: {d}")
        _check_bounds(idx, a.shape[d], d)
        if alpha != 1:
            s = tnp.multiply(s, alpha)
        return _added(self, (slice(None),) * d + (idx,), s, source, "IndexAddBackward0")

    def index_fill(self, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """``self`` with ``value`` (a number or a 0-d tensor) written at positions
        ``index`` along ``dim``; a tensor ``value`` gets the gradient of every
        filled position (each counted once)."""
        a = self._value
        d = _dim(dim, a.ndim)
        idx = _index_arg(index, ("int64",), IndexError, "index_fill_(): Expected dtype int64 for index.")
        if idx.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        n = a.shape[d]
        _check_bounds(idx, n, d, IndexError, wrap=True)
        key = (slice(None),) * d + (np.unique(idx.reshape(-1) % n),)
        if isinstance(value, Tensor):
            return _put(self, key, value._value, value, "IndexFillBackward1")
        return _put(self, key, value, None, "IndexFillBackward0")


    # --- indexing ---------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        def as_int(i: Any) -> Any:  # a 0-dim signed-integer tensor indexes as its int: a select (a view)
            return builtins.int(value(i._value)) if isinstance(i, Tensor) and i.ndim == 0 \
                and i._value.dtype.kind == "i" else i

        key = tuple(as_int(i) for i in key) if isinstance(key, tuple) else as_int(key)
        k = _index_key(key)
        if not _basic_key(k):
            try:
                r = self._value[k]
            except (TypeError, ValueError) as e:
                raise index_device_clash(self._value, k) or e from None
            return _result(r, _index_name(key), (self,))
        r = self._value[k]
        if type(r) is not Traced:  # (recorded nothing: no node to name)
            if isinstance(r, np.generic):  # every axis indexed: a 0-d view, not NumPy's scalar copy
                r = self._value[(k if isinstance(k, tuple) else (k,)) + (Ellipsis,)]
            return _viewed(_result(r, "", (self,)), self, "index", k)
        # a lone slice is always a slice op, even one that keeps every element
        # (``w[:]``, ``w[0:100]``); in a tuple a no-op slice is skipped (``w[:, :]``: an alias)
        steps = ["SliceBackward0"] if isinstance(key, slice) else _index_steps(k, self._value.shape)
        t = _result(r, steps[-1] if steps else "AliasBackward0", (self,))
        core = t._value._node if type(t._value) is Traced else None
        if len(steps) > 1 and type(core) is FacadeEntry and core.input_parents[0] is not None:
            item = core.input_parents[0]  # PyTorch's chain: one view node per step (see FacadeEntry)
            for name in steps[:-1]:
                item = (name, item)
            core.input_parents = (item,)
        return _viewed(t, self, "index", k)

    def __setitem__(self, key: Any, v: Any) -> None:
        k = _index_key(key)
        val = _v(v)
        name = _index_name(key, setting=True)
        dt = self._value.dtype
        if isinstance(val, Traced) and val.dtype != dt:
            val = _cast(val, dt)

        def setitem(a: Any) -> Any:
            if type(a) is Traced or type(val) is Traced:
                return tp.index_set(a, tp.NormalizedIndex(k, a.ndim), val)
            if not a.flags.writeable:
                a = self._value = a.copy()
            a[k] = value(val)
            return _DONE

        self._inplace(name, setitem, (v if isinstance(v, Tensor) else None,))
