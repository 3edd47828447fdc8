"""saved_tensors_hooks: what the unpack hook returns is what backward computes with."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad.torch as tt

X = np.array([0.5, 1.2, 0.3, 2.0, 0.7, 1.1], np.float32)
Y = np.array([1.5, 0.2, 1.3, 0.4, 0.9, 2.1], np.float32)

# ops whose facade rules read the values PyTorch's node saves (docs/torch.md lists the others)
OPS = {
    "mul": lambda L, x, y: x * y, "exp": lambda L, x, y: x.exp(), "tanh": lambda L, x, y: x.tanh(),
    "sigmoid": lambda L, x, y: x.sigmoid(), "sin": lambda L, x, y: x.sin(), "cos": lambda L, x, y: x.cos(),
    "log": lambda L, x, y: x.log(), "sqrt": lambda L, x, y: x.sqrt(), "pow2": lambda L, x, y: x ** 2,
    "pow_tensor": lambda L, x, y: x ** y, "relu": lambda L, x, y: x.relu(), "prod": lambda L, x, y: x.prod(),
    "mm": lambda L, x, y: x.reshape(2, 3) @ y.reshape(3, 2), "softmax": lambda L, x, y: x.softmax(0),
    "log_softmax": lambda L, x, y: x.log_softmax(0), "atan2": lambda L, x, y: L.atan2(x, y), "abs": lambda L, x, y: x.abs(), "reciprocal": lambda L, x, y: x.reciprocal(),
    "linear": lambda L, x, y: L.nn.functional.linear(x.reshape(2, 3), y.reshape(2, 3)),
    "mul_const": lambda L, x, y: x * L.tensor([1.0, 2, 3, 4, 5, 6]), "cumsum": lambda L, x, y: x.cumsum(0),
}


def _grads(L, f, unpack):  # type: ignore[no-untyped-def]
    x, y = L.tensor(X, requires_grad=True), L.tensor(Y, requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(lambda t: ("packed", t), unpack):
        out = f(L, x, y)
    out.sum().backward()
    return [None if t.grad is None else t.grad.numpy().copy() for t in (x, y)]


def test_unpack_result_is_used_by_backward() -> None:
    x, y = tt.tensor(X, requires_grad=True), tt.tensor(Y, requires_grad=True)
    with tt.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 2 * t):
        z = (x * y).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * Y, rtol=1e-6)  # d/dx (x * y) with y read back doubled
    np.testing.assert_allclose(y.grad.numpy(), 2 * X, rtol=1e-6)


def test_unpack_runs_each_time_backward_runs_the_node() -> None:
    x = tt.tensor(X, requires_grad=True)
    calls: list[int] = []

    def unpack(p: tuple[str, tt.Tensor]) -> tt.Tensor:
        calls.append(1)
        return p[1]

    with tt.autograd.graph.saved_tensors_hooks(lambda t: ("packed", t), unpack):
        z = (x.exp() * x).sum()
    z.backward(retain_graph=True)
    first = len(calls)
    z.backward()
    assert first == 3 and len(calls) == 6  # exp's result, mul's two operands, per backward
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp(X) * (1 + X)), rtol=1e-5)
    # the rules keep their own values again after the call: no hook now, the plain gradient
    z2 = (x.exp() * x).sum()
    x.grad = None
    z2.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X) * (1 + X), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(OPS))
def test_changed_unpack_gives_torchs_gradients(name: str) -> None:
    torch = pytest.importorskip("torch")
    f = OPS[name]

    def unpack(p):  # type: ignore[no-untyped-def]
        return p[1] * 2 + 1

    want = _grads(torch, f, unpack)
    got = _grads(tt, f, unpack)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_identity_unpack_keeps_second_derivatives() -> None:
    torch = pytest.importorskip("torch")
    out = []
    for L in (torch, tt):
        x = L.tensor([0.5, 1.0, 2.0], requires_grad=True)
        w = L.tensor([1.5, -1.0, 0.3], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: ("box", t), lambda p: p[1]):
            y = ((x * w).tanh() * x).exp().sum()
        g, = L.autograd.grad(y, x, create_graph=True)
        h, = L.autograd.grad(g.sum(), (x,))
        out.append((g.detach().numpy(), h.numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-5)
