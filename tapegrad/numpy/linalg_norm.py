"""``tapegrad.numpy.linalg.norm``: matrix and vector norms, built from
primitives (no rule of its own). Re-exported by ``linalg``, which imports
this module; the singular values of the 2-norms come from ``np.linalg.svd``
on traced values, which NumPy's protocol sends to ``tnp.linalg.svd``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w

__all__ = ["norm"]


def _cplx(x: Any) -> bool:
    return np.iscomplexobj(value(x))


def _traced(*xs: Any) -> bool:
    return builtins.any(type(x) is Traced for x in xs)



def _abs2(x: Any) -> Any:
    return w.real(x * w.conjugate(x)) if _cplx(x) else x * x


def _sqrt_safe(ss: Any) -> Any:
    """``sqrt(ss)`` with gradient 0 (not NaN) where ``ss == 0`` (the double ``where``)."""
    zero = value(ss) == 0
    return w.where3(zero, 0.0, w.sqrt(w.where3(zero, 1.0, ss)))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm, as ``numpy.linalg.norm`` (every ``ord`` NumPy
    accepts). The 2-norm and Frobenius norm have gradient 0 at the zero
    vector, their minimum (a subgradient), instead of NaN."""
    x = d._listed(x)  # (a list holding traced values: NumPy's array_like)
    if not _traced(x):
        return np.linalg.norm(x, ord, axis, keepdims)
    nd = x.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            r = _sqrt_safe(w.sum(_abs2(d.ravel(x))))
            return d.reshape(r, (1,) * nd) if keepdims else r
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    axes = d.normalize_axes(axis, nd)
    if len(axes) == 1:
        r = _vector_norm(x, ord, axes[0])
    elif len(axes) == 2:
        r = _matrix_norm(x, ord, axes[0], axes[1])
    else:
        raise ValueError("Improper number of dimensions to norm.")
    if keepdims:
        r = d.reshape(r, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    return r


def _vector_norm(x: Any, ord: Any, ax: int) -> Any:
    if ord is None or ord == 2:
        return _sqrt_safe(w.sum(_abs2(x), axis=ax))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord == np.inf:
        return w.amax(w.absolute(x), axis=ax)
    if ord == -np.inf:
        return w.amin(w.absolute(x), axis=ax)
    if ord == 0:  # a count: no gradient
        v = value(x)
        return np.sum(v != 0, axis=ax).astype(v.real.dtype)
    if ord == 1:
        return w.sum(w.absolute(x), axis=ax)
    ax_abs = w.absolute(x)
    return w.sum(ax_abs ** ord, axis=ax) ** (1.0 / ord)


def _matrix_norm(x: Any, ord: Any, row: int, col: int) -> Any:
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (2, -2, "nuc"):
        s = np.linalg.svd(d.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)  # (tnp.linalg's, by dispatch)
        if ord == 2:
            return w.amax(s, axis=-1)
        if ord == -2:
            return w.amin(s, axis=-1)
        return w.sum(s, axis=-1)
    if ord in (None, "fro", "f"):
        return _sqrt_safe(w.sum(_abs2(x), axis=(row, col)))
    if ord in (1, -1):
        red = w.amax if ord == 1 else w.amin
        return red(w.sum(w.absolute(x), axis=row), axis=col - (col > row))
    if ord in (np.inf, -np.inf):
        red = w.amax if ord == np.inf else w.amin
        return red(w.sum(w.absolute(x), axis=col), axis=row - (row > col))
    raise ValueError("Invalid norm order for matrices.")
