"""Gradient clipping, as ``torch.nn.utils.clip_grad_norm_`` and ``clip_grad_value_``.

The gradients are scaled or clamped in place, under ``no_grad``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

from tapegrad.torch._creation import stack, tensor
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _as_list(tensors: Any) -> list[Any]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(t: Tensor, p: float) -> Tensor:
    """``torch.linalg.vector_norm(t, p)`` over all elements."""
    a = t.reshape(-1).abs()
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    if p == 0:
        return (a != 0).sum().to(t.dtype)
    return a.pow(p).sum().pow(1.0 / p)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The ``norm_type`` norm of the norms of ``tensors`` (as if concatenated into one vector)."""
    ts = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        return tensor(0.0)
    with no_grad():
        total = _vector_norm(stack([_vector_norm(t, norm_type) for t in ts]), norm_type)
    v = total.item()
    if error_if_nonfinite and (math.isnan(v) or math.isinf(v)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total
    ``norm_type`` norm is at most ``max_norm``; returns the total norm before clipping.

    Examples:
        >>> loss.backward()
        >>> nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        tensor(3.2571)
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
