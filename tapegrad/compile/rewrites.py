"""Algebraic rewrites of a traced program: the same values from fewer or
cheaper NumPy calls (a pass, as those of ``passes``).

The rules are written against ``Rewriter`` (the state of one walk) and
registered by primitive with ``defjit(prim, rewrite=rule)`` at the end of this
module: a rule is jit's code, so it lives in jit's package, keyed by the
primitive object it rewrites (a rule tests what made an argument by
``d.prim is TRANSPOSE``, never by a function's identity). ``sum_to`` is the
engine's own primitive (``tapegrad.core.engine_ops``, core, which never imports
jit): its rule is registered here too. Python's operators on NumPy scalars
(``SCALAR_OPERATORS``) are facts about NumPy's own ufuncs, whichever
primitive (or none) calls them: keyed by the ufunc.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var, defjit, facts_of
from tapegrad.compile.passes import const_key, uses
from tapegrad.core.engine_ops import sum_to
from tapegrad.core.primitive import Primitive
from tapegrad.numpy import wrap

Program = list[Any]  # Instr | Guard

# the primitives the rules recognise as the definitions of their arguments
TRANSPOSE: Primitive = wrap.transpose.primitive
RESHAPE: Primitive = wrap.reshape_c.primitive
MATMUL: Primitive = wrap.matmul.primitive


def use_counts(program: Sequence[Any], outputs: Iterable[int]) -> dict[int, int]:
    """How many times each Var is read: by instructions, guards and as an output."""
    counts: dict[int, int] = {}
    for ins in program:
        for n in ((ins.var,) if type(ins) is Guard else uses(ins)):
            counts[n] = counts.get(n, 0) + 1
    for n in outputs:
        counts[n] = counts.get(n, 0) + 1
    return counts


def _perm(axes: Any, ndim: int) -> tuple[int, ...] | None:
    """The permutation a ``transpose`` with ``axes`` makes (None: one this pass does not read)."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    if type(axes) is tuple and len(axes) == ndim and sorted(a % ndim if type(a) is int else -1
                                                            for a in axes) == list(range(ndim)):
        return tuple(a % ndim for a in axes)
    return None


class Rewriter:
    """The state of one ``rewrite`` walk: the definitions seen so far,
    the values (new Vars are appended), the renaming and the new program."""

    def __init__(self, program: Sequence[Any], values: list[Any], outputs: Iterable[int]) -> None:
        self.values = values
        self.counts = use_counts(program, outputs)
        self.defs: dict[int, Instr] = {}
        self.rename: dict[int, int] = {}
        self.out: Program = []
        # the logsumexps written out: Var of the result -> (x, its kept shape, exp(x - max), its sum)
        self.lse: dict[int, tuple[Var, tuple[int, ...], Var, Var]] = {}
        self.emitted: dict[Any, Var] = {}  # (see _emit)

    def value(self, a: Any) -> Any:
        """The traced value of an argument (a Var's array, or the constant)."""
        return self.values[a.n] if type(a) is Var else a

    def add(self, ins: Instr) -> Var | None:
        """Append ``ins`` to the program, or what a rule rewrites it to: the
        Var holding its value if that is another one (else None)."""
        rule = None if ins.multi else facts_of(ins.prim).rewrite or NUMPY_REWRITES.get(ins.fn)
        new = rule(self, ins) if rule is not None else None
        if new is None:
            self.out.append(ins)
            for n in ins.outs:
                self.defs[n] = ins
        return new

    def emit(self, fn: Any, name: str, args: tuple[Any, ...], value: Any = None) -> Var:
        """``fn(*args)`` (a NumPy function) as a new instruction (rewritten in
        turn): the Var holding its value, which is computed now unless given."""
        return self._emit(Instr(fn, name, args, (), (len(self.values),), False), value)

    def emit_prim(self, prim: Primitive, args: tuple[Any, ...], value: Any = None) -> Var:
        """A call of primitive ``prim`` as a new instruction (as ``emit``)."""
        return self._emit(Instr(prim.fun, prim.name, args, (), (len(self.values),), False, prim), value)

    def _emit(self, ins: Instr, value: Any) -> Var:
        # (the same call emitted again, as each leaf of an optimizer folds the same scalars: once)
        key = (id(ins.fn), tuple(("v", a.n) if type(a) is Var else const_key(a) for a in ins.args))
        known = self.emitted.get(key)
        if known is not None:
            return known
        var = self._emit_new(ins, value)
        self.emitted[key] = var
        return var

    def _emit_new(self, ins: Instr, value: Any) -> Var:
        self.values.append(ins.fn(*[self.value(a) for a in ins.args]) if value is None else value)
        new = self.add(ins)
        return Var(ins.outs[0]) if new is None else new

    def transposed(self, a: Any) -> Any:
        """``a.T`` of a 2-d argument: the Var ``a`` is the transpose of, if it is
        one, else a new ``transpose`` instruction (or, for a constant, its transpose)."""
        if type(a) is not Var:
            return np.transpose(a)
        d = self.defs.get(a.n)
        if d is not None and d.prim is TRANSPOSE and len(d.args) <= 2 and type(d.args[0]) is Var:
            if _perm(d.args[1] if len(d.args) == 2 else None, 2) == (1, 0):
                return d.args[0]
        return self.emit_prim(TRANSPOSE, (a,))


