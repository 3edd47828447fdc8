"""Pytrees: nested containers of arrays, flattened to a list of leaves and a
structure, and built again (the names and semantics of ``jax.tree_util``).

The containers are tuples, lists, dicts (keys visited in sorted order),
namedtuples, ``collections.OrderedDict`` (insertion order) and
``collections.defaultdict``, ``None`` (an empty subtree, as in JAX), and the
classes registered with ``register_pytree_node``,
``register_pytree_node_class``, ``register_pytree_with_keys`` or
``register_dataclass``; everything else is a leaf.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar, overload

import numpy as np

from tapegrad.core.traced import Traced

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "SequenceKey",
    "TreeDef",
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

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
IsLeaf = Callable[[Any], bool] | None


class TreeDef(NamedTuple):
    """The structure of a pytree (what ``tree_flatten`` returns beside the leaves).

    ``kind`` is None for a leaf, ``type(None)`` for None, ``tuple``, ``list``
    or ``dict`` for those containers (``tuple`` for a namedtuple too), and the
    class for a registered node; ``meta`` holds the dict's keys, the
    namedtuple's class, or a registered node's auxiliary data. Two structures
    are equal when their kinds, metadata and children are.
    """

    kind: Any
    meta: Any
    children: tuple[TreeDef, ...]

    @property
    def num_leaves(self) -> int:
        """The number of leaves of a tree of this structure."""
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self) -> int:
        """The number of nodes (leaves, None and containers) of this structure."""
        return 1 + sum(c.num_nodes for c in self.children)

    @property
    def registered(self) -> bool:
        """Is the root a registered class (neither a leaf, None, nor a tuple, list or dict)?"""
        return self.kind not in _BUILTIN_KINDS

    def __repr__(self) -> str:
        return f"PyTreeDef({_treedef_str(self)})"

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """``tree_unflatten(self, leaves)``."""
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at the leaves of this structure (``tree``
        must have this structure as a prefix; ``ValueError`` otherwise)."""
        out: list[Any] = []
        _up_to(self, tree, out)
        return out


def _treedef_str(d: TreeDef) -> str:
    """``*`` for each leaf, the containers as JAX's ``PyTreeDef`` writes them."""
    if d.kind is None:
        return "*"
    if d.kind is type(None):
        return "None"
    kids = [_treedef_str(c) for c in d.children]
    if d.kind is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(d.meta, kids)) + "}"
    if d.kind is list:
        return "[" + ", ".join(kids) + "]"
    if d.kind is tuple and d.meta is None:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if d.kind is tuple:
        return f"CustomNode(namedtuple[{d.meta.__name__}], [{', '.join(kids)}])"
    return f"CustomNode({d.kind.__name__}[{d.meta!r}], [{', '.join(kids)}])"


_LEAF = TreeDef(None, None, ())
_NONE = TreeDef(type(None), None, ())
_BUILTIN_KINDS = frozenset([None, type(None), tuple, list, dict])


# Arrays, scalars and traced values: leaves whatever they hold, so flattening
# one (the common argument and output of a transform) skips the walk.
ARRAY_LEAF_TYPES = frozenset([np.ndarray, Traced, float, int, complex, bool, *np.sctypeDict.values()])


# --- keys ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key of an entry of a tuple or list (``str``: ``[0]``)."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a dict entry (``str``: ``['w']``)."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key of an attribute: a namedtuple's or a registered dataclass's field (``str``: ``.w``)."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key of the ``key``-th child of a node registered without keys (``str``: ``[<flat index 0>]``)."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyPath = tuple[Any, ...]


