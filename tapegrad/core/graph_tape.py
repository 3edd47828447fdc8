"""The graph tape: a tape whose graph is owned by its values (``.backward()`` on them).

Its entries keep their parents (no list), so a graph lives exactly as long as
the values that reach it; replays collect the entries reachable from their
roots (``reachable``) and run ``tapegrad.core.tape.backprop`` over them.
"""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from tapegrad.core.level import Level
from tapegrad.core.tape import Entry, Tape, leaf_entry, next_index, pack_rules
from tapegrad.core.traced import Traced

_new_obj = object.__new__


class GraphTape(threading.local, Level):
    """A tape whose graph is owned by its values: a base level, below every
    level entered, for an object-style API (``y.backward()``).

    It sits at level 0 and records while its per-thread switch (``active``)
    is on. It keeps no list: each node holds
    its parents, so a graph lives exactly as long as the values that reach
    it, and replays walk it with ``reachable``. Its residuals are kept
    *traced* (not their values): a replay with recording switched on is itself
    recorded, which is how ``create_graph=True`` differentiates a backward
    pass; with recording off, traced residuals read as plain values.

    The object is thread-local: ``active`` is each thread's own (a plain
    attribute: it is read on every op).
    """

    level = 0  # (below every level entered: see tapegrad.core.level)
    what = "a value of a graph tape"
    process = Tape.process  # (the same general path as a tape's)

    def __init__(self) -> None:
        self.active = True

    def record(self, prim: Any, ans: Any, args: Sequence[Any], raw: Sequence[Any], kwargs: dict[str, Any],
               argnums: Sequence[int], vjps: Any = None) -> Traced:
        """``Tape.record`` for a graph owned by its values: the entry's
        rules close over the *traced* arguments and output (not their values),
        so a replay can itself be recorded (see ``rules``)."""
        res = None
        if vjps is None:
            out, vjps, res = self.rules(prim, ans, args, kwargs, argnums)
        else:
            out = Traced(ans, self, None)
        out._node = node = Entry(next_index(), ans.shape, ans.dtype, prim,
                                 pack_rules([args[i]._node for i in argnums]), vjps)
        if res is not None:
            node.res = res
        return out

    def rules(self, prim: Any, ans: Any, args: Sequence[Any], kwargs: dict[str, Any],
              argnums: Sequence[int]) -> tuple[Traced, Any, Traced | None]:
        """The output of an entry (``ans`` traced, its node not yet set) and
        its rules, which close over the traced arguments and output, and the
        output's twin, if the rules keep the output.

        Rules that keep the output get a twin of it with no node instead: the
        output itself would make a cycle (output -> entry -> rule -> output)
        that only the cyclic collector frees, so a graph no backward pass
        consumed would outlive its tensors. ``connect_residuals`` gives
        the twins their entries while a replay that records (``create_graph``)
        runs."""
        if len(argnums) == 2 and len(args) == 2 and not kwargs:  # (unrolled: see Tape.record)
            out = _new_obj(Traced)  # (field by field: the class call costs as much as the stores)
            out._value = ans
            out._level = self
            out._node = None
            table = prim.vjps
            i, j = argnums
            mi = table.get(i) or prim.vjp_maker(i)
            mj = table.get(j) or prim.vjp_maker(j)
            a, b = args
            vjps = (mi(out, a, b), mj(out, a, b))
            if sys.getrefcount(out) <= FRESH_REFS:
                return out, vjps, None
            res = Traced(ans, self, None)
            return out, (mi(res, a, b), mj(res, a, b)), res
        return _rules_of_any(self, prim, ans, args, kwargs, argnums)

    def watch(self, x: Any) -> Traced:
        """A new leaf for ``x`` (an array) on this tape."""
        return Traced(x, self, leaf_entry(x))

    def __repr__(self) -> str:
        return f"<tapegrad.GraphTape {'recording' if self.active else 'paused'}>"


def _rules_of_any(tape: GraphTape, prim: Any, ans: Any, args: Sequence[Any], kwargs: dict[str, Any],
                  argnums: Sequence[int]) -> tuple[Traced, Any, Traced | None]:
    """``GraphTape.rules`` for the calls it does not unroll. (A function of
    its own: the comprehensions here make their function's variables
    closure cells, made on every call: in ``rules`` every op paid for them,
    the two-operand ops included.)"""
    out = Traced(ans, tape, None)  # (one reference, as in rules: FRESH_REFS holds)
    table = prim.vjps
    makers = [table.get(i) or prim.vjp_maker(i) for i in argnums]
    vjps = pack_rules([m(out, *args, **kwargs) for m in makers])
    if sys.getrefcount(out) <= FRESH_REFS:
        return out, vjps, None
    res = Traced(ans, tape, None)
    return out, pack_rules([m(res, *args, **kwargs) for m in makers]), res


def reachable(roots: Iterable[Entry]) -> list[Entry]:
    """Entries reachable from ``roots``, by descending index (the order
    PyTorch walks its sequence numbers in): for graphs owned by their values,
    not a tape. One pass collects them and one sort orders them, which costs
    less per entry than a heap; a run of one-parent entries (a chain of
    unary ops) is followed link by link, without the stack, and the sort is
    skipped when the pass found the entries in order already (a chain)."""
    stack = [n for n in roots if n.prim is not None]
    seen = set(stack)
    found: list[Entry] = []
    pop, push, add, keep = stack.pop, stack.append, seen.add, found.append
    ordered = True
    while stack:
        node = pop()
        if found and node.index > found[-1].index:
            ordered = False
        while True:  # (a parent's index is below its child's: a link keeps the order)
            keep(node)
            parents = node.parents
            if type(parents) is not tuple:
                p = parents
                if p.prim is None or p in seen:
                    break
                if stack:  # (with none, only p's own ancestors are left to find: below p, never p)
                    add(p)
                node = p
                continue
            for p in parents:
                if p.prim is not None and p not in seen:
                    add(p)
                    push(p)
            break
    if not ordered:
        found.sort(key=_by_index, reverse=True)
    return found


_by_index = operator.attrgetter("index")


def _probe_fresh_refs() -> int:
    """The reference count ``sys.getrefcount`` reports for a new traced value
    held by one local variable (more: something else keeps it)."""
    out = Traced(None, None, None)
    return sys.getrefcount(out)


FRESH_REFS = _probe_fresh_refs()


def connect_residuals(entries: Iterable[Entry]) -> list[Traced]:
    """Give the output twins that rules of graph-tape ``entries`` keep (see
    ``GraphTape.record``) their entries, so that a replay recorded on the
    graph tape (``create_graph``) differentiates through them. Returns the
    twins: ``disconnect_residuals`` takes their entries back once the
    replay is recorded (what it recorded keeps the entries as parents), for
    an entry whose rules keep its own twin would otherwise be a cycle."""
    twins = []
    for e in entries:
        try:
            res = e.res
        except AttributeError:
            continue
        res._node = e
        twins.append(res)
    return twins


def disconnect_residuals(twins: list[Traced]) -> None:
    """Undo ``connect_residuals`` (see there)."""
    for res in twins:
        res._node = None
