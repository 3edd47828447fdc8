"""Forward mode: a tape whose traced values carry tangents; jvp and jacfwd.

A ``ForwardTape`` is a level like any tape, but an op on its values is not
logged: it pushes tangents through the primitive's JVP rule at once. A
primitive with no JVP rule still works: its VJP rule is linear in the
cotangent, so the trace records that rule on a scratch tape and replays it
in reverse with the tangent as seed (the transpose of the transpose). Every
tangent may carry leading batch axes: ``jacfwd`` pushes a whole basis in
one pass (through the rules of a primitive not declared ``batched``, one
element at a time: see ``map_batch``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.engine_ops import broadcast_to, cast_to, map_batch, sum_to
from tapegrad.core.tape import Tape
from tapegrad.core.traced import Traced, unbox_idle, value
from tapegrad.pytree import tree_flatten, tree_unflatten
from tapegrad.transforms._util import (
    PLAIN,
    Argnums,
    check_inexact_leaves,
    finish,
    fun_name,
    rewrap,
    unwrap,
)

_new_obj = object.__new__


class ForwardTape(Tape):
    """A forward-mode trace: its values carry their tangent (``_tangent``), and
    have no entry.

    ``batch`` is the shape of the leading batch axes every tangent carries.
    """

    def __init__(self, batch: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.batch = batch

    def watch_with(self, x: Any, tangent: Any) -> Traced:
        """``x`` traced on this tape with the given tangent."""
        out = Traced(x, self, None)
        out._tangent = tangent
        return out

    def record(self, prim: Any, ans: Any, args: Any, raw: Any, kwargs: Any, argnums: Any,  # type: ignore[override]
               vjps: Any = None) -> Traced:
        """Push the tangents of ``args`` through ``prim`` (instead of logging an
        entry; a given VJP rule is not needed)."""
        v = ans
        while type(v) is Traced:
            v = v._value
        shape = v.shape if type(v) is np.ndarray else tuple(np.shape(v))
        batch = self.batch
        target = batch + shape if batch else shape
        table = prim.jvps
        out = None
        for i in argnums:
            maker = table.get(i) or prim.jvp_maker(i)
            t = args[i]._tangent
            if maker is None:
                jvp = _transposed(prim, i, ans, raw, kwargs)
                c = jvp(t)
            else:
                jvp = maker(ans, *raw, **kwargs) if kwargs else maker(ans, *raw)
                if batch and not prim.jvps_batched:  # a rule for one tangent at a time
                    c = map_batch(jvp, t, t.ndim - np.ndim(value(raw[i])))
                else:
                    c = jvp(t)
            if c.shape != target:
                c = _broadcast_tangent(c, len(batch), target)
            out = c if out is None else out + c
        assert out is not None  # a recorded op has at least one traced argument
        if out.dtype != v.dtype:
            out = cast_to(out, v.dtype)
        t = _new_obj(Traced)  # (watch_with, field by field: this is every forward op's cost)
        t._value = ans
        t._level = self
        t._node = None
        t._tangent = out
        return t


def _broadcast_tangent(c: Any, nb: int, target: tuple[int, ...]) -> Any:
    """A tangent ``batch + s`` (``s`` broadcasting to the output) made ``target``."""
    inner = c.shape[nb:]
    pad = len(target) - nb - len(inner)
    if pad:
        c = c.reshape(c.shape[:nb] + (1,) * pad + inner)
    return broadcast_to(c, target)


def _transposed(prim: Any, i: int, ans: Any, raw: Any, kwargs: Any) -> Callable[[Any], Any]:
    """The JVP of ``prim`` in argument ``i``, as the transpose of its VJP rule."""
    vjp = prim.vjp_maker(i)(ans, *raw, **kwargs)
    x = raw[i]
    xshape, xdtype = tuple(np.shape(value(x))), np.result_type(value(x))
    aval = value(ans)

    one_at_a_time = not prim.vjps_batched

    def jvp(t: Any) -> Any:
        nb = t.ndim - len(xshape)
        batch = t.shape[:nb]
        with Tape() as lin:
            g = lin._watch_leaf(array_module(aval).zeros(batch + aval.shape, dtype=aval.dtype))
            c = map_batch(vjp, g, nb) if nb and one_at_a_time else vjp(g)
            if c.shape != batch + xshape:
                c = sum_to(c, xshape, nb)
            if c.dtype != xdtype:
                c = cast_to(c, xdtype)
        if type(c) is not Traced or c._level is not lin:  # the rule ignores g: a zero map
            return array_module(aval).zeros(batch + aval.shape, dtype=aval.dtype)
        return lin.gradient(c, g, output_gradients=t)

    return jvp


def _check_tangents(who: str, primals: Any, tangents: Any) -> list[tuple[int, list[Any], Any, list[Any]]]:
    """Check ``tangents`` against ``primals`` (structure, shapes, dtype kinds).

    Returns, per primal, ``(argnum, primal leaves, treedef, tangent leaves)``,
    the tangents in their primals' dtypes: the inputs of ``_trace_forward``.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{who}: primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise TypeError(f"{who}: got {len(primals)} primals but {len(tangents)} tangents")
    out = []
    for k, (p, t) in enumerate(zip(primals, tangents)):
        pl, pd = tree_flatten(p)
        tl, td = tree_flatten(t)
        if pd is not td and pd != td:
            raise TypeError(f"{who}: tangent {k} has structure {td}, but its primal has {pd}")
        leaves = []
        for a, b in zip(pl, tl):
            if type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape \
                    and a.dtype == b.dtype:
                leaves.append(b)  # the common case: nothing to check further, or convert
                continue
            bt = unwrap(b)
            if isinstance(bt, np.matrix):  # (data only: its * must not reach the rules)
                bt = np.asarray(bt)
            av, bv = value(unwrap(a)), value(bt)
            sa, sb = np.shape(av), np.shape(bv)
            if sa != sb:
                raise ValueError(
                    f"{who}: tangent {k} has shape {sb}, but its primal has shape {sa}")
            da, db = np.result_type(av), np.result_type(bv)
            if da.kind != db.kind and not (db.kind in "iu" and da.kind in "fc"):
                raise TypeError(
                    f"{who}: tangent {k} has dtype {db}, but its primal has dtype {da}")
            same = type(bt) is Traced or (hasattr(bt, "ndim") and np.result_type(bt) == da)
            leaves.append(bt if same else _as_dtype(bt, da))
        out.append((k, pl, pd, leaves))
    return out


