"""tapegrad.torch.nn basics: Flatten Unflatten ModuleList ModuleDict ParameterList
Identity, nn.init, nn.utils (gradient clipping), state_dict / load_state_dict,
torch.save / torch.load. Torch-free behaviour tests, then differential ones
against PyTorch (skipped without it)."""

from __future__ import annotations

import io
import math
import pickle
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
from tapegrad.torch import nn
from tapegrad.torch.nn import init

# --- containers -----------------------------------------------------------------------------------


def test_flatten_unflatten_shapes_and_reprs() -> None:
    x = torch.zeros(4, 2, 3, 5)
    assert nn.Flatten()(x).shape == (4, 30)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (2, 15))(torch.zeros(4, 30)).shape == (4, 2, 15)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.Unflatten(1, [2, 3])) == "Unflatten(dim=1, unflattened_size=[2, 3])"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, 6)
    assert repr(nn.Identity(54, unused="x")) == "Identity()"
    t = torch.ones(2)
    assert nn.Identity()(t) is t


def test_flatten_gradient() -> None:
    w = torch.ones(2, 3, requires_grad=True)
    nn.Sequential(nn.Unflatten(1, (3, 1)), nn.Flatten())(w * 2).sum().backward()
    assert w.grad.tolist() == [[2.0] * 3] * 2


def test_module_list_list_behaviour() -> None:
    a, b, c, d = nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity()
    ml = nn.ModuleList([a, b])
    assert ml.append(c) is ml
    ml.extend([d])
    assert list(ml) == [a, b, c, d] and len(ml) == 4
    assert ml[-1] is d and ml[0] is a
    assert isinstance(ml[1:3], nn.ModuleList) and list(ml[1:3]) == [b, c]
    with pytest.raises(IndexError, match="index 4 is out of range"):
        ml[4]
    ml.insert(1, nn.ELU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "ELU", "Tanh", "Sigmoid", "Identity"]
    del ml[1]
    assert list(ml) == [a, b, c, d] and list(ml._modules) == ["0", "1", "2", "3"]
    ml[0] = d
    assert ml[0] is d
    assert ml.pop(0) is d and len(ml) == 3
    ml += [a]
    both = ml + nn.ModuleList([nn.ReLU()])
    assert len(both) == 5 and list(both._modules) == ["0", "1", "2", "3", "4"]
    del ml[0:2]
    assert list(ml) == [d, a]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)  # type: ignore[arg-type]
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_list_repr_compresses_runs() -> None:
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.Linear(2, 2)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3): ReLU()\n"
        "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
        ")")


def test_module_list_parameters_order() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 1)])
            self.head = nn.ModuleDict({"out": nn.Linear(1, 1)})
            self.extra = nn.ParameterList([torch.ones(2), nn.Parameter(torch.zeros(1))])

    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
        "head.out.weight", "head.out.bias", "extra.0", "extra.1"]
    assert list(net.state_dict()) == [n for n, _ in net.named_parameters()]


def test_module_dict() -> None:
    md = nn.ModuleDict([("b", nn.ReLU()), ("a", nn.Tanh())])
    assert list(md) == ["b", "a"] and list(md.keys()) == ["b", "a"]
    assert "a" in md and "z" not in md and len(md) == 2
    md["c"] = nn.Identity()
    md.update({"d": nn.ELU()})
    assert [type(m).__name__ for m in md.values()] == ["ReLU", "Tanh", "Identity", "ELU"]
    assert [k for k, _ in md.items()] == ["b", "a", "c", "d"]
    assert isinstance(md.pop("c"), nn.Identity)
    del md["d"]
    assert repr(md) == "ModuleDict(\n  (b): ReLU()\n  (a): Tanh()\n)"
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


def test_parameter_list() -> None:
    pl = nn.ParameterList([torch.ones(2), nn.Parameter(torch.zeros(2, 3))])
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in pl)
    pl.append(torch.ones(1))
    assert len(pl) == 3 and pl[-1].shape == (1,)
    assert len(list(pl.parameters())) == 3
    assert isinstance(pl[0:2], nn.ParameterList) and len(pl[0:2]) == 2
    assert repr(pl) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [torch.float32 of size 2]\n"
        "    (1): Parameter containing: [torch.float32 of size 2x3]\n"
        "    (2): Parameter containing: [torch.float32 of size 1]\n"
        ")")
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()


