"""The nn.functional activations, losses, dropout and normalisation beyond the
basics, and their modules: against PyTorch (values, gradients, grad_fn names,
reprs), against finite differences, and dropout's statistics."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import TorchDiff, assert_close, run_graph

import tapegrad as tg
import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.torch import _prims as P
from tapegrad.torch import nn

# inputs with the kinks and edges: 0, the bounds of hardtanh (+-1, 0 and 6),
# softplus's threshold (beta x = 5 at 2.5), and large |x|
X = np.array([-800.0, -30.0, -2.5, -1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.5, 6.0, 25.0, 800.0])
# loss inputs: d = A - B hits 0, +-1 (beta) and 2 (delta)
A = np.array([-3.0, -1.5, -1.0, -0.2, 0.0, 0.3, 1.0, 2.0, 4.0])
B = np.array([0.0, -0.5, 0.0, -0.2, 0.0, 0.3, -1.0, 0.0, 2.0])
W = np.array([0.5, 1.0, 2.0, 0.0, 1.5, 1.0, 0.25, 3.0, 1.0])
# probabilities at and near 0 and 1, and logits from -800 to 800
PROB = np.array([0.0, 1e-10, 0.2, 0.5, 0.9, 1 - 1e-10, 1.0, 0.0, 1.0])
TARG = np.array([0.0, 1.0, 0.3, 1.0, 0.0, 1.0, 0.5, 1.0, 0.0])
LOGIT = np.array([-800.0, -50.0, -3.0, -1e-3, 0.0, 1e-3, 2.0, 50.0, 800.0])
LTARG = np.array([0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.3, 1.0, 1.0])
_rng = np.random.default_rng(0)
M = _rng.standard_normal((3, 4))
M[1] = 0.7  # a row of equal values: zero variance, for layer_norm
M0 = M.copy()
M0[1] = 0.0  # a zero row, for normalize and cosine_similarity
M0[2] *= 1e-10  # a row of norm below cosine_similarity's eps
M2 = _rng.standard_normal((3, 4))
LN_W, LN_B = _rng.standard_normal(4), _rng.standard_normal(4)


def _c(t: Any, a: Any) -> Any:
    """A float64 constant (no grad) of library ``t``."""
    return t.tensor(np.asarray(a, dtype=np.float64))


# name: (program(torch, F, *inputs) -> tensor, inputs (each a float64 leaf that requires grad))
PROGRAMS: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "gelu": (lambda t, F, x: F.gelu(x), (X,)),
    "gelu_tanh": (lambda t, F, x: F.gelu(x, approximate="tanh"), (X,)),
    "silu": (lambda t, F, x: F.silu(x), (X,)),
    "softplus": (lambda t, F, x: F.softplus(x), (X,)),
    "softplus_beta": (lambda t, F, x: F.softplus(x, beta=2.0, threshold=5.0), (X,)),
    "mish": (lambda t, F, x: F.mish(x), (X,)),
    "elu": (lambda t, F, x: F.elu(x), (X,)),
    "elu_alpha": (lambda t, F, x: F.elu(x, alpha=0.5), (X,)),
    "leaky_relu": (lambda t, F, x: F.leaky_relu(x), (X,)),
    "leaky_relu_slope": (lambda t, F, x: F.leaky_relu(x, negative_slope=0.2), (X,)),
    "hardtanh": (lambda t, F, x: F.hardtanh(x), (X,)),
    "hardtanh_relu6": (lambda t, F, x: F.hardtanh(x, min_val=0.0, max_val=6.0), (X,)),
    "elu_": (lambda t, F, x: F.elu(x * 1, 0.7, inplace=True), (X,)),
    "leaky_relu_": (lambda t, F, x: F.leaky_relu(x * 1, 0.1, inplace=True), (X,)),
    "hardtanh_": (lambda t, F, x: F.hardtanh(x * 1, inplace=True), (X,)),
    "silu_": (lambda t, F, x: F.silu(x * 1, inplace=True), (X,)),
    "mish_": (lambda t, F, x: F.mish(x * 1, inplace=True), (X,)),
    "modules_act": (lambda t, F, x: t.nn.Sequential(t.nn.GELU("tanh"), t.nn.Softplus(2.0, 5.0), t.nn.SiLU(),
                                                    t.nn.Mish(), t.nn.ELU(0.5), t.nn.LeakyReLU(0.2),
                                                    t.nn.Hardtanh(-0.5, 2.0))(x), (X,)),
    "l1_mean": (lambda t, F, a, b: F.l1_loss(a, b), (A, B)),
    "l1_sum": (lambda t, F, a, b: F.l1_loss(a, b, reduction="sum"), (A, B)),
    "l1_none": (lambda t, F, a, b: F.l1_loss(a, b, reduction="none"), (A, B)),
    "l1_weight": (lambda t, F, a, b: F.l1_loss(a, b, weight=_c(t, W)), (A, B)),
    "l1_weight_sum": (lambda t, F, a, b: F.l1_loss(a, b, reduction="sum", weight=_c(t, W)), (A, B)),
    "l1_legacy": (lambda t, F, a, b: F.l1_loss(a, b, size_average=False), (A, B)),
    "mse_weight": (lambda t, F, a, b: F.mse_loss(a, b, weight=_c(t, W)), (A, B)),
    "smooth_l1_mean": (lambda t, F, a, b: F.smooth_l1_loss(a, b), (A, B)),
    "smooth_l1_none": (lambda t, F, a, b: F.smooth_l1_loss(a, b, reduction="none"), (A, B)),
    "smooth_l1_beta": (lambda t, F, a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=2.0), (A, B)),
    "smooth_l1_beta0": (lambda t, F, a, b: F.smooth_l1_loss(a, b, beta=0.0), (A, B)),
    "huber_mean": (lambda t, F, a, b: F.huber_loss(a, b), (A, B)),
    "huber_none": (lambda t, F, a, b: F.huber_loss(a, b, reduction="none", delta=2.0), (A, B)),
    "huber_weight": (lambda t, F, a, b: F.huber_loss(a, b, delta=2.0, weight=_c(t, W)), (A, B)),
    "huber_weight_sum": (lambda t, F, a, b: F.huber_loss(a, b, reduction="sum", weight=_c(t, W)), (A, B)),
    "bce_mean": (lambda t, F, p, y: F.binary_cross_entropy(p, y), (PROB, TARG)),
    "bce_none": (lambda t, F, p, y: F.binary_cross_entropy(p, y, reduction="none"), (PROB, TARG)),
    "bce_weight": (lambda t, F, p, y: F.binary_cross_entropy(p, y, _c(t, W), reduction="sum"), (PROB, TARG)),
    "bce_logits_mean": (lambda t, F, x, y: F.binary_cross_entropy_with_logits(x, y), (LOGIT, LTARG)),
    "bce_logits_none": (lambda t, F, x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
                        (LOGIT, LTARG)),
    "bce_logits_pos": (lambda t, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, reduction="none", pos_weight=_c(t, W + 0.5)), (LOGIT, LTARG)),
    "bce_logits_both": (lambda t, F, x, y: F.binary_cross_entropy_with_logits(
        x, y, _c(t, W), reduction="sum", pos_weight=_c(t, 3.0)), (LOGIT, LTARG)),
    "bce_logits_bcast": (lambda t, F, x, y: F.binary_cross_entropy_with_logits(
        x.reshape(3, 3), y.reshape(3, 3), pos_weight=_c(t, [0.5, 2.0, 4.0])), (LOGIT, LTARG)),
    "modules_loss": (lambda t, F, a, b: t.nn.L1Loss(reduction="sum")(a, b) + t.nn.SmoothL1Loss(beta=2.0)(a, b)
                     + t.nn.HuberLoss(delta=0.5)(a, b), (A, B)),
    "modules_bce": (lambda t, F, p, y: t.nn.BCELoss(weight=_c(t, W))(p, y)
                    + t.nn.BCEWithLogitsLoss(pos_weight=_c(t, W))(p * 4 - 2, y), (PROB, TARG)),
    "dropout_p0": (lambda t, F, x: F.dropout(x, 0.0), (X,)),
    "dropout_eval": (lambda t, F, x: F.dropout(x, 0.5, training=False), (X,)),
    "dropout_p1": (lambda t, F, x: F.dropout(x[:-1], 1.0), (X,)),
    "dropout_module_eval": (lambda t, F, x: t.nn.Dropout(0.3).eval()(x), (X,)),
    "layer_norm": (lambda t, F, x: F.layer_norm(x, (4,)), (M,)),
    "layer_norm_affine": (lambda t, F, x, w, b: F.layer_norm(x, [4], w, b), (M, LN_W, LN_B)),
    "layer_norm_2d": (lambda t, F, x, w: F.layer_norm(x, (3, 4), w.expand(3, 4), eps=1e-3), (M, LN_W)),
    "layer_norm_module": (lambda t, F, x: t.nn.LayerNorm(4, dtype=t.float64)(x), (M,)),
    "normalize": (lambda t, F, x: F.normalize(x), (M0,)),
    "normalize_p1": (lambda t, F, x: F.normalize(x, p=1.0, dim=0), (M0,)),
    "cosine_similarity": (lambda t, F, x, y: F.cosine_similarity(x, y), (M0, M2)),
    "cosine_similarity_dim0": (lambda t, F, x, y: F.cosine_similarity(x, y, dim=0), (M0, M2)),
    "cosine_similarity_bcast": (lambda t, F, x, y: F.cosine_similarity(x, y[:1], dim=0, eps=0.5), (M0, M2)),
}


def _normal(lib: Any, out: Any) -> Any:
    """The cotangent of an output: fixed standard-normal draws (float64)."""
    return lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))


def _prog(prog: Callable[..., Any]) -> Callable[..., Any]:
    return lambda lib, *xs: prog(lib, lib.nn.functional, *xs)


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_matches_pytorch(name: str, torch_diff: TorchDiff) -> None:
    """Values, gradients and grad_fn names (of the output and of its inputs) agree with PyTorch's."""
    prog, arrays = PROGRAMS[name]
    # layer_norm, normalize, cosine_similarity: values and gradients that cancel
    # (x - mean, g / n - x (g . x) / n^3) keep PyTorch's digits to 1e-16 of the terms
    atol = 1e-14 if name.startswith(("layer_norm", "normalize", "cosine")) else 0
    torch_diff.assert_same_run(_prog(prog), arrays, rtol=1e-10, atol=atol, cotangent=_normal, quiet=False)


