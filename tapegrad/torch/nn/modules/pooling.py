"""Pooling layers: ``MaxPool1d``, ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``.

The options are kept as given (``stride`` defaults to ``kernel_size``) and
printed as PyTorch prints them.

Examples:
    >>> nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
    MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)
"""

from __future__ import annotations

from typing import Any

from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional_conv as F
from tapegrad.torch.nn.modules.module import Module

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """The max over windows of the last dim (see ``functional.max_pool1d``)."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """The max over windows of the last two dims (see ``functional.max_pool2d``)."""

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool2d(Module):
    """The mean over windows of the last two dims (see ``functional.avg_pool2d``)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool2d(Module):
    """The mean over adaptive windows giving ``output_size`` (see ``functional.adaptive_avg_pool2d``)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)
