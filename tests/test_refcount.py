"""Graphs die by reference counting alone.

With Python's cyclic collector switched off, a graph built by any op (every
line of the core op table recorded on the facade tape, and every facade
program below) is freed as soon as the tensors that own it are deleted:
with no backward pass, after ``backward()``, after a ``create_graph=True``
gradient and its own backward, and after ``grad_fn`` (and its
``next_functions``) were read. A cycle anywhere (an entry holding its own
view, a rule holding its own output, a leaf holding its ``AccumulateGrad``)
would keep the graph alive here.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from optable import OPS, Case
from torch_optable import ROWS, Row

import tapegrad.numpy as tnp
import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.torch import nn

MODES = ("record", "grad_fn", "backward", "create_graph")


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _walk_views(fn: Any, seen: set[int]) -> None:
    """Read every ``next_functions`` below ``fn`` (builds every lazy view)."""
    stack = [fn]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        stack.extend(g for g, _ in f.next_functions)


def _exercise(make: Callable[[], tuple[list[Any], Any]], mode: str) -> list[weakref.ref[Any]]:
    """Build a graph with ``make`` (returns its leaves and its scalar root),
    use it as ``mode`` says, drop it; return weak references to its parts."""
    leaves, root = make()
    refs = [weakref.ref(root), weakref.ref(root._value._node)]
    fn = root.grad_fn
    if fn is not None:
        refs.append(weakref.ref(fn))
    if mode == "grad_fn" and fn is not None:
        _walk_views(fn, set())
    elif mode == "backward":
        root.backward()
    elif mode == "create_graph":
        grads = torch.autograd.grad(root, leaves, create_graph=True, allow_unused=True)
        used = [g for g in grads if g is not None and g.requires_grad]
        if used:
            refs.append(weakref.ref(used[0]._value._node))
            total = sum((g * g).sum() for g in used)
            total.backward()
            del total
        del grads, used
    del fn, root, leaves
    return refs


def _assert_freed(make: Callable[[], tuple[list[Any], Any]], mode: str) -> None:
    with no_cyclic_gc():
        refs = _exercise(make, mode)
        alive = [r() for r in refs if r() is not None]
    assert not alive, f"kept alive without the cyclic collector ({mode}): {alive!r:.300}"


# --- every line of the core op table, recorded on the facade tape ---------------------------------


def _core_graph(case: Case) -> Callable[[], tuple[list[Any], Any]]:
    def make() -> tuple[list[Any], Any]:
        rng = np.random.default_rng(0)
        leaves = [torch.tensor(make_arg(rng), requires_grad=True) for make_arg in case.args]
        out = case.fn(tnp, *[t._value for t in leaves])
        out = tnp.real(out) if np.iscomplexobj(out) else out
        root = torch.Tensor.__tapegrad_box__(tnp.sum(out * out), None)
        return leaves, root

    return make


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_core_op_graph_is_freed_by_reference_counting(case: Case, mode: str) -> None:
    if mode == "create_graph" and case.order < 2:
        pytest.skip("op is only differentiable once")
    _assert_freed(_core_graph(case), mode)


# --- facade programs ----------------------------------------------------------------------------------

FACADE: dict[str, Callable[[Any], Any]] = {
    "mul": lambda x: x * 2, "rsub": lambda x: 1 - x, "rdiv": lambda x: 2 / (x + 3),
    "div": lambda x: x / (x + 3), "pow": lambda x: x ** 2, "pow_tensor": lambda x: x ** (x * 0 + 2),
    "rpow": lambda x: 2 ** x, "matmul_t": lambda x: x @ x.t(), "relu": lambda x: x.relu(),
    "abs": lambda x: x.abs(), "clamp": lambda x: x.clamp(-0.5, 0.5), "maximum": lambda x: torch.maximum(x, x * 2),
    "reshape": lambda x: x.reshape(-1), "view": lambda x: x.view(9), "t": lambda x: x.t(),
    "index": lambda x: x[0], "index_chain": lambda x: x[1:, None, 0], "advanced_index": lambda x: x[[0, 2]],
    "cat": lambda x: torch.cat([x, x * 2]), "stack": lambda x: torch.stack([x, x]),
    "max_dim": lambda x: x.max(0)[0], "sort": lambda x: x.sort(1)[0], "unbind": lambda x: x.unbind(0)[1],
    "split": lambda x: x.split(1)[2], "softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(0),
    "exp": lambda x: x.exp(), "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
    "sum": lambda x: x.sum(), "mean_dim": lambda x: x.mean(1, keepdim=True), "norm": lambda x: x.norm(),
    "std": lambda x: x.std(0), "where": lambda x: torch.where(x > 0, x, x * 3),
    "gelu": lambda x: F.gelu(x), "mse": lambda x: F.mse_loss(x, x.detach() * 2),
    "cross_entropy": lambda x: F.cross_entropy(x, torch.tensor([0, 2, 1])),
    "linear": lambda x: F.linear(x, x * 2, x[0]), "layer_norm": lambda x: F.layer_norm(x, (3,)),
    "lerp": lambda x: torch.lerp(x, x * 2, 0.3), "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5),
    "inplace": lambda x: (x * 1).mul_(2).add_(1), "inplace_exp": lambda x: (x * 1).exp_(),
    "setitem": lambda x: _set(x * 1), "view_inplace": lambda x: _view_write(x * 1),
    "function": lambda x: _Square.apply(x), "checkpointed_module": lambda x: nn.Linear(3, 2)(x).tanh(),
}


def _set(y: Any) -> Any:
    y[0] = y[1] * 2
    return y


def _view_write(y: Any) -> Any:
    y[1].mul_(3)
    return y


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        y = x * x
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, _ = ctx.saved_tensors
        return 2 * g * x


def _facade_graph(program: Callable[[Any], Any]) -> Callable[[], tuple[list[Any], Any]]:
    def make() -> tuple[list[Any], Any]:
        x = torch.tensor(np.random.default_rng(1).uniform(0.5, 1.5, (3, 3)), requires_grad=True)
        y = program(x)
        return [x], (y * y).sum()

    return make


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FACADE))
def test_facade_graph_is_freed_by_reference_counting(name: str, mode: str) -> None:
    _assert_freed(_facade_graph(FACADE[name]), mode)


# --- every row of the facade's op table (tests/torch_optable.py) ------------------------------------


def _row_graph(row: Row) -> Callable[[], tuple[list[Any], Any]]:
    def make() -> tuple[list[Any], Any]:
        rng = np.random.default_rng(2)
        leaves = [torch.tensor(make_arg(rng), requires_grad=True) for make_arg in row.args]
        y = row.fn(torch, *leaves)
        return leaves, (y * y).sum()

    return make


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_facade_op_table_graph_is_freed_by_reference_counting(row: Row, mode: str) -> None:
    if mode == "create_graph" and row.order < 2:
        pytest.skip("op is only differentiable once")
    _assert_freed(_row_graph(row), mode)


def test_leaf_and_its_accumulate_grad_are_freed_together() -> None:
    with no_cyclic_gc():
        x = torch.ones(2, requires_grad=True)
        acc = (x * 2).grad_fn.next_functions[0][0]
        assert acc.variable is x
        assert (x * 3).grad_fn.next_functions[0][0] is acc  # one node per leaf while it is held
        refs = [weakref.ref(x), weakref.ref(acc)]
        del x, acc
        assert all(r() is None for r in refs)


def test_training_loop_graphs_are_freed_by_reference_counting() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with no_cyclic_gc():
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            ref = weakref.ref(loss._value._node)
            del loss
            assert ref() is None
