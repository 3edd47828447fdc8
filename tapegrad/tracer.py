"""The traced value: a primal array plus its place on a tape.

Operators and array methods are installed by ``tapegrad.numpy`` (they call
its primitives); this module holds what every traced value needs regardless of
the op set: attribute access, conversion guards and the NumPy protocol hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# NumPy function or ufunc -> the tapegrad function that differentiates it.
# Filled in by tapegrad.numpy; read by __array_ufunc__ / __array_function__.
NUMPY_DISPATCH: dict[Any, Callable[..., Any]] = {}

_CONVERSION_HINT = (
    "use tg.value(x) to read its value without gradient tracking "
    "(gradients are never dropped silently)"
)


class Traced:
    """A value being differentiated: its primal array, its tape and its node."""

    __slots__ = ("_value", "_tape", "_node")
    __array_priority__ = 1000.0
    __hash__ = None  # type: ignore[assignment]  # unhashable, like ndarray

    def __init__(self, value: Any, tape: Any, node: Any) -> None:
        self._value = value
        self._tape = tape
        self._node = node

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
        # control flow on values is allowed (define-by-run)
        return bool(self._value)

    def __repr__(self) -> str:
        level = getattr(self._tape, "level", "?")
        v = self._value
        if type(v) is Traced and v._tape is self._tape and getattr(self._tape, "batching", False):  # vmap's
            aval, arr = v._value, self._node
            return (f"Batched(shape={tuple(aval.shape)}, dtype={aval.dtype}, "
                    f"batch_size={self._tape.size}, level={level}, values={arr!r})")
        return f"Traced({v!r}, level={level})"

    # --- conversions that would drop the gradient --------------------------
    def _refuse(self, what: str) -> TypeError:
        if _is_batched(self):
            return TypeError(
                f"tapegrad.vmap: cannot convert a batched value to {what}: its value differs "
                "from example to example inside vmap; compute with tapegrad.numpy functions on "
                "it (tnp.where to select per example), or return it from the mapped function."
            )
        if _is_jit_traced(self):
            return TypeError(
                f"tapegrad.jit: cannot convert a traced value to {what}: inside tg.jit a value "
                "computed from the arguments is not known when tracing; compute with "
                "tapegrad.numpy functions on it, return it, or make the argument it comes from "
                "static (static_argnums / static_argnames)."
            )
        return TypeError(
            f"tapegrad: cannot convert a traced value to {what}: {_CONVERSION_HINT}."
        )

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
        if _is_batched(self):
            raise self._refuse("a plain NumPy array (np.asarray, np.array)")
        raise TypeError(
            "tapegrad: cannot convert a traced value to a plain NumPy array "
            "(np.asarray, np.array, or assigning it into a NumPy array): "
            f"{_CONVERSION_HINT}; build arrays from traced values with "
            "tnp.stack, tnp.concatenate or tnp.where instead."
        )

    # --- NumPy protocols: plain `np.*` calls dispatch to tapegrad ------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
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


def value(x: Any) -> Any:
    """Return the primal value of ``x`` with no gradient tracking.

    For a traced value this is its underlying array (through every level of
    nesting); anything else is returned unchanged. Inside ``vmap``, a batched
    value stays batched (its value differs per example).

    Examples:
        >>> tg.grad(lambda x: x * tg.value(x))(3.0)   # value() is a constant
        3.0
    """
    while type(x) is Traced:
        v = x._value
        if type(v) is Traced and v._tape is x._tape:  # batched by vmap: it stays batched,
            arr = value(x._node)  # with the value of its array (no gradient through it)
            return x if arr is x._node else Traced(Traced(v._value, x._tape, arr), x._tape, arr)
        x = v
    return x


def _applying_level(x: Traced) -> Any:
    """The vmap or jit level whose value ``x`` holds (at any depth), or None."""
    while type(x) is Traced:
        v = x._value
        if type(v) is Traced and v._tape is x._tape:  # (see tapegrad.batching)
            return x._tape
        x = v
    return None


def _is_jit_traced(x: Traced) -> bool:
    level = _applying_level(x)
    return level is not None and not getattr(level, "batching", False)


def _is_batched(x: Traced) -> bool:
    """Is ``x`` batched by vmap, or traced on a tape above a batched value?"""
    return bool(getattr(_applying_level(x), "batching", False))
