"""Tracing for ``jit``: a level that runs every primitive and writes it down.

A ``JitTrace`` sits on the level stack like a ``vmap`` level
(see ``tapegrad.core.level``): its values are ``abstract``, so the core
sends every operation on them to ``JitTrace.process``, which runs the
primitive's NumPy function on the concrete arrays *and* appends the call to
the trace's program: one ``Instr`` per primitive call, whatever
transform made it (a ``grad`` inside the traced function records its
forward and its backward pass here alike). A decision taken on a value
(``bool()``: ``if x > 0``, a ``while`` test) is appended as a
``Guard``, which the compiled program checks.

Operations on values that do not depend on the inputs never reach the trace:
they run at trace time and their results are constants of the program
(constant folding, by construction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tapegrad.batching import Aval, BatchTrace
from tapegrad.compile.facts import Guard, Instr, Var, facts_of
from tapegrad.core.level import Level
from tapegrad.core.primitive import Primitive
from tapegrad.core.traced import Traced
from tapegrad.numpy.wrap import Index

# NumPy's own functions (called with no gradient, so no primitive to declare
# ``shape_from_values`` on: keyed by the function) whose result's shape depends
# on the values of their arguments: the compiled program checks the shape it
# gets (a guard)
DATA_SHAPED = frozenset(getattr(np, name) for name in """nonzero flatnonzero argwhere unique
unique_values unique_counts unique_inverse unique_all bincount histogram histogram_bin_edges
extract compress trim_zeros setdiff1d intersect1d union1d setxor1d""".split())
PYTHON_NUMBERS = (bool, int, float, complex)
# the ufuncs behind Python's operators: on Python numbers alone, eager code
# computes a Python number (weakly typed: ``x32 * (lr * 0.5)`` stays float32)
OPERATORS = frozenset([np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide,
                       np.remainder, np.power, np.negative, np.positive, np.absolute, np.greater,
                       np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal])


class Sym(Aval):
    """What a traced value of a jit level shows of itself: the shape and dtype
    of its array (as a batched value's ``Aval``);
    ``bool()`` of it becomes a guard of the program."""

    __slots__ = ("var", "trace")
    escaped = ("tapegrad.jit: a traced value was used after its jit trace ended (it escaped through "
               "a side effect: a list, a global, an attribute); return it from the jitted function "
               "instead")

    def __init__(self, shape: tuple[int, ...], dtype: Any, var: int, trace: JitTrace) -> None:
        super().__init__(shape, dtype)
        self.var = var
        self.trace = trace

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced value")
        return self.shape[0]

    def __bool__(self) -> bool:
        return self.trace.guard(self.var)

    def __repr__(self) -> str:
        return f"v{self.var}: {np.dtype(self.dtype).name}{list(self.shape)}"


class JitTrace(Level):
    """One ``jit`` trace: while entered, a level of the stack. Its values are
    ``abstract``: their ``_value`` is a ``Sym`` (shape, dtype and Var), their
    ``_array`` the concrete array computed while tracing."""

    abstract = True
    what = "a value of a jit trace"

    def __init__(self) -> None:
        self.values: list[Any] = []  # the concrete array of each Var
        self.program: list[Instr | Guard] = []
        self.inputs: list[int] = []
        # Vars holding a Python number (an argument, Python arithmetic on arguments) -> the
        # Var of it as a 0-d array, once one is needed (None before)
        self.weak: dict[int, int | None] = {}
        self.constants: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id -> (array, its copy)

    # --- values -------------------------------------------------------------------------
    def new(self, arr: Any, weak: bool = False) -> Traced:
        """A traced value of this level whose array is ``arr`` (a new Var);
        ``weak``: ``arr`` is a Python number, and stays one."""
        n = len(self.values)
        if weak:
            self.weak[n] = None
            a = np.asarray(arr)
        else:
            a = arr = arr if hasattr(arr, "dtype") else np.asarray(arr)
        self.values.append(arr)
        out = Traced(Sym(tuple(a.shape), a.dtype, n, self), self, None)
        out._array = arr
        return out

    def input(self, x: Any) -> Traced:
        """An argument of the traced function (an array, or a Python number,
        which NumPy's promotion treats as weakly typed, as in eager code)."""
        t = self.new(x, weak=type(x) in PYTHON_NUMBERS)
        self.inputs.append(var_of(t))
        return t

    def strong(self, n: int) -> tuple[Any, Var]:
        """The Python number of weak Var ``n`` as a 0-d array (made once)."""
        m = self.weak[n]
        if m is None:
            m = self.weak[n] = len(self.values)
            self.values.append(np.asarray(self.values[n]))
            self.program.append(Instr(np.asarray, "asarray", (Var(n),), (), (m,), False))
        return self.values[m], Var(m)

    def ref(self, x: Any) -> Any:
        """``x`` as an argument of an instruction: a Var, or a constant."""
        if type(x) is Traced and x._level is self:
            return Var(var_of(x))
        return x

    def raw(self, x: Any) -> Any:
        return x._array if type(x) is Traced and x._level is self else x

    # --- what the core asks of a level ----------------------------------------------------
    def process(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run primitive ``prim`` and write the call down."""
        if not self.entered:
            raise TypeError(Sym.escaped)
        return self.call(prim.fun, prim.name, args, kwargs, prim)

    # (vmap's: apply_nondifferentiable answers metadata queries and hands the call to apply_nondiff)
    process_nondifferentiable = BatchTrace.process_nondifferentiable

    def refuse(self, x: Any, what: str) -> TypeError:
        return TypeError(
            f"tapegrad.jit: cannot convert a traced value to {what}: inside tg.jit a value "
            "computed from the arguments is not known when tracing; compute with "
            "tapegrad.numpy functions on it, return it, or make the argument it comes from "
            "static (static_argnums / static_argnames)."
        )

    def keep(self, x: Any) -> Any:
        return x  # (its array is a concrete array: nothing to strip)

    def describe(self, x: Any) -> str:
        return f"Traced({x._value!r}, level={self.level})"

    def apply_nondiff(self, fun: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """A NumPy function with no gradient (comparisons, ``argmax``...)."""
        return self.call(fun, getattr(fun, "__name__", "f"), args, kwargs)

    def call(self, fn: Callable[..., Any], name: str, args: Sequence[Any], kwargs: dict[str, Any],
             prim: Primitive | None = None) -> Any:
        """Run ``fn`` (primitive ``prim``'s function, or a NumPy function with
        no gradient: None) on the arrays of ``args`` and ``kwargs``, append the
        call to the program, and return its result as values of this trace."""
        raw: list[Any] = []
        refs: list[Any] = []
        masked = False  # an index whose traced parts set the result's shape?
        weak = self.weak
        numbers = fn in OPERATORS and not kwargs  # Python arithmetic on Python numbers?
        for i, a in enumerate(args):
            r, ref, by_mask = self.arg(a)
            if type(ref) is Var and ref.n in weak:
                if i == 0 and not isinstance(fn, np.ufunc):  # (the array a function reads)
                    r, ref = self.strong(ref.n)
                    numbers = False
            elif type(ref) not in PYTHON_NUMBERS:
                numbers = False
            raw.append(r)
            refs.append(ref)
            masked = masked or by_mask
        kw: dict[str, Any] = {}
        kw_refs = []
        for k, v in kwargs.items():
            r, ref, by_mask = self.arg(v)
            kw[k] = r
            kw_refs.append((k, ref))
            masked = masked or by_mask
        out = fn(*raw, **kw)
        if isinstance(out, tuple):  # (np.nonzero, a packed result...)
            vals = tuple(self.new(o) for o in out)
            outs = tuple(var_of(v) for v in vals)
            self.program.append(Instr(fn, name, tuple(refs), tuple(kw_refs), outs, True, prim))
        else:
            vals = (self.new(out),)
            outs = (var_of(vals[0]),)
            self.program.append(Instr(fn, name, tuple(refs), tuple(kw_refs), outs, False, prim))
        facts = facts_of(prim)
        if facts.shape_from_values or masked and facts.shape_from_index or prim is None and fn in DATA_SHAPED:
            # a shape that depends on values: the program checks it is the traced one
            for n in outs:
                self.check_shape(n)
        if isinstance(out, tuple):
            return vals
        if numbers and np.ndim(out) == 0:  # as eager: a Python number
            val = self.new(python_number(out), weak=True)
            self.program.append(Instr(python_number, "python_number", (Var(outs[0]),), (),
                                      (var_of(val),), False))
            return val
        return vals[0]

    def arg(self, a: Any) -> tuple[Any, Any, bool]:
        """``(value to call with, its reference in the program, is it an index
        whose traced parts set the shape of what it selects)`` for an argument
        of a call. A container or an
        ``Index`` holding values of this trace is rebuilt by an
        instruction of its own (the program then reads it as one value)."""
        t = type(a)
        if t is Traced:
            if a._level is self:
                return a._array, Var(var_of(a)), False
            return a, a, False
        if t is Index:
            if not any(self.holds(k) for k in a.key):
                return a, a, False
            leaves: list[Traced] = []
            key = _template(a.key, leaves, self)
            # a boolean mask, or a slice's bound, sets the shape of what the index selects
            shaping = any(leaf.dtype == bool for leaf in leaves) or any(
                type(k) is slice and self.holds(k) for k in a.key)
            return self.pack(make_index, "index", key, leaves) + (shaping,)
        if (t is tuple or t is list or t is dict) and self.holds(a):
            leaves = []
            template = _template(a, leaves, self)
            return self.pack(fill, "pack", template, leaves) + (False,)
        if t is np.ndarray:
            return a, self.constant(a), False
        return a, a, False

    def constant(self, a: np.ndarray) -> np.ndarray:
        """The program's copy of array ``a`` (read-only), taken when traced: as
        in JAX, the program computes with the values its constants had then
        (an array ``f`` closes over and the caller changes later does not
        change it, nor what was computed from it at trace time)."""
        key = id(a)
        held = self.constants.get(key)
        if held is None:
            copy = a.copy()
            copy.flags.writeable = False
            held = self.constants[key] = (a, copy)  # (a is kept: its id stays its own)
        return held[1]

    def holds(self, x: Any) -> bool:
        """Does ``x`` (a value, a tuple, list or dict) hold a value of this trace?"""
        t = type(x)
        if t is Traced:
            return x._level is self
        if t is tuple or t is list:
            return any(self.holds(v) for v in x)
        if t is dict:
            return any(self.holds(v) for v in x.values())
        if t is slice:
            return self.holds(x.start) or self.holds(x.stop) or self.holds(x.step)
        return False

    def pack(self, fn: Callable[..., Any], name: str, template: Any, leaves: list[Traced]) -> tuple[Any, Var]:
        """``fn(template, *leaves)`` as an instruction: its value, and its Var."""
        concrete = fn(template, *[leaf._array for leaf in leaves])
        n = len(self.values)
        self.values.append(concrete)
        args = (template, *[Var(var_of(leaf)) for leaf in leaves])
        self.program.append(Instr(fn, name, args, (), (n,), False))
        return concrete, Var(n)

    def check_shape(self, n: int) -> None:
        """Guard: ``v<n>`` has the shape it has now."""
        shape = tuple(self.values[n].shape)
        m = len(self.values)
        self.values.append(True)
        self.program.append(Instr(shape_is, "shape_is", (Var(n), shape), (), (m,), False))
        self.program.append(Guard(m, True))

    def guard(self, var: int) -> bool:
        truth = bool(self.values[var])
        self.program.append(Guard(var, truth))
        return truth


class Slot(NamedTuple):
    """Where the ``i``-th traced value goes in a rebuilt container (see ``fill``)."""

    i: int


def _template(x: Any, leaves: list[Traced], trace: JitTrace) -> Any:
    """``x`` with each value of ``trace`` replaced by a ``Slot`` (collected in ``leaves``)."""
    t = type(x)
    if t is Traced and x._level is trace:
        leaves.append(x)
        return Slot(len(leaves) - 1)
    if t is tuple or t is list:
        return t(_template(v, leaves, trace) for v in x)
    if t is dict:
        return {k: _template(v, leaves, trace) for k, v in x.items()}
    if t is slice:
        return slice(_template(x.start, leaves, trace), _template(x.stop, leaves, trace),
                     _template(x.step, leaves, trace))
    return x


def fill(template: Any, *leaves: Any) -> Any:
    """``template`` with each ``Slot`` replaced by its value (a container's rebuild)."""
    t = type(template)
    if t is Slot:
        return leaves[template.i]
    if t is tuple or t is list:
        return t(fill(v, *leaves) for v in template)
    if t is dict:
        return {k: fill(v, *leaves) for k, v in template.items()}
    if t is slice:
        return slice(fill(template.start, *leaves), fill(template.stop, *leaves), fill(template.step, *leaves))
    return template


def make_index(key: tuple[Any, ...], *leaves: Any) -> Index:
    """The ``Index`` of ``key`` with its traced parts filled in (normalised
    again on the values of this call: whether an integer index repeats is
    read from them)."""
    return Index(fill(key, *leaves), len(key))


def python_number(x: Any) -> Any:
    """A NumPy scalar (or 0-d array) as the Python number it holds."""
    return x.item()


def shape_is(x: Any, shape: tuple[int, ...]) -> bool:
    return tuple(x.shape) == shape


def var_of(x: Traced) -> int:
    """The Var number of a traced value of a jit level."""
    sym: Sym = x._value
    return sym.var


def is_jit_value(x: Any) -> bool:
    return type(x) is Traced and type(x._level) is JitTrace