MODULES = [
    lambda nn: nn.GELU(), lambda nn: nn.GELU(approximate="tanh"), lambda nn: nn.SiLU(), lambda nn: nn.SiLU(True),
    lambda nn: nn.Softplus(), lambda nn: nn.Softplus(2, 10), lambda nn: nn.Mish(inplace=True), lambda nn: nn.ELU(),
    lambda nn: nn.ELU(0.5, True), lambda nn: nn.LeakyReLU(), lambda nn: nn.LeakyReLU(0.2, inplace=True),
    lambda nn: nn.Hardtanh(), lambda nn: nn.Hardtanh(0, 6, True), lambda nn: nn.Dropout(),
    lambda nn: nn.Dropout(0.1, inplace=True), lambda nn: nn.LayerNorm(4), lambda nn: nn.LayerNorm([2, 3], 1e-3, False),
    lambda nn: nn.LayerNorm(3, bias=False), lambda nn: nn.L1Loss(), lambda nn: nn.SmoothL1Loss(beta=2.0),
    lambda nn: nn.HuberLoss(delta=2.0), lambda nn: nn.BCELoss(), lambda nn: nn.BCEWithLogitsLoss(),
    lambda nn: nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 1)),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_module_reprs_and_state_match_pytorch(k: int, real_torch: Any) -> None:
    real = real_torch
    ours, theirs = MODULES[k](nn), MODULES[k](real.nn)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (n, p), (m, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n == m and p.shape == q.shape


def test_one_hot_and_errors_match_pytorch(torch_diff: TorchDiff) -> None:
    real = torch_diff.real
    for args in (([0, 2, 1],), ([[1], [3]], 5), (2, 4), ([], 3)):
        ours = F.one_hot(torch.tensor(args[0], dtype=torch.int64), *args[1:])
        theirs = real.nn.functional.one_hot(real.tensor(args[0], dtype=real.int64), *args[1:])
        assert ours.dtype == torch.int64 and not ours.requires_grad
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    calls = [
        lambda t: t.nn.functional.one_hot(t.tensor([1, 2]).int()),
        lambda t: t.nn.functional.one_hot(t.tensor([-1, 2])),
        lambda t: t.nn.functional.one_hot(t.tensor([1, 2]), 2),
        lambda t: t.nn.functional.one_hot(t.tensor([], dtype=t.int64)),
        lambda t: t.nn.functional.gelu(t.ones(2), approximate="exact"),
        lambda t: t.nn.functional.smooth_l1_loss(t.ones(2), t.ones(2), beta=-1.0),
        lambda t: t.nn.functional.huber_loss(t.ones(2), t.ones(2), delta=0.0),
        lambda t: t.nn.functional.layer_norm(t.ones(2, 3), (4,)),
        lambda t: t.nn.functional.layer_norm(t.ones(2, 3), (3,), t.ones(4)),
        lambda t: t.nn.functional.dropout(t.ones(2), 1.5),
        lambda t: t.nn.functional.hardtanh(t.ones(2), 2.0, 1.0),
        lambda t: t.nn.functional.l1_loss(t.ones(3), t.ones(3), weight=t.ones(2)),
        lambda t: t.nn.functional.l1_loss(t.ones(3), t.ones(3), reduction="avg"),
        lambda t: t.nn.functional.l1_loss(t.ones(3), t.ones(3), reduction="avg", weight=t.ones(3)),
        lambda t: t.nn.functional.binary_cross_entropy(t.ones(3) * 0.5, t.ones(2)),
        lambda t: t.nn.functional.binary_cross_entropy(t.ones(2) * 1.5, t.ones(2)),
        lambda t: t.nn.functional.binary_cross_entropy(t.ones(2) * 0.5, t.ones(2) * -1),
        lambda t: t.nn.functional.binary_cross_entropy(t.ones(2) * 0.5, t.ones(2), t.ones(2, requires_grad=True)),
        lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(3), t.ones(2)),
        lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2), t.ones(2),
                                                                   pos_weight=t.ones(2, requires_grad=True)),
    ]
    for call in calls:
        torch_diff.assert_same_error(call)
    with pytest.warns(UserWarning, match="Using a target size"):
        F.l1_loss(torch.ones(2, 3), torch.ones(3))


