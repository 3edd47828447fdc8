"""The grad_fn of ops recorded by the general path (composites of several tape
entries, an accumulated create_graph gradient) against PyTorch 2.13: the node's
name, its edges straight to its inputs' nodes, and what it saved checked for
in-place changes."""

import pytest

import tapegrad.torch as tt

torch = pytest.importorskip("torch")


def _names(fn):
    return [None if n is None else n.name() for n, _ in fn.next_functions]


def _create_graph_grad(mod):
    x = mod.tensor([1.0, 2.0], dtype=mod.float64, requires_grad=True)
    (x * x * x).sum().backward(create_graph=True)
    g = x.grad.grad_fn
    return g.name(), _names(g), _names(g.next_functions[1][0]), x.grad.tolist()


def test_create_graph_gradient_is_copied_in_as_pytorch():
    assert _create_graph_grad(tt) == _create_graph_grad(torch)


COMPOSITES = {
    "clamp_min": lambda mod, y: y.clamp_min(0.0),
    "clamp_max": lambda mod, y: y.clamp_max(0.0),
    "rot90": lambda mod, y: y.rot90(2),
    "softplus": lambda mod, y: mod.nn.functional.softplus(y),
    "logsumexp": lambda mod, y: mod.logsumexp(y, 1),
    "index chain": lambda mod, y: y[1:, 0],
    "contiguous": lambda mod, y: y.contiguous(),
    "cat": lambda mod, y: mod.cat([y, y.t()]),
}


def _composite(mod, op):
    x = mod.tensor([[0.5, -2.0], [1.5, 3.0]], dtype=mod.float64, requires_grad=True)
    y = x * 1
    z = COMPOSITES[op](mod, y)
    node = z.grad_fn
    chain = []
    while node is not None and node.name() != "MulBackward0":
        chain.append(node.name())
        node = node.next_functions[0][0]
    y.add_(1)
    try:
        (z * z).sum().backward()
        out = "ok", x.grad.tolist()
    except RuntimeError as e:
        out = "error", str(e).split(" Hint")[0]
    return chain, out


@pytest.mark.parametrize("op", sorted(COMPOSITES))
def test_composite_op_node_and_saved_versions_as_pytorch(op):
    assert _composite(tt, op) == _composite(torch, op)
