"""``torch.optim.Adagrad``: Adagrad with PyTorch's update rule (learning-rate
decay, L2 weight decay, an initial accumulator value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.traced import value
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

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), step for step as ``torch.optim.Adagrad``.

    For each parameter ``p`` with gradient ``g``, at step ``t`` (from 1):

        g = g + weight_decay * p               (if weight_decay)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g                          (s starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(s) + eps)

    Args:
        params: tensors or parameter groups (dicts).
        lr: learning rate (default 1e-2).
        lr_decay: learning-rate decay (default 0).
        weight_decay: L2 penalty (default 0).
        initial_accumulator_value: the sums' starting value (default 0).
        eps: added to the denominator (default 1e-10).
        maximize: as in PyTorch.

    Examples:
        >>> opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    """

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_unsupported("Adagrad", differentiable=differentiable, fused=fused)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if not state:  # made in __init__ as PyTorch does (so state_dict() lists it before a step)
            w = value(p._value)
            init = group["initial_accumulator_value"]
            if w.dtype.kind == "c":
                init = complex(init, init)
            state["step"] = _new(np.zeros((), np.float32))
            state["sum"] = _new(array_module(w).full_like(w, init))
        return state

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self._init_state(p, group)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                w = buffer(p)
                xp = np if type(w) is np.ndarray else array_module(w)
                g = grad_array(p)
                if group["maximize"]:
                    g = -g
                state = self._init_state(p, group)
                step_arr = state["step"]._value
                step_arr += 1
                if weight_decay != 0:
                    g = g + weight_decay * w
                clr = lr / (1 + (float(step_arr) - 1) * lr_decay)
                s = buffer(state["sum"])
                s += g * g
                std = xp.sqrt(s)
                std += eps
                w += -clr * g / std
                updated(p, state["step"], state["sum"])
        return loss
