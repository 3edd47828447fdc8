"""Train an MLP on scikit-learn's handwritten digits, in tapegrad's two styles.

    --style functional   parameters in a dict, ``tg.value_and_grad`` of a loss
                         written with ``tapegrad.numpy``, Adam written with NumPy
    --style torch        ``nn.Sequential``, ``nn.CrossEntropyLoss``,
                         ``loss.backward()`` and ``torch.optim.Adam``
                         (``import tapegrad.torch as torch``)
    --jit                the functional style with the whole training step
                         (``value_and_grad`` and ``tg.optimizers.adam``'s update)
                         compiled as one ``tg.jit`` program

Data-parallel: ``mpiexec -n 2 python examples/train_digits.py [--style torch]``
runs N processes (``pip install "tapegrad[distributed]"``). Every process draws
the same batches; each computes the gradient on its shard of the batch
(``tapegrad.distributed.shard``), and the shards' gradients are summed over the
processes: ``tapegrad.distributed.all_reduce`` in the functional style,
``DistributedDataParallel`` in the torch style. Each process's loss is its
shard's sum over the *global* batch size, so the sum over processes is the
one-process mean loss and the run takes the same steps as one process with
the same (global) batch, to rounding.

Both styles train the same network (64 -> 256 -> tanh -> 10, PyTorch's
``nn.Linear`` initialisation) with the same hyperparameters, the same initial
weights and the same mini-batches for a given ``--seed``: the generator that
``torch.manual_seed`` seeds is NumPy's, and the functional style draws from
it in the same order. So the two runs agree to rounding. ``--jit`` also starts from those weights and
batches; its Adam is ``tg.optimizers.adam`` (the same formulas, so it agrees
to float32 rounding too).

The data (1,797 8x8 images, 64 features, 10 classes) ships with scikit-learn:
no download. Features are standardised with the training split's statistics
and 20% of the images are held out for the accuracy.

Run: [mpiexec -n N] python examples/train_digits.py [--style functional|torch] [--jit]
     [--epochs N] [--batch B] [--seed S] [--small] [--quiet]
"""

from __future__ import annotations

# ruff: noqa: E402
import os

# The matrices are small: one BLAS thread is fastest, and on a busy two-core
# machine more threads only fight (set before NumPy is imported; override freely).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.distributed as dist
import tapegrad.numpy as tnp

SIZES = (64, 256, 10)  # input, hidden, classes
EPOCHS = 20
BATCH = 64
LR = 3e-3
BETAS = (0.9, 0.999)
EPS = 1e-8

# One update on a batch (indices into the data); returns the batch's mean loss (under
# mpiexec: this process's part of it, which train() adds up over the processes).
Step = Callable[[np.ndarray, np.ndarray], float]


# --- data -------------------------------------------------------------------------------------


def load_data(test_fraction: float = 0.2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised float32 features and int64 labels: (X_train, y_train, X_test, y_test).

    The split is stratified and fixed (it does not depend on ``--seed``).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_fraction, random_state=0, stratify=y)
    mean, std = Xtr.mean(axis=0), Xtr.std(axis=0)
    std[std == 0] = 1.0  # a few border pixels are always 0
    f32 = np.float32
    return ((Xtr - mean) / std).astype(f32), ytr.astype(np.int64), ((Xte - mean) / std).astype(f32), yte.astype(np.int64)


def batches(rng: np.random.Generator, n: int, batch_size: int) -> Iterator[np.ndarray]:
    """Index arrays of one shuffled epoch (the last batch may be short)."""
    perm = rng.permutation(n)
    for i in range(0, n, batch_size):
        yield perm[i : i + batch_size]


# --- the functional style ------------------------------------------------------------------------


def init_params(rng: np.random.Generator, sizes: tuple[int, ...] = SIZES) -> dict[str, np.ndarray]:
    """PyTorch's ``nn.Linear`` initialisation, in its draw order and layout:
    ``w`` is (out, in), both drawn from U(-1/sqrt(in), 1/sqrt(in))."""
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        bound = 1 / np.sqrt(n_in)
        params[f"w{i}"] = rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32)
        params[f"b{i}"] = rng.uniform(-bound, bound, n_out).astype(np.float32)
    return params


def logits(params: dict[str, Any], x: Any) -> Any:
    h = tnp.tanh(x @ params["w1"].T + params["b1"])
    return h @ params["w2"].T + params["b2"]


def loss_fn(params: dict[str, Any], x: np.ndarray, onehot: np.ndarray) -> Any:
    """Mean cross-entropy: logsumexp(z) - z[y], with the label picked by a one-hot mask."""
    z = logits(params, x)
    return tnp.mean(tnp.logsumexp(z, axis=1)) - tnp.sum(z * onehot) / x.shape[0]


def shard_loss_fn(params: dict[str, Any], x: np.ndarray, onehot: np.ndarray, total: int) -> Any:
    """This process's part of the mean cross-entropy of a batch of ``total`` rows
    split over the processes: its rows' sum over ``total`` (the parts add up to the mean)."""
    z = logits(params, x)
    return (tnp.sum(tnp.logsumexp(z, axis=1)) - tnp.sum(z * onehot)) / total


