"""Per-sample gradients on the digits, as PyTorch's tutorial computes them.

PyTorch's "Per-sample-gradients" tutorial (torch.func) run with
``import tapegrad.torch as torch`` on scikit-learn's 8x8 digits instead of
MNIST, with an MLP instead of the tutorial's CNN (the facade has no
``Conv2d``). Both ways of the tutorial:

1. a loop: one forward and one ``torch.autograd.grad`` per example;
2. ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))``: the gradient of
   one example's loss, mapped over the batch, run once on the whole batch.

The two must agree to 1e-6 (float32), and the example checks it. Then it uses
the per-sample gradients for what they are for: the per-example gradient
norms, and one step of DP-SGD (each example's gradient clipped before
averaging, which a batch ``backward()`` cannot do).

Run: python examples/per_sample_grads.py [--batch N] [--small]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tapegrad.torch as torch
import tapegrad.torch.nn as nn
import tapegrad.torch.nn.functional as F
from tapegrad.torch.func import functional_call, grad, vmap

TOL = 1e-6


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 digits as standardised float32 images (N, 1, 8, 8) and int64 labels."""
    from sklearn.datasets import load_digits as sk_digits

    X, y = sk_digits(return_X_y=True)
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0  # a few border pixels are always 0
    return ((X - mean) / std).astype(np.float32).reshape(-1, 1, 8, 8), y.astype(np.int64)


class SimpleMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def loss_fn(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.nll_loss(predictions, targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--small", action="store_true", help="a batch of 16 (a quick check)")
    args = parser.parse_args()
    batch_size = 16 if args.small else args.batch

    torch.manual_seed(0)
    X, y = load_digits()
    data, targets = torch.from_numpy(X[:batch_size]), torch.from_numpy(y[:batch_size])
    model = SimpleMLP()

    # 1. the loop: one backward per example
    def compute_grad(sample: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
        sample = sample.unsqueeze(0)  # the model wants a batch
        target = target.unsqueeze(0)
        prediction = model(sample)
        loss = loss_fn(prediction, target)
        return torch.autograd.grad(loss, list(model.parameters()))

    def compute_sample_grads(data: torch.Tensor, targets: torch.Tensor) -> list[torch.Tensor]:
        sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
        return [torch.stack(shards) for shards in zip(*sample_grads)]

    t0 = time.perf_counter()
    per_sample_grads = compute_sample_grads(data, targets)
    t_loop = time.perf_counter() - t0

    # 2. torch.func: the model as a function of its parameters, grad of one
    # example's loss, vmap over the batch
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params: dict, buffers: dict, sample: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return loss_fn(predictions, targets)

    ft_compute_grad = grad(compute_loss)
    ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    t0 = time.perf_counter()
    ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    t_vmap = time.perf_counter() - t0

    print(f"per-sample gradients of an MLP on {batch_size} digits")
    worst = 0.0
    for (name, ft), loop in zip(ft_per_sample_grads.items(), per_sample_grads):
        assert ft.shape == loop.shape == (batch_size, *params[name].shape), name
        diff = (ft - loop).abs().max().item()
        worst = max(worst, diff)
        print(f"  {name:10s} {str(tuple(ft.shape)):16s} max |vmap - loop| = {diff:.1e}")
    assert worst <= TOL, f"vmap(grad) and the loop differ by {worst:.2e}"
    print(f"vmap(grad) matches the loop of autograd.grad calls within {TOL:g} "
          f"(loop {t_loop * 1e3:.1f} ms, vmap {t_vmap * 1e3:.1f} ms)")

    # the mean of the per-sample gradients is the batch gradient
    model.zero_grad()
    loss_fn(model(data), targets).backward()
    for name, p in model.named_parameters():
        assert (ft_per_sample_grads[name].mean(0) - p.grad).abs().max().item() <= TOL, name
    print("their mean is the gradient of the batch loss (backward())")

    # what they are for: per-example norms, and a DP-SGD step (clip each, then average)
    flat = torch.cat([g.reshape(batch_size, -1) for g in ft_per_sample_grads.values()], dim=1)
    norms = flat.norm(dim=1)
    middle = norms.sort().values[batch_size // 2].item()
    print(f"per-example gradient norms: min {norms.min().item():.3f}, middle {middle:.3f}, "
          f"max {norms.max().item():.3f}")
    max_norm = middle
    scale = (max_norm / norms).clamp(max=1.0)
    clipped = {k: (g * scale.reshape(-1, *([1] * (g.dim() - 1)))).mean(0) for k, g in ft_per_sample_grads.items()}
    total = torch.cat([g.reshape(-1) for g in clipped.values()]).norm().item()
    assert total <= max_norm * (1 + 1e-5)
    print(f"DP-SGD step: each gradient clipped to norm {max_norm:.3f}; the averaged update has norm {total:.3f}")


if __name__ == "__main__":
    main()
