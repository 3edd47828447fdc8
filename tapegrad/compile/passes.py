"""Passes over a traced program (a list of ``Instr`` and ``Guard``).

Each takes the program and returns a new one; each is small and tested on
its own (tests/test_jit_passes.py). The algebraic rewrites are in
``tapegrad.compile.rewrites``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var, facts_of

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


def _takes_out(ins: Instr) -> bool:
    """Does ``ins`` call a function that takes ``out=`` and otherwise returns a
    new array of its own: a ufunc with one output, or a primitive declared
    ``fresh_out`` (as matmul is: see ``tapegrad.compile.facts``)?"""
    fn = ins.fn
    return isinstance(fn, np.ufunc) and fn.nout == 1 or facts_of(ins.prim).fresh_out


def _writes_fresh(ins: Instr, values: Sequence[Any]) -> bool:
    """Does ``ins`` take ``out=`` and write a new array of its own (see
    ``_takes_out``), here an n-d NumPy array? 0-d results stay as NumPy
    returns them (scalars), as eager code sees them."""
    return _allocates(ins, values) and values[ins.outs[0]].flags.c_contiguous


def _allocates(ins: Instr, values: Sequence[Any]) -> bool:
    """Does ``ins`` return a new n-d NumPy array of its own, whatever its
    layout (as ``_writes_fresh``, without asking for C order)?"""
    if ins.multi or any(k == "out" for k, _ in ins.kwargs) or not _takes_out(ins):
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
                 values: Sequence[Any], donated: Iterable[int] = ()) -> Plan:
    """Give the intermediate results of ufuncs (and matmul) buffers the
    compiled program owns and reuses from call to call (``out=``): a buffer
    is free again once every value that may share its memory is dead.

    Values returned to the caller, and anything that may share memory with
    an input or an output, never live in such a buffer: the caller owns what
    it gets and its inputs are never written. Any instruction other than a
    ufunc (or a ``fresh_out`` function) may return a view of its arguments
    (``reshape``, ``transpose``, indexing...), so its results count as
    sharing memory with them.

    ``donated``: inputs the caller gives up (``donate_argnums``), writeable
    arrays: an elementwise result of their shape and dtype may be written
    into one at its last use (``m = b*m + c*g`` into ``m``'s memory).
    """
    outputs = set(outputs)
    donated = {n for n in donated if type(values[n]) is np.ndarray and values[n].ndim
               and values[n].flags.writeable}
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
        for k, v in ins.kwargs:  # (a result written into ``out=`` is that array)
            if k == "out" and type(v) is Var:
                union(ins.outs[0], v.n)
        if not (isinstance(ins.fn, np.ufunc) or facts_of(ins.prim).fresh_out):
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
        allocates = _allocates(ins, values)
        small = allocates and values[ins.outs[0]].nbytes < BUFFER_MIN_BYTES
        if allocates and elementwise and not ins.kwargs:  # (no where=)
            o = ins.outs[0]
            v = values[o]
            for a in ins.args:  # an operand of its shape and dtype, dead after this instruction:
                # a small temporary of this call's, or a donated argument (whatever its size)
                if (type(a) is Var and (a.n in donated or small and a.n in own)
                        and group_end[find(a.n)] == i and values[a.n].shape == v.shape
                        and values[a.n].dtype == v.dtype and v.nbytes >= INPLACE_MIN_BYTES):
                    inplace[i] = a.n
                    break
        if small:
            own.add(ins.outs[0])
        elif getattr(ins.fn, "fresh_memory", False):  # (memory only this call holds: see horizontal.FlatPool)
            own.update(ins.outs)
        elif i in inplace:
            pass
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


def const_key(x: Any) -> Any:
    """A key equal for constants that are interchangeable as arguments."""
    if x is None or type(x) in (bool, int, float, complex, str):
        return (type(x), repr(x))  # (1, 1.0, True and 0.0, -0.0 stay apart)
    if type(x) is tuple:
        return (tuple, tuple(const_key(v) for v in x))
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
        key = (id(ins.fn), tuple(("v", a.n) if type(a) is Var else const_key(a) for a in ins.args),
               tuple((k, ("v", v.n) if type(v) is Var else const_key(v)) for k, v in ins.kwargs))
        if key in seen:
            for o_new, o_old in zip(ins.outs, seen[key]):
                rename[o_new] = o_old
            continue
        seen[key] = ins.outs
        out.append(ins)
    return out, rename
