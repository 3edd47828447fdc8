"""Model ensembling on the digits with vmap, as PyTorch's tutorial does it.

PyTorch's "Model ensembling" tutorial (torch.func) run with
``import tapegrad.torch as torch`` on scikit-learn's 8x8 digits instead of
random MNIST-shaped data:

1. ``stack_module_state(models)`` stacks the parameters of ten MLPs;
   ``base_model = copy.deepcopy(models[0]).to('meta')`` is the stateless
   skeleton (tapegrad.torch has no meta device: its ``to('meta')`` keeps the
   shapes and drops the data, and the module then runs only through
   ``functional_call``); ``vmap(fmodel)`` runs all ten at once, on ten
   minibatches (``in_dims=0``) or on one shared minibatch
   (``in_dims=(0, 0, None)``). Both must match a loop over the models to
   1e-6, and the example checks it.
2. Beyond the tutorial: the stacked parameters are leaves that require grad,
   so the whole ensemble trains as one model, with one ``backward()`` and
   one optimizer. The example checks that this trains each member exactly
   as training it alone would, then reports each member's test accuracy and
   the ensemble's (the mean of their probabilities).

Run: python examples/model_ensembling.py [--epochs N] [--small]
"""

from __future__ import annotations

import argparse
import copy

import numpy as np

import tapegrad.torch as torch
import tapegrad.torch.nn as nn
import tapegrad.torch.nn.functional as F
from tapegrad.torch.func import functional_call, stack_module_state

TOL = 1e-6


def load_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised float32 images (N, 1, 8, 8) and int64 labels, split 80/20: (X_train, y_train, X_test, y_test)."""
    from sklearn.datasets import load_digits as sk_digits

    X, y = sk_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    n = int(0.8 * len(X))
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    std[std == 0] = 1.0  # a few border pixels are always 0
    X = ((X - mean) / std).astype(np.float32).reshape(-1, 1, 8, 8)
    y = y.astype(np.int64)
    return X[:n], y[:n], X[n:], y[n:]


class SimpleMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="one epoch (a quick check)")
    args = parser.parse_args()
    epochs = 1 if args.small else args.epochs

    torch.manual_seed(0)
    Xtr, ytr, Xte, yte = load_digits()
    num_models, batch = 10, 64
    models = [SimpleMLP() for _ in range(num_models)]

    # --- 1. the tutorial: predictions of ten models at once -------------------------------------
    data = torch.from_numpy(Xtr[: num_models * batch]).reshape(num_models, batch, 1, 8, 8)
    minibatches = data[:num_models]  # a different minibatch for each model
    minibatch = data[0]  # or the same one for all
    predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])
    base_model = base_model.to("meta")

    def fmodel(params: dict, buffers: dict, x: torch.Tensor) -> torch.Tensor:
        return functional_call(base_model, (params, buffers), (x,))

    print("stacked:", {k: tuple(p.shape) for k, p in params.items()})
    predictions1_vmap = torch.vmap(fmodel)(params, buffers, minibatches)
    d1 = (predictions1_vmap - torch.stack(predictions_diff_minibatch_loop)).abs().max().item()
    assert d1 <= TOL, d1
    print(f"vmap over models and minibatches {tuple(predictions1_vmap.shape)}: matches the loop ({d1:.1e})")
    predictions2_vmap = torch.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    d2 = (predictions2_vmap - torch.stack(predictions2)).abs().max().item()
    assert d2 <= TOL, d2
    print(f"vmap over models, one shared minibatch {tuple(predictions2_vmap.shape)}: matches the loop ({d2:.1e})")

    # --- 2. train the ensemble as one model ------------------------------------------------------
    def ensemble_loss(params: dict, buffers: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # each member's mean loss on its own minibatch, summed: the members do not interact
        losses = torch.vmap(lambda p, b, xb, yb: F.cross_entropy(fmodel(p, b, xb), yb))(params, buffers, x, y)
        return losses.sum()

    solo = copy.deepcopy(models[3])  # trained alone, to check member 3 against
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    solo_opt = torch.optim.Adam(solo.parameters(), lr=1e-3)
    rng = np.random.default_rng(1)
    n = len(Xtr)
    steps = 0
    for _ in range(epochs):
        # each member sees its own shuffle of the training set
        perms = np.stack([rng.permutation(n) for _ in range(num_models)])
        for i in range(0, n - batch + 1, batch):
            idx = perms[:, i : i + batch]
            x, y = torch.from_numpy(Xtr[idx]), torch.from_numpy(ytr[idx])
            opt.zero_grad()
            ensemble_loss(params, buffers, x, y).backward()
            opt.step()
            solo_opt.zero_grad()
            F.cross_entropy(solo(x[3]), y[3]).backward()
            solo_opt.step()
            steps += 1
    drift = max((params[k][3] - p).abs().max().item() for k, p in solo.named_parameters())
    assert drift <= 1e-5, drift
    print(f"trained the ten members as one model ({steps} Adam steps, one backward each): member 3 "
          f"matches the same member trained alone ({drift:.1e})")

    with torch.no_grad():
        logits = torch.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, torch.from_numpy(Xte))
    labels = torch.from_numpy(yte)
    accs = [(logits[m].argmax(1) == labels).float().mean().item() for m in range(num_models)]
    ens = (logits.softmax(-1).mean(0).argmax(1) == labels).float().mean().item()
    print(f"test accuracy: members {min(accs):.1%} .. {max(accs):.1%}, ensemble {ens:.1%}")
    assert ens >= min(accs)


if __name__ == "__main__":
    main()
