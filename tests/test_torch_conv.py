"""Convolutions and poolings of the facade: ``F.conv*``, ``F.*pool*`` and their modules.

Against real PyTorch where it is importable (values and gradients to 1e-10 in
float64, node names, reprs); torch-free: the primitives' gradients to second
order (``tg.check_grads``), ``vmap`` against a loop, and a small training step.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.torch import _conv as C
from tapegrad.torch import nn

RNG = np.random.default_rng(0)


def _pair(real: Any, a: np.ndarray) -> tuple[Any, Any]:
    return (torch.tensor(a, requires_grad=True), real.tensor(a, requires_grad=True))


def _compare(real: Any, fn: str, arrays: list[np.ndarray | None], kw: dict[str, Any], node: str) -> None:
    """``F.fn`` of the arrays (None: no bias) against PyTorch's: value, node name, every gradient."""
    ours, theirs = [], []
    for a in arrays:
        o, t = (None, None) if a is None else _pair(real, a)
        ours.append(o)
        theirs.append(t)
    y = getattr(F, fn)(*ours, **kw)
    r = getattr(real.nn.functional, fn)(*theirs, **kw)
    np.testing.assert_allclose(y.detach().numpy(), r.detach().numpy(), rtol=1e-10, atol=1e-10)
    assert type(y.grad_fn).__name__ == type(r.grad_fn).__name__ == node
    g = RNG.standard_normal(tuple(r.shape))
    y.backward(torch.tensor(g))
    r.backward(real.tensor(g))
    for o, t in zip(ours, theirs):
        if o is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


