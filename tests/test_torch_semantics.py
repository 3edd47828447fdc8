"""The facade's semantics without PyTorch: transcripts, errors, one tape, memory."""

from __future__ import annotations

import gc
import re
import threading

import numpy as np
import pytest
from memgrowth import growth

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.torch as torch


def norm(s: object) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x...", str(s))


def test_issue_transcript() -> None:
    w = torch.tensor([0.5, -1.0], requires_grad=True)
    x = torch.tensor([2.0, 3.0])
    y = (w * x).sum()
    assert repr(y) == "tensor(-2., grad_fn=<SumBackward0>)"
    assert norm(y.grad_fn.next_functions) == "((<MulBackward0 object at 0x...>, 0),)"
    assert norm(y.grad_fn.next_functions[0][0].next_functions) == (
        "((<AccumulateGrad object at 0x...>, 0), (None, 0))")
    y.backward(retain_graph=True)
    assert repr(w.grad) == "tensor([2., 3.])"
    y.backward()
    assert repr(w.grad) == "tensor([4., 6.])"
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time \(or"):
        y.backward()
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b, c = x
    assert f"{a!r} {a * b * c!r}" == (
        "tensor(1., grad_fn=<UnbindBackward0>) tensor(6., grad_fn=<MulBackward0>)")
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = v.sin()
    with torch.no_grad():
        v.mul_(2)
    with pytest.raises(RuntimeError) as err:
        s.sum().backward()
    assert str(err.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [torch.FloatTensor [3]] is at version 1; expected version 0 instead. Hint: "
        "enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    assert repr(torch.tensor([[1.5, 2.0], [3.25, 4.0]], dtype=torch.float64, requires_grad=True)) == (
        "tensor([[1.5000, 2.0000],\n        [3.2500, 4.0000]], dtype=torch.float64, requires_grad=True)")
    assert repr(torch.tensor(1e-5)) == "tensor(1.0000e-05)"
    assert repr(torch.arange(6).view(2, 3)) == "tensor([[0, 1, 2],\n        [3, 4, 5]])"


@pytest.mark.parametrize("fn, msg", [
    (lambda: torch.ones(2).sum().backward(),
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    (lambda: (torch.ones(2, requires_grad=True) * 2).backward(),
     "grad can be implicitly created only for scalar outputs"),
    (lambda: torch.ones(2, requires_grad=True).add_(1),
     "a leaf Variable that requires grad is being used in an in-place operation."),
    (lambda: torch.ones(2, requires_grad=True).numpy(),
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    (lambda: torch.tensor([1, 2]).requires_grad_(),
     "only Tensors of floating point dtype can require gradients"),
    (lambda: torch.tensor([1, 2], requires_grad=True),
     "Only Tensors of floating point and complex dtype can require gradients"),
])
def test_error_messages_word_for_word(fn, msg) -> None:  # noqa: ANN001
    with pytest.raises(RuntimeError) as err:
        fn()
    assert str(err.value) == msg


def test_non_leaf_grad_warns() -> None:
    y = torch.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning, match=r"^The \.grad attribute of a Tensor that is not a leaf Tensor is being accessed\."):
        assert y.grad is None
    y.retain_grad()
    y.sum().backward()
    assert repr(y.grad) == "tensor([1., 1.])"


def test_dtypes_and_conversions() -> None:
    assert torch.tensor([1.0]).dtype is torch.float32
    assert torch.tensor([1]).dtype is torch.int64
    assert torch.tensor([True]).dtype is torch.bool
    assert torch.tensor(np.array([1.0])).dtype is torch.float64
    x = torch.ones(2, requires_grad=True)
    assert (x * 2.5).dtype is torch.float32 and (torch.arange(3) * 0.5).dtype is torch.float32
    assert x.to("cpu") is x and x.float() is x and x.double().dtype is torch.float64
    assert str(torch.Size([2, 3])) == "torch.Size([2, 3])"
    assert x.detach().numpy().dtype == np.float32


def test_one_tape_tg_grad_of_a_facade_function() -> None:
    def f(t):  # noqa: ANN001, ANN202
        return (t.sin() * t).sum()

    x = torch.tensor([0.5, 1.0, 2.0])
    g = tg.grad(f)(x)
    assert isinstance(g, torch.Tensor)
    v = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(g.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-6)
    # the same primitives: the facade graph is made of tapegrad.numpy entries
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * w
    assert y._value._node.prim is tnp.multiply.primitive
    # and tg.grad of a facade leaf that requires grad gives a differentiable result
    h = tg.grad(lambda t: (t ** 3).sum())(w)
    h.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [6.0, 12.0])


def test_backward_options() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward(inputs=[x])
    assert w.grad is None and repr(x.grad) == "tensor([3., 4.])"
    x.grad.zero_()
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    assert x.grad.requires_grad
    (g2,) = torch.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(g2.numpy(), [6.0, 12.0])
    h = x.register_hook(lambda g: g * 0)
    x.grad = None
    (x * 5).sum().backward()
    assert repr(x.grad) == "tensor([0., 0.])"
    h.remove()
    x.grad = None
    (x * 5).sum().backward()
    assert repr(x.grad) == "tensor([5., 5.])"


def test_autograd_function_double_backward() -> None:
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ANN001, ANN205
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):  # noqa: ANN001, ANN205
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_grad_mode_is_per_thread() -> None:
    seen = []
    with torch.no_grad():
        t = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        t.start()
        t.join()
        assert not torch.is_grad_enabled()
    assert seen == [True] and torch.is_grad_enabled()


