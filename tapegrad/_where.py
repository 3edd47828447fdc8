"""Where errors and warnings point: the user's line, outside tapegrad's files.

An op that fails or warns inside tapegrad runs several frames below the
user's call (an operator method, a primitive's wrapper, a rule in the
backward pass). This module finds the first frame outside the package and
words errors around it (only once something has gone wrong), and redirects
NumPy's floating-point warnings there (a switch set once per tape or
backward pass: see ``warn_at_user``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import numpy as np

_PACKAGE = os.path.dirname(__file__) + os.sep  # (co_filename has the form of __file__)


def in_package(filename: str) -> bool:
    """Is ``filename`` (a code object's) one of tapegrad's own files?"""
    return filename.startswith(_PACKAGE)


def user_frame(depth: int = 1, start: FrameType | None = None) -> FrameType | None:
    """The innermost frame outside tapegrad's files, from ``start`` outwards
    (by default ``depth`` frames above the caller); None if there is none."""
    f: FrameType | None = start if start is not None else sys._getframe(depth + 1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    return f


def describe_frame(f: FrameType | None) -> str:
    """``file:line (in function)`` of frame ``f``, or ``""``."""
    if f is None:
        return ""
    return f"{f.f_code.co_filename}:{f.f_lineno} (in {f.f_code.co_name})"


def _shape_text(a: Any) -> str | None:
    shape = getattr(a, "shape", None)
    if type(shape) is not tuple:
        if isinstance(a, (int, float, complex)) and not isinstance(a, bool):
            return "()"
        return None
    return str(tuple(int(n) for n in shape))


def reraised(err: BaseException) -> BaseException:
    """``err``, caught in the caller's ``except`` clause, ready to be raised
    again there: one worded by ``op_error`` with its traceback restarting
    at the caller (a frame or two below the user's line, where the message
    points; NumPy's own traceback stays on the cause), any other as it came
    (its traceback without the caller's frame, which the raise adds back)."""
    if getattr(err, "_tapegrad_where", False):
        return err.with_traceback(None)
    tb = err.__traceback__
    return err.with_traceback(tb.tb_next if tb is not None else None)


def op_error(name: str, args: Sequence[Any], err: ValueError) -> BaseException:
    """The error to raise from the ``except`` clause that caught ``err``, raised
    by primitive ``name`` called on traced values ``args`` (NumPy refusing the
    operands' shapes, most often).

    A plain ``ValueError`` becomes one that names the primitive, the shapes of
    the array operands and the user's line, with NumPy's message kept in its
    text and as its ``__cause__``: ``except ValueError`` still catches it.
    Any other error (a subclass such as ``LinAlgError``, or one already
    worded by a nested call) is raised as it is (see ``reraised``).
    """
    if type(err) is not ValueError or getattr(err, "_tapegrad_where", False):
        return reraised(err)
    shapes = [s for s in map(_shape_text, args) if s is not None]
    if len(shapes) == 1:
        operands = f" of an operand of shape {shapes[0]}"
    elif shapes:
        operands = f" of operands of shapes {', '.join(shapes[:-1])} and {shapes[-1]}"
    else:
        operands = ""
    where = describe_frame(user_frame(1))
    new = ValueError(f"tapegrad: `{name}`{operands} failed"
                     + (f" at {where}" if where else "") + f": {err}")
    new._tapegrad_where = True  # type: ignore[attr-defined]  # (outer levels leave it as it is)
    new.__cause__ = err
    return new


# --- NumPy's floating-point warnings, attributed to the user's line ------------------------------
#
# NumPy warns about a floating-point error (log(0), 0/0, overflow) at the
# Python frame that ran the ufunc: inside a transform that is a tapegrad
# file (a primitive's wrapper, a rule in a family file), and the "default" warning
# filter then shows it once for that tapegrad line, whichever user line ran
# into it next. While a tape records or replays, the error categories the
# user left at "warn" are switched to "call" with a callback that issues the
# same RuntimeWarning at the first frame outside tapegrad (through
# ``warnings.warn_explicit``, with that frame's module and registry, so the
# user's filters and "once per line" hold as for a warning of their own).
# The switch is a context variable set once per tape or backward pass, not
# per op; categories set to "ignore", "raise", "print", "log" or "call"
# (errstate inside the function too) stay as the user set them.

_EXTOBJ: Any = None  # NumPy 1.x: its warnings keep NumPy's own attribution
try:  # (NumPy >= 2: the error state is a context variable)
    from numpy._core import umath as _umath

    _EXTOBJ = _umath._extobj_contextvar
    _get_extobj_dict: Any = _umath._get_extobj_dict
    _make_extobj: Any = _umath._make_extobj
except (ImportError, AttributeError):
    pass

_CATEGORIES = ("divide", "over", "under", "invalid")
_NUMPY = os.path.dirname(np.__file__) + os.sep
_LAST: list[tuple[Any, Any, tuple[str, ...]]] = [(None, None, ())]  # (user state, ours for it, switched)


def _on_float_error(kind: str, flag: int) -> None:
    """NumPy's callback (errstate "call") for the categories the user left at
    "warn": warn as NumPy would, at the user's line."""
    import warnings

    f: FrameType | None = sys._getframe(1)  # the frame that ran the ufunc
    while f is not None and f.f_code.co_filename.startswith(_NUMPY):
        f = f.f_back  # (np.mean and friends are Python code: their caller's line)
    if f is not None and in_package(f.f_code.co_filename):
        what = _tapegrad_context(f)
        target = user_frame(start=f)
    else:  # a NumPy call of the user's own (or another library's): warned where it is
        what, target = (_source_of_call(f) if f is not None else ""), f
    text = f"{kind} encountered" + (f" in {what}" if what else "")
    if target is None:
        warnings.warn(text, RuntimeWarning, stacklevel=2)
        return
    g = target.f_globals  # (as warnings.warn does: that module's name and registry)
    warnings.warn_explicit(text, RuntimeWarning, target.f_code.co_filename, target.f_lineno,
                           module=g.get("__name__", "<string>"),
                           registry=g.setdefault("__warningregistry__", {}))


def _prim_name(p: Any) -> str:
    """The name of ``p`` if it is a primitive's rule record, else ``""``
    (told by its type: this module imports nothing of tapegrad's)."""
    t = type(p)
    return str(p.name) if t.__name__ == "Primitive" and t.__module__ == "tapegrad.core.primitive" else ""


def _tapegrad_context(f: FrameType | None) -> str:
    """What tapegrad was doing in frame ``f`` and those above it: the
    gradient rule of a primitive (a backward pass), its derivative rule
    (forward mode), or the primitive the user called (``log``)."""
    name = rule = ""
    while f is not None and in_package(f.f_code.co_filename):
        local = f.f_locals
        if f.f_code.co_name == "_walk_entries":  # (the reverse walk: entry ``e`` is being pushed)
            walked = _prim_name(getattr(local.get("e"), "prim", None))
            if walked:
                return f"the gradient of {walked}"
        here = _prim_name(local.get("prim"))
        if here:
            if not rule and f.f_code.co_name == "record":  # (a forward trace runs JVP rules there)
                rule = f"the derivative of {here}"
            name = here  # (the outermost one: the op the user called)
        f = f.f_back
    return rule or name


def _source_of_call(f: FrameType) -> str:
    """The source text of the call frame ``f`` is running (``np.log(w)``), or ``""``."""
    import linecache

    try:
        positions = list(f.f_code.co_positions())
        line, end, col, end_col = positions[f.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):  # (Python < 3.11: no positions)
        return ""
    if line is None or line != end or col is None or end_col is None:
        return ""
    return linecache.getline(f.f_code.co_filename, line)[col:end_col].strip()


def warn_at_user() -> Any:
    """Attribute NumPy's floating-point warnings to the user's line from now
    on (a tape starts recording, a backward pass starts). Returns what
    ``stop_warn_at_user`` needs (None when nothing was switched: the
    user's state has no "warn", or an outer tape switched it already)."""
    if _EXTOBJ is None:
        return None
    cur = _EXTOBJ.get()
    user, ours, switched = _LAST[0]  # (one tuple: read at once, whatever other threads do)
    if cur is ours:  # (an outer tape switched it: the common nested case)
        return None
    if cur is not user:
        state = _get_extobj_dict()
        switched = tuple(k for k in _CATEGORIES if state[k] == "warn")
        if not switched or (state["call"] is not None
                            and any(state[k] == "call" for k in _CATEGORIES)):
            ours = None  # nothing to switch, or the user's own callback is in use
        else:
            ours = _make_extobj(call=_on_float_error, **dict.fromkeys(switched, "call"))
        _LAST[0] = (cur, ours, switched)
    if ours is None:
        return None
    return _EXTOBJ.set(ours), ours, switched


def stop_warn_at_user(token: Any) -> None:
    """Undo ``warn_at_user`` (given what it returned). A change the user
    made meanwhile with ``np.seterr`` or ``np.seterrcall`` is kept, with
    "warn" again where "call" was put (one made with ``np.errstate`` has
    undone itself already)."""
    if token is None:
        return
    tok, ours, switched = token
    changed = _get_extobj_dict() if _EXTOBJ.get() is not ours else None
    try:
        _EXTOBJ.reset(tok)
    except ValueError:  # (reset from another context: leave it as it is)
        return
    if changed is not None:
        if changed["call"] is _on_float_error:
            changed["call"] = _get_extobj_dict()["call"]  # (the user's own, as restored)
            for k in switched:
                if changed[k] == "call":
                    changed[k] = "warn"
        _EXTOBJ.set(_make_extobj(**changed))
