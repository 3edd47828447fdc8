"""``torch.autograd``: backward, grad, Function, functional, gradcheck."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.autograd import anomaly_mode, forward_ad, functional, graph
from tapegrad.torch.autograd._engine import backward, grad
from tapegrad.torch.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from tapegrad.torch.autograd.function import Function, FunctionCtx
from tapegrad.torch.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from tapegrad.torch.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "Variable", "anomaly_mode", "backward", "detect_anomaly",
    "enable_grad",
    "forward_ad", "functional", "graph", "grad", "gradcheck", "gradgradcheck", "is_grad_enabled", "no_grad",
    "set_detect_anomaly", "set_grad_enabled",
]

Variable = Tensor




def _unused(_: Sequence[Any]) -> None:
    pass

__getattr__ = missing_names(__name__, "torch.autograd")
