"""The graph of a create_graph gradient: which gradients require grad, and
the names of their nodes, compared with PyTorch 2.13 (recorded here; checked
against torch when it is importable). Where the facade's names differ by rule,
docs/torch.md lists the rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad.torch as tt

X = np.array([[0.3, 1.2, 0.7, 1.9], [1.1, 0.4, 1.6, 0.9], [0.5, 1.4, 0.8, 1.3]])
W = np.array([0.6, 1.3, 0.2, 1.7])
C = np.array([[1.0, -2.0, 0.5, 3.0], [0.2, 1.5, -1.0, 2.0], [-0.7, 0.4, 1.2, -1.5]])

# program -> the grad_fn names of the create_graph gradients wrt (x, w) (None: does not require grad)
PROGRAMS: dict[str, tuple[Any, tuple[str | None, str | None]]] = {
    "sin": (lambda L, x, w: (x.sin() * w).sum(), ("MulBackward0", "ViewBackward0")),
    "exp": (lambda L, x, w: (x.exp() * w).sum(), ("MulBackward0", "ViewBackward0")),
    "log": (lambda L, x, w: (x.log() * w).sum(), ("DivBackward0", "ViewBackward0")),
    "sqrt": (lambda L, x, w: (x.sqrt() * w).sum(), ("DivBackward0", "ViewBackward0")),
    "cos_sq": (lambda L, x, w: (x.cos() ** 2 * w).sum(), ("MulBackward0", "ViewBackward0")),
    "tan": (lambda L, x, w: (x.tan() * w).sum(), ("MulBackward0", "ViewBackward0")),
    "erf": (lambda L, x, w: (x.erf() * w).sum(), ("MulBackward0", "ViewBackward0")),
    "reciprocal": (lambda L, x, w: (x.reciprocal() * w).sum(), ("MulBackward0", "ViewBackward0")),
    "mul_broadcast": (lambda L, x, w: (x * w * L.tensor(C)).sum(), ("MulBackward0", "ViewBackward0")),
    "div_broadcast": (lambda L, x, w: (x / w * L.tensor(C)).sum(), ("DivBackward0", "ViewBackward0")),
    "mul_square": (lambda L, x, w: ((x * w) ** 2).sum(), ("MulBackward0", "ViewBackward0")),
    "prod": (lambda L, x, w: x.prod() * w.sum(), ("MulBackward0", "ExpandBackward0")),
    "mean_w": (lambda L, x, w: (x * x).mean() * w.sum(), ("AddBackward0", "ExpandBackward0")),
    "linear_in_x": (lambda L, x, w: (x * 2 + 1).sum() * w.sum(), ("MulBackward0", "ExpandBackward0")),
    "constant_grad": (lambda L, x, w: (x * 2).sum() + (w * 3).sum(), (None, None)),
    "sign": (lambda L, x, w: (x.sign() ** 2 * L.tensor(C)).sum() + w.sum(), (None, None)),
    "floor": (lambda L, x, w: (x.floor() ** 2 * L.tensor(C)).sum() + w.sum(), (None, None)),
    "round": (lambda L, x, w: (x.round() * x * w).sum(), ("AddBackward0", "ViewBackward0")),
    "ceil_trunc": (lambda L, x, w: ((x.ceil() + x.trunc()) ** 2).sum() * w.sum(), (None, "ExpandBackward0")),
}


def _names(L: Any, f: Any) -> list[str | None]:
    x = L.tensor(X, requires_grad=True)
    w = L.tensor(W, requires_grad=True)
    gs = L.autograd.grad(f(L, x, w), (x, w), create_graph=True)
    return [g.grad_fn.name() if g.requires_grad else None for g in gs]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_create_graph_gradient_nodes_are_torchs(name: str) -> None:
    f, want = PROGRAMS[name]
    assert _names(tt, f) == list(want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_recorded_names_are_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    f, want = PROGRAMS[name]
    assert _names(torch, f) == list(want)


@pytest.mark.parametrize("step", ["sign", "floor", "ceil", "round", "trunc"])
def test_gradient_through_a_step_function_is_a_constant(step: str) -> None:
    """A create_graph gradient that does not depend on the input does not
    require grad: backward() on it raises PyTorch's error (it used to give zeros)."""
    x = tt.tensor(X, requires_grad=True)
    y = (getattr(x, step)() ** 2 * tt.tensor(C)).sum()
    g, = tt.autograd.grad(y, x, create_graph=True)
    assert not g.requires_grad and g.grad_fn is None
    np.testing.assert_array_equal(g.numpy(), np.zeros_like(X))
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does not have a "
                                           "grad_fn$"):
        g.sum().backward()
    # under vmap and forward mode too, the derivative is exactly zero
    gv = tt.func.vmap(tt.func.grad(lambda r: (getattr(r, step)() ** 2).sum()))(tt.tensor(X))
    np.testing.assert_array_equal(gv.numpy(), np.zeros_like(X))
