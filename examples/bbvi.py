"""Black-box variational inference on a 2-D posterior (autograd's classic demo).

The target is the funnel-shaped unnormalized density of HIPS autograd's
``black_box_svi.py``:

    log p(mu, s) = norm.logpdf(s, 0, 1.35) + norm.logpdf(mu, 0, exp(s)),

written with ``tapegrad.scipy.stats.norm``. The variational family is a
diagonal Gaussian ``q(z) = N(mean, diag(exp(log_std))**2)``; the ELBO

    E_q[log p(z)] + entropy(q)

is estimated with the reparameterization ``z = mean + exp(log_std) * eps``,
``eps ~ N(0, I)`` drawn from ``np.random.default_rng`` with a fixed seed, so
``tg.value_and_grad`` of the estimate is an unbiased gradient of the ELBO.
``tg.optimizers.adam`` ascends it on the parameters kept as a dict (a pytree).

This density happens to be normalized (log Z = 0), so the ELBO is a lower
bound on 0: the example checks that the ELBO went up and stays below 0
(measured on one fixed set of samples before and after the fit), and plots
the target's contours with those of the fitted q.

matplotlib is optional: without it the fit runs and the plot is skipped.

Run: python examples/bbvi.py [--out PATH (default examples/out/bbvi.png)] [--small]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _output import default_output, pyplot, ready

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.scipy.stats import norm


def log_density(z):
    """The unnormalized log posterior at each row of z (columns: mu, log sigma)."""
    mu, log_sigma = z[:, 0], z[:, 1]
    return norm.logpdf(log_sigma, 0.0, 1.35) + norm.logpdf(mu, 0.0, tnp.exp(log_sigma))


def elbo(params, eps):
    """The reparameterized ELBO estimate on the standard-normal draws eps (n, 2)."""
    mean, log_std = params["mean"], params["log_std"]
    z = mean + tnp.exp(log_std) * eps
    entropy = 0.5 * eps.shape[1] * (1.0 + np.log(2 * np.pi)) + tnp.sum(log_std)
    return tnp.mean(log_density(z)) + entropy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_output("bbvi.png"), help="where to write the plot (PNG)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default 1000, 300 with --small)")
    parser.add_argument("--samples", type=int, default=64, help="Monte Carlo samples per gradient")
    parser.add_argument("--small", action="store_true", help="fewer steps (a quick run)")
    args = parser.parse_args()
    steps = args.steps if args.steps is not None else (300 if args.small else 1000)
    start = time.perf_counter()

    rng = np.random.default_rng(0)
    params = {"mean": np.array([-1.0, -1.0]), "log_std": np.array([-3.0, -3.0])}
    eval_eps = rng.standard_normal((4000, 2))  # one fixed set: the before/after comparison is paired
    elbo0 = float(elbo(params, eval_eps))

    objective = tg.value_and_grad(lambda p, eps: -elbo(p, eps))  # adam minimizes
    opt = tg.optimizers.adam(lambda step: 0.1 / (1.0 + step / 100.0))  # a decaying step tames the noise
    state = opt.init(params)
    for i in range(steps):
        loss, g = objective(params, rng.standard_normal((args.samples, 2)))
        params, state = opt.update(g, state, params)
        if i % (steps // 5) == 0:
            print(f"step {i:4d}  ELBO estimate {-float(loss):9.4f}")
    elbo1 = float(elbo(params, eval_eps))
    print(f"ELBO (4000 fixed samples): {elbo0:.4f} -> {elbo1:.4f}")
    assert elbo1 > elbo0
    print("the ELBO went up")
    assert elbo1 < 0.05  # log Z = 0, up to Monte Carlo error
    print("and stays below log Z = 0, as a lower bound must")
    std = np.exp(params["log_std"])
    print(f"q: mean ({params['mean'][0]:+.3f}, {params['mean'][1]:+.3f}), std ({std[0]:.3f}, {std[1]:.3f})")
    print(f"fit took {time.perf_counter() - start:.2f} s")

    plt = pyplot()
    if plt is None:
        return
    n = 80 if args.small else 200
    X, Y = np.meshgrid(np.linspace(-2, 2, n), np.linspace(-4, 2, n))
    grid = np.column_stack([X.ravel(), Y.ravel()])
    log_p = log_density(grid).reshape(X.shape)
    log_q = np.sum(norm.logpdf(grid, params["mean"], std), axis=1).reshape(X.shape)
    levels = [-7.0, -5.0, -3.5, -2.5, -1.5, -0.5, 0.5]  # log densities (p's neck runs off to +inf)
    fig, ax = plt.subplots(figsize=(5.5, 6))
    ax.contour(X, Y, log_p, levels=levels, colors="k", linewidths=1, linestyles="solid")
    ax.contour(X, Y, log_q, levels=levels, colors="C3", linewidths=1, linestyles="solid")
    ax.plot([], [], "k", label="target log p")
    ax.plot([], [], "C3", label="fitted diagonal Gaussian log q")
    ax.set_xlabel("mu")
    ax.set_ylabel("log sigma")
    ax.set_title(f"black-box VI: ELBO {elbo0:.2f} -> {elbo1:.3f}", fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(ready(args.out), dpi=80 if args.small else 120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
