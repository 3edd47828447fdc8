"""Levels: the one abstraction of the core.

Every transform is a *level* on one per-thread stack: the reverse-mode tapes,
the forward trace, a mapping over a batch, a compiler's trace, a graph tape
kept by its values. A traced value (``tapegrad.core.traced.Traced``) belongs to exactly one
level; an operation on values of several levels is processed by the highest
of them, which sees the values of lower levels as constants (they are
processed again, one level down, when it computes).

The core knows this interface and nothing of the levels built on it:

- ``process(prim, args, kwargs)``: run primitive ``prim`` on ``args`` (some
  of them values of this level) and return the result as a value of this
  level. A primitive called on traced values ends here (the tapes' one- and
  two-operand fast paths are ``Tape.process`` unrolled: see
  ``tapegrad.core.primitive``).
- ``refuse(x, what)``: the error for converting ``x``, a value of this level,
  to ``what`` (``float(x)``, ``np.asarray(x)``...), in this level's words.
- ``keep(x)``: what ``tapegrad.value`` makes of ``x`` (only for a level
  whose values are ``abstract``: a tape's values give their primal).
- ``describe(x)``: ``repr`` of ``x``.

Two class attributes make the checks of the per-operation paths cheap:

- ``active``: the level records through the tapes' fast path now (a tape
  that is recording). A level that processes primitives in its own way
  (an ``abstract`` one) is never active; a tape that is not recording (closed,
  or replaying its own entries) is not either, and its values then read as
  their primal: constants.
- ``abstract``: a value of this level holds an *abstract value* in its
  ``_value`` (its shape and dtype: what ``x.shape`` reports) and the level's
  own payload beside it, not a primal array; the level computes with the
  payload. False for tapes, whose values' ``_value`` is the primal (a plain
  array or a value of a lower level).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from typing_extensions import Self

# what ``np.asarray(x)`` of a traced value is refused as
ARRAY = "a plain NumPy array (np.asarray, np.array)"
CONVERSION_HINT = (
    "use tg.value(x) to read its value without gradient tracking "
    "(gradients are never dropped silently)"
)


class _Stack(threading.local):
    def __init__(self) -> None:
        self.levels: list[Level] = []


_stack = _Stack()


def entered() -> list[Level]:
    """The levels entered in this thread, lowest first (do not modify)."""
    return _stack.levels


class Level:
    """A transform's place on the level stack (see the module's docstring).

    Entering a level (``with level:``) pushes it; its ``level`` is its height
    on the stack, from 1 (a level never entered keeps its own: the base
    levels below every entered one use 0). ``entered`` says whether it is on
    the stack now.
    """

    active = False
    abstract = False
    level = -1
    entered = False
    what = "a traced value"  # (what its values are called in errors)

    def push(self) -> None:
        # (Tape._open and Tape._close spell push and pop out: keep them alike)
        levels = _stack.levels
        self.level = len(levels) + 1
        levels.append(self)
        self.entered = True

    def pop(self) -> None:
        levels = _stack.levels
        if levels and levels[-1] is self:
            levels.pop()
        else:  # closed out of order: remove it wherever it is
            levels.remove(self)
        self.entered = False

    def __enter__(self) -> Self:
        self.push()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.pop()

    # --- what the core asks of a level ---------------------------------------------------
    def process(self, prim: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """Run primitive ``prim`` on ``args`` (some of them values of this
        level); return the result as a value of this level."""
        raise NotImplementedError(f"{type(self).__name__} does not process primitives")

    def refuse(self, x: Any, what: str) -> TypeError:
        """The error for converting ``x`` (a value of this level) to ``what``.

        By default, the words of the level below ``x``'s primal (a value
        traced on a tape over a value of an abstract level is refused in that
        level's words), else tapegrad's own."""
        inner = x._value
        if type(inner) is type(x) and not self.abstract:  # (a lower level's traced value: this module is below Traced's)
            return inner._level.refuse(inner, what)
        if what == ARRAY:
            return TypeError(
                "tapegrad: cannot convert a traced value to a plain NumPy array "
                "(np.asarray, np.array, or assigning it into a NumPy array): "
                f"{CONVERSION_HINT}; build arrays from traced values with "
                "tnp.stack, tnp.concatenate or tnp.where instead.")
        return TypeError(f"tapegrad: cannot convert a traced value to {what}: {CONVERSION_HINT}.")

    def process_nondifferentiable(self, fun: Callable[..., Any], again: Callable[..., Any],
                                  args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Run ``fun``, a function with no gradient (comparisons, ``argmax``...),
        on ``args``, some of them values of this (``abstract``) level;
        ``again`` is its tapegrad wrapper, for the levels below."""
        raise NotImplementedError(f"{type(self).__name__} runs no function of its values")

    def lower(self, x: Any) -> Any:
        """``x`` (a value of this level) one level down: the array an
        ``abstract`` level computes with, a tape's primal."""
        return x._array if self.abstract else x._value

    def keep(self, x: Any) -> Any:
        """``tapegrad.value(x)`` for a value of an ``abstract`` level: the value
        itself, its payload read without gradient tracking."""
        return x

    def describe(self, x: Any) -> str:
        """``repr`` of ``x``, a value of this level."""
        return f"Traced({x._value!r}, level={self.level})"