def test_func_transforms() -> None:
    x = torch.tensor([0.5, 1.0], dtype=torch.float64)
    j = torch.func.jacrev(lambda t: t.exp() * t.sum())(x)
    jf = torch.func.jacfwd(lambda t: t.exp() * t.sum())(x)
    np.testing.assert_allclose(j.numpy(), jf.numpy())
    h = torch.func.hessian(lambda t: (t ** 3).sum())(x)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * x.numpy()))
    assert torch.autograd.gradcheck(lambda t: t.sin() * t,
                                    (torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True),))


def test_training_loop_does_not_grow_memory() -> None:
    rng = np.random.default_rng(0)
    w = torch.tensor(rng.standard_normal((4, 3)) * 0.1, dtype=torch.float32, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    x = torch.tensor(rng.standard_normal((8, 4)), dtype=torch.float32)
    target = torch.tensor(rng.standard_normal((8, 3)), dtype=torch.float32)

    def train(n: int) -> None:
        for _ in range(n):
            loss = ((x @ w + b).tanh() - target).pow(2).mean()
            loss.backward()
            with torch.no_grad():
                w.sub_(0.01 * w.grad)
                b.sub_(0.01 * b.grad)
                w.grad.zero_()
                b.grad.zero_()

    grown = growth(train)
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 9000 steps"
    assert w.is_leaf and w.requires_grad and w._version == 10200


def test_graph_goes_with_its_tensors() -> None:
    import weakref

    x = torch.ones(3, requires_grad=True)
    y = (x * 2).sin().sum()
    ref = weakref.ref(y._value._node)
    del y
    gc.collect()
    assert ref() is None


def test_dlpack_round_trip_shares_memory() -> None:
    a = np.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(a)
    assert t.shape == (2, 3) and np.shares_memory(t.numpy(), a)
    back = np.from_dlpack(t)
    back[0, 0] = 42.0
    assert a[0, 0] == 42.0
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.tensor([1.0], requires_grad=True).__dlpack__()


def test_grad_of_function_closing_over_parameters_names_its_grad_fn() -> None:
    w = torch.tensor([2.0, 3.0], requires_grad=True)
    g = tg.grad(lambda x: (x * x * w).sum())(torch.tensor([1.0, 1.0]))
    assert g.requires_grad and g.grad_fn is not None and g.grad_fn.name() != ""
    g.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_graph_without_backward_is_freed_without_the_cyclic_collector() -> None:
    # ops whose rules keep their output (tanh, exp, softmax, x / y) would tie
    # output -> entry -> rule -> output in a cycle: an inference loop run in
    # grad mode would then hold every step's graph until a collection
    import weakref

    from tapegrad.torch import nn

    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Sigmoid())
    x = torch.randn(4, 8)
    was = gc.isenabled()
    gc.disable()
    try:
        refs = []
        for _ in range(5):
            y = model(x)
            z = nn.functional.softmax(y.exp() / (y + 2.0), dim=1)
            refs += [weakref.ref(y._value._node), weakref.ref(z._value._node)]
            del y, z
        assert all(r() is None for r in refs)
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("op, d2", [
    (lambda x: x.tanh(), lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
    (lambda x: x.exp(), np.exp),
    (lambda x: x.sigmoid(), lambda v: (s := 1 / (1 + np.exp(-v))) * (1 - s) * (1 - 2 * s)),
    (lambda x: x.sqrt(), lambda v: -0.25 * v ** -1.5),
    (lambda x: 1.0 / (x + 2.0), lambda v: 2 / (v + 2) ** 3),
], ids=["tanh", "exp", "sigmoid", "sqrt", "reciprocal"])
def test_create_graph_through_ops_that_keep_their_output(op, d2) -> None:  # noqa: ANN001
    v = np.array([0.3, 1.1, 2.0])
    x = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(op(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), d2(v), rtol=1e-10)


def test_in_place_change_of_a_kept_output_is_caught() -> None:
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_function_saving_its_output_makes_no_cycle() -> None:
    import weakref

    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ANN001, ANN205
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):  # noqa: ANN001, ANN205
            (y,) = ctx.saved_tensors
            return g * y

    x = torch.tensor([0.2, 0.7], dtype=torch.float64, requires_grad=True)
    was = gc.isenabled()
    gc.disable()
    try:
        y = Exp.apply(x)
        ref = weakref.ref(y._value._node)
        del y
        assert ref() is None
    finally:
        if was:
            gc.enable()
    (g,) = torch.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([0.2, 0.7]))
    (gg,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.2, 0.7]))
    y = Exp.apply(x)
    with torch.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_scalar_operators_share_rules_per_scalar_and_keep_signed_zeros() -> None:
    # ``x * s`` keeps one rule per scalar s (a loop makes no closure per op):
    # an equal scalar of the other sign of zero, a NaN, a fresh float, and a
    # rule swapped in by debug_nans must each still get their own
    x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    for s in (0.0, -0.0, 0.0, float("nan"), 3.0, float("3.0"), -0.0):
        x.grad = None
        (x * s).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(2, s))
        assert np.signbit(x.grad.numpy()).all() == np.signbit(s)
        x.grad = None
        (x / (s or 4.0) - s + s).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(2, 1 / (s or 4.0)))
    y = x
    for _ in range(3):
        y = y.sin() * 1.5 + 0.25
    y.sum().backward()
    with tg.debug_nans(), np.errstate(over="ignore", invalid="ignore"), pytest.raises(FloatingPointError, match="VJP of `multiply`"):
        (x * 0.0 * 1e308 * 1e308).sum().backward()  # zeros forward; inf * 0.0 in the rule of * 0.0


