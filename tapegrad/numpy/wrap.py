"""The primitives of tapegrad.numpy: one wrapper line each.

Most are NumPy's own functions made differentiable with ``primitive``; a few
have small implementations here because their rules need a handle NumPy does
not give (``concatenate`` with arrays as positional arguments, indexing with
batch axes, ``einsum`` with operands as positional arguments). The three
indexing primitives have front-ends that lift the indexed array to the vmap
levels of an index computed per example (see ``lift``).
Their VJP rules live in ``vjps.py``. Functions with no derivative (or a zero
one) are wrapped with ``nondifferentiable``: they read traced values by value.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axes, normalize_axis
from tapegrad.backend import array_module
from tapegrad.batching import BatchTrace
from tapegrad.compile.facts import defjit
from tapegrad.engine_ops import broadcast_to, sum_to
from tapegrad.primitive import (
    REGISTRY,
    defjvp,
    defvjp,
    mark_batched,
    nondifferentiable,
    primitive,
    top_tape,
)
from tapegrad.tracer import Traced, value

__all__ = ["broadcast_to", "normalize_axes", "normalize_axis", "sum_to"]


# --- axes ------------------------------------------------------------------------------------
def reduction_size(shape: tuple[int, ...], axis: Any) -> int:
    """How many elements a reduction over ``axis`` of an array of ``shape`` combines into each result."""
    return math.prod(shape[a] for a in normalize_axes(axis, len(shape)))


# --- elementwise, one argument -----------------------------------------------------
_OWN_FROM = len(REGISTRY)  # this module's primitives follow (see mark_batched)
negative = primitive(np.negative)
positive = primitive(np.positive)
absolute = primitive(np.absolute)
sqrt = primitive(np.sqrt)
cbrt = primitive(np.cbrt)
square = primitive(np.square)
exp = primitive(np.exp)
exp2 = primitive(np.exp2)
expm1 = primitive(np.expm1)
log = primitive(np.log)
log2 = primitive(np.log2)
log10 = primitive(np.log10)
log1p = primitive(np.log1p)
sin = primitive(np.sin)
cos = primitive(np.cos)
tan = primitive(np.tan)
arcsin = primitive(np.arcsin)
arccos = primitive(np.arccos)
arctan = primitive(np.arctan)
sinh = primitive(np.sinh)
cosh = primitive(np.cosh)
tanh = primitive(np.tanh)
arcsinh = primitive(np.arcsinh)
arccosh = primitive(np.arccosh)
arctanh = primitive(np.arctanh)
reciprocal = primitive(np.reciprocal)
deg2rad = primitive(np.deg2rad)
rad2deg = primitive(np.rad2deg)
conjugate = primitive(np.conjugate)
real = primitive(np.real)
imag = primitive(np.imag)
sinc = primitive(np.sinc)

# --- elementwise, two or three arguments (broadcasting) --------------------------------
add = primitive(np.add)
subtract = primitive(np.subtract)
multiply = primitive(np.multiply)
divide = primitive(np.divide)
power = primitive(np.power)
arctan2 = primitive(np.arctan2)
maximum = primitive(np.maximum)
minimum = primitive(np.minimum)
fmax = primitive(np.fmax)
fmin = primitive(np.fmin)
hypot = primitive(np.hypot)
logaddexp = primitive(np.logaddexp)
logaddexp2 = primitive(np.logaddexp2)
remainder = primitive(np.remainder)
fmod = primitive(np.fmod)
clip_bounds = primitive(np.clip, "clip")  # the primitive: bounds by position, ``clip(a, lo, hi)``
_UNSET: Any = object()


def clip(a: Any, a_min: Any = _UNSET, a_max: Any = _UNSET, out: Any = None, **kwargs: Any) -> Any:
    """``np.clip(a, a_min, a_max)``, the bounds given by position or by keyword
    (``a_min=``/``a_max=``, or NumPy 2's ``min=``/``max=``): one ``clip`` entry
    whose bounds are positional arguments, so traced bounds get gradients too."""
    for key, pos in (("min", a_min), ("max", a_max)):
        if key in kwargs:
            if pos is not _UNSET:
                raise TypeError(f"clip: pass either a_{key} or {key}, not both")
            if key == "min":
                a_min = kwargs.pop(key)
            else:
                a_max = kwargs.pop(key)
    lo = None if a_min is _UNSET else a_min
    hi = None if a_max is _UNSET else a_max
    if out is not None:
        if type(a) is Traced or type(lo) is Traced or type(hi) is Traced:
            raise TypeError("tapegrad: numpy.clip with out= writes into a plain array and would "
                            "drop the gradient; call it without out=")
        return np.clip(a, lo, hi, out=out, **kwargs)
    return clip_bounds(a, lo, hi, **kwargs)


clip.primitive = clip_bounds.primitive  # type: ignore[attr-defined]  # (rules are defined on either)
where3 = primitive(np.where, "where")
where3.__doc__ = """``np.where(mask, x, y)``: ``x`` where ``mask`` holds, else ``y`` (broadcast).

The three-argument ``where`` as one primitive (NumPy's own function on plain
arrays, no Python front-end). ``mask`` is a constant: a boolean array or
scalar that gets no gradient (take ``value()`` of a traced condition first;
``tapegrad.numpy.where`` does). Its rules route the cotangent to ``x`` where
``mask`` holds and to ``y`` elsewhere, exactly +0 on the other side."""

# --- reductions and scans --------------------------------------------------------------
def _sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
    if type(a) is np.ndarray:  # what np.sum calls, without its Python-level wrapper
        return np.add.reduce(a, axis, dtype, out, keepdims, **kw)
    return array_module(a).sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)


sum = primitive(_sum, "sum")  # noqa: A001


def _mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The mean of ``x`` over ``axis`` (None: every axis): ``sum / n`` in
    ``x``'s dtype, as ONE tape entry where ``sum(x) / n`` records two."""
    if type(x) is np.ndarray:  # the ufunc's reduction: np.sum's wrapper costs as much
        s = np.add.reduce(x, axis, keepdims=keepdims)  # type: ignore[call-overload]
    else:
        s = array_module(x).sum(x, axis=axis, keepdims=keepdims)
    return s / reduction_size(x.shape, axis)


mean = primitive(_mean, "mean")
prod = primitive(np.prod)
amax = primitive(np.amax, "max")
amin = primitive(np.amin, "min")
cumsum = primitive(np.cumsum)
cumprod = primitive(np.cumprod)


def _logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    xp = array_module(a)
    if xp is np and a.size:  # the ufuncs' own reductions: fromnumeric's wrappers cost as much
        m = np.maximum.reduce(a, axis, None, None, True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.add.reduce(np.exp(a - m), axis, None, None, True)) + m
    else:
        m = xp.max(a, axis=axis, keepdims=True) if a.size else xp.zeros((1,) * a.ndim, a.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        out = xp.log(xp.sum(xp.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


_logsumexp.__doc__ = """``log(sum(exp(a), axis))``, computed stably (the maximum taken out first).

The primitive behind ``tapegrad.numpy.logsumexp`` (no ``b``, no
``return_sign``): one tape entry, and its rule reuses the stable answer."""

# a primitive for numerical stability: its rule reuses the stable answer
logsumexp = primitive(_logsumexp, "logsumexp")

# --- shape ---------------------------------------------------------------------------------


def _reshape(a: Any, shape: Any) -> Any:
    return a.reshape(shape)


reshape_c = primitive(_reshape, "reshape")
def _transpose(a: Any, axes: Any = None) -> Any:
    if type(a) is np.ndarray:  # the method: np.transpose is a Python-level wrapper around it
        return a.transpose(axes)
    return array_module(a).transpose(a, axes)


transpose = primitive(_transpose, "transpose")
flip = primitive(np.flip)
roll = primitive(np.roll)
pad = primitive(np.pad)
triu = primitive(np.triu)
tril = primitive(np.tril)
diagonal = primitive(np.diagonal)


def _concatenate(axis: int, *arrays: Any) -> Any:
    return array_module(*arrays).concatenate(arrays, axis=axis)


concatenate_args = primitive(_concatenate, "concatenate")


def _diag_from_vector(v: Any, k: int = 0) -> Any:
    return array_module(v).diag(v, k)


diag_from_vector = primitive(_diag_from_vector, "diag")


def _diag_embed(g: Any, offset: int, axis1: int, axis2: int, shape: tuple[int, ...]) -> Any:
    """Zeros of ``batch + shape`` with ``g`` written on the given diagonal."""
    xp = array_module(g)
    nb = g.ndim - (len(shape) - 1)
    out = xp.zeros(g.shape[:nb] + tuple(shape), dtype=g.dtype)
    view = xp.moveaxis(out, (axis1, axis2), (-2, -1))
    n = g.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    view[..., rows, cols] = g
    return out


diag_embed = primitive(_diag_embed, "diag_embed")


def _astype(x: Any, dtype: Any) -> Any:
    return x.astype(dtype)


astype_float = primitive(_astype, "astype")


def _copy(x: Any) -> Any:
    return x.copy()


copy = primitive(_copy, "copy")

# --- indexing --------------------------------------------------------------------------------


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
                if type(k) is Traced and type(k._tape) is BatchTrace:  # per-example values
                    traces += (k._tape,)
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


def _getitem(x: Any, index: Index, nb: int = 0) -> Any:
    """``x[index]`` on the trailing axes of ``x``; its ``nb`` leading axes are batch."""
    if index.traced:
        out = _by_index(getitem, (x, index, nb))
        if out is not None:
            return out
    if nb == 0:
        return x[index.key]
    return _unbatched(_batched_view(x, nb)[index.key], nb)


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


def _batch_like(x: Any, marker: Any) -> Any:
    """``x`` itself; under vmap, ``x`` batched like ``marker`` (see ``lift``)."""
    return x


batch_like = primitive(_batch_like, "batch_like")
# (its rules are the identity's: kept here, beside the one function that calls it)
defvjp(batch_like, lambda ans, x, marker: lambda g: g, None)
defjvp(batch_like, lambda ans, x, marker: lambda t: t, None)


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
        t = y._tape
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


getitem = _lifting(primitive(_getitem, "getitem"))
defjit(getitem, shape_from_index=True)  # (tg.jit: a mask or a traced slice bound sets its shape)
index_add = _lifting(primitive(_index_add, "index_add"))


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


setitem = _lifting(primitive(_setitem, "setitem"))

# --- products ---------------------------------------------------------------------------------
def _matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    """``np.matmul``, with a stack of matrices times one matrix done as ONE
    matrix product (NumPy loops over the stack; batched cotangents and
    tangents make such stacks all the time), and a product with an identity
    matrix done as a copy (``jacfwd`` and ``hessian`` push the identity basis
    of tangents through the first product: ``hessian(f)`` of ``f(A @ x)``
    then costs one matrix product instead of two)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and not kwargs:
        if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
            return np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[-1:])
        if a.ndim == 2 and b.ndim >= 2 and a.size >= _EYE_MIN and _is_identity(a) and np.isfinite(b).all():
            return np.array(b, dtype=np.result_type(a, b), order="C")
        if b.ndim == 2 and a.ndim >= 2 and b.size >= _EYE_MIN and _is_identity(b) and np.isfinite(a).all():
            return np.array(a, dtype=np.result_type(a, b), order="C")
        return np.matmul(a, b)
    return array_module(a, b).matmul(a, b, **kwargs)


_EYE_MIN = 100 * 100  # smaller products are cheap anyway


def _is_identity(m: np.ndarray) -> bool:
    """Is ``m`` an identity matrix? A few entries rule almost any other matrix
    out at once; only then is the whole of it checked."""
    n = m.shape[0]
    if m.shape[1] != n or m.dtype.kind not in "fc":
        return False
    if m[0, 0] != 1 or m[n - 1, n - 1] != 1 or m[0, n - 1] != 0 or m[n - 1, 0] != 0 or m[1, 0] != 0:
        return False
    return bool(np.count_nonzero(m) == n and (m.diagonal() == 1).all())


matmul = primitive(_matmul, "matmul")
defjit(matmul, fresh_out=True)  # (tg.jit: takes out=, else returns a new array)


def _linear(x: Any, w: Any, b: Any) -> Any:
    """``x @ w.T + b`` with ``x`` of shape (N, in), ``w`` (out, in), ``b``
    (out,): a dense layer as ONE tape entry (a composition records three and
    keeps the product), the bias added in place where the dtypes allow."""
    out = x @ w.T
    if out.dtype == b.dtype:
        out += b
        return out
    return out + b


linear = primitive(_linear, "linear")


def _weighted_sum(x: Any, weights: Any, axis: int | None = None) -> Any:
    """``sum(x * weights)`` over every axis (``axis`` None) or over ``axis``,
    as ONE tape entry. ``weights`` (of ``x``'s shape) is a constant: it gets
    no gradient (a negative log-likelihood is this with the weights of each
    sample at its target class and 0 elsewhere: no gather, no scatter)."""
    prod = x * weights
    if type(prod) is np.ndarray:
        return np.add.reduce(prod, axis)
    return array_module(prod).sum(prod, axis=axis)


weighted_sum = primitive(_weighted_sum, "weighted_sum")


def _einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Any:
    return array_module(*operands).einsum(subscripts, *operands, **kwargs)


einsum_args = primitive(_einsum, "einsum")

# --- no gradient: these read traced values by value -----------------------------------------
# Audit (issue 14; SPEC section 1: gradients are never dropped silently). What each
# no-gradient function returns, and why no gradient is lost:
#   sign floor ceil rint trunc fix around round floor_divide | piecewise constant: zero a.e.
#   isnan isinf isfinite isreal iscomplex signbit greater greater_equal less less_equal
#   equal not_equal logical_and logical_or logical_xor logical_not isclose allclose
#   array_equal any all                                      | booleans
#   argmax argmin argsort nonzero flatnonzero count_nonzero searchsorted digitize
#   argwhere shape ndim size                                 | integers (positions, counts)
#   bitwise_and bitwise_or bitwise_xor invert                | integer or boolean inputs only
#   zeros_like ones_like empty_like result_type iscomplexobj isrealobj
#                                                            | do not depend on the values
# Moved out of the list, each with a rule below (they did drop gradients):
#   heaviside(x1, x2)   x2 where x1 == 0: a primitive (its rule in vjps.py)
#   bincount(i, weights) linear in weights: an index_add of them
#   unique(x)           values of x: a gather at its return_index positions
#   histogram(x)        edges linear in min(x), max(x) (range= and traced weights refused)
_NONDIFF = """sign floor ceil rint trunc fix around round isnan isinf isfinite isreal iscomplex
signbit greater greater_equal less less_equal equal not_equal logical_and logical_or
logical_xor logical_not argmax argmin argsort nonzero flatnonzero count_nonzero any all
floor_divide isclose allclose array_equal searchsorted digitize
shape ndim size zeros_like ones_like empty_like result_type iscomplexobj isrealobj
bitwise_and bitwise_or bitwise_xor invert argwhere""".split()

nondiff = {name: nondifferentiable(getattr(np, name)) for name in _NONDIFF}
heaviside = primitive(np.heaviside)
_no_grad = {name: nondifferentiable(getattr(np, name)) for name in ("bincount", "unique", "histogram")}


def _refuse(name: str, what: str) -> TypeError:
    return TypeError(f"tapegrad: numpy.{name} {what} has no differentiation rule (its gradient "
                     "would be dropped); take tg.value() of the argument if no gradient is wanted")


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``np.bincount``: differentiable in ``weights`` (the sums are linear in them)."""
    if type(weights) is not Traced or weights._tape.abstract:  # (a vmap or jit level: no gradient here)
        return _no_grad["bincount"](x, weights, minlength)
    i = np.asarray(value(x))
    if type(value(weights)) is Traced or i.ndim != 1:
        raise _refuse("bincount", "with weights batched or traced by vmap or jit")
    n = builtins.max(int(i.max()) + 1 if i.size else 0, minlength)
    return index_add(weights, Index(i, 1), (n,), 0)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, **kwargs: Any) -> Any:
    """``np.unique``: the values are a gather from ``ar`` (at the first index of each)."""
    flags = (return_index, return_inverse, return_counts)
    if type(ar) is not Traced or ar._tape.abstract:
        return _no_grad["unique"](ar, *flags, axis, **kwargs)
    if axis is not None or type(value(ar)) is Traced:
        raise _refuse("unique", "with axis=, or of a value batched or traced by vmap or jit,")
    got = list(np.unique(value(ar), True, return_inverse, return_counts, **kwargs))
    vals = ar.reshape(-1)[got[1]]
    rest = got[1:] if return_index else got[2:]
    return (vals, *rest) if rest else vals


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """``np.histogram``: the counts have no gradient; the edges (from ``a``'s
    minimum and maximum) are linear in them, and densities divide by their widths."""
    if all(type(v) is not Traced or v._tape.abstract for v in (a, weights)):
        return _no_grad["histogram"](a, bins, range, density, weights)
    given = hasattr(bins, "__len__") and not isinstance(bins, str)  # edges given: they get no gradient
    if type(weights) is Traced or (range is not None and not given) or (type(value(a)) is Traced):
        raise _refuse("histogram", "with traced weights or range=, or of a value batched or traced by vmap or jit,")
    hist, edges = np.histogram(value(a), bins, range, None, None)
    if not given:
        lo, hi = amin(a), amax(a)
        t = np.linspace(0.0, 1.0, len(edges))
        edges = lo - 0.5 + t if value(lo) == value(hi) else lo + (hi - lo) * t
    if density:
        hist = hist / hist.sum() / (edges[1:] - edges[:-1])
    return hist, edges


# (tapegrad.numpy exports every function of ``nondiff``: these four join them there)
nondiff.update(heaviside=heaviside, bincount=bincount, unique=unique, histogram=histogram)


mark_batched(_OWN_FROM)  # every rule here takes leading batch axes
