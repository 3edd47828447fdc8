"""Primitives the facade needs that tapegrad.numpy lacks (candidates for the table).

- ``sigmoid``: for numerical stability (``1 / (1 + exp(-x))`` overflows for
  large negative x); its rule reuses the answer, as ``expit`` would.
- ``to_device``: moves an array between NumPy and CuPy; the rule moves the
  cotangent back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.backend import array_module, device_of
from tapegrad.primitive import defvjp, primitive


def _sigmoid(x: Any) -> Any:
    xp = array_module(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid = primitive(_sigmoid, "sigmoid")
defvjp(sigmoid, lambda ans, x: lambda g: g * (ans * (1 - ans)))


def _to_device(x: Any, device: str) -> Any:
    if device == "cuda":
        import cupy

        return cupy.asarray(x)
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


to_device = primitive(_to_device, "to_device")
defvjp(to_device, lambda ans, x, device: (lambda dev: lambda g: to_device(g, dev))(device_of(x)))