def test_backward_through_a_chain_that_rejoins_a_branch() -> None:
    # the graph walk follows one-parent links without marking them: a link
    # found after every branch is done must still see what the branches saw
    x = torch.tensor([0.3, 0.9], dtype=torch.float64, requires_grad=True)
    c = x.exp()
    a, b = c.sin(), c.cos()
    r = (a * b).tanh().exp() + c.sqrt()
    r.sum().backward()

    def f(v: np.ndarray) -> object:
        cv = tnp.exp(v)
        return tnp.sum(tnp.exp(tnp.tanh(tnp.sin(cv) * tnp.cos(cv))) + tnp.sqrt(cv))

    np.testing.assert_allclose(x.grad.numpy(), tg.grad(f)(np.array([0.3, 0.9])), rtol=1e-12)


def test_tensor_with_a_dtype_reads_python_numbers_straight_into_it() -> None:
    # not through the default float32 first: 0.3 as float64 is 0.3
    assert torch.tensor([0.3, 0.9], dtype=torch.float64).tolist() == [0.3, 0.9]
    assert torch.tensor(0.1, dtype=torch.float64, requires_grad=True).item() == 0.1
    assert torch.tensor([[1 + 2j]], dtype=torch.complex128).tolist() == [[1 + 2j]]
    assert torch.tensor([2**40 + 1], dtype=torch.float64).item() == 2**40 + 1
    assert torch.tensor([1.5, -2.7], dtype=torch.int64).tolist() == [1, -2]
    assert torch.tensor([0.3]).dtype == torch.float32  # no dtype: PyTorch's inference


def test_norm_and_std_have_zero_gradient_where_they_are_zero() -> None:
    # PyTorch's convention (not sqrt's infinite slope times 0, a NaN)
    w = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    (w.norm(dim=1).sum() + w[:1].norm() + w[:1].std()).backward()
    np.testing.assert_allclose(w.grad.numpy(), [[0.0, 0.0], [0.6, 0.8]])
    v = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(v.norm(), v, create_graph=True)
    g[0].backward()  # d/dv0 of v0 / |v|
    np.testing.assert_allclose(v.grad.numpy(), [4 / 5**1.5, -2 / 5**1.5])


def test_view_needs_compatible_strides_and_reshape_copies_when_it_must() -> None:
    x = torch.arange(12.0).reshape(3, 4).requires_grad_()
    assert x.is_contiguous() and not x.t().is_contiguous() and x.contiguous() is x
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        x.t().view(-1)
    assert x[:, ::2].view(-1).grad_fn.name() == "ViewBackward0"
    y = x.t().reshape(-1)
    assert y.grad_fn.name() == "UnsafeViewBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    assert x.t().reshape(2, 2, 3).grad_fn.name() == "ReshapeAliasBackward0"
    assert x.t().contiguous().grad_fn.name() == "CloneBackward0"
    (y * torch.arange(12.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12.0).reshape(4, 3).T)
