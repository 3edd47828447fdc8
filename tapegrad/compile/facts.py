"""What ``tg.jit`` knows of each primitive, and the words of a traced program.

A traced program is a list of ``Instr`` (one primitive or NumPy call) and
``Guard`` (a decision taken on a value). Each ``Instr`` keeps the
``Primitive`` it ran (None for a NumPy function with no gradient, and for
the instructions jit's passes write themselves), and the passes read what
they need to know of it from ``JIT_FACTS``, keyed by that primitive:

- ``rewrite``: an algebraic rewrite of one call of it (see
  ``tapegrad.compile.rewrites``);
- ``fresh_out``: its function takes ``out=`` and otherwise returns a new
  array of its own, as a ufunc does (the compiled program may hand it one of
  its buffers);
- ``shape_from_values``: the shape of its result depends on the values of
  its arguments (the compiled program checks it: a guard);
- ``shape_from_index``: a boolean mask or a traced slice bound in its
  ``Index`` argument sets the shape of its result (checked as above).

A primitive declares them with ``defjit`` next to its definition, as it
declares its VJP with ``defvjp``. This module imports nothing of
``tapegrad.numpy`` nor of jit's other modules, so that a module defining
primitives can import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from tapegrad.core.primitive import Primitive


class Var(NamedTuple):
    """A value of the program: ``n`` is its number (``v<n>`` in the source)."""

    n: int


class Instr(NamedTuple):
    """``outs = fn(*args, **kwargs)``; arguments are ``Var`` or constants.
    ``prim``: the primitive whose function ``fn`` is (None for a NumPy
    function with no gradient and for what the passes write)."""

    fn: Callable[..., Any]
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    outs: tuple[int, ...]  # one, or several for a function returning a tuple
    multi: bool  # does fn return a tuple (unpacked into outs)?
    prim: Primitive | None = None


class Guard(NamedTuple):
    """The program goes on only if ``bool(v<var>)`` is ``truth``, as when traced."""

    var: int
    truth: bool


# ``rule(rewriter, ins)``: the Var holding the value of ``ins`` computed another way, or None
# (``ins`` kept as is); the rewriter is ``tapegrad.compile.rewrites.Rewriter``
Rewrite = Callable[[Any, Instr], "Var | None"]


@dataclass(frozen=True)
class JitFacts:
    """What jit knows of one primitive (see the module's docstring)."""

    rewrite: Rewrite | None = None
    fresh_out: bool = False
    shape_from_values: bool = False
    shape_from_index: bool = False


NO_FACTS = JitFacts()
JIT_FACTS: dict[Primitive, JitFacts] = {}


def facts_of(prim: Primitive | None) -> JitFacts:
    """The facts declared for ``prim`` (none declared, or no primitive: ``NO_FACTS``)."""
    return NO_FACTS if prim is None else JIT_FACTS.get(prim, NO_FACTS)


def defjit(prim_fn: Callable[..., Any], *, rewrite: Rewrite | None = None, fresh_out: bool | None = None,
           shape_from_values: bool | None = None, shape_from_index: bool | None = None) -> None:
    """Declare what ``tg.jit`` may assume of primitive ``prim_fn`` (a
    function made by ``tg.primitive``); a fact left out keeps what an earlier
    ``defjit`` said (none by default).

    Args:
        rewrite: ``rule(rewriter, ins)`` returning the Var that holds the value
            of instruction ``ins`` computed another way, or None to keep it.
        fresh_out: its function takes ``out=`` and otherwise returns a new
            array (jit's compiled program may pass one of its buffers).
        shape_from_values: its result's shape depends on its arguments'
            values (the compiled program checks the traced shape, and a call
            where it differs is traced again).
        shape_from_index: a boolean mask or a traced slice bound in its
            ``Index`` argument sets its result's shape (checked as above).

    Raises:
        TypeError: ``prim_fn`` is not a tapegrad primitive.

    Examples:
        >>> positive = tg.primitive(lambda x: x[x > 0])
        >>> defjit(positive, shape_from_values=True)
    """
    prim = getattr(prim_fn, "primitive", None)
    if not isinstance(prim, Primitive):
        raise TypeError(f"defjit: {prim_fn!r} is not a tapegrad primitive; wrap it with tg.primitive")
    given = {k: v for k, v in (("rewrite", rewrite), ("fresh_out", fresh_out),
                               ("shape_from_values", shape_from_values),
                               ("shape_from_index", shape_from_index)) if v is not None}
    JIT_FACTS[prim] = replace(JIT_FACTS.get(prim, NO_FACTS), **given)
