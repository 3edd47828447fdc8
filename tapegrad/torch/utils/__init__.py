"""``tapegrad.torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``)."""

from typing import Any

from tapegrad.torch.utils import data

__all__ = ["data"]


def __getattr__(name: str) -> Any:
    """A PyTorch name this module lacks: an ``AttributeError`` that says so."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}: "
                         f"tapegrad.torch does not provide torch.utils.{name}")
