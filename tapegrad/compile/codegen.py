"""Code generation: a traced program as the source of one Python function.

One line per instruction, ``v<n> = name(args)``, calling the primitive's own
NumPy (or CuPy) function: no tape, no traced values, no dispatch. Constants
that read well (numbers, strings, tuples of them, None) are written in the
line; arrays and other objects are names bound in the function's globals
(``c<k>``). A guard is one ``if`` that raises ``GuardFailed``.
"""

from __future__ import annotations

import math
import operator
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var
from tapegrad.compile.passes import Plan, last_uses


class GuardFailed(Exception):
    """A value-dependent decision of the trace went the other way this call."""


def _fail(k: int) -> None:
    raise GuardFailed(k)


def _literal(x: Any) -> str | None:
    """``x`` as Python source, when it reads as itself (else None)."""
    if x is None or isinstance(x, (bool, str)):
        return repr(x)
    if type(x) is int:
        return repr(x)
    if type(x) is float:
        return repr(x) if math.isfinite(x) else None
    if type(x) is tuple and all(_literal(v) is not None for v in x):
        inner = ", ".join(_literal(v) for v in x)  # type: ignore[misc]
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    return None


class _Names:
    """Globals of the generated function: functions by their names, constants as c<k>."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_fail": _fail}
        self._fn_names: dict[int, str] = {}
        self._consts: dict[int, str] = {}

    def fn(self, fn: Any, name: str) -> str:
        key = id(fn)
        if key in self._fn_names:
            return self._fn_names[key]
        base = re.sub(r"\W", "_", name) or "f"
        if base[0].isdigit() or base in ("v", "c"):
            base = "f_" + base
        cand, k = base, 2
        while cand in self.namespace:
            cand, k = f"{base}_{k}", k + 1
        self.namespace[cand] = fn
        self._fn_names[key] = cand
        return cand

    def const(self, x: Any) -> str:
        lit = _literal(x)
        if lit is not None:
            return lit
        key = id(x)
        if key not in self._consts:
            name = f"c{len(self._consts)}"
            self._consts[key] = name
            self.namespace[name] = x
        return self._consts[key]

    def arg(self, a: Any) -> str:
        return f"v{a.n}" if type(a) is Var else self.const(a)


def generate(program: Sequence[Any], inputs: Sequence[int], outputs: Sequence[Any],
             name: str = "compiled", plan: Plan | None = None,
             donated: Sequence[int] = ()) -> tuple[str, dict[str, Any]]:
    """Return ``(source, globals)`` of a function of the inputs returning the
    list of outputs (each a ``Var`` or a constant, copied if an array:
    the caller owns what it gets). With a buffer ``plan``, the planned
    instructions write into the program's own buffers (``out=b<k>``), which
    each thread gets once and keeps. ``donated``: the inputs the caller
    gives up (see ``check_donated``; those the plan overwrites and the
    program does not return are made read-only after the call)."""
    names = _Names()
    fname = re.sub(r"\W", "_", name) or "compiled"
    if fname[0].isdigit() or fname in names.namespace:
        fname = "f_" + fname
    names.namespace[fname] = None  # (reserved: no function it calls may take its name)
    lines = [f"def {fname}({', '.join(f'v{n}' for n in inputs)}):"]
    outs: dict[int, int] = plan.out if plan is not None else {}
    inplace: dict[int, int] = plan.inplace if plan is not None else {}
    if plan is not None and plan.buffers:
        names.namespace["_buffers"] = _thread_buffers(plan.buffers)
        lines.append(f"    {', '.join(f'b{k}' for k in range(len(plan.buffers)))}, = _buffers()")
    out_vars = [o.n for o in outputs if type(o) is Var]
    if donated:
        names.namespace["_check_donated"] = check_donated
        names.namespace["_verified"] = [None, None, None]
        pos = {n: k for k, n in enumerate(inputs)}
        lines.append(f"    _check_donated(({''.join(f'v{n}, ' for n in inputs)}), "
                     f"{tuple(pos[n] for n in donated)!r}, _verified)")
        stale = overwritten(program, inplace, donated, out_vars)
        if stale:
            names.namespace["_seal"] = seal
            lines.append(f"    _stale = ({''.join(f'v{n}, ' for n in stale)})")
    else:
        stale = []
    last = last_uses(program, out_vars)
    dies: dict[int, list[int]] = {}  # instruction index -> the values dead after it
    for n, i in last.items():
        dies.setdefault(i, []).append(n)
    for i, ins in enumerate(program):
        for n in ins.outs if type(ins) is Instr else ():
            if n not in last:  # (one output of several, unused)
                dies.setdefault(i, []).append(n)
    guards = 0
    for i, ins in enumerate(program):
        if type(ins) is Guard:
            test = f"not v{ins.var}" if ins.truth else f"v{ins.var}"
            lines.append(f"    if {test}: _fail({guards})")
            guards += 1
        else:
            b = outs.get(i)
            lines.append(_line(ins, names, f"b{b}" if b is not None else
                               f"v{inplace[i]}" if i in inplace else None))
        if i in dies:  # free buffers as soon as the program is done with them (as eager does)
            lines.append(f"    del {', '.join(f'v{n}' for n in sorted(dies[i]))}")
    rets = []
    for o in outputs:
        if type(o) is Var:
            rets.append(f"v{o.n}")
        elif isinstance(o, np.ndarray):
            names.namespace.setdefault("_copy", np.array)
            rets.append(f"_copy({names.const(o)})")
        else:
            rets.append(names.const(o))
    if stale:
        lines.append("    _seal(_stale, _verified)")
    lines.append(f"    return [{', '.join(rets)}]")
    return "\n".join(lines) + "\n", names.namespace


def overwritten(program: Sequence[Any], inplace: dict[int, int], donated: Sequence[int],
                outputs: Sequence[int]) -> list[int]:
    """The donated inputs whose memory the program writes (``inplace``) and
    does not hand back as an output: stale after the call."""
    into = {program[i].outs[0]: n for i, n in inplace.items()}  # result -> the Var whose memory it took
    root: dict[int, int] = {}
    for o, n in into.items():
        while n in into:
            n = into[n]
        root[o] = n
    written = set(root.values()) & set(donated)
    returned = {root.get(o, o) for o in outputs}
    return sorted(written - returned)


def check_donated(args: Sequence[Any], donated: Sequence[int], verified: list[Any] | None = None) -> None:
    """Raise ``ValueError`` when a donated argument (see ``tg.jit``'s
    ``donate_argnums``) cannot be written: it is read-only (donated to an
    earlier call, which overwrote it) or it shares memory with another
    argument of the call. ``verified``: ``[donated arrays, owners, the other
    positions]`` of the last call that passed, or ``[None] * 3`` (the same objects again are
    writeable still, unless a call sealed them, which clears this, and share
    no memory among themselves: only the other arguments are checked)."""
    mine = [args[i] if type(args[i]) is np.ndarray else None for i in donated]  # (NumPy scalars hold no memory)
    if verified is not None and verified[0] is not None and all(map(operator.is_, mine, verified[0])):
        owners, others = verified[1], verified[2]
        for j in others:
            y = args[j]
            if type(y) is np.ndarray and id(y if y.base is None else y.base) in owners:
                _check_owner(args, owners, j, y)
        return
    for x in mine:
        if type(x) is np.ndarray and not x.flags.writeable:
            raise ValueError(
                "tapegrad.jit: a donated argument is read-only; an array donated to an earlier call was "
                "overwritten by it and cannot be used again (pass what that call returned instead)")
    owners = {}  # the array owning a donated argument's memory -> those arguments
    for i in donated:
        x = args[i]
        if type(x) is np.ndarray:
            owners.setdefault(id(x if x.base is None else x.base), []).append(i)
    for j, y in enumerate(args):  # (a view's base is the array that owns the memory)
        if type(y) is np.ndarray:
            _check_owner(args, owners, j, y)
    if verified is not None:
        verified[:] = [mine, owners, [j for j in range(len(args)) if j not in donated]]


def _check_owner(args: Sequence[Any], owners: dict[int, list[int]], j: int, y: np.ndarray) -> None:
    for i in owners.get(id(y if y.base is None else y.base), ()):
        if i != j and np.may_share_memory(args[i], y):
            raise ValueError(
                "tapegrad.jit: a donated argument shares memory with another argument of the call; "
                "the call would overwrite it (donate an array that nothing else passed in uses)")


def seal(arrays: Sequence[Any], verified: list[Any] | None = None) -> None:
    """Make donated arrays that a call overwrote read-only: using one after
    the call (in place, or donating it again) raises an error (``verified``,
    ``check_donated``'s memory of the last arguments, is cleared)."""
    for a in arrays:
        a.flags.writeable = False
    if verified is not None:
        verified[:] = [None, None, None]


# operators written as such (Python's operators on NumPy scalars: see rewrites.SCALAR_OPERATORS)
# and NumPy's matmul, which ``@`` calls on arrays
INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", np.matmul: "@"}


def _line(ins: Instr, names: _Names, buffer: str | None = None) -> str:
    symbol = INFIX.get(ins.fn)
    if symbol is not None and buffer is None and len(ins.args) == 2 and not ins.kwargs and not ins.multi:
        a, b = (names.arg(x) for x in ins.args)
        return f"    v{ins.outs[0]} = {a} {symbol} {b}"
    args = [names.arg(a) for a in ins.args]
    args += [f"{k}={names.arg(v)}" for k, v in ins.kwargs]
    if buffer is not None:
        args.append(f"out={buffer}")
    call = f"{names.fn(ins.fn, ins.name)}({', '.join(args)})"
    if ins.multi:
        target = ", ".join(f"v{n}" for n in ins.outs) + ("," if len(ins.outs) == 1 else "")
    else:
        target = f"v{ins.outs[0]}"
    return f"    {target} = {call}"


def _thread_buffers(specs: Sequence[tuple[tuple[int, ...], Any]]) -> Any:
    """A function returning this thread's buffers of the given shapes and
    dtypes (made at its first call): calls from two threads never share one."""
    local = threading.local()

    def buffers() -> list[Any]:
        got = getattr(local, "buffers", None)
        if got is None:
            got = local.buffers = [np.empty(shape, dtype) for shape, dtype in specs]
        return got

    return buffers


def compile_source(source: str, namespace: dict[str, Any], name: str) -> Any:
    """The function defined by ``source`` (its globals: ``namespace``)."""
    code = compile(source, f"<tapegrad.jit {name}>", "exec")
    exec(code, namespace)  # noqa: S102  (our own generated source)
    fname = source.split("(", 1)[0][4:]
    return namespace[fname]
