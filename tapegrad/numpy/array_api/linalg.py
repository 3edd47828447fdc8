"""The array API standard's ``linalg`` extension (2023.12), differentiable:
``tapegrad.numpy.linalg`` under the standard's names and signatures."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapegrad.core.primitive import nondifferentiable
from tapegrad.core.traced import value
from tapegrad.numpy import derived as _d
from tapegrad.numpy import linalg as _la
from tapegrad.numpy import wrap as _w
from tapegrad.numpy.array_api._common import matrix_transpose, tensordot, vecdot
from tapegrad.numpy.linalg import EighResult, QRResult, SlogdetResult, SVDResult

__all__ = ["EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cross", "det",
           "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]

det, eigh, eigvalsh, inv, slogdet, svdvals = _la.det, _la.eigh, _la.eigvalsh, _la.inv, _la.slogdet, _la.svdvals
matmul = _w.matmul


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    return _la.cholesky(x, upper=upper)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return _d.cross(x1, x2, axis=axis)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return _w.diagonal(x, offset, -2, -1)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    return _la.norm(x, ord, axis=(-2, -1), keepdims=keepdims)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` to the integer power ``n`` (a negative ``n`` inverts first), by repeated squaring."""
    if n < 0:
        x, n = _la.inv(x), -n
    if n == 0:
        shape = np.shape(x)
        return np.broadcast_to(np.eye(shape[-1], dtype=np.result_type(x.dtype if hasattr(x, "dtype") else x)), shape).copy()
    out = None
    while n:
        if n & 1:
            out = x if out is None else _w.matmul(out, x)
        n >>= 1
        if n:
            x = _w.matmul(x, x)
    return out


_matrix_rank = nondifferentiable(np.linalg.matrix_rank)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    return _matrix_rank(x, rtol=rtol)


def outer(x1: Any, x2: Any, /) -> Any:
    return _d.outer(x1, x2)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    return _la.pinv(x) if rtol is None else _la.pinv(x, rtol=rtol)


def qr(x: Any, /, *, mode: str = "reduced") -> Any:
    return _la.qr(x, mode)


def solve(x1: Any, x2: Any, /) -> Any:
    return _la.solve(x1, x2)


def svd(x: Any, /, *, full_matrices: bool = True) -> Any:
    return _la.svd(x, full_matrices=full_matrices)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return _d.trace(x, offset, -2, -1, dtype)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    """The ``ord``-norm of the vectors along ``axis`` (None: all of ``x`` as one
    vector; a tuple: those axes as one); 0 gradient at the zero vector for ``ord=2``."""
    shape = tuple(np.shape(x))
    nd = len(shape)
    axes = tuple(range(nd)) if axis is None else tuple(
        a % nd if nd else a for a in ((axis,) if isinstance(axis, int) else axis))
    rest = tuple(i for i in range(nd) if i not in axes)
    y = _w.transpose(x, rest + axes) if nd else x
    y = _d.reshape(y, tuple(shape[i] for i in rest) + (math.prod(shape[i] for i in axes),))
    out = _la.norm(y, ord, axis=-1)
    if keepdims:
        out = _d.reshape(out, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return np.asarray(out) if isinstance(out, np.generic) else out


del value
