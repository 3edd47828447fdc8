"""The facade's ops meeting values batched by ``vmap`` (``torch.func.vmap``).

Inside ``vmap`` a tensor's value is a batched value (see
:mod:`tapegrad.batching`): it reports the per-example shape and goes
through tapegrad's primitives like any value. Only the results an op builds
with NumPy directly, as plain arrays with no gradient (comparisons, indices),
need care: :func:`_const` keeps those batched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.torch._tensor import Tensor, _new
from tapegrad.tracer import Traced, value


def _const(r: Any, dtype: Any = None) -> Tensor:
    """A tensor of a result with no gradient (a comparison, indices): a plain
    array, or, inside ``vmap``, the batched value itself (cast to ``dtype``)."""
    if type(r) is Traced:
        return _new(r if dtype is None or r.dtype == dtype else r.astype(dtype))  # type: ignore[attr-defined]
    return _new(np.asarray(r, dtype))


def batched_repr(v: Traced) -> str:
    """PyTorch's print of a tensor inside ``vmap``: ``BatchedTensor(lvl=1,
    bdim=0, value=...)`` around the whole batch (nested ``vmap``: nested)."""
    inner = value(v._node)
    text = batched_repr(inner) if type(inner) is Traced else repr(_new(inner))
    body = "\n".join("    " + line for line in text.split("\n"))
    return f"BatchedTensor(lvl={v._tape.level}, bdim=0, value=\n{body}\n)"
