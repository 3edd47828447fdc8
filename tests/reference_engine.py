"""A reference engine: a plain, readable interpreter of the tape.

The real engine (``tapegrad.core.tape``, ``tapegrad.core.primitive``) is fast because
of tricks: unrolled record paths for one and two operands, a cache of rules
for Python-float operands, a cotangent carried down chains, in-place
accumulation into buffers the walk owns, residuals overwritten in place
(``consumable``), and unbroadcasting (``_fit``) only when shapes or dtypes
differ. This module does none of that, so that the tests can check the fast
engine against something that does not share its shortcuts.

How it records. ``RecordingTape`` is a ``tg.Tape`` whose ``record`` (the one
method every traced primitive call ends in, whatever fast path it came by)
writes down a ``Step`` for each op: the primitive, the unboxed arguments,
the keywords, the output and the indices of the parent nodes, and makes the
op's rules afresh, one per traced argument, with the primitive's public
maker (``prim.vjp_maker(argnum)(ans, *args, **kwargs)``). The rules the tape
itself made (maybe cached, maybe unrolled) are never used.

How it differentiates (``reverse``): a dict of cotangents keyed by node
index; the steps visited by descending index; each rule called on a *copy*
of the cotangent; each contribution summed back to its parent's shape by
naive sums over the broadcast axes, cast to the parent's dtype, and added
out of place. No carry, no ownership, nothing freed, nothing overwritten.

Forward mode (``forward``) needs no rule of its own: each step's Jacobian is
read off its VJP rules with unit cotangents (JAX's convention: a VJP is the
transpose under the real pairing ``Re(sum(u * v))``, complex included) and
applied to the incoming tangents.

Higher order: the reverse interpreter calls rules written in
``tapegrad.numpy``; run inside an outer ``RecordingTape`` (arguments traced
on it), the backward pass is itself recorded there, so the reference
differentiates its own gradients (``reference_grad`` composes).

What it relies on in the engine: ``Tape.record``'s signature (overridden
here), the primitive's ``fun``, ``name`` and ``vjp_maker``, and the two
adapters below (``_entry``, ``_unbox``): a traced value's tape entry (for
its index, shape, dtype) and its value one level down. Not the entries'
own rules, nor anything of the reverse walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced

# --- the two adapters to the engine's internals ------------------------------------


def _entry(t: Any) -> Any:
    """The tape entry (``.index``, ``.shape``, ``.dtype``) of traced value ``t``."""
    return t._node


def _unbox(t: Any, tape: Any) -> Any:
    """``t`` seen from outside ``tape``: its value one level down if it is
    traced on ``tape``, else ``t`` itself (a constant of this tape)."""
    return t._value if type(t) is Traced and t._level is tape else t


# --- recording -------------------------------------------------------------------------


class Step(NamedTuple):
    """One recorded op: what the reference needs to replay it both ways."""

    node: int  # node index of the output (a topological order)
    prim: Any  # the primitive (``.name``, ``.fun``, ``.vjp_maker``)
    args: tuple[Any, ...]  # all arguments, unboxed one level
    kwargs: dict[str, Any]
    argnums: tuple[int, ...]  # which arguments are traced on this tape
    parents: tuple[int, ...]  # their node indices, in the same order
    rules: tuple[Callable[[Any], Any], ...]  # one VJP rule per parent, made here
    ans: Any  # the output, as the primitive computed it


class RecordingTape(tg.Tape):
    """A persistent ``tg.Tape`` that also keeps the reference's own record of
    every op (``steps``) and the shape and dtype of every node (``avals``)."""

    def __init__(self) -> None:
        super().__init__(persistent=True)
        self.steps: list[Step] = []
        self.avals: dict[int, tuple[tuple[int, ...], np.dtype]] = {}

    def record(self, prim: Any, ans: Any, args: Sequence[Any], raw: Sequence[Any], kwargs: dict[str, Any],
               argnums: Sequence[int], vjps: Any = None) -> Traced:
        """Record as the real tape does (to get a traced output), then write
        down the step with rules made afresh from the primitive's makers."""
        out = super().record(prim, ans, args, raw, kwargs, argnums, vjps)
        raw, kwargs, argnums = tuple(raw), dict(kwargs), tuple(argnums)
        rules = tuple(prim.vjp_maker(i)(ans, *raw, **kwargs) for i in argnums)
        parents = tuple(_entry(args[i]).index for i in argnums)
        index = _entry(out).index
        self.avals[index] = (tuple(np.shape(ans)), np.result_type(ans))
        self.steps.append(Step(index, prim, raw, kwargs, argnums, parents, rules, ans))
        return out

    def input(self, x: Any) -> Traced:
        """Watch one array ``x`` (or a value of an outer tape) and note its node."""
        t = self.watch(x)
        e = _entry(t)
        self.avals[e.index] = (tuple(e.shape), np.dtype(e.dtype))
        return t


