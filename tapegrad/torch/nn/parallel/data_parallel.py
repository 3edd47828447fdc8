"""``DataParallel`` on a machine without accelerators: a pass-through wrapper.

PyTorch's ``nn.DataParallel`` splits a batch over the GPUs of one process;
with no GPU it keeps ``module`` and calls it unchanged (``device_ids`` is
empty). The facade runs on NumPy, so it always behaves as PyTorch does
without GPUs: code written for ``DataParallel`` runs, and checkpoints keep
PyTorch's ``"module."`` key prefix.
"""

from __future__ import annotations

from typing import Any

from tapegrad.torch.nn.modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Wraps ``module``; calling the wrapper calls ``module`` (PyTorch's
    ``DataParallel`` when no GPU is available).

    ``.module`` is the wrapped model, ``state_dict()`` keys carry the
    ``"module."`` prefix, ``device_ids`` is ``[]``.

    Examples:
        >>> model = nn.DataParallel(nn.Linear(3, 2))
        >>> sorted(model.state_dict())
        ['module.bias', 'module.weight']
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """``module(*inputs, **kwargs)``."""
        return self.module(*inputs, **kwargs)
