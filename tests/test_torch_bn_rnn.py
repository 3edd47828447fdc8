"""tapegrad.torch.nn: BatchNorm, Embedding, the recurrent layers and attention,
by behaviour and against PyTorch (weights copied across, float64)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
import tapegrad.torch.nn.functional as F
from tapegrad.torch import nn


def norm(s: object) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x...", str(s))


def _copy(mine: Any, theirs: Any, real: Any) -> None:
    """PyTorch module ``theirs`` gets ``mine``'s parameters and buffers (float64)."""
    sd = {k: real.from_numpy(np.array(v.detach().numpy())) for k, v in mine.state_dict().items()}
    theirs.load_state_dict(sd)


def _close(a: Any, b: Any, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


# --- BatchNorm --------------------------------------------------------------------------------


def test_batchnorm_train_eval_by_hand() -> None:
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(3).double()
    assert norm(bn) == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    y = bn(x)
    assert norm(y.grad_fn) == "<NativeBatchNormBackward0 object at 0x...>"
    xv = x.detach().numpy()
    want = (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), want, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * xv.mean(0), atol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * xv.var(0, ddof=1), atol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y2 = bn(x)
    want2 = (xv - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(y2.detach().numpy(), want2, atol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(torch.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(torch.randn(2, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(torch.randn(1, 3))


def test_batchnorm_options() -> None:
    bn = nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    assert bn.weight is None and bn.running_mean is None and list(bn.state_dict()) == []
    x = torch.randn(3, 2, 4, 4)
    bn.eval()  # no running stats: batch statistics even in eval mode
    y = bn(x).detach().numpy()
    np.testing.assert_allclose(y.mean((0, 2, 3)), 0, atol=1e-5)
    cum = nn.BatchNorm1d(2, momentum=None)
    a, b = torch.randn(4, 2), torch.randn(4, 2)
    cum(a)
    cum(b)
    np.testing.assert_allclose(cum.running_mean.numpy(), (a.mean(0) + b.mean(0)).numpy() / 2, atol=1e-6)
    out = F.batch_norm(x, None, None, training=True)
    np.testing.assert_allclose(out.numpy(), y, atol=1e-6)


@pytest.mark.parametrize("kind", ["1d2", "1d3", "2d"])
def test_batchnorm_matches_pytorch(kind: str, real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(1)
    shape = {"1d2": (5, 3), "1d3": (4, 3, 6), "2d": (3, 3, 4, 5)}[kind]
    mine = (nn.BatchNorm2d(3, momentum=0.3) if kind == "2d" else nn.BatchNorm1d(3, momentum=0.3)).double()
    theirs = (real.nn.BatchNorm2d(3, momentum=0.3) if kind == "2d" else real.nn.BatchNorm1d(3, momentum=0.3)).double()
    with torch.no_grad():
        mine.weight.uniform_(0.5, 1.5)
        mine.bias.uniform_(-1, 1)
    _copy(mine, theirs, real)
    for step in range(3):
        xv = np.random.default_rng(step).normal(size=shape) * 2 + 1
        x = torch.tensor(xv, requires_grad=True)
        xt = real.tensor(xv, requires_grad=True)
        gv = np.random.default_rng(10 + step).normal(size=shape)
        y, yt = mine(x), theirs(xt)
        _close(y, yt)
        (y * torch.tensor(gv)).sum().backward()
        (yt * real.tensor(gv)).sum().backward()
        _close(x.grad, xt.grad)
        _close(mine.weight.grad, theirs.weight.grad)
        _close(mine.bias.grad, theirs.bias.grad)
    for k in ("running_mean", "running_var"):
        _close(getattr(mine, k), getattr(theirs, k))
    assert mine.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 3
    mine.eval()
    theirs.eval()
    x = torch.tensor(np.ones(shape) * 0.5, requires_grad=True)
    xt = real.tensor(np.ones(shape) * 0.5, requires_grad=True)
    y, yt = mine(x), theirs(xt)
    _close(y, yt)
    y.sum().backward()
    yt.sum().backward()
    _close(x.grad, xt.grad)
    _close(mine.weight.grad, theirs.weight.grad)


# --- Embedding --------------------------------------------------------------------------------


def test_embedding_by_hand() -> None:
    torch.manual_seed(0)
    e = nn.Embedding(5, 2, padding_idx=0)
    assert norm(e) == "Embedding(5, 2, padding_idx=0)"
    assert (e.weight[0] == 0).all()
    idx = torch.tensor([[0, 1], [1, 4]])
    y = e(idx)
    assert y.shape == (2, 2, 2) and norm(y.grad_fn) == "<EmbeddingBackward0 object at 0x...>"
    y.sum().backward()
    np.testing.assert_array_equal(e.weight.grad.numpy(), [[0, 0], [2, 2], [0, 0], [0, 0], [1, 1]])
    with pytest.raises(IndexError, match="index out of range in self"):
        e(torch.tensor([5]))
    assert nn.Embedding(5, 2, padding_idx=-1).padding_idx == 4
    w = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
    big = nn.Embedding.from_pretrained(w, max_norm=1.0)
    assert not big.weight.requires_grad
    np.testing.assert_allclose(big(torch.tensor([0, 1])).numpy(), [[0.6, 0.8], [0.3, 0.4]], atol=1e-6)
    np.testing.assert_allclose(big.weight.numpy(), [[0.6, 0.8], [0.3, 0.4]], atol=1e-6)  # renormed in place
    z = F.embedding(torch.tensor([1, 1]), torch.ones(3, 2, requires_grad=True))
    assert norm(z.grad_fn) == "<EmbeddingBackward0 object at 0x...>"


def test_embedding_matches_pytorch(real_torch: Any) -> None:
    real = real_torch
    mine = nn.Embedding(6, 3, padding_idx=2).double()
    theirs = real.nn.Embedding(6, 3, padding_idx=2).double()
    _copy(mine, theirs, real)
    iv = np.array([[2, 1, 5], [0, 2, 1]])
    gv = np.random.default_rng(0).normal(size=(2, 3, 3))
    y, yt = mine(torch.tensor(iv)), theirs(real.tensor(iv))
    _close(y, yt)
    (y * torch.tensor(gv)).sum().backward()
    (yt * real.tensor(gv)).sum().backward()
    _close(mine.weight.grad, theirs.weight.grad)


# --- recurrent layers -------------------------------------------------------------------------


def test_rnn_shapes_names_and_repr() -> None:
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True)
    assert norm(lstm) == "LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)"
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse"]
    assert len(names) == 16 and lstm.weight_ih_l1.shape == (16, 8)
    assert all(float(p.abs().max()) <= 0.5 for p in lstm.parameters())
    out, (h, c) = lstm(torch.randn(2, 5, 3))
    assert out.shape == (2, 5, 8) and h.shape == (4, 2, 4) and c.shape == (4, 2, 4)
    out, (h, c) = lstm(torch.randn(5, 3))  # unbatched
    assert out.shape == (5, 8) and h.shape == (4, 4)
    gru = nn.GRU(3, 4, bias=False)
    assert norm(gru) == "GRU(3, 4, bias=False)" and [n for n, _ in gru.named_parameters()] == [
        "weight_ih_l0", "weight_hh_l0"]
    out, h = gru(torch.randn(5, 2, 3))
    assert out.shape == (5, 2, 4) and h.shape == (1, 2, 4)
    np.testing.assert_array_equal(out[-1].detach().numpy(), h[0].detach().numpy())
    rnn = nn.RNN(3, 4, 1, "relu")
    assert rnn.nonlinearity == "relu" and float(rnn(torch.randn(4, 2, 3))[0].min()) >= 0
    assert norm(nn.RNNCell(2, 3, nonlinearity="relu")) == "RNNCell(2, 3, nonlinearity=relu)"
    assert norm(nn.LSTMCell(2, 3, bias=False)) == "LSTMCell(2, 3, bias=False)"
    h1, c1 = nn.LSTMCell(2, 3)(torch.randn(4, 2))
    assert h1.shape == c1.shape == (4, 3) and nn.GRUCell(2, 3)(torch.randn(2)).shape == (3,)
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        nn.GRU(2, 3, dropout=0.5)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        gru(torch.randn(5, 2, 4))


def test_rnn_dropout_between_layers_only_in_training() -> None:
    torch.manual_seed(0)
    r = nn.RNN(3, 4, 2, dropout=0.5)
    x = torch.randn(6, 2, 3)
    r.eval()
    a, b = r(x)[0], r(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    r.train()
    c = r(x)[0]
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def _run_pair(mine: Any, theirs: Any, real: Any, x: np.ndarray, hx: Any, lstm: bool) -> None:
    xm, xt = torch.tensor(x, requires_grad=True), real.tensor(x, requires_grad=True)
    if hx is None:
        om, ot = mine(xm), theirs(xt)
    elif lstm:
        om, ot = mine(xm, tuple(torch.tensor(h) for h in hx)), theirs(xt, tuple(real.tensor(h) for h in hx))
    else:
        om, ot = mine(xm, torch.tensor(hx)), theirs(xt, real.tensor(hx))
    flat_m = [om] if isinstance(om, torch.Tensor) else [om[0], *(om[1] if isinstance(om[1], tuple) else [om[1]])]
    flat_t = [ot] if isinstance(ot, real.Tensor) else [ot[0], *(ot[1] if isinstance(ot[1], tuple) else [ot[1]])]
    if not isinstance(theirs, real.nn.RNNBase) and lstm:
        flat_m, flat_t = list(om), list(ot)
    lm = sum(((i + 1.5) * a * a).sum() for i, a in enumerate(flat_m))
    lt = sum(((i + 1.5) * a * a).sum() for i, a in enumerate(flat_t))
    for a, b in zip(flat_m, flat_t):
        _close(a, b)
    lm.backward()
    lt.backward()
    _close(xm.grad, xt.grad)
    for (n, p), (n2, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert n == n2
        _close(p.grad, q.grad)


@pytest.mark.parametrize("kind", ["RNN", "RNN_relu", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True),
                                 dict(num_layers=2, bias=False)])
def test_rnn_matches_pytorch(kind: str, cfg: dict, real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(3)
    kw = dict(cfg)
    name = kind.split("_")[0]
    if kind == "RNN_relu":
        kw["nonlinearity"] = "relu"
    mine = getattr(nn, name)(3, 4, **kw).double()
    theirs = getattr(real.nn, name)(3, 4, **kw).double()
    _copy(mine, theirs, real)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3))
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    hshape = (layers, 2 if kw.get("batch_first") else 5, 4)
    hx = (rng.normal(size=hshape), rng.normal(size=hshape)) if name == "LSTM" else rng.normal(size=hshape)
    _run_pair(mine, theirs, real, x, hx, name == "LSTM")
    mine.zero_grad()
    theirs.zero_grad()
    _run_pair(mine, theirs, real, x[:, 0], None, name == "LSTM")  # unbatched, zero initial state


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_pytorch(name: str, real_torch: Any) -> None:
    real = real_torch
    mine = getattr(nn, name)(3, 4).double()
    theirs = getattr(real.nn, name)(3, 4).double()
    _copy(mine, theirs, real)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 3))
    hx = (rng.normal(size=(5, 4)), rng.normal(size=(5, 4))) if name == "LSTMCell" else rng.normal(size=(5, 4))
    _run_pair(mine, theirs, real, x, hx, name == "LSTMCell")


# --- attention --------------------------------------------------------------------------------


def test_multihead_attention_by_hand() -> None:
    torch.manual_seed(0)
    m = nn.MultiheadAttention(4, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                    "out_proj.bias"]
    assert norm(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=4, "
                       "out_features=4, bias=True)\n)")
    assert float(m.in_proj_bias.abs().sum()) == 0
    q, kv = torch.randn(3, 2, 4), torch.randn(5, 2, 4)
    out, w = m(q, kv, kv)
    assert out.shape == (3, 2, 4) and w.shape == (2, 3, 5)
    np.testing.assert_allclose(w.sum(-1).detach().numpy(), 1, atol=1e-6)
    out, w = m(q, kv, kv, need_weights=False)
    assert w is None
    _, w = m(q, kv, kv, average_attn_weights=False)
    assert w.shape == (2, 2, 3, 5)
    pad = torch.tensor([[False, False, False, True, True]] * 2)
    _, w = m(q, kv, kv, key_padding_mask=pad)
    assert float(w[..., 3:].abs().max()) == 0
    out, w = m(q[:, 0], kv[:, 0], kv[:, 0])  # unbatched
    assert out.shape == (3, 4) and w.shape == (3, 5)
    bf = nn.MultiheadAttention(4, 2, batch_first=True)
    assert bf(q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1))[0].shape == (2, 3, 4)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)


@pytest.mark.parametrize("cfg", ["plain", "masks", "batch_first", "nobias"])
def test_multihead_attention_matches_pytorch(cfg: str, real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(2)
    kw = {"batch_first": cfg == "batch_first", "bias": cfg != "nobias"}
    mine = nn.MultiheadAttention(6, 3, **kw).double()
    theirs = real.nn.MultiheadAttention(6, 3, **kw).double()
    with torch.no_grad():
        for p in mine.parameters():
            p.uniform_(-0.5, 0.5)
    _copy(mine, theirs, real)
    rng = np.random.default_rng(0)
    n, tgt, src = 2, 3, 4
    lead = (n, tgt) if kw["batch_first"] else (tgt, n)
    lead_s = (n, src) if kw["batch_first"] else (src, n)
    qv, kv, vv = rng.normal(size=lead + (6,)), rng.normal(size=lead_s + (6,)), rng.normal(size=lead_s + (6,))
    args_m: dict[str, Any] = {}
    args_t: dict[str, Any] = {}
    if cfg == "masks":
        am = np.triu(np.ones((tgt, src), bool), 2)
        kp = np.array([[False] * 3 + [True], [False] * 4])
        args_m = {"attn_mask": torch.tensor(am), "key_padding_mask": torch.tensor(kp), "average_attn_weights": False}
        args_t = {"attn_mask": real.tensor(am), "key_padding_mask": real.tensor(kp), "average_attn_weights": False}
    ins_m = [torch.tensor(a, requires_grad=True) for a in (qv, kv, vv)]
    ins_t = [real.tensor(a, requires_grad=True) for a in (qv, kv, vv)]
    om, wm = mine(*ins_m, **args_m)
    ot, wt = theirs(*ins_t, **args_t)
    _close(om, ot)
    _close(wm, wt)
    ((om * om).sum() + (wm * wm).sum() * 3).backward()
    ((ot * ot).sum() + (wt * wt).sum() * 3).backward()
    for a, b in zip(ins_m, ins_t):
        _close(a.grad, b.grad)
    for (na, p), (nb, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert na == nb
        _close(p.grad, q.grad)


def test_transformer_encoder_layer_by_hand() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8)
    assert [n for n, _ in layer.named_children()] == ["self_attn", "linear1", "dropout", "linear2", "norm1",
                                                      "norm2", "dropout1", "dropout2"]
    x = torch.randn(3, 2, 4)
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), layer(x).detach().numpy())
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


@pytest.mark.parametrize("cfg", [dict(), dict(activation="gelu", norm_first=True, batch_first=True)])
def test_transformer_encoder_layer_matches_pytorch(cfg: dict, real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(4)
    mine = nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0, **cfg).double()
    theirs = real.nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0, **cfg).double()
    with torch.no_grad():
        for p in mine.parameters():
            p.uniform_(-0.5, 0.5)
    _copy(mine, theirs, real)
    xv = np.random.default_rng(1).normal(size=(3, 4, 6))
    n, s = (3, 4) if cfg.get("batch_first") else (4, 3)
    kp = np.zeros((n, s), bool)
    kp[1, -1] = True
    xm, xt = torch.tensor(xv, requires_grad=True), real.tensor(xv, requires_grad=True)
    ym = mine(xm, src_key_padding_mask=torch.tensor(kp))
    yt = theirs(xt, src_key_padding_mask=real.tensor(kp))
    _close(ym, yt)
    gv = np.random.default_rng(2).normal(size=xv.shape)
    (ym * torch.tensor(gv)).sum().backward()
    (yt * real.tensor(gv)).sum().backward()
    _close(xm.grad, xt.grad)
    for (na, p), (nb, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert na == nb
        _close(p.grad, q.grad)


@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_scaled_dot_product_attention_matches_pytorch(mask: str, real_torch: Any) -> None:
    real = real_torch
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(2, 3, 6, 5))
    kw_m: dict[str, Any] = {}
    kw_t: dict[str, Any] = {}
    if mask == "bool":
        m = rng.random((4, 6)) > 0.3
        m[:, 0] = True
        kw_m, kw_t = {"attn_mask": torch.tensor(m)}, {"attn_mask": real.tensor(m)}
    elif mask == "float":
        m = rng.normal(size=(4, 6))
        kw_m, kw_t = {"attn_mask": torch.tensor(m), "scale": 0.3}, {"attn_mask": real.tensor(m), "scale": 0.3}
    elif mask == "causal":
        kw_m = kw_t = {"is_causal": True}
    ins_m = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    ins_t = [real.tensor(a, requires_grad=True) for a in (q, k, v)]
    om = F.scaled_dot_product_attention(*ins_m, **kw_m)
    ot = real.nn.functional.scaled_dot_product_attention(*ins_t, **kw_t)
    _close(om, ot)
    (om * om).sum().backward()
    (ot * ot).sum().backward()
    for a, b in zip(ins_m, ins_t):
        _close(a.grad, b.grad)