# --- without PyTorch: finite differences ------------------------------------------------------


def _fd_check(f: Callable[..., Any], arrays: list[np.ndarray], eps: float = 1e-6, rtol: float = 1e-6,
              atol: float = 1e-8) -> None:
    """The facade's gradient of ``sum(u * f(*xs))`` against central differences."""
    ins = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = f(*ins)
    u = np.random.default_rng(2).standard_normal(tuple(out.shape))
    (out * torch.tensor(u)).sum().backward()

    def s(xs: list[np.ndarray]) -> float:
        return float((f(*[torch.tensor(x) for x in xs]).numpy() * u).sum())

    for i, x in enumerate(ins):
        num = np.zeros_like(arrays[i])
        for idx in np.ndindex(arrays[i].shape):
            hi, lo = [a.copy() for a in arrays], [a.copy() for a in arrays]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            num[idx] = (s(hi) - s(lo)) / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy(), num, rtol=rtol, atol=atol, err_msg=f"argument {i}")


SMOOTH = np.array([-40.0, -3.0, -1.3, -0.4, 0.2, 0.8, 1.7, 3.5, 40.0])  # no input within eps of a kink
FD_CASES: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "gelu": (F.gelu, (SMOOTH,)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), (SMOOTH,)),
    "silu": (F.silu, (SMOOTH,)),
    "softplus": (lambda x: F.softplus(x, 2.0, 5.0), (SMOOTH,)),
    "mish": (F.mish, (SMOOTH,)),
    "elu": (lambda x: F.elu(x, 0.5), (SMOOTH,)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), (SMOOTH,)),
    "hardtanh": (lambda x: F.hardtanh(x, -1.0, 2.0), (SMOOTH,)),
    "l1_loss": (lambda a, b: F.l1_loss(a, b, weight=torch.tensor(W)), (A, B + 0.05)),
    "smooth_l1_loss": (lambda a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.5), (A, B + 0.05)),
    "huber_loss": (lambda a, b: F.huber_loss(a, b, delta=0.5), (A, B + 0.05)),
    "bce": (lambda p, y: F.binary_cross_entropy(p, y, torch.tensor(W[2:5])), (PROB[2:5], np.array([0.3, 0.6, 0.1]))),
    "bce_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=torch.tensor(W[:9] + 0.5)),
                   (LOGIT * 0.05, LTARG)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), (M2, LN_W, LN_B)),
    "normalize": (lambda x: F.normalize(x, dim=0), (M2,)),
    "cosine_similarity": (F.cosine_similarity, (M2, M2[::-1].copy())),
}


