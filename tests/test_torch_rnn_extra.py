"""tapegrad.torch: the fused LSTM step, packed sequences (``nn.utils.rnn``) and
the recurrent layers on them, ``torch.nn`` names the facade lacks, the LSTM
example, and small fixes (``norm(0)``, ``flatten``/``unflatten`` errors);
against PyTorch (float64, weights copied across) where it is importable."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.torch as torch
from tapegrad.torch import nn
from tapegrad.torch.nn.modules.rnn import lstm_c, lstm_h
from tapegrad.torch.nn.utils import rnn as R

_spec = importlib.util.spec_from_file_location("_examples_helper", Path(__file__).parent / "test_examples.py")
assert _spec is not None and _spec.loader is not None
_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_examples)
run_example = _examples.run_example


def _copy(mine: Any, theirs: Any, real: Any) -> None:
    sd = {k: real.from_numpy(np.array(v.detach().numpy())) for k, v in mine.state_dict().items()}
    theirs.load_state_dict(sd)


def _close(a: Any, b: Any, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


# --- the fused LSTM step ----------------------------------------------------------------------------


def _cell_ref(gates: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    i, f, g, o = np.split(gates, 4, axis=-1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c2), c2


def test_lstm_primitives_values_and_gradients_to_second_order() -> None:
    rng = np.random.default_rng(0)
    gates, c = rng.normal(size=(3, 8)) * 2, rng.normal(size=(3, 2))
    h_ref, c_ref = _cell_ref(gates, c)
    np.testing.assert_allclose(lstm_c(gates, c), c_ref, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(lstm_h(gates, c_ref), h_ref, rtol=1e-13, atol=1e-15)
    tg.check_grads(lstm_c, (gates, c), modes=("fwd", "rev"), order=2)
    tg.check_grads(lstm_h, (gates, c), modes=("fwd", "rev"), order=2)
    tg.check_grads(lambda g, c: lstm_h(g, lstm_c(g, c)), (gates, c), modes=("rev",), order=2)
    batched = tg.vmap(lstm_c, in_axes=(0, None))(np.stack([gates, -gates]), c)
    np.testing.assert_allclose(batched[1], lstm_c(-gates, c), rtol=1e-13)
    G, C = rng.normal(size=(4, 3, 8)), rng.normal(size=(4, 3, 2))
    loss = lambda g, c: tg.numpy.sum(lstm_h(g, lstm_c(g, c)) ** 2)  # noqa: E731
    for axes, args in (((0, None), (G, c)), ((None, 0), (gates, C)), ((0, 0), (G, C))):
        for k in (0, 1):
            got = tg.vmap(tg.grad(loss, argnums=k), in_axes=axes)(*args)
            want = [tg.grad(loss, argnums=k)(*(a[i] if ax == 0 else a for a, ax in zip(args, axes)))
                    for i in range(4)]
            np.testing.assert_allclose(got, np.stack(want), rtol=1e-12, atol=1e-14)


def test_lstm_layer_equals_its_written_out_cell_and_differentiates_twice() -> None:
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4).double()
    cell = nn.LSTMCell(3, 4).double()
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in lstm.state_dict().items()})
    x = torch.randn(6, 2, 3, dtype=torch.float64, requires_grad=True)
    out, (h, c) = lstm(x)
    hc = (torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, 4, dtype=torch.float64))
    steps = []
    for t in range(6):
        hc = cell(x[t], hc)
        steps.append(hc[0])
    np.testing.assert_allclose(out.detach().numpy(), torch.stack(steps).detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c[0].detach().numpy(), hc[1].detach().numpy(), rtol=1e-12, atol=1e-14)
    (gx,) = torch.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    (gx_ref,) = torch.autograd.grad(torch.stack(steps).pow(2).sum(), x, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gx_ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    (ggx,) = torch.autograd.grad(gx.pow(2).sum(), x)
    (ggx_ref,) = torch.autograd.grad(gx_ref.pow(2).sum(), x)
    np.testing.assert_allclose(ggx.numpy(), ggx_ref.numpy(), rtol=1e-9, atol=1e-12)


def test_lstm_keeps_float32() -> None:
    out, (h, c) = nn.LSTM(3, 4, batch_first=True)(torch.randn(2, 5, 3))
    assert out.dtype == h.dtype == c.dtype == torch.float32


# --- packing and padding ------------------------------------------------------------------------------


def test_pack_pad_roundtrip_and_errors() -> None:
    x = torch.arange(24.0).reshape(4, 3, 2)
    p = R.pack_padded_sequence(x, [4, 2, 1])
    assert p.batch_sizes.tolist() == [3, 2, 1, 1] and p.sorted_indices is None and p.unsorted_indices is None
    assert p.data[:, 0].tolist() == [0, 2, 4, 6, 8, 12, 18]
    assert re.match(r"PackedSequence\(data=tensor\(", repr(p))
    padded, lens = R.pad_packed_sequence(p, total_length=5, padding_value=-1.0)
    assert padded.shape == (5, 3, 2) and lens.tolist() == [4, 2, 1] and lens.dtype == torch.int64
    assert padded[2:, 1].eq(-1).all() and padded[:2, 1].equal(x[:2, 1])
    q = R.pack_padded_sequence(x.transpose(0, 1), torch.tensor([1, 4, 2]), batch_first=True, enforce_sorted=False)
    assert q.sorted_indices.tolist() == [1, 2, 0] and q.unsorted_indices.tolist() == [2, 0, 1]
    back, lens = R.pad_packed_sequence(q, batch_first=True)
    assert lens.tolist() == [1, 4, 2] and back[1].equal(x[:, 1]) and back[0, 1:].eq(0).all()
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        R.pack_padded_sequence(x, [1, 4, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [4, 2, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2"):
        R.pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match="a length of 5 is longer than the input's 4 steps"):
        R.pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(ValueError, match="total_length=3 and max sequence length being 4"):
        R.pad_packed_sequence(p, total_length=3)
    seqs = [torch.ones(2, 3), torch.full((4, 3), 2.0), torch.full((1, 3), 3.0)]
    assert R.pad_sequence(seqs).shape == (4, 3, 3)
    left = R.pad_sequence(seqs, batch_first=True, padding_side="left", padding_value=9.0)
    assert left[2, :, 0].tolist() == [9, 9, 9, 3]
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        R.pad_sequence([])
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got mid."):
        R.pad_sequence(seqs, padding_side="mid")
    with pytest.raises(RuntimeError, match=r"tensor a \(3\) must match the size of tensor b \(4\)"):
        R.pad_sequence([torch.ones(2, 3), torch.ones(2, 4)])
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    assert [s.tolist() for s in R.unpack_sequence(packed)] == [s.tolist() for s in seqs]
    assert [s.shape[0] for s in R.unpad_sequence(R.pad_sequence(seqs), torch.tensor([2, 4, 1]))] == [2, 4, 1]
    assert packed.double().data.dtype == torch.float64 and packed.to("cpu") is packed and not packed.is_cuda
    assert R.invert_permutation(torch.tensor([2, 0, 1])).tolist() == [1, 2, 0] and R.invert_permutation(None) is None
    assert torch.nn.utils.rnn.PackedSequence is R.PackedSequence


def test_packing_gradients_are_one_scatter() -> None:
    x = torch.randn(5, 3, 2, dtype=torch.float64, requires_grad=True)
    p = R.pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False)
    padded, _ = R.pad_packed_sequence(p, batch_first=True)
    (padded * torch.arange(1.0, 31.0, dtype=torch.float64).reshape(3, 5, 2)).sum().backward()
    want = np.arange(1.0, 31.0).reshape(3, 5, 2).transpose(1, 0, 2).copy()
    want[2:, 0] = 0
    want[3:, 2] = 0
    np.testing.assert_array_equal(x.grad.numpy(), want)
    seqs = [torch.randn(n, 2, dtype=torch.float64, requires_grad=True) for n in (3, 1, 2)]
    padded = R.pad_sequence(seqs, batch_first=True, padding_side="left")
    (padded * torch.arange(1.0, 19.0, dtype=torch.float64).reshape(3, 3, 2)).sum().backward()
    assert seqs[0].grad.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert seqs[1].grad.tolist() == [[11.0, 12.0]]
    assert seqs[2].grad.tolist() == [[15.0, 16.0], [17.0, 18.0]]


@pytest.mark.parametrize("kw", [dict(batch_first=False, enforce_sorted=True),
                                dict(batch_first=True, enforce_sorted=False)])
def test_packing_matches_pytorch(kw: dict, real_torch: Any) -> None:
    real = real_torch
    rng = np.random.default_rng(2)
    xv = rng.normal(size=(4, 5, 3))  # (B, T, *) with batch_first, else (T, B, *)... shapes differ below
    lens = [5, 3, 3, 1] if kw["enforce_sorted"] else [3, 5, 1, 3]
    xv = xv if kw["batch_first"] else xv.transpose(1, 0, 2).copy()
    mine = R.pack_padded_sequence(torch.tensor(xv, requires_grad=True), lens, **kw)
    theirs = real.nn.utils.rnn.pack_padded_sequence(real.tensor(xv, requires_grad=True), lens, **kw)
    for a, b in zip(mine, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for total in (None, 7):
        pm, lm = R.pad_packed_sequence(mine, kw["batch_first"], -2.0, total)
        pt, lt = real.nn.utils.rnn.pad_packed_sequence(theirs, kw["batch_first"], -2.0, total)
        np.testing.assert_array_equal(pm.detach().numpy(), pt.detach().numpy())
        assert lm.tolist() == lt.tolist()
    seqs = [rng.normal(size=(n, 2)) for n in (2, 4, 1)]
    for side in ("left", "right"):
        a = R.pad_sequence([torch.tensor(s) for s in seqs], True, 0.5, side)
        b = real.nn.utils.rnn.pad_sequence([real.tensor(s) for s in seqs], True, 0.5, side)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_recurrent_layers_on_packed_sequences_match_pytorch(name: str, cfg: dict, enforce_sorted: bool,
                                                            real_torch: Any) -> None:
    real = real_torch
    torch.manual_seed(4)
    mine = getattr(nn, name)(3, 4, **cfg).double()
    theirs = getattr(real.nn, name)(3, 4, **cfg).double()
    _copy(mine, theirs, real)
    rng = np.random.default_rng(5)
    bf = cfg.get("batch_first", False)
    xv = rng.normal(size=(4, 6, 3) if bf else (6, 4, 3))
    lens = [6, 4, 4, 2] if enforce_sorted else [4, 6, 2, 4]
    layers = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    hv = [rng.normal(size=(layers, 4, 4)) for _ in range(2)]
    xm, xt = torch.tensor(xv, requires_grad=True), real.tensor(xv, requires_grad=True)
    pm = R.pack_padded_sequence(xm, lens, batch_first=bf, enforce_sorted=enforce_sorted)
    pt = real.nn.utils.rnn.pack_padded_sequence(xt, lens, batch_first=bf, enforce_sorted=enforce_sorted)
    if name == "LSTM":
        om, (hm, cm) = mine(pm, tuple(torch.tensor(h) for h in hv))
        ot, (ht, ct) = theirs(pt, tuple(real.tensor(h) for h in hv))
        _close(cm, ct)
    else:
        om, hm = mine(pm, torch.tensor(hv[0]))
        ot, ht = theirs(pt, real.tensor(hv[0]))
        cm = ct = None
    assert isinstance(om, R.PackedSequence)
    assert om.batch_sizes.tolist() == ot.batch_sizes.tolist()
    _close(om.data, ot.data)
    _close(hm, ht)
    lm = (om.data ** 2).sum() + (hm ** 3).sum() + (0 if cm is None else (cm ** 2).sum() * 0.5)
    lt = (ot.data ** 2).sum() + (ht ** 3).sum() + (0 if ct is None else (ct ** 2).sum() * 0.5)
    lm.backward()
    lt.backward()
    _close(xm.grad, xt.grad)
    for (n, p), (n2, q) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert n == n2
        _close(p.grad, q.grad)


def test_packed_input_checks_and_zero_initial_state() -> None:
    lstm = nn.LSTM(3, 2)
    p = R.pack_sequence([torch.randn(3, 3), torch.randn(2, 3)])
    out, (h, c) = lstm(p)
    assert out.data.shape == (5, 2) and h.shape == c.shape == (1, 2, 2)
    np.testing.assert_allclose(h[0, 1].detach().numpy(), out.data[3].detach().numpy())  # seq 1's last step
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        lstm(R.pack_sequence([torch.randn(3, 2)]))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 2\), got \[1, 3, 2\]"):
        lstm(p, (torch.zeros(1, 3, 2), torch.zeros(1, 3, 2)))


# --- torch.nn names the facade lacks ------------------------------------------------------------------


def test_missing_nn_names_say_so() -> None:
    import copy
    import pickle

    for mod, path in ((torch.nn, "torch.nn"), (torch.nn.functional, "torch.nn.functional"),
                      (torch.nn.utils, "torch.nn.utils")):
        with pytest.raises(AttributeError, match=f"tapegrad.torch does not provide {path}.NoSuchThing"):
            mod.NoSuchThing  # noqa: B018
        assert not hasattr(mod, "NoSuchThing")
        with pytest.raises(AttributeError) as info:
            mod.__no_such_dunder__  # noqa: B018
        assert "does not provide" not in str(info.value)
    assert pickle.loads(pickle.dumps(nn.Linear(2, 1))).weight.shape == (1, 2)
    assert copy.deepcopy(nn.LSTM(2, 3)).hidden_size == 3


# --- small fixes --------------------------------------------------------------------------------------


def test_norm_zero_counts_nonzeros_with_zero_gradient() -> None:
    x = torch.tensor([[1.0, 0.0, -2.0], [0.0, 0.0, 3.0]], requires_grad=True)
    assert x.norm(0).item() == 3.0 and x.norm(0, dim=1).tolist() == [2.0, 1.0]
    assert x.norm(p=0, dim=0, keepdim=True).shape == (1, 3) and x.norm(-float("inf")).item() == 0.0
    y = x.norm(0)
    assert type(y.grad_fn).__name__ == "LinalgVectorNormBackward0"
    y.backward()
    assert x.grad.eq(0).all()


def test_flatten_and_unflatten_errors() -> None:
    x = torch.ones(2, 3)
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in range of [-2, 1], "
                                                   "but got 5)")):
        x.flatten(5)
    with pytest.raises(IndexError, match=re.escape("[-2, 1], but got 7")):
        torch.flatten(x, 0, 7)
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
        x.flatten(1, 0)
    assert torch.tensor(2.0).flatten(0, -1).shape == (1,)
    with pytest.raises(IndexError, match=re.escape("[-1, 0], but got 1")):
        torch.tensor(2.0).flatten(1)
    with pytest.raises(RuntimeError, match=re.escape("unflatten: Provided sizes [2, 2] don't multiply up to the "
                                                     "size of dim 1 (3) in the input tensor")):
        x.unflatten(1, (2, 2))
    with pytest.raises(RuntimeError, match="unflatten: sizes must be non-empty"):
        x.unflatten(1, ())
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.unflatten(1, (-1, -1))
    with pytest.raises(IndexError, match=re.escape("[-2, 1], but got -3")):
        x.unflatten(-3, (1,))
    assert x.unflatten(-1, (-1, 1)).shape == (2, 3, 1)


def test_small_fixes_match_pytorch(real_torch: Any) -> None:
    real = real_torch
    v = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])

    def outcome(mod: Any, f: Any) -> str:
        try:
            return repr(f(mod.tensor(v), mod))
        except Exception as exc:  # the type and the first line of the message
            return f"{type(exc).__name__}: {str(exc).splitlines()[:2]}"

    cases = [lambda x, m: x.norm(0), lambda x, m: x.norm(0, dim=1), lambda x, m: x.norm(-float("inf"), dim=0),
             lambda x, m: x.flatten(5), lambda x, m: x.flatten(0, 5), lambda x, m: x.flatten(-3),
             lambda x, m: x.flatten(1, 0), lambda x, m: m.tensor(2.0).flatten(1),
             lambda x, m: x.unflatten(1, (3, 1)), lambda x, m: x.unflatten(5, (3,)),
             lambda x, m: x.unflatten(1, (-1, -1)), lambda x, m: x.unflatten(1, ()),
             lambda x, m: x.unflatten(1, (0, -1)), lambda x, m: x.unflatten(1, (2, 2)),
             lambda x, m: x.unflatten(1, (-1, 2)), lambda x, m: x.unflatten(1, (3, -2)),
             lambda x, m: m.tensor(1.0).unflatten(0, (1,)), lambda x, m: m.ones(2, 0).unflatten(1, (0, -1)),
             lambda x, m: m.ones(2, 0).unflatten(1, (5, 0)).shape]
    for f in cases:
        assert outcome(torch, f) == outcome(real, f)


# --- the example --------------------------------------------------------------------------------------


def test_lstm_sequence_example(tmp_path: Path) -> None:
    out = run_example("lstm_sequence", tmp_path)
    assert "accuracy" in out
