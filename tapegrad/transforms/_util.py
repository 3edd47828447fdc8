"""What every transform shares: argnums lifting, tracing a call, finishing results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.pytree import tree_flatten, tree_unflatten
from tapegrad.tape import Tape
from tapegrad.tracer import Traced


def fun_name(f: Callable[..., Any]) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def norm_argnums(argnums: int | tuple[int, ...], nargs: int, who: str) -> tuple[int, ...]:
    multi = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if multi else (argnums,)
    for a in nums:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{who}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -nargs <= a < nargs:
            raise TypeError(
                f"{who}: argnums={argnums!r} is out of range for a call with {nargs} "
                f"positional argument{'s' if nargs != 1 else ''}"
            )
    return tuple(int(a) % nargs for a in nums)


def check_inexact(tree: Any, who: str, argnum: int, allow_complex: bool = True) -> None:
    for leaf in tree_flatten(tree)[0]:
        v = leaf
        while type(v) is Traced:
            v = v._value
        dtype = getattr(v, "dtype", None)
        if dtype is None:
            dtype = np.asarray(v).dtype
        if dtype.kind not in ("fc" if allow_complex else "f"):
            raise TypeError(
                f"{who} requires floating-point or complex inputs, but argument {argnum} "
                f"has dtype {dtype}; convert it with .astype(float) to differentiate it"
            )


class Traced_call:
    """One traced call of ``f``: the tape, the watched leaves, the output."""

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 argnums: tuple[int, ...], persistent: bool, who: str) -> None:
        for i in argnums:
            check_inexact(args[i], who, i)
        args_l = list(args)
        with Tape(persistent=persistent) as tape:
            # (argnum, treedef, leaf nodes, primal leaves); the nodes are kept
            # apart from the traced values, which in-place updates rebind
            self.inputs = []
            for i in argnums:
                leaves, tdef = tree_flatten(args_l[i])
                watched = [tape._watch_leaf(x) for x in leaves]
                self.inputs.append((i, tdef, [t._node for t in watched], leaves))
                args_l[i] = tree_unflatten(tdef, watched)
            self.out = f(*args_l, **kwargs)
        self.tape = tape

    def here(self, x: Any) -> Any:
        """``x`` as seen from outside this tape (one level unboxed)."""
        if type(x) is Traced:
            if x._tape is self.tape:
                return x._value
            while type(x) is Traced and not x._tape.active:
                x = x._value
        return x

    def node_of(self, x: Any) -> Any:
        return x._node if type(x) is Traced and x._tape is self.tape else None

    def backward(self, seeds: dict[int, Any], retain: bool, batch: tuple[int, ...] = ()) -> list[Any]:
        """Cotangents for every argnum, each in its argument's structure."""
        from tapegrad.tape import backprop, zeros_for

        ct = backprop(reversed(self.tape.entries), seeds, retain)
        results = []
        for _, tdef, nodes, primals in self.inputs:
            gs = []
            for node, p in zip(nodes, primals):
                i = node.index
                g = ct[i] if i in ct else zeros_for(node, p, batch)
                gs.append(finish(g, p))
            results.append(tree_unflatten(tdef, gs))
        return results


def finish(g: Any, primal: Any) -> Any:
    """A gradient as the user gets it: writeable, in the primal's own kind."""
    if type(g) is Traced:
        return g
    if isinstance(primal, (float, int, complex)) and not isinstance(primal, bool):
        return g[()] if getattr(g, "ndim", 0) == 0 and hasattr(g, "shape") else g
    if isinstance(g, np.ndarray):
        return g if g.flags.writeable else g.copy()
    if isinstance(g, np.generic) and isinstance(primal, np.ndarray):
        return np.asarray(g)
    return g
