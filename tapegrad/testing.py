"""check_grads: compare derivatives with central finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.core.traced import value
from tapegrad.pytree import tree_flatten, tree_unflatten


def _real_scalar_of(f: Callable[..., Any], u_leaves: list[Any]) -> Callable[..., float]:
    """x -> Re(sum(u * f(x))) over the leaves of f's output."""

    def s(*args: Any) -> float:
        out = tree_flatten(f(*args))[0]
        return float(sum(np.real(np.sum(np.asarray(value(o)) * u)) for o, u in zip(out, u_leaves)))

    return s


def _random_like(rng: np.random.Generator, x: Any) -> np.ndarray:
    x = np.asarray(value(x))
    r = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        r = r + 1j * rng.standard_normal(x.shape)
    return r.astype(x.dtype) if x.dtype.kind in "fc" else r


def _numeric_grad(s: Callable[..., float], args: list[Any], eps: float) -> list[np.ndarray]:
    """Per-entry central differences of a real scalar s, in JAX's convention
    for complex inputs (d/dRe - i d/dIm)."""
    grads = []
    for k, a in enumerate(args):
        a = np.asarray(a)
        g = np.zeros(a.shape, dtype=a.dtype)
        flat_g = g.reshape(-1)
        steps = [1.0, 1j] if np.iscomplexobj(a) else [1.0]
        for j in range(a.size):
            for step in steps:
                hi, lo = a.copy().reshape(-1), a.copy().reshape(-1)
                hi[j] += eps * step
                lo[j] -= eps * step
                args_hi = list(args)
                args_lo = list(args)
                args_hi[k] = hi.reshape(a.shape)
                args_lo[k] = lo.reshape(a.shape)
                dv = (s(*args_hi) - s(*args_lo)) / (2 * eps)
                flat_g[j] += dv if step == 1.0 else -1j * dv
        grads.append(g)
    return grads


def check_grads(f: Callable[..., Any], args: Sequence[Any], modes: Sequence[str] = ("fwd", "rev"),
                order: int = 2, eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-6,
                seed: int = 0) -> None:
    """Check the derivatives of ``f`` at ``args`` against central differences.

    Reverse mode compares ``vjp(f)(u)`` for a random cotangent ``u`` with the
    finite-difference gradient of ``Re(sum(u * f(x)))``, entry by entry.
    Forward mode compares ``jvp(f)(t)`` along a random tangent with the
    central difference of ``f`` along ``t``. With ``order > 1`` the same
    checks run on the derivative functions themselves (nesting the
    transforms), as functions of the inputs AND of the cotangent (or
    tangent): so a rule that calls another primitive has that primitive's
    rules checked too, the one for the cotangent it is handed included (as
    autograd's ``check_vjp`` does). Inputs must be float64 (or complex128)
    arrays. Errors name the order of the derivative that is wrong.

    Raises:
        AssertionError: naming the mode, order, argument and worst entry.
    """
    _check_grads(f, args, modes, order, eps, rtol, atol, seed, 1)


def _check_grads(f: Callable[..., Any], args: Sequence[Any], modes: Sequence[str], order: int, eps: float,
                 rtol: float, atol: float, seed: int, depth: int) -> None:
    """``check_grads`` at derivative order ``depth`` (the name errors give)."""
    from tapegrad.transforms import vjp

    args = [np.asarray(a) for a in args]
    rng = np.random.default_rng(seed)
    out = f(*args)
    out_leaves, out_def = tree_flatten(out)
    u = [_random_like(rng, o) for o in out_leaves]
    if "rev" in modes:
        _, vjp_fn = vjp(f, *args)
        got = vjp_fn(tree_unflatten(out_def, [ui.astype(np.asarray(value(o)).dtype) if np.iscomplexobj(value(o)) else ui for ui, o in zip(u, out_leaves)]))
        want = _numeric_grad(_real_scalar_of(f, u), args, eps)
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(np.asarray(value(g)), w, f"reverse mode, order {depth}, argument {k}", rtol, atol)
    if "fwd" in modes:
        from tapegrad.transforms import jvp

        t = [_random_like(rng, a) for a in args]
        _, tan = jvp(f, tuple(args), tuple(t))
        hi = f(*[a + eps * ti for a, ti in zip(args, t)])
        lo = f(*[a - eps * ti for a, ti in zip(args, t)])
        num = [(np.asarray(value(h)) - np.asarray(value(low))) / (2 * eps)
               for h, low in zip(tree_flatten(hi)[0], tree_flatten(lo)[0])]
        for k, (g, w) in enumerate(zip(tree_flatten(tan)[0], num)):
            _compare(np.asarray(value(g)), w, f"forward mode, order {depth}, output {k}", rtol, atol)
    if order > 1:
        n = len(args)
        if "rev" in modes:
            us = [np.asarray(ui).astype(np.asarray(value(o)).dtype) if np.asarray(value(o)).dtype.kind in "fc"
                  else np.asarray(ui) for ui, o in zip(u, out_leaves)]

            def vjp_of_f(*xs_us: Any) -> Any:  # the VJP as a function of the inputs and the cotangent
                return vjp(f, *xs_us[:n])[1](tree_unflatten(out_def, list(xs_us[n:])))

            _check_grads(vjp_of_f, [*args, *us], ("rev",), order - 1, eps, rtol, atol, seed + 1, depth + 1)
        if "fwd" in modes:
            from tapegrad.transforms import jvp

            ts = [_random_like(rng, a) for a in args]

            def jvp_of_f(*xs_ts: Any) -> Any:  # the JVP as a function of the inputs and the tangent
                return jvp(f, tuple(xs_ts[:n]), tuple(xs_ts[n:]))[1]

            _check_grads(jvp_of_f, [*args, *ts], ("fwd",), order - 1, eps, rtol, atol, seed + 1, depth + 1)


def _compare(got: np.ndarray, want: np.ndarray, where: str, rtol: float, atol: float) -> None:
    if got.shape != want.shape:
        raise AssertionError(f"check_grads ({where}): shape {got.shape}, expected {want.shape}")
    if got.size == 0:
        return
    scale = max(1.0, float(np.max(np.abs(want))))
    err = np.abs(got - want)
    bad = err > atol * scale + rtol * np.abs(want)
    if np.any(bad) or not np.all(np.isfinite(got) == np.isfinite(want)):
        worst = np.unravel_index(int(np.argmax(np.where(np.isnan(err), np.inf, err))), got.shape)
        raise AssertionError(
            f"check_grads ({where}): derivative mismatch; worst entry {tuple(int(i) for i in worst)}: "
            f"got {got[worst]!r}, finite differences give {want[worst]!r} "
            f"(abs error {err[worst]:.3g})"
        )
