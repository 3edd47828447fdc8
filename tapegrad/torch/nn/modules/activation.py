"""Activation modules: elementwise nonlinearities (``ReLU``, ``GELU`` ...) and ``Softmax``/``LogSoftmax``."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn.modules.module import Module

__all__ = [
    "ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSoftmax", "Mish", "ReLU", "SiLU", "Sigmoid", "Softmax",
    "Softplus", "Tanh",
]


class _Activation(Module):
    """An elementwise ``nn.functional`` activation ``_fn``, called with the
    attributes named in ``_params`` and the ``inplace`` flag; its ``repr``
    lists them (``inplace`` only when set), as PyTorch's."""

    _fn: Callable[..., Tensor]
    _params: tuple[str, ...] = ()

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self)._fn(input, *[getattr(self, n) for n in self._params], inplace=self.inplace)

    def extra_repr(self) -> str:
        return ", ".join([f"{n}={getattr(self, n)}" for n in self._params] + ["inplace=True"] * self.inplace)


class ReLU(_Activation):
    """``max(x, 0)`` elementwise."""

    _fn = F.relu


class SiLU(_Activation):
    """``x * sigmoid(x)`` elementwise."""

    _fn = F.silu


class Mish(_Activation):
    """``x * tanh(softplus(x))`` elementwise."""

    _fn = F.mish


class ELU(_Activation):
    """``x`` where positive, else ``alpha (exp(x) - 1)``."""

    _fn = F.elu
    _params = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha


class LeakyReLU(_Activation):
    """``x`` where positive, else ``negative_slope * x``."""

    _fn = F.leaky_relu
    _params = ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope


class Hardtanh(_Activation):
    """``x`` clamped to ``[min_val, max_val]``."""

    _fn = F.hardtanh
    _params = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__(inplace)
        for name, given in (("min", min_value), ("max", max_value)):
            if given is not None:  # PyTorch's deprecated spellings
                warnings.warn(f"keyword argument `{name}_value` is deprecated and rename to `{name}_val`",
                              FutureWarning, stacklevel=2)
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        if self.max_val <= self.min_val:
            raise AssertionError  # (PyTorch asserts it)


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'``: its tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.sigmoid()


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.log_softmax(input, self.dim)
