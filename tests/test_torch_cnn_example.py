"""examples/cnn_digits.py's CNN on the facade: it trains, keeps float32, and one
training step (forward, backward, AdamW, the cosine schedule) is PyTorch's step
from the same weights and batch."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch_models  # noqa: E402  (benchmarks/torch_models.py: the example loader, the weight copy)

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def ex() -> Any:
    return torch_models.load_example("cnn_digits", use_torch=False)


@pytest.fixture(scope="module")
def tex() -> Any:
    pytest.importorskip("torch")
    return torch_models.load_example("cnn_digits", use_torch=True)


def _batch(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Digit-like images: random, but each class a different mean pattern (no scikit-learn needed)."""
    y = np.arange(n) % 10
    patterns = np.random.default_rng(0).standard_normal((10, 1, 8, 8))
    x = patterns[y] + 0.5 * RNG.standard_normal((n, 1, 8, 8))
    return x.astype(np.float32), y.astype(np.int64)


def test_the_example_uses_the_facade(ex: Any) -> None:
    assert ex.torch.__name__ == "tapegrad.torch"
    kinds = [type(m).__name__ for m in ex.make_model()]
    assert kinds == ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d",
                     "Flatten", "Dropout", "Linear"]


def test_a_few_steps_lower_the_loss_and_keep_float32(ex: Any) -> None:
    torch = ex.torch
    torch.manual_seed(0)
    x, y = _batch()
    xb, yb = torch.from_numpy(x), torch.from_numpy(y)
    model = ex.make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = [ex.train_step(model, optimizer, xb, yb).item() for _ in range(8)]
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in model.parameters())
    h = xb
    for layer in model:  # no silent float64 anywhere on the way
        h = layer(h)
        assert h.dtype == torch.float32, layer
    loss, acc = ex.evaluate(model, xb, yb)
    assert model.training and acc > 0.5 and np.isfinite(loss)


def _params(model: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def _close(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str, rtol: float = 1e-5,
           atol: float = 1e-5) -> None:
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=f"{what}: {k}")


def test_one_training_step_matches_pytorch(ex: Any, tex: Any) -> None:
    """Forward, backward, AdamW and CosineAnnealingLR, twice, from the same weights and batch.
    The dropout is switched off (``eval()``) in both: its masks come from different generators."""
    torch, real = ex.torch, tex.torch
    torch.manual_seed(1)
    model, tmodel = ex.make_model(), tex.make_model()
    torch_models.copy_weights(model, tmodel, real)
    for m in (model, tmodel):
        m[9].eval()
    opt = torch.optim.AdamW(model.parameters(), lr=ex.LR, weight_decay=ex.WEIGHT_DECAY)
    topt = real.optim.AdamW(tmodel.parameters(), lr=ex.LR, weight_decay=ex.WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    tsched = real.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)
    for step in range(2):
        x, y = _batch()
        out = model(torch.from_numpy(x))
        tout = tmodel(real.from_numpy(x))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
        loss = ex.F.cross_entropy(out, torch.from_numpy(y))
        tloss = tex.F.cross_entropy(tout, real.from_numpy(y))
        assert abs(loss.item() - tloss.item()) <= 1e-5 * abs(tloss.item())
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        _close({k: p.grad.numpy() for k, p in model.named_parameters()},
               {k: p.grad.numpy() for k, p in tmodel.named_parameters()}, f"gradient, step {step}")
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        _close(_params(model), _params(tmodel), f"parameters and running statistics after step {step}")
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
        assert model.state_dict()["1.num_batches_tracked"].item() == step + 1


def test_eval_mode_matches_pytorch(ex: Any, tex: Any) -> None:
    """Running statistics and no dropout: the held-out forward pass of both."""
    real = tex.torch
    model, tmodel = ex.make_model(), tex.make_model()
    x, _ = _batch()
    model(ex.torch.from_numpy(x))  # one training-mode pass moves the running statistics
    torch_models.copy_weights(model, tmodel, real)
    model.eval()
    tmodel.eval()
    with ex.torch.no_grad():
        got = model(ex.torch.from_numpy(x)).numpy()
    with real.no_grad():
        want = tmodel(real.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 2, 1), (2, 1, 0)])
def test_max_pool_with_nans_and_ties_matches_pytorch(ex: Any, tex: Any, kernel: int, stride: int,
                                                     padding: int) -> None:
    """The pooling's max and gradient place: a NaN wins its window (its last NaN, as PyTorch's
    kernel), ties go to the first max."""
    F, real = ex.F, tex.torch
    x = np.round(RNG.standard_normal((2, 3, 6, 7)), 0).astype(np.float32)  # many ties
    x[0, 1, 2, 3] = x[1, 2, 4, 4] = x[1, 2, 4, 5] = np.nan
    g = RNG.standard_normal(F.max_pool2d(ex.torch.from_numpy(x), kernel, stride, padding).shape).astype(np.float32)
    a = ex.torch.tensor(x, requires_grad=True)
    b = real.tensor(x, requires_grad=True)
    out, tout = F.max_pool2d(a, kernel, stride, padding), tex.F.max_pool2d(b, kernel, stride, padding)
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    out.backward(ex.torch.from_numpy(g))
    tout.backward(real.from_numpy(g))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-6)  # (overlaps: sums)


@pytest.mark.parametrize("groups", [1, 2])
def test_an_empty_batch_goes_through_conv_and_pool(ex: Any, groups: int) -> None:
    """N = 0: shapes as PyTorch's, zero weight gradients (no ``reshape(-1)`` of an empty array)."""
    torch, F = ex.torch, ex.F
    x = torch.zeros(0, 4, 5, 5, requires_grad=True)
    w = torch.ones(6, 4 // groups, 3, 3, requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, padding=1, groups=groups), 2)
    assert tuple(y.shape) == (0, 6, 2, 2)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 4, 5, 5)
    assert w.grad.abs().sum().item() == 0.0
    t = F.conv_transpose2d(torch.zeros(0, 6, 3, 3), w, stride=2, groups=groups)
    assert tuple(t.shape) == (0, 4 // groups * groups, 7, 7)
