"""tapegrad.scipy.integrate: ``odeint``, differentiable to any order in both modes.

``odeint(func, y0, t, *args)`` (or SciPy's ``args=(...)`` keyword) solves
``dy/dt = func(y, t, *args)`` with ``scipy.integrate.odeint`` (LSODA; SciPy
imported on first use) and returns ``y`` at the times ``t`` (shape
``(len(t),) + y0.shape``). Its derivatives in ``y0``, ``t`` and ``args`` are
themselves ``odeint`` calls, on larger systems, written with differentiable
operations (as ``jax.experimental.ode`` does), so they differentiate again:
``grad`` of ``grad``, ``hessian``, ``jvp`` of ``grad``, under ``vmap`` and
``jit``.

- **Reverse mode** (the adjoint method): the cotangent ``g`` of the
  solution is carried backwards from each observation time to the previous
  one by solving, from ``t[i]`` to ``t[i-1]``,

      dy/dt = f(y, t),  da/dt = -a^T df/dy,  db/dt = -a^T df/dt,  dc/dt = -a^T df/dargs

  with ``y(t[i]) = ys[i]``, adding each observation's cotangent to ``a`` on
  the way; ``a``, ``b`` and ``c`` end as the cotangents of ``y0``, ``t[0]``
  and ``args`` (``t[i]``'s is ``f(ys[i], t[i]) . g[i]``). The right-hand
  side comes from ``tg.vjp`` of ``func``.
- **Forward mode** (forward sensitivities): the tangent ``v`` of the
  solution obeys ``dv/dt = df/dy v + df/dargs dargs``, solved with ``y``
  from ``v(t[0]) = dy0 - f(y0, t[0]) dt[0]``; the output tangent at
  ``t[i]`` adds ``f(ys[i], t[i]) dt[i]``. The right-hand side comes from
  ``tg.jvp`` of ``func``.

A stack of cotangents or tangents (``jacrev``, ``jacfwd``, ``hessian``)
goes through one solve of a system that carries all of them (the rules
take leading batch axes), not one solve each. Each solve uses the same ``rtol``, ``atol``, ``mxstep`` and ``hmax``: the
derivatives are as accurate as those tolerances allow (the solver's own
steps are never differentiated). ``func`` must be written with
``tapegrad.numpy`` and take its traced inputs as arguments (not closures).
Under ``vmap`` each example is solved on its own (a loop: each to its own
tolerance, as separate calls would be). Under ``jit`` a solve is one opaque
instruction of the program: its adaptive steps run when the program runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.primitive import defjvp, defvjp, primitive
from tapegrad.core.traced import Traced
from tapegrad.flatten import ravel_pytree
from tapegrad.scipy._lazy import scipy_module

__all__ = ["odeint"]

# The primitive works on flat vectors: ``func(y, t, a)`` maps a state ``y`` of
# shape (n,), a scalar time and the flat extra arguments ``a`` (shape (p,)) to
# dy/dt, shape (n,). Its one input packs ``[y0, t, a]`` (sizes n, T, p) so that
# one rule gives all three cotangents from one adjoint solve; its output is
# ``ys``, shape (T, n).

FlatFunc = Callable[[Any, Any, Any], Any]


def _scipy_odeint() -> Any:
    return scipy_module("integrate", "tapegrad.scipy.integrate.odeint").odeint


def _unpack(packed: Any, n: int, T: int) -> tuple[Any, Any, Any]:
    return packed[:n], packed[n:n + T], packed[n + T:]


def _solve(packed: Any, *, func: FlatFunc, n: int, T: int, rtol: float, atol: float, mxstep: int,
           hmax: float) -> Any:
    y0, t, a = _unpack(np.asarray(packed), n, T)

    def rhs(y: Any, tt: float) -> Any:
        dy = func(y, np.float64(tt), a)
        if isinstance(dy, Traced):
            raise TypeError("odeint: func returned a traced value from plain inputs: it closes over a "
                            "value being differentiated; pass that value as one of func's extra arguments")
        return np.asarray(dy, dtype=np.float64)

    # (SciPy's hmax=0.0 means "no limit", as JAX's hmax=inf does)
    return _scipy_odeint()(rhs, y0, t, rtol=rtol, atol=atol, mxstep=mxstep,
                           hmax=hmax if np.isfinite(hmax) else 0.0)


odeint_p = primitive(_solve, "odeint")


def _adjoint_system(func: FlatFunc, n: int, B: int) -> FlatFunc:
    """The right-hand side of the adjoint solve for ``B`` cotangents at once:
    the state ``[y, a, b, c]`` holds ``y`` (n) and, per cotangent, ``a`` (n),
    ``b`` (1) and ``c`` (p), each block cotangent-major. A function of the
    same flat form as ``func``, so it is solved, and differentiated, by
    ``odeint_p`` again; it closes over nothing traced."""
    from tapegrad.transforms.reverse import vjp

    def aug(s: Any, tt: Any, a: Any) -> Any:
        y, adj = s[:n], tnp.reshape(s[n:n + B * n], (B, n))
        dy, back = vjp(func, y, tt, a)
        # (one backward pass for all B)
        vy, vt, va = back(adj[0]) if B == 1 else back.batched(adj, (B,))
        return tnp.concatenate([dy, -tnp.reshape(vy, (-1,)), -tnp.reshape(vt, (B,)), -tnp.reshape(va, (-1,))])

    return aug


def _sensitivity_system(func: FlatFunc, n: int, p: int, B: int) -> FlatFunc:
    """The right-hand side of the forward-sensitivity solve for ``B`` tangents
    at once: the state ``[y, v]`` holds ``y`` (n) and one ``v`` (n) per
    tangent, the arguments ``[a, da]`` hold ``a`` (p) and one ``da`` (p) per
    tangent."""
    from tapegrad.transforms.forward import jvp

    def sens(s: Any, tt: Any, ad: Any) -> Any:
        y, v = s[:n], tnp.reshape(s[n:], (B, n))
        a, da = ad[:p], tnp.reshape(ad[p:], (B, p))
        dt = tnp.zeros_like(tt)
        if B == 1:
            dy, dv = jvp(func, (y, tt, a), (v[0], dt, da[0]))
        else:  # (the B tangents pushed by one forward pass: jacfwd along c at c = 0)
            from tapegrad.transforms.forward import jacfwd

            dy = func(y, tt, a)
            c0 = tnp.zeros(B)
            dv = tnp.transpose(jacfwd(lambda c: func(y + tnp.dot(c, v), tt, a + tnp.dot(c, da)))(c0))
        return tnp.concatenate([dy, tnp.reshape(dv, (-1,))])

    return sens


def _vjp(ans: Any, packed: Any, *, func: FlatFunc, n: int, T: int, **opts: Any) -> Callable[[Any], Any]:
    """Reverse mode: the cotangent of ``[y0, t, args]`` by the adjoint method,
    written with ``odeint_p`` and ``tapegrad.numpy`` so that it differentiates.
    A stack of cotangents (``jacrev``, ``hessian``) is carried back by one
    solve."""
    N = int(np.shape(packed)[0])
    p = N - n - T

    def rule(g: Any) -> Any:
        batch = tuple(np.shape(g)[:-2])
        B = int(np.prod(batch, dtype=int))
        g = tnp.reshape(g, (B, T, n))
        aug = _adjoint_system(func, n, B)
        _, t, a = _unpack(packed, n, T)
        adj = g[:, T - 1]
        t0_bar: Any = tnp.zeros(B)
        args_bar: Any = tnp.zeros((B, p))
        t_bars = []
        for i in range(T - 1, 0, -1):
            # moving the observation time t[i] moves y(t[i]) along f
            t_bar = tnp.dot(g[:, i], func(ans[i], t[i], a))
            t_bars.append(t_bar)
            t0_bar = t0_bar - t_bar
            start = tnp.concatenate([ans[i], tnp.reshape(adj, (-1,)), t0_bar, tnp.reshape(args_bar, (-1,))])
            span = tnp.stack([t[i], t[i - 1]])
            end = odeint_p(tnp.concatenate([start, span, a]), func=aug, n=n + B * (n + 1 + p), T=2, **opts)[1]
            adj = tnp.reshape(end[n:n + B * n], (B, n)) + g[:, i - 1]
            t0_bar = end[n + B * n:n + B * (n + 1)]
            args_bar = tnp.reshape(end[n + B * (n + 1):], (B, p))
        ts_bar = tnp.stack([t0_bar, *t_bars[::-1]], axis=1)
        return tnp.reshape(tnp.concatenate([adj, ts_bar, args_bar], axis=1), batch + (N,))

    return rule


def _jvp(ans: Any, packed: Any, *, func: FlatFunc, n: int, T: int, **opts: Any) -> Callable[[Any], Any]:
    """Forward mode: the tangent of ``ys`` by forward sensitivities, written with
    ``odeint_p`` and ``tapegrad.numpy`` so that it differentiates. A stack of
    tangents (``jacfwd``, ``hessian``) is pushed by one solve."""
    N = int(np.shape(packed)[0])
    p = N - n - T

    def rule(dp: Any) -> Any:
        batch = tuple(np.shape(dp)[:-1])
        B = int(np.prod(batch, dtype=int))
        dp = tnp.reshape(dp, (B, N))
        y0, t, a = _unpack(packed, n, T)
        dy0, dt, da = dp[:, :n], dp[:, n:n + T], dp[:, n + T:]
        fs = tnp.stack([func(ans[i], t[i], a) for i in range(T)])
        v0 = dy0 - dt[:, :1] * fs[0]
        sens = _sensitivity_system(func, n, p, B)
        sol = odeint_p(tnp.concatenate([y0, tnp.reshape(v0, (-1,)), t, a, tnp.reshape(da, (-1,))]),
                       func=sens, n=n + B * n, T=T, **opts)
        vs = tnp.moveaxis(tnp.reshape(sol[:, n:], (T, B, n)), 1, 0)
        return tnp.reshape(vs + dt[:, :, None] * fs, batch + (T, n))

    return rule


defvjp(odeint_p, _vjp, batched=True)
defjvp(odeint_p, _jvp, batched=True)


def _flat_func(func: Callable[..., Any], shape: tuple[int, ...], unravel: Callable[[Any], Any]) -> FlatFunc:
    def flat(y: Any, tt: Any, a: Any) -> Any:
        dy = func(tnp.reshape(y, shape), tt, *unravel(a))
        if isinstance(dy, (list, tuple)):  # (autograd's users write np.array([dy1, dy2]))
            dy = tnp.stack([tnp.asarray(d) for d in dy])
        return tnp.reshape(dy, (-1,))

    return flat


def odeint(func: Callable[..., Any], y0: Any, t: Any, *fargs: Any, args: Any = None, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: int = 0, hmax: float = np.inf) -> Any:
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``, returning
    ``y`` at every time in ``t`` (increasing or decreasing), shape
    ``(len(t),) + y0.shape``.

    The extra arguments of ``func`` come either JAX's way, positionally
    (``odeint(func, y0, t, k)``), or SciPy's and HIPS autograd's way, as the
    keyword ``args=(k,)`` (a tuple; one value that is not a tuple is taken as
    the only argument), not both. They are any pytree of float arrays.
    ``rtol``, ``atol``: the solver's relative and absolute error tolerances;
    ``mxstep``: its maximum number of internal steps per output interval (0:
    SciPy's default, 500); ``hmax``: its largest step (default: no limit).

    Differentiable in ``y0``, ``t`` and the extra arguments, to any order, in
    reverse and forward mode, under ``vmap`` and ``jit``: each derivative is
    another ``odeint`` (see the module docstring), solved with the same
    tolerances.

    Examples:
        >>> decay = lambda y, t, k: -k * y
        >>> ys = odeint(decay, np.array([1.0]), np.array([0.0, 1.0]), args=(0.5,))
        >>> round(float(ys[1, 0]), 6)                       # exp(-0.5)
        0.606531
        >>> d2 = tg.grad(tg.grad(lambda k: odeint(decay, 1.0, np.array([0.0, 1.0]), k)[1]))
        >>> round(float(d2(0.5)), 5)                        # d2/dk2 exp(-k) = exp(-k)
        0.60653
    """
    if args is not None:
        if fargs:
            raise TypeError("odeint: pass func's extra arguments positionally (JAX) or as args=(...) "
                            "(SciPy), not both")
        fargs = args if isinstance(args, tuple) else (args,)
    y0 = y0 if isinstance(y0, Traced) else np.asarray(y0, dtype=float)
    t = t if isinstance(t, Traced) else np.asarray(t, dtype=float)
    if np.ndim(t) != 1:
        raise ValueError(f"odeint: t must be a 1-D array of times, got shape {np.shape(t)}")
    flat, unravel = ravel_pytree(tuple(fargs))
    if not isinstance(flat, Traced):
        flat = np.asarray(flat, dtype=float)
    shape = tuple(np.shape(y0))
    n, T = int(np.prod(shape, dtype=int)), int(np.shape(t)[0])
    packed = tnp.concatenate([tnp.reshape(y0, (-1,)), t, flat])
    ys = odeint_p(packed, func=_flat_func(func, shape, unravel), n=n, T=T, rtol=float(rtol),
                  atol=float(atol), mxstep=int(mxstep), hmax=float(hmax))
    return tnp.reshape(ys, (T,) + shape)
