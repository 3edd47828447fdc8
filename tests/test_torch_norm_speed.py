"""tapegrad.torch's fused normalisation and recurrent primitives: the batch-norm
primitive (``tapegrad.torch._norm``), GroupNorm / InstanceNorm / LayerNorm, the
fused GRU step; derivatives to second order by ``check_grads`` and against
PyTorch (float64) when it is importable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.testing import check_grads
from tapegrad.torch import nn
from tapegrad.torch._norm import batch_norm, moments

# --- the batch-norm primitive -------------------------------------------------------------------

SHAPES = [(5, 3), (4, 3, 6), (3, 3, 2, 4)]


def _written_out(x: np.ndarray, w: Any, b: Any, mean: Any, var: Any, eps: float) -> np.ndarray:
    """Batch norm by the textbook formula (NumPy, float64)."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    if mean is None:
        mean, var = x.mean(axes), x.var(axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_primitive_value_and_second_order(shape: tuple[int, ...], training: bool, affine: bool) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.normal(size=shape) * 2 + 1
    c = shape[1]
    w, b = rng.normal(size=c), rng.normal(size=c)
    rm, rv = rng.normal(size=c), rng.random(c) + 0.5
    mean, var = (None, None) if training else (rm, rv)
    want = _written_out(x, w if affine else None, b if affine else None, mean, var, 1e-5)
    got = batch_norm(x, w if affine else None, b if affine else None, mean, var, eps=1e-5, training=training)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if training:  # the moments handed in by the caller give the same result
        m, v = moments(x)
        np.testing.assert_allclose(batch_norm(x, w, b, m, v, eps=1e-5, training=True),
                                   _written_out(x, w, b, None, None, 1e-5), rtol=1e-12, atol=1e-12)
    if affine:
        check_grads(lambda x, w, b: batch_norm(x, w, b, mean, var, eps=1e-5, training=training), (x, w, b),
                    order=2)
    else:
        check_grads(lambda x: batch_norm(x, None, None, mean, var, eps=1e-5, training=training), (x,), order=2)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_primitive_under_vmap(training: bool) -> None:
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(2, 4, 3, 5))
    w, b = rng.normal(size=(2, 3)), rng.normal(size=3)
    rm, rv = rng.normal(size=3), rng.random(3) + 0.5
    mean, var = (None, None) if training else (rm, rv)

    def f(x: Any, w: Any) -> Any:
        return batch_norm(x, w, b, mean, var, eps=1e-3, training=training)

    got = tg.vmap(f)(xs, w)
    want = np.stack([_written_out(xs[i], w[i], b, mean, var, 1e-3) for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    jac = tg.jacrev(lambda x: f(x, w[0]))(xs[0])  # reverse mode pushes a batch of cotangents through the rules
    eps = 1e-6
    e = np.zeros_like(xs[0])
    e[1, 2, 3] = eps
    fd = (f(xs[0] + e, w[0]) - f(xs[0] - e, w[0])) / (2 * eps)
    np.testing.assert_allclose(jac[..., 1, 2, 3], fd, rtol=1e-6, atol=1e-8)


def test_batch_norm_facade_node_and_running_stats() -> None:
    torch.manual_seed(0)
    x = torch.randn(8, 3, 2, 2, dtype=torch.float64, requires_grad=True)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    y = F.batch_norm(x, rm, rv, training=True, momentum=0.25)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    xv = x.detach().numpy()
    np.testing.assert_allclose(rm.numpy(), 0.25 * xv.mean((0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.75 + 0.25 * xv.var((0, 2, 3), ddof=1), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(torch.randn(1, 3), None, None, training=True)
    xt = torch.randn(3, 8, 2, dtype=torch.float64).transpose(0, 1)  # not contiguous
    np.testing.assert_allclose(F.batch_norm(xt, None, None, training=True).numpy(),
                               _written_out(xt.numpy(), None, None, None, None, 1e-5), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["1d", "2d"])
def test_batch_norm_double_backward_matches_pytorch(kind: str, real_torch: Any) -> None:
    real = real_torch
    shape = (6, 3) if kind == "1d" else (4, 3, 3, 2)
    rng = np.random.default_rng(5)
    xv, gv = rng.normal(size=shape), rng.normal(size=shape)
    wv, bv = rng.normal(size=3), rng.normal(size=3)
    grads = []
    for lib in (torch, real):
        x = lib.tensor(xv, requires_grad=True)
        w, b = lib.tensor(wv, requires_grad=True), lib.tensor(bv, requires_grad=True)
        y = lib.nn.functional.batch_norm(x, None, None, w, b, training=True)
        gx, gw = lib.autograd.grad((y * lib.tensor(gv)).sum(), (x, w), create_graph=True)
        ((gx ** 2).sum() + (gw * gw).sum()).backward()
        grads.append([np.asarray(t.detach().numpy()) for t in (gx, gw, x.grad, w.grad)])
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-10)


def test_batch_norm_float32_matches_pytorch(real_torch: Any) -> None:
    real = real_torch
    rng = np.random.default_rng(7)
    xv = (rng.normal(size=(64, 16, 8, 8)) * 3 + 2).astype(np.float32)
    outs = []
    for lib in (torch, real):
        bn = lib.nn.BatchNorm2d(16)
        x = lib.tensor(xv, requires_grad=True)
        y = bn(x)
        y.pow(2).sum().backward()
        outs.append([np.asarray(t.detach().numpy()) for t in (y, x.grad, bn.weight.grad, bn.running_var)])
    for mine, theirs in zip(*outs):
        assert mine.dtype == np.float32
        np.testing.assert_allclose(mine, theirs, rtol=2e-4, atol=2e-4)


# --- GroupNorm, InstanceNorm, LayerNorm ------------------------------------------------------------

NORM_CASES = [
    ("GroupNorm", (2, 6), {}, (3, 6, 4)),
    ("GroupNorm", (3, 6), {"affine": False}, (2, 6, 2, 3)),
    ("GroupNorm", (1, 4), {"bias": False}, (3, 4)),
    ("GroupNorm", (4, 4), {"eps": 1e-3}, (2, 4, 5)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5)),
    ("InstanceNorm1d", (3,), {"affine": True}, (3, 5)),
    ("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True, "momentum": 0.3}, (4, 3, 5)),
    ("InstanceNorm2d", (2,), {"affine": True, "bias": False}, (3, 2, 3, 4)),
    ("InstanceNorm2d", (2,), {"track_running_stats": True, "momentum": None}, (3, 2, 3, 4)),
    ("LayerNorm", ((3, 4),), {}, (2, 3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (5, 4)),
    ("LayerNorm", (4,), {"bias": False}, (2, 3, 4)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", NORM_CASES)
def test_norm_layers_match_pytorch(name: str, args: tuple, kwargs: dict, shape: tuple[int, ...],
                                   real_torch: Any) -> None:
    real = real_torch
    mine = getattr(nn, name)(*args, **kwargs).double()
    theirs = getattr(real.nn, name)(*args, **kwargs).double()
    assert repr(mine) == repr(theirs)
    assert list(mine.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(len(shape))
    with torch.no_grad():
        for p in mine.parameters():
            p.copy_(torch.tensor(rng.uniform(0.5, 1.5, size=tuple(p.shape))))
    theirs.load_state_dict({k: real.from_numpy(np.array(v.detach().numpy())) for k, v in mine.state_dict().items()})
    for _ in range(2):
        xv = rng.normal(size=shape) * 2 + 1
        gv = rng.normal(size=shape)
        x, xt = torch.tensor(xv, requires_grad=True), real.tensor(xv, requires_grad=True)
        y, yt = mine(x), theirs(xt)
        assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
        (y * torch.tensor(gv)).sum().backward()
        (yt * real.tensor(gv)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
        for (k, p), pt in zip(mine.named_parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), pt.grad.numpy(), rtol=1e-10, atol=1e-10, err_msg=k)
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(np.asarray(mine.state_dict()[k].detach().numpy()), v.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=k)
    mine.eval()
    theirs.eval()
    xv = rng.normal(size=shape)
    np.testing.assert_allclose(mine(torch.tensor(xv)).detach().numpy(), theirs(real.tensor(xv)).detach().numpy(),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("which", ["group", "instance", "instance_eval"])
def test_group_and_instance_norm_double_backward_match_pytorch(which: str, real_torch: Any) -> None:
    real = real_torch
    rng = np.random.default_rng(11)
    xv, gv = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))
    wv, bv = rng.normal(size=4), rng.normal(size=4)
    rm, rv = rng.normal(size=4), rng.random(4) + 0.5
    grads = []
    for lib in (torch, real):
        x = lib.tensor(xv, requires_grad=True)
        w, b = lib.tensor(wv, requires_grad=True), lib.tensor(bv, requires_grad=True)
        if which == "group":
            y = lib.nn.functional.group_norm(x, 2, w, b)
        else:
            y = lib.nn.functional.instance_norm(x, lib.tensor(rm), lib.tensor(rv), w, b,
                                                use_input_stats=which == "instance")
        gx, gw = lib.autograd.grad((y * lib.tensor(gv)).sum(), (x, w), create_graph=True)
        ((gx ** 3).sum() + (gw * gw).sum() + (gx * x).sum()).backward()
        grads.append([np.asarray(t.detach().numpy()) for t in (gx, gw, x.grad, w.grad)])
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-10)


def test_norm_errors() -> None:
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match="divisible by num_groups, but got input of shape \\[2, 4, 3\\]"):
        F.group_norm(torch.randn(2, 4, 3), 3)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.InstanceNorm1d(3)(torch.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(torch.randn(2, 1, 1))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\)"):
        nn.InstanceNorm1d(3, affine=True)(torch.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(torch.randn(2, 4, 5))


# --- the fused GRU step ------------------------------------------------------------------------------


def test_gru_step_primitive_second_order_and_vmap() -> None:
    from tapegrad.torch.nn.modules.rnn import gru_h

    rng = np.random.default_rng(13)
    gi, gh, h = rng.normal(size=(2, 9)), rng.normal(size=(2, 9)), rng.normal(size=(2, 3))

    def written_out(gi: Any, gh: Any, h: Any) -> Any:
        sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
        r, z = sig(gi[..., :3] + gh[..., :3]), sig(gi[..., 3:6] + gh[..., 3:6])
        n = np.tanh(gi[..., 6:] + r * gh[..., 6:])
        return (1 - z) * n + z * h

    np.testing.assert_allclose(gru_h(gi, gh, h), written_out(gi, gh, h), rtol=1e-12, atol=1e-12)
    check_grads(gru_h, (gi, gh, h), order=2)
    his = rng.normal(size=(4, 2, 3))
    np.testing.assert_allclose(tg.vmap(gru_h, in_axes=(None, None, 0))(gi, gh, his),
                               np.stack([written_out(gi, gh, a) for a in his]), rtol=1e-12, atol=1e-12)


def test_gru_layer_double_backward_matches_pytorch(real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(0)
    mine = nn.GRU(3, 4, num_layers=2, bidirectional=True).double()
    theirs = real.nn.GRU(3, 4, num_layers=2, bidirectional=True).double()
    theirs.load_state_dict({k: real.from_numpy(np.array(v.detach().numpy())) for k, v in mine.state_dict().items()})
    xv = np.random.default_rng(1).normal(size=(5, 2, 3))
    grads = []
    for lib, m in ((torch, mine), (real, theirs)):
        x = lib.tensor(xv, requires_grad=True)
        out, hn = m(x)
        w = m.weight_hh_l0
        gx, gw = lib.autograd.grad((out ** 2).sum() + hn.sum(), (x, w), create_graph=True)
        ((gx ** 2).sum() + (gw ** 2).sum()).backward()
        grads.append([np.asarray(t.detach().numpy()) for t in (out, gx, gw, x.grad, m.weight_ih_l1_reverse.grad)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_batch_norms_of_one_input_sharing_a_cotangent(real_torch: Any) -> None:
    """Two batch norms of the same ``x`` (different eps, one in eval mode) whose
    sum hands both the same cotangent: the terms one rule shares with another
    must not leak between the entries."""
    real = real_torch
    xv = np.random.default_rng(2).normal(size=(6, 3, 2))
    rm, rv = np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.5, 2.0])
    grads = []
    for lib in (torch, real):
        x = lib.tensor(xv, requires_grad=True)
        w = lib.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
        y = (lib.nn.functional.batch_norm(x, None, None, w, training=True, eps=1e-5)
             + lib.nn.functional.batch_norm(x, None, None, w, training=True, eps=0.5)
             + lib.nn.functional.batch_norm(x, lib.tensor(rm), lib.tensor(rv), w, training=False))
        (y * y).sum().backward()
        grads.append([np.asarray(t.detach().numpy()) for t in (y, x.grad, w.grad)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_shared_terms_never_outlive_one_backward_step() -> None:
    """A cotangent array changed in place between two backward passes (same
    object, new values) gets fresh shared terms, for every rule of the entry."""
    import tapegrad as tg
    from tapegrad.torch._norm import batch_norm as bn_prim

    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(4, 3, 2)), rng.normal(size=3), rng.normal(size=3)
    mean, var = np.zeros(3), np.ones(3)
    for wt in (w, None):  # (without a weight, the x rule alone asks for the terms)
        def f(x_: Any, w_: Any = wt) -> Any:
            return bn_prim(x_, w_, b, mean, var, eps=1e-5, training=True)

        _, pull = tg.vjp(f, x)
        g = rng.normal(size=x.shape)
        first = np.array(pull(g)[0])
        g *= 3.0  # the same array, new values
        np.testing.assert_allclose(pull(g)[0], 3 * first, rtol=1e-12, atol=1e-12)


def test_gru_shared_cotangent_is_fresh_each_pass() -> None:
    gru = nn.GRU(3, 4).double()
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    out, _ = gru(x)
    g = torch.randn(5, 2, 4, dtype=torch.float64)
    out.backward(g, retain_graph=True)
    first = x.grad.clone()
    x.grad = None
    with torch.no_grad():
        g.mul_(2.0)  # the same tensor, new values
    out.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy(), rtol=1e-10, atol=1e-12)