def adam_state(params: dict[str, np.ndarray]) -> dict[str, Any]:
    return {"t": 0, "m": {k: np.zeros_like(p) for k, p in params.items()},
            "v": {k: np.zeros_like(p) for k, p in params.items()}}


def adam_update(params: dict[str, np.ndarray], grads: dict[str, np.ndarray], state: dict[str, Any],
                lr: float = LR, betas: tuple[float, float] = BETAS, eps: float = EPS) -> None:
    """Adam in place, with PyTorch's bias correction (the same update as ``optim.Adam``)."""
    b1, b2 = betas
    state["t"] += 1
    t = state["t"]
    step_size, root = lr / (1 - b1**t), (1 - b2**t) ** 0.5  # Python floats keep float32
    for k, g in grads.items():
        m, v = state["m"][k], state["v"][k]
        m += (1 - b1) * (g - m)
        v *= b2
        v += (1 - b2) * g * g
        params[k] -= step_size * m / (np.sqrt(v) / root + eps)


def functional_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[Step, Callable[[np.ndarray], np.ndarray]]:
    """A step function and a predictor for the functional style."""
    params = init_params(rng)
    state = adam_state(params)
    onehot = np.eye(SIZES[-1], dtype=X.dtype)[y]
    value_and_grad = tg.value_and_grad(loss_fn)
    if dist.world_size() > 1:  # data-parallel: every process starts from rank 0's weights
        params = dist.broadcast(params)
        state = adam_state(params)
        shard_value_and_grad = tg.value_and_grad(shard_loss_fn)

    def step(idx: np.ndarray) -> float:
        if dist.world_size() > 1:
            mine = dist.shard(idx)
            # this process's part of the batch's mean loss (train() adds the parts up)
            loss, grads = shard_value_and_grad(params, X[mine], onehot[mine], len(idx))
            grads = dist.all_reduce(grads, op="sum")  # one message per dtype
        else:
            loss, grads = value_and_grad(params, X[idx], onehot[idx])
        adam_update(params, grads, state)
        return float(loss)

    def predict(Xq: np.ndarray) -> np.ndarray:
        return np.argmax(logits(params, Xq), axis=1)

    return step, predict


def jit_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[Step, Callable[[np.ndarray], np.ndarray]]:
    """The functional style with its whole step compiled: ``tg.jit`` traces the
    forward pass, the backward pass and the optimizer update once per batch
    shape (the last batch of an epoch is shorter: a second program), then runs
    them as one straight-line NumPy program. Under ``mpiexec`` the gradient of
    the shard and the update are two programs, with the ``all_reduce`` between."""
    params = init_params(rng)
    opt = tg.optimizers.adam(LR, b1=BETAS[0], b2=BETAS[1], eps=EPS)
    state = opt.init(params)
    onehot = np.eye(SIZES[-1], dtype=X.dtype)[y]
    value_and_grad = tg.value_and_grad(loss_fn)

    @tg.jit
    def train_step(params: dict[str, Any], state: Any, x: np.ndarray, onehot: np.ndarray) -> Any:
        loss, grads = value_and_grad(params, x, onehot)
        params, state = opt.update(grads, state, params)
        return params, state, loss

    if dist.world_size() > 1:  # data-parallel: compiled gradient, all_reduce, compiled update
        params = dist.broadcast(params)
        state = opt.init(params)
        shard_value_and_grad = tg.jit(tg.value_and_grad(shard_loss_fn), static_argnums=(3,))
        update = tg.jit(opt.update)

    def step(idx: np.ndarray) -> float:
        nonlocal params, state
        if dist.world_size() > 1:
            mine = dist.shard(idx)
            loss, grads = shard_value_and_grad(params, X[mine], onehot[mine], len(idx))
            params, state = update(dist.all_reduce(grads, op="sum"), state, params)
        else:
            params, state, loss = train_step(params, state, X[idx], onehot[idx])
        return float(loss)

    def predict(Xq: np.ndarray) -> np.ndarray:
        return np.argmax(logits(params, Xq), axis=1)

    return step, predict


# --- the PyTorch style ---------------------------------------------------------------------------


def torch_trainer(X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[Step, Callable[[np.ndarray], np.ndarray]]:
    """The same model and update written as a PyTorch training loop."""
    import tapegrad.torch as torch
    from tapegrad.torch import nn

    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.Tanh(), nn.Linear(SIZES[1], SIZES[2]))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    n_proc = dist.world_size()
    if n_proc > 1:
        # data-parallel: rank 0's weights at wrap, gradients averaged in backward()
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend="mpi")
        model = nn.parallel.DistributedDataParallel(model)
        sum_loss = nn.CrossEntropyLoss(reduction="sum")

    def step(idx: np.ndarray) -> float:
        optimizer.zero_grad()
        if n_proc > 1:
            mine = torch.from_numpy(dist.shard(idx))
            # DDP averages over the processes: n_proc * (shard's sum / batch) averages
            # to the batch's mean loss whatever the shard sizes
            loss = sum_loss(model(Xt[mine]), yt[mine]) * (n_proc / len(idx))
            loss.backward()
            optimizer.step()
            return loss.item() / n_proc  # this process's part of the batch's mean loss
        loss = loss_fn(model(Xt[idx]), yt[idx])
        loss.backward()
        optimizer.step()
        return loss.item()

    def predict(Xq: np.ndarray) -> np.ndarray:
        model.eval()
        with torch.no_grad():
            out = model(torch.from_numpy(Xq)).argmax(dim=1).numpy()
        model.train()
        return out

    return step, predict


