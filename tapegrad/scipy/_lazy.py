"""SciPy, imported when a function first needs it (it is not a dependency)."""

from __future__ import annotations

import importlib
from types import ModuleType


def scipy_module(module: str, who: str) -> ModuleType:
    """``scipy.<module>``, imported now; ``who`` (the tapegrad function that
    needs it) is named in the ``ImportError`` when SciPy is missing."""
    try:
        return importlib.import_module(f"scipy.{module}")
    except ImportError as e:
        raise ImportError(f"{who} needs SciPy: pip install scipy") from e
