"""The Wengert tape: entries, the recording stack (levels) and the reverse replay.

Every recorded operation becomes an ``Entry`` with an index drawn from one
global counter, so index order is a topological order. The reverse pass walks
entries by descending index, never recursing and never sorting the tape.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from typing_extensions import Self

from tapegrad._gc import tracing
from tapegrad.core.engine_ops import cast_to, map_batch, sum_to
from tapegrad.core.level import Level, _stack
from tapegrad.core.primitive import (
    ARGNUMS_BOTH,
    ARGNUMS_FIRST,
    ARGNUMS_SECOND,
    ARGNUMS_UNARY,
    _refuse_lists,
)
from tapegrad.core.traced import Traced

_counter = itertools.count(1)
next_index = _counter.__next__

class FreedGraphError(RuntimeError):
    """A backward pass reached entries whose rules an earlier pass freed."""


FREED = ("tapegrad: this graph's rules were freed by an earlier backward pass; to backward "
         "through the graph a second time, keep them: Tape(persistent=True), or "
         "retain_graph=True")


class Entry:
    """One slot of a tape: a watched input (a leaf: no primitive) or the
    output of a recorded op.

    An op's entry records its primitive, its parent entries (the traced
    inputs) and one staged VJP closure per parent (the residuals). Most
    entries have one parent: ``parents`` and ``vjps`` are then that entry
    and that closure themselves (no tuple to build per op), else tuples of
    them in the same order (see ``parents_of``, ``rules_of``).
    """

    # ``res``: on a graph tape, the output as its rules keep it, when they
    # keep it (see GraphTape.record); set only then, never read otherwise
    __slots__ = ("index", "shape", "dtype", "prim", "parents", "vjps", "res", "__weakref__")
    res: Traced

    def __init__(
        self,
        index: int,
        shape: tuple[int, ...],
        dtype: Any,
        prim: Any = None,
        parents: Any = (),
        vjps: Any = None,
    ) -> None:
        self.index = index
        self.shape = shape
        self.dtype = dtype
        self.prim = prim
        self.parents = parents
        self.vjps = vjps

    # The public face of an entry (SPEC section 4).
    @property
    def primitive(self) -> str:
        return self.prim.name if self.prim is not None else "watch"

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(p.index for p in parents_of(self))

    @property
    def outputs(self) -> tuple[int, ...]:
        return (self.index,)

    def __repr__(self) -> str:
        # global node numbers (#n); str(tape) numbers each tape's lines from %0
        args = ", ".join(f"#{i}" for i in self.inputs)
        return f"<Entry #{self.index} = {self.primitive}({args})>"


class _WalkState:
    __slots__ = ("frees",)

    def __init__(self) -> None:
        self.frees = False  # does the running reverse walk free residuals?


class _Walk(threading.local):
    # (one thread-local read per walk, then a plain attribute: see tapegrad._gc._Held)
    def __init__(self) -> None:
        self.state = _WalkState()


_walk = _Walk()


def consumable(residual: Any) -> bool:
    """May a rule overwrite ``residual``, a plain array it closed over?

    Yes when the running reverse walk frees each entry's residuals after use
    (not ``retain``: the rule runs once) and nothing but the rule holds the
    array: no user variable, no other entry's rule, no view of it (views
    hold their base), and it is no view itself. NumPy elides temporaries
    with the same reference-count test. Call it directly from the rule's
    function, whose parameter and closure cell are the two references
    expected (the baseline is measured at import, per interpreter).
    """
    return (_walk.state.frees and type(residual) is np.ndarray and residual.base is None
            and residual.flags.writeable and sys.getrefcount(residual) <= _CONSUMABLE_REFS)


def _probe_refs() -> int:
    """The reference count ``consumable`` sees for an array held only by a
    rule's closure cell and the rule function's parameter."""
    counts: list[int] = []

    def rule_function(g: Any, residual: Any) -> None:
        counts.append(_count(residual))

    def _count(residual: Any) -> int:
        return sys.getrefcount(residual)

    def maker(residual: Any) -> Callable[[Any], Any]:
        return lambda g: rule_function(g, residual)

    vjp = maker(np.ones(2))
    vjp(None)
    return counts[0]


def conversion_hint(v: Any) -> str:
    """How to make ``v`` (an integer or boolean input) differentiable: ``float(...)``
    for a Python number (it has no ``.astype``), ``.astype(float)`` for an array."""
    if isinstance(v, (int, bool)):
        return (f"it is the Python {type(v).__name__} {v!r}: pass a float instead "
                f"(float(...), or {int(v)}.0) to differentiate it")
    return "convert it with .astype(float) to differentiate it"

class Tape(Level):
    """An explicit Wengert tape (a context manager), a level of the stack.

    ``tape.watch(x)`` starts tracing ``x`` and ``tape.gradient(y, x)``
    replays the tape backwards. ``len(tape)`` is its number of entries;
    iterating over it yields the entries (each with ``.primitive``,
    ``.inputs`` and ``.outputs``); ``str(tape)`` is the Wengert list, one
    line per entry, and ``tape.to_dot()`` the same graph for Graphviz.

    Examples:
        >>> with tg.Tape() as tape:
        ...     x = tape.watch(np.array([1.0, 2.0]))
        ...     y = tnp.sum(tnp.sin(x) * x)
        >>> tape.gradient(y, x)
        array([1.38177329, 0.07700375])

    Args:
        persistent: allow ``gradient`` to be called more than once.
    """

    what = "a value of a tape"

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = persistent
        self.entries: list[Entry] = []
        self.leaves: list[Entry] = []
        self._outer: dict[int, int] = {}  # leaf index -> level of the outer tape it watches
        self.active = False
        self.level = -1
        self._used = False
        self._append = self.entries.append

    # --- recording ----------------------------------------------------------
    def record(self, prim: Any, ans: Any, args: Sequence[Any], raw: Sequence[Any], kwargs: dict[str, Any],
               argnums: Sequence[int], vjps: Any = None) -> Traced:
        """Log ``prim``, already evaluated to ``ans``, as one entry of this tape;
        return ``ans`` traced on it. ``args`` are the op's arguments, ``raw``
        the same with this tape's values unboxed, ``argnums`` the positions of
        this tape's values among them (the entry's parents, in order). Given
        ``vjps`` (one parent's rule, from an operator's cache: see
        ``tapegrad.core.primitive.keep_scalar_rule``), no rule is made.

        The one place where entries are built: every op (the primitives'
        fast paths for one and two operands included), custom rules and
        checkpoints call it. Each kind of tape specialises it: here the rules
        close over the unboxed arguments (plain values, or values traced on
        lower tapes); the graph tape keeps them traced, a subclass may add
        node data of its own, a forward trace pushes tangents instead.
        """
        # (the primitives' fast paths pass one of the ARGNUMS_* objects: told
        # apart by identity, cheaper than len() and indexing)
        if argnums is ARGNUMS_UNARY:  # one operand, traced (unary functions)
            if vjps is None:
                maker = prim.vjps.get(0) or prim.vjp_maker(0)
                vjps = maker(ans, raw[0], **kwargs) if kwargs else maker(ans, raw[0])
            parent = args[0]._node
        elif argnums is ARGNUMS_FIRST or argnums is ARGNUMS_SECOND:  # two operands, one traced
            i = argnums[0]
            if vjps is None:
                maker = prim.vjps.get(i) or prim.vjp_maker(i)
                a, b = raw  # (the arguments spelled out: a call with *raw costs 55 ns more)
                vjps = maker(ans, a, b, **kwargs) if kwargs else maker(ans, a, b)
            parent = args[i]._node
        elif argnums is ARGNUMS_BOTH:  # two operands, both traced (unrolled, as above)
            table = prim.vjps
            mi = table.get(0) or prim.vjp_maker(0)
            mj = table.get(1) or prim.vjp_maker(1)
            a, b = raw
            if kwargs:
                vjps = (mi(ans, a, b, **kwargs), mj(ans, a, b, **kwargs))
            else:
                vjps = (mi(ans, a, b), mj(ans, a, b))
            parent = (args[0]._node, args[1]._node)
        else:  # (any other call: in a function of its own, see _parents_and_rules)
            parent, vjps = _parents_and_rules(prim, ans, args, raw, kwargs, argnums, vjps)
        # (field by field: 30 ns less than the class call; this is every op's cost)
        node = _new_obj(Entry)
        node.index = next_index()
        node.shape = ans.shape
        node.dtype = ans.dtype
        node.prim = prim
        node.parents = parent
        node.vjps = vjps
        self._append(node)
        out = _new_obj(Traced)
        out._value = ans
        out._level = self
        out._node = node
        return out

    def process(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run ``prim`` on ``args`` and record it (the general path; the
        primitives' fast paths unroll it for one and two operands). Values
        of lower levels among ``args`` are processed when ``prim`` runs on
        this tape's unboxed values. A tape that is not recording reads its
        values as their primals: constants."""
        if not self.active:
            return prim.wrapped(*[a._value if type(a) is Traced and a._level is self else a
                                  for a in args], **kwargs)
        raw = list(args)
        argnums = []
        nested = False  # do values of lower levels take part?
        for i, a in enumerate(args):
            if type(a) is Traced:
                if a._level is self:
                    v = raw[i] = a._value
                    if type(v) is Traced:
                        nested = True
                    argnums.append(i)
                else:
                    nested = True
        if nested:  # (the lower level would take such a list as a constant: this level converts it)
            _refuse_lists(args, kwargs)
            ans = prim.wrapped(*raw, **kwargs)
        else:
            ans = prim.fun(*raw, **kwargs)
        return self.record(prim, ans, args, raw, kwargs, argnums)

    # (__enter__ and __exit__ run once per transform call, a few per nested
    # derivative: a nested ``tracing`` only counts itself, see tapegrad._gc)
    def __enter__(self) -> Self:
        self._open()
        tracing.__enter__()  # (the collector paused, NumPy's warnings at the user's line)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._close()
        tracing.__exit__()

    def _open(self) -> None:
        """Start recording: ``with tape:`` without entering ``tracing``, for a
        transform that holds one ``tracing`` span around its tape and its
        backward pass (``grad``: a span nested in it would cost two calls and
        two thread-local reads). Undo with ``_close``, also on an exception."""
        if self.active:
            raise RuntimeError("this tape is already recording")
        # (Level.push, spelled out: a call less on every transform's path, a
        # third derivative's 465k instructions -> 460k)
        levels = _stack.levels
        self.level = len(levels) + 1
        levels.append(self)
        self.entered = True
        self.active = True

    def _close(self) -> None:
        """Stop recording (see ``_open``)."""
        levels = _stack.levels  # (Level.pop, spelled out as in _open)
        if levels and levels[-1] is self:
            levels.pop()
        else:  # closed out of order: remove it wherever it is
            levels.remove(self)
        self.entered = False
        self.active = False

    def watch(self, x: Any) -> Any:
        """Start tracing ``x`` (a pytree of arrays) on this tape.

        Returns the traced value(s), in the same structure as ``x``.
        """
        from tapegrad.pytree import tree_map

        if not self.active:
            raise RuntimeError("Tape.watch() needs a recording tape: call it inside `with tape:`")
        return tree_map(self._watch_leaf, x)

    def _watch_leaf(self, x: Any) -> Traced:
        if type(x) is Traced and x._level is self:
            return x
        given = x
        if type(x) is not Traced and not hasattr(x, "dtype"):
            x = np.asarray(x)
        if x.dtype.kind not in "fc":
            raise TypeError(
                f"tapegrad: can only differentiate with respect to floating-point or complex "
                f"values, but Tape.watch got dtype {x.dtype}; {conversion_hint(given)}"
            )
        if type(x) is Traced and x._level.entered and x._level.level > self.level:
            raise ValueError(
                f"Tape.watch: cannot watch {x._level.what} entered inside this tape (level {x._level.level}, "
                f"above this tape's level {self.level}); open the tape inside that function, or "
                "watch the value before it is mapped"
            )
        node = leaf_entry(x)
        self.leaves.append(node)
        if type(x) is Traced:  # watching a value of an outer tape (nesting)
            self._outer[node.index] = x._level.level
        return Traced(x, self, node)

    # --- replay -------------------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None) -> Any:
        """Return d(target)/d(sources), in the structure of ``sources``.

        ``target`` may be a pytree: its leaves' gradients are summed (as
        TensorFlow does). ``output_gradients`` gives the cotangent of each
        target leaf (default: ones). A non-persistent tape answers once.
        """
        from tapegrad.pytree import tree_flatten, tree_unflatten

        if self._used and not self.persistent:
            raise RuntimeError(
                "Tape.gradient() can only be called once on a non-persistent tape; "
                "use Tape(persistent=True) to call it more than once"
            )
        self._used = True
        targets, _ = tree_flatten(target)
        if output_gradients is None:
            seeds_in = [None] * len(targets)
        else:
            seeds_in, _ = tree_flatten(output_gradients)
            if len(seeds_in) != len(targets):
                raise TypeError(
                    f"Tape.gradient: output_gradients has {len(seeds_in)} leaves but the "
                    f"target has {len(targets)}"
                )
        src_leaves, src_def = tree_flatten(sources)
        seeds: dict[int, Any] = {}
        batched = False  # do the given cotangents carry leading batch axes?
        for t, s in zip(targets, seeds_in):
            if type(t) is not Traced or t._level is not self:
                continue
            if s is None:
                s = ones_seed(t._value)
            elif getattr(s, "ndim", 0) > len(t._node.shape):
                batched = True
            add_seed(seeds, t._node.index, s)
        grads = self.backprop(seeds, src_leaves, retain=self.persistent, batched=batched)
        return tree_unflatten(src_def, grads)

    def backprop(self, seeds: dict[int, Any], sources: list[Any], retain: bool,
                 batched: bool = False) -> list[Any]:
        """Push ``seeds`` (node index -> cotangent) back to ``sources``.

        Returns one cotangent per source (zeros where none arrives).
        ``batched``: the seeds carry leading batch axes (see ``backprop``).
        """
        was_active = self.active
        self.active = False  # this tape's own values are constants to the replay
        try:
            ct = backprop(reversed(self.entries), seeds, retain, batched=batched)
        finally:
            self.active = was_active
        out = []
        for s in sources:
            if type(s) is not Traced or s._level is not self:
                raise TypeError("Tape.gradient: every source must be a value watched on this tape")
            node = s._node
            out.append(ct.get(node.index) if node.index in ct else zeros_for(node, s._value))
        return out

    # --- inspection ---------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def _names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for n in self.leaves + self.entries:
            names[n.index] = f"%{len(names)}"
        return names

    def _input_label(self, n: Entry, names: dict[int, str]) -> str:
        outer = self._outer.get(n.index)
        where = f" (traced on level {outer})" if outer is not None else ""
        return f"{names[n.index]} {_describe(n)}{where}"

    def __str__(self) -> str:
        """The Wengert list, numbered from %0 on this tape: watched inputs first
        (as a comment line, noting inputs that are values of an outer tape),
        then one line per entry."""
        names = self._names()
        lines = []
        if self.level > 1 or self._outer:
            lines.append(f"# tape at level {self.level}")
        if self.leaves:
            lines.append("# inputs: " + ", ".join(self._input_label(n, names) for n in self.leaves))
        for e in self.entries:
            args = ", ".join(names.get(p.index, f"%?{p.index}") for p in parents_of(e))
            lines.append(f"{names[e.index]} = {e.primitive}({args})    # {_describe(e)}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """The tape as a Graphviz digraph: inputs and entries as nodes (labelled
        with their primitive, shape and dtype), data flow as edges."""
        names = self._names()
        lines = [
            "digraph tape {",
            "  rankdir=TB;",
            '  node [shape=box, fontname="monospace", fontsize=10];',
        ]
        for n in self.leaves:
            label = self._input_label(n, names).replace(" (", "\\n(", 1)
            lines.append(f'  n{n.index} [label="{label}", shape=ellipse];')
        for e in self.entries:
            lines.append(f'  n{e.index} [label="{names[e.index]} = {e.primitive}\\n{_describe(e)}"];')
            for p in parents_of(e):
                lines.append(f"  n{p.index} -> n{e.index};")
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "recording" if self.active else "closed"
        return f"<tapegrad.Tape level={self.level} {state}, {len(self)} entries>"


_new_obj = object.__new__


def _parents_and_rules(prim: Any, ans: Any, args: Sequence[Any], raw: Sequence[Any], kwargs: dict[str, Any],
                       argnums: Sequence[int], vjps: Any) -> tuple[Any, Any]:
    """An entry's ``parents`` and ``vjps`` (see ``Entry``) for a call that
    ``Tape.record`` does not unroll: ``argnums`` any sequence of positions.
    (Apart from ``record``: a comprehension there would make its arguments
    closure cells, which every op would pay for, about 0.1 us.)"""
    if len(argnums) == 1:  # (one parent: no tuples, see Entry)
        i = argnums[0]
        if vjps is None:
            vjps = (prim.vjps.get(i) or prim.vjp_maker(i))(ans, *raw, **kwargs)
        return args[i]._node, vjps
    table = prim.vjps
    return (tuple([args[i]._node for i in argnums]),
            tuple([(table.get(i) or prim.vjp_maker(i))(ans, *raw, **kwargs) for i in argnums]))


def leaf_entry(x: Any) -> Entry:
    """The entry of a watched input ``x`` (a leaf: no primitive, no parents);
    every tape makes its leaves here, as it makes its op entries in ``record``."""
    return Entry(next_index(), x.shape, x.dtype)


def _describe(n: Entry) -> str:
    return f"{tuple(n.shape)} {np.dtype(n.dtype).name}"


# --- seeds, zeros --------------------------------------------------------------


def pack_rules(items: list[Any]) -> Any:
    """An entry's ``parents`` or ``vjps`` from a list, one per parent: the
    item itself when there is one, else a tuple (see ``Entry``)."""
    return items[0] if len(items) == 1 else tuple(items)


def parents_of(e: Entry) -> tuple[Entry, ...]:
    """The parent nodes of entry ``e`` as a tuple."""
    parents = e.parents
    return parents if type(parents) is tuple else (parents,)


def rules_of(e: Entry) -> tuple[Callable[[Any], Any], ...]:
    """The rules of entry ``e`` as a tuple, one per parent (none once freed)."""
    vjps = e.vjps
    if vjps is None:
        return ()
    return vjps if type(vjps) is tuple else (vjps,)


def ones_seed(v: Any) -> Any:
    """The seed of an output whose value is ``v``: ones of its shape and dtype
    (a constant, whatever level ``v`` is traced on)."""
    traced = v
    while type(v) is Traced:
        v = v._value
    if type(v) is np.ndarray or isinstance(v, np.generic):  # NumPy's, without np.ones' wrapper
        out = np.empty(v.shape, v.dtype)
        out.fill(1)
        return out
    from tapegrad.backend import array_module

    return array_module(traced).ones(v.shape, dtype=v.dtype)  # (an abstract value: its array's module)


def zeros_for(node: Entry, primal: Any, batch: tuple[int, ...] = ()) -> Any:
    from tapegrad.backend import array_module

    return array_module(primal).zeros(batch + tuple(node.shape), dtype=node.dtype)


def add_seed(seeds: dict[int, Any], index: int, g: Any) -> None:
    seeds[index] = seeds[index] + g if index in seeds else g


# --- the reverse replay ------------------------------------------------------------


def _fit(c: Any, p: Entry, g: Any, e: Entry) -> Any:
    """A contribution to parent ``p`` of entry ``e`` (whose cotangent is ``g``)
    summed back to ``p``'s shape, keeping ``g``'s leading batch axes, and cast
    to its dtype: the one place rules' broadcasting and promotion are undone."""
    nb = g.ndim - len(e.shape)
    if c.shape != (g.shape[:nb] + p.shape if nb else p.shape):
        c = sum_to(c, p.shape, nb)
    if c.dtype != p.dtype:
        c = cast_to(c, p.dtype)
    return c


def _accumulate(ct: dict[int, Any], owned: set[int], i: int, c: Any) -> None:
    """Add ``c`` into the cotangent of node ``i``: in place when this walk
    allocated that buffer, else into a new one (which it then owns)."""
    old = ct[i]
    if i in owned and type(old) is np.ndarray and type(c) is not Traced:
        old += c
    else:
        ct[i] = old + c
        owned.add(i)


def backprop(entries: Iterable[Entry], ct: dict[int, Any], retain: bool,
             hooks: dict[int, list[Callable[[Any], Any]]] | None = None,
             batched: bool = False, held: bool = False) -> dict[int, Any]:
    """The reverse pass: walk ``entries`` (descending index), pulling each
    entry's cotangent from ``ct`` and pushing it to its parents.

    ``ct`` maps node index to cotangent; cotangents may carry leading batch
    axes (``g.shape == batch + node.shape``). Each parent's contribution is
    summed back to its shape and cast to its dtype here, once, so rules never
    unbroadcast by themselves. Returns ``ct``, now holding the cotangents of
    the nodes the walk did not consume (the leaves). Unless ``retain``, each
    entry's residuals are freed once used. ``hooks`` maps a node index to
    functions applied to its total cotangent before it is pushed on
    (``g = hook(g)``), as tensor hooks are.

    ``batched`` says that the cotangents carry leading batch axes (jacrev,
    hessian, a batched ``vjp_fn``): the rules of a primitive that did not
    declare batched VJP rules are then called once per batch element (see
    ``map_batch``). Without it, no rule is wrapped (the plain walk).
    ``held``: the caller holds ``tapegrad._gc.tracing`` already (a
    transform's one span for its tape and its backward pass: see
    ``Tape._open``), so the walk does not enter it again.
    """
    walk = _walk.state
    frees_before, walk.frees = walk.frees, not retain
    try:
        if held:
            return _walk_entries(entries, ct, retain, hooks, batched)
        with tracing:  # (the collector paused, NumPy's warnings in rules at the user's line)
            return _walk_entries(entries, ct, retain, hooks, batched)
    finally:
        walk.frees = frees_before


def _walk_entries(entries: Iterable[Entry], ct: dict[int, Any], retain: bool,
                  hooks: dict[int, list[Callable[[Any], Any]]] | None, batched: bool) -> dict[int, Any]:
    pop = ct.pop
    special = bool(hooks) or batched  # hooks to run, or rules to map over a batch?
    owned: set[int] = set()  # cotangent buffers this walk allocated: safe to add into
    # A one-parent entry hands its parent's first contribution straight to the
    # next entry when that parent is it (a chain): no round trip through ``ct``.
    carried, cg = 0, None  # (node indices start at 1: 0 is "nothing carried")
    for e in entries:
        if e.index == carried:
            g, carried, cg = cg, 0, None
        else:
            if carried:  # the next entry is another branch: park the carry
                ct[carried] = cg
                carried, cg = 0, None
            g = pop(e.index, None)
            if g is None:
                continue
        vjps = e.vjps
        if vjps is None:
            if e.prim is None:
                ct[e.index] = g  # a leaf reached through a graph walk
                continue
            raise FreedGraphError(FREED)
        if special:  # (one test for both: the plain walk pays no more than before)
            if hooks and e.index in hooks:
                for hook in hooks[e.index]:
                    g = hook(g)
            if batched and not getattr(e.prim, "vjps_batched", True):
                vjps = _one_at_a_time(vjps, g, e)
        parents = e.parents
        if type(parents) is not tuple:  # one parent, the common case: no zip
            p = parents
            c = vjps(g)
            if c.shape != p.shape or (c.dtype is not p.dtype and c.dtype != p.dtype):
                c = _fit(c, p, g, e)
            i = p.index
            if ct and i in ct:  # (a chain carries everything: ct stays empty)
                _accumulate(ct, owned, i, c)
            else:
                carried, cg = i, c
        else:
            for p, vjp in zip(parents, vjps):
                c = vjp(g)
                if c.shape != p.shape or (c.dtype is not p.dtype and c.dtype != p.dtype):
                    c = _fit(c, p, g, e)
                i = p.index
                if i in ct:
                    _accumulate(ct, owned, i, c)
                else:
                    ct[i] = c
            del vjp  # the loop variable must not keep the last rule's residuals alive
        if not retain:
            e.vjps = vjps = None
    if carried:
        ct[carried] = cg
    return ct


def _one_at_a_time(vjps: Any, g: Any, e: Entry) -> Any:
    """The rule(s) ``vjps`` of entry ``e`` (see ``Entry``), rules for one
    cotangent at a time, made to take ``g`` and its leading batch axes by
    ``map_batch`` (as they are when ``g`` has none)."""
    nb = g.ndim - len(e.shape)
    if nb <= 0:
        return vjps
    if type(vjps) is tuple:
        return tuple([functools.partial(map_batch, v, nb=nb) for v in vjps])
    return functools.partial(map_batch, vjps, nb=nb)


_CONSUMABLE_REFS = _probe_refs()
