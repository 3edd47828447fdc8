"""Grad mode: whether the facade's tape records (``no_grad``, ``enable_grad`` ...).

The switch is the facade tape's per-thread ``active`` flag (``GT.active``);
these are the PyTorch-style context managers and decorators that flip it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tapegrad.torch._graph import GT


def is_grad_enabled() -> bool:
    """True when operations are recorded for differentiation (this thread)."""
    return GT.active


class _GradModeContext:
    """Base of the grad-mode switches: a context manager and a decorator."""

    mode = True

    def __enter__(self) -> None:
        self.prev = GT.active
        GT.active = self.mode

    def __exit__(self, *exc: Any) -> None:
        GT.active = self.prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = GT.active
            GT.active = mode
            try:
                return fn(*args, **kwargs)
            finally:
                GT.active = prev

        return wrapper

    def clone(self) -> _GradModeContext:
        return self.__class__()


class no_grad(_GradModeContext):  # noqa: N801
    """Context manager and decorator that turns recording off.

    Examples:
        >>> with torch.no_grad():
        ...     y = x * 2          # y.requires_grad is False
    """

    mode = False


class enable_grad(_GradModeContext):  # noqa: N801
    """Context manager and decorator that turns recording on."""

    mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Set grad mode: as a plain call (takes effect at once), a context manager
    (restored on exit) or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.prev = GT.active
        self.mode = bool(mode)
        GT.active = self.mode

    def __enter__(self) -> None:
        GT.active = self.mode

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        GT.active = self.prev
        return super().__call__(fn)

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)


class inference_mode(_GradModeContext):  # noqa: N801
    """Like ``no_grad`` (``inference_mode(False)`` changes nothing)."""

    def __init__(self, mode: bool = True) -> None:
        self.enabled = bool(mode)

    def __enter__(self) -> None:
        self.prev = GT.active
        if self.enabled:
            GT.active = False

    @property
    def mode(self) -> bool:  # type: ignore[override]  # a read-only view of the base's flag
        return not self.enabled if self.enabled else GT.active

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not self.enabled:
            return fn
        return no_grad()(fn)

    def clone(self) -> inference_mode:
        return self.__class__(self.enabled)


def is_inference_mode_enabled() -> bool:
    return False
