"""``ravel_pytree``: a pytree of arrays as one flat vector, and back (as
``jax.flatten_util.ravel_pytree``).

Both directions are written with ``tapegrad.numpy`` operations
(``ravel``, ``concatenate``, slicing, ``reshape``, ``astype``), so they work
on traced values: they differentiate (in either direction), and run under
``vmap`` and ``jit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.pytree import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def _shape_dtype(x: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), np.dtype(x.dtype)
    a = np.asarray(x)  # a Python scalar
    return a.shape, a.dtype


def ravel_pytree(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten a pytree of arrays into one 1-D array.

    Returns ``(flat, unravel)``: ``flat`` holds every leaf raveled, in the
    order of ``tapegrad.tree_flatten``, concatenated; its dtype is the
    result type of the leaves' dtypes (float64 when there are no leaves).
    ``unravel(flat)`` rebuilds a pytree of the same structure, each leaf with
    its original shape and dtype (a 1-D array of the wrong length raises
    ``ValueError``).

    Examples:
        >>> flat, unravel = tg.ravel_pytree({"w": np.ones((2, 2)), "b": np.zeros(3)})
        >>> flat.shape
        (7,)
        >>> unravel(flat)["w"].shape
        (2, 2)
    """
    import tapegrad.numpy as tnp

    leaves, treedef = tree_flatten(tree)
    metas = [_shape_dtype(x) for x in leaves]
    dtype = np.result_type(*[dt for _, dt in metas]) if metas else np.dtype(np.float64)
    sizes = [math.prod(s) for s, _ in metas]
    total = sum(sizes)
    if leaves:
        parts = [tnp.ravel(tnp.asarray(x)) for x in leaves]
        parts = [p if p.dtype == dtype else tnp.astype(p, dtype) for p in parts]
        flat = parts[0] if len(parts) == 1 else tnp.concatenate(parts)
    else:
        flat = np.zeros(0, dtype)

    def unravel(flat: Any) -> Any:
        shape = tuple(np.shape(flat)) if not hasattr(flat, "shape") else tuple(flat.shape)
        if shape != (total,):
            raise ValueError(f"ravel_pytree's unravel: expected a 1-D array of {total} elements, "
                             f"got shape {shape}")
        out = []
        start = 0
        for (s, dt), n in zip(metas, sizes):
            piece = tnp.reshape(flat[start:start + n], s)
            if piece.dtype != dt:
                piece = tnp.astype(piece, dt)
            out.append(piece)
            start += n
        return tree_unflatten(treedef, out)

    return flat, unravel
