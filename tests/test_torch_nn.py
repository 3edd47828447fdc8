"""tapegrad.torch.nn and tapegrad.torch.optim: the Module API, layers, losses,
optimizers (by hand and against PyTorch), and the digits example."""

from __future__ import annotations

import copy
import math
import os
import pickle
import re
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close

import tapegrad as tg
import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.torch import nn

ROOT = Path(__file__).resolve().parents[1]


def norm(s: object) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x...", str(s))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.act = nn.ReLU()
        self.seq = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        return self.seq(self.act(self.fc(x))) * self.scale


# --- Module API ---------------------------------------------------------------------------------


def test_module_registration_order_and_names() -> None:
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias"]
    assert [p is q for p, q in zip(net.parameters(), [net.scale, net.fc.weight])] == [True, True]
    assert [n for n, _ in net.named_children()] == ["fc", "act", "seq"]
    assert [n for n, _ in net.named_modules()] == ["", "fc", "act", "seq", "seq.0", "seq.1"]
    assert list(net.state_dict()) == [
        "scale", "count", "fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias"]
    assert [n for n, _ in net.named_buffers()] == ["count"]
    assert len(list(net.parameters(recurse=False))) == 1
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'scale' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        net.scale = torch.ones(1)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope  # noqa: B018
    net.fc = nn.Linear(2, 3, bias=False)  # replacing a submodule keeps its place
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc.weight", "seq.0.weight", "seq.0.bias"]
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.parameters())) == 2 and len(list(twice.children())) == 1
    assert net(torch.ones(4, 2)).shape == torch.Size([4, 3])


