"""tapegrad benchmarks: tapegrad timed side by side with hand-written NumPy gradients.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/run.py            # full run (a few minutes)
    PYTHONPATH=. python3 benchmarks/run.py --quick    # smoke run (seconds; no 1M chain)
    PYTHONPATH=. python3 benchmarks/run.py --only a,c
    PYTHONPATH=. python3 benchmarks/run.py --only e --json e.json   # the rows as JSON too

Two checkouts side by side, interleaved: benchmarks/compare.py.

What is measured (the reference everywhere is a careful hand-written NumPy
forward + backward of the same function, run in the same process):

(a) Per-op overhead. A chain of 1,000 elementwise ops on a (4,) float64 array
    (333 x ``x = sin(x) * 1.0001 + 0.1`` plus a final ``sum``), forward and
    backward through ``tg.value_and_grad``; microseconds per op. The NumPy
    baseline runs the same forward, stores what its backward needs, and runs
    the backward by hand.
(b) One MLP ``value_and_grad`` step: 64 -> 512 -> 512 -> 10, tanh, softmax
    cross-entropy written with logsumexp, batch 256, in float64 and float32;
    milliseconds per step. Data: scikit-learn's ``load_digits`` (64 features,
    10 classes) when scikit-learn is installed, else random data of the same
    shapes. Gradients with respect to all six parameters.
(c) The backward pass alone over a chain of 100,000 and 1,000,000 entries
    (``x = x * 1.0000001`` on a (4,) float64 array); microseconds per entry.
    The tape is built first (``with tg.Tape()``) and only ``tape.gradient``
    is timed; the baseline times its hand-written backward loop.
(d) Peak memory of one MLP step (as in (b)) at batch 4096, float64, measured
    with ``tracemalloc`` (NumPy reports its buffers to it, and Python objects
    such as tape nodes are traced too); MiB over the memory held before the
    step. The step runs in a new thread, so that the buffers a ``tg.jit``
    program keeps per thread between calls are counted.
(e) Higher order, against analytic NumPy formulas: the full Hessian of
    ``sum(tanh(A x)**2)`` at n = 300 (forward-over-reverse), the
    Hessian-vector product at n = 300, and the third derivative of tanh on
    1,000 points (three nested ``elementwise_grad``).
(f) The torch-style facade (``loss.backward()``) against the functional API
    on the chain of (a) and an MLP step (benchmarks/facade.py).
(g) Gradients of ``slogdet`` and ``solve`` at n = 500 against the NumPy
    formulas (benchmarks/linalg_bench.py).
(h) One training epoch of examples/train_digits.py (64-256-10 MLP, batch 64,
    Adam, float32) in each style against a hand-written NumPy epoch
    (closed-form softmax-minus-onehot backward, in-place Adam), with PyTorch
    eager and ``jax.jit`` as peers when importable; process CPU time
    (benchmarks/digits_bench.py; needs scikit-learn).
(i) Per-example gradients of a 64-128-128-10 tanh MLP (softmax cross-entropy,
    batch 256, float64) with ``vmap(grad(loss), in_axes=(None, 0, 0))``
    against a hand-written per-example gradient (``einsum`` over the batch),
    and against a Python loop of ``tg.grad`` (benchmarks/vmap_bench.py);
    ``torch.func.vmap(grad)`` as a peer column when PyTorch is importable.
(j) One training step (zero_grad, forward, cross-entropy, backward, SGD) of
    examples/cnn_digits.py's CNN at batch 64, float32, on the torch facade,
    against PyTorch eager on the CPU, one thread, from the same weights and
    batch (benchmarks/torch_models.py; the row's baseline column is PyTorch,
    the ratio tapegrad / PyTorch; no baseline when PyTorch is not importable).
(k) One training step (forward, backward, SGD) of a one-layer LSTM, batch 32,
    32 steps, 32 -> 128, float32, in ``tapegrad.torch`` against the same step
    in PyTorch eager on one thread (benchmarks/torch_models.py): here the
    reference column is PyTorch, not NumPy (no baseline without PyTorch).

How: ``OMP/OPENBLAS/MKL_NUM_THREADS`` default to 1 before NumPy is imported
(and ``threadpoolctl`` limits BLAS to one thread when it is installed). Each
contender is warmed up, then timed over repeats that are interleaved
round-robin (the order flips every round, A B / B A ...) so that drift hits
all of them alike; the table shows medians. The garbage collector stays on
(its cost is part of what a user pays) but a collection runs, untimed,
before every sample, and what exists before timing starts (modules, data)
is frozen out of its sight (``gc.freeze()``). At start-up the hand-written gradients are checked
against tapegrad's, eager and under ``tg.jit`` (its traced first call and its
compiled later calls); a mismatch raises (the comparison would not be honest).
Otherwise the script only reports: it exits 0 whatever the figures are, and
an error in one case is printed in its row.

``tg.jit``: cases (a), (b), (d), (e) and (h) have a second row for the same
function compiled with ``tg.jit`` (``tg.jit(tg.value_and_grad(f))``, and
for (h) the example's ``--jit`` step: ``value_and_grad`` and
``tg.optimizers.adam`` compiled together). Each is timed in the same
interleaved measurement as the eager row and the NumPy baseline, so the
three figures of a case come from the same rounds; the compiled program is
built during the warm-up (its trace is not timed). Its own row, "first call
of the MLP step", times what the first call of a new ``tg.jit`` costs (trace,
code generation, compilation and one run) for (b)'s float64 step, against an
absolute target in milliseconds (the NumPy column is then the hand-written
step, for scale). The (d) jit row's target is the eager row's ratio of the
same run (the compiled step should hold no more memory than eager).

If HIPS ``autograd`` or ``torch`` is importable, their figures for (a), (b)
and (c) are added as extra columns (torch: one thread, eager autograd, same
shapes and dtypes); both are optional.
"""

from __future__ import annotations

