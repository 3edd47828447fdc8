"""A small CNN on scikit-learn's 8x8 handwritten digits, written as a PyTorch program.

The file is ordinary PyTorch: ``Conv2d``, ``BatchNorm2d``, ``MaxPool2d``,
``Dropout``, ``AdamW`` with a ``CosineAnnealingLR`` schedule, and the data
through ``TensorDataset`` and ``DataLoader`` (batches of 64, shuffled by a seeded
``torch.Generator``). Only the import differs: ``import
tapegrad.torch as torch``. With ``--torch`` the very same code runs on
PyTorch itself, for comparison (accuracy and time per epoch).

The data (1,797 grey 1x8x8 images, 10 classes) ships with scikit-learn: no
download. Pixels are standardised with the training split's mean and
standard deviation; 20% of the images (stratified, fixed split) are held
out. A full run (15 epochs) reaches about 98% held-out accuracy in a few
seconds.

Run: python examples/cnn_digits.py [--torch] [--epochs N] [--seed S] [--small]
"""

from __future__ import annotations

# ruff: noqa: E402
import os
import sys

# The tensors are small: one BLAS thread is fastest, and on a busy two-core
# machine more threads only fight (set before NumPy is imported; override freely).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time
from typing import Any

import numpy as np

if "--torch" in sys.argv:  # the same program on PyTorch itself
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
else:
    import tapegrad.torch as torch  # type: ignore[no-redef]
    import tapegrad.torch.nn.functional as F  # type: ignore[no-redef]
    from tapegrad.torch import nn  # type: ignore[no-redef]
    from tapegrad.torch.utils.data import DataLoader, TensorDataset  # type: ignore[no-redef]

EPOCHS = 15
BATCH = 64
LR = 1e-2
WEIGHT_DECAY = 1e-2


def load_data(test_fraction: float = 0.2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised float32 images ``(N, 1, 8, 8)`` and int64 labels: (X_train, y_train, X_test, y_test)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    images, labels = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(images, labels, test_size=test_fraction, random_state=0,
                                          stratify=labels)
    mean, std = Xtr.mean(), Xtr.std()

    def prep(X: np.ndarray) -> np.ndarray:
        return ((X - mean) / std).astype(np.float32).reshape(-1, 1, 8, 8)

    return prep(Xtr), ytr.astype(np.int64), prep(Xte), yte.astype(np.int64)


def make_model() -> Any:
    """Two conv blocks (3x3 conv, batch norm, ReLU, 2x2 max pool) and a linear classifier:
    ``(N, 1, 8, 8) -> (N, 16, 4, 4) -> (N, 32, 2, 2) -> (N, 10)`` logits."""
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1, bias=False),  # (the batch norm has the bias)
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.25),
        nn.Linear(32 * 2 * 2, 10),
    )


def train_step(model: Any, optimizer: Any, xb: Any, yb: Any) -> Any:
    """One update on a batch: forward, cross-entropy, backward, optimizer step; returns the loss."""
    optimizer.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
    return loss


def evaluate(model: Any, X: Any, y: Any) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` (in eval mode) on ``(X, y)``."""
    model.eval()
    with torch.no_grad():
        out = model(X)
        loss = F.cross_entropy(out, y).item()
        acc = (out.argmax(dim=1) == y).float().mean().item()
    model.train()
    return loss, acc


def main(argv: list[str] | None = None) -> float:
    """Train and report; returns the final held-out accuracy (a fraction)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", action="store_true", help="run on PyTorch itself (for comparison)")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true", help="a smoke run: 2 epochs on 512 images")
    args = parser.parse_args(argv)
    epochs = 2 if args.small else args.epochs

    torch.manual_seed(args.seed)
    Xtr, ytr, Xte, yte = load_data()
    if args.small:
        Xtr, ytr = Xtr[:512], ytr[:512]
    train_set = TensorDataset(torch.from_numpy(Xtr), torch.from_numpy(ytr))
    loader = DataLoader(train_set, batch_size=BATCH, shuffle=True,
                        generator=torch.Generator().manual_seed(args.seed))
    X_test, y_test = torch.from_numpy(Xte), torch.from_numpy(yte)

    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    print(f"{'PyTorch ' + torch.__version__ if args.torch else 'tapegrad.torch'}: "
          f"{len(train_set)} training images, {len(Xte)} held out")

    start = time.perf_counter()
    acc = 0.0
    for epoch in range(1, epochs + 1):
        total, seen = 0.0, 0
        for xb, yb in loader:
            loss = train_step(model, optimizer, xb, yb)
            total += loss.item() * len(yb)
            seen += len(yb)
        scheduler.step()
        test_loss, acc = evaluate(model, X_test, y_test)
        print(f"epoch {epoch:2d}  train loss {total / seen:.4f}  test loss {test_loss:.4f}  "
              f"test accuracy {100 * acc:.1f}%  lr {scheduler.get_last_lr()[0]:.5f}")
    elapsed = time.perf_counter() - start
    print(f"held-out accuracy: {100 * acc:.2f}% after {epochs} epochs ({elapsed:.1f} s, "
          f"{1e3 * elapsed / epochs:.0f} ms per epoch)")
    return acc


if __name__ == "__main__":
    main()
