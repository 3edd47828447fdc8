"""How tapegrad.numpy defines a primitive: the constructors the family modules use.

``elementwise(fun, *vjps)`` makes an elementwise (broadcasting) primitive with
all its rules from one definition:

- its VJP rules, one maker per argument (``None``: no derivative), declared
  to take leading batch axes (an elementwise rule written with broadcasting
  does);
- its JVP rules: the Jacobian of an elementwise op is diagonal, so each VJP
  maker is its JVP maker too, with the tangent of an argument broadcast into
  the answer given the missing axes between its batch axes and its own
  (``diagonal_jvp``); or the makers given as ``jvps=``;
- its batching rule for ``vmap``: the broadcasting rule
  (``tapegrad.batching.elementwise_rule``);
- where ``fun`` is NumPy's function of the same name (``np.sin`` named
  ``"sin"``): the NumPy dispatch entry (``np.sin(traced)`` calls it) and its
  place in the ``tapegrad.numpy`` namespace (``NUMPY_NAMES``, which the
  package adds to its names and ``__all__``).

Examples:
    >>> from tapegrad.numpy._define import elementwise
    >>> softplus = elementwise(lambda x: np.logaddexp(0.0, x),
    ...                        lambda ans, x: lambda g: g * tnp.exp(x - ans), name="softplus")
    >>> tg.grad(softplus)(0.0)
    np.float64(0.5)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axes
from tapegrad.batching import defbatch, elementwise_rule
from tapegrad.core.engine_ops import broadcast_to
from tapegrad.core.primitive import defjvp, defvjp, primitive
from tapegrad.core.traced import NUMPY_DISPATCH
from tapegrad.typing import Elementwise

Maker = Callable[..., Callable[[Any], Any]]

# NumPy name -> the primitive made by ``elementwise`` for NumPy's function of that name
# (tapegrad/numpy/__init__.py adds them to its namespace and its __all__)
NUMPY_NAMES: dict[str, Callable[..., Any]] = {}


def same(g: Any) -> Any:
    """The rule of an argument whose cotangent (or tangent) is the output's
    (``x + y``, ``+x``, ``copy``): one shared function rather than a closure per op."""
    return g


def diagonal_jvp(maker: Maker, i: int) -> Maker:
    """The VJP maker of argument ``i`` of an elementwise op, used as its JVP
    maker. The tangent of an argument broadcast into the output gets the
    missing axes between its batch axes and its own, so it lines up with
    the other operands."""

    def jvp_maker(ans: Any, *args: Any, **kw: Any) -> Callable[[Any], Any]:
        inner = maker(ans, *args, **kw)
        x = args[i]
        xnd = x.ndim if hasattr(x, "ndim") else 0
        outnd = ans.ndim
        if xnd == outnd:
            return inner

        def jvp(t: Any) -> Any:
            nb = t.ndim - xnd
            if nb:  # (a traced tangent's reshape method records the reshape primitive)
                t = t.reshape(t.shape[:nb] + (1,) * (outnd - xnd) + t.shape[nb:])
            return inner(t)

        return jvp

    return jvp_maker


def elementwise(fun: Callable[..., Any], *vjps: Maker | None, name: str | None = None,
                jvps: tuple[Maker | None, ...] | None = None, numpy: bool = True,
                batched: bool = True) -> Elementwise:
    """An elementwise primitive with its VJP, JVP and batching rules, from one definition.

    ``fun`` computes on plain arrays (broadcasting its arguments, as a ufunc
    does); ``vjps`` are its VJP makers, one per argument
    (``(ans, *args, **kwargs) -> (g -> cotangent)``, ``None`` for an argument
    with no derivative). ``jvps`` gives JVP makers of its own (default: each
    VJP maker, as ``diagonal_jvp`` lines it up). ``batched`` declares that the
    rules take leading batch axes (they do when written with broadcasting).
    ``name`` is the primitive's name (default ``fun.__name__``). With
    ``numpy`` (the default), a ``fun`` that is NumPy's function of that name
    gets NumPy's dispatch (``np.name(traced)`` calls the primitive) and the
    name in ``tapegrad.numpy``.

    Returns the primitive (called on plain arrays it is ``fun``).

    Examples:
        >>> logcosh = tg.elementwise(lambda x: np.logaddexp(x, -x) - np.log(2.0),
        ...                          lambda ans, x: lambda g: g * tnp.tanh(x), name="logcosh")
        >>> tg.grad(lambda x: tnp.sum(logcosh(x)))(np.array([0.0, 1.0]))
        array([0.        , 0.76159416])
    """
    fn = primitive(fun, name)
    name = fn.primitive.name  # type: ignore[attr-defined]
    defvjp(fn, *vjps, batched=batched)
    if jvps is None:
        jvps = tuple(None if m is None else diagonal_jvp(m, i) for i, m in enumerate(vjps))
    given = [i for i, m in enumerate(jvps) if m is not None]  # (an argument with none transposes its VJP)
    defjvp(fn, *[jvps[i] for i in given], argnums=given, batched=batched)
    defbatch(fn, elementwise_rule(fn))
    if numpy and getattr(np, name, None) is fun:
        NUMPY_NAMES[name] = fn
        NUMPY_DISPATCH[fun] = fn
    return fn


# --- helpers shared by the families' rules ----------------------------------------------------
def bound(fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A batching rule's arguments as ``fn``'s: the first one, and the rest as
    keywords (positional ones named after ``fn``'s parameters)."""
    names = list(inspect.signature(fn).parameters)
    kw = dict(kwargs)
    for name, a in zip(names[1:], args[1:]):
        kw[name] = a
    return args[0], kw


def batch_all(x: Any, batched: bool, size: int) -> Any:
    """``x`` with a batch axis (broadcast along it when ``x`` is not batched)."""
    if batched:
        return x
    return broadcast_to(x, (size,) + tuple(np.shape(x)))


def nbatch(t: Any, x: Any) -> int:
    """How many leading batch axes cotangent (or tangent) ``t`` carries beyond ``x``'s shape."""
    return t.ndim - np.ndim(x)


def neg_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a sequence) of an ``ndim``-dim array, counted
    from the end: the same axes of a cotangent with leading batch axes."""
    return tuple(a - ndim for a in normalize_axes(axis, ndim))
