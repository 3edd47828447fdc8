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
    from tapegrad.tracer import Traced, value

    ndarray = np.ndarray
    for x in xs:  # the common case (all NumPy arrays) first, fast
        if type(x) is not ndarray:
            break
    else:
        return np
    found = None
    for x in xs:
        x = value(x)
        while type(x) is Traced:  # batched by vmap: its array says
            x = value(x._node)
        mod = type(x).__module__
        if mod.startswith("cupy"):
            kind = "cuda"
        elif isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
            kind = "cpu"
        else:
            continue
        if found is None:
            found = kind
        elif found != kind:
            raise ValueError(
                f"tapegrad: expected all arrays on one device, but found arrays on {found} "
                f"and {kind}"
            )
    if found == "cuda":
        return sys.modules.get("cupy") or _import_cupy()
    return np


def _import_cupy() -> ModuleType:
    import cupy

    return cupy


def device_of(x: Any) -> str:
    """``"cpu"`` or ``"cuda"``."""
    return "cuda" if array_module(x).__name__ == "cupy" else "cpu"
