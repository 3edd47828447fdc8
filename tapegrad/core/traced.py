"""The traced value: a value of one level (see ``tapegrad.core.level``).

Operators and array methods are installed by ``tapegrad.numpy`` (they call
its primitives); this module holds what every traced value needs regardless of
the op set: attribute access, conversion guards and the NumPy protocol hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.level import ARRAY

# NumPy function or ufunc -> the tapegrad function that differentiates it.
# Filled in by tapegrad.numpy; read by __array_ufunc__ / __array_function__.
NUMPY_DISPATCH: dict[Any, Callable[..., Any]] = {}



class Traced:
    """A value being transformed: a value of one level (see ``tapegrad.core.level``).

    ``_value`` is its primal (a plain array, or a value of a lower level) on
    a tape, or its abstract value (shape and dtype) on an ``abstract`` level;
    ``_level`` is its level. The rest is the level's payload, one named field
    each: ``_node``, a tape's entry; ``_tangent``, a forward trace's tangent;
    ``_array``, the array an abstract level computes with (a batch of
    examples, a concrete array of a trace). A value sets only its level's field.
    """

    __slots__ = ("_value", "_level", "_node", "_tangent", "_array")
    _value: Any
    _level: Any
    _node: Any
    _tangent: Any
    _array: Any
    __array_priority__ = 1000.0
    __hash__ = None  # type: ignore[assignment]  # unhashable, like ndarray

    def __init__(self, value: Any, tape: Any, node: Any) -> None:
        self._value = value
        self._level = tape
        self._node = node

    def _rebind(self, new: Traced) -> None:
        """Make this value ``new`` (an in-place update, recorded as a
        functional one: ``x`` now names the result)."""
        for name in Traced.__slots__:
            try:
                setattr(self, name, getattr(new, name))
            except AttributeError:  # (a payload field of another level: unset)
                if hasattr(self, name):
                    delattr(self, name)

    # --- array attributes -------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def size(self) -> int:
        return self._value.size

    def __len__(self) -> int:
        return len(self._value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d traced value")
        return (self[i] for i in range(len(self._value)))

    def __bool__(self) -> bool:
        # control flow on values is allowed (define-by-run); an abstract
        # value says what its level makes of it (a refusal, a recorded decision...)
        return bool(self._value)

    def __repr__(self) -> str:
        return self._level.describe(self)

    # --- conversions that would drop the gradient --------------------------
    def _refuse(self, what: str) -> TypeError:
        return self._level.refuse(self, what)

    def __float__(self) -> float:
        raise self._refuse("a Python float (float(), math.*)")

    def __int__(self) -> int:
        raise self._refuse("a Python int")

    def __complex__(self) -> complex:
        raise self._refuse("a Python complex")

    def __index__(self) -> int:
        raise self._refuse("an index")

    def item(self, *args: Any) -> Any:
        raise self._refuse("a Python scalar (.item())")

    def tolist(self) -> Any:
        raise self._refuse("a Python list (.tolist())")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise self._refuse(ARRAY)

    # --- NumPy protocols: plain `np.*` calls dispatch to tapegrad ------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if len(inputs) > 1:  # another operand's own override goes first (NumPy's protocol)
            for x in inputs:
                if type(x) not in _PLAIN_TYPES and overrides_ufuncs(x):
                    return NotImplemented
        if kwargs and any(overrides_ufuncs(x) for x in kwargs.get("out", None) or ()):
            return NotImplemented
        if method == "__call__" and not kwargs:  # the common case: ``A @ x``, ``np.sin(x)``
            fn = NUMPY_DISPATCH.get(ufunc)
            if fn is not None:
                return fn(*inputs)
        name = getattr(ufunc, "__name__", None) or repr(ufunc)
        if method != "__call__":
            raise TypeError(f"tapegrad: numpy.{name}.{method} is not differentiable")
        if kwargs.get("out") is not None:
            raise TypeError(
                f"tapegrad: numpy.{name} with out= writes into a plain array and would "
                "drop the gradient; call it without out="
            )
        kwargs.pop("out", None)
        fn = NUMPY_DISPATCH.get(ufunc)
        if fn is None:
            raise TypeError(f"tapegrad: numpy.{name} has no differentiation rule")
        return fn(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        fn = NUMPY_DISPATCH.get(func)
        if fn is None:
            mod = getattr(func, "__module__", "numpy") or "numpy"
            raise TypeError(
                f"tapegrad: {mod}.{func.__name__} has no differentiation rule"
            )
        return fn(*args, **kwargs)


_ARRAY_UFUNC = np.ndarray.__array_ufunc__
_PLAIN_TYPES = frozenset({Traced, np.ndarray, float, int, complex, bool, np.float64, np.float32})
_PLAIN = (int, float, complex, bool, np.generic, np.ndarray, list, tuple)


def overrides_ufuncs(x: Any) -> bool:
    """Does ``x`` override NumPy's ufuncs with an ``__array_ufunc__`` of its
    own (xarray, pint, a wrapper class)? A traced value leaves such an
    operand's ufuncs to it, as ``ndarray`` does: its ``__array_ufunc__``
    returns NotImplemented, and its operators call the ufunc (NumPy then
    calls the override). Not for numbers, lists, NumPy's arrays and scalars,
    traced values, CuPy's arrays, nor an object that opts out of ufuncs
    (``__array_ufunc__ = None``: NumPy refuses it before any override runs)."""
    if isinstance(x, _PLAIN) or type(x) is Traced:
        return False
    own = getattr(type(x), "__array_ufunc__", None)
    return own is not None and own is not _ARRAY_UFUNC and not type(x).__module__.startswith("cupy")


def value(x: Any) -> Any:
    """Return the primal value of ``x`` with no gradient tracking.

    For a traced value this is its underlying array (through every level of
    nesting); anything else is returned unchanged. A value of an ``abstract``
    level is what that level keeps (inside ``vmap``, a batched value stays
    batched: its value differs per example).

    Examples:
        >>> tg.grad(lambda x: x * tg.value(x))(3.0)   # value() is a constant
        3.0
    """
    while type(x) is Traced:
        level = x._level
        if level.abstract:  # (its level says what it keeps: see Level.keep)
            return level.keep(x)
        x = x._value
    return x


def concrete(x: Any) -> Any:
    """The value of ``x`` if it is known now, else None.

    ``value(x)`` read through every tape: a plain array (or number). None
    when an ``abstract`` level holds it: it differs from example to example,
    or is not known until the program runs. A rule that decides something on
    values (a mask, a test for zeros) asks this, and takes a path that needs
    no decision when the answer is None; it never asks which level that is.
    """
    v = value(x)
    return None if type(v) is Traced else v


def unbox_idle(x: Any) -> Any:
    """``x`` with the levels that no longer record unboxed: a value of a tape
    closed (or replaying) is a constant, its primal. Values of abstract levels
    (they keep their values) and of recording tapes stay as they are."""
    while type(x) is Traced and not x._level.active and not x._level.abstract:
        x = x._value
    return x
