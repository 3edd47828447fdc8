"""The facade's model examples timed against PyTorch eager on the CPU (one thread).

    PYTHONPATH=. python3 benchmarks/torch_models.py [--quick]

One function per case, each returning rows ``(label, tapegrad_ms, torch_ms)``
(``torch_ms`` is None when PyTorch is not importable); ``benchmarks/run.py``
prints them with the ratio tapegrad / PyTorch:

- ``run_cnn``: one training step of examples/cnn_digits.py's CNN (two blocks
  of 3x3 conv, batch norm, ReLU, 2x2 max pool; dropout; a linear layer) at
  batch 64, float32: ``zero_grad``, forward, cross-entropy, ``backward()`` and
  an ``SGD`` step (momentum 0.9). Both sides start from the same weights and
  the same batch (the digits when scikit-learn is installed, else random
  images); before timing, one step of each (dropout off) is checked to give
  the same loss and gradients.
- ``run_lstm``: one training step of a one-layer LSTM (``batch_first``, a
  linear head on the last step, MSE loss, SGD), batch 32, 32 steps,
  32 -> 128, float32, the same weights and data on both sides (their losses
  are checked to agree first).

How: as ``run.py``: one BLAS thread (``torch.set_num_threads(1)``), a warm-up,
then repeats interleaved round-robin (the order flips each round) with an
untimed ``gc.collect()`` before each; medians.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# ruff: noqa: E402
import gc
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

Row = tuple[str, float, "float | None"]  # (label, tapegrad ms, torch ms)


def load_example(name: str, use_torch: bool) -> ModuleType:
    """examples/NAME.py as a module, on the facade or (``use_torch``) on PyTorch:
    the examples pick their ``torch`` by the ``--torch`` flag at import."""
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_{'torch' if use_torch else 'tapegrad'}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    sys.argv = [str(path), "--torch"] if use_torch else [str(path)]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def _torch_example(name: str) -> ModuleType | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    return load_example(name, use_torch=True)


def _median_ms(runs: dict[str, Callable[[], Any]], repeats: int, warmup: int = 3) -> dict[str, float]:
    names = list(runs)
    for _ in range(warmup):
        for name in names:
            runs[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            gc.collect()
            t0 = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t0)
    return {n: statistics.median(ts) * 1e3 for n, ts in times.items()}


def copy_weights(src: Any, dst: Any, dst_torch: Any) -> None:
    """Load ``src``'s state dict (parameters and buffers) into ``dst``, a model of
    ``dst_torch`` (the facade or PyTorch): across the two libraries, as copies."""
    state = {k: np.array(v.detach().cpu().numpy()) for k, v in src.state_dict().items()}
    dst.load_state_dict({k: dst_torch.from_numpy(v) for k, v in state.items()})


def cnn_batch(batch: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` standardised digits images ``(batch, 1, 8, 8)`` float32 and their labels
    (random images when scikit-learn is missing)."""
    try:
        ex = load_example("cnn_digits", use_torch=False)
        X, y, _, _ = ex.load_data()
        return X[:batch], y[:batch]
    except ImportError:
        rng = np.random.default_rng(seed)
        return rng.standard_normal((batch, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, batch)


def _sgd_step(ex: ModuleType, model: Any, x: Any, y: Any) -> Callable[[], Any]:
    optimizer = ex.torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return lambda: ex.train_step(model, optimizer, x, y)


def _check_same_step(ex: ModuleType, tex: ModuleType, x: np.ndarray, y: np.ndarray) -> None:
    """One step's loss and gradients agree (dropout off), or raise."""
    model, tmodel = ex.make_model(), tex.make_model()
    copy_weights(model, tmodel, tex.torch)
    for m in (model, tmodel):
        for layer in m:
            if type(layer).__name__ == "Dropout":  # (its masks come from different generators)
                layer.eval()
    loss = ex.F.cross_entropy(model(ex.torch.from_numpy(x)), ex.torch.from_numpy(y))
    tloss = tex.F.cross_entropy(tmodel(tex.torch.from_numpy(x)), tex.torch.from_numpy(y))
    loss.backward()
    tloss.backward()
    if not np.isclose(loss.item(), tloss.item(), rtol=1e-4):
        raise AssertionError(f"(j) CNN loss differs: tapegrad {loss.item()}, torch {tloss.item()}")
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        g, tg_ = p.grad.numpy(), tp.grad.numpy()
        if not np.allclose(g, tg_, rtol=1e-3, atol=1e-5):
            raise AssertionError(f"(j) CNN gradient of {name} differs from PyTorch's "
                                 f"(max abs diff {np.abs(g - tg_).max():.3g})")


def run_cnn(quick: bool = False, batch: int = 64) -> list[Row]:
    """One SGD training step of examples/cnn_digits.py's CNN at ``batch``, float32; milliseconds."""
    ex = load_example("cnn_digits", use_torch=False)
    tex = _torch_example("cnn_digits")
    x, y = cnn_batch(batch)
    ex.torch.manual_seed(0)
    model = ex.make_model()
    runs = {"tapegrad": _sgd_step(ex, model, ex.torch.from_numpy(x), ex.torch.from_numpy(y))}
    if tex is not None:
        tex.torch.set_num_threads(1)
        _check_same_step(ex, tex, x, y)
        tmodel = tex.make_model()
        copy_weights(model, tmodel, tex.torch)
        runs["torch"] = _sgd_step(tex, tmodel, tex.torch.from_numpy(x), tex.torch.from_numpy(y))
    med = _median_ms(runs, repeats=7 if quick else 41, warmup=2 if quick else 5)
    return [(f"CNN training step (SGD), batch {batch}, f32", med["tapegrad"], med.get("torch"))]


def run_lstm(quick: bool = False, shape: tuple[int, int, int, int] = (32, 32, 32, 128)) -> list[Row]:
    """One training step of a one-layer LSTM of ``shape = (batch, steps, input, hidden)``,
    float32, in ``tapegrad.torch`` and (when importable) PyTorch eager; milliseconds."""
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
    runs: dict[str, Callable[[], Any]] = {"tapegrad": ours}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        theirs, _ = make_step(torch, [p.detach().numpy().copy() for p in ps])
        a, c = ours().item(), theirs().item()
        if not np.isclose(a, c, rtol=1e-4, atol=1e-6):
            raise AssertionError(f"(k) LSTM loss differs: tapegrad {a}, torch {c}")
        runs["torch"] = theirs
    med = _median_ms(runs, repeats=5 if quick else 40, warmup=3 if quick else 10)
    return [(f"LSTM training step (SGD), batch {b}, {t} steps, {i}->{h}, f32", med["tapegrad"], med.get("torch"))]


if __name__ == "__main__":
    for label, ms, tms in [*run_cnn("--quick" in sys.argv), *run_lstm("--quick" in sys.argv)]:
        ratio = f"  ({ms / tms:.2f}x PyTorch {tms:.2f} ms)" if tms else ""
        print(f"{label}: {ms:.2f} ms{ratio}")
