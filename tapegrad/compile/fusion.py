"""Fused groups: runs of elementwise operations on arrays of one shape and
dtype, as one unit a backend can emit as one loop (a backend-neutral pass).

A ``FusedGroup`` names its inputs (Vars, or constants), its outputs (the
Vars read after it) and its ``steps``: ``(var, op, args)`` in order, where
``op`` is a key of ``OPS`` (an expression of its operands: ``"{0} * {1}"``)
and each argument is a ``Var`` (an input or an earlier step) or a constant.
The numba backend (``tapegrad.compile.backends.numba``) writes it as one
compiled loop; a CuPy backend could write the same group as one
``ElementwiseKernel`` from ``OPS``' expressions.

Arithmetic and square roots always fuse. The C library's transcendental
functions (``LIBM``: ``exp``, ``tanh``, ``sin``, ...) fuse only on arrays of
at most ``SMALL`` elements: on larger ones NumPy's SIMD loops are several
times faster than a compiled scalar loop (measured: float32 ``tanh`` 0.3 ns an
element in NumPy, 7 ns in numba), while on small ones what a NumPy call
costs is its fixed 0.2-0.4 us, which the fused loop saves.

A run is not cut by an instruction that no later step of it reads (the
``sum`` of a loss between its forward and its backward elementwise chains):
that instruction is *sunk* after the group (programs are in SSA form before
buffers are planned, so moving an instruction later changes no value).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var
from tapegrad.compile.passes import uses

# ufunc -> the expression of one element of its result, in its operands {0}, {1}
ARITHMETIC: dict[Any, str] = {
    np.add: "({0} + {1})", np.subtract: "({0} - {1})", np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})", np.negative: "(-{0})", np.positive: "(+{0})",
    np.square: "({0} * {0})", np.sqrt: "sqrt({0})", np.absolute: "abs({0})",
}
# the C library's functions: a group takes them on arrays of at most SMALL elements
LIBM: dict[Any, str] = {f: f.__name__ + "({0})" for f in (
    np.exp, np.expm1, np.exp2, np.log, np.log1p, np.log2, np.log10, np.sin, np.cos, np.tan,
    np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh)}
OPS: dict[Any, str] = {**ARITHMETIC, **LIBM}
# At 64 elements a fused transcendental costs at most what the NumPy call it replaces costs
# (float32 tanh, the worst case: 3 ns an element in the loop, a call of 0.2 us); below, it wins
SMALL = 64
# function -> the expression of a step on scalars (a backend may compute a kernel's scalar
# steps, an optimizer's bias corrections, once at its start): the ufuncs above, Python's
# operators the rewrites write on NumPy scalars, ``power``, and NumPy's scalar types as casts
SCALAR_EXPRS: dict[Any, str] = {
    **{f: ARITHMETIC[f] for f in (np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.sqrt)},
    operator.add: ARITHMETIC[np.add], operator.sub: ARITHMETIC[np.subtract],
    operator.mul: ARITHMETIC[np.multiply], operator.truediv: ARITHMETIC[np.true_divide],
    np.power: "({0} ** {1})", np.float32: "{0}", np.float64: "{0}"}
FLOATS = ("float32", "float64")


class FusedGroup(NamedTuple):
    """A run of elementwise steps over arrays of one ``shape`` and ``dtype``."""

    inputs: tuple[Any, ...]  # Vars of arrays of the group's shape, or of scalars
    outputs: tuple[int, ...]  # Vars computed by steps and read after the group
    steps: tuple[tuple[int, Any, tuple[Any, ...]], ...]  # (var, op, args)
    shape: tuple[int, ...]
    dtype: str


def _scalar(x: Any) -> bool:
    return isinstance(x, np.generic) or type(x) in (int, float)


def _member(ins: Any, values: Sequence[Any]) -> tuple[tuple[int, ...], str] | None:
    """``(shape, dtype)`` of an elementwise array step that can join a group (else None)."""
    if type(ins) is not Instr or ins.multi or ins.kwargs or ins.fn not in OPS:
        return None
    out = values[ins.outs[0]]
    if type(out) is not np.ndarray or out.dtype.name not in FLOATS or not out.size:
        return None
    if ins.fn in LIBM and out.size > SMALL:
        return None
    for a in ins.args:
        v = values[a.n] if type(a) is Var else a
        if type(v) is np.ndarray:
            if v.shape != out.shape or v.dtype != out.dtype:
                return None  # (no broadcasting, no casts inside a loop)
        elif not _scalar(v):
            return None
    return out.shape, out.dtype.name


def _is_scalar_step(ins: Any, values: Sequence[Any], inside: set[int]) -> bool:
    """A step on scalars not computed by the group (it may move before it)."""
    return (type(ins) is Instr and not ins.multi and all(
        not isinstance(values[n], np.ndarray) or values[n].ndim == 0 for n in ins.outs)
        and not any(n in inside for n in uses(ins)))


def fuse(program: Sequence[Any], values: Sequence[Any], outputs: Iterable[int],
         emit: Callable[[FusedGroup], Any], min_steps: int = 2,
         keep: Callable[[FusedGroup], bool] | None = None) -> list[Any]:
    """The program with each run of at least ``min_steps`` elementwise
    steps of one shape and dtype replaced by the instruction ``emit`` makes
    of its ``FusedGroup``, unless ``keep(group)`` says to keep its steps as
    they are. Scalar steps inside a run move before it; other instructions
    inside it that no later step reads move after it (a guard ends a run)."""
    outputs = set(outputs)
    last: dict[int, int] = {}
    for i, ins in enumerate(program):
        for n in ((ins.var,) if type(ins) is Guard else uses(ins)):
            last[n] = i
    out: list[Any] = []
    run: list[Instr] = []
    hoisted: list[Any] = []  # (emitted before the group)
    sunk: list[Any] = []  # (emitted after it)
    sunk_outs: set[int] = set()
    key: tuple[tuple[int, ...], str] | None = None

    def close(end: int) -> None:
        nonlocal run, hoisted, sunk, key
        out.extend(hoisted)
        read_by_sunk = {n for ins in sunk for n in uses(ins)}
        group = (_group(run, key, values, outputs | read_by_sunk, last, end)
                 if len(run) >= min_steps and key else None)
        if group is not None and not (keep is not None and keep(group)):
            out.append(emit(group))
        else:
            out.extend(run)
        out.extend(sunk)
        run, hoisted, sunk, key = [], [], [], None
        sunk_outs.clear()

    for i, ins in enumerate(program):
        k = _member(ins, values)
        reads_sunk = type(ins) is Instr and any(n in sunk_outs for n in uses(ins))
        if k is not None and (key is None or k == key) and not reads_sunk:
            run.append(ins)
            key = k
            continue
        if run and type(ins) is Instr and k is None:
            inside = {o for r in run for o in r.outs}
            if not reads_sunk and _is_scalar_step(ins, values, inside):
                hoisted.append(ins)
            else:
                sunk.append(ins)
                sunk_outs.update(ins.outs)
            continue
        close(i)
        if k is not None:
            run, key = [ins], k
        else:
            out.append(ins)
    close(len(program))
    return out


def _group(run: list[Instr], key: tuple[tuple[int, ...], str], values: Sequence[Any],
           outputs: set[int], last: dict[int, int], end: int) -> FusedGroup:
    made = {ins.outs[0] for ins in run}
    inputs: list[Any] = []
    for ins in run:
        for a in ins.args:
            if type(a) is Var and a.n not in made and a not in inputs:
                inputs.append(a)
    # read after the run (by a later or a sunk instruction, a guard, or as an output)
    outs = tuple(n for n in (ins.outs[0] for ins in run) if n in outputs or last.get(n, -1) >= end)
    steps = tuple((ins.outs[0], ins.fn, ins.args) for ins in run)
    return FusedGroup(tuple(inputs), outs, steps, key[0], key[1])