@pytest.mark.parametrize("name", list(FD_CASES))
def test_gradients_against_finite_differences(name: str) -> None:
    f, arrays = FD_CASES[name]
    _fd_check(f, list(arrays))


@pytest.mark.parametrize("f", [F.gelu, lambda x: F.gelu(x, approximate="tanh"), lambda x: F.softplus(x, 2.0),
                               F.mish, lambda x: F.binary_cross_entropy_with_logits(x, torch.tensor(LTARG))])
def test_double_backward_against_finite_differences(f: Callable[..., Any]) -> None:
    """create_graph=True: the gradient of ``v . grad(sum(u * f(x)))`` equals the
    central differences of that first gradient."""
    x0 = LOGIT * 0.05
    u, v = np.random.default_rng(3).standard_normal((2, x0.size))

    def first(xa: np.ndarray, create_graph: bool = False) -> Any:
        x = torch.tensor(xa, requires_grad=True)
        (g,) = torch.autograd.grad((f(x) * torch.tensor(u)).sum(), x, create_graph=create_graph)
        return x, g

    x, g = first(x0, create_graph=True)
    (g * torch.tensor(v)).sum().backward()
    eps = 1e-6
    num = np.array([((first(x0 + eps * e)[1].numpy() - first(x0 - eps * e)[1].numpy()) @ v) / (2 * eps)
                    for e in np.eye(x0.size)])
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)


