"""More of NumPy's names, derived from the primitives (issue 14).

``append r_ c_ vsplit hsplit dsplit flipud fliplr rot90 rollaxis partition
gradient diff fabs nan_to_num real_if_close`` and every mode of ``pad``. Each is
NumPy's function (same signature, same result on plain arrays) written with
tapegrad's operations, so gradients, vmap and jit come with it. Called with no
traced argument each takes NumPy's own path.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.primitive import nondifferentiable
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w
from tapegrad.numpy.wrap import normalize_axis


def _traced(*xs: Any) -> bool:
    return builtins.any(d._holds_traced(x) for x in xs)


def _arr(a: Any) -> Any:
    return d.asarray(a) if d._holds_traced(a) else d._arr(a)


# --- joining and splitting ------------------------------------------------------------------------


def append(arr: Any, values: Any, axis: Any = None) -> Any:
    if not _traced(arr, values):
        return np.append(arr, values, axis=axis)
    arr, values = _arr(arr), _arr(values)
    if axis is None:
        return d.concatenate([d.ravel(arr), d.ravel(values)], axis=0)
    return d.concatenate([arr, values], axis=axis)


class _AxisConcatenator:
    """NumPy's ``r_`` / ``c_``: ``tnp.r_[0:3, x, 5]`` concatenates slices (as
    ``arange``/``linspace``), scalars and arrays; a leading string
    ``"axis,ndmin,trans1d"`` sets the layout, as in NumPy."""

    def __init__(self, np_obj: Any, axis: int, ndmin: int, trans1d: int) -> None:
        self._np, self._axis, self._ndmin, self._trans1d = np_obj, axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            key = (key,)
        xp = array_module(*[k for k in key if type(k) is Traced or hasattr(k, "ndim")])
        if not _traced(*key) and xp is np:  # (CuPy's r_/c_ take no slices nor directives: the path below)
            return self._np[key]
        axis, ndmin, trans1d = self._axis, self._ndmin, self._trans1d
        objs: list[Any] = []
        scalars: list[int] = []
        dtypes: list[Any] = []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise NotImplementedError("tapegrad r_/c_: the matrix directives 'r' and 'c' are not supported")
                parts = [int(p) for p in item.split(",")]
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
                continue
            if isinstance(item, slice):
                obj = xp.asarray(np.r_[item])  # a plain arange / linspace
                item_ndim = 1
            elif type(item) is not Traced and np.ndim(item) == 0 and not hasattr(item, "ndim") and not d._holds_traced(item):
                scalars.append(len(objs))
                objs.append(item)
                continue
            else:
                obj = _arr(item)
                item_ndim = obj.ndim
            objs.append(self._expand(obj, item_ndim, ndmin, trans1d) if ndmin > item_ndim else obj)
            dtypes.append(_arr(objs[-1]).dtype)
        final = np.result_type(*dtypes, *[objs[k] for k in scalars])
        out = []
        for k, obj in enumerate(objs):
            if k in scalars:
                obj = xp.full((1,) * builtins.max(ndmin, 1), obj, dtype=final)
            elif type(obj) is not Traced:
                obj = xp.asarray(obj, dtype=final)
            out.append(obj)
        return d.concatenate(out, axis=axis)

    @staticmethod
    def _expand(obj: Any, item_ndim: int, ndmin: int, trans1d: int) -> Any:
        obj = d.reshape(obj, (1,) * (ndmin - item_ndim) + tuple(obj.shape))
        if trans1d == -1:
            return obj
        k2, k1 = ndmin - item_ndim, trans1d
        if k1 < 0:
            k1 += k2 + 1
        axes = list(range(ndmin))
        return d.transpose(obj, tuple(axes[:k1] + axes[k2:] + axes[k1:k2]))

    def __len__(self) -> int:
        return 0


r_ = _AxisConcatenator(np.r_, 0, 1, -1)
c_ = _AxisConcatenator(np.c_, -1, 2, 0)


def _split_along(name: str, min_ndim: int, axis: Callable[[int], int]) -> Callable[[Any, Any], list[Any]]:
    """NumPy's ``name`` (``vsplit``...): ``split`` along ``axis(ndim)`` of an array of
    at least ``min_ndim`` dims."""
    np_fn = getattr(np, name)

    def split(ary: Any, indices_or_sections: Any) -> list[Any]:
        if not _traced(ary):
            return np_fn(ary, indices_or_sections)  # type: ignore[no-any-return]
        ary = _arr(ary)
        if ary.ndim < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return d.split(ary, indices_or_sections, axis(ary.ndim))  # type: ignore[no-any-return]

    split.__name__ = split.__qualname__ = name
    split.__doc__ = f"``numpy.{name}``: ``split`` along axis {axis(min_ndim)} (a list of arrays)."
    return split


vsplit = _split_along("vsplit", 2, lambda nd: 0)
hsplit = _split_along("hsplit", 1, lambda nd: 1 if nd > 1 else 0)
dsplit = _split_along("dsplit", 3, lambda nd: 2)


# --- rearranging --------------------------------------------------------------------------------------


def flipud(m: Any) -> Any:
    if not _traced(m):
        return np.flipud(m)
    m = _arr(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return w.flip(m, 0)


def fliplr(m: Any) -> Any:
    if not _traced(m):
        return np.fliplr(m)
    m = _arr(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return w.flip(m, 1)


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    if not _traced(m):
        return np.rot90(m, k, axes)
    m = _arr(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return w.flip(w.flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    a0, a1 = normalize_axis(axes[0], m.ndim), normalize_axis(axes[1], m.ndim)
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return w.transpose(w.flip(m, axes[1]), tuple(perm))
    return w.flip(w.transpose(m, tuple(perm)), axes[1])


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    if not _traced(a):
        return np.rollaxis(a, axis, start)
    a = _arr(a)
    n = a.ndim
    axis = normalize_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"start arg requires {-n} <= start < {n + 1}")
    if axis < start:
        start -= 1
    if axis == start:
        return a[...]
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return w.transpose(a, tuple(axes))


_argpartition = nondifferentiable(np.argpartition)  # (also on a vmap's or a jit's values)


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    if not _traced(a):
        return np.partition(a, kth, axis=axis, kind=kind, order=order)
    a = _arr(a)
    if axis is None:
        a, axis = d.ravel(a), -1
    idx = _argpartition(a, kth, axis=axis, kind=kind)
    return d.take_along_axis(a, idx, axis)


# --- differences ------------------------------------------------------------------------------------


def _sl(nd: int, axis: int, s: Any) -> tuple[Any, ...]:
    return (slice(None),) * axis + (s,) + (slice(None),) * (nd - axis - 1)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue) -> Any:  # type: ignore[attr-defined]
    if not _traced(a, prepend, append):
        return np.diff(a, n, axis, prepend, append)
    return _diff(a, n, axis, prepend, append)


def _diff(a: Any, n: int, axis: int, prepend: Any, append: Any) -> Any:
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _arr(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim)
    parts = []
    for v, at_end in ((prepend, False), (append, True)):
        if v is np._NoValue:  # type: ignore[attr-defined]
            continue
        v = array_module(a).asarray(v) if d._numbers(v) else _arr(v)  # (numbers: on a's device)
        if v.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            v = w.broadcast_to(v, tuple(shape))
        parts.append((at_end, v))
    if parts:
        a = d.concatenate([v for e, v in parts if not e] + [a] + [v for e, v in parts if e], axis=axis)
    for _ in range(n):
        a = a[_sl(a.ndim, axis, slice(1, None))] - a[_sl(a.ndim, axis, slice(None, -1))]
    return a


def _one_gradient(f: Any, axis: int, h: Any, edge_order: int) -> Any:
    nd = f.ndim

    def s(x: Any) -> Any:
        return f[_sl(nd, axis, x)]

    if np.ndim(h) == 0:
        inner = (s(slice(2, None)) - s(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            first = (s(slice(1, 2)) - s(slice(0, 1))) / h
            last = (s(slice(-1, None)) - s(slice(-2, -1))) / h
        else:
            first = (-1.5 * s(slice(0, 1)) + 2.0 * s(slice(1, 2)) - 0.5 * s(slice(2, 3))) / h
            last = (0.5 * s(slice(-3, -2)) - 2.0 * s(slice(-2, -1)) + 1.5 * s(slice(-1, None))) / h
        return d.concatenate([first, inner, last], axis=axis)
    dx = h[1:] - h[:-1]
    shape = [1] * nd
    shape[axis] = -1

    def col(c: Any) -> Any:
        return d.reshape(c, tuple(shape))

    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inner = col(a) * s(slice(None, -2)) + col(b) * s(slice(1, -1)) + col(c) * s(slice(2, None))
    if edge_order == 1:
        first = (s(slice(1, 2)) - s(slice(0, 1))) / dx[0]
        last = (s(slice(-1, None)) - s(slice(-2, -1))) / dx[-1]
    else:
        p, q = dx[0], dx[1]
        first = (-(2.0 * p + q) / (p * (p + q)) * s(slice(0, 1)) + (p + q) / (p * q) * s(slice(1, 2))
                 - p / (q * (p + q)) * s(slice(2, 3)))
        p, q = dx[-2], dx[-1]
        last = (q / (p * (p + q)) * s(slice(-3, -2)) - (q + p) / (p * q) * s(slice(-2, -1))
                + (2.0 * q + p) / (q * (p + q)) * s(slice(-1, None)))
    out = d.concatenate([first, inner, last], axis=axis)
    return d.astype(out, f.dtype) if out.dtype != f.dtype else out  # (coordinates in float64: NumPy's out has f's dtype)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    if not _traced(f, *varargs):
        return np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    f = _arr(f)
    if f.dtype.kind in "iub":
        f = d.astype(f, np.float64)
    axes = tuple(range(f.ndim)) if axis is None else d.normalize_axes(axis, f.ndim)
    if len(varargs) == 0:
        hs: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(value(varargs[0]) if type(varargs[0]) is Traced else varargs[0]) == 0:
        hs = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        hs = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    out = []
    for ax, h in zip(axes, hs):
        if isinstance(h, (list, tuple)):
            h = _arr(h) if _traced(h) else np.asarray(h, dtype=float)
        if np.ndim(h) == 1 and h.shape[0] != f.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if np.ndim(h) not in (0, 1):
            raise ValueError("distances must be either scalars or 1d")
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        out.append(_one_gradient(f, ax, h, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


# --- elementwise ------------------------------------------------------------------------------------------


def fabs(x: Any, /, out: Any = None, **kw: Any) -> Any:
    if not _traced(x):
        return np.fabs(x, **kw)
    d.known_keywords("fabs", kw, ("where", "casting", "order", "dtype", "subok", "signature"))
    x = _arr(x)
    if x.dtype.kind == "c":
        raise TypeError("ufunc 'fabs' not supported for the input types")
    return w.absolute(x)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    if not _traced(x):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    x = _arr(x)
    if x.dtype.kind == "c":
        re = nan_to_num(w.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(w.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return re + 1j * im
    if x.dtype.kind not in "fc":
        return x
    info = np.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    v = value(x)
    isnan, isinf, neg = np.isnan(v), np.isinf(v), np.signbit(v)
    y = w.where3(isnan, array_module(x).asarray(nan, x.dtype), x)
    y = w.where3(np.logical_and(isinf, np.logical_not(neg)), array_module(x).asarray(big, x.dtype), y)
    return w.where3(np.logical_and(isinf, neg), array_module(x).asarray(small, x.dtype), y)


def real_if_close(a: Any, tol: float = 100) -> Any:
    if not _traced(a):
        return np.real_if_close(a, tol)
    a = _arr(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(a.dtype).eps * tol
    if bool(np.all(np.absolute(w.imag(value(a))) < tol)):
        return w.real(a)
    return a


# --- pad, every mode ----------------------------------------------------------------------------------------

_STATS = ("maximum", "minimum", "mean", "median")


def _pairs(v: Any, nd: int) -> list[tuple[Any, Any]]:
    if v is None:
        return [(None, None)] * nd
    return [(p[0], p[1]) for p in np.broadcast_to(np.asarray(v), (nd, 2)).tolist()]


def _median(chunk: Any, axis: int) -> Any:
    n = chunk.shape[axis]
    s = d.sort(chunk, axis=axis)
    nd = chunk.ndim
    if n % 2:
        return s[_sl(nd, axis, slice(n // 2, n // 2 + 1))]
    return (s[_sl(nd, axis, slice(n // 2 - 1, n // 2))] + s[_sl(nd, axis, slice(n // 2, n // 2 + 1))]) / 2.0


def _stat(chunk: Any, axis: int, mode: str) -> Any:
    if mode == "maximum":
        return w.amax(chunk, axis=axis, keepdims=True)
    if mode == "minimum":
        return w.amin(chunk, axis=axis, keepdims=True)
    if mode == "mean":
        return d.mean(chunk, axis=axis, keepdims=True)
    return _median(chunk, axis)


def _pad_axis(a: Any, axis: int, lo: int, hi: int, mode: str, kw: dict[str, Any], extra: tuple[Any, Any]) -> Any:
    """Pads one axis of ``a`` (NumPy pads the axes one after the other, each
    seeing the padding of the axes before it)."""
    nd, n = a.ndim, a.shape[axis]
    shape_lo = a.shape[:axis] + (lo,) + a.shape[axis + 1 :]
    shape_hi = a.shape[:axis] + (hi,) + a.shape[axis + 1 :]
    if mode in ("reflect", "symmetric"):  # reflect_type="odd": linear, not a gather; its matrix
        widths = [(lo, hi), (0, 0)]
        mat = array_module(a).pad(array_module(a).eye(n, dtype=a.dtype), widths, mode=mode, reflect_type="odd")
        return d.moveaxis(w.matmul(d.moveaxis(a, axis, -1), mat.T), -1, axis)
    parts = []
    if mode == "linear_ramp":
        for width, end, at_end in ((lo, extra[0], False), (hi, extra[1], True)):
            if not width:
                continue
            edge = a[_sl(nd, axis, slice(n - 1, n) if at_end else slice(0, 1))]
            t = array_module(a).arange(width, dtype=a.dtype).reshape((-1,) + (1,) * (nd - axis - 1))
            ramp = t * ((edge - end) / width) + end
            parts.append((at_end, w.flip(ramp, axis) if at_end else ramp))
    else:  # maximum, minimum, mean, median of the first / last stat_length entries
        len_lo = n if extra[0] is None or extra[0] > n else int(extra[0])
        len_hi = n if extra[1] is None or extra[1] > n else int(extra[1])
        if (len_lo == 0 or len_hi == 0) and mode in ("maximum", "minimum"):
            raise ValueError("stat_length of 0 yields no value for padding")
        stat_lo = _stat(a[_sl(nd, axis, slice(0, len_lo))], axis, mode)
        if len_lo == len_hi == n:
            stat_hi = stat_lo
        else:
            stat_hi = _stat(a[_sl(nd, axis, slice(n - len_hi, n))], axis, mode)
        if lo:
            parts.append((False, w.broadcast_to(stat_lo, shape_lo)))
        if hi:
            parts.append((True, w.broadcast_to(stat_hi, shape_hi)))
    if not parts:
        return a
    return d.concatenate([p for e, p in parts if not e] + [a] + [p for e, p in parts if e], axis=axis)


def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    if not _traced(array) and (mode != "median" or type(array) is np.ndarray):  # (CuPy's pad has no median)
        return np.pad(array, pad_width, mode=mode, **kwargs)
    x = _arr(array)
    if callable(mode):
        raise NotImplementedError("tapegrad pad: a function as `mode` is not supported on traced values")
    np.pad(np.zeros(x.shape, dtype=x.dtype), pad_width, mode=mode, **kwargs)  # NumPy's checks and errors
    if mode in ("constant", "empty"):  # ("empty" leaves the new entries undefined: zeros here)
        return w.pad(x, pad_width, mode="constant", **kwargs)
    odd = kwargs.get("reflect_type", "even") == "odd"
    if mode in ("edge", "wrap") or (mode in ("reflect", "symmetric") and not odd):
        src = np.pad(np.arange(x.size).reshape(x.shape), pad_width, mode=mode)  # the source of each entry
        return d.ravel(x)[src]
    widths = [(int(p[0]), int(p[1])) for p in np.broadcast_to(np.asarray(pad_width, dtype=int), (x.ndim, 2))]
    extra = _pairs(kwargs.get("end_values", 0) if mode == "linear_ramp" else kwargs.get("stat_length"), x.ndim)
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            x = _pad_axis(x, axis, lo, hi, mode, kwargs, extra[axis])
    return x
