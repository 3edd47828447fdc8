"""Flatten and unflatten nested containers (tuple, list, dict, namedtuple, None).

``None`` is an empty subtree, as in JAX; every other non-container is a leaf.
Dict keys are visited in sorted order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from tapegrad.core.traced import Traced


class TreeDef(NamedTuple):
    kind: Any  # None for a leaf, type(None) for None, else the container type
    meta: Any  # dict keys, or the namedtuple class
    children: tuple[TreeDef, ...]

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)


_LEAF = TreeDef(None, None, ())
_NONE = TreeDef(type(None), None, ())


# Arrays, scalars and traced values: leaves whatever they hold, so flattening
# one (the common argument and output of a transform) skips the walk.
ARRAY_LEAF_TYPES = frozenset([np.ndarray, Traced, float, int, complex, bool, *np.sctypeDict.values()])


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _walk(x: Any, leaves: list[Any]) -> TreeDef:
    # a module-level recursion: a self-referencing closure would make a
    # reference cycle holding the leaves (and their tapes) until the GC ran
    if x is None:
        return _NONE
    t = type(x)
    if t is tuple or t is list:
        return TreeDef(t, None, tuple([_walk(c, leaves) for c in x]))
    if t is dict:
        keys = sorted(x)
        return TreeDef(dict, tuple(keys), tuple([_walk(x[k], leaves) for k in keys]))
    if _is_namedtuple(x):
        return TreeDef(tuple, t, tuple([_walk(c, leaves) for c in x]))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    """Return ``(leaves, treedef)`` for a pytree."""
    if type(tree) in ARRAY_LEAF_TYPES:
        return [tree], _LEAF
    leaves: list[Any] = []
    treedef = _walk(tree, leaves)
    return leaves, treedef


def _build(d: TreeDef, it: Iterator[Any]) -> Any:
    if d.kind is None:
        return next(it)
    if d.kind is type(None):
        return None
    kids = [_build(c, it) for c in d.children]
    if d.kind is dict:
        return dict(zip(d.meta, kids))
    if d.meta is not None:  # namedtuple
        return d.meta(*kids)
    return d.kind(kids)


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Rebuild the pytree described by ``treedef`` from ``leaves``."""
    if treedef is _LEAF:
        return leaves[0]
    return _build(treedef, iter(leaves))


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """Apply ``f`` to every leaf of ``tree`` (and the matching leaves of ``rest``)."""
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