def _ndim(x: Any) -> int:
    return int(getattr(x, "ndim", -1))


def _rewrite_transpose(rw: Rewriter, ins: Instr) -> Var | None:
    """``transpose(transpose(x, p), q)`` is ``x`` or one transpose (both are
    views: one call fewer); ``transpose(a @ b)`` of matrices, the product read
    nowhere else, is ``b.T @ a.T``: the same numbers as a C-ordered array (the
    backward pass of ``x @ w.T`` transposes ``x.T @ g``; NumPy's elementwise
    loops on a transposed operand beside C-ordered ones are several times
    slower: measured 9.5 against 2 us for a (256, 64) float32 Adam step)."""
    if ins.kwargs or not 1 <= len(ins.args) <= 2 or type(ins.args[0]) is not Var:
        return None
    x = ins.args[0]
    ndim = _ndim(rw.values[x.n])
    q = _perm(ins.args[1] if len(ins.args) == 2 else None, ndim)
    d = rw.defs.get(x.n)
    if q is None or d is None:
        return None
    if d.prim is TRANSPOSE and not d.kwargs and 1 <= len(d.args) <= 2 and type(d.args[0]) is Var:
        p = _perm(d.args[1] if len(d.args) == 2 else None, ndim)
        if p is None:
            return None
        composed = tuple(p[i] for i in q)
        if composed == tuple(range(ndim)):
            return d.args[0]
        return rw.emit_prim(TRANSPOSE, (d.args[0], composed))
    if (d.prim is MATMUL and not d.kwargs and len(d.args) == 2 and q == (1, 0)
            and rw.counts.get(x.n, 0) == 1
            and all(_ndim(rw.values[a.n] if type(a) is Var else a) == 2 for a in d.args)):
        a, b = d.args  # (its value: the traced one in C order, not a product computed again)
        return rw.emit_prim(MATMUL, (rw.transposed(b), rw.transposed(a)),
                            rw.values[ins.outs[0]].copy())  # (C order, on its device)
    return None


def _bind(ins: Instr, names: tuple[str, ...], defaults: tuple[Any, ...]) -> list[Any] | None:
    """The arguments of ``ins`` by position, keywords placed and defaults filled
    in (None: an argument this pass does not know)."""
    if len(ins.args) > len(names):
        return None
    bound = list(ins.args) + list(defaults[len(ins.args):])
    for k, v in ins.kwargs:
        if k not in names or names.index(k) < len(ins.args):
            return None
        bound[names.index(k)] = v
    return bound


ADD_REDUCE = np.add.reduce  # (one object: each ``np.add.reduce`` is a new bound method)


def _rewrite_reshape(rw: Rewriter, ins: Instr) -> Var | None:
    """``reshape`` to the shape an array has is that array (NumPy returns a
    view of it: the same memory, as the planner already assumes);
    ``reshape(reshape(x, s), t)`` is ``reshape(x, t)``."""
    if ins.kwargs or len(ins.args) != 2 or type(ins.args[0]) is not Var:
        return None
    x, shape = ins.args
    value = rw.value(x)
    if type(value) is not np.ndarray or type(shape) is not tuple:
        return None
    if value.shape == shape:
        return x
    d = rw.defs.get(x.n)
    if d is not None and d.prim is RESHAPE and not d.kwargs and type(d.args[0]) is Var:
        return rw.emit_prim(RESHAPE, (d.args[0], shape), rw.values[ins.outs[0]])
    return None


