"""How much memory a training loop keeps: shared by the long-loop tests."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable


def growth(train: Callable[[int], None], steps: int = 9000) -> int:
    """Bytes still allocated after ``train(steps)`` beyond what a warmed-up
    loop held (``train(n)`` runs n steps; garbage is collected before each
    reading, so only what the loop keeps counts)."""
    train(200)  # warm caches
    gc.collect()
    tracemalloc.start()
    try:
        train(1000)
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        train(steps)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