def test_primitives_both_modes_and_orders() -> None:
    """The rules of the new primitives: first and second order, forward and reverse."""
    rng = np.random.default_rng(4)
    p, y, x = rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.standard_normal((3, 4)) * 3
    pw = rng.uniform(0.5, 2.0, 4)
    tg.check_grads(P.bce, (p, y))
    tg.check_grads(lambda a, b: P.bce_logits(a, b, None), (x, y))
    tg.check_grads(lambda a, b: P.bce_logits(a, b, pw), (x, y))
    tg.check_grads(lambda a: P.elu(a, 0.5), (x,))
    tg.check_grads(lambda a: P.elu(a, 0.5, from_result=True), (x,))


def test_pytorch_gradients_at_the_edges() -> None:
    """PyTorch's own formulas where the clamped or rounded values have none:
    BCE's gradient is finite at p = 0 and 1; the logits gradient is 0 where
    sigmoid(x) rounds to y; elu's at 0 is alpha; hardtanh's at its bounds is 0."""
    p = torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64, requires_grad=True)
    loss = F.binary_cross_entropy(p, torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64), reduction="none")
    assert loss.tolist() == [100.0, 100.0, 0.0, 0.0]
    loss.sum().backward()
    eps = float(np.float32(1e-12))
    assert p.grad.tolist() == [-1 / eps, 1 / eps, 0.0, 0.0]
    x = torch.tensor([50.0, 800.0, -800.0], dtype=torch.float64, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64),
                                              reduction="none")
    loss.sum().backward()
    assert np.isfinite(loss.detach().numpy()).all() and x.grad.tolist() == [0.0, 0.0, 0.0]
    z = torch.tensor([0.0, -1.0, 1.0], dtype=torch.float64, requires_grad=True)
    for f, want in ((lambda t: F.elu(t, 0.5), [0.5, 0.5 * np.exp(-1), 1.0]), (F.hardtanh, [1.0, 0.0, 0.0]),
                    (lambda t: F.leaky_relu(t, 0.1), [0.1, 0.1, 1.0])):
        (g,) = torch.autograd.grad(f(z).sum(), z)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-15)
    big = torch.tensor([800.0, -800.0], dtype=torch.float64, requires_grad=True)
    for f in (F.gelu, F.silu, F.softplus, F.mish, F.elu):
        (g,) = torch.autograd.grad(f(big).sum(), big)
        assert g.tolist() == [1.0, 0.0]


