"""``torch.optim.RMSprop``: RMSprop with PyTorch's update rule (smoothing
``alpha``, ``eps`` outside the square root, optional momentum, centering and
L2 weight decay)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.torch._tensor_base import _new
from tapegrad.torch.optim.optimizer import (
    Optimizer,
    _use_grad,
    buffer,
    check_nonnegative,
    check_unsupported,
    grad_array,
    new_state,
    updated,
)

__all__ = ["RMSprop"]


def lerp_(xp: Any, a: Any, b: Any, weight: float) -> None:
    """``a.lerp_(b, weight)`` with PyTorch's two formulas (so its rounding)."""
    d = xp.subtract(b, a)
    if weight < 0.5:
        d *= weight
        a += d
    else:
        d *= 1 - weight
        xp.subtract(b, d, out=a)


class RMSprop(Optimizer):
    """RMSprop (Hinton), step for step as ``torch.optim.RMSprop``.

    For each parameter ``p`` with gradient ``g``:

        g = g + weight_decay * p                         (if weight_decay)
        v = alpha * v + (1 - alpha) * g * g
        avg = sqrt(v - gavg * gavg) + eps                (centered: gavg.lerp_(g, 1 - alpha) first)
        avg = sqrt(v) + eps                              (otherwise)
        buf = momentum * buf + g / avg; p = p - lr * buf (if momentum > 0)
        p = p - lr * g / avg                             (otherwise)

    Args:
        params: tensors or parameter groups (dicts).
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        momentum: momentum factor (default 0).
        centered: normalize by the estimated variance of the gradient (default False).
        maximize: as in PyTorch.

    Examples:
        >>> opt = torch.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
    """

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        check_unsupported("RMSprop", capturable=capturable, differentiable=differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in self._params_with_grad(group):
                w = buffer(p)
                xp = np if type(w) is np.ndarray else array_module(w)
                g = grad_array(p)
                if group["maximize"]:
                    g = -g
                state = self.state[p]
                if not state:
                    state["step"] = _new(np.zeros((), np.float32))
                    state["square_avg"] = new_state(w)
                    if momentum > 0:
                        state["momentum_buffer"] = new_state(w)
                    if centered:
                        state["grad_avg"] = new_state(w)
                step_arr = state["step"]._value
                step_arr += 1
                if weight_decay != 0:
                    g = g + weight_decay * w
                v = buffer(state["square_avg"])
                v *= alpha
                v += (1 - alpha) * g * g
                touched = [p, state["step"], state["square_avg"]]
                if centered:
                    gavg = buffer(state["grad_avg"])
                    lerp_(xp, gavg, g, 1 - alpha)
                    avg = xp.sqrt(v + (-gavg) * gavg)
                    touched.append(state["grad_avg"])
                else:
                    avg = xp.sqrt(v)
                avg += eps
                if momentum > 0:
                    buf = buffer(state["momentum_buffer"])
                    buf *= momentum
                    buf += g / avg
                    w += -lr * buf
                    touched.append(state["momentum_buffer"])
                else:
                    w += -lr * g / avg
                updated(*touched)
        return loss
