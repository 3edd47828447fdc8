"""``torch.func``: grad, vjp, jvp, jacrev, jacfwd, hessian, thin over tapegrad's transforms.

Tensors are unwrapped to tapegrad values at the boundary and the function
sees tensors again inside, so the one tape does all the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
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


def _select(func: Callable[..., Any], args: tuple[Any, ...], argnums: int | tuple[int, ...]) -> tuple[Any, Any]:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)

    def f_sel(*sel: Any) -> Any:
        full = list(args)
        for n, s in zip(nums, sel):
            full[n] = s
        return func(*full)

    return f_sel, tuple(args[n] for n in nums)


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian by reverse mode: shape ``out.shape + in.shape``.

    One replay of the recorded function pushes the whole identity through
    (tapegrad's batched vjp).
    """
    if has_aux:
        raise NotImplementedError("tapegrad.torch.func.jacrev: has_aux=True is not supported yet")

    def jac(*args: Any) -> Any:
        f_sel, sel = _select(_raw_fn(func), _raw(args), argnums)
        out, fn = tg.vjp(f_sel, *sel)
        oshape = np.shape(tg.value(out))
        n = int(np.prod(oshape))
        dt = np.result_type(tg.value(out))
        eye = np.eye(n, dtype=dt).reshape((n,) + oshape)
        if hasattr(fn, "batched"):
            rows = fn.batched(eye, (n,))
        else:
            per = [fn(eye[i]) for i in range(n)]
            rows = tuple(tnp.stack([p[k] for p in per]) for k in range(len(sel)))
        js = tuple(tnp.reshape(r, oshape + np.shape(tg.value(s))) for r, s in zip(rows, sel))
        return _box(js if isinstance(argnums, tuple) else js[0])

    return jac


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False,
           randomness: str = "error") -> Callable[..., Any]:
    """The Jacobian by forward mode: one ``jvp`` per input entry."""
    if has_aux:
        raise NotImplementedError("tapegrad.torch.func.jacfwd: has_aux=True is not supported yet")

    def jac(*args: Any) -> Any:
        f_sel, sel = _select(_raw_fn(func), _raw(args), argnums)
        js = []
        for k, s in enumerate(sel):
            shape = np.shape(tg.value(s))
            dt = np.result_type(tg.value(s))
            n = int(np.prod(shape))
            cols = []
            out = None
            for i in range(n):
                tangents = [np.zeros(np.shape(tg.value(x)), np.result_type(tg.value(x))) for x in sel]
                e = np.zeros(n, dt)
                e[i] = 1
                tangents[k] = e.reshape(shape)
                out, t = tg.jvp(f_sel, tuple(sel), tuple(tangents))
                cols.append(t)
            if out is None:
                out = f_sel(*sel)
            oshape = np.shape(tg.value(out))
            j = tnp.stack(cols, axis=-1) if cols else np.zeros(oshape + (0,))
            js.append(tnp.reshape(j, oshape + shape))
        return _box(tuple(js) if isinstance(argnums, tuple) else js[0])

    return jac


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian, ``jacfwd(jacrev(func))``: shape ``in.shape + in.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)


def vmap(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("tapegrad.torch.func.vmap is not implemented")
