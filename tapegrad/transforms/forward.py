"""Forward mode: jvp.

The VJP of every primitive is linear in its cotangent, so the backward pass,
recorded on a second tape with the output cotangent as its input, is the
linear map ``u -> J^T u``; replaying *that* tape in reverse with the tangent
as seed gives ``J t``. Every primitive with a VJP rule works in forward mode
this way, user primitives included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.pytree import tree_flatten, tree_unflatten
from tapegrad.tape import Tape, zeros_for
from tapegrad.tracer import Traced, value
from tapegrad.transforms._util import Traced_call, finish, fun_name


def jvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """Evaluate ``f(*primals)`` and the Jacobian-vector product along ``tangents``.

    Returns ``(out, tangent_out)``; ``primals`` and ``tangents`` are tuples of
    the same structure, shapes and dtypes.

    Example:
        >>> tg.jvp(tnp.sin, (np.array([0.0, 1.0]),), (np.ones(2),))
        (array([0.        , 0.84147098]), array([1.        , 0.54030231]))
    """
    name = fun_name(f)
    who = f"jvp({name})"
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{who}: primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise TypeError(f"{who}: got {len(primals)} primals but {len(tangents)} tangents")
    for k, (p, t) in enumerate(zip(primals, tangents)):
        pl, pd = tree_flatten(p)
        tl, td = tree_flatten(t)
        if pd != td:
            raise TypeError(f"{who}: tangent {k} has structure {td}, but its primal has {pd}")
        for a, b in zip(pl, tl):
            sa, sb = np.shape(value(a)), np.shape(value(b))
            if sa != sb:
                raise ValueError(f"{who}: tangent {k} has shape {sb}, but its primal has shape {sa}")
            da = np.result_type(value(a))
            db = np.result_type(value(b))
            if da != db and not (da.kind == db.kind == "f"):
                raise TypeError(f"{who}: tangent {k} has dtype {db}, but its primal has dtype {da}")
    call = Traced_call(f, tuple(primals), {}, tuple(range(len(primals))), persistent=True, who=who)
    out_leaves, out_def = tree_flatten(call.out)
    out_val = call.out_value(call.out)
    tangent_leaves = [t for tan in tangents for t in tree_flatten(tan)[0]]
    with Tape() as lin:
        us, seeds = [], {}
        for x in out_leaves:
            node = call.node_of(x)
            if node is None:
                us.append(None)
                continue
            u = lin._watch_leaf(zeros_for(node, x._value))
            us.append(u)
            seeds[node.index] = seeds[node.index] + u if node.index in seeds else u
        cts = call.backward(seeds, retain=True)
    ct_leaves = [c for tree in cts for c in tree_flatten(tree)[0]]
    lin_seeds: dict[int, Any] = {}
    for c, t in zip(ct_leaves, tangent_leaves):
        if type(c) is Traced and c._tape is lin:
            i = c._node.index
            lin_seeds[i] = lin_seeds[i] + t if i in lin_seeds else t
    tan_out = lin.backprop(lin_seeds, [u for u in us if u is not None], retain=False)
    it = iter(tan_out)
    res = []
    for x, u in zip(out_leaves, us):
        v = value(x)
        if u is None:
            res.append(np.zeros(np.shape(v), dtype=np.result_type(v)))
        else:
            res.append(finish(next(it), v))
    return out_val, tree_unflatten(out_def, res)
