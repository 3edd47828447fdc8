"""grad_fn views made on demand from facade tape entries keep PyTorch's
graph semantics (expected values taken from PyTorch 2.x)."""

from __future__ import annotations

import re

import pytest

import tapegrad.torch as torch

VERSION_ERROR = r"^one of the variables needed for gradient computation has been modified by an inplace operation"


def norm(s: object) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x", str(s))


def test_edges_are_the_views_the_inputs_had_when_the_op_ran() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y * 5.0
    old = y.grad_fn
    y.add_(1.0)  # y now names a new entry; z still points at the old one
    assert z.grad_fn.next_functions[0][0] is old
    assert z.grad_fn.next_functions[0][0] is not y.grad_fn
    assert norm(y.grad_fn.next_functions) == "((<MulBackward0 object at 0x>, 0), (None, 0))"
    z.sum().backward()
    assert x.grad.tolist() == [10.0, 10.0]

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    z = y + 1.0
    y.detach_()
    assert norm(z.grad_fn.next_functions) == "((<MulBackward0 object at 0x>, 0), (None, 0))"
    assert norm(z.grad_fn.next_functions[0][0].next_functions) == "((<AccumulateGrad object at 0x>, 0), (None, 0))"


def test_shared_views_and_leaves() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    b = a * 3.0
    c = b * b
    assert c.grad_fn.next_functions[0][0] is b.grad_fn is c.grad_fn.next_functions[1][0]
    assert b.grad_fn.next_functions[0][0].variable is a
    assert (b.is_leaf, b.output_nr, b.requires_grad, repr(b)) == (
        False, 0, True, "tensor(6., grad_fn=<MulBackward0>)")
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    p = torch.tensor([3.0, 4.0])
    assert norm((p * w).grad_fn.next_functions) == "((None, 0), (<AccumulateGrad object at 0x>, 0))"
    assert norm((w - p).grad_fn.next_functions) == "((<AccumulateGrad object at 0x>, 0), (None, 0))"
    y = torch.ones(2, requires_grad=True) * 2.0  # the leaf is gone: its AccumulateGrad still shows it
    assert y.grad_fn.next_functions[0][0].variable.shape == (2,)


def test_version_counters_of_fast_ops() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # exp saves its output
    w = y * 1.0
    with torch.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        w.sum().backward()

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = torch.tensor([3.0, 4.0])
    y = x * c  # saves c
    c.add_(1.0)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()

    x = torch.tensor([0.5, 1.0], requires_grad=True)
    h = x.tanh()
    g = h * 2.0
    h.mul_(3.0)  # recorded, but tanh's rule saved h's old value
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        g.sum().backward()

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = torch.tensor([3.0, 4.0])
    c.add_(1.0)  # before it is saved: fine
    y = (x * c).sin()
    y.sum().backward()
    assert (c._version, y._version) == (1, 0)
    d = y.detach()
    with torch.no_grad():
        d.add_(1.0)
    assert (y._version, d._version) == (1, 1)


def test_the_graph_keeps_only_what_rules_saved() -> None:
    """An intermediate result no rule saved is freed with its last tensor
    (the graph keeps its version counter, not its value), as in PyTorch."""
    import gc
    import weakref

    from tapegrad.core.traced import value

    x = torch.ones(3, requires_grad=True)
    for make in (lambda t: t * 2.0, lambda t: t.flip(0)):  # a fast op, an op with an eager view
        h = make(x)
        y = h * 3.0  # saves nothing of h
        ref = weakref.ref(value(h._value))
        del h
        gc.collect()
        assert ref() is None
        y.sum().backward()
    assert x.grad.tolist() == [9.0, 9.0, 9.0]

    h = x.exp()
    y = h.sin()  # saves h: it stays, and its in-place change is caught
    ref = weakref.ref(value(h._value))
    with torch.no_grad():
        h.mul_(2.0)
    del h
    gc.collect()
    assert ref() is not None
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_backward_order_is_descending_over_random_graphs() -> None:
    """The entries a backward walks: every reachable one, once, newest first."""
    import random

    from tapegrad.core.graph_tape import reachable
    from tapegrad.core.tape import parents_of

    rng = random.Random(0)
    for _ in range(30):
        x = torch.tensor([0.5, 1.5], requires_grad=True)
        ts = [x]
        for _ in range(rng.randrange(1, 25)):
            a, b = rng.choice(ts), rng.choice(ts)
            ts.append(rng.choice([lambda: a.sin(), lambda: a * b, lambda: a + 1.0, lambda: (a - b).exp()])())
        roots = [t._value._node for t in rng.sample(ts[1:], min(3, len(ts) - 1))]
        want, todo = set(), list(roots)
        while todo:
            n = todo.pop()
            if n.prim is not None and n not in want:
                want.add(n)
                todo.extend(parents_of(n))
        got = reachable(roots)
        assert set(got) == want and len(got) == len(want)
        assert [n.index for n in got] == sorted((n.index for n in want), reverse=True)
