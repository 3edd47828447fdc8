"""Batching rules of tapegrad.numpy's primitives (see ``tapegrad.batching``).

Each rule takes the primitive's arguments with every batched one as its
array, batch on axis 0, and runs the whole batch in one call of primitives
(so tapes below the vmap level record it): elementwise primitives broadcast,
reductions and shape primitives shift their axes by one, products get the
batch as a leading stack axis, and the primitives that already take leading
batch axes (``getitem``, ``index_add``, ``sum_to``) are told one more. An
index computed per example (``logp[y]``, ``x[idx]``, ``x[mask]``) gets the
batch as one more integer array, an arange over it: one gather or scatter.
No rule loops over the batch; a rule returns None (the generic loop) only
where each example's result has a shape of its own to find (a 0-d boolean
index, a boolean mask batched on two vmap levels) or for a ``roll`` whose
shift differs per example.
"""

from __future__ import annotations

import inspect
import string
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.batching import (
    defbatch,
    elementwise_rule,
    move_to_front,
    shift_axis,
)
from tapegrad.numpy import wrap as w
from tapegrad.primitive import broadcast_to

Args = Sequence[Any]


def _bound(fn: Callable[..., Any], args: Args, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The first argument and the rest as keywords (positional ones named)."""
    names = list(inspect.signature(fn).parameters)
    kw = dict(kwargs)
    for name, a in zip(names[1:], args[1:]):
        kw[name] = a
    return args[0], kw


def batch_all(x: Any, batched: bool, size: int) -> Any:
    """``x`` with a batch axis (broadcast along it when ``x`` is not batched)."""
    if batched:
        return x
    return broadcast_to(x, (size,) + tuple(np.shape(x)))


# --- reductions and scans along ``axis`` -----------------------------------------------------


# --- shape ---------------------------------------------------------------------------------


def _transpose_rule(args: Args, batched: Sequence[bool], size: int, axes: Any = None) -> Any:
    x = args[0]
    axes = args[1] if len(args) > 1 else axes
    nd = x.ndim - 1
    axes = tuple(range(nd))[::-1] if axes is None else tuple(shift_axis(a, nd) - 1 for a in axes)
    return w.transpose(x, (0,) + tuple(a + 1 for a in axes))


# --- indexing ------------------------------------------------------------------------------
# A plain index: getitem and index_add take leading batch axes already (they are told one
# more); setitem gets the batch as a leading slice, or as one more integer array beside the
# index's own. Entries batched on this level (a per-example label ``logp[y]``, per-example
# positions ``x[idx]``, masks): the batch becomes an integer array too, an arange over it,
# broadcast against the entries' arrays (batch first): ONE gather or scatter for the batch.


# --- products ------------------------------------------------------------------------------
def _matmul_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """Vectors made matrices, the batch as the leading stack axis, one matmul."""
    a, b = args
    ba, bb = batched
    ka = a.ndim - ba
    kb = b.ndim - bb
    if ka == 0 or kb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ka == 1:
        a = w.reshape_c(a, tuple(a.shape[:-1]) + (1, a.shape[-1]))
    if kb == 1:
        b = w.reshape_c(b, tuple(b.shape) + (1,))
    r = max(max(ka, 2), max(kb, 2)) - 2  # stack rank of the per-example product
    if ba:
        a = move_to_front(a, r + 2)
    if bb:
        b = move_to_front(b, r + 2)
    out = w.matmul(a, b, **kwargs)
    if ka == 1 and kb == 1:
        return w.reshape_c(out, (size,) + tuple(out.shape[1:-2]))
    if ka == 1:
        return w.reshape_c(out, tuple(out.shape[:-2]) + (out.shape[-1],))
    if kb == 1:
        return w.reshape_c(out, tuple(out.shape[:-1]))
    return out


defbatch(w.matmul, _matmul_rule)


def _linear_rule(args: Args, batched: Sequence[bool], size: int) -> Any:
    x, wt, b = args
    if not (batched[1] or batched[2]):
        return w.linear(x, wt, b)  # x @ w.T + b takes any leading axes of x
    # stacked weights (an ensemble): the product and the sum, each batched
    wt_t = _transpose_rule([wt], [True], size) if batched[1] else w.transpose(wt)
    out = _matmul_rule([x, wt_t], [batched[0], batched[1]], size)
    return elementwise_rule(w.add)([out, b], [True, batched[2]], size)


defbatch(w.linear, _linear_rule)


def _einsum_rule(args: Args, batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
    """A new label for the batch, on the batched operands and the output."""
    spec = args[0].replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if not arrow:  # the implicit output: labels used once, sorted, after the ellipsis
        labels = [c for c in ins if c.isalpha()]
        out = ("..." if "..." in ins else "") + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    free = [c for c in string.ascii_letters if c not in spec]
    label = free[0]
    terms = [label + t if b else t for t, b in zip(terms, batched[1:])]
    return w.einsum_args(",".join(terms) + "->" + label + out, *args[1:], **kwargs)


defbatch(w.einsum_args, _einsum_rule)

