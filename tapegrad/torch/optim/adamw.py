"""``torch.optim.AdamW``: Adam with decoupled weight decay, as PyTorch's
``AdamW`` is (``Adam(..., decoupled_weight_decay=True)``, weight decay 1e-2)."""

from __future__ import annotations

from typing import Any

from tapegrad.torch.optim.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW (Loshchilov and Hutter, 2019), step for step as ``torch.optim.AdamW``.

    The weight decay shrinks the parameter before the Adam update
    (``p = p * (1 - lr * weight_decay)``) instead of entering the gradient.

    Args:
        params: tensors or parameter groups (dicts).
        lr: learning rate (default 1e-3).
        betas: ``(beta1, beta2)`` (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: decoupled weight decay coefficient (default 1e-2).
        amsgrad: use the running maximum of the second moment (default False).

    Examples:
        >>> opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    """

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