def test_module_repr_is_pytorchs() -> None:
    model = nn.Sequential(nn.Linear(64, 512), nn.Tanh(), nn.Linear(512, 10, bias=False), nn.ReLU(),
                          nn.Sigmoid())
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=64, out_features=512, bias=True)\n"
        "  (1): Tanh()\n"
        "  (2): Linear(in_features=512, out_features=10, bias=False)\n"
        "  (3): ReLU()\n"
        "  (4): Sigmoid()\n"
        ")")
    assert repr(Net()) == (
        "Net(\n"
        "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (act): ReLU()\n"
        "  (seq): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Tanh()\n"
        "  )\n"
        ")")
    assert f"{nn.MSELoss()} {nn.CrossEntropyLoss()} {nn.ReLU(inplace=True)} {nn.Module()}" == (
        "MSELoss() CrossEntropyLoss() ReLU(inplace=True) Module()")
    assert repr(nn.Parameter(torch.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert str(nn.Parameter(torch.ones(2, 2), requires_grad=False)) == (
        "Parameter containing:\ntensor([[1., 1.],\n        [1., 1.]])")


def test_parameter_is_a_leaf_tensor() -> None:
    data = torch.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, torch.Tensor) and p.requires_grad and p.is_leaf and p.grad_fn is None
    with torch.no_grad():
        data.mul_(2)  # shares memory with its data, as in PyTorch
    assert p.tolist() == [2.0, 4.0]
    y = p * 2
    assert type(y) is torch.Tensor and not isinstance(y, nn.Parameter)
    (p * p).sum().backward()
    assert p.grad.tolist() == [4.0, 8.0]
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.tolist() == p.tolist()
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.requires_grad and r.tolist() == p.tolist()


def test_state_dict_round_trip_and_errors() -> None:
    torch.manual_seed(0)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert all(not t.requires_grad for t in sd.values())
    assert np.shares_memory(sd["fc.weight"].numpy(), a.fc.weight.detach().numpy())
    v = b.fc.weight._version
    assert repr(b.load_state_dict(sd)) == "<All keys matched successfully>"
    for (k, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert np.array_equal(p.numpy(), q.numpy()), k
    assert b.fc.weight._version == v + 1  # copied in place
    x = torch.randn(5, 2)
    assert np.array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    lin = nn.Linear(4, 2)
    with pytest.raises(RuntimeError) as err:
        lin.load_state_dict({"weight": torch.zeros(2, 4)})
    assert str(err.value) == 'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". '
    with pytest.raises(RuntimeError) as err:
        lin.load_state_dict({"weight": torch.zeros(3, 4), "bias": torch.zeros(2), "foo": torch.zeros(1)})
    assert str(err.value) == (
        'Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in state_dict: "foo". \n\t'
        "size mismatch for weight: copying a param with shape torch.Size([3, 4]) from checkpoint, "
        "the shape in current model is torch.Size([2, 4]).")
    keys = lin.load_state_dict({"weight": torch.ones(2, 4)}, strict=False)
    assert keys.missing_keys == ["bias"] and keys.unexpected_keys == []
    assert lin.weight.tolist() == [[1.0] * 4] * 2


def test_train_eval_zero_grad_and_dtype() -> None:
    net = Net()
    assert net.training and net.seq[0].training
    assert net.eval() is net and not net.training and not net.seq[1].training
    net.train()
    assert all(m.training for m in net.modules())
    net(torch.ones(3, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    w = net.fc.weight
    net.double()
    assert net.fc.weight is w and w.dtype == torch.float64 and w.requires_grad and w.is_leaf
    assert net.count.dtype == torch.float64
    out = net(torch.ones(3, 2, dtype=torch.float64)).sum()
    out.backward()
    assert w.grad.dtype == torch.float64
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_sequential_indexing() -> None:
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[1], nn.ReLU)
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and [n for n, _ in head.named_children()] == ["0", "1"]
    assert head[0] is seq[0]
    named = nn.Sequential(OrderedDict([("lin", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_parameters()] == ["lin.weight", "lin.bias"]
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]


# --- Linear ---------------------------------------------------------------------------------------


def test_linear_init_statistics_and_shapes() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(400, 300)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert lin.weight.shape == torch.Size([300, 400]) and lin.bias.shape == torch.Size([300])
    assert w.dtype == np.float32 and isinstance(lin.weight, nn.Parameter)
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.99 * bound  # uniform up to the bound
    assert abs(w.mean()) < 0.01 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound  # U(-a, a) has std a / sqrt(3)
    assert nn.Linear(3, 2, dtype=torch.float64).weight.dtype == torch.float64


def test_linear_forward_and_grad_fn_names() -> None:
    lin = nn.Linear(4, 2)
    x = torch.randn(3, 4)
    y = lin(x)
    expected = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    assert np.allclose(y.detach().numpy(), expected, rtol=1e-6)
    assert norm(y.grad_fn) == "<AddmmBackward0 object at 0x...>"
    assert norm(y.grad_fn.next_functions) == (
        "((<AccumulateGrad object at 0x...>, 0), (None, 0), (<TBackward0 object at 0x...>, 0))")
    assert y.grad_fn.next_functions[0][0].variable is lin.bias
    assert y.grad_fn.next_functions[2][0].next_functions[0][0].variable is lin.weight
    assert type(nn.Linear(4, 2, bias=False)(x).grad_fn).__name__ == "MmBackward0"
    assert type(lin(torch.randn(5, 3, 4)).grad_fn).__name__ == "ViewBackward0"
    assert lin(torch.randn(5, 3, 4)).shape == torch.Size([5, 3, 2])
    assert lin(torch.randn(4)).shape == torch.Size([2])
    xg = torch.randn(3, 4, requires_grad=True)
    lin(xg).sum().backward()
    assert np.allclose(xg.grad.numpy(), np.tile(lin.weight.detach().numpy().sum(0), (3, 1)), rtol=1e-6)
    assert np.allclose(lin.weight.grad.numpy(), np.tile(xg.detach().numpy().sum(0), (2, 1)), rtol=1e-6)
    assert np.allclose(lin.bias.grad.numpy(), [3.0, 3.0])
    t = torch.addmm(torch.ones(2), torch.ones(3, 4), torch.ones(4, 2), beta=2, alpha=0.5)
    assert t.tolist() == [[4.0, 4.0]] * 3


def test_facade_primitives_against_finite_differences() -> None:
    """The one-entry primitives behind nn.Linear, (log_)softmax, nll_loss and
    mean: derivatives of first and second order in both modes, Jacobians
    (batched cotangents and tangents) agreeing between the modes."""
    from tapegrad.numpy import primitives as tp
    from tapegrad.scipy import special as tsp

    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal(5)
    z = rng.standard_normal((4, 5, 2))
    mask = np.zeros((4, 5))
    mask[np.arange(4), [0, 2, 4, 1]] = [-0.25, -0.5, -0.1, -1.0]
    cases = [(tp.linear, (x, w, b))]
    for ax in (0, 1, -1):
        cases += [(lambda a, ax=ax: tsp.log_softmax(a, ax), (z,)), (lambda a, ax=ax: tsp.softmax(a, ax), (z,))]
    cases += [(lambda a: tp.weighted_sum(a, mask, None), (z[..., 0],)), (lambda a: tp.weighted_sum(a, mask, 1), (z[..., 0],)),
              (lambda a: tp.weighted_sum(a, mask[0], 0), (z[0, :, 0],))]
    for ax, keep in ((None, False), (0, True), ((0, 2), False), (-1, False)):
        cases.append((lambda a, ax=ax, keep=keep: tp.mean(a, ax, keep), (z,)))
    for f, args in cases:
        tg.check_grads(f, args)
        for i in range(len(args)):
            def fi(a, f=f, args=args, i=i):  # noqa: ANN001, ANN202
                return f(*args[:i], a, *args[i + 1:])
            np.testing.assert_allclose(tg.jacrev(fi)(args[i]), tg.jacfwd(fi)(args[i]), atol=1e-12)


def test_linear_and_cross_entropy_double_backward() -> None:
    """create_graph through the fused entries: d/dW of |dL/dW|^2 by the facade
    equals tapegrad's hessian-vector product of the same loss."""
    rng = np.random.default_rng(1)
    xv, wv, bv = rng.standard_normal((6, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    yv = np.array([0, 2, 1, 1, 0, 2])
    w = torch.tensor(wv, requires_grad=True)
    loss = F.cross_entropy(F.linear(torch.tensor(xv), w, torch.tensor(bv)), torch.tensor(yv))
    (gw,) = torch.autograd.grad(loss, w, create_graph=True)
    (gw * gw).sum().backward()

    def f(wa):  # noqa: ANN001, ANN202
        z = xv @ wa.T + bv
        lse = tg.numpy.logsumexp(z, axis=1)
        return tg.numpy.mean(lse - z[np.arange(6), yv])

    g = tg.grad(f)(wv)
    np.testing.assert_allclose(gw.detach().numpy(), g, rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), 2 * tg.hvp(f, (wv,), (g,))[1], rtol=1e-9)


# --- functional and losses -------------------------------------------------------------------------


def _logsumexp(z, axis):
    m = z.max(axis=axis, keepdims=True)
    return np.log(np.exp(z - m).sum(axis=axis, keepdims=True)) + m


def test_activations_and_softmax() -> None:
    z = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.5]])
    t = torch.tensor(z, requires_grad=True)
    assert np.allclose(F.relu(t).detach().numpy(), np.maximum(z, 0))
    assert np.allclose(F.tanh(t).detach().numpy(), np.tanh(z))
    assert np.allclose(F.sigmoid(t).detach().numpy(), 1 / (1 + np.exp(-z)))
    for dim in (0, 1, -1):
        lsm = z - _logsumexp(z, dim)
        assert np.allclose(F.log_softmax(t, dim=dim).detach().numpy(), lsm)
        assert np.allclose(F.softmax(t, dim=dim).detach().numpy(), np.exp(lsm))
    big = torch.tensor([[1000.0, 0.0]], dtype=torch.float64)
    assert np.allclose(F.log_softmax(big, dim=1).numpy(), [[0.0, -1000.0]])
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        F.softmax(t)
    names = [type(f(t).grad_fn).__name__ for f in (F.relu, F.tanh, F.sigmoid)]
    names += [type(F.softmax(t, dim=1).grad_fn).__name__, type(F.log_softmax(t, dim=1).grad_fn).__name__]
    assert names == ["ReluBackward0", "TanhBackward0", "SigmoidBackward0", "SoftmaxBackward0",
                     "LogSoftmaxBackward0"]


def test_mse_loss_against_hand_formula() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    x = torch.tensor(a, requires_grad=True)
    y = torch.tensor(b)
    for red, val in (("mean", ((a - b) ** 2).mean()), ("sum", ((a - b) ** 2).sum()), ("none", (a - b) ** 2)):
        out = F.mse_loss(x, y, reduction=red)
        assert np.allclose(out.detach().numpy(), val)
        assert np.allclose(nn.MSELoss(reduction=red)(x, y).detach().numpy(), val)
        assert type(out.grad_fn).__name__ == "MseLossBackward0"
    nn.MSELoss()(x, y).backward()
    assert np.allclose(x.grad.numpy(), 2 * (a - b) / a.size)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.mse_loss(x, y, reduction="bad")
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(x, torch.tensor(b[:1]))


def test_cross_entropy_against_hand_formula() -> None:
    rng = np.random.default_rng(2)
    z = rng.standard_normal((5, 4)) * 3
    t = np.array([0, 3, 1, 1, 2])
    x = torch.tensor(z, requires_grad=True)
    target = torch.tensor(t)
    per = (_logsumexp(z, 1)[:, 0] - z[np.arange(5), t])
    for red, val in (("mean", per.mean()), ("sum", per.sum()), ("none", per)):
        out = F.cross_entropy(x, target, reduction=red)
        assert np.allclose(out.detach().numpy(), val, rtol=1e-12)
        assert np.allclose(nn.CrossEntropyLoss(reduction=red)(x, target).detach().numpy(), val, rtol=1e-12)
    out = nn.CrossEntropyLoss()(x, target)
    assert norm(out.grad_fn) == "<NllLossBackward0 object at 0x...>"
    assert type(out.grad_fn.next_functions[0][0]).__name__ == "LogSoftmaxBackward0"
    out.backward()
    p = np.exp(z - _logsumexp(z, 1))
    assert np.allclose(x.grad.numpy(), (p - np.eye(4)[t]) / 5, rtol=1e-12)
    # stable for huge logits
    huge = torch.tensor([[1e4, 0.0, -1e4]], dtype=torch.float64)
    assert F.cross_entropy(huge, torch.tensor([1])).item() == pytest.approx(1e4)
    # class weights and ignore_index, PyTorch's weighted mean
    w = np.array([1.0, 2.0, 0.5, 3.0])
    t2 = np.array([0, 3, -100, 1, 2])
    got = F.cross_entropy(x, torch.tensor(t2), weight=torch.tensor(w)).item()
    keep = t2 != -100
    wi = w[t2[keep]]
    per2 = _logsumexp(z, 1)[keep, 0] - z[np.arange(5)[keep], t2[keep]]
    assert got == pytest.approx((wi * per2).sum() / wi.sum())
    # probability targets
    q = rng.dirichlet(np.ones(4), 5)
    got = F.cross_entropy(x, torch.tensor(q)).item()
    assert got == pytest.approx(-(q * (z - _logsumexp(z, 1))).sum(1).mean())
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(x, torch.tensor([0, 1, 2, 3, 7]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.nll_loss(x, torch.tensor([0.0, 1.0, 2.0, 3.0, 0.0], dtype=torch.float32))


def test_losses_match_torch(real_torch) -> None:
    real = real_torch
    rng = np.random.default_rng(3)
    z, t, y = rng.standard_normal((6, 5)), rng.integers(0, 5, 6), rng.standard_normal((6, 5))
    w = rng.uniform(0.5, 2.0, 5)
    for red in ("mean", "sum", "none"):
        for kw in ({}, {"weight": w}, {"ignore_index": int(t[0])}):
            ours = torch.tensor(z, requires_grad=True)
            theirs = real.tensor(z, requires_grad=True)
            kt = {k: (real.tensor(v) if k == "weight" else v) for k, v in kw.items()}
            kg = {k: (torch.tensor(v) if k == "weight" else v) for k, v in kw.items()}
            a = F.cross_entropy(ours, torch.tensor(t), reduction=red, **kg)
            b = real.nn.functional.cross_entropy(theirs, real.tensor(t), reduction=red, **kt)
            assert_close(a.detach().numpy(), b.detach().numpy(), f"cross_entropy {red} {kw}", rtol=1e-12, atol=1e-8)
            assert a.grad_fn.name() == b.grad_fn.name()
            a.sum().backward()
            b.sum().backward()
            assert_close(ours.grad.numpy(), theirs.grad.numpy(), f"cross_entropy {red} {kw}", rtol=1e-12, atol=1e-15)
        a = F.mse_loss(torch.tensor(z), torch.tensor(y), reduction=red)
        b = real.nn.functional.mse_loss(real.tensor(z), real.tensor(y), reduction=red)
        assert_close(a.numpy(), b.numpy(), f"mse_loss {red}", rtol=1e-12, atol=1e-8)
    z3, t3 = rng.standard_normal((3, 4, 5)), rng.integers(0, 4, (3, 5))  # classes on axis 1
    for red in ("mean", "none"):
        a = F.cross_entropy(torch.tensor(z3), torch.tensor(t3), reduction=red)
        b = real.nn.functional.cross_entropy(real.tensor(z3), real.tensor(t3), reduction=red)
        assert_close(a.numpy(), b.numpy(), f"cross_entropy 3d {red}", rtol=1e-12, atol=1e-8)
    for fn in ("relu", "tanh", "sigmoid"):
        assert_close(getattr(F, fn)(torch.tensor(z)).numpy(),
                     getattr(real.nn.functional, fn)(real.tensor(z)).numpy(), fn, rtol=1e-12, atol=1e-8)
    for fn in ("softmax", "log_softmax"):
        assert_close(getattr(F, fn)(torch.tensor(z), dim=0).numpy(),
                     getattr(real.nn.functional, fn)(real.tensor(z), dim=0).numpy(), fn, rtol=1e-12, atol=1e-8)


# --- optimizers by hand -------------------------------------------------------------------------


def _two_steps(opt_cls, grads, **kw):
    p = nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))
    opt = opt_cls([p], **kw)
    out = []
    for g in grads:
        opt.zero_grad()
        p.grad = torch.tensor(g)
        opt.step()
        out.append(p.detach().numpy().copy())
    return out, opt, p


def test_sgd_two_steps_by_hand() -> None:
    g1, g2 = np.array([0.1, -0.3, 0.2]), np.array([-0.2, 0.4, 0.1])
    p0 = np.array([1.0, -2.0, 0.5])
    lr, mu, wd, damp = 0.1, 0.9, 0.01, 0.2
    (p1, p2), _, _ = _two_steps(torch.optim.SGD, [g1, g2], lr=lr)
    assert np.allclose(p1, p0 - lr * g1) and np.allclose(p2, p1 - lr * g2)
    # momentum with dampening: the first buffer is the gradient itself (no dampening)
    (p1, p2), opt, p = _two_steps(torch.optim.SGD, [g1, g2], lr=lr, momentum=mu, dampening=damp, weight_decay=wd)
    d1 = g1 + wd * p0
    buf = d1
    e1 = p0 - lr * buf
    d2 = g2 + wd * e1
    buf = mu * buf + (1 - damp) * d2
    assert np.allclose(p1, e1) and np.allclose(p2, e1 - lr * buf)
    assert np.allclose(opt.state[p]["momentum_buffer"].numpy(), buf)
    # Nesterov
    (p1, p2), _, _ = _two_steps(torch.optim.SGD, [g1, g2], lr=lr, momentum=mu, nesterov=True, weight_decay=wd)
    d1 = g1 + wd * p0
    buf = d1
    e1 = p0 - lr * (d1 + mu * buf)
    d2 = g2 + wd * e1
    buf = mu * buf + d2
    assert np.allclose(p1, e1) and np.allclose(p2, e1 - lr * (d2 + mu * buf))
    # maximize
    (p1, _), _, _ = _two_steps(torch.optim.SGD, [g1, g2], lr=lr, maximize=True)
    assert np.allclose(p1, p0 + lr * g1)


def test_adam_two_steps_by_hand() -> None:
    g1, g2 = np.array([0.1, -0.3, 0.2]), np.array([-0.2, 0.4, 0.1])
    p0 = np.array([1.0, -2.0, 0.5])
    lr, (b1, b2), eps, wd = 0.01, (0.8, 0.99), 1e-6, 0.1

    def by_hand(amsgrad: bool, decoupled: bool = False):
        p, m, v, vmax, out = p0.copy(), 0 * p0, 0 * p0, 0 * p0, []
        for t, g in enumerate((g1, g2), start=1):
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            vhat = vmax if amsgrad else v
            p = p - lr / (1 - b1**t) * m / (np.sqrt(vhat) / math.sqrt(1 - b2**t) + eps)
            out.append(p)
        return out

    for amsgrad in (False, True):
        got, opt, p = _two_steps(torch.optim.Adam, [g1, g2], lr=lr, betas=(b1, b2), eps=eps,
                                 weight_decay=wd, amsgrad=amsgrad)
        for a, b in zip(got, by_hand(amsgrad)):
            assert np.allclose(a, b, rtol=1e-13)
        st = opt.state[p]
        assert st["step"].item() == 2.0 and st["step"].dtype == torch.float32
        assert ("max_exp_avg_sq" in st) == amsgrad
    got, _, _ = _two_steps(torch.optim.Adam, [g1, g2], lr=lr, betas=(b1, b2), eps=eps,
                           weight_decay=wd, decoupled_weight_decay=True)
    for a, b in zip(got, by_hand(False, decoupled=True)):
        assert np.allclose(a, b, rtol=1e-13)


def test_adam_whole_group_update_is_the_per_parameter_one() -> None:
    """Adam updates a group at once on flat buffers when it can; the result is
    the per-parameter update's (foreach=False) bit for bit, also across a step
    where one parameter has no gradient, and after load_state_dict."""
    def run(foreach):  # noqa: ANN001, ANN202
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
        opt = torch.optim.Adam(model.parameters(), lr=0.05, betas=(0.8, 0.9), foreach=foreach)
        x, y = torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2])
        for k in range(6):
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(x), y).backward()
            if k == 3:
                model[2].bias.grad = None  # its step count falls behind from here
            if k == 4:
                opt.load_state_dict(opt.state_dict())
            opt.step()
        return [p.detach().numpy().copy() for p in model.parameters()], opt

    flat, opt = run(None)
    each, _ = run(False)
    for a, b in zip(flat, each):
        np.testing.assert_array_equal(a, b)
    steps = [opt.state[p]["step"].item() for p in opt.param_groups[0]["params"]]
    assert steps == [6.0, 6.0, 6.0, 5.0]

    def steps_together(foreach):  # noqa: ANN001, ANN202
        torch.manual_seed(1)
        lin = nn.Linear(3, 2)
        opt = torch.optim.Adam(lin.parameters(), lr=0.1, foreach=foreach)
        for _ in range(3):
            opt.zero_grad()
            lin(torch.randn(4, 3)).pow(2).sum().backward()
            opt.step()
        state = opt.state[lin.weight]
        return lin.weight.detach().numpy().copy(), state["exp_avg"].shape, state["exp_avg_sq"].numpy().copy()

    a, b = steps_together(None), steps_together(False)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[2], b[2])
    assert a[1] == b[1] == torch.Size([2, 3])