# --- without PyTorch: dropout, modules, one_hot ---------------------------------------------------


def test_dropout_statistics_and_modes() -> None:
    torch.manual_seed(0)
    x = torch.ones(200_000, dtype=torch.float64, requires_grad=True)
    for p in (0.1, 0.5, 0.8):
        y = F.dropout(x, p)
        kept = y.detach().numpy() != 0
        assert abs(1 - kept.mean() - p) < 0.01
        np.testing.assert_allclose(y.detach().numpy()[kept], 1 / (1 - p), rtol=1e-15)
        assert type(y.grad_fn).__name__ == "MulBackward0"
        (g,) = torch.autograd.grad(y.sum(), x)
        np.testing.assert_array_equal(g.numpy(), y.detach().numpy())  # the noise itself
    assert F.dropout(x, 0.0) is x and F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 1.0).detach().numpy().tolist() == [0.0] * x.numel()
    torch.manual_seed(1)
    a = F.dropout(torch.ones(50), 0.5)
    torch.manual_seed(1)
    assert torch.equal(a, F.dropout(torch.ones(50), 0.5))  # drawn from torch.manual_seed's generator
    m = nn.Dropout(0.25)
    assert m(x) is not x and (m(x).detach().numpy() == 0).any()
    m.eval()
    assert m(x) is x
    m.train()
    h = x * 1
    assert F.dropout(h, 0.5, inplace=True) is h and type(h.grad_fn).__name__ == "MulBackward0"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)
    y32 = F.dropout(torch.ones(1000), 0.3)
    assert y32.dtype == torch.float32 and y32.max().item() == np.float32(1) / np.float32(0.7)


def test_activation_modules_and_values() -> None:
    x = torch.tensor(X)
    checks = [
        (nn.GELU(), X * 0.5 * (1 + np.vectorize(math.erf)(X / np.sqrt(2)))),
        (nn.SiLU(), X / (1 + np.exp(-np.clip(X, -700, 700)))),
        (nn.Softplus(), np.where(X > 20, X, np.log1p(np.exp(np.minimum(X, 20))))),
        (nn.ELU(0.5), np.where(X > 0, X, 0.5 * np.expm1(np.minimum(X, 0)))),
        (nn.LeakyReLU(0.2), np.where(X > 0, X, 0.2 * X)),
        (nn.Hardtanh(0, 6), np.clip(X, 0, 6)),
    ]
    for m, want in checks:
        np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-12, atol=1e-300)
    h = torch.tensor(X, requires_grad=True) * 1
    assert nn.ELU(inplace=True)(h) is h and type(h.grad_fn).__name__ == "EluBackward1"
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated"):
        assert nn.Hardtanh(min_value=-2.0).min_val == -2.0


