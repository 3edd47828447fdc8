"""One training epoch of ``examples/train_digits.py``: each style vs hand-written NumPy.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/digits_bench.py [--quick]

The contenders train the example's MLP (64 -> 256 -> tanh -> 10, float32,
cross-entropy, Adam, batch 64) for one epoch over the 1,437 training images:

- ``numpy``: forward, backward and the Adam update written out by hand
  (the baseline, re-timed in the same run);
- ``functional``: the example's ``--style functional`` step
  (``tg.value_and_grad`` + the NumPy Adam update);
- ``jit``: the example's ``--jit`` step (``tg.value_and_grad`` +
  ``tg.optimizers.adam``'s update, compiled as one ``tg.jit`` program; the
  two batch shapes of an epoch are compiled during the warm-up);
- ``torch``: the example's ``--style torch`` step (``nn.Sequential``,
  ``loss.backward()``, ``optim.Adam``) on the ``tapegrad.torch`` facade;
- ``jit_donate``: the ``jit`` step with the parameters and the optimizer
  state donated (``donate_argnums=(0, 1)``): the update is written over
  them, as the hand-written Adam updates in place;
- ``jit_numba``: the ``jit`` step with ``backend="numba"`` (its
  elementwise chains as compiled loops), when numba is importable;
- ``pytorch``: the same step in PyTorch itself (eager, one thread), when
  PyTorch is importable;
- ``jax``: the step (``jax.value_and_grad`` and Adam by hand, in place of
  the state) under ``jax.jit``, when JAX is importable.

Times are process CPU time (``time.process_time``): XLA and PyTorch may run
threads besides the caller's, and wall-clock time on a shared machine counts
other processes' work; CPU time of the whole process counts every thread of
this one, so a contender cannot look faster by running work elsewhere.

All start from the same weights and see the same batches, and all use Adam
with PyTorch's formulas. BLAS runs
on one thread (set before NumPy is imported). Each is warmed up for a few
epochs, then the epochs are timed round-robin (the order rotates every
round) with a ``gc.collect()`` before each; the table shows medians and the
ratio to NumPy (target: at most 1.1x eager, 1.0x jit). At start-up the
hand-written gradients are checked against tapegrad's, eager and compiled,
and one compiled training step against the hand-written step.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import train_digits as ex  # noqa: E402

import tapegrad as tg  # noqa: E402

TARGET = 1.1
TARGETS = {"functional": TARGET, "torch": TARGET, "jit": 0.8, "jit_donate": 0.8, "jit_numba": 0.7}  # (issue 25's)
STYLES = ("functional", "jit", "jit_donate", "torch")  # the contenders besides "numpy"
PEERS = ("pytorch", "jax")  # other libraries, timed when importable
OPTIONAL = ("jit_numba",)  # tapegrad contenders that need an extra
clock = time.process_time  # (see the module's docstring)


def available_peers() -> list[str]:
    """The peers of ``PEERS`` that can be imported here."""
    import importlib.util

    return [p for p in PEERS if importlib.util.find_spec("torch" if p == "pytorch" else p) is not None]


def _jit_takes(option: str) -> bool:
    """Does this checkout's ``tg.jit`` take ``option`` (an older one, timed by compare.py, may not)?"""
    import inspect

    return option in inspect.signature(tg.jit).parameters


def numba_backend() -> bool:
    """Is ``backend="numba"`` there to time (numba installed, and a checkout's
    ``tg.jit`` that takes it: compare.py times older ones too)? ``TAPEGRAD_BENCH_NUMBA=0``
    leaves it out: importing numba and LLVM changes how fast the process's other
    rows run (measured: NumPy's and eager's MLP step 10-20% slower after it), so
    a paired comparison with a checkout without it should not load it."""
    import importlib.util

    return (os.environ.get("TAPEGRAD_BENCH_NUMBA", "1") != "0" and importlib.util.find_spec("numba") is not None
            and _jit_takes("backend"))


def available_optional() -> list[str]:
    """The contenders of ``OPTIONAL`` whose extra is installed (and that this checkout has)."""
    return ["jit_numba"] if numba_backend() else []


def jit_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator, backend: str,
                donate: bool = False) -> Callable[[np.ndarray], float]:
    """The example's ``--jit`` step (value_and_grad and tg.optimizers.adam, one program) on ``backend``,
    with the parameters and the optimizer state donated if ``donate``."""
    params = ex.init_params(rng)
    opt = tg.optimizers.adam(ex.LR, b1=ex.BETAS[0], b2=ex.BETAS[1], eps=ex.EPS)
    state = opt.init(params)
    onehot = np.eye(ex.SIZES[-1], dtype=X.dtype)[y]
    value_and_grad = tg.value_and_grad(ex.loss_fn)

    def train_step(params: Any, state: Any, x: np.ndarray, oh: np.ndarray) -> Any:
        loss, grads = value_and_grad(params, x, oh)
        params, state = opt.update(grads, state, params)
        return params, state, loss

    options = ({"backend": backend} if backend != "numpy" else {}) | ({"donate_argnums": (0, 1)} if donate else {})
    compiled = tg.jit(train_step, **options)
    held = [params, state]

    def step(idx: np.ndarray) -> float:
        p, s, loss = compiled(held[0], held[1], X[idx], onehot[idx])
        held[:] = [p, s]
        return float(loss)

    return step