# the thread caps below must be set before NumPy is imported
# ruff: noqa: E402
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import functools
import gc
import platform
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# run from anywhere; TAPEGRAD_BENCH_ROOT times another checkout's tapegrad with
# these benchmarks (benchmarks/compare.py)
sys.path.insert(0, os.environ.get("TAPEGRAD_BENCH_ROOT") or str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark modules

import tapegrad as tg
import tapegrad.numpy as tnp

Params = dict[str, np.ndarray]
Sampler = Callable[[], float]  # runs once, returns the seconds of its timed part

CASES = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")
CHAIN_ITERS = 333  # (a): 333 x (sin, mul, add) + a final sum = 1,000 ops
CHAIN_OPS = 3 * CHAIN_ITERS + 1
A_MUL, A_ADD = 1.0001, 0.1
C_MUL = 1.0000001  # (c): one multiply per entry
LAYERS = (64, 512, 512, 10)
TARGETS = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 1.0, "e": 3.0, "f": 1.2, "g": 1.2, "h": 1.1,
           "i": 1.5, "j": 2.5, "k": 3.0}  # tapegrad / numpy (j, k: tapegrad.torch / PyTorch eager)
JIT_TARGETS = {"a": 1.0, "a numba": 0.25, "b f64": 0.95, "b f32": 1.0, "h": 0.8,  # tg.jit / numpy
               "e hessian": 2.0, "e hvp": 1.05, "e d3": 4.0}
FIRST_CALL_MS = 50.0  # absolute: the first call of tg.jit(value_and_grad(MLP loss)), f64


class GradientMismatch(AssertionError):
    """The hand-written gradients disagree with tapegrad's (start-up check)."""


# --- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    warmup: int
    a_repeats: int
    a_number: int  # calls per sample
    b_repeats: int
    b_number: int
    c_sizes: tuple[int, ...]
    c_repeats: dict[int, int]
    c_peer_repeats: dict[int, int]  # autograd/torch take 5-25 s to build a 1M chain
    c_warmup: int = 1  # builds of the 100k chain before timing (none for 1M)
    d_batch: int = 4096
    first_repeats: int = 11  # first calls of a new tg.jit of the MLP step

    @staticmethod
    def make(quick: bool) -> Settings:
        if quick:
            return Settings(warmup=1, a_repeats=5, a_number=1, b_repeats=3, b_number=1,
                            c_sizes=(100_000,), c_repeats={100_000: 1},
                            c_peer_repeats={100_000: 1}, c_warmup=0, first_repeats=3)
        return Settings(warmup=3, a_repeats=41, a_number=3, b_repeats=31, b_number=2,
                        c_sizes=(100_000, 1_000_000), c_repeats={100_000: 5, 1_000_000: 3},
                        c_peer_repeats={100_000: 3, 1_000_000: 1})


# --- timing ---------------------------------------------------------------------------------


def timed(fn: Callable[[], Any], number: int = 1) -> Sampler:
    """A sampler timing ``number`` calls of ``fn`` (seconds per call)."""

    def sample() -> float:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number

    return sample


def measure(samplers: dict[str, Sampler], repeats: int, warmup: int,
            caps: dict[str, int] | None = None) -> dict[str, float]:
    """Median seconds of each sampler, warmed up, repeats interleaved round-robin.

    ``caps`` limits the repeats of some samplers (slow peers): they take part
    in the first rounds only.
    """
    names = list(samplers)
    caps = caps or {}
    for _ in range(warmup):
        for name in names:
            samplers[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            if r < caps.get(name, repeats):
                gc.collect()  # untimed: garbage of the previous sample goes now
                times[name].append(samplers[name]())
    return {name: statistics.median(ts) for name, ts in times.items()}


def check_close(what: str, got: Any, want: Any, rtol: float) -> None:
    """Raise :class:`GradientMismatch` unless ``got`` and ``want`` agree.

    Both are arrays (or scalars), or dicts of them (the MLP's gradients).
    """
    if isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            raise GradientMismatch(f"{what}: got {type(got).__name__}, expected keys {sorted(want)}")
        for key in sorted(want):
            check_close(f"{what}[{key!r}]", got[key], want[key], rtol)
        return
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        raise GradientMismatch(f"{what}: got {g.dtype}{g.shape}, expected {w.dtype}{w.shape}")
    scale = float(np.max(np.abs(w))) if w.size else 0.0
    if not np.allclose(g, w, rtol=rtol, atol=rtol * scale):
        err = float(np.max(np.abs(g - w)))
        raise GradientMismatch(f"{what}: differs by up to {err:.3g} (largest entry {scale:.3g})")


# --- (a) per-op chain -----------------------------------------------------------------------


def chain_tg(x: Any) -> Any:
    for _ in range(CHAIN_ITERS):
        x = tnp.sin(x) * A_MUL + A_ADD
    return tnp.sum(x)


def chain_np(x: np.ndarray) -> tuple[np.float64, np.ndarray]:
    """Forward keeping each sin input, then the backward by hand."""
    saved = []
    for _ in range(CHAIN_ITERS):
        saved.append(x)
        x = np.sin(x) * A_MUL + A_ADD
    val = np.sum(x)
    g = np.ones_like(x)
    for xi in reversed(saved):  # add: g passes through; mul: g * A_MUL; sin: g * cos(xi)
        g = g * A_MUL
        g = g * np.cos(xi)
    return val, g


# --- (b)/(d) MLP ----------------------------------------------------------------------------


def init_params(dtype: Any, rng: np.random.Generator) -> Params:
    params: Params = {}
    for i, (n_in, n_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:]), start=1):
        params[f"W{i}"] = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)
        params[f"b{i}"] = (0.1 * rng.standard_normal(n_out)).astype(dtype)
    return params


_DIGITS: tuple[np.ndarray, np.ndarray, str] | None = None


def load_batch(batch: int, dtype: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """``(X, Y one-hot, source)``: digits when scikit-learn is installed, else random."""
    global _DIGITS
    if _DIGITS is None:
        try:
            from sklearn.datasets import load_digits

            digits = load_digits()
            _DIGITS = (digits.data / 16.0, digits.target, "sklearn load_digits")
        except ImportError:
            rng0 = np.random.default_rng(1234)
            _DIGITS = (rng0.random((1797, LAYERS[0])), rng0.integers(0, LAYERS[-1], 1797),
                       "random (scikit-learn not installed)")
    data, labels, source = _DIGITS
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(data), size=batch, replace=batch > len(data))
    X = np.ascontiguousarray(data[idx], dtype=dtype)
    Y = np.eye(LAYERS[-1], dtype=dtype)[labels[idx]]
    return X, Y, source


