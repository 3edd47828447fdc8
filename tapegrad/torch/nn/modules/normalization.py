"""Normalisation modules: ``LayerNorm``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tapegrad.torch._creation import empty
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims (mean 0, variance 1,
    ``eps`` added to the variance), then scale by ``weight`` (ones) and shift by
    ``bias`` (zeros) when ``elementwise_affine``."""

    def __init__(self, normalized_shape: int | Iterable[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(empty(shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")