def numpy_grads(params: dict[str, np.ndarray], x: np.ndarray, onehot: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """The loss of ``ex.loss_fn`` and its gradient, by hand."""
    n = x.shape[0]
    a = x @ params["w1"].T + params["b1"]
    h = np.tanh(a)
    z = h @ params["w2"].T + params["b2"]
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(s[:, 0]) + zmax[:, 0]) - np.sum(z * onehot) / n)
    dz = (e / s - onehot) / n
    dh = dz @ params["w2"]
    dh *= 1 - h * h
    return loss, {"w1": dh.T @ x, "b1": dh.sum(axis=0), "w2": dz.T @ h, "b2": dz.sum(axis=0)}


def numpy_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, Any]:
    params = ex.init_params(rng)
    state = ex.adam_state(params)
    onehot = np.eye(ex.SIZES[-1], dtype=X.dtype)[y]

    def step(idx: np.ndarray) -> float:
        loss, grads = numpy_grads(params, X[idx], onehot[idx])
        ex.adam_update(params, grads, state)
        return loss

    def predict(Xq: np.ndarray) -> np.ndarray:
        return np.argmax(ex.logits(params, Xq), axis=1)

    return step, predict


def _check(X: np.ndarray, y: np.ndarray) -> None:
    """The hand-written gradients equal tapegrad's (eager and under ``tg.jit``), and
    a few compiled training steps (``--jit``) equal the hand-written steps."""
    params = ex.init_params(np.random.default_rng(0))
    onehot = np.eye(ex.SIZES[-1], dtype=X.dtype)[y[:64]]
    loss, g = numpy_grads(params, X[:64], onehot)
    for how, vg in (("eager", tg.value_and_grad(ex.loss_fn)), ("jit", tg.jit(tg.value_and_grad(ex.loss_fn)))):
        for _ in range(2):  # the jit's first call runs the trace, the second the compiled program
            loss_tg, g_tg = vg(params, X[:64], onehot)
            assert np.allclose(loss, loss_tg, rtol=1e-5), (how, loss, loss_tg)
            for k in g:
                assert np.allclose(g[k], g_tg[k], rtol=1e-4, atol=1e-6), (how, k)
    idx = [np.arange(64 * i, 64 * (i + 1)) for i in range(3)]
    step_np, _ = numpy_trainer(X, y, np.random.default_rng(0))
    step_jit, _, _ = ex.make_trainer("functional", X, y, 0, jit=True)
    for i in idx:
        l_np, l_jit = step_np(i), step_jit(i)
        assert np.allclose(l_np, l_jit, rtol=1e-5), ("jit step", l_np, l_jit)


