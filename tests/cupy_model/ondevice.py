"""Run a program written for the CPU on CuPy arrays, as a CuPy user writes it.

An op-table row is ``fn(m, *args)`` whose constants are NumPy arrays (module
globals, closure cells, ``np.array(...)`` calls). A CuPy user writes those
constants with ``cp.array``; :func:`on_device` rebuilds ``fn`` so that they
are device arrays: array globals and cells copied to the device, ``np``'s
creation functions making device arrays, helper functions of the same module
rebuilt the same way. Everything else (the rules under test) is untouched.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

_CREATION = ("array", "asarray", "zeros", "ones", "eye", "full", "arange", "linspace", "identity",
             "zeros_like", "ones_like", "full_like", "empty")


class _Creating:
    """A module proxy whose creation functions make device arrays (host results moved over)."""

    def __init__(self, base: Any, cp: Any) -> None:
        self._base, self._cp = base, cp

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._base, name)
        if name in _CREATION:
            cp = self._cp

            def make(*a: Any, **k: Any) -> Any:
                r = attr(*a, **k)
                return cp.asarray(r) if type(r) is np.ndarray else r
            return make
        return attr


def to_device(x: Any, cp: Any) -> Any:
    """NumPy arrays in a pytree (tuples, lists, dicts) as device arrays."""
    if type(x) is np.ndarray:
        return cp.asarray(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, cp) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v, cp) for k, v in x.items()}
    return x


def to_host(x: Any, cp: Any) -> Any:
    """Device arrays in a pytree as NumPy arrays."""
    if type(x) is cp.ndarray:
        return cp.asnumpy(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_host(v, cp) for v in x)
    if isinstance(x, dict):
        return {k: to_host(v, cp) for k, v in x.items()}
    return x


def on_device(fn: Any, cp: Any, _memo: dict[int, Any] | None = None) -> Any:
    """``fn`` with its NumPy constants on the device (see the module docstring)."""
    memo = {} if _memo is None else _memo
    if id(fn) in memo:
        return memo[id(fn)]
    g = fn.__globals__
    new_globals: dict[str, Any] = dict(g)
    new = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__,
                             _cells(fn.__closure__, cp, g, memo))
    memo[id(fn)] = new
    for name in fn.__code__.co_names:
        if name not in g:
            continue
        v = g[name]
        new_globals[name] = _convert(v, cp, g, memo)
    return new


def _convert(v: Any, cp: Any, g: dict[str, Any], memo: dict[int, Any]) -> Any:
    if v is np:
        return _Creating(np, cp)
    if type(v) is np.ndarray:
        return cp.asarray(v)
    if isinstance(v, types.FunctionType) and v.__globals__ is g:
        return on_device(v, cp, memo)
    return v


def _cells(closure: Any, cp: Any, g: dict[str, Any], memo: dict[int, Any]) -> Any:
    if closure is None:
        return None
    return tuple(types.CellType(_convert(c.cell_contents, cp, g, memo)) if _filled(c) else c for c in closure)


def _filled(c: Any) -> bool:
    try:
        c.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def device_module(m: Any, cp: Any) -> Any:
    """``tapegrad.numpy`` as a CuPy user calls it: its creation functions make device arrays."""
    return _Creating(m, cp)
