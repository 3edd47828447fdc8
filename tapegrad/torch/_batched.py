"""The facade's ops meeting values batched by ``vmap`` (``torch.func.vmap``).

Inside ``vmap`` a tensor's value is a batched value (see
``tapegrad.batching``): it reports the per-example shape and goes
through tapegrad's primitives like any value. Only the results an op builds
with NumPy directly, as plain arrays with no gradient (comparisons, indices),
need care: ``_const`` keeps those batched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.batching import BatchTrace
from tapegrad.core.traced import Traced, value
from tapegrad.torch._tensor_base import Tensor, _new


def _const(r: Any, dtype: Any = None) -> Tensor:
    """A tensor of a result with no gradient (a comparison, indices): a plain
    array, or, inside ``vmap``, the batched value itself (cast to ``dtype``)."""
    if type(r) is Traced or hasattr(r, "__cuda_array_interface__"):  # (batched, or a device array: kept)
        return _new(r if dtype is None or r.dtype == dtype else r.astype(dtype))  # type: ignore[attr-defined]
    return _new(np.asarray(r, dtype))


def batched_repr(v: Traced) -> str:
    """PyTorch's print of a tensor inside ``vmap``: ``BatchedTensor(lvl=1,
    bdim=0, value=...)`` around the whole batch (nested ``vmap``: nested)."""
    inner = value(v._array)
    text = batched_repr(inner) if type(inner) is Traced else repr(_new(inner))
    body = "\n".join("    " + line for line in text.split("\n"))
    return f"BatchedTensor(lvl={v._level.level}, bdim=0, value=\n{body}\n)"


def check_inplace(v: Any, new: Any) -> None:
    """An in-place op inside ``vmap`` cannot write per-example values into a
    tensor that is the same for every example (PyTorch's error): ``new``, the
    op's result, is batched on a level that ``v``, the tensor's value, is not."""
    tape = new._level
    if type(tape) is BatchTrace and not (type(v) is Traced and v._level is tape):
        raise RuntimeError(INPLACE_UNBATCHED)


INPLACE_UNBATCHED = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in "
    "extra_args that has more elements than `self`. This happened due to `other` being vmapped over but "
    "`self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of inplace "
    "arithmetic. If said operator is being called inside the PyTorch framework, please file a bug report "
    "instead.")


ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
        "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
        "inside PyTorch internals, please file a bug report.")
CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We "
                "don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")
