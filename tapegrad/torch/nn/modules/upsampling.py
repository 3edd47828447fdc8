"""Resampling layers over ``F.interpolate``, ``F.pixel_shuffle`` and ``F.pad``:
``Upsample`` (and ``UpsamplingNearest2d``, ``UpsamplingBilinear2d``),
``PixelShuffle``, ``PixelUnshuffle`` and the padding layers
(``ZeroPad1d/2d``, ``ConstantPad1d/2d``, ``ReflectionPad1d/2d``,
``ReplicationPad1d/2d``, ``CircularPad1d/2d``)."""

from __future__ import annotations

from typing import Any

from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn.modules.module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "PixelShuffle", "PixelUnshuffle",
           "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "Upsample",
           "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d"]


class Upsample(Module):
    """``F.interpolate(input, size or scale_factor, mode, align_corners)``.

    Examples:
        >>> nn.Upsample(scale_factor=2, mode="bilinear")(torch.zeros(1, 3, 4, 4)).shape
        torch.Size([1, 3, 8, 8])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode="bilinear", align_corners=True)``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """``F.pixel_shuffle(input, upscale_factor)``: ``(*, C r^2, H, W)`` to ``(*, C, H r, W r)``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``F.pixel_unshuffle(input, downscale_factor)``, the inverse of ``PixelShuffle``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class _PadNd(Module):
    """``F.pad(input, padding, mode)``; an int pads every side of the last ``_dims`` dimensions."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self._dims) if isinstance(padding, int) else tuple(padding)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with ``value``."""


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with ``value``."""

    _dims = 2


class ZeroPad1d(ConstantPad1d):
    """Pad the last dimension with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dimensions with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dimension with its reflection (the edge not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dimensions with their reflection."""

    _mode = "reflect"
    _dims = 2


class ReplicationPad1d(_PadNd):
    """Pad the last dimension by repeating its edge values."""

    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dimensions by repeating their edge values."""

    _mode = "replicate"
    _dims = 2


class CircularPad1d(_PadNd):
    """Pad the last dimension by wrapping around."""

    _mode = "circular"


class CircularPad2d(_PadNd):
    """Pad the last two dimensions by wrapping around."""

    _mode = "circular"
    _dims = 2
