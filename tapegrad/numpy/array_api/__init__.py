"""tapegrad.numpy.array_api: the Python array API standard (2023.12), differentiable.

The namespace a traced value's ``__array_namespace__()`` returns, so that
code written against the standard (``xp = x.__array_namespace__()``: the
idiom of array-api-compat and of SciPy's and scikit-learn's array-API paths)
differentiates under ``grad``, ``jvp``, ``vmap``, ``jit`` and every
composition. Each function takes the standard's signature (positional-only
and keyword-only parameters as it writes them) and is built on
``tapegrad.numpy``: on plain arrays it returns NumPy's arrays, on traced
values it records. ``linalg`` and ``fft`` are the standard's extensions.

Where the standard and NumPy differ, this namespace follows the standard:
``concat``, ``permute_dims``, ``pow``, ``acos``..., ``std(correction=)``,
``sort(descending=)``, ``astype(copy=)``, ``unique_*``, ``vecdot``
(conjugating its first argument), reductions returning 0-d arrays. Devices:
``"cpu"`` (the one device NumPy has); dtypes are NumPy's.

Examples:
    >>> def logsumexp(x):
    ...     xp = x.__array_namespace__()
    ...     m = xp.max(x, axis=-1, keepdims=True)
    ...     return xp.log(xp.sum(xp.exp(x - m), axis=-1)) + m[..., 0]
    >>> tg.grad(lambda x: logsumexp(x))(np.zeros(4))
    array([0.25, 0.25, 0.25, 0.25])
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.core.primitive import nondifferentiable
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as _d
from tapegrad.numpy import shape_extra as _sx
from tapegrad.numpy import wrap as _w
from tapegrad.numpy.array_api import fft, linalg
from tapegrad.numpy.array_api._common import (
    asarray_like,
    check_device,
    matrix_transpose,
    reduced,
    tensordot,
    vecdot,
)
from tapegrad.numpy.array_api._common import dtype_of as _dtype_of
from tapegrad.numpy.nondiff import nondiff as _nd
from tapegrad.numpy.nondiff import unique as _unique

__array_api_version__ = "2023.12"
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12")

# --- constants and data types -----------------------------------------------------------------
e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

bool = np.dtype(np.bool_)  # noqa: A001  (the standard's name)
int8, int16, int32, int64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64"))
float32, float64 = np.dtype("float32"), np.dtype("float64")
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` cast to ``dtype``; a cast to a floating or complex dtype keeps the gradient."""
    check_device(device)
    if not copy and _dtype_of(x) == np.dtype(dtype):
        return x
    return _d.astype(x, dtype, copy=True)


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    return builtins.bool(np.can_cast(_dtype_of(from_), np.dtype(to)))


def finfo(type: Any, /) -> Any:  # noqa: A002
    return np.finfo(_dtype_of(type))


def iinfo(type: Any, /) -> Any:  # noqa: A002
    return np.iinfo(_dtype_of(type))


_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc",
}


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Is ``dtype`` of ``kind`` (a dtype, one of the standard's kind names, or a tuple of them)?"""
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}")
        return dtype.kind in _KINDS[kind]
    return dtype == np.dtype(kind)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[a if isinstance(a, (int, float, complex)) else _dtype_of(a)
                            for a in arrays_and_dtypes])