def test_rnn_hidden_checks_and_helpers() -> None:
    lstm = nn.LSTM(3, 4)
    lstm.flatten_parameters()
    assert [len(w) for w in lstm.all_weights] == [4]
    with pytest.raises(RuntimeError, match=re.escape("Expected hidden[0] size (1, 2, 4), got [1, 3, 4]")):
        lstm(torch.randn(5, 2, 3), (torch.zeros(1, 3, 4), torch.zeros(1, 3, 4)))
    with pytest.raises(RuntimeError, match=re.escape("Expected hidden size (1, 2, 4), got [2, 2, 4]")):
        nn.GRU(3, 4)(torch.randn(5, 2, 3), torch.zeros(2, 2, 4))


def test_transformer_encoder_stack(real_torch: Any) -> None:
    real = real_torch
    layer = nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0).double()
    with pytest.warns(UserWarning, match=re.escape(
            "enable_nested_tensor is True, but self.use_nested_tensor is False because "
            "encoder_layer.self_attn.batch_first was not True(use batch_first for better inference performance)")):
        mine = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(6).double())
    assert [n for n, _ in mine.named_parameters()][:2] == ["layers.0.self_attn.in_proj_weight",
                                                           "layers.0.self_attn.in_proj_bias"]
    assert mine.layers[0].activation_relu_or_gelu == 1
    with pytest.warns(UserWarning):
        theirs = real.nn.TransformerEncoder(real.nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0).double(), 2,
                                            norm=real.nn.LayerNorm(6).double())
    with torch.no_grad():
        for p in mine.parameters():
            p.uniform_(-0.5, 0.5)
    _copy(mine, theirs, real)
    xv = np.random.default_rng(3).normal(size=(4, 2, 6))
    mask = np.triu(np.ones((4, 4), bool), 1)
    xm, xt = torch.tensor(xv, requires_grad=True), real.tensor(xv, requires_grad=True)
    ym, yt = mine(xm, mask=torch.tensor(mask)), theirs(xt, mask=real.tensor(mask))
    _close(ym, yt)
    (ym * ym).sum().backward()
    (yt * yt).sum().backward()
    _close(xm.grad, xt.grad)


