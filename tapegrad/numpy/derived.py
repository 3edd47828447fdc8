"""Functions built from the primitives: they need no rules of their own.

Each is NumPy's function of the same name (same signature, same result on
plain arrays) written with tapegrad primitives, so it differentiates to any
order. Called with no traced argument most take NumPy's own path.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import shapes as _s
from tapegrad.numpy import wrap as w
from tapegrad.numpy.wrap import Index, normalize_axes, normalize_axis
from tapegrad.numpy.wrap import reduction_size as _count
from tapegrad.typing import Array, ArrayLike, Elementwise


def _traced(*xs: Any) -> bool:
    """Whether any argument is traced or is a list or tuple holding a traced value."""
    return builtins.any(type(x) is Traced or (isinstance(x, (list, tuple)) and _holds_traced(x)) for x in xs)


def _arr(a: Any) -> Any:
    if type(a) is Traced or hasattr(a, "ndim"):
        return a
    return array(a) if _holds_traced(a) or _device_list(a) else np.asarray(a)


def known_keywords(name: str, kw: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Raise NumPy's ``TypeError`` (naming ``name``) for a keyword of ``kw``
    that NumPy's function ``name`` does not take: the traced path of a
    function that takes NumPy's rarer keywords as ``**kw`` must not drop a
    misspelt one silently."""
    for k in kw:
        if k not in allowed:
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")


def _listed(a: Any) -> Any:
    """A list or tuple that holds traced values, as one traced array (NumPy's array_like)."""
    return array(a) if type(a) is not Traced and (_holds_traced(a) or _device_list(a)) else a


# --- reductions --------------------------------------------------------------------------


def mean(a: ArrayLike, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Array:
    a = _listed(a)
    if not _traced(a):
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    known_keywords("mean", kw, ())
    if dtype is not None and np.dtype(dtype).kind in "fc":  # cast first (no entry when it is a's dtype)
        a = astype(a, dtype, copy=False)
        dtype = None
    if dtype is None:  # one entry (the fused primitive)
        return w.mean(a, axis, keepdims)
    s = w.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)
    return s / _count(a.shape, axis)


def var(a: ArrayLike, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0, keepdims: bool = False, **kw: Any) -> Array:
    a = _listed(a)
    if not _traced(a):
        return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)
    known_keywords("var", kw, ())
    d = a - mean(a, axis=axis, dtype=dtype, keepdims=True)
    sq = w.real(d * w.conjugate(d)) if np.iscomplexobj(value(a)) else d * d
    return w.sum(sq, axis=axis, keepdims=keepdims) / builtins.max(_count(a.shape, axis) - ddof, 0)


def std(a: ArrayLike, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0, keepdims: bool = False, **kw: Any) -> Array:
    a = _listed(a)
    if not _traced(a):
        return np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)
    known_keywords("std", kw, ())
    v = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    # sqrt's slope is infinite at 0, where var's is 0: their product would be NaN.
    # Where the spread is 0 (a constant, or one element along the axis) the
    # gradient is 0, as PyTorch and HIPS autograd give: sqrt reads 1 there (a
    # constant branch, so no gradient flows through it) and the mask makes it 0.
    spread = value(v) > 0
    return w.sqrt(w.where3(spread, v, 1.0)) * spread


