"""Horizontal fusion: the same elementwise chain over every leaf of a pytree
run once, over one flat buffer (a pass, as those of ``passes``).

An optimizer's update, a weight decay, a gradient clipping's scaling, an
EMA of the parameters: code written per leaf (``for p, g, m in zip(...)``)
traces as one chain of elementwise NumPy calls per leaf, the same calls each
time on arrays of other shapes. Adam over the four arrays of a small MLP
is 48 calls, and on arrays of a few thousand elements a call costs about as
much as its arithmetic. This pass finds such isomorphic chains (the same
ufuncs, in the same order, on arrays of one dtype, with the same scalar
operands) and rewrites them as one chain over flat arrays holding all the
leaves end to end: 12 calls instead of 48.

Where each flat operand comes from:

- the leaves of arguments (the parameters, the optimizer state): one
  ``Gather`` copies them into one array, unless they are the very arrays a
  call of this jitted function returned, which are views of one flat array
  already (an identity check against the ``table`` of recent outputs): then
  that array is the operand, no copy. A training loop that passes the new
  parameters and state back in copies nothing after its first compiled call;
- values computed by a function that takes ``out=`` (the matmul giving a
  weight's gradient): each writes into its view of one flat array;
- anything else: gathered (copied) as arguments are.

Results read after the chain (the new parameters and state the function
returns, values the rest of the program reads) are views of a flat array
that a ``FlatPool`` hands out before the chain writes it: the caller gets
arrays of the leaves' shapes, views of one buffer. A pool hands out the
buffer of an earlier call again (with the same view objects) once nothing
but the pool references it or its views (CPython reference counts: the
caller has dropped them), so a training loop allocates nothing per step
either; the arrays a caller still holds are never written.

Donated arguments (``donate_argnums``) are written over instead: the new
parameters go into the flat array of the old ones once nothing reads those
any more, and the call returns the very arrays it was given.

Results equal the chains' (the same ufuncs on the same numbers, elementwise).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from operator import is_
from typing import Any, NamedTuple

import numpy as np

from tapegrad.compile.facts import Guard, Instr, Var, facts_of
from tapegrad.compile.passes import const_key, uses

Program = list[Any]  # Instr | Guard

# What one NumPy call costs besides its arithmetic, and what the pass adds,
# in microseconds (measured on one core for arrays of a few hundred elements:
# a ufunc 0.6-0.9, a view ``flat[a:b].reshape(s)`` 0.4-0.6, an identity check
# well under 0.1): a group is fused when it saves more calls than it costs.
CALL_US = 0.7
VIEW_US = 0.5
GATHER_US = 0.3
COPY_US = 1.0  # one copy of a leaf into a flat array (a concatenate's share)
BYTES_PER_US = 20000.0  # memory copied per microsecond (20 GB/s: arrays in cache)
# Over this many bytes a chain's arithmetic costs so much more than its calls
# that fusing saves under 1%, while the pools would hold the flat arrays.
MAX_FLAT_BYTES = 16 << 20

ENABLED = True  # (False: jit leaves the per-leaf chains as they are)
# CPython counts references: a pool may recycle a buffer nobody else holds.
RECYCLE = hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)()


# --- what runs in the compiled program ------------------------------------------------------


def _views(flat: np.ndarray, slices: Sequence[slice], shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """The leaves' views of ``flat`` (C order, each of its shape)."""
    return [flat[s] if len(shape) == 1 else flat[s].reshape(shape) for s, shape in zip(slices, shapes)]


