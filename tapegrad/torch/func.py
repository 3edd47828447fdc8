"""``torch.func``: grad, vjp, jvp, jacrev, jacfwd, hessian, thin over tapegrad's transforms.

Tensors are unwrapped to tapegrad values at the boundary and the function
sees tensors again inside, so the one tape does all the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tapegrad as tg
from tapegrad.pytree import tree_map
from tapegrad.torch._tensor import Tensor, _result

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]


def _raw(x: Any) -> Any:
    return tree_map(lambda t: t._value if isinstance(t, Tensor) else t, x)


def _box(x: Any) -> Any:
    return tree_map(lambda v: _result(v, "", ()) if hasattr(v, "shape") else v, x)


def _raw_fn(f: Callable[..., Any], has_aux: bool = False) -> Callable[..., Any]:
    def raw_f(*xs: Any) -> Any:
        out = f(*_box(xs))
        if has_aux:
            return _raw(out[0]), _raw(out[1])
        return _raw(out)

    raw_f.__name__ = getattr(f, "__name__", "f")
    return raw_f


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of scalar ``func`` with respect to argument(s) ``argnums``.

    Example:
        >>> torch.func.grad(lambda x: (x ** 2).sum())(torch.tensor([1.0, 2.0]))
        tensor([2., 4.])
    """
    g = tg.grad(_raw_fn(func, has_aux), argnums, has_aux)

    def grad_f(*args: Any) -> Any:
        return _box(g(*_raw(args)))

    return grad_f


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Like :func:`grad`, returning ``(grad, value)``."""
    vg = tg.value_and_grad(_raw_fn(func, has_aux), argnums, has_aux)

    def f(*args: Any) -> Any:
        v, g = vg(*_raw(args))
        return _box(g), _box(v)

    return f


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(ct)`` returns one tensor per primal."""
    res = tg.vjp(_raw_fn(func, has_aux), *_raw(primals), has_aux=has_aux)
    fn = res[1]

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        return _box(fn(_raw(ct)))

    if has_aux:
        return _box(res[0]), vjp_fn, _box(res[2])
    return _box(res[0]), vjp_fn


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Any:
    """``(func(*primals), J @ tangents)`` (forward mode)."""
    if has_aux:
        raise NotImplementedError("tapegrad.torch.func.jvp: has_aux=True is not supported yet")
    out, t = tg.jvp(_raw_fn(func), tuple(_raw(primals)), tuple(_raw(tangents)))
    return _box(out), _box(t)


def _thin(transform: Callable[..., Any], func: Callable[..., Any], argnums: int | tuple[int, ...],
          who: str, has_aux: bool = False) -> Callable[..., Any]:
    """A tapegrad Jacobian transform over a function of facade tensors."""
    if has_aux:
        raise NotImplementedError(f"tapegrad.torch.func.{who}: has_aux=True is not supported yet")
    j = transform(_raw_fn(func), argnums)

    def jac(*args: Any) -> Any:
        return _box(j(*_raw(args)))

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


def vmap(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("tapegrad.torch.func.vmap is not implemented")