# --- creation ------------------------------------------------------------------------------
def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.arange(start, stop, step, dtype=dtype) if stop is not None else np.arange(start, step=step, dtype=dtype)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: builtins.bool | None = None) -> Any:
    """``obj`` as an array: a traced value stays traced (cast if ``dtype`` says
    so, copied if ``copy``); a list holding traced values is stacked into one."""
    check_device(device)
    return asarray_like(obj, dtype, copy)


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.empty(shape, dtype=dtype)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.empty(np.shape(x), dtype=dtype or _dtype_of(x))


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins.bool | None = None) -> Any:
    check_device(device)
    return np.from_dlpack(x)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _d.full(shape, fill_value, dtype=dtype)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return _d.full_like(x, fill_value, dtype=dtype)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: builtins.bool = True) -> Any:
    check_device(device)
    return _d.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids of 1-D arrays, each one of them broadcast (differentiable)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij'")
    n = len(arrays)
    sizes = [int(np.size(a)) for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        at = 1 - i if indexing == "xy" and n >= 2 and i < 2 else i
        shape = [1] * n
        shape[at] = int(np.size(a))
        out.append(_w.broadcast_to(_d.reshape(a, tuple(shape)), tuple(sizes)))
    return out


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.ones(shape, dtype=dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.ones(np.shape(x), dtype=dtype or _dtype_of(x))


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.zeros(shape, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    return np.zeros(np.shape(x), dtype=dtype or _dtype_of(x))


def tril(x: Any, /, *, k: int = 0) -> Any:
    return _w.tril(x, k)


def triu(x: Any, /, *, k: int = 0) -> Any:
    return _w.triu(x, k)


# --- element-wise functions ---------------------------------------------------------------
abs = _w.absolute  # noqa: A001
acos, acosh, asin, asinh = _w.arccos, _w.arccosh, _w.arcsin, _w.arcsinh
atan, atan2, atanh = _w.arctan, _w.arctan2, _w.arctanh
add, subtract, multiply, divide = _w.add, _w.subtract, _w.multiply, _w.divide
conj, real, imag = _w.conjugate, _w.real, _w.imag
cos, cosh, sin, sinh, tan, tanh = _w.cos, _w.cosh, _w.sin, _w.sinh, _w.tan, _w.tanh
exp, expm1, log, log1p, log2, log10 = _w.exp, _w.expm1, _w.log, _w.log1p, _w.log2, _w.log10
hypot, logaddexp, maximum, minimum = _w.hypot, _w.logaddexp, _w.maximum, _w.minimum
negative, positive, pow, remainder = _w.negative, _w.positive, _w.power, _w.remainder  # noqa: A001
reciprocal, sqrt, square = _w.reciprocal, _w.sqrt, _w.square

bitwise_and, bitwise_or, bitwise_xor = _nd["bitwise_and"], _nd["bitwise_or"], _nd["bitwise_xor"]
bitwise_invert = _nd["invert"]
bitwise_left_shift = nondifferentiable(np.left_shift)
bitwise_right_shift = nondifferentiable(np.right_shift)
ceil, floor, trunc, sign, signbit = _nd["ceil"], _nd["floor"], _nd["trunc"], _nd["sign"], _nd["signbit"]
equal, not_equal, greater, greater_equal = _nd["equal"], _nd["not_equal"], _nd["greater"], _nd["greater_equal"]
less, less_equal, floor_divide = _nd["less"], _nd["less_equal"], _nd["floor_divide"]
isfinite, isinf, isnan = _nd["isfinite"], _nd["isinf"], _nd["isnan"]
logical_and, logical_or, logical_xor, logical_not = (_nd["logical_and"], _nd["logical_or"],
                                                     _nd["logical_xor"], _nd["logical_not"])
nextafter = nondifferentiable(np.nextafter)
round = _nd["round"]  # noqa: A001


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """``x`` clipped to ``[min, max]`` (either may be None); traced bounds get gradients."""
    if min is None and max is None:
        return x
    return _w.clip(x, min, max)


def copysign(x1: Any, x2: Any, /) -> Any:
    """``|x1|`` with the sign of ``x2``: ``x1`` or ``-x1`` (its gradient +-1; none to ``x2``)."""
    flip_ = _nd["not_equal"](_nd["signbit"](x1), _nd["signbit"](x2))
    return _d.where(flip_, _w.negative(x1), x1)


# --- manipulation --------------------------------------------------------------------------
def broadcast_arrays(*arrays: Any) -> list[Any]:
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    return [_w.broadcast_to(a, shape) for a in arrays]


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*shapes))


def broadcast_to(x: Any, /, shape: tuple[int, ...]) -> Any:
    return _w.broadcast_to(x, tuple(shape))


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """Join ``arrays`` along ``axis`` (None: each flattened first)."""
    return _d.concatenate(list(arrays), axis=axis)


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    return _d.expand_dims(x, axis)


def flip(x: Any, /, *, axis: Any = None) -> Any:
    return _w.flip(x, axis)


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    return _d.moveaxis(x, source, destination)


def permute_dims(x: Any, /, axes: tuple[int, ...]) -> Any:
    return _w.transpose(x, tuple(axes))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    return _d.repeat(x, np.asarray(value(repeats)) if type(repeats) is Traced else repeats, axis)


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: builtins.bool | None = None) -> Any:
    out = _d.reshape(x, tuple(shape))
    return _w.copy(out) if copy else out


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    return _w.roll(x, shift, axis)