class FlatPool:
    """``pool()``: ``[flat, view_1, ..., view_k]``, a flat array of ``size``
    elements and the views of it shaped as the leaves, for a chain to write
    (``out=flat``). A buffer of an earlier call comes back, with its views,
    when nothing outside the pool references it or any of its views: the
    caller has dropped what it got (CPython's reference counts say so; each
    thread has its own pool). ``table``: where the views are registered, so
    that a ``Gather`` recognises them when the caller passes them back."""

    KEEP = 2  # buffers kept per thread: the one the caller is passing back, and a free one
    fresh_memory = True  # (for the buffer planner: what it hands out nobody else holds during the call)

    def __init__(self, size: int, dtype: Any, slices: Sequence[slice], shapes: Sequence[tuple[int, ...]],
                 table: dict[Any, Any] | None) -> None:
        self.size = size
        self.dtype = np.dtype(dtype)
        self.slices = tuple(slices)
        self.shapes = tuple(tuple(s) for s in shapes)
        self.table = table
        self.local = threading.local()
        self.baseline: list[int] | None = None  # (see _refs)

    def __call__(self) -> list[np.ndarray]:
        entries = getattr(self.local, "entries", None)
        if entries is None:
            entries = self.local.entries = []
        baseline = self.baseline
        for entry in entries:
            if _refs(entry) == baseline:
                break
        else:
            entry = self._new(entries)
        if self.table is not None:
            self.table[self] = entry
        return entry

    def _new(self, entries: list[list[np.ndarray]]) -> list[np.ndarray]:
        flat = np.empty(self.size, self.dtype)
        entry = [flat, *_views(flat, self.slices, self.shapes)]
        del flat
        if RECYCLE:
            if self.baseline is None:  # (what the arrays of an entry that nothing else holds count)
                self.baseline = _refs(entry)
            entries.insert(0, entry)
            del entries[self.KEEP:]
        return entry


def _refs(entry: list[np.ndarray]) -> list[int]:
    """The reference counts of a pool entry's arrays (always read by this one
    function, so that a pool compares like with like: the counts of an entry
    nothing else references are its baseline)."""
    return list(map(_getrefcount, entry))


_getrefcount: Callable[[Any], int] = sys.getrefcount if RECYCLE else id  # (id: never compared)


class Gather:
    """``gather(x_1, ..., x_k)``: the leaves end to end in one flat array.
    When they are the views a ``FlatPool`` of the same ``table`` handed out
    last (the caller passes back what a call returned), that pool's flat
    array, with no copy: it is read, never written."""

    def __init__(self, size: int, dtype: Any, table: dict[Any, Any] | None) -> None:
        self.size = size
        self.dtype = np.dtype(dtype)
        self.table = table
        self.link: Any = None  # the pool whose views came back last time
        self.found: list[Any] | None = None  # the entry found by the last call (None: copied)

    def __call__(self, *xs: Any) -> np.ndarray:
        table = self.table
        if table is not None:
            entry = table.get(self.link)
            if entry is not None and len(entry) == len(xs) + 1 and all(map(is_, xs, entry[1:])):
                self.found = entry
                return entry[0]
            for pool, entry in list(table.items()):
                if len(entry) == len(xs) + 1 and all(map(is_, xs, entry[1:])):
                    self.link = pool
                    self.found = entry
                    return entry[0]
        self.found = None
        out = np.empty(self.size, self.dtype)
        np.concatenate([np.reshape(x, -1) for x in xs], out=out)
        return out


# --- finding the chains -----------------------------------------------------------------------


def _is_array(v: Any) -> bool:
    return type(v) is np.ndarray and v.ndim > 0


def _is_scalar(v: Any) -> bool:
    return (isinstance(v, np.generic) or type(v) in (bool, int, float, complex)
            or type(v) is np.ndarray and v.ndim == 0)


def _elementwise(ins: Any, values: Sequence[Any]) -> bool:
    """Is ``ins`` a ufunc on arrays of one shape and dtype (its result's), and scalars?"""
    if type(ins) is not Instr or ins.multi or ins.kwargs or len(ins.outs) != 1:
        return False
    fn = ins.fn
    if not isinstance(fn, np.ufunc) or fn.nout != 1 or fn.signature is not None:
        return False
    out = values[ins.outs[0]]
    if not _is_array(out) or not out.size:
        return False
    arrays = 0
    for a in ins.args:
        v = values[a.n] if type(a) is Var else a
        if type(a) is Var and _is_array(v):
            if v.shape != out.shape or v.dtype != out.dtype:
                return False
            arrays += 1
        elif not _is_scalar(v):
            return False  # (a constant array: not fused)
    return arrays > 0


class Chain(NamedTuple):
    """One leaf's elementwise chain: its instructions (indices, in order), its
    source arrays (Vars, in order of first use), and its form (equal for
    isomorphic chains)."""

    nodes: tuple[int, ...]
    sources: tuple[int, ...]
    form: Any


def _scalar_key(a: Any, values: Sequence[Any]) -> Any:
    if type(a) is Var:
        return ("v", a.n)
    if isinstance(a, np.generic) or type(a) is np.ndarray:
        return ("g", a.dtype.str, a.tobytes())
    return const_key(a)


