"""Derivatives of tanh up to the 6th, by nesting tg.elementwise_grad, plotted with matplotlib.

Each derivative is the elementwise gradient of the one before, so the n-th one
is n nested reverse passes, each recorded on the tape of the pass around it.
The value at 0 is checked against the known series (0, 1, 0, -2, 0, 16, 0).

The plot gives each order its own panel and y-scale: on one shared scale the
6th derivative (peak |value| about 52) would flatten tanh and its first three.

Run: python examples/higher_derivatives.py [OUTPUT.png (default examples/out/tanh_derivatives.png)] [--small]
"""

from __future__ import annotations

import argparse

import numpy as np
from _output import default_output, ready

import tapegrad as tg
import tapegrad.numpy as tnp

ORDER = 6
AT_ZERO = [0.0, 1.0, 0.0, -2.0, 0.0, 16.0, 0.0]  # tanh^(n)(0), n = 0..6


def derivatives(order: int):
    """[tanh, tanh', tanh'', ...]: each one the elementwise grad of the last."""
    fs = [tnp.tanh]
    for _ in range(order):
        fs.append(tg.elementwise_grad(fs[-1]))
    return fs


def closed_form(n: int, x: float) -> float:
    """tanh^(n)(x) as a polynomial in t = tanh(x): d/dx P(t) = P'(t) (1 - t^2)."""
    p = np.polynomial.Polynomial([0.0, 1.0])  # P_0(t) = t
    for _ in range(n):
        p = p.deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0])
    return float(p(np.tanh(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default=default_output("tanh_derivatives.png"),
                        help="where to write the plot (PNG)")
    parser.add_argument("--small", action="store_true", help="fewer points (a quick run)")
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fs = derivatives(ORDER)
    for n, f in enumerate(fs):
        got = float(f(np.array([0.0]))[0]) + 0.0  # + 0.0: print -0.0 as 0.0
        assert abs(got - AT_ZERO[n]) < 1e-9, (n, got)
        print(f"d^{n} tanh / dx^{n} at 0 = {got:+.6f}")
    # the same with plain scalar grad, nested six deep, against the closed form
    d6 = tg.grad(tg.grad(tg.grad(tg.grad(tg.grad(tg.grad(tnp.tanh))))))
    got, want = d6(0.5), closed_form(ORDER, 0.5)
    assert abs(got - want) < 1e-9 * abs(want), (got, want)
    print(f"grad^6(tanh)(0.5)     = {got:+.6f}  (closed form {want:+.6f})")

    x = np.linspace(-4, 4, 50 if args.small else 400)
    fig, axes = plt.subplots(2, 4, figsize=(13, 6), sharex=True, layout="constrained")
    for n, (f, ax) in enumerate(zip(fs, axes.flat)):
        y = f(x)
        peak = float(np.max(np.abs(y)))
        ax.plot(x, y, color=f"C{n}")
        ax.axhline(0.0, color="0.8", lw=0.8, zorder=0)
        ax.set_title(f"order {n}: max |value| {peak:.3g}", fontsize=10)
        ax.set_ylabel("tanh(x)" if n == 0 else r"$d\,\tanh / dx$" if n == 1 else rf"$d^{{{n}}}\,\tanh / dx^{{{n}}}$")
    axes.flat[-1].set_axis_off()  # (seven panels in a 2 x 4 grid)
    for ax in axes[-1]:
        ax.set_xlabel("x")
    axes[0, -1].xaxis.set_tick_params(labelbottom=True)  # above the empty slot
    axes[0, -1].set_xlabel("x")
    fig.suptitle("tanh and its first six derivatives by nested tg.elementwise_grad "
                 "(one panel per order, each with its own y-scale)")
    fig.savefig(ready(args.output), dpi=80 if args.small else 120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
