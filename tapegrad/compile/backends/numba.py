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
from pathlib import Path
from typing import Any

import numba  # noqa: F401  (the point of this module: fails here when numba is missing)
import numpy as np

from tapegrad.compile.facts import Instr, Var
from tapegrad.compile.fusion import LIBM, OPS, FusedGroup, fuse

_LOADED: dict[str, Any] = {}  # source hash -> the module's run function


def cache_dir() -> Path:
    """Where kernel sources (and numba's cache of their machine code) live."""
    root = os.environ.get("TAPEGRAD_CACHE_DIR")
    return Path(root) / "numba" if root else Path.home() / ".cache" / "tapegrad" / "numba"


def source_of(group: FusedGroup, scalars: frozenset[int] = frozenset()) -> str:
    """The Python source of the group's kernel and of ``run``, which
    allocates the outputs and calls it (inputs in ``group.inputs``' order;
    ``scalars``: the input Vars holding a scalar, not an array)."""
    dt = f"np.{group.dtype}"
    index = {a.n: k for k, a in enumerate(group.inputs)}
    names: dict[int, str] = {}
    scalar_args = [k for k, a in enumerate(group.inputs) if a.n in scalars]

    def operand(a: Any) -> str:
        if type(a) is Var:
            return names[a.n] if a.n in names else f"x{index[a.n]}"
        return f"{dt}({float(a)!r})"

    body = []
    arrays = [k for k in range(len(group.inputs)) if k not in scalar_args]
    for k in arrays:
        body.append(f"        x{k} = a{k}[i]")
    for var, fn, args in group.steps:
        names[var] = f"t{var}"
        body.append(f"        t{var} = {OPS[fn].format(*[operand(a) for a in args])}")
    for j, n in enumerate(group.outputs):
        body.append(f"        o{j}[i] = {names[n]}")
    params = [f"o{j}" for j in range(len(group.outputs))] + [
        f"x{k}" if k in scalar_args else f"a{k}" for k in range(len(group.inputs))]
    ins = [f"a{k}" if k not in scalar_args else f"x{k}" for k in range(len(group.inputs))]
    call = [f"o{j}.reshape(-1)" for j in range(len(group.outputs))] + [
        f"{dt}(x{k})" if k in scalar_args else f"a{k}.reshape(-1)" for k in range(len(group.inputs))]
    lines = [
        "import numpy as np",
        "from numba import njit",
        f"from numpy import {', '.join(sorted({'sqrt'} | {fn.__name__ for _, fn, _ in group.steps if fn in LIBM}))}",
        "",
        "",
        '@njit(cache=True, error_model="numpy", nogil=True)',
        f"def kernel({', '.join(params)}):",
        "    for i in range(o0.size):",
        *body,
        "",
        "",
        f"def run({', '.join(ins)}):",
        *[f"    o{j} = np.empty({group.shape!r}, {dt})" for j in range(len(group.outputs))],
        f"    kernel({', '.join(call)})",
        f"    return {', '.join(f'o{j}' for j in range(len(group.outputs)))}",
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


def emit(group: FusedGroup, values: Any) -> Instr:
    """The instruction calling the compiled kernel of ``group``."""
    scalars = frozenset(a.n for a in group.inputs
                        if not isinstance(values[a.n], np.ndarray) or values[a.n].ndim == 0)
    run = load(source_of(group, scalars))
    outs = group.outputs
    return Instr(run, f"fused_{len(group.steps)}", tuple(group.inputs), (), outs, len(outs) > 1)


# A kernel call costs about 3 us (dispatch, its outputs' allocation) where a NumPy call on a
# small array costs 0.3-0.6 us: a group runs as a kernel when it has this many steps, or this
# many elements times steps (below, the gain measured under 10%: NumPy's calls are kept)
MIN_STEPS = 4
MIN_WORK = 32768


def worth(group: FusedGroup) -> bool:
    """Does ``group`` run faster as one kernel than as NumPy calls (see ``MIN_STEPS``)?"""
    return len(group.steps) >= MIN_STEPS or len(group.steps) * int(np.prod(group.shape)) >= MIN_WORK


def lower(program: list[Any], values: Any, outputs: Any) -> list[Any]:
    """``program`` with its fused groups worth a kernel as numba kernels."""
    return fuse(program, values, outputs, lambda g: emit(g, values), keep=lambda g: not worth(g))
