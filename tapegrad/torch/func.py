"""``torch.func``: grad, vjp, jvp, jacrev, jacfwd, hessian, thin over tapegrad's
transforms; vmap (``_vmap.py``), functional_call and stack_module_state (``_stateless.py``),
and functorch's make_functional / make_functional_with_buffers (``_stateless.py`` too).

Tensors are unwrapped to tapegrad values at the boundary and the function
sees tensors again inside, so the one tape does all the work.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import tapegrad as tg
from tapegrad.pytree import tree_map
from tapegrad.torch._missing import missing_names
from tapegrad.torch._stateless import (
    functional_call,
    make_functional,
    make_functional_with_buffers,
    stack_module_state,
)
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._vmap import _tensor_of, vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "make_functional",
           "make_functional_with_buffers", "stack_module_state", "vjp", "vmap"]


def _raw(x: Any) -> Any:
    """Tensors to their values; dicts of any kind (OrderedDict too) to plain
    dicts, which tapegrad's pytrees walk (they would take an OrderedDict for a leaf)."""
    if isinstance(x, Tensor):
        return x._value
    if isinstance(x, dict):
        return {k: _raw(v) for k, v in x.items()}
    t = type(x)
    if t is tuple or t is list:
        return t(_raw(c) for c in x)
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return t(*[_raw(c) for c in x])
    return x


def _box(x: Any, like: Any = None) -> Any:
    """Values to tensors; with ``like``, each dict takes the key order and
    the type of the matching dict of ``like`` (tapegrad's pytrees sort keys)."""
    out = tree_map(lambda v: _tensor_of(v) if hasattr(v, "shape") else v, x)
    return out if like is None else _restore(out, like)


def _restore(out: Any, like: Any) -> Any:
    if isinstance(out, dict) and isinstance(like, dict) and out.keys() == like.keys():
        d = copy.copy(like)
        for k in like:
            d[k] = _restore(out[k], like[k])
        return d
    if isinstance(out, (tuple, list)) and isinstance(like, (tuple, list)) and len(out) == len(like):
        kids = [_restore(o, k) for o, k in zip(out, like)]
        return type(out)(*kids) if hasattr(type(out), "_fields") else type(out)(kids)
    return out


def _raw_fn(f: Callable[..., Any], like: Any, has_aux: bool = False) -> Callable[..., Any]:
    """``f`` as a function of values, called with tensors shaped like ``like`` (its arguments)."""
    def raw_f(*xs: Any) -> Any:
        out = f(*_box(xs, like))
        if has_aux:
            return _raw(out[0]), _raw(out[1])
        return _raw(out)

    raw_f.__name__ = getattr(f, "__name__", "f")
    return raw_f


def _picked(args: tuple[Any, ...], argnums: int | tuple[int, ...]) -> Any:
    """The arguments ``argnums`` picks, as a gradient with respect to them is shaped."""
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of scalar ``func`` with respect to argument(s) ``argnums``.

    Examples:
        >>> torch.func.grad(lambda x: (x ** 2).sum())(torch.tensor([1.0, 2.0]))
        tensor([2., 4.])
    """
    def grad_f(*args: Any) -> Any:
        out = tg.grad(_raw_fn(func, args, has_aux), argnums, has_aux)(*_raw(args))
        if has_aux:
            return _box(out[0], _picked(args, argnums)), _box(out[1])
        return _box(out, _picked(args, argnums))

    return grad_f


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Like ``grad``, returning ``(grad, value)``."""
    def f(*args: Any) -> Any:
        v, g = tg.value_and_grad(_raw_fn(func, args, has_aux), argnums, has_aux)(*_raw(args))
        return _box(g, _picked(args, argnums)), _box(v)

    return f


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(ct)`` returns one tensor per primal."""
    res = tg.vjp(_raw_fn(func, primals, has_aux), *_raw(primals), has_aux=has_aux)
    fn = res[1]

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        return _box(fn(_raw(ct)), primals)

    if has_aux:
        return _box(res[0]), vjp_fn, _box(res[2])
    return _box(res[0]), vjp_fn


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Any:
    """``(func(*primals), J @ tangents)`` (forward mode)."""
    if has_aux:
        raise NotImplementedError("tapegrad.torch.func.jvp: has_aux=True is not supported yet")
    out, t = tg.jvp(_raw_fn(func, tuple(primals)), tuple(_raw(primals)), tuple(_raw(tangents)))
    return _box(out), _box(t)


def _thin(transform: Callable[..., Any], func: Callable[..., Any], argnums: int | tuple[int, ...],
          who: str, has_aux: bool = False) -> Callable[..., Any]:
    """A tapegrad Jacobian transform over a function of facade tensors."""
    if has_aux:
        raise NotImplementedError(f"tapegrad.torch.func.{who}: has_aux=True is not supported yet")

    def jac(*args: Any) -> Any:
        return _box(transform(_raw_fn(func, args), argnums)(*_raw(args)), _picked(args, argnums))

    return jac


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian by reverse mode, ``out.shape + in.shape``: one replay pushes
    the whole identity through (``tapegrad.jacrev``)."""
    return _thin(tg.jacrev, func, argnums, "jacrev", has_aux)


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
           randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian by forward mode, ``out.shape + in.shape``: one forward pass
    pushes every input direction (``tapegrad.jacfwd``)."""
    return _thin(tg.jacfwd, func, argnums, "jacfwd", has_aux)


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian, forward-over-reverse: shape ``in.shape + in.shape`` (``tapegrad.hessian``)."""
    return _thin(tg.hessian, func, argnums, "hessian")

__getattr__ = missing_names(__name__, "torch.func")