def pytorch_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Callable[[np.ndarray], float]:
    """The example's torch step in PyTorch itself (eager, one thread), from the same weights."""
    import torch

    torch.set_num_threads(1)
    params = ex.init_params(rng)
    model = torch.nn.Sequential(torch.nn.Linear(*ex.SIZES[:2]), torch.nn.Tanh(), torch.nn.Linear(*ex.SIZES[1:]))
    with torch.no_grad():
        for layer, i in ((model[0], 1), (model[2], 2)):
            layer.weight.copy_(torch.from_numpy(params[f"w{i}"]))
            layer.bias.copy_(torch.from_numpy(params[f"b{i}"]))
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=ex.LR, betas=ex.BETAS, eps=ex.EPS)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y.astype(np.int64))

    def step(idx: np.ndarray) -> float:
        optimizer.zero_grad()
        i = torch.from_numpy(idx)
        loss = loss_fn(model(Xt[i]), yt[i])
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def jax_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Callable[[np.ndarray], float]:
    """The step under ``jax.jit`` (``value_and_grad`` and Adam), from the same weights."""
    import jax
    import jax.numpy as jnp

    params = {k: jnp.asarray(v) for k, v in ex.init_params(rng).items()}
    m = {k: jnp.zeros_like(v) for k, v in params.items()}
    v = {k: jnp.zeros_like(p) for k, p in params.items()}
    onehot = np.eye(ex.SIZES[-1], dtype=X.dtype)[y]
    b1, b2 = ex.BETAS

    def loss_fn(p: Any, x: Any, oh: Any) -> Any:
        z = jnp.tanh(x @ p["w1"].T + p["b1"]) @ p["w2"].T + p["b2"]
        return jnp.mean(jax.nn.logsumexp(z, axis=1)) - jnp.sum(z * oh) / x.shape[0]

    @jax.jit
    def train_step(p: Any, m: Any, v: Any, t: Any, x: Any, oh: Any) -> Any:
        loss, g = jax.value_and_grad(loss_fn)(p, x, oh)
        t = t + 1
        step_size = ex.LR / (1 - b1 ** t)
        root = jnp.sqrt(1 - b2 ** t)
        m = jax.tree_util.tree_map(lambda m, g: m + (1 - b1) * (g - m), m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        p = jax.tree_util.tree_map(lambda p, m, v: p - step_size * m / (jnp.sqrt(v) / root + ex.EPS), p, m, v)
        return p, m, v, t, loss

    state = [params, m, v, jnp.asarray(0.0, jnp.float32)]

    def step(idx: np.ndarray) -> float:
        p, m, v, t, loss = train_step(*state, X[idx], onehot[idx])
        state[:] = [p, m, v, t]
        return float(loss)

    return step


def epoch_runner(style: str, X: np.ndarray, y: np.ndarray, seed: int = 0) -> Callable[[], float]:
    """A function that trains one more epoch in ``style`` ('numpy', 'functional',
    'jit', 'torch', 'pytorch' or 'jax') and returns its mean loss."""
    if style == "numpy":
        rng = np.random.default_rng(seed)
        step, _ = numpy_trainer(X, y, rng)
    elif style == "jit_numba":
        rng = np.random.default_rng(seed)
        step = jit_trainer(X, y, rng, "numba")
    elif style == "jit_donate":
        rng = np.random.default_rng(seed)
        step = jit_trainer(X, y, rng, "numpy", donate=True)
    elif style in ("pytorch", "jax"):
        rng = np.random.default_rng(seed)
        step = (pytorch_trainer if style == "pytorch" else jax_trainer)(X, y, rng)
    elif style == "jit":
        step, _, rng = ex.make_trainer("functional", X, y, seed, jit=True)
    else:
        step, _, rng = ex.make_trainer(style, X, y, seed)

    def epoch() -> float:
        total = 0.0
        for idx in ex.batches(rng, len(X), ex.BATCH):
            total += step(idx) * len(idx)
        return total / len(X)

    return epoch


def epoch_time(style: str, quick: bool = False) -> dict[str, float]:
    """Median seconds per epoch of ``style`` and of the NumPy baseline, timed together."""
    return _time_epochs(["numpy", style], quick)


def _time_epochs(styles: list[str], quick: bool) -> dict[str, float]:
    X, y, _, _ = ex.load_data()
    runners = {s: epoch_runner(s, X, y) for s in styles}
    for _ in range(2 if quick else 5):
        for r in runners.values():
            r()
    times: dict[str, list[float]] = {s: [] for s in styles}
    gc.freeze()
    try:
        for rnd in range(5 if quick else 31):
            k = rnd % len(styles)
            for s in styles[k:] + styles[:k]:
                gc.collect()
                t0 = clock()
                runners[s]()
                times[s].append(clock() - t0)
    finally:
        gc.unfreeze()
    return {s: statistics.median(v) for s, v in times.items()}


def run(quick: bool = False) -> list[tuple[str, float, float, float]]:
    """Time an epoch of each style with the NumPy baseline in the same run.

    Returns rows ``(style, seconds, numpy_seconds, ratio)`` (medians).
    """
    X, y, _, _ = ex.load_data()
    _check(X, y)
    styles = [s for s in STYLES if s != "jit_donate" or _jit_takes("donate_argnums")]
    styles += [*available_optional(), *available_peers()]
    med = _time_epochs(["numpy", *styles], quick)
    return [(s, med[s], med["numpy"], med[s] / med["numpy"]) for s in styles]


def main(argv: list[str]) -> None:
    rows = run(quick="--quick" in argv)
    print(f"one epoch of examples/train_digits.py (MLP {ex.SIZES}, batch {ex.BATCH}, Adam), one BLAS thread")
    print(f"{'style':<12}{'ms/epoch':>10}{'numpy ms':>10}{'ratio':>8}{'target':>9}")
    for style, t, t_np, ratio in rows:
        target = TARGETS.get(style)
        flag = "" if target is None or ratio <= target else "  (over target)"
        bound = f"<= {target}x" if target is not None else "(peer)"
        print(f"{style:<12}{t * 1e3:>10.2f}{t_np * 1e3:>10.2f}{ratio:>7.2f}x{bound:>9}{flag}")


if __name__ == "__main__":
    main(sys.argv[1:])
