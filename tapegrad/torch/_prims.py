"""Primitives the facade needs that tapegrad.numpy lacks.

- ``sigmoid`` is ``tapegrad.scipy.special.expit`` (a primitive for numerical
  stability whose rule reuses the answer).
- ``relu``: ``maximum(x, 0)`` with the rule ``g * (ans > 0)``, for speed: as
  ``where`` it costs several times more, and as ``maximum`` its rule would
  split ties at 0.
- ``to_device``: moves an array between NumPy and CuPy; the rule moves the
  cotangent back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.backend import array_module, device_of
from tapegrad.primitive import defjvp, defvjp, primitive
from tapegrad.scipy.special import expit as sigmoid
from tapegrad.tracer import value

__all__ = ["relu", "sigmoid", "to_device"]


def _relu(x: Any) -> Any:
    return array_module(x).maximum(x, x.dtype.type(0))


relu = primitive(_relu, "relu")
defvjp(relu, lambda ans, x: lambda g: g * (value(ans) > 0))
defjvp(relu, lambda ans, x: lambda t: t * (value(ans) > 0))


def _to_device(x: Any, device: str) -> Any:
    if device == "cuda":
        import cupy

        return cupy.asarray(x)
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


to_device = primitive(_to_device, "to_device")
defvjp(to_device, lambda ans, x, device: (lambda dev: lambda g: to_device(g, dev))(device_of(x)))
