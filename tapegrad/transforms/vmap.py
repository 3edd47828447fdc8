"""``vmap``: a function mapped over an axis of its inputs, as ``jax.vmap``.

The call pushes a ``BatchTrace`` level, hands ``f``
batched values (batch on axis 0 of their arrays) and reads the batch back
out of the results. Primitives meet those values in the engine's general
path, which runs their batching rules: ``f`` runs once, on whole batches.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.batching import BatchTrace
from tapegrad.core.traced import Traced
from tapegrad.pytree import TreeDef, registered_children, tree_flatten, tree_unflatten
from tapegrad.transforms._util import fun_name, refuse_matrix

Axes = Any  # an int, None, or a pytree prefix of them


def vmap(f: Callable[..., Any], in_axes: Axes = 0, out_axes: Axes = 0) -> Callable[..., Any]:
    """Return ``f`` mapped over an axis of its inputs (``jax.vmap``'s semantics).

    ``in_axes`` says which axis of each positional argument is mapped: an int
    (negative counts from the end), None (not mapped: the same value for every
    example), or a pytree prefix of the arguments (a tuple with one entry per
    argument, a dict for a dict argument, ...). Keyword arguments are mapped
    over axis 0. ``out_axes`` says where the mapped axis goes in each output
    (None: the output must not depend on the mapped inputs). Every tapegrad
    operation runs once on the whole batch; ``vmap`` nests and composes with
    ``grad``, ``jacrev``, ``jvp`` and the other transforms, in either order.

    Returns:
        The mapped function; its outputs have ``f``'s structure, each with the
        mapped axis at its ``out_axes`` position.

    Raises:
        ValueError: mapped axes of different sizes, an ``in_axes`` that does
            not match the arguments, an axis out of range.

    Examples:
        >>> per_example_grads = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))(w, X, Y)
    """
    name = fun_name(f)
    for what, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
        _check_axes_spec(spec, f"vmap({name})", what)

    @functools.wraps(f)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        who = f"vmap({name})"
        trace, out_leaves, out_def = _run(f, args, kwargs, in_axes, who)
        oaxes = _leaf_axes(out_axes, tree_unflatten(out_def, out_leaves), out_def, who, "out_axes")
        return tree_unflatten(out_def, [_unbatch(o, ax, trace, who) for o, ax in zip(out_leaves, oaxes)])

    return vmapped


def _check_axes_spec(spec: Axes, who: str, what: str) -> None:
    """Raise ``TypeError`` at once for an axes spec with an entry that is neither
    an int nor None (``in_axes="x"``, a float): the call would fail later, less clearly."""
    for leaf in tree_flatten(spec)[0]:
        if leaf is not None and (not isinstance(leaf, (int, np.integer)) or isinstance(leaf, (bool, np.bool_))):
            raise TypeError(f"{who}: {what} must be an int, None, or a pytree (tuple, list, dict) of them, "
                            f"got {spec!r} (it holds {leaf!r}, a {type(leaf).__name__})")


def _run(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], in_axes: Axes,
         who: str) -> tuple[BatchTrace, list[Any], TreeDef]:
    """Call ``f`` on a new batch level, the arguments mapped over ``in_axes``
    (keyword arguments over axis 0). Returns the level and the output,
    flattened: batched values of that level, and leaves that do not depend
    on the mapped inputs."""
    leaves, tdef = tree_flatten(args)
    for i, leaf in enumerate(leaves):
        refuse_matrix(leaf, who, i)
    axes = _leaf_axes(in_axes, args, tdef, who, "in_axes")
    kw_leaves, kw_def = tree_flatten(kwargs)
    leaves = leaves + kw_leaves
    axes = axes + [0] * len(kw_leaves)
    size = _batch_size(leaves, axes, _leaf_names(f, args, kwargs), who)
    with BatchTrace(size) as trace:
        batched = [leaf if ax is None else trace.wrap(_move(leaf, _norm(ax, leaf), 0))
                   for leaf, ax in zip(leaves, axes)]
        n = len(leaves) - len(kw_leaves)
        out = f(*tree_unflatten(tdef, batched[:n]), **tree_unflatten(kw_def, batched[n:]))
    out_leaves, out_def = tree_flatten(out)
    return trace, out_leaves, out_def


def batched_call(f: Callable[..., Any], args: tuple[Any, ...], in_axes: Axes, who: str) -> tuple[Any, Any]:
    """``f(*args)`` mapped over ``in_axes``, each output leaf left where it
    is: ``(out, axes)``, ``out`` with the batch on axis 0 of every leaf that
    depends on the mapped inputs and ``axes`` of its structure, 0 for those
    leaves and None for the others (which are the same for every example).
    (What a custom rule's forward function needs under vmap: its residuals
    stay as they are when they are not batched.)"""
    trace, leaves, tdef = _run(f, args, {}, in_axes, who)
    mine = [type(o) is Traced and o._level is trace for o in leaves]
    return (tree_unflatten(tdef, [o._array if m else o for o, m in zip(leaves, mine)]),
            tree_unflatten(tdef, [0 if m else None for m in mine]))


def broadcast_batch(x: Any, size: int) -> Any:
    """Leaf ``x`` (the same for every example) given a batch axis 0 of ``size``."""
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    if type(x) is Traced:
        from tapegrad import numpy as tnp

        return tnp.broadcast_to(x, (size,) + tuple(x.shape))
    return np.broadcast_to(x, (size,) + x.shape).copy()


def _move(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    if type(x) is np.ndarray:
        return np.moveaxis(x, src, dst)
    from tapegrad import numpy as tnp

    return tnp.moveaxis(x, src, dst)


def _norm(ax: int, x: Any) -> int:
    return ax % max(np.ndim(x), 1) if ax < 0 else ax


def _unbatch(o: Any, ax: Any, trace: BatchTrace, who: str) -> Any:
    """Output leaf ``o`` with the batch at axis ``ax`` (broadcast if ``o``
    does not depend on the mapped inputs)."""
    if type(o) is Traced and o._level is trace:
        if ax is None:
            raise ValueError(
                f"{who}: an output depends on the mapped inputs, but its out_axes is None "
                f"(it has per-example shape {tuple(o.shape)})"
            )
        arr = o._array
    else:
        if ax is None:
            return o
        arr = broadcast_batch(o, trace.size)
    nd = np.ndim(arr)
    if not -nd <= ax < nd:
        raise ValueError(
            f"{who}: out_axes={ax} is out of range for an output of rank {nd - 1} "
            f"(the mapped axis makes it rank {nd})"
        )
    return _move(arr, 0, ax % nd)


def _leaf_axes(axes: Axes, tree: Any, tdef: TreeDef, who: str, what: str) -> list[Any]:
    """One axis (int or None) per leaf of ``tree``, from prefix ``axes``."""
    if what == "in_axes" and isinstance(axes, list):
        axes = tuple(axes)  # (a list at the top means one entry per argument, as a tuple)
    if what == "in_axes" and isinstance(axes, tuple) and len(axes) != len(tree):
        raise ValueError(
            f"{who}: in_axes has {len(axes)} entries but the function was called with "
            f"{len(tree)} positional arguments; in_axes must be an int, None, or a tuple "
            "with one entry per positional argument"
        )
    out: list[Any] = []
    _prefix(axes, tree, out, who, what, "")
    return out


def _prefix(axes: Any, tree: Any, out: list[Any], who: str, what: str, path: str) -> None:
    if axes is None or isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        out.extend([None if axes is None else int(axes)] * len(tree_flatten(tree)[0]))
        return
    if isinstance(axes, dict) and isinstance(tree, dict):
        if set(axes) != set(tree):
            raise ValueError(f"{who}: {what}{path} has keys {sorted(axes)} but the value has "
                             f"keys {sorted(tree)}")
        for k in sorted(tree):
            _prefix(axes[k], tree[k], out, who, what, f"{path}[{k!r}]")
        return
    if isinstance(axes, (tuple, list)) and isinstance(tree, (tuple, list)) and len(axes) == len(tree):
        for i, (a, t) in enumerate(zip(axes, tree)):
            _prefix(a, t, out, who, what, f"{path}[{i}]")
        return
    if (pairs := registered_children(axes, tree)) is not None:  # (a registered class, as the value)
        for key, a, t in pairs:
            _prefix(a, t, out, who, what, f"{path}{key}")
        return
    raise ValueError(
        f"{who}: {what}{path} = {axes!r} does not match the structure of the value it "
        f"describes ({type(tree).__name__}"
        + (f" of length {len(tree)}" if isinstance(tree, (tuple, list)) else "")
        + "); give an int, None, or a prefix of that structure"
    )


def _leaf_names(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """How errors name each leaf: the argument (by name when the signature
    says it) and, for a pytree argument, the leaf's position in it."""
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        label = f"argument {i}" + (f" ({params[i]})" if i < len(params) and params[i] not in ("args",) else "")
        n = len(tree_flatten(a)[0])
        names += [label] if n == 1 else [f"{label} leaf {j}" for j in range(n)]
    for k, v in sorted(kwargs.items()):
        n = len(tree_flatten(v)[0])
        names += [f"keyword argument {k}"] if n == 1 else [f"keyword argument {k} leaf {j}" for j in range(n)]
    return names


def _batch_size(leaves: list[Any], axes: list[Any], names: list[str], who: str) -> int:
    sizes = []
    for leaf, ax, label in zip(leaves, axes, names):
        if ax is None:
            continue
        shape = tuple(np.shape(leaf)) if not hasattr(leaf, "shape") else tuple(leaf.shape)
        nd = len(shape)
        if not -nd <= ax < nd:
            raise ValueError(
                f"{who}: in_axes={ax} for {label} is out of range: it has shape {shape} "
                f"(rank {nd})" + ("; pass None in in_axes for values that are not mapped" if nd == 0 else "")
            )
        sizes.append((shape[ax % nd], ax, label, shape))
    if not sizes:
        raise ValueError(f"{who}: in_axes maps no argument (every entry is None); at least one "
                         "argument must be mapped")
    if len({s for s, *_ in sizes}) > 1:
        detail = "; ".join(f"{label} has size {s} on axis {ax} (shape {shape})"
                           for s, ax, label, shape in sizes)
        raise ValueError(f"{who}: the mapped axes have different sizes: {detail}")
    return sizes[0][0]