def _rewrite_sum(rw: Rewriter, ins: Instr) -> Var | None:
    """``sum`` of a NumPy array is the ufunc's reduction (what ``tapegrad``'s
    ``sum`` calls): no wrapper between."""
    b = _bind(ins, ("a", "axis", "dtype", "out", "keepdims"), (None, None, None, None, False))
    if b is None or b[3] is not None or type(rw.value(b[0])) is not np.ndarray:
        return None
    # (the axis always written: a ufunc's reduction reduces axis 0 by default, ``sum`` every axis)
    args = tuple(b[:3]) + ((None, b[4]) if b[4] is not False else ())
    while len(args) > 2 and args[-1] is None:
        args = args[:-1]
    return rw.emit(ADD_REDUCE, "sum", args)


def _rewrite_mean(rw: Rewriter, ins: Instr) -> Var | None:
    """``mean`` of a NumPy array is its sum, then a division by the count: the
    two calls ``tapegrad``'s ``mean`` makes, without its wrapper."""
    b = _bind(ins, ("x", "axis", "keepdims"), (None, None, False))
    if b is None or type(rw.value(b[0])) is not np.ndarray or type(b[1]) is Var or type(b[2]) is not bool:
        return None
    x, axis, keepdims = b
    n = wrap.reduction_size(rw.value(x).shape, axis)
    total = rw.emit(ADD_REDUCE, "sum", (x, axis, None, None, True) if keepdims else (x, axis))
    return rw.emit(np.true_divide, "true_divide", (total, n))


def _rewrite_sum_to(rw: Rewriter, ins: Instr) -> Var | None:
    """``sum_to`` of a C-ordered float matrix over its rows (a bias's
    gradient) is ``ones @ x``: the product ``sum_to`` makes, without the
    reshapes and its tests around it (measured: 5 against 1.5 us for the
    (64, 256) gradient of a bias)."""
    b = _bind(ins, ("x", "shape", "nbatch"), (None, None, 0))
    if b is None or type(b[0]) is not Var or type(b[1]) is not tuple or type(b[2]) is not int:
        return None
    x, shape, nbatch = rw.value(b[0]), b[1], b[2]
    if type(x) is not np.ndarray or not x.size:
        return None
    if (not nbatch and x.ndim == 2 and x.dtype.char in "fd" and x.flags.c_contiguous
            and shape == x.shape[1:]):
        ones = np.ones(x.shape[0], x.dtype)
        ones.flags.writeable = False
        return rw.emit(np.matmul, "np_matmul", (ones, b[0]))
    # otherwise the sum over the broadcast axes, kept, as ``sum_to`` sums (then its reshape)
    lead = x.ndim - nbatch - len(shape)
    if lead < 0 or x.ndim - lead != nbatch + len(shape):
        return None
    tail = x.shape[nbatch + lead:]
    axes = tuple(range(nbatch, nbatch + lead)) + tuple(
        nbatch + lead + i for i, (n, m) in enumerate(zip(shape, tail)) if n == 1 and m != 1)
    if not axes or tail == shape and not nbatch and lead and x.flags.c_contiguous and x.dtype.char in "fd":
        return None  # (nothing summed, or sum_to's product with ones)
    total = rw.emit(ADD_REDUCE, "sum", (b[0], axes, None, None, True))
    want = x.shape[:nbatch] + shape
    return total if rw.values[total.n].shape == want else rw.emit_prim(RESHAPE, (total, want))


MAX_REDUCE = np.maximum.reduce


