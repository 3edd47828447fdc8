"""``nn.Parameter``: a leaf tensor that a ``Module`` registers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.core.traced import value
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new


class Parameter(Tensor):
    """A tensor that is a module parameter: a leaf with ``requires_grad=True``.

    Assigning one to a module attribute registers it (``module.parameters()``).
    It shares memory with ``data``; results of operations on it are plain tensors.

    Examples:
        >>> nn.Parameter(torch.ones(2))
        Parameter containing:
        tensor([1., 1.], requires_grad=True)
    """

    _torch_name = "torch.nn.parameter.Parameter"

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            arr = np.zeros((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            arr = value(data._value)
        else:
            arr = np.asarray(data)
        p = _new(arr, cls)
        if requires_grad:
            p.requires_grad_(True)
        return p  # type: ignore[return-value]

    def __repr__(self) -> str:  # type: ignore[override]
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__  # type: ignore[assignment]  # narrower than Tensor.__repr__, as overridden above

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild_parameter, (np.array(value(self._value)), self.requires_grad))


def _rebuild_parameter(arr: Any, requires_grad: bool) -> Parameter:
    return Parameter(arr, requires_grad)
