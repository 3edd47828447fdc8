"""JVP rules of tapegrad.numpy: one line per primitive where a line fits.

A JVP maker is ``lambda ans, *args, **kwargs: lambda t: ...``; ``t`` is the
tangent of one argument and may carry leading batch axes (a batch of
tangents pushed at once, as ``jacfwd`` does). The result may be in a
broadcast of ``ans``'s shape; the forward trace sums contributions,
broadcasts and casts. Primitives without a rule here still work in forward
mode: the trace transposes their VJP rule (which is linear in ``g``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.numpy import derived as d
from tapegrad.numpy import vjps as v
from tapegrad.numpy import wrap as w
from tapegrad.primitive import defjvp, defjvp_argnum

Jvp = Callable[[Any], Any]


def _nb(t: Any, x: Any) -> int:
    """Leading batch axes of tangent ``t`` for an argument ``x``."""
    return t.ndim - np.ndim(x)


# --- reductions ------------------------------------------------------------------------------


def _neg_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    return tuple(a - ndim for a in d.normalize_axes(axis, ndim))


# --- shape ------------------------------------------------------------------------------------


# --- indexing -----------------------------------------------------------------------------------

# --- products ---------------------------------------------------------------------------------


def _as_row(t: Any, nb: int, stack: int) -> Any:
    """A batched vector tangent as a row matrix that broadcasts past ``stack`` axes."""
    return d.reshape(t, t.shape[:nb] + (1,) * stack + (1, t.shape[-1]))


def _lift(t: Any, x: Any, ndim: int) -> Any:
    """A batched matrix tangent with size-1 stack axes added up to ``ndim``, so
    its batch axes do not line up with the other operand's stack axes."""
    nb = _nb(t, x)
    if nb == 0 or x.ndim == ndim:
        return t
    return d.reshape(t, t.shape[:nb] + (1,) * (ndim - x.ndim) + x.shape)


def _jvp_matmul_a(ans: Any, a: Any, b: Any, **kw: Any) -> Jvp:
    if a.ndim == 1:
        if b.ndim <= 2:  # the batch of tangents as rows: one GEMM
            return lambda t: w.matmul(t, b)
        return lambda t: w.matmul(_as_row(t, _nb(t, a), b.ndim - 2), b)[..., 0, :]
    nd = ans.ndim + (1 if b.ndim == 1 else 0)
    return lambda t: w.matmul(_lift(t, a, nd), b)


def _jvp_matmul_b(ans: Any, a: Any, b: Any, **kw: Any) -> Jvp:
    if b.ndim == 1:
        if a.ndim == 1:
            return lambda t: w.matmul(t, a)
        if a.ndim == 2:  # the batch of tangents as rows: one GEMM
            return lambda t: w.matmul(t, w.transpose(a))
        return lambda t: w.matmul(_as_row(t, _nb(t, b), a.ndim - 2), d.swapaxes(a, -1, -2))[..., 0, :]
    nd = ans.ndim + (1 if a.ndim == 1 else 0)
    return lambda t: w.matmul(a, _lift(t, b, nd))


def _jvp_einsum(argnum: int, ans: Any, subscripts: str, *operands: Any, **kw: Any) -> Jvp:
    ins, out = v._einsum_letters(subscripts, operands)
    used = set("".join(ins)) | set(out)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    i = argnum - 1

    def jvp(t: Any) -> Any:
        batch = "".join(spare[: _nb(t, operands[i])])
        subs = ",".join(batch + s if j == i else s for j, s in enumerate(ins)) + "->" + batch + out
        ops = [t if j == i else o for j, o in enumerate(operands)]
        return w.einsum_args(subs, *ops, **kw)

    return jvp


defjvp(w.matmul, _jvp_matmul_a, _jvp_matmul_b)
defjvp(w.linear,     lambda ans, x, wt, b: lambda t: w.matmul(t, w.transpose(wt)),
                     lambda ans, x, wt, b: lambda t: w.matmul(x, v.swap_last(t)),
                     lambda ans, x, wt, b: lambda t: d.expand_dims(t, -2))
defjvp_argnum(w.einsum_args, _jvp_einsum)