def mlp_loss_tg(params: Any, X: np.ndarray, Y: np.ndarray) -> Any:
    h = tnp.tanh(X @ params["W1"] + params["b1"])
    h = tnp.tanh(h @ params["W2"] + params["b2"])
    z = h @ params["W3"] + params["b3"]
    logp = z - tnp.logsumexp(z, axis=1, keepdims=True)
    return -tnp.sum(Y * logp) / X.shape[0]


def mlp_np(params: Params, X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, Params]:
    """Loss and gradients of :func:`mlp_loss_tg`, by hand (rows of ``Y`` sum to one).

    Written with care, as one would by hand: in-place updates where an array
    is not needed again and no temporaries kept alive (the operations, and so
    the results, are the same as the plain expressions in the comments).
    """
    W1, b1, W2, b2, W3, b3 = (params[k] for k in ("W1", "b1", "W2", "b2", "W3", "b3"))
    n = X.shape[0]
    h1 = X @ W1  # h1 = tanh(X @ W1 + b1)
    h1 += b1
    np.tanh(h1, out=h1)
    h2 = h1 @ W2  # h2 = tanh(h1 @ W2 + b2)
    h2 += b2
    np.tanh(h2, out=h2)
    z = h2 @ W3  # z = h2 @ W3 + b3
    z += b3
    m = np.max(z, axis=1, keepdims=True)  # logsumexp(z), stably
    e = np.exp(z - m)
    s = np.sum(e, axis=1, keepdims=True)
    loss = -np.sum(Y * (z - (np.log(s) + m))) / n
    dz = e / s  # dz = (softmax(z) - Y) / n
    dz -= Y
    dz /= n
    gW3, gb3 = h2.T @ dz, np.sum(dz, axis=0)
    da2 = dz @ W3.T  # da2 = (dz @ W3.T) * (1 - h2 * h2)
    h2 *= h2
    np.subtract(1, h2, out=h2)
    da2 *= h2
    del h2
    gW2, gb2 = h1.T @ da2, np.sum(da2, axis=0)
    da1 = da2 @ W2.T  # da1 = (da2 @ W2.T) * (1 - h1 * h1)
    del da2
    h1 *= h1
    np.subtract(1, h1, out=h1)
    da1 *= h1
    del h1
    gW1, gb1 = X.T @ da1, np.sum(da1, axis=0)
    return loss, {"W1": gW1, "b1": gb1, "W2": gW2, "b2": gb2, "W3": gW3, "b3": gb3}


def mlp_tg_step() -> Callable[[Params, np.ndarray, np.ndarray], tuple[Any, Params]]:
    return tg.value_and_grad(mlp_loss_tg)


def mlp_jit_step() -> Callable[[Params, np.ndarray, np.ndarray], tuple[Any, Params]]:
    """A new compiled step: its first call traces and compiles."""
    return tg.jit(tg.value_and_grad(mlp_loss_tg))


# --- (c) long chains ------------------------------------------------------------------------


def backward_sampler_tg(x0: np.ndarray, n: int) -> Sampler:
    def sample() -> float:
        with tg.Tape() as tape:
            x = tape.watch(x0)
            y = x
            for _ in range(n):
                y = y * C_MUL
        gc.collect()
        t0 = time.perf_counter()
        tape.gradient(y, x)
        return time.perf_counter() - t0

    return sample


def backward_sampler_np(x0: np.ndarray, n: int) -> Sampler:
    def sample() -> float:
        y = x0
        for _ in range(n):  # the forward (its backward needs nothing stored but n)
            y = y * C_MUL
        t0 = time.perf_counter()
        g = np.ones_like(y)
        for _ in range(n):
            g = g * C_MUL
        return time.perf_counter() - t0

    return sample


def long_chain_grad_tg(x0: np.ndarray, n: int) -> np.ndarray:
    with tg.Tape() as tape:
        x = tape.watch(x0)
        y = x
        for _ in range(n):
            y = y * C_MUL
    return tape.gradient(y, x)


def long_chain_grad_np(x0: np.ndarray, n: int) -> np.ndarray:
    g = np.ones_like(x0)
    for _ in range(n):
        g = g * C_MUL
    return g


# --- optional peers -------------------------------------------------------------------------


def _dist_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


class Peer:
    """Another autodiff library measured on the same problems (optional)."""

    name = ""
    version = ""

    def chain(self, x0: np.ndarray) -> Callable[[], tuple[Any, np.ndarray]]:
        raise NotImplementedError

    def mlp(self, params: Params, X: np.ndarray, Y: np.ndarray) -> Callable[[], tuple[Any, Params]]:
        raise NotImplementedError

    def backward_sampler(self, x0: np.ndarray, n: int) -> Sampler:
        raise NotImplementedError

    def long_chain_grad(self, x0: np.ndarray, n: int) -> np.ndarray:
        raise NotImplementedError


