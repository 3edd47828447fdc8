"""tapegrad.torch.optim's AdamW, RMSprop, Adagrad and lr_scheduler, and
tapegrad.torch.utils.data: by hand always, and against PyTorch where it is
installed (same starting parameters, several steps, float64 to 1e-12; the
schedulers' lrs over 20 steps, exactly; the loaders' batches)."""

from __future__ import annotations

import math
import pickle
import warnings
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
from tapegrad.torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

Pair = namedtuple("Pair", "a b")


# --- optimizers ------------------------------------------------------------------------------------

def _train(mod: Any, cls: str, kw: dict[str, Any], groups: bool = False, steps: int = 6) -> tuple[list[Any], Any]:
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    data = [rng.standard_normal((5, 3)) for _ in range(steps)]
    ps = [mod.tensor(a.copy(), requires_grad=True) for a in inits]
    params: Any = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}] if groups else ps
    opt = getattr(mod.optim, cls)(params, **kw)
    for x in data:
        opt.zero_grad()
        (mod.tanh(mod.tensor(x) @ ps[0]) + ps[1]).pow(2).sum().backward()
        opt.step()
    return [p.detach().numpy() for p in ps], opt


OPT_CASES = [
    ("AdamW", {}), ("AdamW", {"amsgrad": True, "lr": 0.1, "weight_decay": 0.1}), ("AdamW", {"maximize": True}),
    ("RMSprop", {}), ("RMSprop", {"momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"alpha": 0.3, "centered": True}), ("RMSprop", {"momentum": 0.5, "maximize": True}),
    ("Adagrad", {}), ("Adagrad", {"maximize": True}),
    ("Adagrad", {"lr_decay": 0.1, "weight_decay": 0.2, "initial_accumulator_value": 0.3, "eps": 1e-6}),
]


@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("cls,kw", OPT_CASES)
def test_optimizers_match_pytorch(real_torch: Any, cls: str, kw: dict[str, Any], groups: bool) -> None:
    ours, opt = _train(torch, cls, kw, groups)
    theirs, ropt = _train(real_torch, cls, kw, groups)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert repr(opt) == repr(ropt)
    sd, rsd = opt.state_dict(), ropt.state_dict()
    assert sd["param_groups"] == rsd["param_groups"]
    assert sd["state"].keys() == rsd["state"].keys()
    for k, st in rsd["state"].items():
        assert sd["state"][k].keys() == st.keys()
        for name, v in st.items():
            np.testing.assert_allclose(sd["state"][k][name].numpy(), v.numpy(), rtol=0, atol=1e-12)


def test_optimizer_defaults() -> None:
    p = torch.zeros(2, requires_grad=True)
    assert torch.optim.AdamW([p]).defaults["weight_decay"] == 1e-2
    assert torch.optim.AdamW([p]).defaults["decoupled_weight_decay"] is True
    r = torch.optim.RMSprop([p]).defaults
    assert (r["lr"], r["alpha"], r["eps"], r["momentum"], r["centered"]) == (1e-2, 0.99, 1e-8, 0, False)
    a = torch.optim.Adagrad([p]).defaults
    assert (a["lr"], a["lr_decay"], a["eps"], a["initial_accumulator_value"]) == (1e-2, 0, 1e-10, 0)
    with pytest.raises(ValueError, match="Invalid alpha value"):
        torch.optim.RMSprop([p], alpha=-1)
    with pytest.raises(ValueError, match="Invalid lr_decay value"):
        torch.optim.Adagrad([p], lr_decay=-1)


def test_rmsprop_and_adagrad_by_hand() -> None:
    p = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.RMSprop([p], lr=0.1, alpha=0.9)
    (p * p).sum().backward()  # g = 2p
    opt.step()
    g = np.array([2.0, -4.0])
    v = 0.1 * g * g
    np.testing.assert_allclose(p.detach().numpy(), np.array([1.0, -2.0]) - 0.1 * g / (np.sqrt(v) + 1e-8))
    q = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    ada = torch.optim.Adagrad([q], lr=0.5, lr_decay=1.0, initial_accumulator_value=1.0)
    assert ada.state_dict()["state"][0]["sum"].tolist() == [1.0]  # made at construction, as PyTorch
    for _ in range(2):
        ada.zero_grad()
        q.sum().backward()
        ada.step()
    # step 1: 3 - 0.5 * 1/sqrt(2); step 2: clr = 0.5 / 2, sum = 3
    want = 3 - 0.5 / (math.sqrt(2) + 1e-10) - 0.25 / (math.sqrt(3) + 1e-10)
    assert abs(q.item() - want) < 1e-12


def test_adamw_decay_is_decoupled() -> None:
    # zero gradient: Adam's update is 0, only the decay moves the parameter
    p = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.AdamW([p], lr=0.1, weight_decay=0.5)
    (p * 0).sum().backward()
    opt.step()
    assert abs(p.item() - 2.0 * (1 - 0.05)) < 1e-15


def test_zero_grad_sets_none_by_default_and_state_dict_roundtrip() -> None:
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.RMSprop([p], momentum=0.9, centered=True)
    p.sum().backward()
    opt.step()
    opt.zero_grad()
    assert p.grad is None
    p.sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    q = torch.tensor([1.0, 2.0], requires_grad=True)
    opt2 = torch.optim.RMSprop([q], momentum=0.9, centered=True)
    opt2.load_state_dict(pickle.loads(pickle.dumps(opt.state_dict())))
    assert set(opt2.state[q]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}


# --- learning-rate schedulers ------------------------------------------------------------------------

def _schedule(mod: Any, name: str, kw: dict[str, Any], epoch_arg: bool) -> Any:
    p, q = mod.zeros(2, requires_grad=True), mod.zeros(1, requires_grad=True)
    opt = mod.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1)
    sched = getattr(mod.optim.lr_scheduler, name)(opt, **kw)
    out = [sched.get_last_lr()]
    for i in range(20):
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step(i + 1) if epoch_arg else sched.step()
        out.append(sched.get_last_lr() + [g["lr"] for g in opt.param_groups])
    return out, sched.last_epoch


SCHED_CASES = [
    ("StepLR", {"step_size": 3}), ("StepLR", {"step_size": 4, "gamma": 0.7}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 11], "gamma": 0.5}),
    ("ExponentialLR", {"gamma": 0.9}), ("CosineAnnealingLR", {"T_max": 7}),
    ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01}),
    ("LambdaLR", {"lr_lambda": lambda e: 1 / (e + 1)}),
    ("LambdaLR", {"lr_lambda": [lambda e: 0.9**e, lambda e: e % 3]}),
]


