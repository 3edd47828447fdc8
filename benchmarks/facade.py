"""The PyTorch-style facade timed against the functional API and hand-written NumPy.

    PYTHONPATH=. python3 benchmarks/facade.py [--quick]

Two cases, each run side by side in one process (interleaved repeats, medians):

- chain: 333 x ``x = sin(x) * 1.0001 + 0.1`` on a (4,) float64 array plus a final
  sum (1,000 ops), forward and backward; microseconds per op. Facade:
  ``loss.backward()``; functional: ``tg.value_and_grad``; NumPy: the same
  forward storing what its hand-written backward needs.
- mlp: one step of 64 -> 512 -> 512 -> 10, tanh, softmax cross-entropy with
  logsumexp, batch 256, float32; milliseconds per step (gradients of all six
  parameters).

``run(quick)`` returns rows ``(case, contender, value, unit)``; targets: facade
within 1.2x of the functional API on both, and within 3.5x NumPy on the chain.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402
import tapegrad.torch as torch  # noqa: E402

ITERS = 333
OPS = 3 * ITERS + 1
A_MUL, A_ADD = 1.0001, 0.1


# --- chain ---------------------------------------------------------------------------------------


def chain_numpy(x0: np.ndarray) -> np.ndarray:
    x = x0
    coss = []
    for _ in range(ITERS):
        coss.append(np.cos(x))
        x = np.sin(x) * A_MUL + A_ADD
    g = np.ones_like(x)
    for c in reversed(coss):
        g = g * A_MUL * c
    return g


def _chain_f(x: Any) -> Any:
    for _ in range(ITERS):
        x = tnp.sin(x) * A_MUL + A_ADD
    return tnp.sum(x)


_chain_vg = tg.value_and_grad(_chain_f)


def chain_functional(x0: np.ndarray) -> np.ndarray:
    return _chain_vg(x0)[1]


def chain_facade(x0: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(x0.copy()).requires_grad_()
    y = x
    for _ in range(ITERS):
        y = y.sin() * A_MUL + A_ADD
    y.sum().backward()
    return x.grad.numpy()


# --- mlp -----------------------------------------------------------------------------------------


def _mlp_data(dtype: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    p = {"w1": rng.standard_normal((64, 512)) * 0.1, "b1": np.zeros(512),
         "w2": rng.standard_normal((512, 512)) * 0.05, "b2": np.zeros(512),
         "w3": rng.standard_normal((512, 10)) * 0.05, "b3": np.zeros(10)}
    p = {k: v.astype(dtype) for k, v in p.items()}
    x = rng.standard_normal((256, 64)).astype(dtype)
    y = np.eye(10, dtype=dtype)[rng.integers(0, 10, 256)]
    return p, x, y


def _mlp_loss(p: dict[str, Any], x: Any, y: Any) -> Any:
    h1 = tnp.tanh(x @ p["w1"] + p["b1"])
    h2 = tnp.tanh(h1 @ p["w2"] + p["b2"])
    z = h2 @ p["w3"] + p["b3"]
    return tnp.mean(tnp.logsumexp(z, axis=1) - tnp.sum(z * y, axis=1))


_mlp_vg = tg.value_and_grad(_mlp_loss)


def mlp_numpy(p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    h1 = np.tanh(x @ p["w1"] + p["b1"])
    h2 = np.tanh(h1 @ p["w2"] + p["b2"])
    z = h2 @ p["w3"] + p["b3"]
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    dz = (s - y) / n
    g = {"w3": h2.T @ dz, "b3": dz.sum(0)}
    dh2 = (dz @ p["w3"].T) * (1 - h2 * h2)
    g["w2"], g["b2"] = h1.T @ dh2, dh2.sum(0)
    dh1 = (dh2 @ p["w2"].T) * (1 - h1 * h1)
    g["w1"], g["b1"] = x.T @ dh1, dh1.sum(0)
    return g


def mlp_functional(p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    return _mlp_vg(p, x, y)[1]


def make_mlp_facade(p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> Callable[[], dict[str, np.ndarray]]:
    tp = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in p.items()}
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step() -> dict[str, np.ndarray]:
        for t in tp.values():
            t.grad = None
        h1 = (tx @ tp["w1"] + tp["b1"]).tanh()
        h2 = (h1 @ tp["w2"] + tp["b2"]).tanh()
        z = h2 @ tp["w3"] + tp["b3"]
        loss = (z.logsumexp(1) - (z * ty).sum(1)).mean()
        loss.backward()
        return {k: t.grad.numpy() for k, t in tp.items()}

    return step


# --- timing ---------------------------------------------------------------------------------------


def _interleaved(fns: dict[str, Callable[[], Any]], repeats: int, inner: int) -> dict[str, float]:
    for f in fns.values():
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in names if r % 2 == 0 else names[::-1]:
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(inner):
                fns[k]()
            samples[k].append((time.perf_counter() - t0) / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def run(quick: bool = False) -> list[tuple[str, str, float, str]]:
    """Time both cases; rows are ``(case, contender, value, unit)``."""
    rows: list[tuple[str, str, float, str]] = []
    x0 = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(chain_facade(x0), chain_numpy(x0), rtol=1e-10)
    np.testing.assert_allclose(chain_functional(x0), chain_numpy(x0), rtol=1e-10)
    t = _interleaved({"numpy": lambda: chain_numpy(x0), "functional": lambda: chain_functional(x0),
                      "facade": lambda: chain_facade(x0)}, 5 if quick else 15, 2 if quick else 5)
    for k, v in t.items():
        rows.append(("chain", k, v / OPS * 1e6, "us/op"))
    p, x, y = _mlp_data(np.float32)
    step = make_mlp_facade(p, x, y)
    ref = mlp_numpy(p, x, y)
    for k, g in step().items():
        np.testing.assert_allclose(g, ref[k], rtol=2e-3, atol=1e-5)
    t = _interleaved({"numpy": lambda: mlp_numpy(p, x, y), "functional": lambda: mlp_functional(p, x, y),
                      "facade": step}, 5 if quick else 15, 1 if quick else 3)
    for k, v in t.items():
        rows.append(("mlp", k, v * 1e3, "ms/step"))
    return rows


def main() -> None:
    rows = run("--quick" in sys.argv)
    by = {(c, k): v for c, k, v, _ in rows}
    print(f"{'case':<6} {'contender':<11} {'value':>10}  unit      vs functional  vs numpy")
    for c, k, v, unit in rows:
        print(f"{c:<6} {k:<11} {v:>10.3f}  {unit:<8}  {v / by[(c, 'functional')]:>10.2f}x  "
              f"{v / by[(c, 'numpy')]:>7.2f}x")


if __name__ == "__main__":
    main()
