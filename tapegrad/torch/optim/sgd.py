"""``torch.optim.SGD``: stochastic gradient descent with momentum, dampening,
Nesterov momentum and L2 weight decay, with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapegrad.torch._tensor_base import _new
from tapegrad.torch.optim.optimizer import (
    Optimizer,
    _use_grad,
    buffer,
    check_nonnegative,
    check_unsupported,
    grad_array,
    updated,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, step for step as ``torch.optim.SGD``.

    For each parameter ``p`` with gradient ``g``:

        g = g + weight_decay * p                      (if weight_decay)
        buf = g (first step) | momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov) | buf       (if momentum)
        p = p - lr * g

    Args:
        params: tensors or parameter groups (dicts).
        lr: learning rate (default 1e-3).
        momentum, dampening, weight_decay, nesterov, maximize: as in PyTorch.

    Examples:
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_nonnegative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_unsupported("SGD", differentiable=differentiable, fused=fused)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            for p in self._params_with_grad(group):
                w = buffer(p)
                g = grad_array(p)
                if group["maximize"]:
                    g = -g
                if weight_decay != 0:
                    g = g + weight_decay * w
                if momentum != 0:
                    state = self.state[p]
                    buf_t = state.get("momentum_buffer")
                    if buf_t is None:
                        buf_t = state["momentum_buffer"] = _new(g.copy())
                        buf = buf_t._value
                    else:
                        buf = buffer(buf_t)
                        buf *= momentum
                        buf += g if dampening == 0 else (1 - dampening) * g
                        updated(buf_t)
                    g = g + momentum * buf if nesterov else buf
                w += -lr * g
                updated(p)
        return loss