def _rewrite_logsumexp(rw: Rewriter, ins: Instr) -> Var | None:
    """``logsumexp`` of a NumPy float array written out as the calls it makes,
    so that the softmax of its backward pass, ``exp(x - lse)``, can be
    ``exp(x - max) / sum`` from them (see ``_rewrite_exp``)."""
    b = _bind(ins, ("a", "axis", "keepdims"), (None, None, False))
    if b is None or type(b[0]) is not Var or type(b[1]) is Var or type(b[2]) is not bool:
        return None
    x, axis, keepdims = b
    xv = rw.value(x)
    if type(xv) is not np.ndarray or xv.dtype.kind != "f" or not xv.size:
        return None
    m = rw.emit(MAX_REDUCE, "max", (x, axis, None, None, True))
    # (a zero of the array's type: NumPy resolves where's types for a Python int in twice the time)
    m = rw.emit(np.where, "where", (rw.emit(np.isfinite, "isfinite", (m,)), m, xv.dtype.type(0)))
    e = rw.emit(np.exp, "exp", (rw.emit(np.subtract, "subtract", (x, m)),))
    total = rw.emit(ADD_REDUCE, "sum", (e, axis, None, None, True))
    out = rw.emit(np.add, "add", (rw.emit(np.log, "log", (total,)), m))
    kept = tuple(rw.values[total.n].shape)
    rw.lse[out.n] = (x, kept, e, total)
    if not keepdims:
        out = rw.emit_prim(RESHAPE, (out, tuple(rw.values[ins.outs[0]].shape)))
        rw.lse[out.n] = (x, kept, e, total)
    return out


def _rewrite_exp(rw: Rewriter, ins: Instr) -> Var | None:
    """``exp(x - lse)``, the softmax of ``_rewrite_logsumexp``'s ``x``
    (``lse`` reshaped to the kept axes, as its backward pass does), is
    ``exp(x - max) / sum``: one call for three. (The same numbers to
    rounding; ``nan`` where eager gives ``nan``: rows of ``-inf``, ``+inf``
    entries.)"""
    if ins.kwargs or len(ins.args) != 1 or type(ins.args[0]) is not Var:
        return None
    d = rw.defs.get(ins.args[0].n)
    if d is None or d.fn is not np.subtract or d.kwargs or len(d.args) != 2 or type(d.args[1]) is not Var:
        return None
    x, r = d.args
    r_def = rw.defs.get(r.n)
    if r.n not in rw.lse and r_def is not None and r_def.prim is RESHAPE and type(r_def.args[0]) is Var:
        r = r_def.args[0]
    found = rw.lse.get(r.n)
    if found is None or found[0] != x or tuple(rw.values[d.args[1].n].shape) != found[1]:
        return None
    return rw.emit(np.true_divide, "divide", (found[2], found[3]))


# Python's operators on NumPy scalars: NumPy's scalar arithmetic, the same
# numbers as the ufuncs' (a float result: integer scalars warn on overflow
# where the ufuncs do not), at a tenth of a ufunc call's cost (an optimizer's
# bias corrections: ``1 - b1 ** t``). Not ``power``: NumPy's scalar ``**``
# calls the C library's ``pow``, the ufunc its own (SIMD) one, and the two
# differ in the last bit for about one exponent in twenty (0.999 ** 7).
SCALAR_OPERATORS: dict[Any, Callable[[Any, Any], Any]] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv}


def _rewrite_scalar_op(rw: Rewriter, ins: Instr) -> Var | None:
    """A ufunc of ``SCALAR_OPERATORS`` on NumPy scalars (and Python
    numbers) giving a float: the operator. (Else a constant operand of one
    repeated value: ``_rewrite_uniform_constant``.)"""
    if ins.kwargs or len(ins.args) != 2:
        return None
    vals = [rw.value(a) for a in ins.args]
    if any(type(v) is np.ndarray for v in vals):
        return _rewrite_uniform_constant(rw, ins) or _rewrite_int_operand(rw, ins)
    if not all(isinstance(v, np.generic) or type(v) in (int, float, complex) for v in vals):
        return None
    if not any(isinstance(v, np.generic) for v in vals):
        return None
    out = rw.values[ins.outs[0]]
    if not isinstance(out, np.generic) or out.dtype.kind not in "fc":
        return None
    return rw.emit(SCALAR_OPERATORS[ins.fn], ins.name, ins.args)