GRID = list(itertools.product((1, 2), (0, 1, "same"), (1, 2), (1, 2), (True, False)))


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", GRID)
def test_conv2d_matches_torch(real_torch: Any, stride: int, padding: Any, dilation: int, groups: int,
                              bias: bool) -> None:
    if padding == "same" and stride != 1:
        pytest.skip("PyTorch refuses padding='same' with a stride")
    x = RNG.standard_normal((2, 4, 7, 6))
    w = RNG.standard_normal((6, 4 // groups, 3, 2))
    b = RNG.standard_normal(6) if bias else None
    _compare(real_torch, "conv2d", [x, w, b],
             {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}, "ConvolutionBackward0")


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", GRID)
def test_conv1d_matches_torch(real_torch: Any, stride: int, padding: Any, dilation: int, groups: int,
                              bias: bool) -> None:
    if padding == "same" and stride != 1:
        pytest.skip("PyTorch refuses padding='same' with a stride")
    x = RNG.standard_normal((3, 2, 9))
    w = RNG.standard_normal((4, 2 // groups, 4))  # (an even kernel: "same" pads unevenly)
    b = RNG.standard_normal(4) if bias else None
    _compare(real_torch, "conv1d", [x, w, b],
             {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}, "ConvolutionBackward0")


@pytest.mark.parametrize("stride,padding,opad,dilation,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 2), (3, 2, 2, 1, 2), (1, 1, 0, 2, 1)])
def test_conv_transpose2d_matches_torch(real_torch: Any, stride: int, padding: int, opad: int, dilation: int,
                                        groups: int) -> None:
    x = RNG.standard_normal((2, 4, 5, 4))
    w = RNG.standard_normal((4, 6 // groups, 3, 3))
    _compare(real_torch, "conv_transpose2d", [x, w, RNG.standard_normal(6)],
             {"stride": stride, "padding": padding, "output_padding": opad, "groups": groups, "dilation": dilation},
             "ConvolutionBackward0")


@pytest.mark.parametrize("k,stride,padding,dilation,ceil", [
    (2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 2, 1, 2, False), ((2, 3), (1, 2), (1, 1), 1, True),
    (3, 3, 0, 1, True)])
def test_max_pool2d_matches_torch(real_torch: Any, k: Any, stride: Any, padding: Any, dilation: int,
                                  ceil: bool) -> None:
    x = RNG.standard_normal((2, 3, 8, 7))
    kw = {"kernel_size": k, "stride": stride, "padding": padding, "dilation": dilation, "ceil_mode": ceil}
    _compare(real_torch, "max_pool2d", [x], kw, "MaxPool2DWithIndicesBackward0")
    y, i = F.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    r, j = real_torch.nn.functional.max_pool2d(real_torch.tensor(x), return_indices=True, **kw)
    assert i.dtype == torch.int64 and np.array_equal(i.numpy(), j.numpy())


def test_max_pool_ties_go_to_the_first_max(real_torch: Any) -> None:
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 0.0, 2.0]]]])
    _compare(real_torch, "max_pool2d", [x], {"kernel_size": 2, "stride": 1}, "MaxPool2DWithIndicesBackward0")


@pytest.mark.parametrize("k,stride,padding,ceil", [(2, None, 0, False), (3, 2, 1, True), (4, 1, 2, False)])
def test_max_pool1d_matches_torch(real_torch: Any, k: int, stride: Any, padding: int, ceil: bool) -> None:
    x = RNG.standard_normal((2, 3, 9))
    _compare(real_torch, "max_pool1d", [x], {"kernel_size": k, "stride": stride, "padding": padding,
                                             "ceil_mode": ceil}, "SqueezeBackward1")


@pytest.mark.parametrize("k,stride,padding,ceil,incl,div", [
    (2, None, 0, False, True, None), (3, 2, 1, True, True, None), (3, 2, 1, True, False, None),
    ((3, 2), (2, 1), (1, 1), False, False, None), (3, 2, 1, False, True, 4)])
def test_avg_pool2d_matches_torch(real_torch: Any, k: Any, stride: Any, padding: Any, ceil: bool, incl: bool,
                                  div: Any) -> None:
    x = RNG.standard_normal((2, 3, 8, 7))
    _compare(real_torch, "avg_pool2d", [x], {"kernel_size": k, "stride": stride, "padding": padding,
                                             "ceil_mode": ceil, "count_include_pad": incl,
                                             "divisor_override": div}, "AvgPool2DBackward0")


@pytest.mark.parametrize("size,node", [((3, 2), "AdaptiveAvgPool2DBackward0"), (5, "AdaptiveAvgPool2DBackward0"),
                                       ((None, 3), "AdaptiveAvgPool2DBackward0"), (1, "MeanBackward1")])
def test_adaptive_avg_pool2d_matches_torch(real_torch: Any, size: Any, node: str) -> None:
    _compare(real_torch, "adaptive_avg_pool2d", [RNG.standard_normal((2, 3, 7, 5))], {"output_size": size}, node)


def test_unbatched_input_and_graph(real_torch: Any) -> None:
    x, w = RNG.standard_normal((4, 6, 6)), RNG.standard_normal((2, 4, 3, 3))
    _compare(real_torch, "conv2d", [x, w, None], {}, "SqueezeBackward1")
    y = F.conv2d(torch.tensor(x[None], requires_grad=True), torch.tensor(w, requires_grad=True))
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad", "AccumulateGrad",
                                                                       "NoneType"]


def test_module_reprs_match_torch(real_torch: Any) -> None:
    def both(name: str, *a: Any, **kw: Any) -> None:
        assert repr(getattr(nn, name)(*a, **kw)) == repr(getattr(real_torch.nn, name)(*a, **kw))

    both("Conv2d", 4, 6, 3, stride=2, padding=1, groups=2, bias=False)
    both("Conv2d", 2, 3, (3, 2), padding="same", dilation=2)
    both("Conv1d", 2, 3, 3)
    both("ConvTranspose2d", 4, 3, 3, stride=2, output_padding=1)
    both("MaxPool1d", 2)
    both("MaxPool2d", 3, stride=2, padding=1, ceil_mode=True)
    both("AvgPool2d", 3, 2, 1, ceil_mode=True, count_include_pad=False)
    both("AdaptiveAvgPool2d", (3, None))
    both("AdaptiveAvgPool2d", 1)


def test_module_forward_matches_torch(real_torch: Any) -> None:
    for ours, theirs, shape in [
        (nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), real_torch.nn.Conv2d(4, 6, 3, stride=2, padding=1,
                                                                                 groups=2), (2, 4, 7, 7)),
        (nn.ConvTranspose2d(4, 3, 3, stride=2, output_padding=1), real_torch.nn.ConvTranspose2d(
            4, 3, 3, stride=2, output_padding=1), (2, 4, 5, 5)),
        (nn.Conv1d(3, 5, 2, padding="same"), real_torch.nn.Conv1d(3, 5, 2, padding="same"), (2, 3, 8)),
    ]:
        theirs = theirs.double()
        ours.weight.data = torch.tensor(theirs.weight.detach().numpy())
        ours.bias.data = torch.tensor(theirs.bias.detach().numpy())
        x = RNG.standard_normal(shape)
        np.testing.assert_allclose(ours(torch.tensor(x)).detach().numpy(),
                                   theirs(real_torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-10)


# --- torch-free --------------------------------------------------------------------------------------


def test_parameter_init() -> None:
    torch.manual_seed(0)
    m = nn.Conv2d(4, 6, (3, 2), groups=2)
    assert tuple(m.weight.shape) == (6, 2, 3, 2) and tuple(m.bias.shape) == (6,)
    bound = 1 / np.sqrt(2 * 3 * 2)  # kaiming_uniform(a=sqrt(5)): 1/sqrt(fan_in), as the bias
    assert np.abs(m.weight.detach().numpy()).max() <= bound and np.abs(m.bias.detach().numpy()).max() <= bound
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert tuple(t.weight.shape) == (4, 3, 3, 3)


KW = {"stride": (2, 1), "pad": ((1, 0), (0, 1)), "dilation": (1, 2), "groups": 2}


def test_conv_primitives_second_order() -> None:
    x, w = RNG.standard_normal((1, 2, 5, 5)), RNG.standard_normal((2, 1, 3, 2))
    tg.check_grads(lambda x, w: C.conv(x, w, **KW), (x, w), order=2)
    g = C.conv(x, w, **KW)
    tg.check_grads(lambda g, w: C.conv_t(g, w, spatial=(5, 5), **KW), (g, w), order=2)
    tg.check_grads(lambda x, g: C.conv_w(x, g, ksize=(3, 2), **KW), (x, g), order=2)


def test_pool_primitive_second_order() -> None:
    kw = {"kernel": (2, 3), "stride": (2, 2), "pad": ((1, 1), (1, 2)), "dilation": (1, 1)}
    x = RNG.standard_normal((2, 2, 5, 6))
    tg.check_grads(lambda x: C.pool_max(x, **kw), (x,), order=2)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_conv_primitives_vmap(in_axes: tuple[Any, Any]) -> None:
    x, w = RNG.standard_normal((1, 2, 5, 5)), RNG.standard_normal((2, 1, 3, 2))
    g = C.conv(x, w, **KW)
    xb, wb, gb = (RNG.standard_normal((3,) + a.shape) for a in (x, w, g))
    cases = [(lambda a, b: C.conv(a, b, **KW), (x, w), (xb, wb)),
             (lambda a, b: C.conv_t(a, b, spatial=(5, 5), **KW), (g, w), (gb, wb)),
             (lambda a, b: C.conv_w(a, b, ksize=(3, 2), **KW), (x, g), (xb, gb))]
    for f, one, many in cases:
        args = [m if ax == 0 else o for o, m, ax in zip(one, many, in_axes)]
        got = tg.vmap(f, in_axes=in_axes)(*args)
        want = np.stack([f(*[a[i] if ax == 0 else a for a, ax in zip(args, in_axes)]) for i in range(3)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_per_example_gradients_through_conv_and_pool() -> None:
    w = RNG.standard_normal((3, 1, 3, 3))
    xs = RNG.standard_normal((4, 1, 1, 6, 6))
    kw = {"stride": (1, 1), "pad": ((1, 1), (1, 1)), "dilation": (1, 1), "groups": 1}
    pk = {"kernel": (2, 2), "stride": (2, 2), "pad": ((0, 0), (0, 0)), "dilation": (1, 1)}

    def loss(w: Any, x: Any) -> Any:
        return tg.numpy.sum(C.pool_max(C.conv(x, w, **kw), **pk) ** 2)

    got = tg.vmap(tg.grad(loss), in_axes=(None, 0))(w, xs)
    want = np.stack([tg.grad(loss)(w, x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_create_graph_double_backward() -> None:
    x = torch.tensor(RNG.standard_normal((2, 2, 5, 5)), requires_grad=True)
    w = torch.tensor(RNG.standard_normal((3, 2, 3, 3)), requires_grad=True)
    (gx,) = torch.autograd.grad(F.conv2d(x, w, padding=1).pow(2).sum(), x, create_graph=True)
    gx.sum().backward()
    assert w.grad is not None and tuple(w.grad.shape) == (3, 2, 3, 3)


def test_small_cnn_trains() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3),
                          nn.AdaptiveAvgPool2d(1))
    x = torch.randn(8, 1, 8, 8)
    y = torch.randn(8, 4, 1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("fn", [lambda x, w: F.conv2d(x, w), lambda x, w: F.max_pool2d(x, 2),
                                lambda x, w: F.avg_pool2d(x, 2), lambda x, w: F.adaptive_avg_pool2d(x, (3, 2))])
def test_saved_input_modified_in_place_is_caught(fn: Any) -> None:
    x = torch.randn(1, 1, 4, 4, requires_grad=True) * 1
    w = torch.randn(1, 1, 3, 3, requires_grad=True)
    y = fn(x, w)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_weight_modified_in_place_is_caught() -> None:
    x = torch.randn(1, 1, 4, 4)
    w = torch.randn(1, 1, 3, 3, requires_grad=True) * 1
    y = F.conv2d(x, w)
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_jacobians_and_hessians_batch_the_rules() -> None:
    """jacrev/jacfwd/hessian hand the rules a batch of cotangents (one vectorized call)."""
    x, w = RNG.standard_normal((1, 2, 5, 5)), RNG.standard_normal((2, 1, 3, 2))
    np.testing.assert_allclose(tg.jacrev(lambda w: C.conv(x, w, **KW))(w), tg.jacfwd(lambda w: C.conv(x, w, **KW))(w),
                               rtol=1e-12, atol=1e-12)
    pk = {"kernel": (2, 2), "stride": (2, 2), "pad": ((0, 1), (0, 1)), "dilation": (1, 1)}

    def f(x: Any) -> Any:
        return tg.numpy.sum(C.pool_max(C.conv(x, w, **KW), **pk) ** 2)

    h = tg.hessian(f)(x)
    d = RNG.standard_normal(x.shape)
    fd = (tg.grad(f)(x + 1e-6 * d) - tg.grad(f)(x - 1e-6 * d)) / 2e-6
    np.testing.assert_allclose(np.tensordot(h, d, 4), fd, atol=1e-7)