def _simple_str(k: Any) -> str:
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, (DictKey, FlattenedIndexKey)):
        return str(k.key)
    if isinstance(k, GetAttrKey):
        return k.name
    return str(k)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as a string: each key's ``str`` joined by ``separator``.

    With ``simple=True`` each key is written bare (``0``, ``w``, ``name``), as
    ``jax.tree_util.keystr`` does.

    Examples:
        >>> [tg.keystr(p) for p, _ in tg.tree_leaves_with_path({"w": [1.0, 2.0]})]
        ["['w'][0]", "['w'][1]"]
        >>> tg.keystr((tg.DictKey("w"), tg.SequenceKey(1)), simple=True, separator="/")
        'w/1'
    """
    return separator.join(map(_simple_str if simple else str, keys))


# --- the registry -------------------------------------------------------------------------------


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable[Any], Any]]
    unflatten: Callable[[Any, Iterable[Any]], Any]
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None


_REGISTRY: dict[type, _Node] = {}


def register_pytree_node(nodetype: type[T], flatten_func: Callable[[T], tuple[Iterable[Any], Any]],
                         unflatten_func: Callable[[Any, Iterable[Any]], T],
                         flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]] | None = None,
                         ) -> None:
    """Make instances of ``nodetype`` pytree nodes (as ``jax.tree_util.register_pytree_node``).

    ``flatten_func(x)`` returns ``(children, aux_data)``: an iterable of the
    children (pytrees themselves) and hashable data that the structure keeps
    (compared with ``==``, and part of ``jit``'s cache key);
    ``unflatten_func(aux_data, children)`` builds the instance again (children
    as a tuple). ``flatten_with_keys_func``, optional, returns
    ``((key, child), ...), aux_data`` for the key-path functions; without it the
    children's keys are ``FlattenedIndexKey(i)``. Every transform, ``jit``,
    ``tg.optimizers`` and ``ravel_pytree`` then take the class's instances
    apart into their leaves. Only the exact type is registered (not its
    subclasses); registering a type twice, or a built-in container, raises
    ``ValueError``.

    Examples:
        >>> class Affine:
        ...     def __init__(self, w, b):
        ...         self.w, self.b = w, b
        >>> tg.register_pytree_node(Affine, lambda a: ((a.w, a.b), None),
        ...                         lambda aux, children: Affine(*children))
        >>> g = tg.grad(lambda p, x: tnp.sum(p.w * x + p.b))(Affine(2.0, 1.0), 3.0)
        >>> (float(g.w), float(g.b))
        (3.0, 1.0)
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node: expected a type, got {nodetype!r}")
    if nodetype in _BUILTIN_KINDS or nodetype in _REGISTRY:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    if not callable(flatten_func) or not callable(unflatten_func):
        raise TypeError("register_pytree_node: flatten_func and unflatten_func must be callable")
    _REGISTRY[nodetype] = _Node(flatten_func, unflatten_func, flatten_with_keys_func)


def registered_node(cls: type) -> tuple[Callable[[Any], tuple[Iterable[Any], Any]],
                                         Callable[[Any, Iterable[Any]], Any]]:
    """``(flatten, unflatten)`` of a registered class (``KeyError`` if it is not one)."""
    node = _REGISTRY[cls]
    return node.flatten, node.unflatten


def register_pytree_with_keys(nodetype: type[T],
                              flatten_with_keys: Callable[[T], tuple[Iterable[tuple[Any, Any]], Any]],
                              unflatten_func: Callable[[Any, Iterable[Any]], T],
                              flatten_func: Callable[[T], tuple[Iterable[Any], Any]] | None = None) -> None:
    """``register_pytree_node`` for a class whose children have keys:
    ``flatten_with_keys(x)`` returns ``(((key, child), ...), aux_data)`` and the
    key-path functions use those keys (``flatten_func``, optional, skips the
    keys where they are not needed). As ``jax.tree_util.register_pytree_with_keys``.
    """
    if flatten_func is None:
        def flatten_func(x: T) -> tuple[Iterable[Any], Any]:
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Register a class that defines ``tree_flatten(self)`` (returning
    ``(children, aux_data)``) and the classmethod ``tree_unflatten(cls,
    aux_data, children)``; returns the class, so it is a decorator (as
    ``jax.tree_util.register_pytree_node_class``).

    Examples:
        >>> @tg.register_pytree_node_class
        ... class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        ...     def tree_flatten(self):
        ...         return (self.a, self.b), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children):
        ...         return cls(*children)
        >>> tg.tree_leaves(Pair(1.0, (2.0, 3.0)))
        [1.0, 2.0, 3.0]
    """
    with_keys = operator.methodcaller("tree_flatten_with_keys") if hasattr(cls, "tree_flatten_with_keys") else None
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten, with_keys)  # type: ignore[attr-defined]
    return cls


@overload
def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()) -> Typ: ...
@overload
def register_dataclass(nodetype: None = None, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Callable[[Typ], Typ]: ...


def register_dataclass(nodetype: Any = None, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()) -> Any:
    """Register a dataclass-like class as a pytree node, as
    ``jax.tree_util.register_dataclass``: its ``data_fields`` are children
    (arrays, or pytrees of them), its ``meta_fields`` are static (hashable;
    kept in the structure, so ``jit`` compiles once per value). Instances are
    built again with ``nodetype(**fields)``; the key paths are
    ``GetAttrKey(name)``.

    For a ``dataclasses.dataclass`` both lists may be omitted: the fields
    marked ``field(metadata=dict(static=True))`` are meta, the others data
    (those in ``drop_fields`` are left out). Given, the two lists must name
    every field of ``__init__`` but the dropped ones (``ValueError``
    otherwise). Returns the class, so it decorates; called with no class
    (``@tg.register_dataclass(meta_fields=...)``) it returns the decorator.

    Examples:
        >>> @tg.register_dataclass
        ... @dataclasses.dataclass
        ... class Linear:
        ...     w: np.ndarray
        ...     b: np.ndarray
        ...     act: str = dataclasses.field(default="tanh", metadata=dict(static=True))
        >>> tg.tree_leaves(Linear(np.ones(2), np.zeros(2)))
        [array([1., 1.]), array([0., 0.])]
    """
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields, meta_fields=meta_fields,
                                 drop_fields=drop_fields)
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be specified when "
                            f"either is specified. Got data_fields={data_fields!r} meta_fields={meta_fields!r}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when nodetype is "
                            f"not a dataclass. Got nodetype={nodetype!r}.")
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data = tuple(data_fields)
    meta = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if {*meta, *data} != init_fields:
            msg = "data_fields and meta_fields must include all dataclass fields with ``init=True`` and only them."
            if missing := init_fields - {*meta, *data}:
                msg += f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
            if unexpected := {*meta, *data} - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data) & set(meta):
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")

    def flatten(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta)

    def flatten_with_keys(x: Any) -> tuple[tuple[tuple[Any, Any], ...], tuple[Any, ...]]:
        return tuple((GetAttrKey(n), getattr(x, n)) for n in data), tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple[Any, ...], children: Iterable[Any]) -> Any:
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: Typ) -> Typ:
    """Register ``cls`` as a pytree with no leaves: its (hashable) instances
    are kept in the structure, so ``jit`` treats them as static without
    ``static_argnums``. Returns the class (a decorator), as
    ``jax.tree_util.register_static``."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
    return cls


