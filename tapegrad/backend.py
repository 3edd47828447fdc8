"""Which array module (numpy or cupy) an array belongs to.

CuPy is imported only when a CuPy array is seen, never at ``import tapegrad``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np


def array_module(*xs: Any) -> ModuleType:
    """Return ``numpy`` or ``cupy``: the module every array in ``xs`` belongs to.

    Raises ``ValueError`` naming both devices when CPU and GPU arrays are mixed.
    """
    ndarray = np.ndarray
    for x in xs:  # the common case (all NumPy arrays) first, fast
        if type(x) is not ndarray:
            break
    else:
        return np
    from tapegrad.core.traced import Traced, value  # (below the fast path: an import costs 0.3 us)
    found = None
    for x in xs:
        x = value(x)
        while type(x) is Traced:  # batched by vmap: its array says
            x = value(x._level.lower(x))
        mod = type(x).__module__
        if mod.startswith("cupy"):
            kind = "cuda"
        elif isinstance(x, np.ndarray):
            kind = "cpu"
        else:  # (Python and NumPy scalars go with either device, as CuPy takes them)
            continue
        if found is None:
            found = kind
        elif found != kind:
            raise ValueError(
                f"tapegrad: expected all arrays on one device, but found arrays on {found} "
                f"and {kind}"
            )
    if found == "cuda":
        return sys.modules.get("cupy") or import_cupy()
    return np


def import_cupy() -> ModuleType:
    """Import and return CuPy, the array module of ``device="cuda"``.

    Raises ``ModuleNotFoundError`` that says how to install it (tapegrad's
    ``cuda`` extra) when it is not installed, with the import's own error as
    the cause. Every place that needs CuPy imports it through this function.
    """
    try:
        import cupy
    except ModuleNotFoundError as e:
        if e.name != "cupy":  # (CuPy is there, but something it needs is not: its own error)
            raise
        raise ModuleNotFoundError(
            'CuPy is not installed: pip install "tapegrad[cuda]" (tapegrad runs device="cuda" '
            "on CuPy arrays; for a CUDA other than 12, install the matching cupy-cudaXXx wheel)",
            name="cupy",
        ) from e
    return cupy


def device_of(x: Any) -> str:
    """``"cpu"`` or ``"cuda"``."""
    return "cuda" if array_module(x).__name__ == "cupy" else "cpu"
