"""Pausing Python's cyclic garbage collector while tapes record or replay."""

from __future__ import annotations

import gc
import threading
from typing import Any


class _GCPause:
    """Pause Python's cyclic garbage collector while tapes record or replay.

    Tape objects (nodes, traced values, rule closures) form no reference
    cycles, so reference counting frees them all; the cyclic collector would
    only walk them again and again as a long tape grows (about a tenth of the
    per-op cost). Re-entrant; the collector is restored as it was when the
    outermost pause ends, also on an exception.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                gc.enable()


gc_paused = _GCPause()
