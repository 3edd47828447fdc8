"""The backends a compiled program can run on (``tg.jit(f, backend=...)``).

``"numpy"`` (the default) runs the generated straight-line program over
NumPy. ``"numba"`` (opt-in, ``pip install "tapegrad[numba]"``) also fuses
each chain of elementwise operations into one compiled loop
(``tapegrad.compile.backends.numba``); it is imported only when asked for.
"""

from __future__ import annotations

import importlib.util
from typing import Any

BACKENDS = ("numpy", "numba")


def check_backend(name: str) -> str:
    """``name`` if it is a known backend whose dependencies are installed.

    Raises:
        ValueError: an unknown backend (the message lists the known ones).
        ImportError: ``"numba"`` without numba installed (the message names
            ``pip install "tapegrad[numba]"``).
    """
    if name not in BACKENDS:
        raise ValueError(f"tg.jit: unknown backend {name!r}; the backends are "
                         + ", ".join(repr(b) for b in BACKENDS))
    if name == "numba" and importlib.util.find_spec("numba") is None:
        raise ImportError('tg.jit(backend="numba") needs numba: pip install "tapegrad[numba]"')
    return name


def lower(backend: str, program: list[Any], values: list[Any], outputs: list[int]) -> list[Any]:
    """``program`` as ``backend`` runs it (NumPy's: as it is)."""
    if backend == "numpy":
        return program
    from tapegrad.compile.backends import numba as numba_backend  # (only when asked for)

    return numba_backend.lower(program, values, outputs)
