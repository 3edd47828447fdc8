"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``.

Parameters and ``repr`` as PyTorch's: ``weight`` is ``(out, in/groups, *k)``
(transposed: ``(in, out/groups, *k)``), initialised with
``kaiming_uniform_(weight, a=sqrt(5))`` and the bias from
U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from ``torch.manual_seed``'s generator.

Examples:
    >>> nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, bias=False)
    Conv2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2, bias=False)
"""

from __future__ import annotations

import math
from typing import Any

from tapegrad.torch._creation import empty
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional_conv as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _tuple(v: Any, nd: int) -> tuple[int, ...]:
    return (v,) * nd if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None, output_padding: Any = 0) -> None:
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode != "zeros":
            raise NotImplementedError(f"tapegrad.torch: padding_mode={padding_mode!r} is not supported")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, nd)
        self.stride = _tuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd)
        self.dilation = _tuple(dilation, nd)
        self.transposed = self._transposed
        self.output_padding = _tuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C, L)`` inputs (see ``functional.conv1d``)."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C, H, W)`` inputs (see ``functional.conv2d``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if isinstance(padding, str):
            raise ValueError(f'padding="{padding}" is not supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:  # noqa: A002
        op = self.output_padding
        if output_size is not None:
            nd = self._nd
            want = tuple(output_size)[-nd:]
            op = tuple(w - ((n - 1) * s - 2 * p + d * (k - 1) + 1) for w, n, s, p, d, k in zip(
                want, input.shape[-nd:], self.stride, self.padding, self.dilation, self.kernel_size))
        fn = F.conv_transpose1d if self._nd == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The transpose of ``Conv1d`` (see ``functional.conv_transpose1d``)."""

    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The transpose of ``Conv2d`` (see ``functional.conv_transpose2d``)."""
