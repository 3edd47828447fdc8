"""NumPy's functions with no gradient (or a zero one), and three that have one.

The functions listed in ``_NONDIFF`` are wrapped with ``nondifferentiable``:
they read traced values by value and return plain arrays (or values batched
or traced by vmap and jit). ``bincount``, ``unique`` and ``histogram`` used
to be among them and dropped gradients; each now differentiates where it is
linear in its inputs (see the audit below). ``nondiff`` maps each NumPy name
to its function: ``tapegrad.numpy`` exports all of them.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tapegrad.core.primitive import nondifferentiable
from tapegrad.core.traced import Traced, concrete, value
from tapegrad.numpy.elementwise import heaviside
from tapegrad.numpy.indexing import Index, index_add
from tapegrad.numpy.reductions import amax, amin

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
#   heaviside(x1, x2)   x2 where x1 == 0: a primitive (in elementwise.py)
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
    if type(weights) is not Traced or weights._level.abstract:  # (a vmap or jit level: no gradient here)
        return _no_grad["bincount"](x, weights, minlength)
    i = np.asarray(value(x))
    if concrete(weights) is None or i.ndim != 1:
        raise _refuse("bincount", "with weights batched or traced by vmap or jit")
    n = builtins.max(int(i.max()) + 1 if i.size else 0, minlength)
    return index_add(weights, Index(i, 1), (n,), 0)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, **kwargs: Any) -> Any:
    """``np.unique``: the values are a gather from ``ar`` (at the first index of each)."""
    flags = (return_index, return_inverse, return_counts)
    if type(ar) is not Traced or ar._level.abstract:
        return _no_grad["unique"](ar, *flags, axis, **kwargs)
    if axis is not None or concrete(ar) is None:
        raise _refuse("unique", "with axis=, or of a value batched or traced by vmap or jit,")
    got = list(np.unique(value(ar), True, return_inverse, return_counts, **kwargs))
    vals = ar.reshape(-1)[got[1]]
    rest = got[1:] if return_index else got[2:]
    return (vals, *rest) if rest else vals


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """``np.histogram``: the counts have no gradient; the edges (from ``a``'s
    minimum and maximum) are linear in them, and densities divide by their widths."""
    if all(type(v) is not Traced or v._level.abstract for v in (a, weights)):
        return _no_grad["histogram"](a, bins, range, density, weights)
    given = hasattr(bins, "__len__") and not isinstance(bins, str)  # edges given: they get no gradient
    if type(weights) is Traced or (range is not None and not given) or concrete(a) is None:
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
