"""Newton's method on the Rosenbrock function, with tg.grad and tg.hessian.

    f(x, y) = (1 - x)^2 + 100 (y - x^2)^2,   minimum 0 at (1, 1)

Each step solves H(p) d = -g(p) with the exact gradient (reverse mode) and
Hessian (forward-over-reverse); a backtracking line search keeps f
decreasing. Prints the loss at every iterate and stops at (1, 1).

Run: python examples/newton_rosenbrock.py [--start X Y] [--small]
"""

from __future__ import annotations

import argparse

import numpy as np

import tapegrad as tg


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def newton(f, p, steps: int, tol: float = 1e-12):
    """Damped Newton iterations from ``p``; yields (iteration, point, loss)."""
    grad, hess = tg.grad(f), tg.hessian(f)
    yield 0, p, f(p)
    for k in range(1, steps + 1):
        g = grad(p)
        if np.linalg.norm(g) < tol:
            return
        d = np.linalg.solve(hess(p), -g)
        t, fp = 1.0, f(p)
        while f(p + t * d) > fp and t > 1e-8:  # backtrack until f decreases
            t *= 0.5
        p = p + t * d
        yield k, p, f(p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", nargs=2, type=float, default=(-1.2, 1.0), metavar=("X", "Y"))
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--small", action="store_true", help="a quick run (at most 50 steps)")
    args = parser.parse_args()
    steps = min(args.steps, 50) if args.small else args.steps

    start = np.array(args.start, dtype=float)
    print(f"gradient at the start: {tg.grad(rosenbrock)(start)}")
    print(f"Hessian at the start:\n{tg.hessian(rosenbrock)(start)}")
    p = start
    for k, p, loss in newton(rosenbrock, start, steps):
        print(f"iter {k:3d}  x = {p[0]: .10f}  y = {p[1]: .10f}  loss = {loss:.3e}")
    err = np.max(np.abs(p - 1.0))
    print(f"final point ({p[0]:.12f}, {p[1]:.12f}), distance to (1, 1): {err:.1e}")
    if err > 1e-6:
        raise SystemExit("did not converge to (1, 1)")


if __name__ == "__main__":
    main()
