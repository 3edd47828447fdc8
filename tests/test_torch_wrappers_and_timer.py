"""PyTorch user APIs of the facade: functorch's make_functional(_with_buffers),
torch.utils.benchmark.Timer, nn.DataParallel on CPU, and MultiheadAttention
with kdim/vdim, add_bias_kv, add_zero_attn (compared with torch where importable)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tapegrad.torch as tt
from tapegrad.torch.func import grad, make_functional, make_functional_with_buffers, vmap
from tapegrad.torch.utils import benchmark


def _model() -> tt.nn.Module:
    tt.manual_seed(0)
    return tt.nn.Sequential(tt.nn.Linear(3, 4), tt.nn.BatchNorm1d(4), tt.nn.ReLU(), tt.nn.Linear(4, 2))


def test_make_functional_with_buffers_calls_the_model_with_the_given_tensors() -> None:
    model = _model()
    fmodel, params, buffers = make_functional_with_buffers(model)
    assert [tuple(p.shape) for p in params] == [tuple(p.shape) for p in model.parameters()]
    assert [tuple(b.shape) for b in buffers] == [tuple(b.shape) for b in model.buffers()]
    assert all(p.requires_grad and p.is_leaf for p in params)
    assert not any(p is q for p, q in zip(params, model.parameters()))  # a copy, as functorch's
    x = tt.randn(5, 3)
    model.eval()
    fmodel.eval()
    np.testing.assert_allclose(fmodel(params, buffers, x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    doubled = tuple(2 * p.detach() for p in params)
    ref = tt.func.functional_call(model, dict(zip([n for n, _ in model.named_parameters()], doubled)), (x,))
    np.testing.assert_allclose(fmodel(doubled, buffers, x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    # the tensors of the copy are back in place after the call
    assert all(a is b for a, b in zip(params, fmodel.stateless_model.parameters()))


def test_make_functional_with_buffers_under_grad_and_vmap_matches_backward() -> None:
    model = _model()
    model.eval()
    fmodel, params, buffers = make_functional_with_buffers(model)
    x, t = tt.randn(6, 3), tt.randn(6, 2)

    def loss(p: tuple[tt.Tensor, ...], b: tuple[tt.Tensor, ...], x: tt.Tensor, t: tt.Tensor) -> tt.Tensor:
        return tt.nn.functional.mse_loss(fmodel(p, b, x), t)

    g = grad(loss)(params, buffers, x, t)
    loss(params, buffers, x, t).backward()
    for gi, p in zip(g, params):
        np.testing.assert_allclose(gi.detach().numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)
    per_sample = vmap(grad(lambda p, b, x, t: loss(p, b, x[None], t[None])), in_dims=(None, None, 0, 0))(
        params, buffers, x, t)
    np.testing.assert_allclose(per_sample[0].mean(0).detach().numpy(), g[0].detach().numpy(), rtol=1e-5, atol=1e-7)


def test_make_functional_refuses_buffers_and_disables_tracking() -> None:
    with pytest.raises(RuntimeError, match="make_functional_with_buffers"):
        make_functional(_model())
    fmodel, params = make_functional(tt.nn.Linear(3, 2), disable_autograd_tracking=True)
    assert not any(p.requires_grad for p in params)
    assert tuple(fmodel(params, tt.ones(1, 3)).shape) == (1, 2)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_make_functional_agrees_with_functorch() -> None:
    torch = pytest.importorskip("torch")
    functorch = pytest.importorskip("functorch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    fm = tt.nn.Sequential(tt.nn.Linear(3, 4), tt.nn.BatchNorm1d(4), tt.nn.Linear(4, 2))
    fm.load_state_dict({k: tt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    f1, p1, b1 = functorch.make_functional_with_buffers(tm)
    f2, p2, b2 = make_functional_with_buffers(fm)
    assert len(p1) == len(p2) and len(b1) == len(b2)
    y1, y2 = f1(p1, b1, torch.tensor(x)), f2(p2, b2, tt.tensor(x))
    np.testing.assert_allclose(y2.detach().numpy(), y1.detach().numpy(), rtol=1e-5, atol=1e-6)
    # training mode updates the copy's running statistics, as functorch's does
    np.testing.assert_allclose(b2[0].numpy(), b1[0].numpy(), rtol=1e-5, atol=1e-7)


def test_timer_timeit_and_blocked_autorange_give_measurements() -> None:
    x = tt.randn(100)
    t = benchmark.Timer("x.sin()", setup="y = 1", globals={"x": x}, label="sin", sub_label="100",
                        description="float32")
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1
    assert m.mean == m.median == m.times[0] > 0
    assert re.fullmatch(r"<tapegrad\.torch\.utils\.benchmark\.Measurement object at 0x[0-9a-f]+>\n"
                        r"sin: 100\nfloat32\nsetup: y = 1\n"
                        r"  \d+\.\d\d (ns|us|ms|s)\n  1 measurement, 50 runs , 1 thread", repr(m)), repr(m)
    m = t.blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and m.number_per_run >= 1
    assert m.times == [r / m.number_per_run for r in m.raw_times]
    assert min(m.times) <= m.median <= max(m.times) and min(m.times) <= m.mean <= max(m.times)
    assert np.isclose(m.mean, np.mean(m.times)) and np.isclose(m.median, np.median(m.times))
    lines = repr(m).splitlines()
    assert lines[1:3] == ["sin: 100", "float32"]
    assert re.fullmatch(r"  Median: \d+\.\d\d (ns|us|ms|s)", lines[4])
    n = len(m.times)
    assert f"{n} measurement{'s' if n > 1 else ''}, {m.number_per_run} runs" in repr(m)


def test_timer_puts_the_facade_in_globals_and_repr_follows_torch() -> None:
    m = benchmark.Timer("torch.ones(2) + 1").timeit(5)
    assert m.title == "torch.ones(2) + 1"
    torch = pytest.importorskip("torch")
    from torch.utils import benchmark as tb
    theirs = tb.Measurement(number_per_run=10, raw_times=[1e-5, 2e-5, 3e-5, 4e-5, 9e-5],
                            task_spec=tb.utils.common.TaskSpec("x + 1", "x = 1", label="add", sub_label="int"))
    ours = benchmark.Measurement(number_per_run=10, raw_times=[1e-5, 2e-5, 3e-5, 4e-5, 9e-5],
                                 task_spec=benchmark.TaskSpec("x + 1", "x = 1", label="add", sub_label="int"))
    assert repr(ours).splitlines()[1:] == repr(theirs).splitlines()[1:]
    assert (ours.mean, ours.median, ours.iqr) == pytest.approx((theirs.mean, theirs.median, theirs.iqr))
    assert torch.__version__ and ours.has_warnings == theirs.has_warnings


def test_data_parallel_is_a_pass_through() -> None:
    inner = tt.nn.Linear(3, 2)
    model = tt.nn.DataParallel(inner)
    assert model.module is inner and model.device_ids == []
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    x = tt.randn(4, 3)
    np.testing.assert_array_equal(model(x).detach().numpy(), inner(x).detach().numpy())
    model(x).sum().backward()
    assert inner.weight.grad is not None
    torch = pytest.importorskip("torch")
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(theirs.state_dict()) == list(model.state_dict())
    assert repr(theirs) == repr(model)


def _mha_run(lib, state, kw, q, k, v, attn_mask, key_padding_mask):  # type: ignore[no-untyped-def]
    m = lib.nn.MultiheadAttention(8, 2, **kw)
    m.load_state_dict({n: lib.tensor(a) for n, a in state.items()})
    Q, K, V = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
    out, w = m(Q, K, V, attn_mask=None if attn_mask is None else lib.tensor(attn_mask),
               key_padding_mask=None if key_padding_mask is None else lib.tensor(key_padding_mask))
    (out.sin().sum() + (w * w).sum()).backward()
    names = [n for n, _ in m.named_parameters()]
    return names, [out.detach().numpy(), w.detach().numpy(), Q.grad.numpy(), K.grad.numpy(), V.grad.numpy()] + [
        p.grad.numpy() for _, p in m.named_parameters()]


@pytest.mark.parametrize("kw", [dict(kdim=5, vdim=3), dict(add_bias_kv=True), dict(add_zero_attn=True),
                                dict(kdim=5, vdim=3, add_bias_kv=True, add_zero_attn=True, bias=False)],
                         ids=["kdim_vdim", "bias_kv", "zero_attn", "all"])
@pytest.mark.parametrize("masks", ["none", "bool", "float3d"])
def test_multihead_attention_options_match_torch(kw: dict, masks: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, **kw)
    state = {n: p.detach().numpy().copy() for n, p in theirs.state_dict().items()}
    q = rng.standard_normal((4, 3, 8)).astype(np.float32)
    k = rng.standard_normal((6, 3, kw.get("kdim", 8))).astype(np.float32)
    v = rng.standard_normal((6, 3, kw.get("vdim", 8))).astype(np.float32)
    am = kp = None
    if masks == "bool":
        am, kp = rng.random((4, 6)) < 0.3, rng.random((3, 6)) < 0.3
        am[:, 0] = kp[:, 0] = False  # no row masked whole (softmax of all -inf)
    elif masks == "float3d":
        am = rng.standard_normal((6, 4, 6)).astype(np.float32)
    names_t, want = _mha_run(torch, state, kw, q, k, v, am, kp)
    names_f, got = _mha_run(tt, state, kw, q, k, v, am, kp)
    assert names_f == names_t
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


def test_multihead_attention_layout_of_the_new_options() -> None:
    m = tt.nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes == {"q_proj_weight": (8, 8), "k_proj_weight": (8, 5), "v_proj_weight": (8, 3),
                      "in_proj_bias": (24,), "bias_k": (1, 1, 8), "bias_v": (1, 1, 8),
                      "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    assert m.in_proj_weight is None and not m._qkv_same_embed_dim
    out, w = m(tt.randn(2, 8), tt.randn(4, 5), tt.randn(4, 3))  # unbatched
    assert tuple(out.shape) == (2, 8) and tuple(w.shape) == (2, 5)
