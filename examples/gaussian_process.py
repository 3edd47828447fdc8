"""Gaussian-process regression: fit the kernel's hyperparameters by the gradient
of the log marginal likelihood, then plot the posterior.

The model is ``y = f(x) + noise`` with ``f ~ GP(0, k)`` and the RBF kernel

    k(x, x') = signal_var * exp(-(x - x')**2 / (2 * length_scale**2)),

so the data are jointly ``N(0, K + noise_var * I)`` and the log marginal
likelihood is one ``tapegrad.scipy.stats.multivariate_normal.logpdf`` call
(its Cholesky factor is differentiated like any other op). The three
hyperparameters are optimized on the log scale (which keeps them positive)
by gradient ascent with ``tg.optimizers.adam``, starting from a deliberately
poor guess. The example checks its gradient against central finite
differences, checks that the likelihood went up, and plots the data with the
posterior mean +- 2 standard deviations.

matplotlib is optional: without it the fit runs and the plot is skipped.

Run: python examples/gaussian_process.py [--out PATH (default examples/out/gaussian_process.png)] [--small]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _output import default_output, pyplot, ready

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.scipy.stats import multivariate_normal

NAMES = ("length_scale", "signal_var", "noise_var")


def make_data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A noisy sine on scattered points in [-4, 4] (noise sd 0.1, so noise_var 0.01)."""
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    y = np.sin(x) + 0.3 * np.cos(2.5 * x) + 0.1 * rng.standard_normal(n)
    return x, y


def rbf(log_ls, log_sv, xa, xb):
    """The RBF kernel matrix between the points xa and xb (works on traced values)."""
    d2 = (xa[:, None] - xb[None, :]) ** 2
    return tnp.exp(log_sv) * tnp.exp(-0.5 * d2 / tnp.exp(2.0 * log_ls))


def log_marginal_likelihood(params, x, y):
    """log p(y | x, hyperparameters), params = [log length_scale, log signal_var, log noise_var]."""
    log_ls, log_sv, log_nv = params[0], params[1], params[2]
    cov = rbf(log_ls, log_sv, x, x) + tnp.exp(log_nv) * np.eye(x.shape[0])
    return multivariate_normal.logpdf(y, np.zeros(x.shape[0]), cov)


def posterior(params: np.ndarray, x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of f at xs (plain NumPy, after the fit)."""
    log_ls, log_sv, log_nv = (float(p) for p in params)
    K = rbf(log_ls, log_sv, x, x) + np.exp(log_nv) * np.eye(len(x))
    Ks = rbf(log_ls, log_sv, x, xs)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    v = np.linalg.solve(L, Ks)
    mean = Ks.T @ alpha
    var = np.exp(log_sv) - np.sum(v * v, axis=0)
    return mean, np.sqrt(np.maximum(var, 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_output("gaussian_process.png"), help="where to write the plot (PNG)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default 300, 120 with --small)")
    parser.add_argument("--small", action="store_true", help="fewer points and steps (a quick run)")
    args = parser.parse_args()
    steps = args.steps if args.steps is not None else (120 if args.small else 300)
    start = time.perf_counter()

    rng = np.random.default_rng(0)
    x, y = make_data(rng, 25 if args.small else 60)

    def objective(p):
        return -log_marginal_likelihood(p, x, y)  # adam minimizes

    params = np.log(np.array([3.0, 0.2, 0.5]))  # too smooth, too little signal, too much noise
    value_and_grad = tg.value_and_grad(objective)

    # the gradient, checked once against central finite differences
    _, g = value_and_grad(params)
    h = 1e-6
    fd = np.array([(objective(params + h * e) - objective(params - h * e)) / (2 * h) for e in np.eye(3)])
    err = np.max(np.abs(g - fd)) / np.max(np.abs(fd))
    assert err < 1e-5, (g, fd)
    print(f"gradient matches finite differences (relative error {err:.1e})")

    opt = tg.optimizers.adam(0.05)
    state = opt.init(params)
    lml0 = -float(objective(params))
    for i in range(steps):
        loss, g = value_and_grad(params)
        params, state = opt.update(g, state, params)
        if i % (steps // 4) == 0:
            print(f"step {i:4d}  log marginal likelihood {-float(loss):10.4f}")
    lml = -float(objective(params))
    print(f"log marginal likelihood: {lml0:.4f} -> {lml:.4f}")
    assert lml > lml0
    print("the log marginal likelihood went up")
    learned = np.exp(params)
    for name, v in zip(NAMES, learned):
        print(f"learned {name:12s} = {v:.4f}")

    xs = np.linspace(-5.0, 5.0, 100 if args.small else 400)
    mean, sd = posterior(params, x, y, xs)
    resid = np.sqrt(np.mean((posterior(params, x, y, x)[0] - y) ** 2))
    print(f"posterior mean RMS residual on the data {resid:.4f} (noise sd 0.1)")
    print(f"fit took {time.perf_counter() - start:.2f} s")

    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.fill_between(xs, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.25, label="mean +- 2 sd")
    ax.plot(xs, mean, color="C0", label="posterior mean")
    ax.plot(x, y, "k.", label="data")
    ax.set_title("GP regression: " + ", ".join(f"{n} {v:.3g}" for n, v in zip(NAMES, learned)), fontsize=10)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(ready(args.out), dpi=80 if args.small else 120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
