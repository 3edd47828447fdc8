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

# ruff: noqa: F401  (the index: it re-exports what the family modules define)
from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axes, normalize_axis
from tapegrad.backend import array_module
from tapegrad.primitive import (
    REGISTRY,
    broadcast_to,
    defjvp,
    defvjp,
    mark_batched,
    nondifferentiable,
    primitive,
    sum_to,
    top_tape,
)
from tapegrad.tracer import Traced, value

__all__ = ["broadcast_to", "normalize_axes", "normalize_axis", "sum_to"]


# --- axes ------------------------------------------------------------------------------------


_OWN_FROM = len(REGISTRY)  # this module's primitives follow (see mark_batched)
from tapegrad.numpy.elementwise import (  # noqa: E402  (the family modules define them)
    _astype,  # noqa: E402, F401  (tg.jit's rewrites look it up here)
    absolute,
    add,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    astype_float,
    cbrt,
    clip,
    clip_bounds,
    conjugate,
    copy,
    cos,
    cosh,
    deg2rad,
    divide,
    exp,
    exp2,
    expm1,
    fmax,
    fmin,
    fmod,
    heaviside,
    hypot,
    imag,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    maximum,
    minimum,
    multiply,
    negative,
    positive,
    power,
    rad2deg,
    real,
    reciprocal,
    remainder,
    sin,
    sinc,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    where3,
)
from tapegrad.numpy.indexing import (  # noqa: E402
    Index,
    batch_like,
    getitem,
    index_add,
    lift,
    setitem,
)
from tapegrad.numpy.reductions import (  # noqa: E402
    _logsumexp,
    _mean,
    _sum,
    _weighted_sum,
    amax,
    amin,
    cumprod,
    cumsum,
    logsumexp,
    mean,
    prod,
    reduction_size,
    sum,
    weighted_sum,
)
from tapegrad.numpy.shape import (  # noqa: E402
    _concatenate,
    _diag_embed,
    _diag_from_vector,
    _reshape,
    _transpose,
    concatenate_args,
    diag_embed,
    diag_from_vector,
    diagonal,
    flip,
    pad,
    reshape_c,
    roll,
    transpose,
    tril,
    triu,
)

# --- reductions and scans --------------------------------------------------------------


# a primitive for numerical stability: its rule reuses the stable answer

# --- shape ---------------------------------------------------------------------------------


# --- indexing --------------------------------------------------------------------------------


# (its rules are the identity's: kept here, beside the one function that calls it)


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


_matmul.fresh_out = True  # type: ignore[attr-defined]  # takes out=, returns a new array (tg.jit's buffers)
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
_no_grad = {name: nondifferentiable(getattr(np, name)) for name in ("bincount", "unique", "histogram")}


def _refuse(name: str, what: str) -> TypeError:
    return TypeError(f"tapegrad: numpy.{name} {what} has no differentiation rule (its gradient "
                     "would be dropped); take tg.value() of the argument if no gradient is wanted")


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``np.bincount``: differentiable in ``weights`` (the sums are linear in them)."""
    if type(weights) is not Traced or weights._tape.applies:  # (a vmap or jit level: no gradient here)
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
    if type(ar) is not Traced or ar._tape.applies:
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
    if all(type(v) is not Traced or v._tape.applies for v in (a, weights)):
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