def test_parameter_dict() -> None:
    pd = nn.ParameterDict({"w": torch.ones(2), "b": nn.Parameter(torch.zeros(1)), "k": "text"})
    assert list(pd) == ["b", "k", "w"]  # a plain dict goes in sorted
    assert isinstance(pd["w"], nn.Parameter) and pd["k"] == "text"
    assert [n for n, _ in pd.named_parameters()] == ["b", "w"]
    pd.update(OrderedDict([("z", torch.ones(1)), ("a", torch.ones(1))]))
    assert list(pd)[-2:] == ["z", "a"] and len(pd) == 5
    assert pd.get("missing") is None and pd.setdefault("s", torch.ones(3)).shape == (3,)
    assert pd.popitem()[0] == "s" and pd.pop("k") == "text"
    # one entry: PyTorch's one-line form (its extra_repr has one line)
    assert repr(nn.ParameterDict({"p": torch.ones(2, 3)})) == (
        "ParameterDict(  (p): Parameter containing: [torch.FloatTensor of size 2x3])")
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[1]  # type: ignore[index]
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []


# --- nn.init --------------------------------------------------------------------------------------


def test_calculate_gain_table() -> None:
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01**2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_init_in_place_no_grad_and_bounds() -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.empty(64, 32, 3))  # fan_in = 96, fan_out = 192
    for fn, bound in [
        (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), 1 / math.sqrt(96)),
        (lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"), math.sqrt(6 / 192)),
        (lambda t: init.xavier_uniform_(t, gain=2.0), 2 * math.sqrt(6 / 288)),
        (lambda t: init.uniform_(t, -0.3, 0.3), 0.3),
    ]:
        out = fn(w)
        assert out is w and w.is_leaf and w.grad_fn is None and w.requires_grad
        a = w.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound and a.max() > 0.9 * bound
    for fn, std in [
        (lambda t: init.kaiming_normal_(t, nonlinearity="relu"), math.sqrt(2 / 96)),
        (lambda t: init.xavier_normal_(t), math.sqrt(2 / 288)),
        (lambda t: init.normal_(t, 1.0, 0.5), 0.5),
        (lambda t: init.trunc_normal_(t, std=0.02), 0.02),  # a, b are absolute: no cut here
        (lambda t: init.trunc_normal_(t, a=-1.0, b=1.0), 0.5396),  # N(0, 1) cut at one std
    ]:
        assert fn(w) is w and w.grad_fn is None
        assert abs(w.detach().numpy().std() / std - 1) < 0.05
    init.trunc_normal_(w, a=-0.1, b=0.1)
    assert np.abs(w.detach().numpy()).max() <= 0.1
    assert init.constant_(w, 0.25).detach().numpy().tolist() == np.full((64, 32, 3), 0.25).tolist()
    assert init.zeros_(w).sum().item() == 0 and init.ones_(w).sum().item() == 64 * 32 * 3
    assert w.dtype == torch.float32


def test_init_seeded_by_manual_seed() -> None:
    torch.manual_seed(3)
    a = init.kaiming_uniform_(torch.empty(3, 4)).clone()
    torch.manual_seed(3)
    b = init.kaiming_uniform_(torch.empty(3, 4))
    assert a.tolist() == b.tolist()


def test_init_eye_orthogonal() -> None:
    assert init.eye_(torch.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    for shape in [(3, 5), (5, 3), (4, 2, 2)]:
        q = init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=2.0).reshape(shape[0], -1)
        small = q @ q.T if shape[0] <= q.shape[1] else q.T @ q
        np.testing.assert_allclose(small.numpy(), 4 * np.eye(small.shape[0]), atol=1e-12)
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(torch.empty(3))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(torch.empty(3))