class AutogradPeer(Peer):
    name = "autograd"

    def __init__(self) -> None:
        import autograd
        import autograd.numpy as anp
        from autograd.core import make_vjp

        self.ag, self.anp, self.make_vjp = autograd, anp, make_vjp
        self.version = _dist_version("autograd")
        try:
            from autograd.scipy.special import logsumexp
        except ImportError:  # autograd's scipy wrappers need SciPy
            def logsumexp(z: Any, axis: int, keepdims: bool) -> Any:
                m = anp.max(z, axis=axis, keepdims=True)
                return anp.log(anp.sum(anp.exp(z - m), axis=axis, keepdims=keepdims)) + m
        self.logsumexp = logsumexp

    def chain(self, x0: np.ndarray) -> Callable[[], tuple[Any, np.ndarray]]:
        anp = self.anp

        def f(x: Any) -> Any:
            for _ in range(CHAIN_ITERS):
                x = anp.sin(x) * A_MUL + A_ADD
            return anp.sum(x)

        vg = self.ag.value_and_grad(f)
        return lambda: vg(x0)

    def mlp(self, params: Params, X: np.ndarray, Y: np.ndarray) -> Callable[[], tuple[Any, Params]]:
        anp, lse = self.anp, self.logsumexp

        def loss(p: Any) -> Any:
            h = anp.tanh(anp.dot(X, p["W1"]) + p["b1"])
            h = anp.tanh(anp.dot(h, p["W2"]) + p["b2"])
            z = anp.dot(h, p["W3"]) + p["b3"]
            logp = z - lse(z, axis=1, keepdims=True)
            return -anp.sum(Y * logp) / X.shape[0]

        vg = self.ag.value_and_grad(loss)
        return lambda: vg(params)

    def _chain_fn(self, n: int) -> Callable[[Any], Any]:
        def f(x: Any) -> Any:
            for _ in range(n):
                x = x * C_MUL
            return x

        return f

    def backward_sampler(self, x0: np.ndarray, n: int) -> Sampler:
        f = self._chain_fn(n)

        def sample() -> float:
            vjp, y = self.make_vjp(f, x0)
            g = np.ones_like(y)
            gc.collect()
            t0 = time.perf_counter()
            vjp(g)
            return time.perf_counter() - t0

        return sample

    def long_chain_grad(self, x0: np.ndarray, n: int) -> np.ndarray:
        vjp, y = self.make_vjp(self._chain_fn(n), x0)
        return vjp(np.ones_like(y))


class TorchPeer(Peer):
    name = "torch"

    def __init__(self) -> None:
        import torch

        torch.set_num_threads(1)
        self.torch = torch
        self.version = torch.__version__.split("+")[0]

    def chain(self, x0: np.ndarray) -> Callable[[], tuple[Any, np.ndarray]]:
        torch = self.torch

        def run() -> tuple[Any, np.ndarray]:
            x = torch.from_numpy(x0).requires_grad_()
            y = x
            for _ in range(CHAIN_ITERS):
                y = torch.sin(y) * A_MUL + A_ADD
            s = torch.sum(y)
            (g,) = torch.autograd.grad(s, x)
            return s.item(), g.numpy()

        return run

    def mlp(self, params: Params, X: np.ndarray, Y: np.ndarray) -> Callable[[], tuple[Any, Params]]:
        torch = self.torch
        names = list(params)
        tp = [torch.from_numpy(params[k].copy()).requires_grad_() for k in names]
        tX, tY = torch.from_numpy(X), torch.from_numpy(Y)
        n = X.shape[0]

        def run() -> tuple[Any, Params]:
            W1, b1, W2, b2, W3, b3 = tp
            h = torch.tanh(tX @ W1 + b1)
            h = torch.tanh(h @ W2 + b2)
            z = h @ W3 + b3
            logp = z - torch.logsumexp(z, dim=1, keepdim=True)
            loss = -torch.sum(tY * logp) / n
            grads = torch.autograd.grad(loss, tp)
            return loss.detach(), {k: g.numpy() for k, g in zip(names, grads)}

        return run

    def _build(self, x0: np.ndarray, n: int) -> tuple[Any, Any]:
        x = self.torch.from_numpy(x0.copy()).requires_grad_()
        y = x
        for _ in range(n):
            y = y * C_MUL
        return x, y

    def backward_sampler(self, x0: np.ndarray, n: int) -> Sampler:
        torch = self.torch

        def sample() -> float:
            x, y = self._build(x0, n)
            seed = torch.ones_like(y)
            gc.collect()
            t0 = time.perf_counter()
            torch.autograd.grad(y, x, grad_outputs=seed)
            return time.perf_counter() - t0

        return sample

    def long_chain_grad(self, x0: np.ndarray, n: int) -> np.ndarray:
        x, y = self._build(x0, n)
        (g,) = self.torch.autograd.grad(y, x, grad_outputs=self.torch.ones_like(y))
        return g.numpy()


def load_peers(enabled: bool) -> tuple[list[Peer], list[str]]:
    """The importable peers, and a line for each one skipped."""
    peers: list[Peer] = []
    skipped: list[str] = []
    for cls, module in ((AutogradPeer, "autograd"), (TorchPeer, "torch")):
        if not enabled:
            skipped.append(f"{module}: skipped (--no-peers)")
            continue
        try:
            peers.append(cls())
        except ImportError:
            skipped.append(f"{module}: not installed, skipped")
        except Exception as exc:  # a broken install must not stop the benchmark
            skipped.append(f"{module}: failed to load ({type(exc).__name__}: {exc}), skipped")
    return peers, skipped


# --- results and the table --------------------------------------------------------------------