def chains(program: Sequence[Any], values: Sequence[Any], skip: set[int] = frozenset()) -> list[Chain]:  # type: ignore[assignment]
    """The connected runs of elementwise instructions (linked by the arrays one
    computes and another reads), each with its canonical form: which ufunc
    each step calls on which earlier step, source array or scalar."""
    where = {ins.outs[0]: i for i, ins in enumerate(program)
             if _elementwise(ins, values) and ins.outs[0] not in skip}
    parent = {i: i for i in where.values()}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in where.values():
        for a in program[i].args:
            if type(a) is Var and a.n in where:
                ra, rb = find(i), find(where[a.n])
                if ra != rb:
                    parent[ra] = rb
    comps: dict[int, list[int]] = {}
    for i in sorted(where.values()):
        comps.setdefault(find(i), []).append(i)
    out = []
    for nodes in comps.values():
        local: dict[int, tuple[str, int]] = {}
        sources: list[int] = []
        steps = []
        for j, i in enumerate(nodes):
            ins = program[i]
            args: list[Any] = []
            for a in ins.args:
                if type(a) is Var and _is_array(values[a.n]):
                    if a.n not in local:
                        local[a.n] = ("s", len(sources))
                        sources.append(a.n)
                    args.append(local[a.n])
                else:
                    args.append(_scalar_key(a, values))
            local[ins.outs[0]] = ("n", j)
            steps.append((id(ins.fn), tuple(args)))
        form = (values[program[nodes[0]].outs[0]].dtype.str, tuple(steps))
        out.append(Chain(tuple(nodes), tuple(sources), form))
    return out


# --- the pass ------------------------------------------------------------------------------------


class _Group(NamedTuple):
    chains: tuple[Chain, ...]
    at: int  # the instruction after which the fused chain goes (-1: first)


def horizontal(program: Sequence[Any], values: list[Any], inputs: Sequence[int], outputs: Iterable[int],
               table: dict[Any, Any] | None = None, donated: Iterable[int] = (), backend: str = "numpy") -> Program:
    """``program`` with each set of isomorphic elementwise chains over
    leaves of one dtype computed once over flat arrays (see the module's
    docstring), where that saves calls. ``values`` gains the flat arrays'
    values; ``table`` (one per jitted function) links what its pools hand
    out to the gathers that receive it back. ``donated``: inputs the caller
    gives up (``donate_argnums``): a result of the chain is written over the
    flat array of such leaves where that array is read no more (the new
    parameters over the old), and handed back as the very arrays the caller
    passed when they are what a call returned. Only the NumPy ``backend``
    (the numba backend already runs each leaf's chain as one loop: one flat
    loop measured slower, 0.80 against 0.76x NumPy on the digits epoch).
    """
    if not ENABLED or backend != "numpy":
        return list(program)
    outputs = list(outputs)
    donated = set(donated)
    prog: Program = list(program)
    made: set[int] = set()
    refused: set[Any] = set()
    while True:
        group = _next_group(prog, values, set(inputs), outputs, made, refused)
        if group is None:
            return prog
        prog = _apply(prog, values, set(inputs), outputs, group, made, table, donated)