def test_init_errors_and_zero_element() -> None:
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.xavier_uniform_(torch.empty(3))
    with pytest.raises(ValueError, match=r"Mode x not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(torch.empty(2, 3), mode="x")
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(torch.empty(0, 3))


# --- nn.utils -------------------------------------------------------------------------------------


def _with_grads(*grads: list[float]) -> list[Any]:
    ps = []
    for g in grads:
        p = nn.Parameter(torch.zeros(len(g)))
        p.grad = torch.tensor(g)
        ps.append(p)
    return ps


def test_clip_grad_norm_by_hand() -> None:
    ps = _with_grads([3.0, 0.0], [0.0, 4.0])
    total = nn.utils.clip_grad_norm_(ps, max_norm=1.0)
    assert total.item() == pytest.approx(5.0) and total.dim() == 0
    assert ps[0].grad.tolist() == pytest.approx([3 / (5 + 1e-6), 0.0])
    ps = _with_grads([3.0, -4.0])
    assert nn.utils.clip_grad_norm_(ps, 10.0).item() == pytest.approx(5.0)
    assert ps[0].grad.tolist() == [3.0, -4.0]  # below max_norm: unchanged
    ps = _with_grads([1.0, -4.0], [2.0])
    assert nn.utils.clip_grad_norm_(ps, 2.0, norm_type=math.inf).item() == 4.0
    assert ps[0].grad.tolist() == pytest.approx([0.5, -2.0], rel=1e-5)
    ps = _with_grads([1.0, -1.0], [2.0])
    assert nn.utils.clip_grad_norm_(ps, 100.0, norm_type=1).item() == 4.0
    assert nn.utils.clip_grad_norm_([nn.Parameter(torch.ones(1))], 1.0).item() == 0.0  # no grads
    one = _with_grads([6.0, 8.0])[0]
    assert nn.utils.clip_grad_norm_(one, 5.0).item() == pytest.approx(10.0)  # a lone tensor
    bad = _with_grads([math.nan, 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)


def test_clip_grad_value_and_vectors() -> None:
    ps = _with_grads([3.0, -0.5, -7.0])
    assert nn.utils.clip_grad_value_(ps, 1.0) is None
    assert ps[0].grad.tolist() == [1.0, -0.5, -1.0]
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,) and v[:6].tolist() == m.weight.reshape(-1).tolist()
    nn.utils.vector_to_parameters(torch.arange(8.0), m.parameters())
    assert m.bias.tolist() == [6.0, 7.0] and m.weight.is_leaf


def test_clip_in_a_training_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = (model(torch.randn(16, 4)) * 100).pow(2).mean()
    loss.backward()
    before = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    assert before.item() > 0.5
    after = nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    assert after.item() == pytest.approx(0.5, rel=1e-4)
    opt.step()


# --- state_dict, save, load -----------------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)

    def forward(self, x: Any) -> Any:
        return self.body(x)


def test_state_dict_keys_detached_shared() -> None:
    net = _Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["steps", "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias"]
    assert all(not t.requires_grad and t.grad_fn is None for t in sd.values())
    assert not isinstance(sd["body.0.weight"], nn.Parameter)
    sd["body.0.bias"].zero_()  # shares memory with the parameter
    assert net.body[0].bias.tolist() == [0.0] * 4
    assert net.state_dict(keep_vars=True)["body.0.weight"] is net.body[0].weight


def test_load_state_dict_results_and_errors() -> None:
    a, b = _Net(), _Net()
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    assert b.body[2].weight.tolist() == a.body[2].weight.tolist()
    assert b.body[2].weight.requires_grad and b.body[2].weight.is_leaf
    sd = a.state_dict()
    del sd["steps"]
    sd["extra"] = torch.ones(1)
    res = b.load_state_dict(sd, strict=False)
    assert res == (["steps"], ["extra"])
    assert res.missing_keys == ["steps"] and res.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError) as err:
        b.load_state_dict(sd)
    assert str(err.value) == ('Error(s) in loading state_dict for _Net:\n\tMissing key(s) in state_dict: "steps". '
                              '\n\tUnexpected key(s) in state_dict: "extra". ')
    sd = a.state_dict()
    sd["body.0.bias"] = torch.zeros(5)
    with pytest.raises(RuntimeError, match=r"size mismatch for body.0.bias: copying a param with shape "
                                           r"torch.Size\(\[5\]\) from checkpoint, the shape in current model "
                                           r"is torch.Size\(\[4\]\)."):
        b.load_state_dict(sd, strict=False)