@dataclass
class Row:
    case: str
    label: str
    unit: str
    numpy: float | None = None
    tapegrad: float | None = None
    peers: dict[str, float] = field(default_factory=dict)
    error: str = ""
    target: float | None = None  # when the row's target is not its case's
    abs_target: float | None = None  # a target for the tapegrad figure itself (in ``unit``), not the ratio
    note: str = ""  # printed under the table

    @property
    def ratio(self) -> float | None:
        if self.numpy is None or self.tapegrad is None or self.numpy <= 0:
            return None
        return self.tapegrad / self.numpy


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def render(rows: list[Row], peers: list[Peer]) -> str:
    header = ["case", "unit", "numpy", "tapegrad", "ratio", "target", "met"]
    header += [p.name for p in peers]
    lines: list[list[str]] = []
    notes: list[str] = []
    for row in rows:
        ratio = row.ratio
        if row.abs_target is not None:
            target_cell = f"<= {row.abs_target:g} {row.unit}"
            met = "-" if row.tapegrad is None else ("yes" if row.tapegrad <= row.abs_target else "NO")
        else:
            target = row.target if row.target is not None else TARGETS[row.case]
            target_cell = f"<= {target:.2f}x" if row.target is not None and row.target != round(row.target, 2) \
                else f"<= {target:g}x"
            met = "-" if ratio is None else ("yes" if ratio <= target else "NO")
        cells = [f"({row.case}) {row.label}", row.unit, fmt(row.numpy), fmt(row.tapegrad),
                 "-" if ratio is None else f"{ratio:.2f}x", target_cell, met]
        for p in peers:
            v = row.peers.get(p.name)
            if v is None:
                cells.append("-")
            elif row.numpy:
                cells.append(f"{fmt(v)} ({v / row.numpy:.2f}x)")
            else:
                cells.append(fmt(v))
        lines.append(cells)
        if row.error:
            notes.append(f"({row.case}) {row.label}: {row.error}")
        if row.note:
            notes.append(f"({row.case}) {row.label}: {row.note}")
    widths = [max(len(r[i]) for r in [header] + lines) for i in range(len(header))]

    def join(cells: list[str]) -> str:
        return " | ".join(c.ljust(w) if i < 2 else c.rjust(w)
                          for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [join(header), "-+-".join("-" * w for w in widths)]
    out += [join(cells) for cells in lines]
    if notes:
        out += ["", *notes]
    return "\n".join(out)


# --- the cases --------------------------------------------------------------------------------


COLD_FIRST_CALL_MS: list[float] = []  # the first tg.jit call of the process: (b)'s f64 step, at start-up


def check_jit(what: str, fn: Callable[[], Any], want: Any, rtol: float) -> float:
    """``fn()`` calls a ``tg.jit`` function: check its first call (the trace)
    and a later one (the compiled program) against ``want``. Returns the
    seconds of the first call."""
    first = 0.0
    for call in ("first call (trace)", "compiled"):
        t0 = time.perf_counter()
        got = fn()
        first = first or time.perf_counter() - t0
        if isinstance(want, tuple):
            for i, (g, w) in enumerate(zip(got, want)):
                check_close(f"{what}, jit {call}, output {i}", g, w, rtol)
        else:
            check_close(f"{what}, jit {call}", got, want, rtol)
    return first


def startup_checks(cases: set[str]) -> None:
    """Check that the hand-written gradients equal tapegrad's, eager and
    compiled with ``tg.jit`` (raise if not). (e) checks its own, eager and jit."""
    x0 = np.linspace(0.1, 1.0, 4)
    if cases & {"b", "d"}:  # first: its first jit call is the process's (COLD_FIRST_CALL_MS)
        step, step_jit = mlp_tg_step(), mlp_jit_step()
        for dtype, rtol in ((np.float64, 1e-9), (np.float32, 2e-4)):
            params = init_params(dtype, np.random.default_rng(0))
            X, Y, _ = load_batch(256, dtype)
            loss, grads = step(params, X, Y)
            loss_np, grads_np = mlp_np(params, X, Y)
            name = np.dtype(dtype).name
            check_close(f"(b) MLP {name} loss", loss, loss_np, rtol)
            check_close(f"(b) MLP {name} gradients", grads, grads_np, rtol)
            first = check_jit(f"(b) MLP {name} loss and gradients", lambda: step_jit(params, X, Y),
                              (loss_np, grads_np), rtol)
            if dtype is np.float64:
                COLD_FIRST_CALL_MS.append(first * 1e3)
    if "a" in cases:
        v, g = tg.value_and_grad(chain_tg)(x0)
        v_np, g_np = chain_np(x0)
        check_close("(a) chain value", v, v_np, 1e-12)
        check_close("(a) chain gradient", g, g_np, 1e-12)
        vg_jit = tg.jit(tg.value_and_grad(chain_tg))
        check_jit("(a) chain value and gradient", lambda: vg_jit(x0), (v_np, g_np), 1e-12)
    if "c" in cases:
        check_close("(c) chain gradient", long_chain_grad_tg(x0, 1000),
                    long_chain_grad_np(x0, 1000), 1e-12)


def peer_mismatch(peer: Peer, what: str, got: Any, want: Any, rtol: float) -> str:
    try:
        check_close(what, got, want, rtol)
    except GradientMismatch as exc:
        return f"{peer.name} gradients differ from the hand-written ones: {exc}"
    return ""


def numba_backend() -> bool:
    """``digits_bench.numba_backend()``: is ``backend="numba"`` there to time?"""
    import digits_bench  # benchmarks/digits_bench.py

    return digits_bench.numba_backend()


def case_a(s: Settings, peers: list[Peer]) -> list[Row]:
    x0 = np.linspace(0.1, 1.0, 4)
    vg = tg.value_and_grad(chain_tg)
    vg_jit = tg.jit(tg.value_and_grad(chain_tg))
    samplers = {"numpy": timed(lambda: chain_np(x0), s.a_number),
                "tapegrad": timed(lambda: vg(x0), s.a_number),
                "jit": timed(lambda: vg_jit(x0), s.a_number)}
    row = Row("a", "1,000-op chain, (4,) f64, fwd+bwd", "us/op")
    want = chain_np(x0)[1]
    for p in peers:
        run = p.chain(x0)
        row.error = row.error or peer_mismatch(p, "(a)", run()[1], want, 1e-10)
        samplers[p.name] = timed(run, s.a_number)
    med = measure(samplers, s.a_repeats, s.warmup)
    per_op = {k: v * 1e6 / CHAIN_OPS for k, v in med.items()}
    row.numpy, row.tapegrad = per_op.pop("numpy"), per_op.pop("tapegrad")
    rows = [row, Row("a", "the same, jit", "us/op", numpy=row.numpy, tapegrad=per_op.pop("jit"),
                     target=JIT_TARGETS["a"])]
    row.peers = per_op
    if numba_backend():  # (the opt-in backend: the chain is one loop. Timed in rounds of its own:
        # its 2,000-step kernel's code, run between the others, would slow whatever runs next)
        vg_numba = tg.jit(tg.value_and_grad(chain_tg), backend="numba")
        check_jit("(a) chain, numba", lambda: vg_numba(x0), chain_np(x0), 1e-10)
        med = measure({"numpy": timed(lambda: chain_np(x0), s.a_number),
                       "numba": timed(lambda: vg_numba(x0), s.a_number)}, s.a_repeats, s.warmup)
        rows.append(Row("a", "the same, jit, backend='numba'", "us/op", numpy=med["numpy"] * 1e6 / CHAIN_OPS,
                        tapegrad=med["numba"] * 1e6 / CHAIN_OPS, target=JIT_TARGETS["a numba"]))
    return rows


def case_b(s: Settings, peers: list[Peer]) -> list[Row]:
    rows = []
    step, step_jit = mlp_tg_step(), mlp_jit_step()
    for dtype, rtol in ((np.float64, 1e-9), (np.float32, 2e-4)):
        name = {np.float64: "f64", np.float32: "f32"}[dtype]
        params = init_params(dtype, np.random.default_rng(0))
        X, Y, _ = load_batch(256, dtype)
        row = Row("b", f"MLP value_and_grad, batch 256, {name}", "ms/step")
        samplers = {"numpy": timed(functools.partial(mlp_np, params, X, Y), s.b_number),
                    "tapegrad": timed(functools.partial(step, params, X, Y), s.b_number),
                    "jit": timed(functools.partial(step_jit, params, X, Y), s.b_number)}
        want = mlp_np(params, X, Y)[1]
        for p in peers:
            run = p.mlp(params, X, Y)
            row.error = row.error or peer_mismatch(p, "(b)", run()[1], want, 10 * rtol)
            samplers[p.name] = timed(run, s.b_number)
        med = {k: v * 1e3 for k, v in measure(samplers, s.b_repeats, s.warmup).items()}
        row.numpy, row.tapegrad = med.pop("numpy"), med.pop("tapegrad")
        jit_row = Row("b", f"the same, {name}, jit", "ms/step", numpy=row.numpy, tapegrad=med.pop("jit"),
                      target=JIT_TARGETS[f"b {name}"])
        row.peers = med
        rows += [row, jit_row]
    rows.append(first_call_row(s))
    if numba_backend():
        rows += numba_first_call_rows()
    return rows


def first_call_row(s: Settings) -> Row:
    """What the first call of a new ``tg.jit`` of (b)'s float64 step costs: trace,
    code generation, compilation and one run (ms), against an absolute target.
    The NumPy column is the hand-written step of the same rounds, for scale."""
    params = init_params(np.float64, np.random.default_rng(0))
    X, Y, _ = load_batch(256, np.float64)

    def first_call() -> Any:
        return mlp_jit_step()(params, X, Y)

    med = measure({"numpy": timed(functools.partial(mlp_np, params, X, Y)), "first call": timed(first_call)},
                  s.first_repeats, s.warmup)
    return Row("b", "first call of the f64 step, jit (trace + compile + run)", "ms",
               numpy=med["numpy"] * 1e3, tapegrad=med["first call"] * 1e3, abs_target=FIRST_CALL_MS,
               note=f"a new tg.jit each sample, in a warm process (the first one in the process, at "
                    f"start-up, took {COLD_FIRST_CALL_MS[0]:.1f} ms)" if COLD_FIRST_CALL_MS else "")


# run in a new process: import, then the first call of tg.jit(value_and_grad(MLP loss), backend="numba")
NUMBA_FIRST_CALL = """
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, tapegrad as tg
import run as R
params = R.init_params(np.float64, np.random.default_rng(0))
X, Y, _ = R.load_batch(256, np.float64)
t0 = time.perf_counter()
tg.jit(tg.value_and_grad(R.mlp_loss_tg), backend="numba")(params, X, Y)
print(time.perf_counter() - t0)
"""


def numba_first_call_rows() -> list[Row]:
    """The first call of (b)'s f64 step with ``backend="numba"`` in a new process
    (importing numba, tracing, compiling or loading its kernels, one run), with
    an empty kernel cache and then from the cache that call wrote (s)."""
    import subprocess
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    times = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TAPEGRAD_CACHE_DIR=cache)
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", NUMBA_FIRST_CALL, here], env=env,
                                 capture_output=True, text=True, check=True).stdout
            times.append(float(out.split()[-1]))
    return [Row("b", "first call of the f64 step, backend='numba', cold (a new process)", "s",
                tapegrad=times[0], abs_target=3.0),
            Row("b", "the same, its kernels from the disk cache", "s", tapegrad=times[1], abs_target=0.5)]


