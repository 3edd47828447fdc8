"""What the array API namespace and its ``linalg`` extension share."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tapegrad.core.traced import Traced
from tapegrad.numpy import derived as _d
from tapegrad.numpy import wrap as _w


def check_device(device: Any) -> None:
    """Refuse a device other than the CPU (the one NumPy has)."""
    if device is not None and device != "cpu":
        raise ValueError(f"tapegrad.numpy.array_api: unsupported device {device!r} (only 'cpu')")


def reduced(x: Any) -> Any:
    """A reduction's answer as an array: NumPy's scalars become 0-d arrays (the standard's rule)."""
    return np.asarray(x) if isinstance(x, np.generic) else x


def asarray_like(obj: Any, dtype: Any, copy: builtins.bool | None) -> Any:
    """``obj`` as an array (see ``asarray``)."""
    if _holds(obj):
        out = _d.asarray(obj, dtype)
        return _w.copy(out) if copy and out is obj else out
    return np.asarray(obj, dtype=dtype, copy=copy)


def _holds(obj: Any) -> builtins.bool:
    if type(obj) is Traced:
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_holds(o) for o in obj)


def matrix_transpose(x: Any, /) -> Any:
    """The transpose of each matrix of the stack ``x`` (its last two axes swapped)."""
    if np.ndim(x) < 2:
        raise ValueError("matrix_transpose: x must have at least two dimensions")
    return _d.swapaxes(x, -1, -2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """The sum of products over ``axes`` (an int, or two sequences of axes)."""
    return _d.tensordot(x1, x2, axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The dot product of vectors along ``axis``, the first one conjugated, broadcast over the rest."""
    x1c = _w.conjugate(x1) if np.iscomplexobj(np.empty((), dtype_of(x1))) else x1
    return _w.sum(_w.multiply(x1c, x2), axis=axis)


def dtype_of(x: Any) -> np.dtype:
    """The dtype of an array, a traced value, a scalar, or a dtype or type itself."""
    if isinstance(x, (np.dtype, type)):
        return np.dtype(x)
    got = getattr(x, "dtype", None)
    return np.dtype(got) if got is not None else np.asarray(x).dtype