@pytest.mark.parametrize("epoch_arg", [False, True])
@pytest.mark.parametrize("name,kw", SCHED_CASES)
def test_schedulers_match_pytorch(real_torch: Any, name: str, kw: dict[str, Any], epoch_arg: bool) -> None:
    assert _schedule(torch, name, kw, epoch_arg) == _schedule(real_torch, name, kw, epoch_arg)


def test_schedulers_by_hand() -> None:
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    assert opt.param_groups[0]["initial_lr"] == 1.0 and sched.last_epoch == 0
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [1.0, 0.5, 0.5, 0.25, 0.25]
    opt2 = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=4)
    vals = []
    for _ in range(4):
        opt2.step()
        cos.step()
        vals.append(cos.get_last_lr()[0])
    np.testing.assert_allclose(vals, [1 + math.cos(math.pi * t / 4) for t in range(1, 5)], atol=1e-15)
    sd = cos.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4


def test_scheduler_warnings_and_errors() -> None:
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=1.0)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    with pytest.raises(KeyError, match="initial_lr"):
        torch.optim.lr_scheduler.StepLR(torch.optim.SGD([p]), step_size=1, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        torch.optim.lr_scheduler.StepLR(object(), step_size=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        torch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])


# --- torch.utils.data ----------------------------------------------------------------------------------

