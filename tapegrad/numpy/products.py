"""Products of tapegrad.numpy (``matmul``, the fused ``linear``, ``einsum``),
each with its VJP, JVP and batching rule.

Cotangents and tangents may carry leading batch axes: the rules line them up
as stack axes of one matrix product (or as extra ``einsum`` labels). The
batching rules make the batch a leading stack axis (``matmul``, ``linear``)
or a new label (``einsum``). ``tensordot``, ``dot``, ``inner``, ``outer``...
are built from these in derived.py; ``numpy.linalg`` is linalg.py.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch, elementwise_rule, move_to_front
from tapegrad.compile.facts import defjit
from tapegrad.core.primitive import (
    defjvp,
    defjvp_argnum,
    defvjp,
    defvjp_argnum,
    primitive,
)
from tapegrad.core.traced import value
from tapegrad.numpy._define import nbatch
from tapegrad.numpy.elementwise import add
from tapegrad.numpy.reductions import sum
from tapegrad.numpy.shapes import expand_dims, reshape_c, swap_last, swapaxes, transpose

Args = Sequence[Any]
Rule = Callable[[Any], Any]


# --- matmul ----------------------------------------------------------------------------------
def _matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    """``np.matmul``, with a stack of matrices times one matrix done as ONE
    matrix product (NumPy loops over the stack; batched cotangents and
    tangents make such stacks all the time), and a product with an identity
    matrix done as a copy (``jacfwd`` and ``hessian`` push the identity basis
    of tangents through the first product: ``hessian(f)`` of ``f(A @ x)``
    then costs one matrix product instead of two)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and not kwargs:
        if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
            return np.matmul(a.reshape(math.prod(a.shape[:-1]), a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[-1:])
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

matmul = primitive(_matmul, "matmul", batched=True)
defjit(matmul, fresh_out=True)  # (tg.jit: takes out=, else returns a new array)

def _vjp_matmul_a(ans: Any, a: Any, b: Any, **kw: Any) -> Rule:
    if b.ndim == 1:
        return lambda g: expand_dims(g, -1) * b
    if a.ndim == 1:
        if b.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: matmul(g, transpose(b))
        return lambda g: matmul(expand_dims(g, -2), swapaxes(b, -1, -2))[..., 0, :]
    swap = _swap_last(b.ndim)
    if _column_major(a):  # a (a transposed view) gets its cotangent as one too: (b g^T)^T
        return lambda g: transpose(matmul(b, transpose(g))) if g.ndim == 2 else matmul(g, transpose(b, swap))
    return lambda g: matmul(g, transpose(b, swap))

def _column_major(x: Any) -> bool:
    """Is ``x`` a column-major matrix (typically ``W.T``)? Its cotangent is then
    made column-major too, at no cost: its transpose is the row-major gradient
    of ``W``, which the update that follows reads fastest."""
    flags = getattr(value(x), "flags", None)  # (a batched value (vmap) has no layout of its own)
    return flags is not None and x.ndim == 2 and not flags.c_contiguous and flags.f_contiguous

def _swap_last(nd: int) -> tuple[int, ...]:
    """The permutation that swaps the last two of ``nd`` axes (a matrix transpose)."""
    return tuple(range(nd - 2)) + (nd - 1, nd - 2)

def _vjp_matmul_b(ans: Any, a: Any, b: Any, **kw: Any) -> Rule:
    if a.ndim == 1:
        if b.ndim == 1:
            return lambda g: expand_dims(g, -1) * a
        return lambda g: expand_dims(a, -1) * expand_dims(g, -2)
    if b.ndim == 1:
        if a.ndim == 2:  # one GEMM over the batch of cotangents
            return lambda g: matmul(g, a)
        return lambda g: matmul(expand_dims(g, -2), a)[..., 0, :]
    swap = _swap_last(a.ndim)
    if _column_major(b):  # (g^T a)^T: see _column_major
        return lambda g: transpose(matmul(transpose(g), a)) if g.ndim == 2 else matmul(transpose(a, swap), g)
    return lambda g: matmul(transpose(a, swap), g)

def _as_row(t: Any, nb: int, stack: int) -> Any:
    """A batched vector tangent as a row matrix that broadcasts past ``stack`` axes."""
    return reshape_c(t, t.shape[:nb] + (1,) * stack + (1, t.shape[-1]))

def _lift(t: Any, x: Any, ndim: int) -> Any:
    """A batched matrix tangent with size-1 stack axes added up to ``ndim``, so
    its batch axes do not line up with the other operand's stack axes."""
    nb = nbatch(t, x)
    if nb == 0 or x.ndim == ndim:
        return t
    return reshape_c(t, t.shape[:nb] + (1,) * (ndim - x.ndim) + x.shape)

def _jvp_matmul_a(ans: Any, a: Any, b: Any, **kw: Any) -> Rule:
    if a.ndim == 1:
        if b.ndim <= 2:  # the batch of tangents as rows: one GEMM
            return lambda t: matmul(t, b)
        return lambda t: matmul(_as_row(t, nbatch(t, a), b.ndim - 2), b)[..., 0, :]
    nd = ans.ndim + (1 if b.ndim == 1 else 0)
    return lambda t: matmul(_lift(t, a, nd), b)

def _jvp_matmul_b(ans: Any, a: Any, b: Any, **kw: Any) -> Rule:
    if b.ndim == 1:
        if a.ndim == 1:
            return lambda t: matmul(t, a)
        if a.ndim == 2:  # the batch of tangents as rows: one GEMM
            return lambda t: matmul(t, transpose(a))
        return lambda t: matmul(_as_row(t, nbatch(t, b), a.ndim - 2), swapaxes(a, -1, -2))[..., 0, :]
    nd = ans.ndim + (1 if a.ndim == 1 else 0)
    return lambda t: matmul(a, _lift(t, b, nd))

def _matmul_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """Vectors made matrices, the batch as the leading stack axis, one matmul."""
    a, b = args
    ba, bb = batched
    ka = a.ndim - ba
    kb = b.ndim - bb
    if ka == 0 or kb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ka == 1:
        a = reshape_c(a, tuple(a.shape[:-1]) + (1, a.shape[-1]))
    if kb == 1:
        b = reshape_c(b, tuple(b.shape) + (1,))
    r = max(max(ka, 2), max(kb, 2)) - 2  # stack rank of the per-example product
    if ba:
        a = move_to_front(a, r + 2)
    if bb:
        b = move_to_front(b, r + 2)
    out = matmul(a, b, **kwargs)
    if ka == 1 and kb == 1:
        return reshape_c(out, (size,) + tuple(out.shape[1:-2]))
    if ka == 1:
        return reshape_c(out, tuple(out.shape[:-2]) + (out.shape[-1],))
    if kb == 1:
        return reshape_c(out, tuple(out.shape[:-1]))
    return out

defvjp(matmul, _vjp_matmul_a, _vjp_matmul_b)

defjvp(matmul, _jvp_matmul_a, _jvp_matmul_b)

defbatch(matmul, _matmul_rule)


# --- linear (fused: x @ w.T + b, one entry) --------------------------------------------------
def _linear(x: Any, w: Any, b: Any) -> Any:
    """``x @ w.T + b`` with ``x`` of shape (N, in), ``w`` (out, in), ``b``
    (out,): a dense layer as ONE tape entry (a composition records three and
    keeps the product), the bias added in place where the dtypes allow.
    Leading axes are folded into the rows of one product, so that a batch
    (``vmap``) rounds as the same rows unbatched do."""
    lead = x.shape[:-1]
    if len(lead) > 1:
        x = x.reshape(-1, x.shape[-1])
    out = x @ w.T
    if out.dtype == b.dtype:
        out += b
    else:
        out = out + b
    return out.reshape(lead + out.shape[-1:]) if len(lead) > 1 else out

linear = primitive(_linear, "linear", batched=True)

def _linear_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, wt, b = args
    if not (batched[1] or batched[2]):
        return linear(x, wt, b)  # x @ w.T + b takes any leading axes of x
    # stacked weights (an ensemble): the product and the sum, each batched
    wt_t = transpose(wt, (0,) + tuple(range(wt.ndim - 1, 0, -1))) if batched[1] else transpose(wt)
    out = _matmul_rule([x, wt_t], [batched[0], batched[1]], size)
    return elementwise_rule(add)([out, b], [True, batched[2]], size)

defvjp(linear,     lambda ans, x, wt, b: lambda g: matmul(g, wt),
                     lambda ans, x, wt, b: lambda g: matmul(swap_last(g), x),
                     lambda ans, x, wt, b: lambda g: sum(g, axis=-2))

defjvp(linear,     lambda ans, x, wt, b: lambda t: matmul(t, transpose(wt)),
                     lambda ans, x, wt, b: lambda t: matmul(x, swap_last(t)),
                     lambda ans, x, wt, b: lambda t: expand_dims(t, -2))

defbatch(linear, _linear_rule)


# --- einsum (the operands as positional arguments) -------------------------------------------
def _einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Any:
    return array_module(*operands).einsum(subscripts, *operands, **kwargs)

einsum_args = primitive(_einsum, "einsum", batched=True)

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

def _vjp_einsum(argnum: int, ans: Any, subscripts: str, *operands: Any, **kw: Any) -> Rule:
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
            extra.append((c + fresh, array_module(x).eye(n, dtype=value(x).dtype)))
            result += fresh
            continue
        seen[c] = pos
        if c not in avail:  # summed over this operand alone: broadcast back
            extra.append((c, array_module(x).ones(n, dtype=value(x).dtype)))
        result += c

    def vjp(g: Any) -> Any:
        batch = "".join(spare[-1 - k] for k in range(nbatch(g, ans)))[::-1] if nbatch(g, ans) else ""
        subs = ",".join([batch + out] + [s for s, _ in others] + [s for s, _ in extra]) + "->" + batch + result
        return einsum_args(subs, g, *[o for _, o in others], *[o for _, o in extra], **kw)

    return vjp

def _jvp_einsum(argnum: int, ans: Any, subscripts: str, *operands: Any, **kw: Any) -> Rule:
    ins, out = _einsum_letters(subscripts, operands)
    used = set("".join(ins)) | set(out)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    i = argnum - 1

    def jvp(t: Any) -> Any:
        batch = "".join(spare[: nbatch(t, operands[i])])
        subs = ",".join(batch + s if j == i else s for j, s in enumerate(ins)) + "->" + batch + out
        ops = [t if j == i else o for j, o in enumerate(operands)]
        return einsum_args(subs, *ops, **kw)

    return jvp

def _einsum_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """A new label for the batch, on the batched operands and the output."""
    spec = args[0].replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if not arrow:  # the implicit output: labels used once, sorted, after the ellipsis
        labels = [c for c in ins if c.isalpha()]
        out = ("..." if "..." in ins else "") + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    free = [c for c in string.ascii_letters if c not in spec]
    label = free[0]
    terms = [label + t if b else t for t, b in zip(terms, batched[1:])]
    return einsum_args(",".join(terms) + "->" + label + out, *args[1:], **kwargs)

defvjp_argnum(einsum_args, _vjp_einsum)

defjvp_argnum(einsum_args, _jvp_einsum)

defbatch(einsum_args, _einsum_rule)