def case_c(s: Settings, peers: list[Peer]) -> list[Row]:
    rows = []
    x0 = np.linspace(0.1, 1.0, 4)
    want = long_chain_grad_np(x0, 1000)
    mismatch = ""
    for p in peers:
        mismatch = mismatch or peer_mismatch(p, "(c)", p.long_chain_grad(x0, 1000), want, 1e-12)
    for n in s.c_sizes:
        label = f"backward only, {n:,}-entry chain" if n < 1_000_000 else \
            f"backward only, {n // 1_000_000}M-entry chain"
        row = Row("c", label, "us/entry", error=mismatch if n == s.c_sizes[0] else "")
        samplers = {"numpy": backward_sampler_np(x0, n), "tapegrad": backward_sampler_tg(x0, n)}
        for p in peers:
            samplers[p.name] = p.backward_sampler(x0, n)
        # the 1M chain is warmed up by the smaller one (the same code paths)
        warm = s.c_warmup if n < 1_000_000 else 0
        caps = {p.name: s.c_peer_repeats[n] for p in peers}
        med = {k: v * 1e6 / n for k, v in measure(samplers, s.c_repeats[n], warm, caps).items()}
        row.numpy, row.tapegrad = med.pop("numpy"), med.pop("tapegrad")
        row.peers = med
        rows.append(row)
    return rows


def peak_mib(fn: Callable[[], Any]) -> float:
    """Peak MiB that ``fn()`` allocates above what is held when it starts.

    The measured call runs in a new thread: a ``tg.jit`` program keeps
    buffers of its own per thread from call to call, made at its first call
    in a thread, so they count here as they count in a training loop's
    footprint (a warm-up call on the main thread traces and compiles).
    """
    fn()  # warm-up: first-call caches (and jit's trace) do not count
    gc.collect()
    tracemalloc.start()
    try:
        thread = threading.Thread(target=fn)
        thread.start()
        thread.join()
        del thread
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def case_d(s: Settings, peers: list[Peer]) -> list[Row]:
    params = init_params(np.float64, np.random.default_rng(0))
    X, Y, _ = load_batch(s.d_batch, np.float64)
    step, step_jit = mlp_tg_step(), mlp_jit_step()
    row = Row("d", f"peak memory, MLP step, batch {s.d_batch:,}, f64", "MiB")
    row.numpy = peak_mib(lambda: mlp_np(params, X, Y))
    row.tapegrad = peak_mib(lambda: step(params, X, Y))
    # the target of the compiled step is eager's ratio of this run: no more memory than eager
    jit_row = Row("d", "the same, jit (target: the eager row's ratio)", "MiB", numpy=row.numpy,
                  tapegrad=peak_mib(lambda: step_jit(params, X, Y)), target=row.ratio)
    return [row, jit_row]


