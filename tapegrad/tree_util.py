"""``tapegrad.tree_util``: the pytree functions under ``jax.tree_util``'s
names, so that ``from jax import tree_util`` ports as ``from tapegrad import
tree_util``. They live in ``tapegrad.pytree`` (and are also ``tg.<name>``)."""

from tapegrad.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    SequenceKey,
    TreeDef,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_static,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)

PyTreeDef = TreeDef  # (jax.tree_util's name for the structure)

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "PyTreeDef",
    "SequenceKey",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_static",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
]
