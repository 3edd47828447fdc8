"""What ``checkpoint(fun, policy=...)`` saves: ``checkpoint_name`` and the saving level.

Without a policy a checkpointed function keeps only its inputs and runs
again, whole, in the backward pass. A policy (``tg.checkpoint_policies``)
names primitive calls whose outputs are kept instead: the forward pass runs
``fun`` on values of a ``_Saving`` level, which logs every primitive call in
order and keeps the outputs the policy accepts; the backward pass runs
``fun`` again on a fresh ``_Saving`` level under a replay tape, and the k-th
primitive call there, when its output was kept, returns it without
computing (``fun`` is pure, so the k-th call is the same one). A value named
with ``checkpoint_name`` and kept also keeps the output it names: the call
that produced it does not run again either.

The replay tape pauses the log while it builds an entry (a rule maker may
compute with primitives: those calls are not ``fun``'s); a call that does not
match the log (``fun`` took another path) ends the substitution, and the rest
is computed as without a policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.batching import defbatch
from tapegrad.compile.facts import defjit
from tapegrad.core.level import Level
from tapegrad.core.primitive import defjvp, defvjp, primitive
from tapegrad.core.tape import Tape
from tapegrad.core.traced import Traced, value
from tapegrad.pytree import tree_map


def _named(x: Any, name: str) -> Any:
    return x


named = primitive(_named, "checkpoint_name", batched=True)
defvjp(named, lambda ans, x, name: lambda g: g)
defjvp(named, lambda ans, x, name: lambda t: t)
defbatch(named, lambda args, batched, size, name: named(args[0], name=name))
defjit(named, fresh_out=False)
_NAMED = getattr(named, "primitive")  # noqa: B009  (the Primitive record)


def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` (an array or a pytree of arrays), named ``name`` for the policies of
    ``tg.checkpoint`` (``save_only_these_names``, ``save_any_names_but_these``);
    the identity everywhere else.

    Examples:
        >>> policy = tg.checkpoint_policies.save_only_these_names("hidden")
        >>> @functools.partial(tg.checkpoint, policy=policy)
        ... def layer(w, x):
        ...     h = tg.checkpoint_name(tnp.tanh(x @ w), "hidden")   # kept, not recomputed
        ...     return tnp.sum(h ** 2)
        >>> tg.grad(layer)(np.eye(2), np.ones((1, 2))).round(4)
        array([[0.6397, 0.6397],
               [0.6397, 0.6397]])
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: the name must be a str, got {type(name).__name__}")
    return tree_map(lambda v: named(v, name=name), x)


class _Saving(Level):
    """The level a checkpointed function with a policy runs on (see the module's
    docstring): ``log`` holds, per primitive call of ``fun`` in order, its name
    and its kept output (None: not kept)."""

    abstract = True
    what = "a value of a checkpointed function"

    def __init__(self, policy: Callable[..., Any], log: list[list[Any]] | None = None) -> None:
        self.policy = policy
        self.replay = log is not None
        self.log: list[list[Any]] = [] if log is None else log
        self.k = 0  # the next call's position in the log
        self.paused = 0  # >0 while a replay tape builds an entry
        self.done = False  # after fun: every call computes

    def box(self, x: Any, k: int = -1) -> Any:
        if isinstance(x, (tuple, list)):
            return type(x)(self.box(v) for v in x)
        if not hasattr(x, "shape"):
            return x
        out = Traced(x, self, k)  # (_node: the call that made it, -1 for none)
        out._array = x
        return out

    def unbox(self, x: Any) -> Any:
        return x._array if type(x) is Traced and x._level is self else x

    def process(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        raw = [self.unbox(a) for a in args]
        if self.paused or self.done:
            return self.box(prim.wrapped(*raw, **kwargs))
        k = self.k
        self.k += 1
        if not self.replay:
            ans = prim.wrapped(*raw, **kwargs)
            keep = bool(self.policy(prim, *raw, **kwargs))
            self.log.append([prim.name, ans if keep else None])
            if keep and prim is _NAMED:  # the named value's producer need not run again
                src = args[0]
                if type(src) is Traced and src._level is self and src._node >= 0:
                    self.log[src._node][1] = raw[0]
            return self.box(ans, k)
        if k < len(self.log) and self.log[k][0] == prim.name:
            kept = self.log[k][1]
            if kept is not None:
                return self.box(kept)
        else:  # out of step with the forward pass: compute everything from here
            self.done = True
        return self.box(prim.wrapped(*raw, **kwargs))

    def process_nondifferentiable(self, fun: Callable[..., Any], again: Callable[..., Any],
                                  args: list[Any], kwargs: dict[str, Any]) -> Any:
        return again(*[self.unbox(a) for a in args], **kwargs)

    def keep(self, x: Any) -> Any:
        return value(x._array)

    def describe(self, x: Any) -> str:
        return f"Traced({x._array!r}, level={self.level}, checkpointed)"


class _ReplayTape(Tape):
    """The backward pass's tape of a checkpointed function with a policy: its
    entries' rule makers do not count as calls of the function."""

    def __init__(self, saving: _Saving) -> None:
        super().__init__(persistent=False)
        self._saving = saving

    def record(self, *args: Any, **kwargs: Any) -> Traced:
        self._saving.paused += 1
        try:
            return super().record(*args, **kwargs)
        finally:
            self._saving.paused -= 1


def _boxable(x: Any) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and getattr(dt, "kind", "") in "fc"


def saving_forward(fun: Callable[..., Any], raw: list[Any], policy: Callable[..., Any]) -> tuple[Any, list[Any]]:
    """``fun(*raw)`` with the outputs ``policy`` accepts kept: ``(out, log)``."""
    sv = _Saving(policy)
    with sv:
        out = fun(*[sv.box(x) if _boxable(x) else x for x in raw])
        out = tree_map(sv.unbox, out)
    return out, sv.log


def saving_vjp(fun: Callable[..., Any], raw: list[Any], log: list[Any], g: Any) -> list[Any]:
    """The cotangents of ``raw`` for cotangent ``g`` of ``fun(*raw)`` (one flat
    array), running ``fun`` again with the outputs kept in ``log``."""
    sv = _Saving(lambda *a, **k: False, log)
    with sv:
        boxed = [sv.box(x) if _boxable(x) else x for x in raw]
        with _ReplayTape(sv) as tape:
            xs = [tape._watch_leaf(b) if type(b) is Traced else b for b in boxed]
            out = fun(*xs)
        sv.done = True
        watched = [x for x in xs if type(x) is Traced]
        got = iter(tape.gradient(out, watched, output_gradients=g) if watched else ())
        nb = g.ndim - getattr(out, "ndim", 0)
        cts = [next(got) if type(x) is Traced else np.zeros(tuple(g.shape[:nb]) + tuple(np.shape(x)))
               for x in xs]
        return [sv.unbox(c) for c in cts]
