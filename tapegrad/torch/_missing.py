"""The module ``__getattr__`` that says a PyTorch name is missing from the facade."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def missing_names(module: str, torch_path: str) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module`` (called only on a miss):
    a PyTorch name raises an ``AttributeError`` saying that ``tapegrad.torch``
    does not provide ``{torch_path}.{name}`` yet; a dunder name (pickle and
    copy probe those) gets the plain error. ``hasattr`` stays False either way."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise AttributeError(f"module {module!r} has no attribute {name!r}: "
                             f"tapegrad.torch does not provide {torch_path}.{name} (yet)")

    return __getattr__
