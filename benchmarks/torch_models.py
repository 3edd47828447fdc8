"""Training steps of small models in ``tapegrad.torch`` against PyTorch eager on the CPU
(``benchmarks/run.py`` sets the one-thread BLAS caps before NumPy is imported)."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def run_lstm(quick: bool = False, shape: tuple[int, int, int, int] = (32, 32, 32, 128)) -> dict[str, float]:
    """One training step of a one-layer LSTM (``batch_first``; a linear head on
    the last step, MSE loss, SGD) of ``shape = (batch, steps, input, hidden)``,
    float32, in ``tapegrad.torch`` and, when importable, in PyTorch eager on
    one thread, the same weights and data in both (their losses are checked to
    agree first). Each is warmed up, then timed over interleaved rounds whose
    order flips every round, an untimed collection before each sample.
    Returns the median seconds per step by contender (``"tapegrad"``, ``"torch"``).
    """
    import tapegrad.torch as tt

    b, t, i, h = shape

    def make_step(torch: Any, params: list[np.ndarray] | None) -> tuple[Callable[[], Any], list[Any]]:
        torch.manual_seed(0)
        lstm, head = torch.nn.LSTM(i, h, batch_first=True), torch.nn.Linear(h, 1)
        ps = [*lstm.parameters(), *head.parameters()]
        if params is not None:
            with torch.no_grad():
                for p, v in zip(ps, params):
                    p.copy_(torch.tensor(v))
        opt = torch.optim.SGD(ps, lr=0.01)
        rng = np.random.default_rng(0)
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

    ours, ps = make_step(tt, None)
    contenders: dict[str, Callable[[], Any]] = {"tapegrad": ours}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        theirs, _ = make_step(torch, [p.detach().numpy().copy() for p in ps])
        a, c = ours().item(), theirs().item()
        if not np.isclose(a, c, rtol=1e-4, atol=1e-6):
            raise AssertionError(f"run_lstm: tapegrad's loss {a} and PyTorch's {c} disagree")
        contenders["torch"] = theirs
    warmup, repeats = (3, 5) if quick else (10, 40)
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