register_pytree_with_keys(
    collections.OrderedDict,
    lambda x: (tuple((DictKey(k), v) for k, v in x.items()), tuple(x.keys())),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda x: (tuple(x.values()), tuple(x.keys())),
)
register_pytree_with_keys(
    collections.defaultdict,
    lambda d: (tuple((DictKey(k), d[k]) for k in sorted(d)), (d.default_factory, tuple(sorted(d)))),
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    lambda d: (tuple(d[k] for k in sorted(d)), (d.default_factory, tuple(sorted(d)))),
)


# --- flattening ---------------------------------------------------------------------------------


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _walk(x: Any, leaves: list[Any]) -> TreeDef:
    # a module-level recursion: a self-referencing closure would make a
    # reference cycle holding the leaves (and their tapes) until the GC ran
    t = type(x)
    if t in ARRAY_LEAF_TYPES:
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
    if t is tuple or t is list:
        return TreeDef(t, None, tuple([_walk(c, leaves) for c in x]))
    if t is dict:
        keys = sorted(x)
        return TreeDef(dict, tuple(keys), tuple([_walk(x[k], leaves) for k in keys]))
    node = _REGISTRY.get(t)
    if node is not None:
        children, aux = node.flatten(x)
        return TreeDef(t, aux, tuple([_walk(c, leaves) for c in children]))
    if _is_namedtuple(x):
        return TreeDef(tuple, t, tuple([_walk(c, leaves) for c in x]))
    leaves.append(x)
    return _LEAF


def _walk_is_leaf(x: Any, leaves: list[Any], is_leaf: Callable[[Any], bool]) -> TreeDef:
    """``_walk`` asking ``is_leaf`` first at every node."""
    if is_leaf(x):
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
    t = type(x)
    if t is tuple or t is list:
        return TreeDef(t, None, tuple([_walk_is_leaf(c, leaves, is_leaf) for c in x]))
    if t is dict:
        keys = sorted(x)
        return TreeDef(dict, tuple(keys), tuple([_walk_is_leaf(x[k], leaves, is_leaf) for k in keys]))
    node = _REGISTRY.get(t)
    if node is not None:
        children, aux = node.flatten(x)
        return TreeDef(t, aux, tuple([_walk_is_leaf(c, leaves, is_leaf) for c in children]))
    if _is_namedtuple(x):
        return TreeDef(tuple, t, tuple([_walk_is_leaf(c, leaves, is_leaf) for c in x]))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], TreeDef]:
    """Return ``(leaves, treedef)`` for a pytree.

    ``is_leaf``, if given, is called on every node (containers and None
    included) before it is taken apart: where it returns True the node is a
    leaf as it is.

    Examples:
        >>> leaves, treedef = tg.tree_flatten({"b": (1.0, None), "a": [2.0]})
        >>> leaves
        [2.0, 1.0]
        >>> tg.tree_flatten([(1, 2), (3, 4)], is_leaf=lambda x: type(x) is tuple)[0]
        [(1, 2), (3, 4)]
    """
    if is_leaf is None and type(tree) in ARRAY_LEAF_TYPES:
        return [tree], _LEAF
    leaves: list[Any] = []
    treedef = _walk(tree, leaves) if is_leaf is None else _walk_is_leaf(tree, leaves, is_leaf)
    return leaves, treedef


