"""Jacobians and Hessians, with no Python loop over rows: jacrev, hessian, hvp.

``jacrev`` pushes every basis cotangent through one replay (the rules take
batched cotangents; those of a user primitive not declared ``batched`` are
called once per cotangent); ``jacfwd`` (in forward.py) pushes every basis tangent
through one forward pass. ``hessian`` is forward-over-reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad._gc import tracing
from tapegrad.core.tape import add_seed
from tapegrad.core.traced import value
from tapegrad.pytree import tree_flatten, tree_unflatten
from tapegrad.transforms._util import (
    Argnums,
    Traced_call,
    check_argnums,
    fun_name,
    norm_argnums,
    rewrap,
    unwrap,
)
from tapegrad.transforms.forward import (
    _basis,
    _check_tangents,
    _jacfwd,
    _outputs,
    _per_argnum,
    _trace_forward,
)
from tapegrad.transforms.reverse import _value_and_grad


def jacrev(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Jacobian of ``f`` by reverse mode, one replay for all output entries.

    Returns ``out.shape + in.shape`` arrays: a pytree of the output's
    structure whose leaves have the structure of the differentiated
    argument(s).

    Examples:
        >>> tg.jacrev(lambda x: tnp.sin(x) * x[0])(np.array([0.5, 1.0]))
        array([[0.91821682, 0.        ],
               [0.84147098, 0.27015115]])
    """
    name = fun_name(f)
    who = f"jacrev({name})"
    nums_for = Argnums(argnums, who)

    def jac(*args: Any, **kwargs: Any) -> Any:
        from tapegrad.numpy import derived as d

        nums = nums_for(len(args), who)
        with tracing:  # (one span for the tape and its backward pass)
            call = Traced_call(f, args, kwargs, nums, persistent=False, who=who)
            out_leaves, out_def = tree_flatten(call.out)
            m, basis = _basis(out_leaves)
            seeds: dict[int, Any] = {}
            for x, b in zip(out_leaves, basis):
                node = call.node_of(x)
                if node is not None:
                    add_seed(seeds, node.index, b)
            grads = call.backward(seeds, retain=False, batch=(m,))  # per argnum: (m,) + in_shape
        in_trees = [tree_flatten(g) for g in grads]
        in_leaves = [tree_flatten(args[i]) for i in nums]
        wrapped_leaves = tree_flatten(call.wrapped_out)[0]
        results, off = [], 0
        for x, lk in zip(out_leaves, wrapped_leaves):
            oshape = tuple(np.shape(value(x)))
            size = int(np.prod(oshape))
            blocks = []
            for leaves, _ in in_trees:
                for g in leaves:
                    g = unwrap(g)
                    ishape = g.shape[1:]
                    blocks.append(rewrap(lk, d.reshape(g[off:off + size], oshape + ishape)))
            results.append(_per_argnum(blocks, in_leaves, argnums))
            off += size
        return tree_unflatten(out_def, results)

    jac.__name__ = f"jacrev({name})"
    return jac


jacobian = jacrev


def hessian(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of scalar ``f``, forward-over-reverse: ``in.shape + in.shape``.

    Examples:
        >>> tg.hessian(lambda x: tnp.sum(x ** 3))(np.array([1.0, 2.0]))
        array([[ 6.,  0.],
               [ 0., 12.]])
    """
    who = f"hessian({fun_name(f)})"
    check_argnums(argnums, who)  # (before jacrev's check: named as the user wrote it)
    return _jacfwd(jacrev(f, argnums), argnums, who)


def hvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """``(f(*primals), H @ v)`` for scalar ``f``, by forward-over-reverse, without forming H.

    With one primal, ``H @ v`` has its shape; with several, it is a tuple.

    Examples:
        >>> tg.hvp(lambda x: tnp.sum(x ** 3), (np.array([1.0, 2.0]),), (np.ones(2),))
        (np.float64(9.0), array([ 6., 12.]))
    """
    who = f"hvp({fun_name(f)})"
    inputs = _check_tangents(who, primals, tangents)
    n = len(primals)
    # one forward trace around one reverse trace (no jvp-of-grad wrappers)
    vg = _value_and_grad(f, tuple(range(n)), False, False, with_value=True, who=who)
    ftape, (val, grads) = _trace_forward(vg, tuple(primals), {}, inputs, (), who)
    hv = tuple([_outputs(ftape, g)[1] for g in grads])  # the gradient's tangents
    return _outputs(ftape, val)[0], (hv[0] if n == 1 else hv)


__all__ = ["hessian", "hvp", "jacobian", "jacrev", "norm_argnums"]
