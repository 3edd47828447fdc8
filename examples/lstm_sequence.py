"""An LSTM learns to count: how many 1s are in a bit sequence of varying length?

Each example is a random bit sequence of 4 to 16 steps; the label is its
number of ones (a class 0..16). The sequences are padded into a batch and
packed with ``nn.utils.rnn.pack_padded_sequence`` (``enforce_sorted=False``),
so the LSTM (``batch_first``) stops at each sequence's own end and its final
state ``h_n`` feeds a linear classifier. Trained with Adam and a StepLR
schedule on batches from a ``DataLoader`` shuffled by a seeded
``torch.Generator``; the accuracy is measured on sequences held out.

Written as a PyTorch program with ``import tapegrad.torch as torch``;
``--torch`` runs the very same code on PyTorch (CPU, one thread).

Run: python examples/lstm_sequence.py [--torch] [--epochs N] [--seed S] [--small]
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

MIN_LEN, MAX_LEN = 4, 16


def make_data(torch: object, n: int, gen: object) -> tuple[object, object, object]:
    """``n`` bit sequences, zero-padded to MAX_LEN (``(n, MAX_LEN, 1)`` float),
    their lengths and their counts of ones (the labels)."""
    lengths = torch.randint(MIN_LEN, MAX_LEN + 1, (n,), generator=gen)
    bits = torch.randint(0, 2, (n, MAX_LEN), generator=gen)
    mask = torch.arange(MAX_LEN).unsqueeze(0) < lengths.unsqueeze(1)
    bits = bits * mask
    return bits.unsqueeze(-1).float(), lengths, bits.sum(dim=1)


def build(torch: object) -> type:
    nn = torch.nn

    class Counter(nn.Module):
        """LSTM over the packed sequences, then a linear layer on the last state."""

        def __init__(self, hidden: int = 32) -> None:
            super().__init__()
            self.lstm = nn.LSTM(1, hidden, batch_first=True)
            self.head = nn.Linear(hidden, MAX_LEN + 1)

        def forward(self, x: object, lengths: object) -> object:
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            _, (h_n, _) = self.lstm(packed)
            return self.head(h_n[-1])

    return Counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead of tapegrad.torch")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true", help="a fast smoke run (2 epochs, less data)")
    args = parser.parse_args()
    if args.torch:
        import torch

        torch.set_num_threads(1)
    else:
        import tapegrad.torch as torch  # type: ignore[no-redef]
    epochs, n_train = (2, 512) if args.small else (args.epochs, 4096)

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    x, lengths, y = make_data(torch, n_train, gen)
    x_test, len_test, y_test = make_data(torch, 1024, gen)
    data = torch.utils.data.TensorDataset(x, lengths, y)
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, generator=gen)

    model = build(torch)()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()
    print(f"{'PyTorch' if args.torch else 'tapegrad.torch'}: {model}")
    start = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for xb, lb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb, lb), yb)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            total += loss.item() * len(yb)
        scheduler.step()
        model.eval()
        with torch.no_grad():
            acc = (model(x_test, len_test).argmax(dim=1) == y_test).float().mean().item()
        print(f"epoch {epoch + 1:2d}  train loss {total / n_train:.4f}  held-out accuracy {acc:.3f}  "
              f"({time.perf_counter() - start:.1f} s)")
    print(f"final held-out accuracy {acc:.3f} on {len(y_test)} sequences, final train loss {total / n_train:.4f}")


if __name__ == "__main__":
    main()
