"""Where errors and warnings point: the user's line, outside tapegrad's files.

An op that fails or warns inside tapegrad runs several frames below the
user's call (an operator method, a primitive's wrapper, a rule in the
backward pass). This module finds the first frame outside the package and
words errors around it. Nothing here runs unless something goes wrong.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

_PACKAGE = os.path.dirname(__file__) + os.sep  # (co_filename has the form of __file__)


def in_package(filename: str) -> bool:
    """Is ``filename`` (a code object's) one of tapegrad's own files?"""
    return filename.startswith(_PACKAGE)


def user_frame(depth: int = 1) -> FrameType | None:
    """The innermost frame outside tapegrad's files, starting ``depth``
    frames above the caller (None if every frame is tapegrad's)."""
    f: FrameType | None = sys._getframe(depth + 1)
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
    again there: one worded by :func:`op_error` with its traceback restarting
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
    worded by a nested call) is raised as it is (see :func:`reraised`).
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