def case_e(s: Settings, peers: list[Peer]) -> list[Row]:
    """Hessian (n = 300), Hessian-vector product (n = 300) and the third
    derivative of tanh on 1,000 points, against their analytic formulas."""
    rng = np.random.default_rng(0)
    n = 300
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    x, v = rng.standard_normal(n), rng.standard_normal(n)
    pts = rng.standard_normal(1000)

    def f(x: Any) -> Any:
        return tnp.sum(tnp.tanh(A @ x) ** 2)

    def d2(x: np.ndarray) -> np.ndarray:  # second derivative of tanh(z)^2 at z = A x
        t = np.tanh(A @ x)
        return 2 * (1 - t * t) ** 2 - 4 * t * t * (1 - t * t)

    def hvp(x: Any, v: Any) -> Any:
        return tg.hvp(f, (x,), (v,))[1]

    hess = tg.hessian(f)
    d3 = tg.elementwise_grad(tg.elementwise_grad(tg.elementwise_grad(tnp.tanh)))
    hess_jit, hvp_jit, d3_jit = tg.jit(tg.hessian(f)), tg.jit(hvp), tg.jit(d3)
    cases = [
        ("Hessian, n=300, sum(tanh(Ax)^2)", 3.0, "hessian", lambda: A.T @ (d2(x)[:, None] * A),
         lambda: hess(x), lambda: hess_jit(x)),
        ("Hessian-vector product, n=300", 2.0, "hvp", lambda: A.T @ (d2(x) * (A @ v)),
         lambda: hvp(x, v), lambda: hvp_jit(x, v)),
        ("third derivative of tanh, 1,000 pts", 10.0, "d3",
         lambda: -2 * (1 - np.tanh(pts) ** 2) * (1 - 3 * np.tanh(pts) ** 2), lambda: d3(pts),
         lambda: d3_jit(pts)),
    ]
    rows = []
    for label, target, key, formula, ours, ours_jit in cases:
        want = formula()
        check_close(label, ours(), want, 1e-9)
        check_jit(label, ours_jit, want, 1e-9)  # (the jit's trace happens here, untimed)
        # enough calls per sample (~2 ms) that the untimed collection before
        # each sample does not leave microsecond-scale calls timed cold
        t0 = time.perf_counter()
        formula()
        number = max(1, int(2e-3 / max(time.perf_counter() - t0, 1e-7)))
        t = measure({"numpy": timed(formula, number), "tapegrad": timed(ours, max(1, number // 4)),
                     "jit": timed(ours_jit, max(1, number // 2))}, s.b_repeats, s.warmup)
        rows.append(Row("e", label, "ms", numpy=t["numpy"] * 1e3, tapegrad=t["tapegrad"] * 1e3,
                        target=target))
        rows.append(Row("e", "the same, jit", "ms", numpy=t["numpy"] * 1e3, tapegrad=t["jit"] * 1e3,
                        target=JIT_TARGETS[f"e {key}"]))
    return rows


def case_f(s: Settings, peers: list[Peer]) -> list[Row]:
    """The torch-style facade against the functional API (and NumPy) in one run."""
    import facade  # benchmarks/facade.py

    by = {(c, k): (v, unit) for c, k, v, unit in facade.run(s.a_repeats < 10)}
    rows = []
    for case, label in (("chain", "facade chain vs functional"), ("mlp", "facade MLP step f32 vs functional")):
        (fu, unit), (fa, _) = by[(case, "functional")], by[(case, "facade")]
        rows.append(Row("f", label, unit, numpy=fu, tapegrad=fa, target=1.2))
    npv, unit = by[("chain", "numpy")]
    rows.append(Row("f", "facade chain vs NumPy", unit, numpy=npv, tapegrad=by[("chain", "facade")][0],
                    target=3.5))
    return rows


def case_g(s: Settings, peers: list[Peer]) -> list[Row]:
    """Gradients of slogdet and solve at n = 500 against the NumPy formulas."""
    import linalg_bench  # benchmarks/linalg_bench.py

    return [Row("g", name, "ms", numpy=t_np * 1e3, tapegrad=t_tg * 1e3)
            for name, t_np, t_tg in linalg_bench.run(s.a_repeats < 10)]


def case_h(s: Settings, peers: list[Peer]) -> list[Row]:
    """One epoch of examples/train_digits.py in each style against hand-written NumPy."""
    import digits_bench  # benchmarks/digits_bench.py (needs scikit-learn)

    rows = []
    for style, t, t_np, _ in digits_bench.run(s.a_repeats < 10):
        if style == "jit":  # the example's --jit: value_and_grad + tg.optimizers.adam, compiled
            rows.append(Row("h", "train_digits epoch, functional style, jit", "ms", numpy=t_np * 1e3,
                            tapegrad=t * 1e3, target=JIT_TARGETS["h"]))
        elif style == "jit_donate":  # the same, parameters and state donated (written in place)
            rows.append(Row("h", "the same, jit, donate_argnums=(0, 1)", "ms", numpy=t_np * 1e3,
                            tapegrad=t * 1e3, target=JIT_TARGETS["h"]))
        elif style == "jit_numba":
            rows.append(Row("h", "the same, jit, backend='numba'", "ms", numpy=t_np * 1e3,
                            tapegrad=t * 1e3, target=0.7))
        elif style in digits_bench.PEERS:  # another library's step in the same rounds: its ratio
            rows.append(Row("h", f"train_digits epoch, {style} (peer)", "ms", numpy=t_np * 1e3,
                            tapegrad=t * 1e3, note="a peer's figure in the tapegrad column"))
        else:
            rows.append(Row("h", f"train_digits epoch, {style} style", "ms", numpy=t_np * 1e3,
                            tapegrad=t * 1e3))
    return rows


def case_i(s: Settings, peers: list[Peer]) -> list[Row]:
    """Per-example gradients with vmap(grad) against NumPy by hand and a loop of grad."""
    import vmap_bench  # benchmarks/vmap_bench.py

    med = vmap_bench.run(s.a_repeats < 10)
    peer = {"torch": med["torch.func"]} if "torch.func" in med and any(p.name == "torch" for p in peers) else {}
    return [Row("i", "per-example grads, vmap(grad), f64", "ms", numpy=med["numpy"],
                tapegrad=med["tapegrad"], peers=peer),
            Row("i", "vmap(grad) vs a loop of grad", "ms", numpy=med["loop"],
                tapegrad=med["tapegrad"], target=0.25)]


def case_j(s: Settings, peers: list[Peer]) -> list[Row]:
    """One training step of the example CNN on the facade against PyTorch eager (one thread)."""
    import torch_models  # benchmarks/torch_models.py

    return [Row("j", label, "ms/step", numpy=t_torch, tapegrad=t,
                note="the baseline column is PyTorch eager (one thread), not NumPy" if t_torch is not None
                else "PyTorch not importable: no baseline")
            for label, t, t_torch in torch_models.run_cnn(s.a_repeats < 10)]


def case_k(s: Settings, peers: list[Peer]) -> list[Row]:
    """An LSTM training step in tapegrad.torch against PyTorch eager (one thread)."""
    import torch_models  # benchmarks/torch_models.py

    return [Row("k", label, "ms/step", numpy=t_torch, tapegrad=t,
                note="the baseline column is PyTorch eager (one thread), not NumPy" if t_torch is not None
                else "PyTorch not importable: no baseline")
            for label, t, t_torch in torch_models.run_lstm(s.a_repeats < 10)]


CASE_FUNCS: dict[str, Callable[[Settings, list[Peer]], list[Row]]] = {
    "a": case_a, "b": case_b, "c": case_c, "d": case_d, "e": case_e, "f": case_f, "g": case_g,
    "h": case_h, "i": case_i, "j": case_j, "k": case_k,
}
CASE_LABELS = {
    "a": ("1,000-op chain, (4,) f64, fwd+bwd", "us/op"),
    "b": ("MLP value_and_grad, batch 256", "ms/step"),
    "c": ("backward only, long chains", "us/entry"),
    "d": ("peak memory, MLP step, f64", "MiB"),
    "e": ("Hessian / HVP / third derivative vs formulas", "ms"),
    "f": ("torch facade vs functional API", "-"),
    "g": ("linalg gradients vs formulas, n=500", "ms"),
    "h": ("train_digits epoch vs NumPy", "ms"),
    "i": ("per-example gradients, vmap(grad)", "ms"),
    "j": ("CNN training step vs PyTorch eager", "ms/step"),
    "k": ("LSTM training step vs PyTorch eager", "ms/step"),
}


# --- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="few repeats and no 1M chain: a smoke run of a few seconds")
    parser.add_argument("--only", default=",".join(CASES), metavar="a,b,...",
                        help="comma-separated cases to run (default: all of a..k)")
    parser.add_argument("--no-peers", action="store_true",
                        help="do not time autograd / torch even when they are installed")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows to PATH as JSON (for benchmarks/compare.py)")
    args = parser.parse_args(argv)
    only = {c.strip().lower() for c in args.only.split(",") if c.strip()}
    unknown = only - set(CASES)
    if unknown or not only:
        parser.error(f"--only takes cases from {','.join(CASES)}, got {args.only!r}")
    args.cases = only
    return args


def write_json(path: str, rows: list[Row]) -> None:
    """The rows as JSON: which tapegrad ran, and per row its case, label,
    unit, figures, ratio and error."""
    import json

    out = {"tapegrad": tg.__file__, "rows": [
        {"case": r.case, "label": r.label, "unit": r.unit, "numpy": r.numpy, "tapegrad": r.tapegrad,
         "ratio": r.ratio, "error": r.error} for r in rows]}
    Path(path).write_text(json.dumps(out, indent=1))


def describe_blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS threads: env vars set to 1 (threadpoolctl not installed)"
    parts = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} thread(s))"
             for i in threadpool_info() if i.get("user_api") == "blas"]
    return "BLAS: " + (", ".join(parts) or "unknown")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits

        limiter: Any = threadpool_limits(limits=1)
    except ImportError:
        limiter = None

    settings = Settings.make(args.quick)
    peers, skipped = load_peers(not args.no_peers)
    t_start = time.perf_counter()
    print(f"tapegrad {tg.__version__}, numpy {np.__version__}, Python {platform.python_version()}"
          f" ({platform.machine()}), {os.cpu_count()} CPU(s)")
    print(describe_blas())
    if args.cases & {"b", "d"}:
        print(f"MLP data: {load_batch(8, np.float64)[2]}")
    for p in peers:
        print(f"peer: {p.name} {p.version}")
    for line in skipped:
        print(f"peer: {line}")
    mode = "quick" if args.quick else "full"
    print(f"mode: {mode}; medians over interleaved repeats; ratio = tapegrad / numpy")

    startup_checks(args.cases)  # raises GradientMismatch: the only failing exit
    # Everything alive now (modules, data, peers' imports) is moved out of the
    # collector's sight, so the untimed gc.collect() before each sample is cheap
    # and collections inside timed code see only the benchmark's own objects.
    gc.collect()
    gc.freeze()
    print("start-up check: hand-written gradients match tapegrad's\n", flush=True)

    rows: list[Row] = []
    for case in CASES:
        if case not in args.cases:
            continue
        t0 = time.perf_counter()
        try:
            rows += CASE_FUNCS[case](settings, peers)
        except Exception as exc:  # report, don't abort: benchmarks don't assert
            label, unit = CASE_LABELS[case]
            rows.append(Row(case, label, unit, error=f"error: {type(exc).__name__}: {exc}"))
        print(f"  ({case}) done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    print(render(rows, peers))
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    if args.json:
        write_json(args.json, rows)
    del limiter
    return 0


if __name__ == "__main__":
    sys.exit(main())