@pytest.mark.parametrize("cfg", [dict(), dict(batch_first=True, norm_first=True, activation="gelu")])
def test_transformer_matches_pytorch(cfg: dict, real_torch: Any) -> None:
    """The whole encoder-decoder: structure, masks, outputs and every gradient."""
    real = real_torch
    torch.manual_seed(5)
    kw = dict(d_model=6, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=10, dropout=0.0)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True") as w_mine:
        mine = nn.Transformer(**kw, **cfg).double()
    with pytest.warns(UserWarning, match="enable_nested_tensor is True") as w_theirs:
        theirs = real.nn.Transformer(**kw, **cfg).double()
    assert [str(w.message) for w in w_mine] == [str(w.message) for w in w_theirs]
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert norm(mine) == norm(theirs)
    _copy(mine, theirs, real)
    rng = np.random.default_rng(6)
    s_len, t_len, n = 5, 4, 3
    src_shape, tgt_shape = ((n, s_len, 6), (n, t_len, 6)) if cfg.get("batch_first") else ((s_len, n, 6), (t_len, n, 6))
    sv, tv = rng.normal(size=src_shape), rng.normal(size=tgt_shape)
    pad = np.zeros((n, s_len), bool)
    pad[0, -1] = True
    mask_m = nn.Transformer.generate_square_subsequent_mask(t_len, dtype=torch.float64)
    mask_t = real.nn.Transformer.generate_square_subsequent_mask(t_len, dtype=real.float64)
    ins_m = [torch.tensor(a, requires_grad=True) for a in (sv, tv)]
    ins_t = [real.tensor(a, requires_grad=True) for a in (sv, tv)]
    ym = mine(*ins_m, tgt_mask=mask_m, src_key_padding_mask=torch.tensor(pad),
              memory_key_padding_mask=torch.tensor(pad))
    yt = theirs(*ins_t, tgt_mask=mask_t, src_key_padding_mask=real.tensor(pad),
                memory_key_padding_mask=real.tensor(pad))
    _close(ym, yt)
    gv = rng.normal(size=tgt_shape)
    (ym * torch.tensor(gv)).sum().backward()
    (yt * real.tensor(gv)).sum().backward()
    for a, b in zip(ins_m, ins_t):
        _close(a.grad, b.grad)
    for (_, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        _close(p.grad, q.grad)


def test_transformer_mask_and_checks() -> None:
    assert str(nn.Transformer.generate_square_subsequent_mask(3)) == (
        "tensor([[0., -inf, -inf],\n        [0., 0., -inf],\n        [0., 0., 0.]])")
    with pytest.warns(UserWarning, match="batch_first was not True"):
        model = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    for p in model.parameters():  # (every matrix is Xavier-uniform: bounded by sqrt(6 / (fan_in + fan_out)))
        if p.dim() > 1:
            assert float(p.abs().max()) <= (6 / (p.shape[0] + p.shape[1])) ** 0.5
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(torch.randn(5, 2, 4), torch.randn(3, 3, 4))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(torch.randn(5, 2, 4), torch.randn(3, 2, 5))
    model.eval()
    out = model(torch.randn(5, 2, 4), torch.randn(3, 2, 4))
    assert out.shape == (3, 2, 4) and out.grad_fn is not None