def test_save_load_files_and_buffers(tmp_path: Any) -> None:
    a = _Net()
    a.steps.fill_(7)
    path = tmp_path / "net.pt"
    torch.save(a.state_dict(), path)
    sd = torch.load(path)
    b = _Net()
    b.load_state_dict(sd)
    assert b.steps.item() == 7.0
    x = torch.ones(2, 3)
    assert b(x).tolist() == a(x).tolist()
    torch.save({"w": torch.ones(2, dtype=torch.float64, requires_grad=True), "n": 3, "s": torch.Size([1, 2]),
                "d": torch.int64}, str(path))
    got = torch.load(str(path))
    assert got["w"].requires_grad and got["w"].is_leaf and got["w"].dtype == torch.float64
    assert got["n"] == 3 and got["s"] == torch.Size([1, 2]) and got["d"] is torch.int64


def test_save_load_file_objects_and_weights_only() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*Unsupported global: GLOBAL "
                                                     "tapegrad.torch.nn.modules.container.Sequential"):
        torch.load(buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=False)
    assert repr(back) == repr(model)
    assert back[0].weight.tolist() == model[0].weight.tolist() and isinstance(back[0].weight, nn.Parameter)
    buf.seek(0)
    with torch.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU]):
        assert repr(torch.load(buf)) == repr(model)
    with pytest.raises(FileNotFoundError):
        torch.load("/nonexistent/tapegrad/file.pt")


def test_save_load_optimizer_state() -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf)
    opt2 = torch.optim.Adam(nn.Linear(3, 1).parameters(), lr=0.1)
    opt2.load_state_dict(ck["opt"])
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


# --- differential against PyTorch -----------------------------------------------------------------

REPRS = """
import torch
from torch import nn
print(nn.Flatten(), nn.Flatten(0, 2), nn.Unflatten(1, (2, 3)), nn.Identity(3, k=1))
print(nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 2)))(torch.ones(2, 4)).shape)
ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU(), nn.Tanh()])
print(ml)
ml.insert(0, nn.Tanh()); del ml[2]; ml.append(nn.Sigmoid())
print(ml, len(ml), ml[-1], ml[1:3])
print(ml + nn.ModuleList([nn.ReLU()]))
print(nn.ModuleList())
s = nn.Sequential(nn.ReLU()); s.insert(0, nn.Tanh()); s.extend([nn.Sigmoid()]); s += nn.Sequential(nn.ELU())
print(s, s + nn.Sequential(nn.ReLU()), s.pop(1), s, s.insert(-1, nn.Identity()))
md = nn.ModuleDict({"act": nn.ReLU(), "fc": nn.Linear(1, 2)})
md.update([("z", nn.Tanh())]); md["a"] = nn.Identity()
print(md, list(md), "fc" in md, md.pop("act"))
pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(2, 3)])
pl.append(torch.ones(1, dtype=torch.float64))
print(pl, pl[0], len(pl), pl[1:])
pd = nn.ParameterDict({"w": torch.ones(2, 2), "b": nn.Parameter(torch.zeros(2)), "n": 3})
pd.update([("z", torch.ones(1, dtype=torch.float64))]); pd["y"] = torch.ones(3)
print(pd, list(pd), "w" in pd, pd.get("q", 5), pd.popitem()[0], len(pd), pd["b"])
print([n for n, _ in pd.named_parameters()], pd.pop("n"), list(pd.keys()), list(pd | nn.ParameterDict({"a": torch.ones(1)})))
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(2, 2), nn.ReLU()) for _ in range(2)])
        self.heads = nn.ModuleDict({"b": nn.Linear(2, 1), "a": nn.Linear(2, 3)})
        self.ps = nn.ParameterList([torch.ones(3)])
        self.register_buffer("count", torch.zeros(2))
        self.flat = nn.Flatten()
net = Net()
print(net)
print([(n, tuple(p.shape)) for n, p in net.named_parameters()])
print([(k, tuple(v.shape)) for k, v in net.state_dict().items()])
print([n for n, _ in net.named_modules()])
"""


def test_containers_print_as_pytorch(torch_diff: Any) -> None:
    torch_diff.assert_same_output(REPRS)


