"""Tracing for ``jit``: a level that runs every primitive and writes it down.

A :class:`JitTrace` sits on the tapes' level stack like a ``vmap`` level
(see :mod:`tapegrad.batching`): its values are ``Traced``, so the engine
sends every operation on them to :meth:`JitTrace.apply`, which runs the
primitive's NumPy function on the concrete arrays *and* appends the call to
the trace's program: one :class:`Instr` per primitive call, whatever
transform made it (a ``grad`` inside the traced function records its
forward and its backward pass here alike). A decision taken on a value
(``bool()``: ``if x > 0``, a ``while`` test) is appended as a
:class:`Guard`, which the compiled program checks.

Operations on values that do not depend on the inputs never reach the trace:
they run at trace time and their results are constants of the program
(constant folding, by construction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad import tape as _tape
from tapegrad.tracer import Traced


class Var(NamedTuple):
    """A value of the program: ``n`` is its number (``v<n>`` in the source)."""

    n: int


class Instr(NamedTuple):
    """``outs = fn(*args, **kwargs)``; arguments are :class:`Var` or constants."""

    fn: Callable[..., Any]
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    outs: tuple[int, ...]  # one, or several for a function returning a tuple
    multi: bool  # does fn return a tuple (unpacked into outs)?


class Guard(NamedTuple):
    """The program goes on only if ``bool(v<var>)`` is ``truth``, as when traced."""

    var: int
    truth: bool


class Sym:
    """What a traced value of a jit level shows of itself: the shape and dtype
    of its array; ``bool()`` of it becomes a guard of the program."""

    __slots__ = ("shape", "dtype", "var", "trace")

    def __init__(self, shape: tuple[int, ...], dtype: Any, var: int, trace: JitTrace) -> None:
        self.shape = shape
        self.dtype = dtype
        self.var = var
        self.trace = trace

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced value")
        return self.shape[0]

    def __bool__(self) -> bool:
        return self.trace.guard(self.var)

    def __repr__(self) -> str:
        return f"v{self.var}: {np.dtype(self.dtype).name}{list(self.shape)}"


class JitTrace:
    """One ``jit`` trace: while entered, a level of the tapes' stack."""

    applies = True  # runs primitives itself (see tapegrad.primitive._apply)
    batching = False

    def __init__(self) -> None:
        self.active = False
        self.level = -1
        self.values: list[Any] = []  # the concrete array of each Var
        self.program: list[Instr | Guard] = []
        self.inputs: list[int] = []

    def __enter__(self) -> JitTrace:
        tapes = _tape._stack.tapes
        self.level = len(tapes) + 1
        tapes.append(self)  # type: ignore[arg-type]
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        tapes = _tape._stack.tapes
        if tapes and tapes[-1] is self:
            tapes.pop()
        else:
            tapes.remove(self)  # type: ignore[arg-type]
        self.active = False

    # --- values -------------------------------------------------------------------------
    def new(self, arr: Any) -> Traced:
        """A traced value of this level whose array is ``arr`` (a new Var)."""
        if not hasattr(arr, "dtype"):
            arr = np.asarray(arr)
        n = len(self.values)
        self.values.append(arr)
        return Traced(Traced(Sym(tuple(arr.shape), arr.dtype, n, self), self, arr), self, arr)

    def input(self, arr: Any) -> Traced:
        t = self.new(arr)
        self.inputs.append(var_of(t))
        return t

    def ref(self, x: Any) -> Any:
        """``x`` as an argument of an instruction: a Var, or a constant."""
        if type(x) is Traced and x._tape is self:
            return Var(var_of(x))
        return x

    def raw(self, x: Any) -> Any:
        return x._node if type(x) is Traced and x._tape is self else x

    # --- what the engine calls ------------------------------------------------------------
    def apply(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run primitive ``prim`` and write the call down (the engine's entry)."""
        return self.call(prim.fun, prim.name, args, kwargs)

    def apply_nondiff(self, fun: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """A NumPy function with no gradient (comparisons, ``argmax``...)."""
        return self.call(fun, getattr(fun, "__name__", "f"), args, kwargs)

    def call(self, fn: Callable[..., Any], name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        raw = [self.raw(a) for a in args]
        kw = {k: self.raw(v) for k, v in kwargs.items()}
        out = fn(*raw, **kw)
        refs = tuple(self.ref(a) for a in args)
        kw_refs = tuple((k, self.ref(v)) for k, v in kwargs.items())
        if isinstance(out, tuple):  # (np.nonzero, a packed result...)
            vals = tuple(self.new(o) for o in out)
            self.program.append(Instr(fn, name, refs, kw_refs, tuple(var_of(v) for v in vals), True))
            return vals
        val = self.new(out)
        self.program.append(Instr(fn, name, refs, kw_refs, (var_of(val),), False))
        return val

    def guard(self, var: int) -> bool:
        truth = bool(self.values[var])
        self.program.append(Guard(var, truth))
        return truth


def var_of(x: Traced) -> int:
    """The Var number of a traced value of a jit level."""
    sym: Sym = x._value._value
    return sym.var


def is_jit_value(x: Any) -> bool:
    return type(x) is Traced and type(x._tape) is JitTrace
