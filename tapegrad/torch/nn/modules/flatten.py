"""``Flatten`` and ``Unflatten``: reshape one range of dimensions."""

from __future__ import annotations

from typing import Any

from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn.modules.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """``input.flatten(start_dim, end_dim)``; by default all but the batch dimension.

    Examples:
        >>> nn.Flatten()(torch.zeros(32, 1, 5, 5)).shape
        torch.Size([32, 25])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """``input.unflatten(dim, unflattened_size)``: split dimension ``dim`` into ``unflattened_size``.

    Examples:
        >>> nn.Unflatten(1, (2, 5, 5))(torch.zeros(2, 50)).shape
        torch.Size([2, 2, 5, 5])
    """

    def __init__(self, dim: int | str, unflattened_size: Any) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("tapegrad.torch does not provide named tensors (Unflatten with a str dim)")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, s in enumerate(unflattened_size):
            if not isinstance(s, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(s).__name__} at pos {i}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