def squeeze(x: Any, /, axis: Any) -> Any:
    return _d.squeeze(x, axis)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    return _d.stack(list(arrays), axis=axis)


def tile(x: Any, repetitions: tuple[int, ...], /) -> Any:
    return _d.tile(x, repetitions)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""
    y = _d.moveaxis(x, axis, 0)
    return tuple(y[i] for i in range(np.shape(x)[axis]))


# --- indexing, searching, sorting, sets ---------------------------------------------------
def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    if axis is None and np.ndim(value(x)) != 1:
        raise ValueError("take: axis is required for an array of more than one dimension")
    return _d.take(x, indices, axis)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    return _d.take_along_axis(x, indices, axis)


def argmax(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    return reduced(_nd["argmax"](x, axis=axis, keepdims=keepdims))


def argmin(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    return reduced(_nd["argmin"](x, axis=axis, keepdims=keepdims))


_isin = nondifferentiable(np.isin)


def isin(x1: Any, x2: Any, /, *, invert: builtins.bool = False) -> Any:
    return _isin(x1, x2, invert=invert)


def nonzero(x: Any, /) -> tuple[Any, ...]:
    return tuple(_nd["nonzero"](x))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return reduced(_nd["count_nonzero"](x, axis=axis, keepdims=keepdims))


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    return _nd["searchsorted"](x1, x2, side=side, sorter=sorter)


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    return _d.where(condition, x1, x2)


def sort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Any:
    """``x`` sorted along ``axis`` (descending: largest first); differentiable."""
    if descending:
        return _w.negative(_d.sort(_w.negative(x), axis=axis, kind="stable"))
    return _d.sort(x, axis=axis, kind="stable")


def argsort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Any:
    """The indices that sort ``x`` along ``axis``; equal values keep their order."""
    if not descending:
        return _nd["argsort"](x, axis=axis, kind="stable")
    n = np.shape(x)[axis]
    flipped = _nd["argsort"](_w.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - np.asarray(flipped), axis) if type(flipped) is not Traced \
        else _w.flip(n - 1 - flipped, axis)


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _unique4(x: Any) -> tuple[Any, Any, Any, Any]:
    vals, idx, inv, counts = _unique(x, True, True, True, equal_nan=False)
    return vals, idx, np.reshape(inv, np.shape(x)), counts


def unique_all(x: Any, /) -> UniqueAllResult:
    return UniqueAllResult(*_unique4(x))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    vals, _, _, counts = _unique4(x)
    return UniqueCountsResult(vals, counts)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    vals, _, inv, _ = _unique4(x)
    return UniqueInverseResult(vals, inv)


def unique_values(x: Any, /) -> Any:
    return _unique(x, equal_nan=False)


# --- statistics and utilities --------------------------------------------------------------
def _cumulative(fn: Any, x: Any, axis: int | None, dtype: Any, include_initial: builtins.bool, start: float) -> Any:
    if axis is None:
        if np.ndim(value(x)) > 1:
            raise ValueError("cumulative_sum: axis is required for an array of more than one dimension")
        axis = 0
    out = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(np.shape(out))
        shape[axis] = 1
        out = _d.concatenate([np.full(shape, start, dtype=_dtype_of(out)), out], axis=axis)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: builtins.bool = False) -> Any:
    return _cumulative(_w.cumsum, x, axis, dtype, include_initial, 0.0)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: builtins.bool = False) -> Any:
    return _cumulative(_w.cumprod, x, axis, dtype, include_initial, 1.0)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Any:
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return _sx.diff(x, n=n, axis=axis, **kw)