INIT_PROGRAM = """
import torch
init = torch.nn.init
for nl in ["linear", "conv1d", "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
    print(nl, init.calculate_gain(nl))
print(init.calculate_gain("leaky_relu", 0.2), init.calculate_gain("leaky_relu", 1))
print(init.eye_(torch.empty(2, 3)), init.eye_(torch.empty(3, 2, dtype=torch.float64)))
print(init.dirac_(torch.empty(2, 3, 3)), init.dirac_(torch.empty(4, 2, 1, 2), groups=2).flatten(1))
print(init.constant(torch.empty(2), 3.0), init.constant.__name__)
print(init.constant_(torch.empty(2, 2), 0.5), init.zeros_(torch.empty(2)), init.ones_(torch.empty(1, 2)))
p = torch.nn.Parameter(torch.empty(2, 2))
print(init.ones_(p))
w = torch.ones(2, requires_grad=True) * 2
print(init.zeros_(w))
"""


def test_init_deterministic_parts_match_pytorch(torch_diff: Any) -> None:
    torch_diff.assert_same_output(INIT_PROGRAM)


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_",
                                  "uniform_", "normal_", "orthogonal_", "trunc_normal_"])
@pytest.mark.parametrize("shape", [(200, 100), (64, 16, 3, 3), (30, 500)])
def test_init_distributions_match_pytorch(name: str, shape: tuple[int, ...], real_torch: Any) -> None:
    kwargs: dict[str, Any] = {}
    if name.startswith("kaiming"):
        kwargs = {"a": 0.1, "mode": "fan_out", "nonlinearity": "leaky_relu"}
    elif name.startswith("xavier") or name == "orthogonal_":
        kwargs = {"gain": 1.7}
    elif name == "uniform_":
        kwargs = {"a": -0.2, "b": 0.6}
    elif name == "normal_":
        kwargs = {"mean": 0.3, "std": 0.1}
    elif name == "trunc_normal_":
        kwargs = {"mean": 0.1, "std": 0.5, "a": -0.5, "b": 1.0}
    real_torch.manual_seed(0)
    torch.manual_seed(0)
    theirs = getattr(real_torch.nn.init, name)(real_torch.empty(*shape), **kwargs).numpy()
    ours = getattr(init, name)(torch.empty(*shape), **kwargs).numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    for stat in (np.mean, np.std):
        assert abs(stat(ours) - stat(theirs)) < 0.05 * theirs.std() + 1e-6, (stat, stat(ours), stat(theirs))
    if name.endswith("uniform_") or name == "trunc_normal_":  # bounded: the same bounds
        assert ours.min() >= theirs.min() - 0.05 * theirs.std()
        assert ours.max() <= theirs.max() + 0.05 * theirs.std()
    if name == "orthogonal_":
        q = ours.reshape(shape[0], -1).astype(np.float64)
        g = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
        np.testing.assert_allclose(g, 1.7**2 * np.eye(g.shape[0]), atol=1e-4)


def test_init_errors_match_pytorch(torch_diff: Any) -> None:
    torch_diff.assert_same_error(lambda t: t.nn.init.calculate_gain("swish"))
    torch_diff.assert_same_error(lambda t: t.nn.init.calculate_gain("leaky_relu", "x"))
    torch_diff.assert_same_error(lambda t: t.nn.init.xavier_normal_(t.empty(5)))
    torch_diff.assert_same_error(lambda t: t.nn.init.kaiming_normal_(t.empty(2, 2), mode="fan"))
    torch_diff.assert_same_error(lambda t: t.nn.init.eye_(t.empty(2, 2, 2)))
    torch_diff.assert_same_error(lambda t: t.nn.init.orthogonal_(t.empty(2)))
    torch_diff.assert_same_error(lambda t: t.nn.init.dirac_(t.empty(2, 2)))
    torch_diff.assert_same_error(lambda t: t.nn.init.dirac_(t.empty(3, 2, 2), groups=2))


def test_init_deprecated_names_warn() -> None:
    with pytest.warns(FutureWarning, match=r"`nn.init.xavier_uniform` is now deprecated in favor of "
                                           r"`nn.init.xavier_uniform_`."):
        w = init.xavier_uniform(torch.empty(3, 3))
    assert w.shape == (3, 3)


