"""``fixed_point``: a fixed-point iteration differentiated by the implicit
function theorem (HIPS autograd's ``autograd.misc.fixed_points.fixed_point``).

``x* = f(a)(x*)`` defines ``x*`` as a function of ``a``. Differentiating
``x* = F(a, x*)`` gives ``dx* = F_a da + F_x dx*``, so the reverse-mode
cotangent of ``a`` is ``w F_a`` where ``w`` solves ``w = g + w F_x``: itself
a fixed point, found by the same iteration (``w <- g + vjp_x(w)``, which
converges where the forward iteration does, ``F_x`` being a contraction
there). The iteration is never differentiated through, so its memory does
not grow with the number of steps. The backward pass is written with
``fixed_point`` and ``vjp``, so it differentiates again (second order,
``hessian``); forward mode transposes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.flatten import ravel_pytree
from tapegrad.pytree import tree_flatten

__all__ = ["fixed_point"]


def _max_abs_distance(x: Any, y: Any) -> Any:
    """The default distance: the largest absolute difference over the leaves."""
    return max((float(np.max(np.abs(np.asarray(value(a)) - np.asarray(value(b))), initial=0.0))
                for a, b in zip(tree_flatten(x)[0], tree_flatten(y)[0])), default=0.0)


def _iterate(flat_a: Any, flat_x0: Any, *, f: Callable[..., Any], unravel_a: Callable[[Any], Any],
             unravel_x: Callable[[Any], Any], distance: Callable[[Any, Any], Any], tol: float,
             max_iter: int) -> Any:
    step = f(unravel_a(flat_a))
    x_prev = unravel_x(flat_x0)
    x = step(x_prev)
    for _ in range(max_iter):
        if not distance(x, x_prev) > tol:
            return ravel_pytree(x)[0]
        x, x_prev = step(x), x
    raise RuntimeError(f"fixed_point: no convergence to tolerance {tol} in {max_iter} iterations "
                       "(raise max_iter or the tolerance)")


fixed_point_p = primitive(_iterate, "fixed_point")


def _vjp_a(ans: Any, flat_a: Any, flat_x0: Any, *, f: Callable[..., Any], unravel_a: Callable[[Any], Any],
           unravel_x: Callable[[Any], Any], distance: Callable[[Any, Any], Any], tol: float,
           max_iter: int) -> Any:
    from tapegrad.transforms.reverse import vjp

    def flat_step(fa: Any, fx: Any) -> Any:
        return ravel_pytree(f(unravel_a(fa))(unravel_x(fx)))[0]

    def rev_iter(params: Any) -> Any:
        fa, x_star, x_star_bar = params
        _, back_x = vjp(lambda fx: flat_step(fa, fx), x_star)
        return lambda w: back_x(w)[0] + x_star_bar

    def vjp_rule(g: Any) -> Any:
        w0 = np.zeros(np.shape(value(g)), dtype=np.result_type(value(g)))
        w = fixed_point(rev_iter, (flat_a, ans, g), w0, distance, tol, max_iter=max_iter)
        _, back_a = vjp(lambda fa: flat_step(fa, ans), flat_a)
        return back_a(w)[0]

    return vjp_rule


defvjp(fixed_point_p, _vjp_a,
       lambda ans, flat_a, flat_x0, **kw: lambda g: g * 0.0)  # (x* does not depend on the start)


def fixed_point(f: Callable[[Any], Callable[[Any], Any]], a: Any, x0: Any,
                distance: Callable[[Any, Any], Any] | None = None, tolerance: float = 1e-10,
                *, max_iter: int = 100_000) -> Any:
    """The fixed point ``x* = f(a)(x*)``, iterating ``x <- f(a)(x)`` from ``x0``
    until ``distance(x_new, x) <= tolerance``; differentiable in ``a`` by the
    implicit function theorem (the iteration is not taped).

    HIPS autograd's ``fixed_point(f, a, init, distance, tolerance)``, same
    argument order: ``f`` is curried (``f(a)`` returns the step function of
    ``x``). ``a`` and ``x0`` may be pytrees of float arrays. ``distance``
    defaults to the largest absolute difference. ``max_iter`` (keyword) caps
    the iterations: past it, ``RuntimeError``. The gradient is zero in
    ``x0``.

    Examples:
        >>> newton_sqrt = lambda a: lambda x: 0.5 * (x + a / x)
        >>> round(float(tg.fixed_point(newton_sqrt, 2.0, 1.0)), 12)
        1.414213562373
        >>> round(float(tg.grad(lambda a: tg.fixed_point(newton_sqrt, a, 1.0))(2.0)), 12)  # 1/(2 sqrt 2)
        0.353553390593
    """
    if distance is None:
        distance = _max_abs_distance
    flat_a, unravel_a = ravel_pytree(a)
    flat_x0, unravel_x = ravel_pytree(x0)
    if not isinstance(flat_a, Traced):
        flat_a = np.asarray(flat_a, dtype=np.result_type(flat_a, np.float64))
    out = fixed_point_p(flat_a, flat_x0, f=f, unravel_a=unravel_a, unravel_x=unravel_x,
                        distance=distance, tol=float(tolerance), max_iter=int(max_iter))
    return unravel_x(out)
