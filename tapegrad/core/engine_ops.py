"""The engine's own primitives and how a rule meets a batch of cotangents.

The reverse walk and the forward trace undo a rule's broadcasting and
promotion with ``sum_to`` and ``cast_to`` (and their transposes
``broadcast_to`` and ``cast_to``); ``map_batch`` calls a rule written for one
cotangent at a time on a batch of them. They are primitives like any other,
so what they do is itself differentiable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import value

# ``map_batch(rule, g, nb)``: a rule written for one cotangent (or tangent) at a time
# applied to ``g`` and its ``nb`` leading batch axes: one call per element, stacked.
# The slices, the stack and the reshapes are NumPy calls on what may be traced
# values: those dispatch to tapegrad.numpy (the NumPy protocols), so a traced
# ``g`` or a rule working on traced residuals stays differentiable.


def map_batch(rule: Callable[[Any], Any], g: Any, nb: int) -> Any:
    """``rule(g)`` for a rule written for one cotangent (or tangent) at a
    time, ``g`` carrying ``nb`` leading batch axes: the rule is called once
    per element of the (flattened) batch and the results are stacked."""
    batch = tuple(g.shape[:nb])
    item = tuple(g.shape[nb:])
    n = math.prod(batch)
    if n == 0:  # no element to call it on: find the result's shape on zeros
        v = value(g)
        r = value(rule(array_module(v).zeros(item, dtype=v.dtype)))
        return array_module(r).zeros(batch + tuple(np.shape(r)), dtype=np.result_type(r))
    flat = g if nb == 1 else g.reshape((n,) + item)
    out = np.stack([rule(flat[j, ...]) for j in range(n)])
    return out if nb == 1 else out.reshape(batch + tuple(out.shape[1:]))


def _sum_to(x: Any, shape: tuple[int, ...], nbatch: int = 0) -> Any:
    """Sum ``x`` (``batch + broadcast(shape)``) down to ``batch + shape``."""
    shape = tuple(shape)
    lead = x.ndim - nbatch - len(shape)
    tail = x.shape[nbatch + lead:]
    if tail == shape and not nbatch and lead and type(x) is np.ndarray:
        # leading axes only (a bias's gradient): one matrix-vector product
        # with ones, twice as fast as the reduction
        if x.dtype.char in "fd" and x.flags.c_contiguous and x.size:
            rows = x.size // max(1, math.prod(shape))
            return (_ones(rows, x.dtype) @ x.reshape(rows, -1)).reshape(shape)
    axes = tuple(range(nbatch, nbatch + lead)) + tuple(
        nbatch + lead + i for i, (n, m) in enumerate(zip(shape, tail)) if n == 1 and m != 1
    )
    if axes:
        x = x.sum(axis=axes, keepdims=True)
    return x.reshape(x.shape[:nbatch] + shape)


_ONES: dict[tuple[int, str], Any] = {}


def _ones(n: int, dtype: Any) -> Any:
    """A shared read-only vector of ``n`` ones (the last few sizes are kept)."""
    key = (n, dtype.char)
    v = _ONES.get(key)
    if v is None:
        if len(_ONES) >= 8:
            _ONES.clear()
        v = _ONES[key] = np.ones(n, dtype)
        v.flags.writeable = False
    return v


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    """A read-only broadcast view of ``x`` (reduction cotangents spread back)."""
    if isinstance(x, np.generic):  # a scalar cotangent (of a full reduction)
        x = np.asarray(x)
    if type(x) is np.ndarray and x.flags.c_contiguous and x.dtype.kind in "fciub" and x.size:
        # np.broadcast_to is a Python-level nditer setup (~2.5 us): for a
        # contiguous array, build the zero-stride view directly over its buffer
        lead = len(shape) - x.ndim
        strides = [0] * lead
        for n, m, s in zip(x.shape, shape[lead:], x.strides):
            if n == m:
                strides.append(s)
            elif n == 1:
                strides.append(0)
            else:
                break
        else:
            if lead >= 0:
                view = np.ndarray(shape, x.dtype, x, 0, tuple(strides))
                view.flags.writeable = False
                return view
    return array_module(x).broadcast_to(x, shape)


sum_to = primitive(_sum_to, "sum_to", batched=True)
broadcast_to = primitive(_broadcast_to, "broadcast_to", batched=True)


def _sum_to_vjp(ans: Any, x: Any, shape: Any, nbatch: int = 0) -> Callable[[Any], Any]:
    xshape = x.shape
    def vjp(g: Any) -> Any:
        extra = g.ndim - ans.ndim
        lead = len(xshape) - nbatch - len(shape)
        g = g.reshape(g.shape[: extra + nbatch] + (1,) * lead + tuple(shape))
        return broadcast_to(g, g.shape[:extra] + xshape)
    return vjp


defvjp(sum_to, _sum_to_vjp)
defvjp(broadcast_to, lambda ans, x, shape: lambda g: sum_to(g, x.shape, g.ndim - len(shape)))


def _cast_to(x: Any, dtype: Any) -> Any:
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = x.real
    return x.astype(dtype, copy=False)


cast_to = primitive(_cast_to, "cast", batched=True)
defvjp(cast_to, lambda ans, x, dtype: lambda g: cast_to(g, x.dtype))
