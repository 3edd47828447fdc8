"""``torch.optim.Adam``: Adam with PyTorch's bias correction, L2 weight decay
(``decoupled_weight_decay=True``: AdamW's) and optional AMSGrad."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.torch._tensor import _new
from tapegrad.torch.optim.optimizer import (
    Optimizer,
    _use_grad,
    buffer,
    check_unsupported,
    new_state,
    updated,
)
from tapegrad.tracer import value

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015), step for step as ``torch.optim.Adam``.

    For each parameter ``p`` with gradient ``g``, at step ``t`` (from 1)::

        g = g + weight_decay * p                      (L2, not AdamW)
        m = m + (1 - beta1) * (g - m)                 (m.lerp_(g, 1 - beta1))
        v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v) / sqrt(1 - beta2 ** t) + eps  (v: its running max with amsgrad)
        p = p - lr / (1 - beta1 ** t) * m / denom

    Args:
        params: tensors or parameter groups (dicts).
        lr: learning rate (default 1e-3).
        betas: ``(beta1, beta2)``, the averaging coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0).
        amsgrad: use the running maximum of ``v`` (default False).
        maximize, decoupled_weight_decay: as in PyTorch.

    Example:
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        check_unsupported("Adam", capturable=capturable, differentiable=differentiable, fused=fused)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure(closure)
        states = self.state
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
            maximize, decoupled = group["maximize"], group["decoupled_weight_decay"]
            wt, wt2 = 1 - beta1, 1 - beta2
            for p in group["params"]:
                gt = p._grad
                if gt is None:
                    continue
                w = buffer(p)
                g = gt._value
                if type(g) is not np.ndarray:
                    g = value(g)
                state = states[p]
                if not state:
                    state["step"] = _new(np.zeros((), np.float32))
                    state["exp_avg"] = new_state(w)
                    state["exp_avg_sq"] = new_state(w)
                    if amsgrad:
                        state["max_exp_avg_sq"] = new_state(w)
                step_t, m_t, v_t = state["step"], state["exp_avg"], state["exp_avg_sq"]
                step_arr = step_t._value
                step_arr += 1
                step = float(step_arr)
                xp = np if type(w) is np.ndarray else array_module(w)
                if maximize:
                    g = -g
                if weight_decay != 0:
                    if decoupled:
                        w *= 1 - lr * weight_decay
                    else:
                        g = g + weight_decay * w
                m, v = buffer(m_t), buffer(v_t)
                # m.lerp_(g, 1 - beta1), with PyTorch's two formulas
                d = xp.subtract(g, m)
                if wt < 0.5:
                    d *= wt
                    m += d
                else:
                    d *= 1 - wt
                    xp.subtract(g, d, out=m)
                # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                v *= beta2
                xp.multiply(g, wt2, out=d)
                d *= g
                v += d
                if amsgrad:
                    vmax = buffer(state["max_exp_avg_sq"])
                    xp.maximum(vmax, v, out=vmax)
                    denom = xp.sqrt(vmax)
                else:
                    denom = xp.sqrt(v)
                denom /= (1 - beta2**step) ** 0.5
                denom += eps
                # p.addcdiv_(m, denom, value=-step_size)
                xp.multiply(m, -lr / (1 - beta1**step), out=d)
                d /= denom
                w += d
                updated(p, m_t, v_t, step_t)
        return loss