def _rewrite_uniform_constant(rw: Rewriter, ins: Instr) -> Var | None:
    """A binary ufunc with a constant array of one repeated value (a folded
    cotangent: ``-1/n`` in every entry) and a Var of the result's shape: the
    value as a NumPy scalar of the array's dtype (no broadcast operand to
    walk), where that gives the traced result's dtype. Then, on NumPy
    scalars, the operator (``_rewrite_scalar_op``)."""
    if ins.kwargs or len(ins.args) != 2:
        return None
    out = rw.values[ins.outs[0]]
    for i, c in enumerate(ins.args):
        other = ins.args[1 - i]
        if (type(c) is np.ndarray and c.size > 1 and type(other) is Var and type(out) is np.ndarray
                and getattr(rw.value(other), "shape", None) == out.shape and c.dtype.kind == "f"):
            first = c.flat[0]
            if not (c == first).all() or not (np.signbit(c) == np.signbit(first)).all():  # (NaN, -0.0)
                return None
            args = (first, other) if i == 0 else (other, first)
            value = ins.fn(*[rw.value(a) for a in args])
            if value.dtype != out.dtype or value.shape != out.shape:
                return None
            return rw.emit(ins.fn, ins.name, args, value)
    return None


def _rewrite_astype(rw: Rewriter, ins: Instr) -> Var | None:
    """``astype`` of a NumPy scalar: the scalar type's constructor (the same
    rounding), a tenth of the cost."""
    if ins.kwargs or len(ins.args) != 2 or not isinstance(rw.value(ins.args[0]), np.generic):
        return None
    dtype = ins.args[1]
    if not isinstance(dtype, np.dtype) and not (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return None
    to = np.dtype(dtype).type
    if not isinstance(rw.values[ins.outs[0]], to):
        return None
    return rw.emit(to, to.__name__, (ins.args[0],))



# --- arithmetic: scalars folded, negations absorbed -----------------------------------------------


def _is_scalar(x: Any) -> bool:
    """A NumPy scalar or a Python number (no bool): what a rule may fold
    into another operand in scalar arithmetic."""
    return isinstance(x, np.generic) and x.dtype.kind in "fc" or type(x) in (int, float)


def _single(rw: Rewriter, a: Any, *fns: Any) -> Instr | None:
    """The instruction defining Var ``a``, a call of one of ``fns`` with two
    positional arguments (one for ``negative``), when ``a`` is read once only
    (rewriting what reads it then leaves it dead)."""
    if type(a) is not Var or rw.counts.get(a.n, 0) != 1:
        return None
    d = rw.defs.get(a.n)
    if d is None or d.fn not in fns or d.kwargs or d.multi:
        return None
    return d


def _same(rw: Rewriter, ins: Instr, value: Any) -> bool:
    """Does ``value`` have the traced result's type, shape and dtype (a
    rewrite keeps what each value is, to rounding)?"""
    old = rw.values[ins.outs[0]]
    return (type(value) is type(old) and getattr(value, "shape", None) == getattr(old, "shape", None)
            and getattr(value, "dtype", None) == getattr(old, "dtype", None))


def _scale_of(rw: Rewriter, a: Any) -> tuple[Any, Any] | None:
    """``(s, x)`` when Var ``a`` is ``s * x`` (or ``x * s``) with ``s`` a
    scalar and ``x`` an array, read once only."""
    d = _single(rw, a, np.multiply)
    if d is None or len(d.args) != 2:
        return None
    for i in (0, 1):
        s, x = d.args[i], d.args[1 - i]
        if _is_scalar(rw.value(s)) and type(rw.value(x)) is np.ndarray:
            return s, x
    return None


def _times(rw: Rewriter, a: Any, b: Any, value: Any) -> Any:
    """The product ``value`` of scalars ``a`` and ``b``: a constant if both
    are, else an instruction (Python's ``*`` on NumPy scalars)."""
    if type(a) is not Var and type(b) is not Var:
        return value
    return rw.emit(operator.mul, "mul", (a, b), value)


def _rewrite_multiply(rw: Rewriter, ins: Instr) -> Var | None:
    """Scalars folded together: ``s * (t * x)`` is ``(s*t) * x``;
    ``s * (m / (x / r + e))`` (the update of Adam and RMSprop: ``x`` the
    root of the second moment, ``r`` its bias correction) is
    ``(s*r) * (m / (x + e*r))``: one pass over the array fewer, the scalars
    multiplied once. A negation moves out of a product (``-x * y`` is
    ``-(x * y)``), where a sum absorbs it (``_rewrite_add``). Else as any
    binary operator (``_rewrite_scalar_op``)."""
    if ins.kwargs or len(ins.args) != 2:
        return None
    for i in (0, 1):
        s, q = ins.args[i], ins.args[1 - i]
        sv = rw.value(s)
        if not _is_scalar(sv) or type(rw.value(q)) is not np.ndarray:
            continue
        inner = _scale_of(rw, q)
        if inner is not None:
            t, x = inner
            st = rw.value(s) * rw.value(t)
            value = np.multiply(st, rw.value(x))
            if _same(rw, ins, value):
                return rw.emit(np.multiply, "multiply", (_times(rw, s, t, st), x), value)
        div = _single(rw, q, np.true_divide)
        den = div and _single(rw, div.args[1], np.add)
        if den is None:
            continue
        for j in (0, 1):
            e, y = den.args[j], den.args[1 - j]
            inner_div = _single(rw, y, np.true_divide)
            if not _is_scalar(rw.value(e)) or inner_div is None or not _is_scalar(rw.value(inner_div.args[1])):
                continue
            x, r = inner_div.args
            m = div.args[0]
            er, sr = rw.value(e) * rw.value(r), sv * rw.value(r)
            value = np.multiply(sr, np.true_divide(rw.value(m), np.add(rw.value(x), er)))
            if not _same(rw, ins, value):
                continue
            denom = rw.emit(np.add, "add", (x, _times(rw, e, r, er)))
            quotient = rw.emit(np.true_divide, "divide", (m, denom))
            return rw.emit(np.multiply, "multiply", (_times(rw, s, r, sr), quotient), value)
    for i in (0, 1):
        neg = _single(rw, ins.args[i], np.negative)
        if neg is not None and len(neg.args) == 1:
            args = (neg.args[0], ins.args[1]) if i == 0 else (ins.args[0], neg.args[0])
            product = np.multiply(*[rw.value(a) for a in args])
            value = np.negative(product)
            if _same(rw, ins, value):
                return rw.emit(np.negative, "negative", (rw.emit(np.multiply, "multiply", args, product),), value)
    return _rewrite_scalar_op(rw, ins)


def _rewrite_add(rw: Rewriter, ins: Instr) -> Var | None:
    """``x + -y`` is ``x - y``; ``a*x + b*y`` with scalars ``b == -a`` (a
    folded backward pass: ``softmax/n - onehot/n``) is ``b * (y - x)``, and
    with ``b == a``, ``a * (x + y)``: one pass fewer. Else as any binary
    operator (``_rewrite_scalar_op``)."""
    if ins.kwargs or len(ins.args) != 2:
        return None
    for i in (0, 1):
        neg = _single(rw, ins.args[i], np.negative)
        if neg is not None and len(neg.args) == 1:
            args = (ins.args[1 - i], neg.args[0])
            value = np.subtract(*[rw.value(a) for a in args])
            if _same(rw, ins, value):
                return rw.emit(np.subtract, "subtract", args, value)
    left, right = _scale_of(rw, ins.args[0]), _scale_of(rw, ins.args[1])
    if left is not None and right is not None:
        (a, x), (b, y) = left, right
        av, bv = rw.value(a), rw.value(b)
        if type(av) is type(bv) and (av == -bv or av == bv) and av != 0:
            fn = np.subtract if av == -bv else np.add
            args = (y, x) if fn is np.subtract else (x, y)
            inner = fn(*[rw.value(v) for v in args])
            value = np.multiply(bv, inner)
            if _same(rw, ins, value):
                return rw.emit(np.multiply, "multiply", (b, rw.emit(fn, fn.__name__, args, inner)), value)
    return _rewrite_scalar_op(rw, ins)


def _rewrite_subtract(rw: Rewriter, ins: Instr) -> Var | None:
    """``x - -y`` is ``x + y``. Else as any binary operator."""
    if not ins.kwargs and len(ins.args) == 2:
        neg = _single(rw, ins.args[1], np.negative)
        if neg is not None and len(neg.args) == 1:
            args = (ins.args[0], neg.args[0])
            value = np.add(*[rw.value(a) for a in args])
            if _same(rw, ins, value):
                return rw.emit(np.add, "add", args, value)
    return _rewrite_scalar_op(rw, ins)


def _rewrite_negative(rw: Rewriter, ins: Instr) -> Var | None:
    """``-(-x)`` is ``x`` (where the types agree)."""
    if ins.kwargs or len(ins.args) != 1 or type(ins.args[0]) is not Var:
        return None
    d = rw.defs.get(ins.args[0].n)
    if d is not None and d.fn is np.negative and not d.kwargs and len(d.args) == 1 and type(d.args[0]) is Var:
        if _same(rw, ins, rw.values[d.args[0].n]):
            return d.args[0]
    return None


def _rewrite_matmul(rw: Rewriter, ins: Instr) -> Var | None:
    """``v @ A.T`` of a vector ``v`` and a matrix ``A`` is ``A @ v``: the
    same product, no transpose."""
    if ins.kwargs or len(ins.args) != 2:
        return None
    v, t = ins.args
    if _ndim(rw.value(v)) != 1 or type(t) is not Var:
        return None
    d = rw.defs.get(t.n)
    if (d is None or d.prim is not TRANSPOSE or d.kwargs or type(d.args[0]) is not Var
            or _ndim(rw.values[d.args[0].n]) != 2
            or _perm(d.args[1] if len(d.args) == 2 else None, 2) != (1, 0)):
        return None
    return rw.emit_prim(MATMUL, (d.args[0], v))


# Rows up to this long are reduced column by column: NumPy's reduction along a short contiguous
# last axis costs a call per row (measured 5-10 us for the max of the (64, 10) logits of a
# softmax, 1.7 us for the copy of their transpose and its reduction over columns; their sum 2.8
# against 1.3 us)
SHORT_ROW = 32


def max_of_rows(x: Any) -> Any:
    """The maximum of each row of a 2-d array, kept as a column: ``x.max(1, keepdims=True)``."""
    return MAX_REDUCE(x.T.copy(), 0)[:, None]


def sum_of_rows(x: Any) -> Any:
    """The sum of each row of a 2-d array, kept as a column: ``x.sum(1, keepdims=True)``
    (added in another order than NumPy's pairwise sum of a row: the same to rounding)."""
    return ADD_REDUCE(x.T.copy(), 0)[:, None]


_OF_ROWS = {MAX_REDUCE: max_of_rows, ADD_REDUCE: sum_of_rows}


def _rewrite_row_reduce(rw: Rewriter, ins: Instr) -> Var | None:
    """The maximum or sum over a short last axis of a 2-d C-ordered float
    array, kept (the shift and the normaliser of a softmax): the reduction of
    its transpose's copy over columns (``max_of_rows``, ``sum_of_rows``)."""
    b = _bind(ins, ("a", "axis", "dtype", "out", "keepdims"), (None, 0, None, None, False))
    if b is None or b[2] is not None or b[3] is not None or b[4] is not True or type(b[0]) is not Var:
        return None
    x = rw.value(b[0])
    if (type(x) is not np.ndarray or x.ndim != 2 or b[1] not in (1, -1) or not x.flags.c_contiguous
            or x.dtype.kind != "f" or not 1 < x.shape[1] <= SHORT_ROW or x.shape[0] < 2 * x.shape[1]):
        return None
    of_rows = _OF_ROWS[ins.fn]
    return rw.emit(of_rows, of_rows.__name__, (b[0],))


def _rewrite_int_operand(rw: Rewriter, ins: Instr) -> Var | None:
    """A Python integer beside a float array: the same number as a Python
    float (NumPy resolves the loop for a float scalar in half the time: 0.5
    against 0.9 us on 300 elements); the result is the same array."""
    args = [float(a) if type(a) is int and abs(a) < 2 ** 53 else a for a in ins.args]
    if not any(type(a) is int for a in ins.args) or ins.kwargs or not any(
            type(rw.value(a)) is np.ndarray and rw.value(a).dtype.kind in "fc" for a in args):
        return None
    value = ins.fn(*[rw.value(a) for a in args])
    if not _same(rw, ins, value):
        return None
    return rw.emit(ins.fn, ins.name, tuple(args), value)


# One rule per primitive: it returns the Var holding the instruction's value, or None (kept as
# is). (Registered here, not beside the primitives: see the module's docstring.)
defjit(wrap.transpose, rewrite=_rewrite_transpose)
defjit(wrap.reshape_c, rewrite=_rewrite_reshape)
defjit(wrap.sum, rewrite=_rewrite_sum)
defjit(wrap.mean, rewrite=_rewrite_mean)
defjit(wrap.astype_float, rewrite=_rewrite_astype)
defjit(wrap.logsumexp, rewrite=_rewrite_logsumexp)
defjit(wrap.exp, rewrite=_rewrite_exp)
defjit(wrap.matmul, rewrite=_rewrite_matmul)
defjit(sum_to, rewrite=_rewrite_sum_to)  # (the engine's primitive: the core never imports jit)

# Rules for an instruction calling one of NumPy's own ufuncs, whichever primitive (or none)
# made it, where its primitive has no rule of its own: keyed by the ufunc.
NUMPY_REWRITES: dict[Any, Callable[[Rewriter, Instr], Var | None]] = {
    np.add: _rewrite_add, np.subtract: _rewrite_subtract, np.multiply: _rewrite_multiply,
    np.true_divide: _rewrite_scalar_op, np.negative: _rewrite_negative,
    MAX_REDUCE: _rewrite_row_reduce, ADD_REDUCE: _rewrite_row_reduce}


def rewrite(program: Sequence[Any], values: list[Any], outputs: Iterable[int]) -> tuple[Program, dict[int, int]]:
    """Algebraic rewrites (each primitive's ``JitFacts.rewrite``, and
    ``NUMPY_REWRITES``): the same values from fewer or
    cheaper NumPy calls. A rewritten instruction's value is computed by new
    instructions (their Vars appended to ``values``, their values computed
    now) or is an existing Var; later uses are renamed. Returns the program
    and the renaming (for the outputs); what becomes unused is left for
    ``dead_code``."""
    outputs = list(outputs)
    rw = Rewriter(program, values, outputs)
    rename = rw.rename
    # Vars whose value now has another memory layout than the trace saw (a product in C order
    # where the trace had a transposed view): what reads them is computed again, so that the
    # buffer planner sees the layouts (and the views) the program will make
    relaid: set[int] = set()
    # Vars whose value is now another array than the trace's: what may return a view of them is
    # computed again, so that the planner sees which values share memory (a reshape of the new
    # array, not of the traced one)
    moved: set[int] = set()
    for ins in program:
        if type(ins) is Guard:
            rw.out.append(Guard(rename.get(ins.var, ins.var), ins.truth))
            continue
        if rename:
            ins = ins._replace(args=tuple(Var(rename.get(a.n, a.n)) if type(a) is Var else a for a in ins.args),
                               kwargs=tuple((k, Var(rename.get(v.n, v.n)) if type(v) is Var else v)
                                            for k, v in ins.kwargs))
        if relaid and any(n in relaid for n in uses(ins)) or moved and not _fresh(ins) and any(
                n in moved for n in uses(ins)):
            _recompute(ins, values, relaid, moved)
        new = rw.add(ins)
        if new is not None:  # (the Var now also has the uses of the one it replaces)
            if _layout(values[new.n]) != _layout(values[ins.outs[0]]):
                relaid.add(new.n)
            if values[new.n] is not values[ins.outs[0]]:
                moved.add(new.n)
            rename[ins.outs[0]] = new.n
            rw.counts[new.n] = rw.counts.get(new.n, 0) + rw.counts.get(ins.outs[0], 0)
    return rw.out, rename


def _layout(x: Any) -> Any:
    """What of a value's memory layout buffer planning reads (None: not an array)."""
    return (x.shape, x.strides) if type(x) is np.ndarray else None


def _fresh(ins: Instr) -> bool:
    """Does ``ins`` return memory of its own (a ufunc with one output, a
    ``fresh_out`` primitive), never a view of an argument?"""
    return isinstance(ins.fn, np.ufunc) and ins.fn.nout == 1 or facts_of(ins.prim).fresh_out


def _recompute(ins: Instr, values: list[Any], relaid: set[int], moved: set[int]) -> None:
    """Compute ``ins`` again on the current values; its results whose layout
    changed join ``relaid``, and those that may be views of an argument ``moved``."""
    def get(a: Any) -> Any:
        return values[a.n] if type(a) is Var else a

    got = ins.fn(*[get(a) for a in ins.args], **{k: get(v) for k, v in ins.kwargs})
    fresh = _fresh(ins)
    for o, v in zip(ins.outs, got if ins.multi else (got,)):
        if _layout(v) != _layout(values[o]):
            relaid.add(o)
        if not fresh:
            moved.add(o)
        values[o] = v
