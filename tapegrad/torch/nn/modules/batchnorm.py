"""Batch normalisation: ``BatchNorm1d``, ``BatchNorm2d``."""

from __future__ import annotations

from typing import Any

from tapegrad.torch._creation import empty, ones, tensor, zeros
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d"]  # (_NormBase: also the base of InstanceNorm*)


def _affine(m: Module, shape: tuple[int, ...], on: bool, bias: bool, dtype: Any, device: Any) -> None:
    """Register ``m.weight`` and ``m.bias`` of ``shape`` (``bias`` False: no bias;
    ``on`` False: neither, both None) and initialise them (ones, zeros)."""
    if on:
        m.weight = Parameter(empty(shape, dtype=dtype, device=device))
        if bias:
            m.bias = Parameter(empty(shape, dtype=dtype, device=device))
        else:
            m.register_parameter("bias", None)
    else:
        m.register_parameter("weight", None)
        m.register_parameter("bias", None)
    _reset_affine(m)


def _reset_affine(m: Module) -> None:
    if m.weight is not None:
        init.ones_(m.weight)
    if m.bias is not None:
        init.zeros_(m.bias)


class _NormBase(Module):
    """The parameters and buffers that batch and instance normalisation share:
    ``weight`` (ones) and ``bias`` (zeros) when ``affine`` (``bias=False``: no
    ``bias``), ``running_mean`` (zeros), ``running_var`` (ones) and
    ``num_batches_tracked`` when ``track_running_stats``."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine(self, (num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Per-channel (axis 1) normalisation by the batch statistics in training
    mode, by the running statistics (``running_mean``, ``running_var``, updated
    with ``momentum``; ``momentum=None``: a cumulative average) in ``eval()``
    mode, then an affine map (``weight`` ones, ``bias`` zeros)."""

    _dims: tuple[int, ...] = ()

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002
        if input.dim() not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of a ``(N, C)`` or ``(N, C, L)`` input."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of a ``(N, C, H, W)`` input."""

    _dims = (4,)
