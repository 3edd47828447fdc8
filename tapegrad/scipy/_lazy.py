"""SciPy, imported when a function first needs it (it is not a dependency)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np


def scipy_module(module: str, who: str) -> ModuleType:
    """``scipy.<module>``, imported now; ``who`` (the tapegrad function that
    needs it) is named in the ``ImportError`` when SciPy is missing."""
    try:
        return importlib.import_module(f"scipy.{module}")
    except ImportError as e:
        raise ImportError(f"{who} needs SciPy: pip install scipy") from e


def scipy_module_for(module: str, name: str, who: str, *arrays: Any) -> ModuleType:
    """The module whose ``name`` runs on ``arrays``: ``scipy.<module>`` for host arrays,
    ``cupyx.scipy.<module>`` for CuPy arrays. Raises ``TypeError`` naming
    what CuPy lacks when ``cupyx.scipy.<module>`` has no ``name`` (CuPy 13's
    ``cupyx.scipy.linalg`` has ``solve_triangular`` but no ``solve_banded``,
    ``solve_sylvester`` or ``sqrtm``)."""
    if all(type(a) is np.ndarray for a in arrays):
        return scipy_module(module, who)
    from tapegrad.backend import array_module

    if array_module(*arrays).__name__ != "cupy":
        return scipy_module(module, who)
    try:
        mod = importlib.import_module(f"cupyx.scipy.{module}")
    except ImportError:
        mod = None
    if getattr(mod, name, None) is None:
        raise TypeError(f"{who} on CuPy arrays needs cupyx.scipy.{module}.{name}, which CuPy does not "
                        "have; move the arrays to the host (cupy.asnumpy) to run it with SciPy")
    assert mod is not None
    return mod
