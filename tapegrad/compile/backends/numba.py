"""The numba backend: each ``FusedGroup`` of a program (see
``tapegrad.compile.fusion``) becomes one loop compiled by numba.

Imported only by ``tg.jit(f, backend="numba")``. A kernel's source is
written to a file in the cache directory (``$TAPEGRAD_CACHE_DIR``, else
``~/.cache/tapegrad/numba``), named by its hash, and compiled with numba's
``cache=True``: a later process loads the machine code from the disk instead
of running LLVM again (0.5-1 s per kernel). ``error_model="numpy"``: a
division by zero gives ``inf`` or ``nan`` as in NumPy, no exception; float32
stays float32 (scalars are cast to the group's dtype, as NumPy casts a
Python number beside a float32 array).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numba  # noqa: F401  (the point of this module: fails here when numba is missing)
import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var
from tapegrad.compile.fusion import LIBM, OPS, SCALAR_EXPRS, FusedGroup, fuse
from tapegrad.compile.passes import uses

_LOADED: dict[str, Any] = {}  # source hash -> the module's run function


def cache_dir() -> Path:
    """Where kernel sources (and numba's cache of their machine code) live."""
    root = os.environ.get("TAPEGRAD_CACHE_DIR")
    return Path(root) / "numba" if root else Path.home() / ".cache" / "tapegrad" / "numba"


class Scalar(NamedTuple):
    """A step on scalars a kernel computes once, before its loops (``fn``: a
    key of ``fusion.SCALAR_EXPRS``; the result cast to ``dtype``, the traced
    value's, as NumPy types it)."""

    var: int
    fn: Any
    args: tuple[Any, ...]
    dtype: str


def _inputs(groups: Sequence[FusedGroup], preamble: Sequence[Scalar]) -> list[Var]:
    """A kernel's arguments: what its scalar steps and groups read that they do not compute."""
    made = {p.var for p in preamble}
    inputs: list[Var] = []
    for args in [p.args for p in preamble] + [g.inputs for g in groups]:
        inputs += [a for a in args if type(a) is Var and a.n not in made and a not in inputs]
    return inputs


def source_of(groups: Sequence[FusedGroup], scalars: frozenset[int] = frozenset(),
              preamble: Sequence[Scalar] = (), inputs: Sequence[Var] | None = None) -> str:
    """The Python source of one kernel running the groups' loops in turn, and
    of ``run``, which allocates the outputs and calls it (its arguments: what
    the kernel reads, each once, in order of first use; ``scalars``: the
    input Vars holding a Python or NumPy scalar, not an array). The kernel
    first computes its ``preamble``'s scalar steps. Arrays are flattened
    inside the kernel (a view of a C-contiguous array, a copy of another),
    scalars cast to their group's dtype there: each costs the call nothing in
    Python. (``inputs``: ``_inputs(groups, preamble)``, if the caller has it.)"""
    if inputs is None:
        inputs = _inputs(groups, preamble)
    index = {a.n: k for k, a in enumerate(inputs)}
    n_out = sum(len(g.outputs) for g in groups)
    params = [f"O{j}" for j in range(n_out)] + [
        f"S{k}" if a.n in scalars else f"A{k}" for k, a in enumerate(inputs)]
    body = [f"    o{j} = O{j}.ravel()" for j in range(n_out)]
    body += [f"    a{k} = A{k}.ravel()" for k, a in enumerate(inputs) if a.n not in scalars]
    made = {p.var for p in preamble}

    def scalar(a: Any) -> str:
        if type(a) is Var:
            return f"p{a.n}" if a.n in made else f"S{index[a.n]}"
        return f"np.{a.dtype.name}({a.item()!r})" if isinstance(a, np.generic) else repr(a)

    for p in preamble:
        body.append(f"    p{p.var} = np.{p.dtype}({SCALAR_EXPRS[p.fn].format(*map(scalar, p.args))})")
    first_out = 0
    for g in groups:
        dt = f"np.{g.dtype}"
        names: dict[int, str] = {}
        for a in g.inputs:
            if a.n in made or a.n in scalars:
                names[a.n] = f"x{a.n}"
                body.append(f"    x{a.n} = {dt}({scalar(a)})")

        def operand(a: Any, dt: str = dt) -> str:
            if type(a) is Var:
                return names[a.n] if a.n in names else f"x{index[a.n]}"
            return f"{dt}({float(a)!r})"

        body.append(f"    for i in range(o{first_out}.size):")
        body += [f"        x{index[a.n]} = a{index[a.n]}[i]" for a in g.inputs if a.n not in names]
        for var, fn, args in g.steps:
            expr = OPS[fn].format(*[operand(a) for a in args])
            names[var] = f"t{var}"
            body.append(f"        t{var} = {expr}")
        body += [f"        o{first_out + j}[i] = {names[n]}" for j, n in enumerate(g.outputs)]
        first_out += len(g.outputs)
    allocs = [f"    O{j} = np.empty({g.shape!r}, np.{g.dtype})"
              for j, g in enumerate(g for g in groups for _ in g.outputs)]
    libm = sorted({fn.__name__ for g in groups for _, fn, _ in g.steps if fn in LIBM})
    lines = [
        "import numpy as np",
        "from numba import njit",
        f"from numpy import {', '.join(['sqrt', *libm])}",
        "",
        "",
        '@njit(cache=True, error_model="numpy", nogil=True)',
        f"def kernel({', '.join(params)}):",
        *body,
        "",
        "",
        f"def run({', '.join(params[n_out:])}):",
        *allocs,
        f"    kernel({', '.join(params)})",
        f"    return {', '.join(params[:n_out])}",
        "",
    ]
    return "\n".join(lines)


def load(source: str) -> Any:
    """The ``run`` function of a kernel's source (written to the cache directory, imported once)."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    run = _LOADED.get(key)
    if run is not None:
        return run
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"k_{key}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)  # (atomic: another process may be writing the same kernel)
    name = f"tapegrad_numba_k_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    run = _LOADED[key] = module.run
    return run


class _Group(NamedTuple):
    """A fused group's place in the program until the kernels are written."""

    group: FusedGroup


def _kernel(groups: list[FusedGroup], preamble: list[Scalar], values: Any) -> Instr:
    """The instruction calling the compiled kernel that computes ``preamble``, then runs ``groups`` in turn."""
    inputs = _inputs(groups, preamble)
    scalars = frozenset(a.n for a in inputs
                        if not isinstance(values[a.n], np.ndarray) or values[a.n].ndim == 0)
    run = load(source_of(groups, scalars, preamble, inputs))
    outs = tuple(n for g in groups for n in g.outputs)
    run(*[values[a.n] for a in inputs])  # (compiled now: the first call pays for LLVM, not the second)
    steps = sum(len(g.steps) for g in groups) + len(preamble)
    return Instr(run, f"fused_{steps}", tuple(inputs), (), outs, len(outs) > 1)


def _scalar_step(ins: Any, values: Any) -> Scalar | None:
    """``ins`` as a kernel's scalar step, if it is one (a float NumPy scalar from scalars)."""
    if type(ins) is not Instr or ins.multi or ins.kwargs or ins.fn not in SCALAR_EXPRS:
        return None
    out = values[ins.outs[0]]
    if not isinstance(out, np.generic) or out.dtype.kind != "f":
        return None
    for a in ins.args:
        v = values[a.n] if type(a) is Var else a
        if not (isinstance(v, (np.integer, np.floating)) or type(v) in (int, float)):
            return None
    return Scalar(ins.outs[0], ins.fn, ins.args, out.dtype.name)


def lower(program: list[Any], values: Any, outputs: Any) -> list[Any]:
    """``program`` with its fused groups as numba kernels: adjacent groups
    that do not read each other's outputs (an optimizer's update of each
    leaf) share one kernel, one call instead of one each, and the steps on
    scalars that only a kernel reads (an optimizer's bias corrections) are
    computed in it, once per call, instead of as NumPy calls (each costs 0.3-1 us)."""
    items: list[Any] = []  # instructions, and batches: lists of groups for one kernel
    made: set[int] = set()  # (the last batch's outputs)
    # (every run of two steps or more: a kernel call, flattening and casting inside the kernel,
    # costs about 0.3 us, less than the NumPy call it saves; measured 9-12% faster for a pair of
    # steps on 10 or 640 elements, 33% on 16,384, tg.jit's own call included)
    for ins in fuse(program, values, outputs, _Group):
        if type(ins) is _Group:
            last = items[-1] if items and type(items[-1]) is list else None
            if last is not None and not any(a.n in made for a in ins.group.inputs):
                last.append(ins.group)
            else:
                items.append([ins.group])
                made.clear()
            made.update(ins.group.outputs)
        else:
            items.append(ins)
    readers: dict[int, set[int]] = {}
    for i, item in enumerate(items):
        reads = ([a.n for g in item for a in g.inputs] if type(item) is list
                 else [item.var] if type(item) is Guard else list(uses(item)))
        for n in reads:
            readers.setdefault(n, set()).add(i)
    kept = set(outputs)
    preambles: dict[int, list[Scalar]] = {}  # a batch's position -> its scalar steps
    moved: set[int] = set()
    for i in [i for i, item in enumerate(items) if type(item) is list]:
        taken, steps = {i}, []
        for j in range(i - 1, -1, -1):  # (readers come after what they read: one pass backwards)
            step = _scalar_step(items[j], values) if type(items[j]) is not list else None
            if step is not None and step.var not in kept and readers.get(step.var, set()) <= taken:
                taken.add(j)
                steps.append(step)
        preambles[i] = steps[::-1]
        moved |= taken - {i}
    return [_kernel(item, preambles[i], values) if type(item) is list else item
            for i, item in enumerate(items) if i not in moved]
