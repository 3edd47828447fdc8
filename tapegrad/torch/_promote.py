"""Dtype promotion and argument helpers of the facade (no tensors here).

PyTorch's result dtypes (``_promote``, ``_scalar_operand``), casts, the
default float, and the checks of ``dim`` / shape / bounds arguments. This
module sits below ``_tensor.py``: it imports nothing of the facade but
``_dtype``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced
from tapegrad.torch import _dtype as D

ndarray = np.ndarray
_generic = np.generic


def _np_dtype(dtype: Any) -> Any:
    return D.to_np(dtype)


def _cast(v: Any, dt: Any) -> Any:
    if v.dtype == dt:
        return v
    if type(v) is Traced:
        return tnp.astype(v, dt)
    return v.astype(dt)


def _default_float() -> Any:
    return D.get_default_dtype().np


def _cat(k: str) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[k]


def _promote(a: Any, b: Any, div: bool = False) -> tuple[Any, Any]:
    """Cast two tensor values to PyTorch's result dtype where NumPy's differs."""
    da, db = a.dtype, b.dtype
    if da != db:
        ka, kb = _cat(da.kind), _cat(db.kind)
        if ka != kb:
            if ka > kb:
                b = _cast(b, da if db.kind != "c" else db)
            else:
                a = _cast(a, db)
            da = db = a.dtype if ka > kb else b.dtype
        else:
            za, zb = a.ndim == 0, b.ndim == 0
            if za and not zb:
                a = _cast(a, db)
            elif zb and not za:
                b = _cast(b, da)
    if div and da.kind in "biu" and db.kind in "biu":
        f = _default_float()
        a, b = _cast(a, f), _cast(b, f)
    return a, b


def _scalar_operand(a: Any, s: Any, div: bool = False) -> Any:
    """Cast tensor value ``a`` for an op with Python scalar ``s`` (PyTorch's rules)."""
    k = a.dtype.kind
    if k in "biu":
        ts = type(s)
        if ts is builtins.float or (div and ts in (builtins.int, builtins.bool)):
            return _cast(a, _default_float())
        if ts is complex:
            return _cast(a, np.complex64)
        if ts is builtins.int and k == "b":
            return _cast(a, np.int64)
    return a



def _dims(dim: Any, ndim: int) -> Any:
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(d % builtins.max(ndim, 1) for d in dim) if ndim else tuple(dim)
    return dim



def _contiguous(v: Any) -> builtins.bool:
    """Is array ``v`` row-major with no gaps (PyTorch's ``is_contiguous``)?"""
    flags = getattr(v, "flags", None)
    return flags is None or builtins.bool(flags.c_contiguous)



def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(builtins.int(s) for s in shape)



_INT_INDEX = ("int64", "int32")

def _dim(dim: int, ndim: int) -> int:
    """``dim`` counted from 0, or PyTorch's IndexError when it is out of range."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _check_bounds(idx: Any, size: int, dim: int, exc: type[Exception] = RuntimeError,
                  wrap: builtins.bool = False) -> None:
    """PyTorch's error for an index outside ``[0, size)`` (``[-size, size)`` with ``wrap``)."""
    bad = (idx >= size) | (idx < (-size if wrap else 0))
    if bad.any():
        raise exc(f"index {idx[bad].flat[0]} is out of bounds for dimension {dim} with size {size}")


def _broadcast_shape(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of shapes ``sa`` and ``sb``, or PyTorch's error."""
    n = builtins.max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    for i, (p, q) in enumerate(zip(pa, pb)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) "
                               f"at non-singleton dimension {i}")
    return tuple(q if p == 1 else p for p, q in zip(pa, pb))