def tree_leaves(tree: Any, is_leaf: IsLeaf = None) -> list[Any]:
    """The leaves of a pytree, in ``tree_flatten``'s order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: IsLeaf = None) -> TreeDef:
    """The structure (``TreeDef``) of a pytree."""
    return tree_flatten(tree, is_leaf)[1]


def _build(d: TreeDef, it: Iterator[Any]) -> Any:
    if d.kind is None:
        return next(it)
    if d.kind is type(None):
        return None
    kids = [_build(c, it) for c in d.children]
    if d.kind is dict:
        return dict(zip(d.meta, kids))
    if d.kind is tuple:
        return tuple(kids) if d.meta is None else d.meta(*kids)
    if d.kind is list:
        return kids
    return _REGISTRY[d.kind].unflatten(d.meta, tuple(kids))


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild the pytree described by ``treedef`` from ``leaves`` (any
    iterable; registered nodes through their ``unflatten`` function, with
    their auxiliary data). ``ValueError`` when there are too few or too many
    leaves."""
    if type(leaves) is not list:
        leaves = list(leaves)
    if treedef is _LEAF and len(leaves) == 1:
        return leaves[0]
    it = iter(leaves)
    try:
        out = _build(treedef, it)
    except StopIteration:
        raise ValueError(f"Too few leaves for PyTreeDef; expected {treedef.num_leaves}, got {len(leaves)}.") from None
    if next(it, it) is not it:
        raise ValueError(f"Too many leaves for PyTreeDef; expected {treedef.num_leaves}, got {len(leaves)}.")
    return out


def _up_to(d: TreeDef, x: Any, out: list[Any]) -> None:
    if d.kind is None:
        out.append(x)
        return
    if d.kind is type(None):
        if x is not None:
            raise ValueError(f"Expected None, got {x!r}.")
        return
    t = type(x)
    if d.kind is dict:
        if t is not dict:
            raise ValueError(f"Expected dict, got {x!r}.")
        keys = sorted(x)
        if tuple(keys) != d.meta:
            raise ValueError(f"Dict key mismatch; expected keys: {list(d.meta)}; dict: {x!r}.")
        children: Sequence[Any] = [x[k] for k in keys]
    elif d.kind is tuple or d.kind is list:
        want = d.meta if d.meta is not None else d.kind
        if t is not want:
            raise ValueError(f"Expected {want.__name__}, got {x!r}.")
        children = x
    else:
        if t is not d.kind:
            raise ValueError(f"Expected {d.kind.__name__}, got {x!r}.")
        kids, aux = _REGISTRY[t].flatten(x)
        if aux != d.meta:
            raise ValueError(f"Mismatch custom node data: {aux!r} != {d.meta!r}; value: {x!r}.")
        children = list(kids)
    if len(children) != len(d.children):
        raise ValueError(f"{d.kind.__name__} arity mismatch; expected: {len(d.children)}, got: {len(children)}; "
                         f"tuple: {x!r}.")
    for c, cd in zip(children, d.children):
        _up_to(cd, c, out)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    """Apply ``f`` to every leaf of ``tree`` (and the matching parts of ``rest``).

    Each of ``rest`` has ``tree``'s structure, or ``tree``'s structure as a
    prefix: ``f`` gets its subtree at each of ``tree``'s leaves.

    Examples:
        >>> tg.tree_map(lambda x, y: x + y, {"a": 1.0, "b": (2.0, 3.0)}, {"a": 10.0, "b": (20.0, 30.0)})
        {'a': 11.0, 'b': (22.0, 33.0)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return tree_unflatten(treedef, [f(x) for x in leaves])
    others = [treedef.flatten_up_to(r) for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


_NO_INITIALIZER = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: IsLeaf = None) -> Any:
    """``functools.reduce`` over the leaves of ``tree`` (with ``initializer`` if given)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: IsLeaf = None) -> bool:
    """Are all the leaves of ``tree`` true?"""
    return all(tree_leaves(tree, is_leaf))


# --- key paths ----------------------------------------------------------------------------------