def _as_array(x: Any) -> Any:
    return x if type(x) is Traced or hasattr(x, "dtype") else np.asarray(x)


def _as_dtype(t: Any, dtype: Any) -> Any:
    if type(t) is Traced:
        return cast_to(t, dtype)
    return array_module(t).asarray(t, dtype=dtype)


def _trace_forward(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   inputs: list[tuple[int, list[Any], Any, list[Any]]], batch: tuple[int, ...],
                   who: str) -> tuple[ForwardTape, Any]:
    """Run ``f`` on a forward trace: ``inputs`` gives, per differentiated
    argument, ``(argnum, leaves, treedef, tangent leaves)`` (``leaves`` are
    the argument's, flattened). Returns the tape and the output as ``f``
    gave it (leaves in their array wrappers, if any)."""
    for i, leaves, _, _ in inputs:
        check_inexact_leaves(leaves, who, i)
    args_l = list(args)
    with ForwardTape(batch) as ftape:
        watch = ftape.watch_with
        for i, leaves, tdef, ts in inputs:
            a = args_l[i]
            if type(a) is np.ndarray or type(a) is Traced:  # (one array: no pytree, no wrapper)
                args_l[i] = watch(a, ts[0])
                continue
            boxed = [rewrap(x, watch(_as_array(unwrap(x)), t)) for x, t in zip(leaves, ts)]
            args_l[i] = tree_unflatten(tdef, boxed)
        wrapped_out = f(*args_l, **kwargs) if kwargs else f(*args_l)
    return ftape, wrapped_out


def _primal_and_tangent(ftape: ForwardTape, x: Any, like: Any) -> tuple[Any, Any]:
    if type(x) is Traced and x._level is ftape:
        return rewrap(like, x._value), rewrap(like, finish(x._tangent, x._value))
    x = unbox_idle(x)
    v = value(x)
    zeros = array_module(v).zeros(ftape.batch + np.shape(v), dtype=np.result_type(v))
    return rewrap(like, x), rewrap(like, zeros)


def jvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    """Evaluate ``f(*primals)`` and its Jacobian-vector product along ``tangents``.

    Returns ``(out, tangent_out)``; ``primals`` and ``tangents`` are tuples
    of pytrees with the same structure, shapes and dtypes.

    Examples:
        >>> tg.jvp(tnp.sin, (np.array([0.0, 1.0]),), (np.ones(2),))
        (array([0.        , 0.84147098]), array([1.        , 0.54030231]))
    """
    who = f"jvp({fun_name(f)})"
    inputs = _check_tangents(who, primals, tangents)
    return _outputs(*_trace_forward(f, tuple(primals), {}, inputs, (), who))


