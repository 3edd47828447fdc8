"""What holds while tapes record or replay: Python's cyclic garbage collector
paused, and NumPy's floating-point warnings pointing at the user's line."""

from __future__ import annotations

import gc
import threading
from typing import Any

from tapegrad._where import stop_warn_at_user, warn_at_user


class _Pauses:
    """The pauses one thread holds."""

    __slots__ = ("depth", "warn")

    def __init__(self) -> None:
        self.depth = 0  # pauses this thread holds now
        self.warn: Any = None  # what warn_at_user returned when its outermost pause began


class _Held(threading.local):
    # (one thread-local read per enter or exit, then plain attributes: an
    # attribute of a threading.local costs about as much as a function call;
    # this and the walk's flag in core/tape.py took a first derivative from
    # 98.8k to 94.4k instructions, benchmarks/instructions.py)
    def __init__(self) -> None:
        self.pauses = _Pauses()


class _Tracing:
    """Entered while tapes record or replay (a transform's tape, a backward
    pass): pauses Python's cyclic garbage collector and attributes NumPy's
    floating-point warnings to the user's line (``tapegrad._where``).

    Tape objects (nodes, traced values, rule closures) form no reference
    cycles, so reference counting frees them all; the cyclic collector would
    only walk them again and again as a long tape grows (about a tenth of the
    per-op cost). Re-entrant; the collector is restored as it was when the
    outermost pause ends, also on an exception.

    A pause nested in one its thread holds already (a transform inside
    another: two of three in a third derivative, whose ``grad`` calls hold
    one pause each for their tape and its backward pass) only counts itself
    in a thread-local depth: no lock, no call to ``gc``, no warning switch
    (280 ns a pair instead of 460 and two more calls). The global depth counts the threads holding a pause. The
    warnings are switched once, by a thread's outermost pause: a
    ``np.seterr`` the user makes inside a transformed function holds (with
    NumPy's own attribution) until that pause ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False
        self._held = _Held()

    def __enter__(self) -> None:
        held = self._held.pauses
        d = held.depth
        held.depth = d + 1
        if d:  # (this thread holds a pause: the collector is paused already)
            return
        held.warn = warn_at_user()
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1

    def __exit__(self, *exc: Any) -> None:
        held = self._held.pauses
        d = held.depth = held.depth - 1
        if d:
            return
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                gc.enable()
        stop_warn_at_user(held.warn)
        held.warn = None


tracing = _Tracing()
