"""Fused groups: runs of elementwise operations on arrays of one shape and
dtype, as one unit a backend can emit as one loop (a backend-neutral pass).

A ``FusedGroup`` names its inputs (Vars, or constants), its outputs (the
Vars read after it) and its ``steps``: ``(var, op, args)`` in order, where
``op`` is a key of ``OPS`` (an expression of its operands: ``"{0} * {1}"``)
and each argument is a ``Var`` (an input or an earlier step) or a constant.
The numba backend (``tapegrad.compile.backends.numba``) writes it as one
compiled loop; a CuPy backend could write the same group as one
``ElementwiseKernel`` from ``OPS``' expressions.

Only arithmetic and square roots fuse: NumPy's SIMD loops for ``exp``,
``tanh`` and the like are many times faster than a scalar loop calling the C
library (measured 16x for float32 ``tanh``), so they stay NumPy calls between
groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var
from tapegrad.compile.passes import uses

# ufunc -> the expression of one element of its result, in its operands {0}, {1}
OPS: dict[Any, str] = {
    np.add: "({0} + {1})", np.subtract: "({0} - {1})", np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})", np.negative: "(-{0})", np.positive: "(+{0})",
    np.square: "({0} * {0})", np.sqrt: "sqrt({0})", np.absolute: "abs({0})",
}
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
         emit: Callable[[FusedGroup], Instr], min_steps: int = 2,
         keep: Callable[[FusedGroup], bool] | None = None) -> list[Any]:
    """The program with each run of at least ``min_steps`` elementwise
    steps of one shape and dtype replaced by the instruction ``emit`` makes
    of its ``FusedGroup`` (scalar steps inside a run move before it), unless
    ``keep(group)`` says to keep its steps as they are."""
    outputs = set(outputs)
    last: dict[int, int] = {}
    for i, ins in enumerate(program):
        for n in ((ins.var,) if type(ins) is Guard else uses(ins)):
            last[n] = i
    out: list[Any] = []
    run: list[Instr] = []
    hoisted: list[Any] = []
    key: tuple[tuple[int, ...], str] | None = None

    def close(end: int) -> None:
        nonlocal run, hoisted, key
        out.extend(hoisted)
        group = _group(run, key, values, outputs, last, end) if len(run) >= min_steps and key else None
        if group is not None and not (keep is not None and keep(group)):
            out.append(emit(group))
        else:
            out.extend(run)
        run, hoisted, key = [], [], None

    for i, ins in enumerate(program):
        k = _member(ins, values)
        if k is not None and (key is None or k == key):
            run.append(ins)
            key = k
            continue
        inside = {o for r in run for o in r.outs}
        if run and _is_scalar_step(ins, values, inside):
            hoisted.append(ins)
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
    # read after the run (by a later instruction, a guard, or as an output)
    outs = tuple(n for n in (ins.outs[0] for ins in run) if n in outputs or last.get(n, -1) >= end)
    steps = tuple((ins.outs[0], ins.fn, ins.args) for ins in run)
    return FusedGroup(tuple(inputs), outs, steps, key[0], key[1])