def max(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:  # noqa: A001
    return reduced(_w.amax(x, axis=axis, keepdims=keepdims))


def min(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:  # noqa: A001
    return reduced(_w.amin(x, axis=axis, keepdims=keepdims))


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return reduced(_d.mean(x, axis=axis, keepdims=keepdims))


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Any:
    return reduced(_w.prod(x, axis=axis, dtype=dtype, keepdims=keepdims))


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Any:  # noqa: A001
    return reduced(_w.sum(x, axis=axis, dtype=dtype, keepdims=keepdims))


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False) -> Any:
    return reduced(_d.std(x, axis=axis, ddof=correction, keepdims=keepdims))


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: builtins.bool = False) -> Any:
    return reduced(_d.var(x, axis=axis, ddof=correction, keepdims=keepdims))


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:  # noqa: A001
    return reduced(_nd["all"](x, axis=axis, keepdims=keepdims))


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:  # noqa: A001
    return reduced(_nd["any"](x, axis=axis, keepdims=keepdims))


# --- linear algebra in the main namespace ---------------------------------------------------
matmul = _w.matmul


# --- inspection -----------------------------------------------------------------------------
class _Info:
    """What ``__array_namespace_info__()`` returns: the namespace's capabilities,
    devices and dtypes (the standard's inspection API)."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        check_device(device)
        return {"real floating": float64, "complex floating": complex128, "integral": int64, "indexing": int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        check_device(device)
        every = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
                 "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
                 "float32": float32, "float64": float64, "complex64": complex64, "complex128": complex128}
        return {k: v for k, v in every.items() if kind is None or isdtype(v, kind)}


def __array_namespace_info__() -> _Info:  # noqa: N807  (the standard's name)
    return _Info()


def namespace(api_version: str | None = None) -> Any:
    """This namespace, for ``__array_namespace__(api_version=...)``: ``None``
    or a version of the standard it follows (``2021.12`` to ``2023.12``)."""
    if api_version is not None and api_version not in SUPPORTED_VERSIONS:
        raise ValueError(f"tapegrad.numpy.array_api: unsupported api_version {api_version!r}; "
                         f"supported: {', '.join(SUPPORTED_VERSIONS)}")
    return sys.modules[__name__]


# the standard's names (tests/test_array_api_namespace.py checks them against array-api-strict)
__all__ = [
    "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "abs", "acos", "acosh", "add",
    "all", "any", "arange", "argmax", "argmin", "argsort", "asarray", "asin", "asinh", "astype",
    "atan", "atan2", "atanh", "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "bool", "broadcast_arrays", "broadcast_shapes",
    "broadcast_to", "can_cast", "ceil", "clip", "complex128", "complex64", "concat", "conj",
    "copysign", "cos", "cosh", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff",
    "divide", "e", "empty", "empty_like", "equal", "exp", "expand_dims", "expm1", "eye", "fft",
    "finfo", "flip", "float32", "float64", "floor", "floor_divide", "from_dlpack", "full",
    "full_like", "greater", "greater_equal", "hypot", "iinfo", "imag", "inf", "int16", "int32",
    "int64", "int8", "isdtype", "isfinite", "isin", "isinf", "isnan", "less", "less_equal",
    "linalg", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "matmul", "matrix_transpose", "max", "maximum",
    "mean", "meshgrid", "min", "minimum", "moveaxis", "multiply", "nan", "negative", "newaxis",
    "nextafter", "nonzero", "not_equal", "ones", "ones_like", "permute_dims", "pi", "positive",
    "pow", "prod", "real", "reciprocal", "remainder", "repeat", "reshape", "result_type", "roll",
    "round", "searchsorted", "sign", "signbit", "sin", "sinh", "sort", "sqrt", "square", "squeeze",
    "stack", "std", "subtract", "sum", "take", "take_along_axis", "tan", "tanh", "tensordot",
    "tile", "tril", "triu", "trunc", "uint16", "uint32", "uint64", "uint8", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "unstack", "var", "vecdot", "where",
    "zeros", "zeros_like"
]