def test_optimizer_api() -> None:
    lin = nn.Linear(3, 2)
    opt = torch.optim.SGD([{"params": [lin.weight]}, {"params": [lin.bias], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert repr(torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
        "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n"
        "    weight_decay: 0\n)")
    assert repr(torch.optim.Adam(lin.parameters())).startswith(
        "Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n")
    w0 = lin.weight.detach().numpy().copy()
    out = lin(torch.ones(4, 3)).sum()
    out.backward()
    v = lin.weight._version
    opt.step()  # under no_grad, in place: the same tensors, versions bumped
    assert lin.weight._version == v + 1 and lin.weight.is_leaf and lin.weight.requires_grad
    assert not np.allclose(w0, lin.weight.detach().numpy())
    assert torch.is_grad_enabled()
    opt.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None
    sd = opt.state_dict()
    assert sd["param_groups"][1]["params"] == [1] and set(sd["state"]) == {0, 1}
    opt2 = torch.optim.SGD([{"params": [lin.weight]}, {"params": [lin.bias]}], lr=0.3, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.5
    assert np.array_equal(opt2.state[lin.bias]["momentum_buffer"].numpy(),
                          opt.state[lin.bias]["momentum_buffer"].numpy())
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        torch.optim.Adam(lin.parameters(), lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        torch.optim.SGD(lin.parameters(), lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        torch.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        torch.optim.SGD([lin.weight * 2], lr=0.1)
    # a graph that saved a parameter refuses to backward after step() changed it
    y = (lin.weight * lin.weight).sum()
    lin.weight.grad = torch.ones(2, 3)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    # closure
    def closure():
        opt.zero_grad()
        loss = lin(torch.ones(1, 3)).sum()
        loss.backward()
        return loss
    assert isinstance(opt.step(closure), torch.Tensor)


def test_training_loop_with_tg_grad_agrees() -> None:
    """The facade's loss.backward() and tg.grad of the same function agree."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x, y = torch.randn(5, 3, dtype=torch.float64), torch.tensor([0, 1, 1, 0, 1])
    nn.CrossEntropyLoss()(model(x), y).backward()
    w = model[0].weight
    g = tg.grad(lambda w_: F.cross_entropy(model[2](F.linear(x, w_, model[0].bias).tanh()), y))(w.detach())
    assert np.allclose(g.detach().numpy(), w.grad.numpy(), rtol=1e-12)


# --- the differential test against PyTorch ------------------------------------------------------


def _mlp(mod):
    return mod.nn.Sequential(mod.nn.Linear(8, 16), mod.nn.Tanh(), mod.nn.Linear(16, 16), mod.nn.ReLU(),
                             mod.nn.Linear(16, 3))


OPTIMS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.2, "weight_decay": 1e-2}),
    ("Adam", {"lr": 1e-2, "weight_decay": 1e-3}),
    ("Adam", {"lr": 1e-2, "betas": (0.6, 0.9), "amsgrad": True}),
]


@pytest.mark.parametrize("loss_name", ["CrossEntropyLoss", "MSELoss"])
@pytest.mark.parametrize("opt_name, kw", OPTIMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMS)])
def test_loss_trajectory_matches_pytorch(opt_name, kw, loss_name, real_torch) -> None:
    real = real_torch
    rng = np.random.default_rng(0)
    X, labels, Y = rng.standard_normal((32, 8)), rng.integers(0, 3, 32), rng.standard_normal((32, 3))
    real.manual_seed(0)
    theirs = _mlp(real).double()
    ours = _mlp(torch).double()
    ours.load_state_dict({k: torch.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    opt_t = getattr(real.optim, opt_name)(theirs.parameters(), **kw)
    opt_g = getattr(torch.optim, opt_name)(ours.parameters(), **kw)
    loss_t, loss_g = getattr(real.nn, loss_name)(), getattr(torch.nn, loss_name)()
    target = labels if loss_name == "CrossEntropyLoss" else Y
    lt, lg = [], []
    for i in range(20):
        sl = slice(8 * (i % 4), 8 * (i % 4) + 8)
        opt_t.zero_grad()
        a = loss_t(theirs(real.tensor(X[sl])), real.tensor(target[sl]))
        a.backward()
        opt_t.step()
        opt_g.zero_grad()
        b = loss_g(ours(torch.tensor(X[sl])), torch.tensor(target[sl]))
        b.backward()
        opt_g.step()
        lt.append(a.item())
        lg.append(b.item())
    np.testing.assert_allclose(lg, lt, rtol=1e-10)
    assert lt[-1] < lt[0]
    for (name, p), q in zip(theirs.named_parameters(), ours.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


# --- the example ----------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["functional", "torch"])
def test_train_digits_small(style, tmp_path) -> None:
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--style", style, "--small"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = re.search(r"held-out accuracy: ([\d.]+)% \((\w+)\)", proc.stdout)
    assert m and m.group(2) == style, proc.stdout
    assert float(m.group(1)) > 80.0


def test_train_digits_styles_agree() -> None:
    """Both styles start from the same weights, see the same batches and so
    reach the same losses (to float32 rounding)."""
    pytest.importorskip("sklearn")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_digits
    finally:
        sys.path.pop(0)
    acc_f, _, hist_f = train_digits.train("functional", epochs=2, seed=3, quiet=True)
    acc_t, _, hist_t = train_digits.train("torch", epochs=2, seed=3, quiet=True)
    np.testing.assert_allclose(hist_f, hist_t, rtol=1e-4)
    assert abs(acc_f - acc_t) <= 0.01