def trace(f: Callable[..., Any], args: Sequence[Any]) -> tuple[RecordingTape, list[Traced], Any]:
    """Run ``f`` on ``args`` watched on a new ``RecordingTape``; return the
    tape, the traced inputs and ``f``'s output (a pytree, possibly traced)."""
    with RecordingTape() as tape:
        xs = [tape.input(a) for a in args]
        out = f(*xs)
    return tape, xs, out


def replayed_values_agree(tape: RecordingTape) -> list[str]:
    """Re-run every step's plain function on its recorded arguments; return
    the names of the steps whose output differs from the recorded one (a
    fast path that evaluated something else). Empty when all agree."""
    bad = []
    for s in tape.steps:
        if any(type(a) is Traced for a in s.args):
            continue  # (a nested step: its arguments are values of an outer tape)
        again = s.prim.fun(*s.args, **s.kwargs)
        if not np.array_equal(again, s.ans, equal_nan=np.result_type(s.ans).kind in "fc"):
            bad.append(s.prim.name)
    return bad


# --- the reverse interpreter --------------------------------------------------------------


def unbroadcast(c: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``c`` down to ``shape``: first the leading axes broadcasting added,
    then each axis where ``shape`` has 1 and ``c`` has more, one at a time."""
    if not hasattr(c, "shape"):
        c = np.asarray(c)
    while c.ndim > len(shape):
        c = tnp.sum(c, axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and c.shape[axis] != 1:
            c = tnp.sum(c, axis=axis, keepdims=True)
    if tuple(c.shape) != tuple(shape):
        raise ValueError(f"reference: a rule returned shape {c.shape} for a parent of shape {shape}")
    return c


def cast(c: Any, dtype: Any) -> Any:
    """``c`` in ``dtype``: the real part first when a complex cotangent
    reaches a real node."""
    dtype = np.dtype(dtype)
    if c.dtype == dtype:
        return c
    if c.dtype.kind == "c" and dtype.kind != "c":
        c = tnp.real(c)
    return c.astype(dtype)


def _copy(g: Any) -> Any:
    """A private copy of a plain cotangent (a traced one is never written to)."""
    return g if type(g) is Traced else np.array(g, copy=True)


def reverse(tape: RecordingTape, seeds: dict[int, Any]) -> dict[int, Any]:
    """Push ``seeds`` (node index -> cotangent) back through ``tape``'s steps;
    return the cotangent of every node reached (the inputs' included)."""
    ct = dict(seeds)
    for s in sorted(tape.steps, key=lambda s: s.node, reverse=True):
        if s.node not in ct:
            continue  # nothing flows back through this step
        g = ct[s.node]
        for parent, rule in zip(s.parents, s.rules):
            shape, dtype = tape.avals[parent]
            c = cast(unbroadcast(rule(_copy(g)), shape), dtype)
            ct[parent] = ct[parent] + c if parent in ct else c
    return ct


def _seed_cotangents(tape: RecordingTape, out: Any, cotangent: Any) -> dict[int, Any]:
    leaves, tdef = tg.tree_flatten(out)
    cts, ctdef = tg.tree_flatten(cotangent)
    if tdef != ctdef:
        raise TypeError(f"reference: cotangent structure {ctdef} does not match the output's {tdef}")
    seeds: dict[int, Any] = {}
    for o, u in zip(leaves, cts):
        if type(o) is Traced and o._level is tape:
            i = _entry(o).index
            seeds[i] = seeds[i] + u if i in seeds else u
    return seeds


def _input_cotangents(tape: RecordingTape, xs: list[Traced], ct: dict[int, Any]) -> tuple[Any, ...]:
    out = []
    for x in xs:
        i = _entry(x).index
        shape, dtype = tape.avals[i]
        out.append(ct[i] if i in ct else np.zeros(shape, dtype))
    return tuple(out)


def output_value(tape: RecordingTape, out: Any) -> Any:
    """The output pytree ``out`` of a trace on ``tape``, unboxed one level."""
    return tg.tree_map(lambda o: _unbox(o, tape), out)


def pullback(tape: RecordingTape, xs: list[Traced], out: Any, cotangent: Any) -> tuple[Any, ...]:
    """The cotangents of the inputs ``xs`` of a trace (see ``trace``) for
    the output cotangent ``cotangent`` (a pytree like ``out``)."""
    return _input_cotangents(tape, xs, reverse(tape, _seed_cotangents(tape, out, cotangent)))


def reference_vjp(f: Callable[..., Any], args: Sequence[Any], cotangent: Any) -> tuple[Any, tuple[Any, ...]]:
    """``f``'s output (unboxed) and the cotangents of all of ``args`` for the
    output cotangent ``cotangent`` (a pytree like the output)."""
    tape, xs, out = trace(f, args)
    return output_value(tape, out), pullback(tape, xs, out, cotangent)


def reference_grad(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    """The gradient of scalar ``f`` with respect to all its arguments, by the
    reference interpreter. Composes with itself: called on values traced on
    an outer ``RecordingTape``, its backward pass is recorded there."""

    def grad_f(*args: Any) -> tuple[Any, ...]:
        tape, xs, out = trace(f, args)
        seeds = {}
        if type(out) is Traced and out._level is tape:
            seeds[_entry(out).index] = np.ones(out.shape, out.dtype)
        return _input_cotangents(tape, xs, reverse(tape, seeds))

    return grad_f


# --- the forward interpreter --------------------------------------------------------------


def _pair(u: Any, v: Any) -> float:
    """The real pairing ``Re(sum(u * v))`` under which VJPs are transposes."""
    return float(np.real(np.sum(np.asarray(u) * np.asarray(v))))


def _unit(shape: tuple[int, ...], dtype: Any, k: tuple[int, ...], v: complex) -> np.ndarray:
    """A new cotangent, ``v`` at ``k`` and 0 elsewhere (a new array per rule
    call: a rule may remember its last cotangent by identity, as solve's
    rules share one solve between its two operands)."""
    e = np.zeros(shape, dtype)
    e[k] = v
    return e


def forward(tape: RecordingTape, tangents: dict[int, Any]) -> dict[int, Any]:
    """Push ``tangents`` (input node index -> tangent) forward through
    ``tape``'s steps by ascending index; return every node's tangent.

    Each output element ``k`` of a step gets ``sum_p <V_p(e_k), t_p>`` as its
    real part and ``-sum_p <V_p(i e_k), t_p>`` as its imaginary part, where
    ``V_p`` is the rule for parent ``p`` and ``e_k`` the unit cotangent."""
    tan = dict(tangents)
    for s in sorted(tape.steps, key=lambda s: s.node):
        shape, dtype = tape.avals[s.node]
        out = np.zeros(shape, dtype)
        for parent, rule in zip(s.parents, s.rules):
            if parent not in tan:
                continue
            t = tan[parent]
            pshape, pdtype = tape.avals[parent]
            for k in np.ndindex(*shape):
                out[k] += _pair(cast(unbroadcast(rule(_unit(shape, dtype, k, 1)), pshape), pdtype), t)
                if dtype.kind == "c":
                    out[k] -= 1j * _pair(cast(unbroadcast(rule(_unit(shape, dtype, k, 1j)), pshape), pdtype), t)
        tan[s.node] = out
    return tan


def reference_jvp(f: Callable[..., Any], args: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``f``'s output and its tangent (pytrees) for input ``tangents``, by the
    forward interpreter (small inputs: one rule call per output element)."""
    tape, xs, out = trace(f, args)
    tan = forward(tape, {_entry(x).index: t for x, t in zip(xs, tangents)})

    def tangent_of(o: Any) -> Any:
        if type(o) is Traced and o._level is tape:
            i = _entry(o).index
            shape, dtype = tape.avals[i]
            return tan.get(i, np.zeros(shape, dtype))
        return np.zeros(np.shape(o), np.result_type(o))

    return output_value(tape, out), tg.tree_map(tangent_of, out)
