"""Passes over a traced program (a list of :class:`Instr` and :class:`Guard`).

Each takes the program and returns a new one; each is small and tested on
its own (tests/test_jit_passes.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tapegrad.compile.trace import Guard, Instr, Var

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