def _index(program: Sequence[Any], outputs: Sequence[int]) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Where each Var is made, and where it is read (outputs: at the end)."""
    defs: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for i, ins in enumerate(program):
        if type(ins) is Guard:
            readers.setdefault(ins.var, []).append(i)
            continue
        for n in ins.outs:
            defs[n] = i
        for n in uses(ins):
            readers.setdefault(n, []).append(i)
    for n in outputs:
        readers.setdefault(n, []).append(len(program))
    return defs, readers


def _next_group(program: Program, values: Sequence[Any], inputs: set[int], outputs: Sequence[int],
                made: set[int], refused: set[Any]) -> _Group | None:
    found = chains(program, values, made)
    by_form: dict[Any, list[Chain]] = {}
    for c in found:
        by_form.setdefault(c.form, []).append(c)
    defs, readers = _index(program, outputs)
    for group in by_form.values():
        key = tuple(c.nodes[0] for c in group)
        if len(group) < 2 or key in refused:
            continue
        at = _placement(program, group, defs, readers)
        if at is None or not _worth_it(program, values, group, inputs, outputs, defs, readers):
            refused.add(key)
            continue
        return _Group(tuple(group), at)
    return None


def _placement(program: Program, group: Sequence[Chain], defs: dict[int, int],
               readers: dict[int, list[int]]) -> int | None:
    """The index after which the fused chain can run: once every source and
    scalar it reads is made, before anything else reads what it computes
    (None: no such place)."""
    mine = {i for c in group for i in c.nodes}
    ready = -1
    for c in group:
        for n in c.sources:
            ready = max(ready, defs.get(n, -1))
        for i in c.nodes:
            for a in program[i].args:
                if type(a) is Var and defs.get(a.n, -1) not in mine:
                    ready = max(ready, defs.get(a.n, -1))
    first_read = len(program) + 1
    for c in group:
        for i in c.nodes:
            for r in readers.get(program[i].outs[0], ()):
                if r not in mine:
                    first_read = min(first_read, r)
    return ready if ready < first_read else None


def _read_after(program: Program, c: Chain, j: int, readers: dict[int, list[int]]) -> bool:
    """Is step ``j`` of chain ``c`` read outside the chain?"""
    mine = set(c.nodes)
    return any(r not in mine for r in readers.get(program[c.nodes[j]].outs[0], ()))


def _takes_out(ins: Any, values: Sequence[Any]) -> bool:
    """Can ``ins`` write its one result into a view given as ``out=``?"""
    if type(ins) is not Instr or ins.multi or len(ins.outs) != 1 or any(k == "out" for k, _ in ins.kwargs):
        return False
    fn = ins.fn
    return (isinstance(fn, np.ufunc) and fn.nout == 1 or facts_of(ins.prim).fresh_out) and _is_array(values[ins.outs[0]])


def _source_kind(program: Program, values: Sequence[Any], vars_: Sequence[int], inputs: set[int],
                 defs: dict[int, int]) -> str:
    """How a flat operand is made from the leaves' sources ``vars_``:
    ``"inputs"`` (gathered: arguments, which may be views a pool handed out),
    ``"out"`` (each computed into its view) or ``"copy"`` (gathered)."""
    if all(n in inputs for n in vars_):
        return "inputs"
    if len(set(vars_)) == len(vars_) and all(n in defs and _takes_out(program[defs[n]], values) for n in vars_):
        return "out"
    return "copy"


def _worth_it(program: Program, values: Sequence[Any], group: Sequence[Chain], inputs: set[int],
              outputs: Sequence[int], defs: dict[int, int], readers: dict[int, list[int]]) -> bool:
    """Does fusing save more than the gathers and views cost (see ``CALL_US``)?
    Arguments are taken to be the arrays an earlier call returned (no copy)
    for as many operands as the chain returns results (the parameters and
    state of an update; the gradients passed in are copied each call)."""
    k = len(group)
    nbytes = sum(values[program[c.nodes[0]].outs[0]].nbytes for c in group)
    if nbytes > MAX_FLAT_BYTES:
        return False
    saved = CALL_US * (k - 1) * len(group[0].nodes)
    view = 0.1 if RECYCLE else VIEW_US
    copy = COPY_US * k + nbytes / BYTES_PER_US
    returned = set(outputs)
    fed_back = sum(any(program[c.nodes[j]].outs[0] in returned for c in group) for j in range(len(group[0].nodes)))
    cost = 0.0
    for p in range(len(group[0].sources)):
        kind = _source_kind(program, values, [c.sources[p] for c in group], inputs, defs)
        if kind == "inputs" and fed_back:
            fed_back -= 1
            cost += GATHER_US
        elif kind == "out":
            cost += view * (k + 1)
        else:
            cost += copy
    for j in range(len(group[0].nodes)):
        if any(_read_after(program, c, j, readers) for c in group):
            cost += view * (k + 1)
    return saved > cost


def _apply(program: Program, values: list[Any], inputs: set[int], outputs: Sequence[int], group: _Group,
           made: set[int], table: dict[Any, Any] | None, donated: set[int]) -> Program:
    """The program with ``group``'s chains computed over flat arrays."""
    chains_ = group.chains
    defs, readers = _index(program, outputs)
    returned = set(outputs)
    first = program[chains_[0].nodes[0]]
    dtype = values[first.outs[0]].dtype
    shapes = [values[program[c.nodes[0]].outs[0]].shape for c in chains_]
    sizes = [int(np.prod(s)) for s in shapes]
    starts = np.cumsum([0, *sizes]).tolist()
    slices = [slice(a, b) for a, b in zip(starts[:-1], starts[1:])]
    total = starts[-1]

    def new_var(value: Any) -> Var:
        values.append(value)
        made.add(len(values) - 1)
        return Var(len(values) - 1)

    def flatten(vals: Sequence[Any]) -> np.ndarray:
        return np.concatenate([np.reshape(v, -1) for v in vals]).astype(dtype, copy=False)

    def rebind(vars_: Sequence[int], flat: np.ndarray) -> None:
        """The leaves' values as views of ``flat`` (the buffer planner reads what shares memory)."""
        for n, v in zip(vars_, _views(flat, slices, shapes)):
            values[n] = v

    drop = {i for c in chains_ for i in c.nodes}
    before: dict[int, list[Any]] = {}  # index -> instructions to insert before it
    replace: dict[int, Instr] = {}
    block: list[Any] = []
    flat_of: dict[tuple[str, int], Any] = {}  # the chain's local names -> flat Vars
    gathers: dict[int, Gather] = {}  # source positions of donated arguments -> their gather
    for p in range(len(chains_[0].sources)):
        vars_ = [c.sources[p] for c in chains_]
        kind = _source_kind(program, values, vars_, inputs, defs)
        value = flatten([values[n] for n in vars_])
        if kind == "out":  # each producer writes its view of a pooled flat array
            flat = new_var(value)
            rebind(vars_, value)
            pool = FlatPool(total, dtype, slices, shapes, table if returned & set(vars_) else None)
            views = [new_var(values[n]) for n in vars_]
            first_def = min(defs[n] for n in vars_)
            before.setdefault(first_def, []).append(
                Instr(pool, "flat_pool", (), (), (flat.n, *(v.n for v in views)), True))
            for n, v in zip(vars_, views):
                ins = program[defs[n]]
                replace[defs[n]] = ins._replace(kwargs=(*ins.kwargs, ("out", v)))
        else:
            flat = new_var(value)
            gather = Gather(total, dtype, table)
            if (kind == "inputs" and donated.issuperset(vars_)  # (read by nothing after the chain)
                    and all(r <= group.at or r in drop for n in vars_ for r in readers.get(n, ()))):
                gathers[p] = gather
            block.append(Instr(gather, "flat_gather", tuple(Var(n) for n in vars_), (), (flat.n,), False))
        flat_of[("s", p)] = flat
    local = {n: ("s", p) for p, n in enumerate(chains_[0].sources)}
    local.update({program[i].outs[0]: ("n", j) for j, i in enumerate(chains_[0].nodes)})
    steps = [tuple(local.get(a.n) if type(a) is Var else None for a in program[i].args) for i in chains_[0].nodes]
    read = [any(_read_after(program, c, j, readers) for c in chains_) for j in range(len(steps))]
    into = _pooled(steps, read)
    over = _over_donated(steps, into, set(gathers))  # pooled position -> the donated source it writes over
    targets: dict[int, Var] = {}  # pooled position -> the Var of the flat array it writes
    scratch: dict[int, Var] = {}  # such a position -> the pooled flat array its operands go into first
    for j in sorted(set(into.values())):
        vars_ = [program[c.nodes[j]].outs[0] for c in chains_]
        if j in over:
            s_pos, start = over[j]
            targets[j] = flat_of[("s", s_pos)]
            for i in [i for i, t in into.items() if t == j and i < start]:
                if j not in scratch:
                    scratch[j] = new_var(None)
                    block.append(Instr(FlatPool(total, dtype, (), (), None), "flat_scratch", (), (),
                                       (scratch[j].n,), True))
                into[i] = -1 - j  # (into the scratch array)
            continue
        targets[j] = new_var(None)
        pool = FlatPool(total, dtype, slices, shapes, table if returned & set(vars_) else None)
        block.append(Instr(pool, "flat_pool", (), (), (targets[j].n, *vars_), True))
    splits: list[Any] = []
    for j in range(len(steps)):
        ins0 = program[chains_[0].nodes[j]]
        vars_ = [program[c.nodes[j]].outs[0] for c in chains_]
        args = tuple(flat_of[local[a.n]] if type(a) is Var and a.n in local else a for a in ins0.args)
        value = ins0.fn(*[values[a.n] if type(a) is Var else a for a in args])
        result = new_var(value)
        to = into.get(j)
        kwargs = () if to is None else (("out", targets[to] if to >= 0 else scratch[-1 - to]),)
        block.append(Instr(ins0.fn, ins0.name, args, kwargs, (result.n,), False))
        if read[j]:  # (a pool's views, or the donated arrays' flat array split)
            rebind(vars_, value)
            if j in over:  # (the arrays passed in, if they were what a call returned)
                splits.append(Instr(Split(slices, shapes, table if returned & set(vars_) else None,
                                          gathers[over[j][0]]), "flat_split", (result,), (), tuple(vars_), True))
            else:
                values[targets[j].n] = value
        flat_of[("n", j)] = result
    for j, flat in targets.items():  # (a pool's flat array holds its position's value, as traced)
        if values[flat.n] is None:
            values[flat.n] = values[flat_of[("n", j)].n]
    for flat in scratch.values():
        values[flat.n] = np.empty(total, dtype)
    block += splits
    out: Program = []
    if group.at < 0:
        out += block
    for i, ins in enumerate(program):
        out += before.get(i, [])
        if i not in drop:
            out.append(replace.get(i, ins))
        if i == group.at:
            out += block
    return out