def test_layer_norm_module_and_losses() -> None:
    ln = nn.LayerNorm(4)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    assert ln.weight.tolist() == [1.0] * 4 and ln.bias.tolist() == [0.0] * 4
    assert nn.LayerNorm(4, bias=False).bias is None and nn.LayerNorm(4, elementwise_affine=False).weight is None
    out = ln(torch.tensor(M, dtype=torch.float32))
    assert out.dtype == torch.float32 and type(out.grad_fn).__name__ == "NativeLayerNormBackward0"
    z = (M - M.mean(1, keepdims=True)) / np.sqrt(M.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), z, rtol=1e-5, atol=1e-6)
    loss = nn.BCEWithLogitsLoss(pos_weight=torch.ones(3))
    assert list(loss.state_dict()) == ["pos_weight"]
    a, b = torch.tensor(A), torch.tensor(B)
    d = np.abs(A - B)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use reduction='sum'"):
        assert nn.L1Loss(size_average=False)(a, b).item() == pytest.approx(d.sum())
    assert nn.SmoothL1Loss(reduction="none")(a, b).tolist() == np.where(d < 1, 0.5 * d * d, d - 0.5).tolist()
    assert nn.HuberLoss(reduction="sum", delta=2.0)(a, b).item() == pytest.approx(
        np.where(d < 2, 0.5 * d * d, 2 * (d - 1)).sum())
    assert F.mse_loss(a, b, weight=torch.tensor(W)).item() == pytest.approx((W * (A - B) ** 2).sum() / W.sum())
    p, y = torch.tensor(PROB[2:5]), torch.tensor(TARG[2:5])
    want = -(TARG[2:5] * np.log(PROB[2:5]) + (1 - TARG[2:5]) * np.log1p(-PROB[2:5]))
    np.testing.assert_allclose(nn.BCELoss(reduction="none")(p, y).numpy(), want, rtol=1e-14)
    logits = torch.tensor(np.log(PROB[2:5] / (1 - PROB[2:5])))
    assert nn.BCEWithLogitsLoss()(logits, y).item() == pytest.approx(want.mean(), rel=1e-12)


def test_one_hot() -> None:
    t = torch.tensor([[0, 3], [2, 1]])
    oh = F.one_hot(t)
    assert oh.shape == torch.Size([2, 2, 4]) and oh.dtype == torch.int64
    np.testing.assert_array_equal(oh.numpy(), np.eye(4, dtype=np.int64)[[[0, 3], [2, 1]]])
    assert F.one_hot(t, num_classes=6).shape == torch.Size([2, 2, 6])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(t, 3)


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_float32_matches_pytorch(name: str, torch_diff: TorchDiff) -> None:
    """In float32 the results and gradients keep PyTorch's dtypes (float64
    weights included) and agree to float32 rounding."""
    prog, arrays = PROGRAMS[name]
    arrays = tuple(a.astype(np.float32) for a in arrays)
    try:
        want = run_graph(torch_diff.real, _prog(prog), arrays, cotangent=_normal, quiet=False)
    except RuntimeError:  # PyTorch refuses float64 parameters with a float32 input (LayerNorm)
        return
    got = run_graph(torch, _prog(prog), arrays, cotangent=_normal, quiet=False)
    (out,), (want_out,) = got.outputs, want.outputs
    assert out.value.dtype == want_out.value.dtype
    assert_close(out.value, want_out.value, "output", rtol=1e-5, atol=1e-6)
    for g, w in zip(got.grads, want.grads, strict=True):
        assert g.dtype == w.dtype
        assert_close(g, w, "gradient", rtol=1e-4, atol=1e-5)


def _net(t: Any) -> Any:
    nn_ = t.nn
    return nn_.Sequential(nn_.Linear(6, 16), nn_.LayerNorm(16), nn_.GELU(), nn_.Dropout(0.2), nn_.Linear(16, 16),
                          nn_.SiLU(), nn_.Linear(16, 8), nn_.Mish(), nn_.ELU(), nn_.LeakyReLU(0.1),
                          nn_.Softplus(), nn_.Linear(8, 3)).double()


@pytest.mark.parametrize("loss_name", ["BCEWithLogitsLoss", "HuberLoss", "SmoothL1Loss", "L1Loss"])
def test_training_trajectory_matches_pytorch(loss_name: str, real_torch: Any) -> None:
    """Ordinary training code (dropout off in eval mode) runs unchanged on both
    and gives PyTorch's losses, step after step."""
    real = real_torch
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((32, 6)), (rng.random((32, 3)) > 0.5).astype(np.float64)
    ours, theirs = _net(torch), _net(real)
    state = {k: rng.standard_normal(tuple(v.shape)) * 0.5 for k, v in theirs.state_dict().items()}
    losses = []
    for t, model in ((torch, ours), (real, theirs)):
        model.load_state_dict({k: t.tensor(v) for k, v in state.items()})
        model.eval()
        opt = t.optim.Adam(model.parameters(), lr=1e-2)
        crit = getattr(t.nn, loss_name)()
        out = []
        for _ in range(5):
            opt.zero_grad()
            loss = crit(model(t.tensor(x)), t.tensor(y))
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses.append(out)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-9)
