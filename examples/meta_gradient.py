"""A meta-gradient (MAML-style): differentiate through an inner SGD loop.

Each task is a sine wave a * sin(x + b). The inner loop adapts the
parameters of a small tanh network to one task with a few SGD steps on its
"support" points; the outer loss is the adapted network's error on the
task's "query" points. tg.grad of that outer loss, with respect to the
initial parameters AND the inner learning rate, differentiates through
every inner step (each inner gradient is itself a tg.grad, nested).

At start-up the meta-gradient is checked against central finite
differences (both are printed); then a few meta-training steps run.

Run: python examples/meta_gradient.py [--small]
"""

from __future__ import annotations

import argparse

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp

HIDDEN = 16


def init_params(rng: np.random.Generator) -> dict:
    return {
        "w1": rng.standard_normal((1, HIDDEN)) * 0.8,
        "b1": np.zeros(HIDDEN),
        "w2": rng.standard_normal((HIDDEN, 1)) / np.sqrt(HIDDEN),
        "b2": np.zeros(1),
    }


def net(params, x):
    h = tnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def mse(params, x, y):
    return tnp.mean((net(params, x) - y) ** 2)


def adapt(params, log_lr, x, y, inner_steps: int):
    """Inner SGD on one task; the learning rate is exp(log_lr) (kept positive)."""
    lr = tnp.exp(log_lr)
    for _ in range(inner_steps):
        g = tg.grad(mse)(params, x, y)
        params = {k: params[k] - lr * g[k] for k in params}
    return params


def meta_loss(params, log_lr, tasks, inner_steps: int):
    """Mean query loss after adapting to each task's support set."""
    total = 0.0
    for xs, ys, xq, yq in tasks:
        total = total + mse(adapt(params, log_lr, xs, ys, inner_steps), xq, yq)
    return total / len(tasks)


def sample_tasks(rng: np.random.Generator, n: int, shots: int) -> list:
    tasks = []
    for _ in range(n):
        a, b = rng.uniform(0.5, 2.0), rng.uniform(0.0, np.pi)
        xs, xq = rng.uniform(-3, 3, (shots, 1)), rng.uniform(-3, 3, (shots, 1))
        tasks.append((xs, a * np.sin(xs + b), xq, a * np.sin(xq + b)))
    return tasks


def finite_difference(f, params, log_lr, key, index, eps=1e-6) -> float:
    """Central difference of f along one entry of params[key] (or of log_lr)."""
    def shifted(h):
        if key == "log_lr":
            return f(params, log_lr + h)
        p = {k: v.copy() for k, v in params.items()}
        p[key][index] += h
        return f(p, log_lr)

    return (shifted(eps) - shifted(-eps)) / (2 * eps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="fewer tasks and meta-steps")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    inner_steps = 2 if args.small else 3
    meta_steps = 5 if args.small else 200
    n_tasks, shots = (2, 5) if args.small else (8, 10)

    params, log_lr = init_params(rng), np.log(0.05)
    meta_grad = tg.value_and_grad(meta_loss, argnums=(0, 1))

    # 1. the meta-gradient against finite differences
    tasks = sample_tasks(rng, n_tasks, shots)
    f = lambda p, lr: meta_loss(p, lr, tasks, inner_steps)
    _, (g_params, g_lr) = meta_grad(params, log_lr, tasks, inner_steps)
    print(f"checking the meta-gradient through {inner_steps} inner SGD steps:")
    checks = [("log_lr", (), g_lr), ("w1", (0, 3), g_params["w1"][0, 3]),
              ("b1", (5,), g_params["b1"][5]), ("w2", (2, 0), g_params["w2"][2, 0])]
    for key, index, got in checks:
        fd = finite_difference(f, params, log_lr, key, index)
        where = key + (str(list(index)) if index else "")
        print(f"  d meta_loss / d {where:9s} tapegrad {got: .8e}   finite diff {fd: .8e}")
        assert abs(got - fd) <= 1e-8 + 1e-5 * abs(fd), (key, got, fd)
    print("  meta-gradient matches finite differences")

    # 2. meta-training: plain SGD on the initial parameters and the inner learning rate
    #    (the printed loss is on a fixed set of held-out tasks)
    held_out = sample_tasks(rng, 20, shots)
    outer_lr = 0.05
    for step in range(meta_steps + 1):
        if step % max(1, meta_steps // 10) == 0:
            loss = meta_loss(params, log_lr, held_out, inner_steps)
            print(f"meta-step {step:4d}  held-out query loss {loss:.4f}  "
                  f"inner lr {np.exp(log_lr):.4f}")
        tasks = sample_tasks(rng, n_tasks, shots)
        _, (g_params, g_lr) = meta_grad(params, log_lr, tasks, inner_steps)
        params = {k: params[k] - outer_lr * g_params[k] for k in params}
        log_lr = log_lr - outer_lr * g_lr


if __name__ == "__main__":
    main()
