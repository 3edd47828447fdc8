"""Training steps of small models, ``tapegrad.torch`` against PyTorch eager on the CPU.

Each function builds the same model in both (the same weights, the same
data), warms both up, then times one training step (forward, backward, SGD
update) over interleaved rounds (A B / B A ...) and returns the medians in
seconds. PyTorch runs on one thread (``torch.set_num_threads(1)``); set the
BLAS thread caps before NumPy is imported (``benchmarks/run.py`` does).

Run alone: ``PYTHONPATH=. python benchmarks/torch_models.py``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# ruff: noqa: E402
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

LSTM_SHAPE = {"batch": 32, "seq": 32, "input": 32, "hidden": 128}


def _lstm_step(torch: Any, seed: int, params: list[np.ndarray] | None) -> tuple[Callable[[], Any], list[Any]]:
    """A one-layer LSTM (batch_first) with a linear head on the last step, MSE
    loss and plain SGD, written once for either module (``torch`` is PyTorch or
    ``tapegrad.torch``); its weights are copied from ``params`` when given."""
    b, t, i, h = (LSTM_SHAPE[k] for k in ("batch", "seq", "input", "hidden"))
    torch.manual_seed(seed)
    lstm = torch.nn.LSTM(i, h, batch_first=True)
    head = torch.nn.Linear(h, 1)
    ps = [*lstm.parameters(), *head.parameters()]
    if params is not None:
        with torch.no_grad():
            for p, v in zip(ps, params):
                p.copy_(torch.tensor(v))
    opt = torch.optim.SGD(ps, lr=0.01)
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.standard_normal((b, t, i)).astype(np.float32))
    y = torch.tensor(rng.standard_normal((b, 1)).astype(np.float32))

    def step() -> Any:
        opt.zero_grad()
        out, _ = lstm(x)
        loss = torch.nn.functional.mse_loss(head(out[:, -1]), y)
        loss.backward()
        opt.step()
        return loss

    return step, ps


def _time(contenders: dict[str, Callable[[], Any]], warmup: int, repeats: int) -> dict[str, float]:
    """Median seconds per call of each contender: warmed up, then timed in
    interleaved rounds whose order flips each round; a collection runs,
    untimed, before every sample."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {k: [] for k in contenders}
    names = list(contenders)
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            gc.collect()
            t0 = time.perf_counter()
            contenders[name]()
            samples[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def run_lstm(quick: bool = False) -> dict[str, float]:
    """One LSTM training step (batch 32, 32 steps, 32 -> 128, float32; forward,
    backward, SGD) in ``tapegrad.torch`` and, when importable, in PyTorch eager
    on one thread. Returns the median seconds per step by contender
    (``"tapegrad"``, ``"torch"``); the two losses are checked to agree first."""
    import tapegrad.torch as tt

    ours, ps = _lstm_step(tt, 0, None)
    contenders: dict[str, Callable[[], Any]] = {"tapegrad": ours}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        theirs, _ = _lstm_step(torch, 0, [p.detach().numpy().copy() for p in ps])
        a, b = ours().item(), theirs().item()
        if not np.isclose(a, b, rtol=1e-4, atol=1e-6):
            raise AssertionError(f"run_lstm: tapegrad's loss {a} and PyTorch's {b} disagree")
        contenders["torch"] = theirs
    return _time(contenders, 3 if quick else 10, 5 if quick else 40)


if __name__ == "__main__":
    med = run_lstm()
    line = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in med.items())
    ratio = f" (ratio {med['tapegrad'] / med['torch']:.2f})" if "torch" in med else ""
    print(f"LSTM training step: {line}{ratio}")