TRAINERS = {"functional": functional_trainer, "torch": torch_trainer}


def make_trainer(style: str, X: np.ndarray, y: np.ndarray, seed: int,
                 jit: bool = False) -> tuple[Step, Callable[[np.ndarray], np.ndarray], np.random.Generator]:
    """(step, predict, rng) for ``style``; ``rng`` then shuffles the batches.

    The torch style draws its initial weights from ``torch.manual_seed(seed)``'s
    generator, the functional style from ``np.random.default_rng(seed)``: the
    same NumPy stream, so both start from the same weights and see the same batches.
    ``jit=True`` (functional style only) compiles the step with ``tg.jit``.
    """
    if jit and style != "functional":
        raise ValueError(f"jit=True compiles the functional style's step, not the {style} style's")
    if style == "torch":
        import tapegrad.torch as torch

        rng = torch.manual_seed(seed).numpy_generator
    else:
        rng = np.random.default_rng(seed)
    step, predict = (jit_trainer if jit else TRAINERS[style])(X, y, rng)
    return step, predict, rng


# --- main ----------------------------------------------------------------------------------------


def _progress(total: int, desc: str) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # the example still runs without tqdm, without a bar
        class _NoBar:
            def update(self, n: int = 1) -> None:
                pass

            def set_postfix_str(self, s: str, refresh: bool = True) -> None:
                pass

            def close(self) -> None:
                pass

        return _NoBar()
    return tqdm(total=total, desc=desc, unit="batch", leave=True)


def train(style: str, epochs: int = EPOCHS, seed: int = 0, quiet: bool = False,
          jit: bool = False, batch: int = BATCH) -> tuple[float, float, list[float]]:
    """Train in ``style`` (compiled with ``jit``) with mini-batches of ``batch``
    (split over the processes under ``mpiexec``); returns (held-out accuracy,
    seconds, mean loss per epoch)."""
    Xtr, ytr, Xte, yte = load_data()
    step, predict, rng = make_trainer(style, Xtr, ytr, seed, jit=jit)
    n_batches = -(-len(Xtr) // batch)
    quiet = quiet or dist.rank() != 0  # one progress bar, rank 0's
    bar = _progress(epochs * n_batches, f"{style + ('+jit' if jit else ''):>10}") if not quiet else None
    history = []
    start = time.perf_counter()
    for epoch in range(epochs):
        total, count = 0.0, 0
        for idx in batches(rng, len(Xtr), batch):
            total += step(idx) * len(idx)
            count += len(idx)
            if bar is not None:
                bar.update()
                shown = f", loss {total / count:.4f}" if dist.world_size() == 1 else ""  # else a part
                bar.set_postfix_str(f"epoch {epoch + 1}/{epochs}{shown}", refresh=False)
        if dist.world_size() > 1:  # the processes' parts of the losses, once per epoch
            total = dist.all_reduce(total, op="sum")
        history.append(total / count)
    seconds = time.perf_counter() - start
    if bar is not None:
        bar.close()
    accuracy = float(np.mean(predict(Xte) == yte))
    return accuracy, seconds, history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--style", choices=sorted(TRAINERS), default="functional")
    parser.add_argument("--epochs", type=int, default=None, help=f"passes over the data (default {EPOCHS})")
    parser.add_argument("--seed", type=int, default=0, help="initial weights and batch order")
    parser.add_argument("--batch", type=int, default=BATCH,
                        help=f"the (global) mini-batch size (default {BATCH})")
    parser.add_argument("--small", action="store_true", help="a fast smoke run (2 epochs)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--jit", action="store_true",
                        help="compile the functional training step (value_and_grad + Adam) with tg.jit")
    args = parser.parse_args()
    if args.jit and args.style != "functional":
        parser.error("--jit compiles the functional style's step (use it without --style torch)")
    if args.batch < 1:
        parser.error(f"--batch must be at least 1, got {args.batch}")
    epochs = args.epochs if args.epochs is not None else (2 if args.small else EPOCHS)
    accuracy, seconds, history = train(args.style, epochs, args.seed, quiet=args.quiet, jit=args.jit,
                                       batch=args.batch)
    label = f"{args.style}, jit" if args.jit else args.style
    if dist.world_size() > 1:
        label += f", {dist.world_size()} processes"
    if dist.rank() == 0:
        print(f"{label}: {epochs} epochs of {SIZES[0]}-{SIZES[1]}-{SIZES[2]} MLP, Adam lr={LR}, "
              f"batch {args.batch}, in {seconds:.2f} s; loss {history[0]:.4f} -> {history[-1]:.4f}")
        print(f"held-out accuracy: {accuracy:.1%} ({label})")


if __name__ == "__main__":
    main()