CLIP_PROGRAM = """
import math
import torch
from torch import nn
for norm_type in [2.0, 1, 3.5, math.inf, "inf"]:
    ps = [nn.Parameter(torch.zeros(2, 2)), nn.Parameter(torch.zeros(3)), nn.Parameter(torch.zeros(1))]
    ps[0].grad = torch.tensor([[1.5, -2.0], [0.25, 3.0]]); ps[1].grad = torch.tensor([-1.0, 0.5, 4.0])
    total = nn.utils.clip_grad_norm_(ps, 2.0, norm_type=norm_type)
    print(norm_type, total, ps[0].grad, ps[1].grad, ps[2].grad)
p = nn.Parameter(torch.zeros(3, dtype=torch.float64)); p.grad = torch.tensor([3.0, 4.0, 0.0], dtype=torch.float64)
print(nn.utils.clip_grad_norm_(p, 100.0), p.grad)
print(nn.utils.clip_grad_norm_([nn.Parameter(torch.ones(2))], 1.0))
ps = [nn.Parameter(torch.zeros(4))]; ps[0].grad = torch.tensor([-3.0, 0.1, 2.0, -0.2])
print(nn.utils.clip_grad_value_(ps, 0.5), ps[0].grad)
m = nn.Linear(2, 2)
with torch.no_grad():
    m.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]])); m.bias.fill_(-1.0)
v = nn.utils.parameters_to_vector(m.parameters())
print(v)
nn.utils.vector_to_parameters(v * 2, m.parameters())
print(m.weight, m.bias)
"""


def test_clip_grad_matches_pytorch(torch_diff: Any) -> None:
    torch_diff.assert_same_output(CLIP_PROGRAM)


def test_clip_grad_error_matches_pytorch(torch_diff: Any) -> None:
    def call(t: Any) -> Any:
        p = t.nn.Parameter(t.zeros(2))
        p.grad = t.tensor([math.inf, 1.0])
        return t.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)

    torch_diff.assert_same_error(call)


STATE_PROGRAM = """
import io
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.seq = nn.Sequential(nn.Linear(2, 1), nn.ReLU())
        self.register_buffer("mean", torch.zeros(2))
        self.register_buffer("tmp", torch.ones(1), persistent=False)
        self.scale = nn.Parameter(torch.ones(1))
net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) + i)
sd = net.state_dict()
print(type(sd).__name__, list(sd))
for k, v in sd.items():
    print(k, v, v.requires_grad, type(v).__name__)
print(net.state_dict(keep_vars=True)["scale"])
other = Net()
print(other.load_state_dict(sd))
print(other.fc.weight, other.mean)
sd2 = dict(sd); del sd2["mean"]; sd2["bogus"] = torch.zeros(1)
r = other.load_state_dict(sd2, strict=False)
print(r, r.missing_keys, r.unexpected_keys, r == (["mean"], ["bogus"]))
buf = io.BytesIO()
torch.save({"model": net.state_dict(), "epoch": 3, "t": torch.tensor([1, 2])}, buf)
buf.seek(0)
ck = torch.load(buf)
print(sorted(ck), ck["epoch"], ck["t"], list(ck["model"]))
print(ck["model"]["seq.0.weight"])
buf = io.BytesIO()
torch.save(torch.ones(2, 2, requires_grad=True), buf)
buf.seek(0)
print(torch.load(buf, weights_only=True))
buf = io.BytesIO(); torch.save(net.seq, buf); buf.seek(0)
m = torch.load(buf, weights_only=False)
print(m, m[0].weight)
"""


def test_state_dict_save_load_match_pytorch(torch_diff: Any) -> None:
    torch_diff.assert_same_output(STATE_PROGRAM)


def test_load_state_dict_errors_match_pytorch(torch_diff: Any) -> None:
    def missing(t: Any) -> Any:
        m = t.nn.Sequential(t.nn.Linear(2, 2))
        return m.load_state_dict({"0.weight": t.zeros(2, 2), "x": t.zeros(1)})

    def shape(t: Any) -> Any:
        m = t.nn.Sequential(t.nn.Linear(2, 2))
        return m.load_state_dict({"0.weight": t.zeros(3, 2), "0.bias": t.zeros(2)})

    def not_dict(t: Any) -> Any:
        return t.nn.Linear(1, 1).load_state_dict([1, 2])

    for call in (missing, shape, not_dict):
        torch_diff.assert_same_error(call)


def test_weights_only_refusal_matches_pytorch_type(real_torch: Any) -> None:
    for lib in (real_torch, torch):
        buf = io.BytesIO()
        lib.save(lib.nn.Linear(2, 2), buf)
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"), warnings.catch_warnings():
            lib.load(buf)