def average(a: ArrayLike, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    if not _traced(a, weights):
        return np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)
    a, weights = _listed(a), _listed(weights)
    a = _arr(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        scl = np.asarray(_count(a.shape, axis), dtype=value(avg).dtype)
        return (avg, np.broadcast_to(scl, value(avg).shape)) if returned else avg
    wt = _arr(weights)
    if wt.shape != a.shape:
        if axis is None or wt.ndim != 1:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        shape = [1] * a.ndim
        shape[normalize_axis(axis, a.ndim)] = wt.shape[0]
        wt = reshape(wt, shape)
    scl = w.sum(w.broadcast_to(wt, a.shape), axis=axis, keepdims=keepdims)
    avg = w.sum(a * wt, axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


def logsumexp(a: ArrayLike, axis: Any = None, b: ArrayLike = None, keepdims: bool = False, return_sign: bool = False) -> Any:
    """``log(sum(b * exp(a)))``, computed stably (SciPy's signature)."""
    if return_sign:
        raise NotImplementedError("tapegrad logsumexp: return_sign=True is not supported")
    if b is not None:
        a = a + w.log(b)
    return w.logsumexp(_arr(a), axis=axis, keepdims=keepdims)


# --- shape --------------------------------------------------------------------------------


def reshape(a: ArrayLike, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Array:
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    a = _arr(a)
    if order == "F":
        return transpose(w.reshape_c(transpose(a), shape[::-1]))
    if order not in ("C", "A"):
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    return w.reshape_c(a, shape)


transpose = w.transpose  # the primitive itself: NumPy's signature (array-likes too), no front-end


def ravel(a: ArrayLike, order: str = "C") -> Array:
    return reshape(a, (-1,), order=order)


def expand_dims(a: ArrayLike, axis: Any) -> Array:
    return _s.expand_dims(_arr(a), axis)


def squeeze(a: ArrayLike, axis: Any = None) -> Array:
    a = _arr(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = normalize_axes(axis, a.ndim)
        for x in axes:
            if a.shape[x] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return w.reshape_c(a, tuple(n for i, n in enumerate(a.shape) if i not in axes))


def moveaxis(a: ArrayLike, source: Any, destination: Any) -> Array:
    return _s.moveaxis(_arr(a), source, destination)


def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    return _s.swapaxes(_arr(a), axis1, axis2)


def _atleast(nd: int, arys: tuple[Any, ...]) -> Any:
    res = []
    for a in arys:
        a = _arr(a)
        if a.ndim < nd:
            shape = {1: (1,), 2: (1,) + a.shape, 3: (1,) + a.shape + (1,)}
            shape[3] = (1, 1, 1) if a.ndim == 0 else ((1,) + a.shape + (1,) if a.ndim == 1 else a.shape + (1,))
            shape[2] = (1, 1) if a.ndim == 0 else (1,) + a.shape
            a = w.reshape_c(a, shape[nd])
        res.append(a)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys: ArrayLike) -> Any:
    return _atleast(1, arys)


def atleast_2d(*arys: ArrayLike) -> Any:
    return _atleast(2, arys)


def atleast_3d(*arys: ArrayLike) -> Any:
    return _atleast(3, arys)


def concatenate(arrays: Sequence[ArrayLike], axis: Any = 0, out: Any = None, **kw: Any) -> Array:
    arrays = list(arrays)
    if not _traced(*arrays):
        return np.concatenate(arrays, axis=axis, **kw)
    known_keywords("concatenate", kw, ("dtype", "casting"))
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    arrays = [_arr(a) for a in arrays]
    return w.concatenate_args(normalize_axis(axis, arrays[0].ndim), *arrays)


def stack(arrays: Sequence[ArrayLike], axis: int = 0, out: Any = None, **kw: Any) -> Array:
    arrays = list(arrays)
    if not _traced(*arrays):
        return np.stack(arrays, axis=axis, **kw)
    known_keywords("stack", kw, ("dtype", "casting"))
    if not arrays:
        raise ValueError("need at least one array to stack")
    arrays = [_arr(a) for a in arrays]
    ax = normalize_axis(axis, arrays[0].ndim + 1)
    return w.concatenate_args(ax, *[expand_dims(a, ax) for a in arrays])


def hstack(tup: Sequence[ArrayLike], **kw: Any) -> Array:
    known_keywords("hstack", kw, ("dtype", "casting"))
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1, **kw)


def vstack(tup: Sequence[ArrayLike], **kw: Any) -> Array:
    known_keywords("vstack", kw, ("dtype", "casting"))
    return concatenate([atleast_2d(a) for a in tup], axis=0, **kw)


def dstack(tup: Sequence[ArrayLike]) -> Array:
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def column_stack(tup: Sequence[ArrayLike]) -> Array:
    cols = [reshape(a, (-1, 1)) if _arr(a).ndim < 2 else a for a in tup]
    return concatenate(cols, axis=1)


def _axis_slice(a: Any, axis: int, start: int, stop: int) -> Any:
    return a[(slice(None),) * axis + (slice(start, stop),)]


def array_split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    if not _traced(ary):
        return np.array_split(ary, indices_or_sections, axis=axis)
    ary = _arr(ary)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = [0] + list(indices_or_sections) + [n]
    ax = normalize_axis(axis, ary.ndim)
    return [_axis_slice(ary, ax, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    if isinstance(indices_or_sections, (int, np.integer)) and _arr(ary).shape[axis] % indices_or_sections:
        raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis=axis)


def tile(A: ArrayLike, reps: Any) -> Array:
    if not _traced(A):
        return np.tile(A, reps)
    A = _arr(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    nd = builtins.max(A.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    A = reshape(A, (1,) * (nd - A.ndim) + A.shape)
    inter = tuple(x for n in A.shape for x in (1, n))
    big = tuple(x for r, n in zip(reps, A.shape) for x in (r, n))
    out = w.broadcast_to(reshape(A, inter), big)
    return reshape(out, tuple(r * n for r, n in zip(reps, A.shape)))


def take(a: ArrayLike, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Array:
    if not _traced(a, indices):
        return np.take(a, indices, axis=axis, **({"mode": mode} if mode != "raise" else {}))
    a = _arr(a)
    if type(indices) is not Traced:  # (positions a jit computed stay traced: the jit records them)
        indices = array_module(indices).asarray(indices)  # (device indices stay on the device)
    if axis is None:
        a, axis = ravel(a), 0
    ax = normalize_axis(axis, np.ndim(a))
    if mode != "raise":  # (NumPy's out-of-range modes, as positions in range: the gradient follows them)
        n = a.shape[ax]
        if mode == "clip":
            indices = w.clip(indices, 0, n - 1) if type(indices) is Traced else array_module(indices).clip(indices, 0, n - 1)
        elif mode == "wrap":
            indices = indices % n
        else:
            raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return w.getitem(a, Index((slice(None),) * ax + (indices,), np.ndim(a)))


def repeat(a: ArrayLike, repeats: Any, axis: Any = None) -> Array:
    if not _traced(a):
        return np.repeat(a, repeats, axis=axis)
    a = _arr(a)
    if axis is None:
        a, axis = ravel(a), 0
    n = a.shape[axis]
    return take(a, np.repeat(np.arange(n), repeats), axis=axis)


def _this_module() -> Any:
    import sys

    return sys.modules["tapegrad.numpy"]


def take_along_axis(arr: ArrayLike, indices: Any, axis: Any) -> Array:
    if not _traced(arr):
        return np.take_along_axis(arr, indices, axis)
    arr = _arr(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = normalize_axis(axis, arr.ndim)
    if type(indices) is Traced:  # indices that differ per example (vmap): tapegrad's own ops
        xp: Any = _this_module()
    else:
        xp = array_module(indices)
        indices = xp.asarray(indices)
    shape = np.broadcast_shapes(arr.shape[:ax] + (1,) + arr.shape[ax + 1 :], indices.shape[:ax] + (1,) + indices.shape[ax + 1 :])
    shape = shape[:ax] + (indices.shape[ax],) + shape[ax + 1 :]
    idx = xp.broadcast_to(indices, shape)
    idx = xp.where(idx < 0, idx + arr.shape[ax], idx)
    strides = [math.prod(arr.shape[d + 1 :]) for d in range(arr.ndim)]
    flat = idx * strides[ax]
    for d in range(arr.ndim):
        if d != ax:
            grid = array_module(arr).arange(shape[d]).reshape((-1,) + (1,) * (arr.ndim - d - 1))
            flat = flat + grid * strides[d]
    return ravel(arr)[flat]


def sort(a: ArrayLike, axis: Any = -1, kind: Any = None, order: Any = None) -> Array:
    if not _traced(a):
        return np.sort(a, axis=axis, kind=kind, **({"order": order} if order is not None else {}))
    a = _arr(a)
    if axis is None:
        a, axis = ravel(a), -1
    idx = np.argsort(value(a), axis=axis, kind=kind)
    return take_along_axis(a, idx, axis)


def diag(v: ArrayLike, k: int = 0) -> Array:
    v = _arr(v)
    if v.ndim == 1:
        return w.diag_from_vector(v, k)
    if v.ndim == 2:
        return w.diagonal(v, k)
    raise ValueError("Input must be 1- or 2-d.")


def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Array:
    if not _traced(a):
        return np.trace(a, offset, axis1, axis2, dtype=dtype)
    a = _arr(a)
    return w.sum(w.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


# --- products -----------------------------------------------------------------------------


def tensordot(a: ArrayLike, b: ArrayLike, axes: Any = 2) -> Array:
    if not _traced(a, b):
        return np.tensordot(a, b, axes)
    a, b = _arr(a), _arr(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
    ax_a = [normalize_axis(x, a.ndim) for x in ax_a]
    ax_b = [normalize_axis(x, b.ndim) for x in ax_b]
    if [a.shape[i] for i in ax_a] != [b.shape[i] for i in ax_b]:
        raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = math.prod(a.shape[i] for i in ax_a)
    at = reshape(w.transpose(a, tuple(free_a + ax_a)), (math.prod(a.shape[i] for i in free_a), k))
    bt = reshape(w.transpose(b, tuple(ax_b + free_b)), (k, math.prod(b.shape[i] for i in free_b)))
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return reshape(w.matmul(at, bt), out_shape)


def dot(a: ArrayLike, b: ArrayLike, out: Any = None) -> Array:
    if not _traced(a, b):
        return np.dot(a, b)
    a, b = _arr(a), _arr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim <= 2 and b.ndim <= 2:
        return w.matmul(a, b)
    return tensordot(a, b, ([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def vdot(a: ArrayLike, b: ArrayLike) -> Array:
    if not _traced(a, b):
        return np.vdot(a, b)
    return w.sum(w.conjugate(ravel(a)) * ravel(b))


def inner(a: ArrayLike, b: ArrayLike) -> Array:
    if not _traced(a, b):
        return np.inner(a, b)
    a, b = _arr(a), _arr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([-1], [-1]))


def outer(a: ArrayLike, b: ArrayLike, out: Any = None) -> Array:
    if not _traced(a, b):
        return np.outer(a, b)
    return reshape(a, (-1, 1)) * reshape(b, (1, -1))


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    if not _traced(a, b):
        return np.kron(a, b)
    a, b = _arr(a), _arr(b)
    nd = builtins.max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    a2 = reshape(a, tuple(x for n in sa for x in (n, 1)))
    b2 = reshape(b, tuple(x for n in sb for x in (1, n)))
    return reshape(a2 * b2, tuple(p * q for p, q in zip(sa, sb)))


def cross(a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None) -> Array:
    if not _traced(a, b):
        return np.cross(a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(_arr(a), axisa, -1)
    b = moveaxis(_arr(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a0 * b1 - a1 * b0
    a2 = a[..., 2] if a.shape[-1] == 3 else 0.0
    b2 = b[..., 2] if b.shape[-1] == 3 else 0.0
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


def _sublist(sub: Any) -> str:
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
            out.append(letters[int(s)])
        else:
            raise ValueError("subscript is not within the valid range [0, 52)")
    return "".join(out)


def einsum(*operands: Any, optimize: Any = False, **kw: Any) -> Any:
    if not isinstance(operands[0], str):  # the interleaved form: op0, sublist0, op1, sublist1, ..., [out]
        ops, subs = operands[0::2], operands[1::2]
        spec = ",".join(_sublist(s) for s in subs[: len(ops)])
        if len(operands) % 2:  # an output sublist
            spec += "->" + _sublist(ops[-1])
            ops = ops[:-1]
        if len(subs) < len(ops):
            raise ValueError("einsum: each operand needs a sublist")
        operands = (spec, *ops)
    return w.einsum_args(operands[0], *[_arr(o) for o in operands[1:]], optimize=optimize, **kw)


matmul: Elementwise = w.matmul  # the primitive itself: NumPy's signature, no front-end


# --- selection and construction ---------------------------------------------------------------


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        c = value(condition)  # (a vmap's or a jit's value stays traced: np.where would come back here)
        return w.nondiff["nonzero"](c) if type(c) is Traced else np.where(c)
    return w.where3(value(condition), x, y)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Array:
    if not _traced(*choicelist, default):
        return np.select([value(c) for c in condlist], choicelist, default)
    out = default
    for c, choice in zip(reversed(list(condlist)), reversed(list(choicelist))):
        out = w.where3(value(c), choice, out)
    return out


def angle(z: ArrayLike, deg: bool = False) -> Array:
    if not _traced(z) or not np.iscomplexobj(value(z)):
        v = value(z)
        if type(v) is not Traced:
            return np.angle(v, deg=deg)
        a = w.arctan2(0, v)  # (NumPy's angle of a real value; a vmap's or a jit's value stays
        return a * (180 / np.pi) if deg else a  # traced: np.angle would come back here)
    a = w.arctan2(w.imag(z), w.real(z))
    return a * (180 / np.pi) if deg else a


def _holds_traced(obj: Any) -> bool:
    if type(obj) is Traced:
        return True
    if isinstance(obj, (list, tuple)):
        return builtins.any(_holds_traced(o) for o in obj)
    return False


def _leaves(obj: Any) -> list[Any]:
    """The entries of nested lists and tuples."""
    return [v for o in obj for v in _leaves(o)] if isinstance(obj, (list, tuple)) else [obj]


def _device_list(obj: Any) -> bool:
    """Whether ``obj`` is a list or tuple holding device (CuPy) arrays."""
    return isinstance(obj, (list, tuple)) and array_module(*_leaves(obj)) is not np


def _numbers(obj: Any) -> bool:
    """Whether ``obj`` is a Python or NumPy scalar, or nested lists of them (no array)."""
    return builtins.all(isinstance(v, (bool, int, float, complex, np.generic)) for v in _leaves(obj))


def array(obj: ArrayLike, dtype: Any = None, *args: Any, **kw: Any) -> Array:
    if type(obj) is Traced or _holds_traced(obj):
        known_keywords("array", kw, ("copy", "order", "subok", "ndmin", "like"))
    if type(obj) is Traced:
        out = w.copy(obj)
    elif _holds_traced(obj) or _device_list(obj):
        xp = array_module(*_leaves(obj))  # (numbers beside traced or device values go to their device)
        out = stack([xp.asarray(o) if _numbers(o) else array(o) for o in obj])
    else:
        return array_module(obj).array(obj, dtype, *args, **kw)
    return out if dtype is None else astype(out, dtype)




def asarray(a: ArrayLike, dtype: Any = None, *args: Any, **kw: Any) -> Array:
    if type(a) is Traced or _holds_traced(a):
        known_keywords("asarray", kw, ("order", "device", "copy", "like"))
    if type(a) is Traced:
        return a if dtype is None or np.dtype(dtype) == a.dtype else astype(a, dtype)
    if _holds_traced(a) or _device_list(a):
        return array(a, dtype)
    return array_module(a).asarray(a, dtype, *args, **kw)


def astype(x: Any, dtype: Any, copy: bool = True) -> Array:
    dtype = np.dtype(dtype)
    if type(x) is not Traced or dtype.kind not in "fc":
        v = value(x)  # integer / bool results carry no gradient
        if type(v) is Traced:  # (batched by vmap or traced by jit: those levels cast it)
            return w.astype_float(v, dtype)
        return v.astype(dtype)
    if dtype == x.dtype and not copy:
        return x
    return w.astype_float(x, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kw: Any) -> Array:
    if not _traced(fill_value):
        return array_module(fill_value).full(shape, fill_value, dtype=dtype, order=order, **kw)
    fill = astype(fill_value, dtype) if dtype is not None else fill_value
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return w.copy(w.broadcast_to(fill, shape))


def full_like(a: ArrayLike, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Array:
    if not _traced(a, fill_value):
        return np.full_like(a, fill_value, dtype=dtype, order=order, subok=subok, shape=shape)
    shape = np.shape(a) if shape is None else shape  # (a traced value's own shape and dtype: inside
    if dtype is None:                               # vmap, one example's; np.full_like(a) calls back here)
        dtype = a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype
    if not _traced(fill_value):
        return np.full(shape, fill_value, dtype=dtype, order="C" if order == "K" else order)
    return full(shape, fill_value, dtype=dtype)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None, axis: int = 0) -> Array:
    if not _traced(start, stop):
        return np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
    start, stop = _arr(start), _arr(stop)
    div = (num - 1) if endpoint else num
    t = array_module(start, stop).arange(num, dtype=np.result_type(value(start), value(stop), float(num)))
    t = t / (div if div > 0 else 1)
    nd = builtins.max(start.ndim, stop.ndim)
    t = t.reshape((num,) + (1,) * nd)
    out = start + (stop - start) * t
    if axis != 0:
        out = moveaxis(out, 0, axis)
    if dtype is not None:
        out = astype(out, dtype)
    return (out, (stop - start) / div) if retstep else out
