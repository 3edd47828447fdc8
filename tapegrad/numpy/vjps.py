"""VJP rules of tapegrad.numpy: one line per primitive where a line fits.

Rules are staged, ``lambda ans, *args, **kwargs: lambda g: ...``: the outer
call runs when the op is recorded (what it closes over is what the tape
keeps); the inner one runs in the backward pass. Rules are written with
tapegrad's own functions, so a backward pass recorded on an outer tape is
differentiable again. ``g`` may carry leading batch axes; rules return
cotangents in (a broadcast of) the argument's shape with the same leading
axes, and the engine sums them back and casts them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w
from tapegrad.primitive import defvjp, defvjp_argnum
from tapegrad.tracer import value

Vjp = Callable[[Any], Any]


def _nb(g: Any, ans: Any) -> int:
    """Number of leading batch axes of cotangent ``g`` for an output ``ans``."""
    return g.ndim - ans.ndim


# --- reductions and scans ----------------------------------------------------------------------


# --- shape ------------------------------------------------------------------------------------
# (shape and indexing rules keep shapes and ranks, never the arrays: nothing
# stays alive for them, and in the facade a later in-place change of the
# input is no conflict)


# --- indexing ---------------------------------------------------------------------------------


# --- products ---------------------------------------------------------------------------------


def _vjp_matmul_a(ans: Any, a: Any, b: Any, **kw: Any) -> Vjp:
    if b.ndim == 1:
        return lambda g: d.expand_dims(g, -1) * b
    if a.ndim == 1:
        if b.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: w.matmul(g, w.transpose(b))
        return lambda g: w.matmul(d.expand_dims(g, -2), d.swapaxes(b, -1, -2))[..., 0, :]
    swap = _swap_last(b.ndim)
    if _column_major(a):  # a (a transposed view) gets its cotangent as one too: (b g^T)^T
        return lambda g: w.transpose(w.matmul(b, w.transpose(g))) if g.ndim == 2 else w.matmul(g, w.transpose(b, swap))
    return lambda g: w.matmul(g, w.transpose(b, swap))


def _column_major(x: Any) -> bool:
    """Is ``x`` a column-major matrix (typically ``W.T``)? Its cotangent is then
    made column-major too, at no cost: its transpose is the row-major gradient
    of ``W``, which the update that follows reads fastest."""
    flags = getattr(value(x), "flags", None)  # (a batched value (vmap) has no layout of its own)
    return flags is not None and x.ndim == 2 and not flags.c_contiguous and flags.f_contiguous


def _swap_last(nd: int) -> tuple[int, ...]:
    """The permutation that swaps the last two of ``nd`` axes (a matrix transpose)."""
    return tuple(range(nd - 2)) + (nd - 1, nd - 2)


def _vjp_matmul_b(ans: Any, a: Any, b: Any, **kw: Any) -> Vjp:
    if a.ndim == 1:
        if b.ndim == 1:
            return lambda g: d.expand_dims(g, -1) * a
        return lambda g: d.expand_dims(a, -1) * d.expand_dims(g, -2)
    if b.ndim == 1:
        if a.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: w.matmul(g, a)
        return lambda g: w.matmul(d.expand_dims(g, -2), a)[..., 0, :]
    swap = _swap_last(a.ndim)
    if _column_major(b):  # (g^T a)^T: see _column_major
        return lambda g: w.transpose(w.matmul(w.transpose(g), a)) if g.ndim == 2 else w.matmul(w.transpose(a, swap), g)
    return lambda g: w.matmul(w.transpose(a, swap), g)


defvjp(w.matmul, _vjp_matmul_a, _vjp_matmul_b)


def swap_last(a: Any) -> Any:
    """``a`` with its last two axes swapped (leading batch axes kept)."""
    return w.transpose(a) if a.ndim == 2 else d.swapaxes(a, -1, -2)


defvjp(w.linear,     lambda ans, x, wt, b: lambda g: w.matmul(g, wt),
                     lambda ans, x, wt, b: lambda g: w.matmul(swap_last(g), x),
                     lambda ans, x, wt, b: lambda g: w.sum(g, axis=-2))


def _einsum_letters(subscripts: str, operands: tuple[Any, ...]) -> tuple[list[str], str]:
    """Explicit per-operand subscripts and output, with ``...`` spelled out."""
    used = set(subscripts) - set("-> .,")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    lhs, _, rhs = subscripts.replace(" ", "").partition("->")
    ins = lhs.split(",")
    ell_nd = max((np.ndim(o) - (len(s) - 3) for s, o in zip(ins, operands) if "..." in s), default=0)
    ell = "".join(spare[:ell_nd])
    ins = [s.replace("...", ell[len(ell) - (np.ndim(o) - (len(s) - 3)):] if np.ndim(o) - (len(s) - 3) else "")
           if "..." in s else s for s, o in zip(ins, operands)]
    if "->" not in subscripts:
        counts = {c: "".join(ins).count(c) for c in set("".join(ins))}
        rhs = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return ins, rhs


def _vjp_einsum(argnum: int, ans: Any, subscripts: str, *operands: Any, **kw: Any) -> Vjp:
    ins, out = _einsum_letters(subscripts, operands)
    i = argnum - 1
    target = ins[i]
    others = [(s, o) for j, (s, o) in enumerate(zip(ins, operands)) if j != i]
    avail = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    used = set("".join(ins)) | set(out)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    x = operands[i]
    extra: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    result = ""
    for pos, c in enumerate(target):
        n = x.shape[pos]
        if c in seen:  # a repeated index: the cotangent lives on a diagonal
            fresh = spare.pop()
            extra.append((c + fresh, np.eye(n, dtype=value(x).dtype)))
            result += fresh
            continue
        seen[c] = pos
        if c not in avail:  # summed over this operand alone: broadcast back
            extra.append((c, np.ones(n, dtype=value(x).dtype)))
        result += c

    def vjp(g: Any) -> Any:
        batch = "".join(spare[-1 - k] for k in range(_nb(g, ans)))[::-1] if _nb(g, ans) else ""
        subs = ",".join([batch + out] + [s for s, _ in others] + [s for s, _ in extra]) + "->" + batch + result
        return w.einsum_args(subs, g, *[o for _, o in others], *[o for _, o in extra], **kw)

    return vjp


defvjp_argnum(w.einsum_args, _vjp_einsum)
