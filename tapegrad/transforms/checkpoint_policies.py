"""``tg.checkpoint_policies``: what ``tg.checkpoint(fun, policy=...)`` keeps (JAX's names).

A policy is ``policy(prim, *args, **params) -> bool``: is the output of this
primitive call of the checkpointed function kept for the backward pass
(True), or computed again there (False)? ``prim`` is the primitive (its
``name``: ``"matmul"``, ``"sin"``, ``"checkpoint_name"``...), ``args`` its
arguments, ``params`` its keyword arguments (``name=`` for a value named by
``tg.checkpoint_name``). Without a policy nothing is kept but the inputs.

Examples:
    >>> f = tg.checkpoint(lambda w, x: tnp.sum(tnp.tanh(x @ w)),
    ...                   policy=tg.checkpoint_policies.dots_saveable)
    >>> tg.grad(f)(np.eye(2), np.ones((3, 2))).shape
    (2, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "checkpoint_dots", "checkpoint_dots_with_no_batch_dims", "dots_saveable",
    "dots_with_no_batch_dims_saveable", "everything_saveable", "nothing_saveable",
    "save_any_names_but_these", "save_from_both_policies", "save_only_these_names",
]

_DOTS = frozenset({"matmul", "linear", "einsum"})
_NAME = "checkpoint_name"
Policy = Callable[..., bool]


def everything_saveable(prim: Any, *args: Any, **params: Any) -> bool:
    """Keep every output: no recomputation (as without checkpoint)."""
    return True


def nothing_saveable(prim: Any, *args: Any, **params: Any) -> bool:
    """Keep nothing: the whole function runs again (checkpoint's default)."""
    return False


def dots_saveable(prim: Any, *args: Any, **params: Any) -> bool:
    """Keep the outputs of matrix products (``matmul``, ``@``, ``dot``, dense
    layers, ``einsum``); recompute the rest (elementwise work)."""
    return prim.name in _DOTS


checkpoint_dots = dots_saveable


def _ndim(x: Any) -> int:
    return len(getattr(x, "shape", ()))


def dots_with_no_batch_dims_saveable(prim: Any, *args: Any, **params: Any) -> bool:
    """Keep the outputs of matrix products without batch axes: a ``matmul``
    whose operands are not both stacks of matrices (3-D or more), a dense
    layer, an ``einsum`` where no index is shared by two operands and the output."""
    if prim.name == "matmul":
        return not (_ndim(args[0]) > 2 and _ndim(args[1]) > 2)
    if prim.name == "linear":
        return True
    if prim.name == "einsum" and args and isinstance(args[0], str):
        ins, _, out = args[0].replace(" ", "").partition("->")
        terms = ins.split(",")
        if len(terms) < 2 or "..." in args[0]:
            return False
        return not any(c in out and sum(c in t for t in terms) > 1 for c in set("".join(terms)))
    return False


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def save_only_these_names(*names: str) -> Policy:
    """Keep only the values named (``tg.checkpoint_name``) one of ``names``."""
    wanted = frozenset(names)

    def policy(prim: Any, *args: Any, **params: Any) -> bool:
        return prim.name == _NAME and params.get("name") in wanted

    return policy


def save_any_names_but_these(*names: str) -> Policy:
    """Keep every named value (``tg.checkpoint_name``) except those named one of ``names``."""
    unwanted = frozenset(names)

    def policy(prim: Any, *args: Any, **params: Any) -> bool:
        return prim.name == _NAME and params.get("name") not in unwanted

    return policy


def save_from_both_policies(left: Policy, right: Policy) -> Policy:
    """Keep what either policy keeps."""

    def policy(prim: Any, *args: Any, **params: Any) -> bool:
        return bool(left(prim, *args, **params) or right(prim, *args, **params))

    return policy
