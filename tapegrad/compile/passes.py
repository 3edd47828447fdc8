"""Passes over a traced program (a list of ``Instr`` and ``Guard``).

Each takes the program and returns a new one; each is small and tested on
its own (tests/test_jit_passes.py).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.compile.trace import Guard, Instr, Var
from tapegrad.core.engine_ops import _sum_to
from tapegrad.numpy import wrap

Program = list[Any]  # Instr | Guard


def uses(ins: Instr) -> Iterable[int]:
    """The Var numbers an instruction reads."""
    for a in ins.args:
        if type(a) is Var:
            yield a.n
    for _, v in ins.kwargs:
        if type(v) is Var:
            yield v.n


def dead_code(program: Sequence[Any], outputs: Iterable[int]) -> Program:
    """Drop the instructions nothing needs: neither an output, nor a guard,
    nor an instruction that is kept (the backward pass of an output nobody
    returns disappears here). Guards always stay, with what they read."""
    live = set(outputs)
    kept: Program = []
    for ins in reversed(program):
        if type(ins) is Guard:
            live.add(ins.var)
            kept.append(ins)
        elif any(o in live for o in ins.outs):
            live.update(uses(ins))
            kept.append(ins)
    kept.reverse()
    return kept


def last_uses(program: Sequence[Any], outputs: Iterable[int]) -> dict[int, int]:
    """For each Var, the index of the last instruction that reads it
    (outputs are read after the last one: ``len(program)``)."""
    last: dict[int, int] = {}
    for i, ins in enumerate(program):
        if type(ins) is Guard:
            last[ins.var] = i
        else:
            for n in uses(ins):
                last[n] = i
    for n in outputs:
        last[n] = len(program)
    return last


# --- buffer planning ---------------------------------------------------------------------------


def _writes_fresh(ins: Instr, values: Sequence[Any]) -> bool:
    """Does ``ins`` take ``out=`` and write a new array of its own (a ufunc, or
    a primitive's function marked ``fresh_out``, as matmul's is), here an
    n-d NumPy array? 0-d results stay as NumPy returns them (scalars), as
    eager code sees them."""
    return _allocates(ins, values) and values[ins.outs[0]].flags.c_contiguous


def _allocates(ins: Instr, values: Sequence[Any]) -> bool:
    """Does ``ins`` return a new n-d NumPy array of its own, whatever its
    layout (as ``_writes_fresh``, without asking for C order)?"""
    if ins.multi or any(k == "out" for k, _ in ins.kwargs):
        return False
    fn = ins.fn
    if not (isinstance(fn, np.ufunc) and fn.nout == 1) and not getattr(fn, "fresh_out", False):
        return False
    v = values[ins.outs[0]]
    return type(v) is np.ndarray and v.ndim > 0


# Results smaller than this are allocated per call, as eager code does: the
# allocator hands small blocks back at once, while a kept buffer would hold its
# memory through the whole call (and between calls). Large ones are what a
# buffer saves: fresh pages, zeroed by the kernel on first touch. (Measured on
# the MLP step: buffers for its (256, 512) arrays take it from about 1.0x to
# 0.8-0.9x hand-written NumPy; buffers for its (4096, 10) arrays at batch 4096
# only raise its peak memory.)
BUFFER_MIN_BYTES = 512 * 1024


# An elementwise result smaller than a buffer goes into the memory of an
# operand that dies there, when that operand is a temporary the program made
# this call (``multiply(0.1, v54, out=v54)``), as one writes ``m *= 0.1`` by
# hand: no allocation, and memory still in cache.
INPLACE_MIN_BYTES = 0


class Plan(NamedTuple):
    """Which instructions write into which of the program's own buffers, and
    which into the memory of an operand that dies there."""

    out: dict[int, int]  # instruction index -> buffer number
    buffers: list[tuple[tuple[int, ...], Any]]  # buffer number -> (shape, dtype)
    inplace: dict[int, int] = {}  # instruction index -> the Var whose memory it writes into  # noqa: RUF012


def plan_buffers(program: Sequence[Any], inputs: Iterable[int], outputs: Iterable[int],
                 values: Sequence[Any]) -> Plan:
    """Give the intermediate results of ufuncs (and matmul) buffers the
    compiled program owns and reuses from call to call (``out=``): a buffer
    is free again once every value that may share its memory is dead.

    Values returned to the caller, and anything that may share memory with
    an input or an output, never live in such a buffer: the caller owns what
    it gets and its inputs are never written. Any instruction other than a
    ufunc (or a ``fresh_out`` function) may return a view of its arguments
    (``reshape``, ``transpose``, indexing...), so its results count as
    sharing memory with them.
    """
    outputs = set(outputs)
    # memory-sharing groups (union-find over Var numbers)
    parent: dict[int, int] = {}

    def find(n: int) -> int:
        while parent.get(n, n) != n:
            parent[n] = parent.get(parent[n], parent[n])
            n = parent[n]
        return n

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    instrs = [(i, ins) for i, ins in enumerate(program) if type(ins) is Instr]
    fresh = {ins.outs[0] for _, ins in instrs if _writes_fresh(ins, values)}
    for _, ins in instrs:
        if not (isinstance(ins.fn, np.ufunc) or getattr(ins.fn, "fresh_out", False)):
            for o in ins.outs:
                for n in uses(ins):
                    # A fresh C-ordered array keeps its layout from call to call (it
                    # is ours), so whether an op returns a view of it depends on
                    # shapes alone: what the trace saw holds for every call.
                    if n in fresh and not np.may_share_memory(values[o], values[n]):
                        continue
                    union(o, n)
    unsafe = {find(n) for n in (*inputs, *outputs)}
    last = last_uses(program, outputs)
    group_end: dict[int, int] = {}  # group -> the last instruction reading any of its values
    for n, i in last.items():
        r = find(n)
        group_end[r] = max(group_end.get(r, -1), i)
    for _, ins in instrs:  # (a value never read still lives until made)
        for o in ins.outs:
            r = find(o)
            group_end.setdefault(r, -1)

    plan_out: dict[int, int] = {}
    inplace: dict[int, int] = {}
    own: set[int] = set()  # Vars in memory the program allocated this call, no buffer's
    buffers: list[tuple[tuple[int, ...], Any]] = []
    free: dict[tuple[tuple[int, ...], str], list[int]] = {}
    releases: dict[int, list[tuple[tuple[tuple[int, ...], str], int]]] = {}
    for i, ins in instrs:
        elementwise = isinstance(ins.fn, np.ufunc) and ins.fn.signature is None
        if elementwise:
            # the result may go into an argument's buffer freed here
            for key, b in releases.pop(i, []):
                free.setdefault(key, []).append(b)
        writes_fresh = _writes_fresh(ins, values)
        # (own memory, whatever its layout: a rewrite upstream may have changed the layout the
        # trace saw, and in-place writes need no particular one)
        if _allocates(ins, values) and values[ins.outs[0]].nbytes < BUFFER_MIN_BYTES:
            o = ins.outs[0]
            own.add(o)
            if elementwise and not ins.kwargs and values[o].nbytes >= INPLACE_MIN_BYTES:  # (no where=)
                v = values[o]
                for a in ins.args:  # an operand of its shape and dtype, dead after this instruction
                    if (type(a) is Var and a.n in own and group_end[find(a.n)] == i
                            and values[a.n].shape == v.shape and values[a.n].dtype == v.dtype):
                        inplace[i] = a.n
                        break
        elif writes_fresh and find(ins.outs[0]) not in unsafe:
            v = values[ins.outs[0]]
            key = (tuple(v.shape), v.dtype.str)
            pool = free.get(key)
            b = pool.pop() if pool else None
            if b is None:
                b = len(buffers)
                buffers.append((key[0], v.dtype))
            plan_out[i] = b
            end = max(group_end[find(ins.outs[0])], i)
            releases.setdefault(end, []).append((key, b))
        for key, b in releases.pop(i, []):  # free after this instruction
            free.setdefault(key, []).append(b)
    return Plan(plan_out, buffers, inplace)


# --- common subexpressions and identities ---------------------------------------------------------


def _const_key(x: Any) -> Any:
    """A key equal for constants that are interchangeable as arguments."""
    if x is None or type(x) in (bool, int, float, complex, str):
        return (type(x), repr(x))  # (1, 1.0, True and 0.0, -0.0 stay apart)
    if type(x) is tuple:
        return (tuple, tuple(_const_key(v) for v in x))
    return ("id", id(x))


def _is_identity_operand(c: Any, other: Any, out: Any, unit: int) -> bool:
    """Is constant ``c`` all ``unit`` (1 for multiply, 0 for add) and the result
    ``out`` just ``other`` (same type, shape and dtype: no broadcast, no cast)?"""
    if type(c) is not np.ndarray or type(out) is not type(other):
        return False
    if getattr(out, "shape", None) != getattr(other, "shape", None) or getattr(out, "dtype", None) != getattr(other, "dtype", None):
        return False
    return c.size > 0 and bool(np.all(c == unit))


def simplify(program: Sequence[Any], values: Sequence[Any]) -> tuple[Program, dict[int, int]]:
    """Common subexpressions computed once (every function of a program is
    pure: the same function of the same arguments gives the same result),
    and multiplications by constant ones (the seed of a backward pass) or
    additions of constant zeros dropped. Returns the program with later
    uses renamed, and the renaming (for the outputs); what becomes unused
    is left for ``dead_code``."""
    rename: dict[int, int] = {}
    seen: dict[Any, tuple[int, ...]] = {}
    out: Program = []

    def ref(a: Any) -> Any:
        return Var(rename.get(a.n, a.n)) if type(a) is Var else a

    for ins in program:
        if type(ins) is Guard:
            out.append(Guard(rename.get(ins.var, ins.var), ins.truth))
            continue
        ins = ins._replace(args=tuple(ref(a) for a in ins.args),
                           kwargs=tuple((k, ref(v)) for k, v in ins.kwargs))
        if not ins.multi and not ins.kwargs and len(ins.args) == 2 and ins.fn in (np.multiply, np.add):
            unit = 1 if ins.fn is np.multiply else 0
            a, b = ins.args
            o = values[ins.outs[0]]
            for c, v in ((a, b), (b, a)):
                if type(v) is Var and type(c) is not Var and _is_identity_operand(c, values[v.n], o, unit):
                    rename[ins.outs[0]] = v.n
                    break
            if ins.outs[0] in rename:
                continue
        key = (id(ins.fn), tuple(("v", a.n) if type(a) is Var else _const_key(a) for a in ins.args),
               tuple((k, ("v", v.n) if type(v) is Var else _const_key(v)) for k, v in ins.kwargs))
        if key in seen:
            for o_new, o_old in zip(ins.outs, seen[key]):
                rename[o_new] = o_old
            continue
        seen[key] = ins.outs
        out.append(ins)
    return out, rename


# --- algebraic rewrites ---------------------------------------------------------------------------


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


class _Rewriter:
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

    def value(self, a: Any) -> Any:
        """The traced value of an argument (a Var's array, or the constant)."""
        return self.values[a.n] if type(a) is Var else a

    def add(self, ins: Instr) -> Var | None:
        """Append ``ins`` to the program, or what a rule rewrites it to: the
        Var holding its value if that is another one (else None)."""
        rule = None if ins.multi else REWRITES.get(ins.fn)
        new = rule(self, ins) if rule is not None else None
        if new is None:
            self.out.append(ins)
            for n in ins.outs:
                self.defs[n] = ins
        return new

    def emit(self, fn: Any, name: str, args: tuple[Any, ...], value: Any = None) -> Var:
        """``fn(*args)`` as a new instruction (rewritten in turn): the Var
        holding its value, which is computed now unless given."""
        n = len(self.values)
        self.values.append(fn(*[self.value(a) for a in args]) if value is None else value)
        new = self.add(Instr(fn, name, args, (), (n,), False))
        return Var(n) if new is None else new

    def transposed(self, a: Any) -> Any:
        """``a.T`` of a 2-d argument: the Var ``a`` is the transpose of, if it is
        one, else a new ``transpose`` instruction (or, for a constant, its transpose)."""
        if type(a) is not Var:
            return np.transpose(a)
        d = self.defs.get(a.n)
        if d is not None and d.fn is wrap._transpose and len(d.args) <= 2 and type(d.args[0]) is Var:
            if _perm(d.args[1] if len(d.args) == 2 else None, 2) == (1, 0):
                return d.args[0]
        return self.emit(wrap._transpose, "transpose", (a,))


def _ndim(x: Any) -> int:
    return int(getattr(x, "ndim", -1))


def _rewrite_transpose(rw: _Rewriter, ins: Instr) -> Var | None:
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
    if d.fn is wrap._transpose and not d.kwargs and 1 <= len(d.args) <= 2 and type(d.args[0]) is Var:
        p = _perm(d.args[1] if len(d.args) == 2 else None, ndim)
        if p is None:
            return None
        composed = tuple(p[i] for i in q)
        if composed == tuple(range(ndim)):
            return d.args[0]
        return rw.emit(wrap._transpose, "transpose", (d.args[0], composed))
    if (d.fn is wrap._matmul and not d.kwargs and len(d.args) == 2 and q == (1, 0)
            and rw.counts.get(x.n, 0) == 1
            and all(_ndim(rw.values[a.n] if type(a) is Var else a) == 2 for a in d.args)):
        a, b = d.args  # (its value: the traced one in C order, not a product computed again)
        return rw.emit(wrap._matmul, "matmul", (rw.transposed(b), rw.transposed(a)),
                       np.ascontiguousarray(rw.values[ins.outs[0]]))
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


def _rewrite_reshape(rw: _Rewriter, ins: Instr) -> Var | None:
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
    if d is not None and d.fn is wrap._reshape and not d.kwargs and type(d.args[0]) is Var:
        return rw.emit(wrap._reshape, "reshape", (d.args[0], shape), rw.values[ins.outs[0]])
    return None


def _rewrite_sum(rw: _Rewriter, ins: Instr) -> Var | None:
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


def _rewrite_mean(rw: _Rewriter, ins: Instr) -> Var | None:
    """``mean`` of a NumPy array is its sum, then a division by the count: the
    two calls ``tapegrad``'s ``mean`` makes, without its wrapper."""
    b = _bind(ins, ("x", "axis", "keepdims"), (None, None, False))
    if b is None or type(rw.value(b[0])) is not np.ndarray or type(b[1]) is Var or type(b[2]) is not bool:
        return None
    x, axis, keepdims = b
    n = wrap.reduction_size(rw.value(x).shape, axis)
    total = rw.emit(ADD_REDUCE, "sum", (x, axis, None, None, True) if keepdims else (x, axis))
    return rw.emit(np.true_divide, "true_divide", (total, n))


def _rewrite_sum_to(rw: _Rewriter, ins: Instr) -> Var | None:
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
    return total if rw.values[total.n].shape == want else rw.emit(wrap._reshape, "reshape", (total, want))


MAX_REDUCE = np.maximum.reduce


def _rewrite_logsumexp(rw: _Rewriter, ins: Instr) -> Var | None:
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
    m = rw.emit(np.where, "where", (rw.emit(np.isfinite, "isfinite", (m,)), m, 0))
    e = rw.emit(np.exp, "exp", (rw.emit(np.subtract, "subtract", (x, m)),))
    total = rw.emit(ADD_REDUCE, "sum", (e, axis, None, None, True))
    out = rw.emit(np.add, "add", (rw.emit(np.log, "log", (total,)), m))
    kept = tuple(rw.values[total.n].shape)
    rw.lse[out.n] = (x, kept, e, total)
    if not keepdims:
        out = rw.emit(wrap._reshape, "reshape", (out, tuple(rw.values[ins.outs[0]].shape)))
        rw.lse[out.n] = (x, kept, e, total)
    return out


def _rewrite_exp(rw: _Rewriter, ins: Instr) -> Var | None:
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
    if r.n not in rw.lse and r_def is not None and r_def.fn is wrap._reshape and type(r_def.args[0]) is Var:
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


def _rewrite_scalar_op(rw: _Rewriter, ins: Instr) -> Var | None:
    """A ufunc of ``SCALAR_OPERATORS`` on NumPy scalars (and Python
    numbers) giving a float: the operator. (Else a constant operand of one
    repeated value: ``_rewrite_uniform_constant``.)"""
    if ins.kwargs or len(ins.args) != 2:
        return None
    vals = [rw.value(a) for a in ins.args]
    if any(type(v) is np.ndarray for v in vals):
        return _rewrite_uniform_constant(rw, ins)
    if not all(isinstance(v, np.generic) or type(v) in (int, float, complex) for v in vals):
        return None
    if not any(isinstance(v, np.generic) for v in vals):
        return None
    out = rw.values[ins.outs[0]]
    if not isinstance(out, np.generic) or out.dtype.kind not in "fc":
        return None
    return rw.emit(SCALAR_OPERATORS[ins.fn], ins.name, ins.args)


def _rewrite_uniform_constant(rw: _Rewriter, ins: Instr) -> Var | None:
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


def _rewrite_astype(rw: _Rewriter, ins: Instr) -> Var | None:
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


# one rule per function: it returns the Var holding the instruction's value, or None (kept as is)
REWRITES: dict[Any, Callable[[_Rewriter, Instr], Var | None]] = {
    wrap._transpose: _rewrite_transpose,
    wrap._reshape: _rewrite_reshape,
    wrap._sum: _rewrite_sum,
    wrap._mean: _rewrite_mean,
    wrap._astype: _rewrite_astype,
    wrap._logsumexp: _rewrite_logsumexp,
    np.exp: _rewrite_exp,
    _sum_to: _rewrite_sum_to,
    **{fn: _rewrite_scalar_op for fn in SCALAR_OPERATORS},
}


def rewrite(program: Sequence[Any], values: list[Any], outputs: Iterable[int]) -> tuple[Program, dict[int, int]]:
    """Algebraic rewrites (``REWRITES``): the same values from fewer or
    cheaper NumPy calls. A rewritten instruction's value is computed by new
    instructions (their Vars appended to ``values``, their values computed
    now) or is an existing Var; later uses are renamed. Returns the program
    and the renaming (for the outputs); what becomes unused is left for
    ``dead_code``."""
    outputs = list(outputs)
    rw = _Rewriter(program, values, outputs)
    rename = rw.rename
    # Vars whose value now has another memory layout than the trace saw (a product in C order
    # where the trace had a transposed view): what reads them is computed again, so that the
    # buffer planner sees the layouts (and the views) the program will make
    relaid: set[int] = set()
    for ins in program:
        if type(ins) is Guard:
            rw.out.append(Guard(rename.get(ins.var, ins.var), ins.truth))
            continue
        if rename:
            ins = ins._replace(args=tuple(Var(rename.get(a.n, a.n)) if type(a) is Var else a for a in ins.args),
                               kwargs=tuple((k, Var(rename.get(v.n, v.n)) if type(v) is Var else v)
                                            for k, v in ins.kwargs))
        if relaid and any(n in relaid for n in uses(ins)):
            _recompute(ins, values, relaid)
        new = rw.add(ins)
        if new is not None:  # (the Var now also has the uses of the one it replaces)
            if _layout(values[new.n]) != _layout(values[ins.outs[0]]):
                relaid.add(new.n)
            rename[ins.outs[0]] = new.n
            rw.counts[new.n] = rw.counts.get(new.n, 0) + rw.counts.get(ins.outs[0], 0)
    return rw.out, rename


def _layout(x: Any) -> Any:
    """What of a value's memory layout buffer planning reads (None: not an array)."""
    return (x.shape, x.strides) if type(x) is np.ndarray else None


def _recompute(ins: Instr, values: list[Any], relaid: set[int]) -> None:
    """Compute ``ins`` again on the current values; its results whose layout
    changed join ``relaid``."""
    def get(a: Any) -> Any:
        return values[a.n] if type(a) is Var else a

    got = ins.fn(*[get(a) for a in ins.args], **{k: get(v) for k, v in ins.kwargs})
    for o, v in zip(ins.outs, got if ins.multi else (got,)):
        if _layout(v) != _layout(values[o]):
            relaid.add(o)
        values[o] = v