def _outputs(ftape: ForwardTape, wrapped: Any) -> tuple[Any, Any]:
    """The primal and the tangent output pytrees of a forward trace (as
    ``_trace_forward`` returns it), in the output's wrapper types."""
    if type(wrapped) in PLAIN:  # one plain leaf
        return _primal_and_tangent(ftape, wrapped, wrapped)
    like, tdef = tree_flatten(wrapped)
    pairs = [_primal_and_tangent(ftape, unwrap(lk), lk) for lk in like]
    return tree_unflatten(tdef, [p for p, _ in pairs]), tree_unflatten(tdef, [t for _, t in pairs])


def _basis(leaves: list[Any]) -> tuple[int, list[Any]]:
    """Rows of the identity, cut and shaped per leaf: a batch of tangents or
    cotangents that together span every entry of ``leaves``."""
    vals = [value(unwrap(x)) for x in leaves]
    n = sum(int(np.size(v)) for v in vals)
    out, off = [], 0
    for v in vals:
        size, shape = int(np.size(v)), np.shape(v)
        eye = array_module(v).eye(n, size, -off, dtype=np.result_type(v))
        out.append(eye.reshape((n,) + shape))
        off += size
    return n, out


def _jacobian_blocks(rows: Any, n_in: list[tuple[int, ...]], out_shape: tuple[int, ...],
                     batch_first: bool) -> list[Any]:
    """Cut a stacked derivative into one Jacobian (``out_shape + in_shape``) per input leaf.

    ``rows`` is ``(N,) + out_shape`` (forward: N input directions) when
    ``batch_first``; else it is a list of ``(M,) + in_shape`` arrays (reverse).
    """
    from tapegrad.numpy import derived as d

    blocks, off = [], 0
    for shape in n_in:
        size = int(np.prod(shape))
        block = rows[off:off + size]
        block = d.moveaxis(block, 0, -1) if len(out_shape) else block.reshape((size,))
        blocks.append(d.reshape(block, out_shape + shape))
        off += size
    return blocks


def jacfwd(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Jacobian of ``f`` by forward mode, one pass for all input directions.

    Returns ``out.shape + in.shape`` arrays: a pytree of the output's
    structure whose leaves have the structure of the differentiated
    argument(s).

    Examples:
        >>> tg.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
        array([[2., 0.],
               [0., 4.]])
    """
    return _jacfwd(f, argnums, f"jacfwd({fun_name(f)})")


def _jacfwd(f: Callable[..., Any], argnums: int | tuple[int, ...], who: str) -> Callable[..., Any]:
    """The function of ``jacfwd``; its errors name ``who``."""
    nums_for = Argnums(argnums, who)

    def jac(*args: Any, **kwargs: Any) -> Any:
        nums = nums_for(len(args), who)
        in_leaves = [tree_flatten(args[i]) for i in nums]
        flat = [x for leaves, _ in in_leaves for x in leaves]
        n, basis = _basis(flat)
        inputs, k = [], 0
        for i, (leaves, tdef) in zip(nums, in_leaves):
            inputs.append((i, leaves, tdef, basis[k:k + len(leaves)]))
            k += len(leaves)
        ftape, wrapped = _trace_forward(f, args, kwargs, inputs, (n,), who)
        like, tdef = tree_flatten(wrapped)
        shapes = [np.shape(value(unwrap(x))) for x in flat]
        results = []
        for lk in like:
            x = unwrap(lk)
            _, t = _primal_and_tangent(ftape, x, None)
            blocks = _jacobian_blocks(t, shapes, tuple(np.shape(value(x)))[:], True)
            blocks = [rewrap(lk, finish(b, None)) for b in blocks]
            results.append(_per_argnum(blocks, in_leaves, argnums))
        return tree_unflatten(tdef, results)

    jac.__name__ = who
    return jac


def _per_argnum(blocks: list[Any], in_leaves: list[tuple[list[Any], Any]], argnums: Any) -> Any:
    trees, k = [], 0
    for leaves, tdef in in_leaves:
        trees.append(tree_unflatten(tdef, blocks[k:k + len(leaves)]))
        k += len(leaves)
    return tuple(trees) if isinstance(argnums, (tuple, list)) else trees[0]