def _pooled(steps: Sequence[tuple[Any, ...]], read: Sequence[bool]) -> dict[int, int]:
    """Which steps of a chain write into which pooled buffer: each step read
    after the chain (``read``) writes its own; so does, before it, an operand
    it computed that nothing else reads, and that one's such operand, and so
    on (``m + 0.1 * (g - m)`` is three calls into the pooled buffer of the new
    ``m``: no temporary array)."""
    readers: dict[int, set[int]] = {}
    for j, args in enumerate(steps):
        for a in args:
            if a is not None and a[0] == "n":
                readers.setdefault(a[1], set()).add(j)
    into: dict[int, int] = {}
    for j in range(len(steps)):
        if not read[j]:
            continue
        into[j] = cur = j
        while True:
            for a in steps[cur]:
                if (a is not None and a[0] == "n" and a[1] not in into and not read[a[1]]
                        and readers.get(a[1]) == {cur}):
                    cur = a[1]
                    into[cur] = j
                    break
            else:
                break
    return into


def _over_donated(steps: Sequence[tuple[Any, ...]], into: dict[int, int], sources: set[int]) -> dict[int, tuple[int, int]]:
    """Which pooled positions may write over the flat array of a donated
    source instead (``{position: (source, first step writing it)}``): a
    source its steps read, read by no step after the position; the steps
    of its run (see ``_pooled``) from the source's last reader on write over
    it, those before it into a scratch array (``m + 0.1 * (g - m)``: ``g - m``
    and ``0.1 *`` into the scratch, the sum over ``m``)."""
    last_read: dict[int, int] = {}
    for j, args in enumerate(steps):
        for a in args:
            if a is not None and a[0] == "s" and a[1] in sources:
                last_read[a[1]] = j
    over: dict[int, tuple[int, int]] = {}
    taken: set[int] = set()
    for j in sorted(set(into.values())):
        run = [i for i, t in into.items() if t == j]
        cands = [(last_read[a[1]], a[1]) for i in run for a in steps[i]
                 if a is not None and a[0] == "s" and a[1] in sources and a[1] not in taken
                 and last_read[a[1]] <= j]
        if cands:
            start, s_pos = min(cands)
            over[j] = (s_pos, start)
            taken.add(s_pos)
    return over


class Split:
    """``split(flat)``: the leaves' views of a flat array (registered in
    ``table``, when given, for a ``Gather`` to recognise). ``gather``: when
    ``flat`` is the array that gather last found (donated arguments written
    over), the views are the arrays the caller passed, handed back."""

    def __init__(self, slices: Sequence[slice], shapes: Sequence[tuple[int, ...]],
                 table: dict[Any, Any] | None, gather: Gather | None = None) -> None:
        self.slices = tuple(slices)
        self.shapes = tuple(tuple(s) for s in shapes)
        self.table = table
        self.gather = gather

    def __call__(self, flat: np.ndarray) -> list[np.ndarray]:
        found = self.gather.found if self.gather is not None else None
        if found is not None and found[0] is flat:
            entry = found
        else:
            entry = [flat, *_views(flat, self.slices, self.shapes)]
        if self.table is not None:
            self.table[self] = entry
        return entry[1:]
