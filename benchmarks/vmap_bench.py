"""(i) Per-example gradients: ``vmap(grad(loss), in_axes=(None, 0, 0))``.

A 64 -> 128 -> 128 -> 10 tanh MLP with softmax cross-entropy, batch 256,
float64: the gradient of each example's loss with respect to all six
parameters (``(256,) + param.shape`` each). Contenders, in one run:

- numpy: the per-example gradients written by hand (one forward pass over
  the batch, then ``einsum('bi,bj->bij')`` outer products per layer);
- tapegrad: ``tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))``;
- tapegrad loop: ``tg.grad(loss)`` called once per example, stacked;
- torch.func: ``vmap(grad(loss), in_dims=(None, 0, 0))``, when PyTorch is
  importable (one thread, same data, float64).

Run alone: ``PYTHONPATH=. python benchmarks/vmap_bench.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# ruff: noqa: E402
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp

LAYERS = (64, 128, 128, 10)
BATCH = 256
KEYS = ("W1", "b1", "W2", "b2", "W3", "b3")


def make_data(seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {}
    for i, (n_in, n_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:]), start=1):
        params[f"W{i}"] = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        params[f"b{i}"] = 0.1 * rng.standard_normal(n_out)
    X = rng.random((BATCH, LAYERS[0]))
    Y = np.eye(LAYERS[-1])[rng.integers(0, LAYERS[-1], BATCH)]
    return params, X, Y


def loss(params: Any, x: Any, y: Any) -> Any:
    """One example's softmax cross-entropy (``x``: (64,), ``y``: one-hot (10,))."""
    h = tnp.tanh(x @ params["W1"] + params["b1"])
    h = tnp.tanh(h @ params["W2"] + params["b2"])
    z = h @ params["W3"] + params["b3"]
    return -tnp.sum(y * (z - tnp.logsumexp(z)))


def per_example_np(params: dict[str, np.ndarray], X: np.ndarray, Y: np.ndarray) -> dict[str, np.ndarray]:
    """The per-example gradients of :func:`loss`, by hand (rows of ``Y`` sum to one)."""
    W1, b1, W2, b2, W3, b3 = (params[k] for k in KEYS)
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    e = np.exp(z - z.max(axis=1, keepdims=True))
    dz = e / e.sum(axis=1, keepdims=True) - Y
    da2 = (dz @ W3.T) * (1 - h2 * h2)
    da1 = (da2 @ W2.T) * (1 - h1 * h1)
    return {"W1": np.einsum("bi,bj->bij", X, da1), "b1": da1,
            "W2": np.einsum("bi,bj->bij", h1, da2), "b2": da2,
            "W3": np.einsum("bi,bj->bij", h2, dz), "b3": dz}


def torch_contender(params: dict[str, np.ndarray], X: np.ndarray, Y: np.ndarray) -> Callable[[], Any] | None:
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return None
    torch.set_num_threads(1)
    tp = {k: torch.from_numpy(v) for k, v in params.items()}
    tX, tY = torch.from_numpy(X), torch.from_numpy(Y)

    def tloss(p: Any, x: Any, y: Any) -> Any:
        h = torch.tanh(x @ p["W1"] + p["b1"])
        h = torch.tanh(h @ p["W2"] + p["b2"])
        z = h @ p["W3"] + p["b3"]
        return -torch.sum(y * (z - torch.logsumexp(z, 0)))

    f = vmap(grad(tloss), in_dims=(None, 0, 0))
    return lambda: f(tp, tX, tY)


def contenders() -> dict[str, Callable[[], Any]]:
    params, X, Y = make_data()
    vg = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))
    g1 = tg.grad(loss)

    def loop() -> Any:
        gs = [g1(params, x, y) for x, y in zip(X, Y)]
        return {k: np.stack([g[k] for g in gs]) for k in KEYS}

    want = per_example_np(params, X, Y)
    runs: dict[str, Callable[[], Any]] = {"numpy": lambda: per_example_np(params, X, Y),
                                          "tapegrad": lambda: vg(params, X, Y), "loop": loop}
    t = torch_contender(params, X, Y)
    if t is not None:
        runs["torch.func"] = t
    for name, run in runs.items():  # every contender computes the same gradients
        got = run()
        for k in KEYS:
            g = np.asarray(got[k].numpy() if hasattr(got[k], "numpy") else got[k])
            if not np.allclose(g, want[k], rtol=1e-9, atol=1e-12):
                raise AssertionError(f"(i) {name}: per-example gradient of {k} differs from the hand-written one")
    return runs


def run(quick: bool = False) -> dict[str, float]:
    """Median milliseconds of each contender (warmed up, repeats interleaved)."""
    import gc

    runs = contenders()
    names = list(runs)
    repeats = 5 if quick else 21
    for name in names:
        runs[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            if name == "loop" and r >= max(3, repeats // 4):  # (slow: fewer repeats)
                continue
            gc.collect()
            t0 = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t0)
    return {n: statistics.median(ts) * 1e3 for n, ts in times.items()}


if __name__ == "__main__":
    for name, ms in run().items():
        print(f"{name:12s} {ms:8.2f} ms")
