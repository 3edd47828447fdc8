"""``torch.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp.

Built on the facade's own ``autograd.grad`` (one row per output element for
Jacobians; ``jvp`` by the double-vjp trick, as PyTorch does): correct first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.torch._creation import stack
from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new
from tapegrad.torch.autograd._engine import grad
from tapegrad.torch.grad_mode import enable_grad


def _tup(x: Any) -> tuple[bool, tuple[Any, ...]]:
    if isinstance(x, tuple):
        return True, x
    if isinstance(x, list):
        return True, tuple(x)
    return False, (x,)


def _prep(inputs: tuple[Any, ...], create_graph: bool) -> tuple[Any, ...]:
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(True))
    return tuple(out)


def _fill(grads: tuple[Any, ...], like: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(g if g is not None else _new(np.zeros(x.shape, x._value.dtype)) for g, x in zip(grads, like))


def _post(x: Any, create_graph: bool) -> Any:
    if x is None or create_graph:
        return x
    return x.detach()


def _grad(outs: Any, ins: tuple[Any, ...], gos: Any, create_graph: bool) -> tuple[Any, ...]:
    outs_t = [o for o in (outs if isinstance(outs, tuple) else (outs,))]
    keep = [(o, g) for o, g in zip(outs_t, gos if isinstance(gos, tuple) else (gos,)) if o.requires_grad]
    if not keep:
        return tuple(None for _ in ins)
    return grad([o for o, _ in keep], ins, [g for _, g in keep], retain_graph=True,
                create_graph=create_graph, allow_unused=True)


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T J)``."""
    is_t, ins = _tup(inputs)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        out_t, outs = _tup(out)
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            vs: Any = (_new(np.ones(outs[0].shape, outs[0]._value.dtype)),)
        else:
            vs = _tup(v)[1]
        g = _fill(_grad(outs, ins, vs, create_graph), ins)
    res = tuple(_post(x, create_graph) for x in g)
    o = tuple(_post(x, create_graph) for x in outs)
    return (o if out_t else o[0]), (res if is_t else res[0])


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), J v)`` (by differentiating a vjp, as PyTorch does)."""
    is_t, ins = _tup(inputs)
    vs = _tup(v)[1] if v is not None else tuple(_new(np.ones(x.shape, x._value.dtype)) for x in ins)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        out_t, outs = _tup(out)
        us = tuple(_new(np.zeros(o.shape, o._value.dtype)).requires_grad_(True) for o in outs)
        g = _grad(outs, ins, us, create_graph=True)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None and gi.requires_grad]
        if pairs:
            res = grad([p[0] for p in pairs], us, [p[1] for p in pairs], create_graph=create_graph,
                       allow_unused=True)
        else:
            res = (None,) * len(us)
        res = _fill(res, outs)
    r = tuple(_post(x, create_graph) for x in res)
    o = tuple(_post(x, create_graph) for x in outs)
    return (o if out_t else o[0]), (r if out_t else r[0])


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``out.shape + in.shape`` per pair."""
    is_t, ins = _tup(inputs)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        out_t, outs = _tup(out)
        result = []
        for o in outs:
            flat = o.reshape(-1)
            rows: list[list[Any]] = [[] for _ in ins]
            for i in range(flat.shape[0]):
                if o.requires_grad:
                    g = _grad((flat[i],), ins, (None,), create_graph)
                else:
                    g = (None,) * len(ins)
                for k, gk in enumerate(_fill(g, ins)):
                    rows[k].append(gk)
            per_in = []
            for k, x in enumerate(ins):
                if rows[k]:
                    j = stack(rows[k]).reshape(*(tuple(o.shape) + tuple(x.shape)))
                else:
                    j = _new(np.zeros(tuple(o.shape) + tuple(x.shape), x._value.dtype))
                per_in.append(_post(j, create_graph))
            result.append(tuple(per_in) if is_t else per_in[0])
    return tuple(result) if out_t else result[0]


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of scalar ``func`` at ``inputs`` (``in.shape + in.shape``)."""
    is_t, ins = _tup(inputs)

    def grad_func(*xs: Any) -> Any:
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "containing a single element")
        g = _fill(_grad((out,), xs, (None,), create_graph=True), xs)
        return g if is_t else g[0]

    return jacobian(grad_func, inputs, create_graph=create_graph)


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T H)``."""
    is_t, ins = _tup(inputs)
    vs = _tup(v)[1] if v is not None else tuple(_new(np.ones(x.shape, x._value.dtype)) for x in ins)
    with enable_grad():
        ins = _prep(ins, create_graph)
        out = func(*ins)
        g = _grad((out,), ins, (None,), create_graph=True)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None and gi.requires_grad]
        if pairs:
            res = _grad(tuple(p[0] for p in pairs), ins, tuple(p[1] for p in pairs), create_graph)
        else:
            res = (None,) * len(ins)
        res = _fill(res, ins)
    r = tuple(_post(x, create_graph) for x in res)
    return _post(out, create_graph), (r if is_t else r[0])


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), H v)`` (equal to ``vhp`` for the symmetric Hessian)."""
    return vhp(func, inputs, v, create_graph, strict)

__getattr__ = missing_names(__name__, "torch.autograd.functional")
