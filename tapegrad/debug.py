"""debug_nans: stop at the first recorded operation that makes a NaN.

While it is on, every primitive's forward function and VJP rules are
swapped for checking versions (nothing is checked, and nothing costs, while
it is off). The forward value of every recorded op is checked, and so is
every cotangent a VJP rule produces in a backward pass; the error names the
primitive and the line of user code that recorded it, as PyTorch's anomaly
mode does. Operations on plain arrays (outside any transform) are NumPy's
and are not checked.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.primitive import REGISTRY, Primitive

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_depth = 0
_saved: dict[int, tuple[Any, dict[int, Any], Any]] = {}


def _user_line() -> str:
    """``file:line: source`` of the innermost frame outside tapegrad (and the stdlib)."""
    f: Any = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_PACKAGE) and "/lib/python" not in path and not path.startswith("<frozen"):
            import linecache

            src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            return f"{f.f_code.co_filename}:{f.f_lineno}" + (f": {src}" if src else "")
        f = f.f_back
    return "<unknown>"


def _has_nan(x: Any) -> bool:
    from tapegrad.core.traced import value

    v = value(x)
    dtype = getattr(v, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return False
    return bool(np.isnan(v).any()) if isinstance(v, (np.ndarray, np.generic)) else bool(
        type(v).__module__.startswith("cupy") and np.isnan(v).any())  # (CuPy 13: no __array_namespace__)


def _checked_fun(prim: Primitive, fun: Callable[..., Any]) -> Callable[..., Any]:
    def fun_checked(*args: Any, **kwargs: Any) -> Any:
        ans = fun(*args, **kwargs)
        if _has_nan(ans) and not any(_has_nan(a) for a in args):
            raise FloatingPointError(
                f"tapegrad.debug_nans: the forward value of `{prim.name}` holds a NaN "
                f"(recorded at {_user_line()})"
            )
        return ans

    return fun_checked


def _checked_maker(prim: Primitive, argnum: int, maker: Callable[..., Any]) -> Callable[..., Any]:
    def maker_checked(ans: Any, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        vjp = maker(ans, *args, **kwargs)
        where = _user_line()

        def vjp_checked(g: Any) -> Any:
            c = vjp(g)
            if _has_nan(c) and not _has_nan(g):
                raise FloatingPointError(
                    f"tapegrad.debug_nans: the cotangent from the VJP of `{prim.name}` with "
                    f"respect to argument {argnum} holds a NaN (recorded at {where})"
                )
            return c

        return vjp_checked

    return maker_checked


def _switch_on() -> None:
    for prim in REGISTRY:
        _saved[id(prim)] = (prim.fun, dict(prim.vjps), prim.vjp_argnum)
        prim.fun = _checked_fun(prim, prim.fun)
        prim.vjps = {i: (m if m is None else _checked_maker(prim, i, m)) for i, m in prim.vjps.items()}
        if prim.vjp_argnum is not None:
            inner = prim.vjp_argnum
            prim.vjp_argnum = lambda i, *a, _inner=inner, _p=prim, **k: _checked_maker(
                _p, i, lambda *aa, **kk: _inner(i, *aa, **kk))(*a, **k)


def _switch_off() -> None:
    for prim in REGISTRY:
        if id(prim) in _saved:
            prim.fun, prim.vjps, prim.vjp_argnum = _saved.pop(id(prim))


class debug_nans:
    """Raise ``FloatingPointError`` at the first recorded op whose value or
    cotangent holds a NaN, naming the primitive and the line that recorded it.

    Use as a context manager (``with tg.debug_nans():``), or as a global
    switch (``tg.debug_nans(True)`` ... ``tg.debug_nans(False)``). NaNs
    that come in through the inputs are not blamed on the op.

    Examples:
        >>> with tg.debug_nans():
        ...     tg.grad(lambda x: tnp.sum(tnp.sqrt(x - 1)))(np.array([0.5]))
        Traceback (most recent call last):
        FloatingPointError: tapegrad.debug_nans: the forward value of `sqrt` holds a NaN ...
    """

    def __init__(self, enable: bool | None = None) -> None:
        self._plain = enable is not None
        if enable is True:
            _enter()
        elif enable is False:
            _reset()

    def __enter__(self) -> debug_nans:
        if not self._plain:
            _enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._plain:
            _leave()


def _enter() -> None:
    global _depth
    with _lock:
        if _depth == 0:
            _switch_on()
        _depth += 1


def _leave() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            _switch_off()


def _reset() -> None:
    global _depth
    with _lock:
        if _depth:
            _switch_off()
        _depth = 0
