"""tapegrad.scipy.integrate: ``odeint`` with gradients by the adjoint method.

``odeint(func, y0, t, *args)`` (or SciPy's ``args=(...)`` keyword) solves ``dy/dt = func(y, t, *args)`` with
``scipy.integrate.odeint`` (LSODA; SciPy imported on first use) and returns
``y`` at the times ``t`` (shape ``(len(t),) + y0.shape``). Gradients with
respect to ``y0``, ``t`` and ``args`` come from the adjoint method, as in
HIPS autograd and JAX: the backward pass solves the augmented system

    dy/dt = f(y, t),  da/dt = -a^T df/dy,  da_t/dt = -a^T df/dt,  da_args/dt = -a^T df/dargs

backwards from each observation time to the previous one with
``scipy.integrate.odeint`` on plain arrays (the vector-Jacobian products
come from ``tg.vjp`` of ``func``), adding each observation's cotangent to
``a`` on the way; it does not differentiate through the solver's steps.
So ``func`` must be written with ``tapegrad.numpy``. The gradients are as
accurate as the solver's tolerances allow.

First-order gradients only: the adjoint solve is a primitive with no rules
of its own (a second derivative raises the engine's error for a primitive
without a rule, naming ``odeint_adjoint``).
Under ``vmap`` both solves are mapped by a loop over the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.primitive import defvjp_argnum, primitive
from tapegrad.core.traced import Traced
from tapegrad.flatten import ravel_pytree
from tapegrad.scipy._lazy import scipy_module

__all__ = ["odeint"]


def _scipy_odeint() -> Any:
    return scipy_module("integrate", "tapegrad.scipy.integrate.odeint").odeint


def _solve(y0: Any, t: Any, flat_args: Any, *, func: Callable[..., Any], unravel: Callable[[Any], Any],
           rtol: float, atol: float, mxstep: int) -> Any:
    shape = np.shape(y0)
    args = unravel(flat_args)

    def rhs(y: Any, tt: Any) -> Any:
        return np.ravel(func(y.reshape(shape), tt, *args))

    ys = _scipy_odeint()(rhs, np.ravel(y0), t, rtol=rtol, atol=atol, mxstep=mxstep)
    return ys.reshape((len(t),) + shape)


odeint_p = primitive(_solve, "odeint")


def _adjoint(ys: Any, y0: Any, t: Any, flat_args: Any, g: Any, *, func: Callable[..., Any],
             unravel: Callable[[Any], Any], rtol: float, atol: float, mxstep: int) -> Any:
    """All the cotangents, packed: ``[y0_bar (raveled), t_bar, args_bar]``."""
    from tapegrad.transforms import vjp

    shape = np.shape(y0)
    D, P = int(np.size(y0)), int(np.size(flat_args))
    T = len(t)
    ys2 = np.reshape(ys, (T, D))
    g2 = np.reshape(g, (T, D))

    def flat_func(y: Any, tt: Any, fa: Any) -> Any:
        return func(y.reshape(shape), tt, *unravel(fa)).reshape(-1)

    def aug(state: Any, tt: Any) -> Any:
        y, a = state[:D], state[D:2 * D]
        dy, back = vjp(flat_func, y, np.asarray(tt, dtype=float), flat_args)
        vy, vt, va = back(-a)
        return np.concatenate([np.ravel(dy), np.ravel(vy), np.ravel(vt), np.ravel(va)])

    solve = _scipy_odeint()
    a = g2[-1].copy()
    t0_bar = 0.0
    args_bar = np.zeros(P)
    t_bar = np.zeros(T)
    for i in range(T - 1, 0, -1):
        ti = np.ravel(func(ys2[i].reshape(shape), t[i], *unravel(flat_args)))
        t_bar[i] = np.dot(ti, g2[i])
        t0_bar -= t_bar[i]
        state = np.concatenate([ys2[i], a, [t0_bar], args_bar])
        out = solve(aug, state, np.array([t[i], t[i - 1]]), rtol=rtol, atol=atol, mxstep=mxstep)[1]
        a = out[D:2 * D] + g2[i - 1]
        t0_bar = out[2 * D]
        args_bar = out[2 * D + 1:]
    t_bar[0] = t0_bar
    return np.concatenate([a, t_bar, args_bar])


odeint_adjoint_p = primitive(_adjoint, "odeint_adjoint")


class _Share:
    """The adjoint solve, run once per cotangent for all the arguments."""

    __slots__ = ("g", "out")

    def __init__(self) -> None:
        self.g: Any = None
        self.out: Any = None

    def get(self, ans: Any, y0: Any, t: Any, fa: Any, g: Any, kw: dict[str, Any]) -> Any:
        if self.g is not g:
            self.out = odeint_adjoint_p(ans, y0, t, fa, g, **kw)
            self.g = g
        return self.out


_pending: list[Any] = [None, None]


def _vjp_odeint(argnum: int, ans: Any, y0: Any, t: Any, fa: Any, **kw: Any) -> Any:
    if _pending[0] == id(ans):
        share = _pending[1]
    else:
        share = _Share()
        _pending[:] = [id(ans), share]
    D, T = int(np.size(y0)), len(t)
    shape = tuple(np.shape(y0))

    def vjp(g: Any) -> Any:
        packed = share.get(ans, y0, t, fa, g, kw)
        if argnum == 0:
            return packed[:D].reshape(shape)
        if argnum == 1:
            return packed[D:D + T]
        return packed[D + T:]
    return vjp


defvjp_argnum(odeint_p, _vjp_odeint)


def odeint(func: Callable[..., Any], y0: Any, t: Any, *fargs: Any, args: Any = None, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: int = 0) -> Any:
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``, returning
    ``y`` at every time in ``t`` (increasing or decreasing), shape
    ``(len(t),) + y0.shape``.

    The extra arguments of ``func`` come either JAX's way, positionally
    (``odeint(func, y0, t, k)``), or SciPy's and HIPS autograd's way, as the
    keyword ``args=(k,)`` (a tuple; one value that is not a tuple is taken as
    the only argument), not both. They are any pytree of float arrays.
    ``mxstep``: the solver's maximum number of internal steps per output
    interval (0: SciPy's default, 500). Differentiable in ``y0``, ``t`` and
    the extra arguments (the adjoint method: see the module docstring).

    Examples:
        >>> decay = lambda y, t, k: -k * y
        >>> ys = odeint(decay, np.array([1.0]), np.array([0.0, 1.0]), args=(0.5,))
        >>> round(float(ys[1, 0]), 6)                       # exp(-0.5)
        0.606531
    """
    if args is not None:
        if fargs:
            raise TypeError("odeint: pass func's extra arguments positionally (JAX) or as args=(...) "
                            "(SciPy), not both")
        fargs = args if isinstance(args, tuple) else (args,)
    y0 = y0 if isinstance(y0, Traced) else np.asarray(y0, dtype=float)
    t = t if isinstance(t, Traced) else np.asarray(t, dtype=float)
    flat, unravel = ravel_pytree(tuple(fargs))
    if not isinstance(flat, Traced):
        flat = np.asarray(flat, dtype=float)
    return odeint_p(y0, t, flat, func=func, unravel=unravel, rtol=rtol, atol=atol, mxstep=mxstep)