def _keyed_children(node: _Node, x: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """``([(key, child), ...], aux_data)`` of a registered node."""
    if node.flatten_with_keys is not None:
        pairs, aux = node.flatten_with_keys(x)
        return list(pairs), aux
    kids, aux = node.flatten(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(kids)], aux


def registered_children(prefix: Any, full: Any) -> list[tuple[Any, Any, Any]] | None:
    """``[(key, prefix child, full child), ...]`` when ``prefix`` and ``full``
    are instances of one registered class with equal auxiliary data and as
    many children; None otherwise. (How a prefix tree such as ``vmap``'s
    ``in_axes`` descends into a registered node.)"""
    t = type(full)
    node = _REGISTRY.get(t)
    if node is None or type(prefix) is not t:
        return None
    full_pairs, full_aux = _keyed_children(node, full)
    prefix_pairs, prefix_aux = _keyed_children(node, prefix)
    if len(full_pairs) != len(prefix_pairs) or not bool(full_aux == prefix_aux):
        return None
    return [(k, a, c) for (k, c), (_, a) in zip(full_pairs, prefix_pairs)]


def _walk_paths(x: Any, path: KeyPath, out: list[tuple[KeyPath, Any]], is_leaf: Any, takes_path: bool) -> TreeDef:
    """``_walk`` that also writes down each leaf's key path."""
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        out.append((path, x))
        return _LEAF
    if x is None:
        return _NONE
    t = type(x)
    if t is tuple or t is list:
        return TreeDef(t, None, tuple([_walk_paths(c, (*path, SequenceKey(i)), out, is_leaf, takes_path)
                                       for i, c in enumerate(x)]))
    if t is dict:
        keys = sorted(x)
        return TreeDef(dict, tuple(keys), tuple([_walk_paths(x[k], (*path, DictKey(k)), out, is_leaf, takes_path)
                                                 for k in keys]))
    node = _REGISTRY.get(t)
    if node is not None:
        pairs, aux = _keyed_children(node, x)
        return TreeDef(t, aux, tuple([_walk_paths(c, (*path, k), out, is_leaf, takes_path) for k, c in pairs]))
    if _is_namedtuple(x):
        return TreeDef(tuple, t, tuple([_walk_paths(c, (*path, GetAttrKey(name)), out, is_leaf, takes_path)
                                        for name, c in zip(t._fields, x)]))
    out.append((path, x))
    return _LEAF


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False) -> tuple[list[tuple[KeyPath, Any]], TreeDef]:
    """``tree_flatten`` with each leaf's key path: ``([(path, leaf), ...], treedef)``.

    A path is a tuple of keys: ``SequenceKey(i)`` into tuples and lists,
    ``DictKey(k)`` into dicts, ``GetAttrKey(name)`` into namedtuples and
    registered dataclasses, ``FlattenedIndexKey(i)`` into nodes registered
    without keys. ``is_leaf`` as in ``tree_flatten`` (called with
    ``(path, node)`` when ``is_leaf_takes_path``).

    Examples:
        >>> pairs, _ = tg.tree_flatten_with_path({"w": np.ones(2), "layers": [1.0]})
        >>> [(tg.keystr(p), x) for p, x in pairs]
        [("['layers'][0]", 1.0), ("['w']", array([1., 1.]))]
    """
    out: list[tuple[KeyPath, Any]] = []
    treedef = _walk_paths(tree, (), out, is_leaf, is_leaf_takes_path)
    return out, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """The ``(path, leaf)`` pairs of ``tree_flatten_with_path``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """``tree_map`` with each leaf's key path as ``f``'s first argument: ``f(path, x, *xs)``.

    Examples:
        >>> tg.tree_map_with_path(lambda p, x: tg.keystr(p), {"a": 1.0, "b": [2.0]})
        {'a': "['a']", 'b': ["['b'][0]"]}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


# --- transposing --------------------------------------------------------------------------------


def tree_transpose(outer_treedef: TreeDef, inner_treedef: TreeDef | None, pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure ``outer`` of trees of structure ``inner`` into
    a tree of structure ``inner`` of trees of structure ``outer`` (as
    ``jax.tree_util.tree_transpose``; ``inner_treedef=None`` infers it from
    the first outer leaf).

    Examples:
        >>> outer = tg.tree_structure([0, 0])
        >>> inner = tg.tree_structure({"a": 0, "b": 0})
        >>> tg.tree_transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
        {'a': [1, 3], 'b': [2, 4]}
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size = inner_treedef.num_leaves
    outer_size = outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef} of {inner_treedef}")
    rows = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, list(col)) for col in zip(*rows)])