def _show(x: Any) -> Any:
    if hasattr(x, "dtype") and hasattr(x, "tolist") and not isinstance(x, np.ndarray):
        return (str(x.dtype), tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return {k: _show(v) for k, v in x.items()}
    if isinstance(x, Pair):
        return ("Pair", *(_show(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_show(v) for v in x])
    return x


def _loaders(m: Any) -> list[Any]:
    x, y = m.arange(24.0).reshape(12, 2), m.arange(12)
    ds = m.utils.data.TensorDataset(x, y)

    class Mixed(m.utils.data.Dataset):  # type: ignore[name-defined,misc]
        def __len__(self) -> int:
            return 5

        def __getitem__(self, i: int) -> Any:
            return {"a": np.full((2,), i, np.float32), "b": float(i), "c": i, "s": f"s{i}",
                    "t": (i, [True, False]), "p": Pair(np.int32(i), 1.5)}

    out = []
    for kw in [{}, {"batch_size": 5}, {"batch_size": 5, "drop_last": True}, {"batch_size": None}]:
        loader = m.utils.data.DataLoader(ds, **kw)
        out.append((len(loader), [_show(b) for b in loader]))
    for kw in [{"batch_size": 2}, {"batch_size": None}]:
        loader = m.utils.data.DataLoader(Mixed(), **kw)
        out.append((len(loader), [_show(b) for b in loader]))
    out.append(_show(m.utils.data.default_collate([[1, 2], [3, 4]])))
    out.append(_show(m.utils.data.default_collate([np.float64(1), np.float64(2)])))
    for n, lengths in [(10, [0.33, 0.33, 0.34]), (11, [0.5, 0.5]), (10, [3, 7]), (7, [0.1, 0.9])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append([len(s) for s in m.utils.data.random_split(range(n), lengths)])
    return out


def test_dataloader_matches_pytorch(real_torch: Any) -> None:
    for ours, theirs in zip(_loaders(torch), _loaders(real_torch), strict=True):
        assert ours == theirs


def test_dataloader_batches_by_hand() -> None:
    x, y = torch.arange(20.0).reshape(10, 2), torch.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    loader = DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert isinstance(batches[0], list) and batches[2][1].tolist() == [8, 9]
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert default_collate([1.0, 2.0]).dtype == torch.float64
    assert default_collate([1, 2]).dtype == torch.int64
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([{"k": np.zeros(3)}, {"k": np.ones(3)}])["k"].shape == torch.Size([2, 3])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object()])
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(torch.zeros(3), torch.zeros(4))


def test_dataloader_shuffle_is_a_seeded_permutation() -> None:
    ds = TensorDataset(torch.arange(37))

    def epoch(loader: DataLoader) -> list[int]:
        return [i for (b,) in loader for i in b.tolist()]

    torch.manual_seed(0)
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    e1, e2 = epoch(loader), epoch(loader)
    assert sorted(e1) == list(range(37)) and sorted(e2) == list(range(37))
    assert e1 != list(range(37)) and e1 != e2  # a new order each pass
    assert [len(b) for (b,) in loader] == [8, 8, 8, 8, 5]
    torch.manual_seed(0)
    again = DataLoader(ds, batch_size=8, shuffle=True)
    assert epoch(again) == e1 and epoch(again) == e2
    dropped = epoch(DataLoader(ds, batch_size=8, shuffle=True, drop_last=True))
    assert len(dropped) == 32 and len(set(dropped)) == 32


def test_random_split_and_subset() -> None:
    torch.manual_seed(1)
    a, b = random_split(range(10), [0.7, 0.3])
    assert (len(a), len(b)) == (7, 3)
    assert sorted(list(a) + list(b)) == list(range(10))
    torch.manual_seed(1)
    a2, _ = random_split(range(10), [7, 3])
    assert list(a2) == list(a)
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.1, 0.1, 0.8])
    sub = Subset(TensorDataset(torch.arange(5) * 10), [4, 0])
    assert len(sub) == 2 and sub[0][0].item() == 40
    assert [b.tolist() for (b,) in DataLoader(sub, batch_size=2)] == [[40, 0]]


def test_samplers_iterable_dataset_and_concat() -> None:
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2
    torch.manual_seed(3)
    drawn = list(RandomSampler(range(4), replacement=True, num_samples=9))
    assert len(drawn) == 9 and all(0 <= i < 4 for i in drawn)
    loader = DataLoader(range(6), batch_sampler=[[5, 0], [2]])
    assert [b.tolist() for b in loader] == [[5, 0], [2]] and len(loader) == 2
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(range(6), batch_sampler=[[0]], batch_size=2)

    class Stream(IterableDataset):
        def __iter__(self) -> Any:
            return iter(range(5))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)
    both = ConcatDataset([range(3), range(10, 12)])
    assert len(both) == 5 and both[3] == 10 and both[-1] == 11

    class Squares(Dataset):
        def __len__(self) -> int:
            return 3

        def __getitem__(self, i: int) -> int:
            return i * i

    assert list(Squares() + Squares()) == [0, 1, 4, 0, 1, 4]


def test_training_loop_with_loader_and_scheduler() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=30)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    for _ in range(30):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
        sched.step()
    assert torch.nn.functional.mse_loss(model(x), y).item() < 1e-2


def test_missing_names_say_tapegrad_does_not_provide_them() -> None:
    for mod, name, full in [(torch.optim, "LBFGS", "torch.optim.LBFGS"),
                            (torch.optim.lr_scheduler, "CyclicLR", "torch.optim.lr_scheduler.CyclicLR"),
                            (torch.utils.data, "WeightedRandomSampler", "torch.utils.data.WeightedRandomSampler")]:
        with pytest.raises(AttributeError, match=f"tapegrad.torch does not provide {full}"):
            getattr(mod, name)
    assert not hasattr(torch.optim, "__wrapped__")
