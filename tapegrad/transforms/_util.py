"""What every transform shares: argnums lifting, tracing a call, finishing results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.core.tape import Tape, backprop, conversion_hint, zeros_for
from tapegrad.core.traced import Traced, unbox_idle
from tapegrad.pytree import ARRAY_LEAF_TYPES, tree_flatten, tree_unflatten

# Arrays, scalars and traced values: pytree leaves and no array wrappers, so
# unwrap and rewrap pass them through without looking up the wrapper hooks,
# and a transform given one (the common case) has no pytree to walk.
PLAIN = ARRAY_LEAF_TYPES


def tree_map_leaves(f: Callable[[Any], Any], tree: Any) -> Any:
    leaves, tdef = tree_flatten(tree)
    return tree_unflatten(tdef, [f(x) for x in leaves])


def fun_name(f: Callable[..., Any]) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


class Argnums:
    """A transform's ``argnums``, normalised once per call arity.

    ``argnums`` is an int or a tuple of ints: anything else raises
    ``TypeError`` naming ``who`` at once, when the transform is made.
    Calling with the number of positional arguments gives them as
    non-negative ints (``TypeError`` naming ``who`` when out of range,
    raised again on every such call).
    """

    def __init__(self, argnums: int | tuple[int, ...], who: str) -> None:
        check_argnums(argnums, who)
        self.argnums = argnums
        self.many = isinstance(argnums, (tuple, list))  # a tuple of results?
        self._by_nargs: dict[int, tuple[int, ...]] = {}

    def __call__(self, nargs: int, who: str) -> tuple[int, ...]:
        nums = self._by_nargs.get(nargs)
        if nums is None:
            nums = self._by_nargs[nargs] = _in_range(self.argnums, nargs, who)  # (checked when made)
        return nums


def check_argnums(argnums: Any, who: str, name: str = "argnums") -> None:
    """Raise ``TypeError`` naming ``who``, the parameter ``name`` and the value unless
    ``argnums`` is an int or a tuple (or list) of ints (``bool`` is not taken for an int)."""
    nums = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    for a in nums:
        if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)):
            many = isinstance(argnums, (tuple, list))
            inside = f" (it holds {a!r}, a {type(a).__name__})" if many else f" (a {type(a).__name__})"
            raise TypeError(
                f"{who}: {name} must be an int or a tuple of ints (positions of positional "
                f"arguments), got {argnums!r}{inside}"
            )


def norm_argnums(argnums: int | tuple[int, ...], nargs: int, who: str) -> tuple[int, ...]:
    """``argnums`` as non-negative positions for a call with ``nargs``
    positional arguments; ``TypeError`` naming ``who`` when out of range."""
    check_argnums(argnums, who)
    return _in_range(argnums, nargs, who)


def _in_range(argnums: int | tuple[int, ...], nargs: int, who: str) -> tuple[int, ...]:
    """``norm_argnums`` for ``argnums`` that ``check_argnums`` accepted."""
    nums: tuple[Any, ...] = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    for a in nums:
        if not -nargs <= a < nargs:
            valid = f" (valid: {-nargs} to {nargs - 1})" if nargs else ""
            raise TypeError(
                f"{who}: argnums={argnums!r} is out of range for a call with {nargs} "
                f"positional argument{'s' if nargs != 1 else ''}{valid}; arguments passed by "
                "keyword are not counted (pass the differentiated ones by position)"
            )
    return tuple(int(a) % nargs for a in nums)


def unwrap(x: Any) -> Any:
    """The array inside an array wrapper (a type with ``__tapegrad_value__``,
    such as the facade's Tensor); anything else as it is."""
    if type(x) in PLAIN:
        return x
    get = getattr(type(x), "__tapegrad_value__", None)
    return get(x) if get is not None else x


def rewrap(like: Any, v: Any) -> Any:
    """``v`` wrapped in the type of ``like`` when ``like`` is an array wrapper."""
    if type(like) in PLAIN:
        return v
    box = getattr(type(like), "__tapegrad_box__", None)
    return box(v, like) if box is not None else v


def check_inexact_leaves(leaves: Sequence[Any], who: str, argnum: int, allow_complex: bool = True) -> None:
    """Raise ``TypeError`` naming ``who``, the argument and its dtype for a
    leaf that is not floating-point (or complex), with the conversion to make:
    ``float(...)`` for a Python number, ``.astype(float)`` for an array."""
    for leaf in leaves:
        if type(leaf) is float:  # (the common scalar argument: no np.asarray to find its dtype)
            continue
        v = leaf if type(leaf) in PLAIN else unwrap(leaf)
        while type(v) is Traced:
            v = v._value
        dtype = getattr(v, "dtype", None)
        if dtype is None:
            dtype = np.asarray(v).dtype
        if type(v) is not np.ndarray:  # (an exact ndarray is no matrix)
            refuse_matrix(v, who, argnum)
        if dtype.kind not in ("fc" if allow_complex else "f"):
            raise TypeError(
                f"{who} requires floating-point or complex inputs, but argument {argnum} "
                f"has dtype {dtype}; {conversion_hint(v)}"
            )


def refuse_matrix(v: Any, who: str, argnum: int | str) -> None:
    """Raise ``TypeError`` for a ``numpy.matrix`` argument: its ``*`` and ``**``
    are matrix products, which traced values (arrays) do not follow, so its
    derivatives would be of another function. ``np.asarray(m)`` converts it."""
    if isinstance(v, np.matrix):
        raise TypeError(
            f"{who}: argument {argnum} is a numpy.matrix, whose * and ** are matrix products; "
            "tapegrad differentiates arrays: pass np.asarray(m) (and write @ for a matrix product)"
        )


class Traced_call:
    """One traced call of ``f``: the tape, the watched leaves, the output.

    The caller holds ``tapegrad._gc.tracing`` around it and around
    ``backward`` (one span for the whole transform: the tape and its walk
    do not enter it again)."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 argnums: tuple[int, ...], persistent: bool, who: str) -> None:
        args_l = list(args)
        flat: list[tuple[int, Any, Any]] = []
        for i in argnums:
            a = args_l[i]
            if type(a) in PLAIN:  # (one array or scalar: no pytree to walk, no wrapper)
                if type(a) is not float:
                    check_inexact_leaves((a,), who, i)
                flat.append((i, None, None))
                continue
            leaves, tdef = tree_flatten(a)
            check_inexact_leaves(leaves, who, i)
            flat.append((i, leaves, tdef))
        # (argnum, treedef, leaf nodes, primal leaves); the nodes are kept
        # apart from the traced values, which in-place updates rebind. A
        # plain argument has treedef None, its node and itself for the lists.
        self.inputs: list[tuple[int, Any, Any, Any]] = []
        self.tape = tape = Tape(persistent=persistent)
        tape._open()
        try:
            watch = tape._watch_leaf
            for i, leaves, tdef in flat:
                if leaves is None:
                    a = args_l[i]
                    args_l[i] = t = watch(a)
                    self.inputs.append((i, None, t._node, a))
                    continue
                nodes, boxed = [], []
                for x in leaves:
                    t = watch(unwrap(x))
                    nodes.append(t._node)
                    boxed.append(rewrap(x, t))
                self.inputs.append((i, tdef, nodes, leaves))
                args_l[i] = tree_unflatten(tdef, boxed)
            self.wrapped_out = out = f(*args_l, **kwargs) if kwargs else f(*args_l)
            self.out = out if type(out) in PLAIN else tree_map_leaves(unwrap, out)
        finally:
            tape._close()

    def here(self, x: Any) -> Any:
        """``x`` as seen from outside this tape (one level unboxed)."""
        if type(x) is Traced:
            if x._level is self.tape:
                return x._value
            return unbox_idle(x)
        return x

    def out_value(self, out: Any) -> Any:
        """The output pytree ``out`` (``self.out``, or its first half under
        ``has_aux``) as seen from outside, in its own wrapper types."""
        w = self.wrapped_out
        if type(out) in PLAIN and (w is out or (isinstance(w, (tuple, list)) and w and w[0] is out)):
            return self.here(out)  # a plain leaf: no wrapper to put back
        leaves, tdef = tree_flatten(out)
        wrapped = tree_flatten(self.wrapped_out)[0]
        if len(wrapped) != len(leaves):  # has_aux: out is the first of a pair
            wrapped = tree_flatten(self.wrapped_out[0])[0]
        return tree_unflatten(tdef, [rewrap(w, self.here(x)) for w, x in zip(wrapped, leaves)])

    def node_of(self, x: Any) -> Any:
        return x._node if type(x) is Traced and x._level is self.tape else None

    def backward(self, seeds: dict[int, Any], retain: bool, batch: tuple[int, ...] = ()) -> list[Any]:
        """Cotangents for every argnum, each in its argument's structure."""
        ct = backprop(reversed(self.tape.entries), seeds, retain, batched=bool(batch), held=True)
        results = []
        for _, tdef, nodes, primals in self.inputs:
            if tdef is None:  # a plain argument: ``nodes`` is its node, ``primals`` itself
                i = nodes.index
                g = ct[i] if i in ct else zeros_for(nodes, primals, batch)
                results.append(finish(g, primals))
                continue
            gs = []
            for node, p in zip(nodes, primals):
                i = node.index
                g = ct[i] if i in ct else zeros_for(node, unwrap(p), batch)
                gs.append(rewrap(p, finish(g, p)))
            results.append(tree_unflatten(tdef, gs))
        return results


def finish(g: Any, primal: Any) -> Any:
    """A gradient as the user gets it: writeable, in the primal's own kind."""
    if type(g) is Traced:
        return g
    if isinstance(primal, (float, int, complex)) and not isinstance(primal, bool):
        return g[()] if getattr(g, "ndim", 0) == 0 and hasattr(g, "shape") else g
    if isinstance(g, np.ndarray):
        if not g.flags.writeable:
            return g.copy()
        if g.ndim > 1 and type(primal) is np.ndarray:
            # in the primal's memory layout, as PyTorch's gradients are: an
            # optimizer's elementwise update over mismatched layouts is far slower
            if primal.flags.c_contiguous and not g.flags.c_contiguous:
                return np.ascontiguousarray(g)
            if primal.flags.f_contiguous and not g.flags.f_contiguous:
                return np.asfortranarray(g)
        return g
    if isinstance(g, np.generic) and isinstance(primal, np.ndarray):
        return np.asarray(g)
    return g
