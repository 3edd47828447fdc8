"""Linear layers: ``Identity`` and ``Linear``."""

from __future__ import annotations

import math
from typing import Any

from tapegrad.torch._creation import empty
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["Identity", "Linear"]


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:  # noqa: A002
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; ``weight`` is ``(out_features, in_features)``.

    Initialised as PyTorch does: ``kaiming_uniform_(weight, a=sqrt(5))``, which
    is U(-1/sqrt(in_features), 1/sqrt(in_features)), and the bias from the same
    uniform range. The draws come from ``torch.manual_seed``'s (NumPy) generator.

    Examples:
        >>> layer = nn.Linear(3, 2)
        >>> layer.weight.shape, layer(torch.ones(5, 3)).grad_fn
        (torch.Size([2, 3]), <AddmmBackward0 object at 0x...>)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
