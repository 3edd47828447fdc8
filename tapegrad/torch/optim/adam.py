"""``torch.optim.Adam``: Adam with PyTorch's bias correction, L2 weight decay
(``decoupled_weight_decay=True``: AdamW's) and optional AMSGrad."""

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
    new_state,
    updated,
)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015), step for step as ``torch.optim.Adam``.

    For each parameter ``p`` with gradient ``g``, at step ``t`` (from 1):

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

    Examples:
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        check_nonnegative(weight_decay=weight_decay)
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
        for group in self.param_groups:
            if not self._step_flat(group):
                self._step_each(group)
        return loss

    def _step_each(self, group: dict[str, Any]) -> None:
        """The update, parameter by parameter (PyTorch's single-tensor code)."""
        states = self.state
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        maximize, decoupled = group["maximize"], group["decoupled_weight_decay"]
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
            xp = np if type(w) is np.ndarray else array_module(w)
            if maximize:
                g = -g
            if weight_decay != 0:
                if decoupled:
                    w *= 1 - lr * weight_decay
                else:
                    g = g + weight_decay * w
            vmax = buffer(state["max_exp_avg_sq"]) if amsgrad else None
            d = _update(xp, g, buffer(m_t), buffer(v_t), vmax, float(step_arr), lr, beta1, beta2, eps)
            w += d
            updated(p, m_t, v_t, step_t)

    def _step_flat(self, group: dict[str, Any]) -> bool:
        """The update of a whole group at once, on flat buffers that the
        parameters' ``exp_avg`` and ``exp_avg_sq`` states are views of: the
        same arithmetic element by element (PyTorch's foreach code), with a
        dozen array operations per group instead of per parameter. Applies
        when every parameter of the group has a plain NumPy gradient and they
        are at the same step (no ``amsgrad``, L2 weight decay or ``maximize``;
        ``foreach=False`` asks for the per-parameter update); else False."""
        params = group["params"]
        if (group["foreach"] is False or group["amsgrad"]
                or (group["weight_decay"] != 0 and not group["decoupled_weight_decay"])
                or group["maximize"] or len(params) < 2):
            return False
        grads = []
        for p in params:
            gt = p._grad
            if gt is None or type(gt._value) is not np.ndarray:
                return False
            grads.append(gt._value)
        states = [self.state[p] for p in params]
        flat = self._flat_buffers(group, params, states)
        if flat is None:
            return False
        m, v, gbuf, spans = flat
        if any(g.dtype != m.dtype for g in grads):
            return False
        np.concatenate([g.ravel() for g in grads], out=gbuf)
        step = 0.0
        for st in states:
            step_arr = st["step"]._value
            step_arr += 1
            step = float(step_arr)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        d = _update(np, gbuf, m, v, None, step, lr, beta1, beta2, eps)
        decay = 1 - lr * group["weight_decay"]
        for p, (a, b) in zip(params, spans):
            w = buffer(p)
            if decay != 1:  # AdamW's decoupled decay (it does not enter the moments)
                w *= decay
            w += d[a:b].reshape(w.shape)
        updated(*params, *[st[k] for st in states for k in ("exp_avg", "exp_avg_sq", "step")])
        return True

    def _flat_buffers(self, group: dict[str, Any], params: list[Any], states: list[dict[str, Any]]) -> Any:
        """``(m, v, g, spans)``: the flat buffers of ``group`` (made, or the
        states moved into them, when needed) and each parameter's span; None
        when the parameters are not NumPy arrays of one floating dtype, or
        their states are at different steps."""
        flats = self.__dict__.setdefault("_flats", {})
        flat = flats.get(id(group))
        if flat is not None and flat[0] == [id(p) for p in params]:
            m, v = flat[1], flat[2]
            for st in states:
                mt, vt = st.get("exp_avg"), st.get("exp_avg_sq")
                if mt is None or vt is None or mt._value.base is not m or vt._value.base is not v:
                    break
            else:
                steps = {float(st["step"]._value) for st in states}
                return flat[1:] if len(steps) == 1 else None
        ws = [value(p._value) for p in params]
        dt = ws[0].dtype
        if any(type(w) is not np.ndarray or w.dtype != dt for w in ws) or dt.kind != "f":
            return None
        if any(st for st in states) and (
                not all(st and "max_exp_avg_sq" not in st for st in states)
                or len({float(st["step"]._value) for st in states}) != 1):
            return None
        spans, at = [], 0
        for w in ws:
            spans.append((at, at + w.size))
            at += w.size
        m, v = np.zeros(at, dt), np.zeros(at, dt)
        for st, w, (a, b) in zip(states, ws, spans):
            if not st:
                st["step"] = _new(np.zeros((), np.float32))
                st["exp_avg"], st["exp_avg_sq"] = _new(m[a:b]), _new(v[a:b])
            else:  # adopt the state (after load_state_dict, or the per-parameter path)
                m[a:b] = value(st["exp_avg"]._value).ravel()
                v[a:b] = value(st["exp_avg_sq"]._value).ravel()
                st["exp_avg"]._value, st["exp_avg_sq"]._value = m[a:b], v[a:b]
            for k in ("exp_avg", "exp_avg_sq"):
                st[k]._value = st[k]._value.reshape(w.shape)
        flats[id(group)] = flat = ([id(p) for p in params], m, v, np.empty(at, dt), spans)
        return flat[1:]


def _update(xp: Any, g: Any, m: Any, v: Any, vmax: Any, step: float, lr: float, beta1: float,
            beta2: float, eps: float) -> Any:
    """Update the moments ``m`` and ``v`` (and their running maximum ``vmax``)
    in place with gradient ``g`` at ``step``; return the parameter's change.
    PyTorch's operations, in its order (so its rounding)."""
    # m.lerp_(g, 1 - beta1), with PyTorch's two formulas
    wt = 1 - beta1
    d = xp.subtract(g, m)
    if wt < 0.5:
        d *= wt
        m += d
    else:
        d *= 1 - wt
        xp.subtract(g, d, out=m)
    # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    v *= beta2
    xp.multiply(g, 1 - beta2, out=d)
    d *= g
    v += d
    if vmax is not None:
        xp.maximum(vmax, v, out=vmax)
        denom = xp.sqrt(vmax)
    else:
        denom = xp.sqrt(v)
    denom /= (1 - beta2**step) ** 0.5
    denom += eps
    # p.addcdiv_(m, denom, value=-step_size)
    xp.multiply(m, -lr / (1 - beta1**step), out=d)
    d /= denom
    return d
