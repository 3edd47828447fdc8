"""Ordinary PyTorch programs (tests/programs/*.py, written with ``import torch``)
print the same under tapegrad.torch as under PyTorch (SPEC section 6).

Each program runs with every ``torch...`` module name bound to the matching
``tapegrad.torch...`` module (the docs' run_on_tapegrad recipe) and its output,
object addresses masked, is compared with what real PyTorch prints (when it is
installed) and with ``tests/programs/NAME.out``, recorded from PyTorch (always).
Regenerate an ``.out`` file with ``python tests/test_torch_programs.py NAME``
under real PyTorch.
"""

from __future__ import annotations

import io
import re
import sys
import warnings
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import torch_is_the_facade

import tapegrad.torch as tt

HERE = Path(__file__).parent / "programs"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py"))


def run_program(name: str, on_facade: bool) -> str:
    """Run ``programs/NAME.py`` as ``__main__`` (on the facade, or on the real
    ``torch`` when ``on_facade`` is false); return its output, object
    addresses masked."""
    src = (HERE / f"{name}.py").read_text()
    buf = io.StringIO()
    try:
        with torch_is_the_facade() if on_facade else nullcontext(), redirect_stdout(buf), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(src, str(HERE / f"{name}.py"), "exec"), {"__name__": "__main__"})
    finally:
        real = sys.modules.get("torch")
        if real is not None and real is not tt:
            real.set_printoptions(profile="default")
        tt.set_printoptions(profile="default")
    return re.sub(r"0x[0-9a-f]+", "0x?", buf.getvalue())


def _diff(got: str, want: str) -> str:
    """The first differing line of two outputs, for the failure message."""
    g, w = got.splitlines(), want.splitlines()
    for i, (a, b) in enumerate(zip(g, w)):
        if a != b:
            return f"line {i + 1}:\n  facade: {a}\n  torch:  {b}"
    return f"facade printed {len(g)} lines, torch {len(w)}"


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_recorded_output(name: str) -> None:
    """The facade prints exactly what PyTorch printed (recorded in NAME.out)."""
    want = (HERE / f"{name}.out").read_text()
    got = run_program(name, on_facade=True)
    assert got == want, _diff(got, want)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_pytorch(name: str) -> None:
    """Under the installed PyTorch the program prints its recorded output, and
    the facade prints the same."""
    pytest.importorskip("torch")
    want = run_program(name, on_facade=False)
    recorded = (HERE / f"{name}.out").read_text()
    assert want == recorded, "recorded output is stale: " + _diff(want, recorded)
    got = run_program(name, on_facade=True)
    assert got == want, _diff(got, want)


def test_every_program_has_recorded_output() -> None:
    """Each program comes with its expected output, and there are enough of them."""
    assert len(PROGRAMS) >= 12
    for name in PROGRAMS:
        assert (HERE / f"{name}.out").is_file(), name


# --- facade fixes the programs needed, checked against PyTorch -----------------------------------


@pytest.mark.parametrize("call", [
    lambda t: t.bincount(t.tensor([0, 1, 1, 4])),
    lambda t: t.bincount(t.tensor([0, 1, 1, 4]), minlength=7),
    lambda t: t.bincount(t.tensor([], dtype=t.int64)),
    lambda t: t.tensor([2, 2, 0], dtype=t.uint8).bincount(),
    lambda t: t.bincount(t.tensor([0, 1, 1, 4]), weights=t.tensor([0.5, 1.0, 1.0, 2.0])),
    lambda t: t.bincount(t.tensor([0, 1, 1]), weights=t.tensor([1.0, 2.0, 3.0], dtype=t.float64)),
    lambda t: t.bincount(t.tensor([0, 1, 1]), weights=t.tensor([1, 2, 3])),
])
def test_bincount_as_pytorch(call: Any, real_torch: Any) -> None:
    """torch.bincount / Tensor.bincount: counts, minlength, weights' dtype."""
    got, want = call(tt), call(real_torch)
    assert str(got.dtype) == str(want.dtype)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("call", [
    lambda t: t.bincount(t.tensor([-1, 2])),
    lambda t: t.bincount(t.tensor([[1]])),
    lambda t: t.bincount(t.tensor([1.0])),
    lambda t: t.bincount(t.tensor([1, 2]), weights=t.tensor([1.0])),
])
def test_bincount_errors_as_pytorch(call: Any, torch_diff: Any) -> None:
    """bincount's errors: negative, 2-d, float input; weights of another length."""
    torch_diff.assert_same_error(call)


def _sgd(t: Any) -> Any:
    return t.optim.SGD([t.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("call", [
    lambda t: t.optim.lr_scheduler.ReduceLROnPlateau(_sgd(t), factor=1.0),
    lambda t: t.optim.lr_scheduler.ReduceLROnPlateau(_sgd(t), mode="up"),
    lambda t: t.optim.lr_scheduler.ReduceLROnPlateau(_sgd(t), threshold_mode="pct"),
    lambda t: t.optim.lr_scheduler.ReduceLROnPlateau(_sgd(t), min_lr=[0.1, 0.2]),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=1.0),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=1.0, total_steps=0),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=1.0, epochs=0, steps_per_epoch=3),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=1.0, total_steps=5, pct_start=1.5),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=1.0, total_steps=5, anneal_strategy="exp"),
    lambda t: t.optim.lr_scheduler.OneCycleLR(_sgd(t), max_lr=[1.0, 2.0], total_steps=5),
    lambda t: t.optim.lr_scheduler.OneCycleLR(t.optim.Adagrad([t.zeros(1, requires_grad=True)]), 1.0, 5),
])
def test_scheduler_errors_as_pytorch(call: Any, torch_diff: Any) -> None:
    """ReduceLROnPlateau's and OneCycleLR's argument errors are PyTorch's."""
    torch_diff.assert_same_error(call)


def test_one_cycle_lr_per_group_and_closed_lists(real_torch: Any) -> None:
    """OneCycleLR with a max_lr per group and cycle_momentum off: the lrs of
    every step are PyTorch's, float for float."""
    def lrs(t: Any) -> list[list[float]]:
        opt = t.optim.SGD([{"params": [t.zeros(1, requires_grad=True)]},
                           {"params": [t.zeros(1, requires_grad=True)], "lr": 0.5}], lr=0.1)
        sched = t.optim.lr_scheduler.OneCycleLR(opt, max_lr=[1.0, 0.3], total_steps=7, cycle_momentum=False,
                                                div_factor=10.0, final_div_factor=100.0)
        out = [sched.get_last_lr()]
        for _ in range(7):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr())
        return out
    assert lrs(tt) == lrs(real_torch)


def _bag(t: Any, idx: Any, offsets: Any = None, **kw: Any) -> Any:
    w = t.arange(15.0).reshape(5, 3)
    return t.nn.functional.embedding_bag(t.tensor(idx), w, None if offsets is None else t.tensor(offsets), **kw)


@pytest.mark.parametrize("call", [
    lambda t: _bag(t, [0, 1]),
    lambda t: _bag(t, [[0, 1]], [0]),
    lambda t: _bag(t, [0, 1], [0], per_sample_weights=t.ones(2)),
    lambda t: _bag(t, [0, 7], [0], mode="sum"),
    lambda t: _bag(t, [0, 1], [0], mode="avg"),
    lambda t: _bag(t, [0, 1], [0], mode="sum", per_sample_weights=t.ones(3)),
    lambda t: _bag(t, [0.0, 1.0], [0], mode="sum"),
    lambda t: _bag(t, [0, 1], [1], mode="sum"),
])
def test_embedding_bag_errors_as_pytorch(call: Any, torch_diff: Any) -> None:
    """F.embedding_bag's argument errors are PyTorch's, word for word."""
    torch_diff.assert_same_error(call)


@pytest.mark.parametrize("call", [
    lambda t: _bag(t, [0, 1, 2], [0, 0, 3], mode="max"),
    lambda t: _bag(t, [0, 1, 2], [0, 0, 3], mode="mean"),
    lambda t: _bag(t, [0, 1, 2], [0, 2, 3], include_last_offset=True),
    lambda t: _bag(t, [0, 1, 0], [0, 1], padding_idx=0),
    lambda t: _bag(t, [[0, 1, 0], [4, 4, 4]], padding_idx=-5, mode="max"),
    lambda t: t.nn.EmbeddingBag(5, 3, mode="max", padding_idx=0, max_norm=1.0),
    lambda t: t.nn.EmbeddingBag.from_pretrained(t.ones(2, 2), freeze=False, mode="sum").weight.requires_grad,
])
def test_embedding_bag_edge_cases_as_pytorch(call: Any, real_torch: Any) -> None:
    """Empty bags give zeros, padding entries leave the bag (and the mean),
    include_last_offset closes the last bag; the module's repr."""
    got, want = call(tt), call(real_torch)
    assert repr(got).replace("tapegrad.", "") == repr(want)


def test_circular_pad_values_and_gradient_as_pytorch(real_torch: Any) -> None:
    """F.pad(mode="circular"): values and gradient are PyTorch's; its grad_fn is
    named CopySlices as PyTorch's, the nodes below differ (no op-table row)."""
    def run(t: Any) -> tuple[Any, Any, str]:
        x = t.arange(24.0).reshape(1, 2, 3, 4).requires_grad_()
        y = t.nn.functional.pad(x, (1, 2, 2, 1), mode="circular")
        (y * t.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__
    (y1, g1, n1), (y2, g2, n2) = run(tt), run(real_torch)
    assert n1 == n2
    assert (y1 == y2).all() and (g1 == g2).all()


@pytest.mark.parametrize("call", [
    lambda t: t.nn.functional.interpolate(t.ones(1, 1, 4)),
    lambda t: t.nn.functional.interpolate(t.ones(1, 1, 4), size=3, scale_factor=2),
    lambda t: t.nn.functional.interpolate(t.ones(1, 1, 4), size=3, align_corners=True),
    lambda t: t.nn.functional.interpolate(t.ones(1, 1, 4), size=3, mode="bilinear"),
    lambda t: t.nn.functional.interpolate(t.ones(1, 1, 4, 4), size=3, mode="linear"),
    lambda t: t.nn.functional.pixel_shuffle(t.ones(2, 2), 2),
    lambda t: t.nn.functional.pixel_shuffle(t.ones(1, 5, 2, 2), 2),
    lambda t: t.nn.functional.pixel_unshuffle(t.ones(1, 1, 3, 4), 2),
    lambda t: t.nn.functional.pixel_unshuffle(t.ones(1, 1, 4, 3), 2),
    lambda t: t.nn.functional.pad(t.ones(2, 2), (1, 1, 1)),
    lambda t: t.nn.functional.pad(t.ones(2), (1, 1, 1, 1)),
    lambda t: t.nn.functional.pad(t.ones(1, 2, 2, 2), (1, 1), mode="reflect"),
    lambda t: t.nn.functional.pad(t.ones(1, 2, 3), (3, 3), mode="reflect"),
    lambda t: t.nn.functional.pad(t.ones(1, 2, 3), (1, 1), mode="wrap"),
    lambda t: t.nn.functional.pad(t.ones(1, 2, 3), (-2, -2)),
    lambda t: t.nn.functional.pad(t.ones(1, 2, 3), (-5, 1)),
    lambda t: t.nn.functional.affine_grid(t.zeros(2, 2, 3), (3, 1, 2, 2)),
    lambda t: t.nn.functional.affine_grid(t.zeros(2, 3, 3), (2, 1, 2, 2)),
    lambda t: t.nn.functional.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 2, 2, 2), mode="area"),
    lambda t: t.nn.functional.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 2, 2, 2), padding_mode="edge"),
    lambda t: t.nn.functional.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(2, 2, 2, 2)),
    lambda t: t.nn.functional.grid_sample(t.zeros(1, 1, 2, 2), t.zeros(1, 2, 2, 3)),
])
def test_resampling_errors_as_pytorch(call: Any, torch_diff: Any) -> None:
    """interpolate's, pixel_(un)shuffle's and pad's argument errors are PyTorch's."""
    torch_diff.assert_same_error(call)


@pytest.mark.parametrize("call", [
    lambda t: t.nn.Upsample(scale_factor=(2, 3)),
    lambda t: t.nn.Upsample(size=4),
    lambda t: t.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
    lambda t: t.nn.UpsamplingNearest2d(scale_factor=2),
    lambda t: t.nn.UpsamplingBilinear2d(size=(2, 2)),
    lambda t: t.nn.PixelUnshuffle(3),
    lambda t: t.nn.ZeroPad2d(1),
    lambda t: t.nn.ZeroPad2d((1, 2, 0, 1))(t.ones(1, 2, 2)),
    lambda t: t.nn.ConstantPad1d(2, 3.5)(t.ones(1, 2)),
    lambda t: t.nn.ConstantPad2d((1, 0, 1, 0), 1),
    lambda t: t.nn.ReflectionPad1d(2)(t.arange(4.0).reshape(1, 4)),
    lambda t: t.nn.ReflectionPad2d((1, 1, 2, 0)),
    lambda t: t.nn.ReplicationPad2d(1)(t.arange(4.0).reshape(1, 2, 2)),
    lambda t: t.nn.CircularPad1d(1)(t.arange(3.0).reshape(1, 3)),
    lambda t: t.nn.functional.pad(t.arange(3.0).reshape(1, 1, 3), (-3, 1)),
    lambda t: t.nn.functional.interpolate(t.arange(4.0).reshape(1, 1, 4), scale_factor=1.7),
    lambda t: t.nn.functional.interpolate(t.arange(4.0).reshape(1, 1, 4), scale_factor=1.7,
                                          recompute_scale_factor=True),
    lambda t: t.nn.functional.interpolate(t.arange(6.0).reshape(1, 1, 6), scale_factor=0.5, mode="linear"),
    lambda t: t.nn.functional.interpolate(t.arange(4, dtype=t.float64).reshape(1, 1, 2, 2), size=(3, 1),
                                          mode="bilinear", align_corners=True),
])
def test_resampling_layers_as_pytorch(call: Any, real_torch: Any) -> None:
    """The resampling and padding layers' reprs and outputs are PyTorch's."""
    got, want = call(tt), call(real_torch)
    assert repr(got).replace("tapegrad.", "") == repr(want)


def _hooked_run(t: Any) -> list[Any]:
    """Full backward hooks (one replacing grad_input, one prepended), a forward
    hook replacing the output, a module with two tensor inputs (one without
    grad) and a module whose input needs no grad; what each hook saw."""
    seen: list[Any] = []

    class Two(t.nn.Module):
        def forward(self, a: Any, b: Any) -> Any:
            return a * b + b

    lin = t.nn.Linear(3, 2)
    with t.no_grad():
        lin.weight.copy_(t.linspace(-1, 1, 6).reshape(2, 3))
        lin.bias.fill_(0.5)
    two = Two()

    def record(tag: str) -> Any:
        def hook(m: Any, gi: Any, go: Any) -> Any:
            seen.append((tag, [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go]))
            return None
        return hook

    lin.register_full_backward_hook(record("lin"))
    two.register_full_backward_hook(record("two-a"))
    two.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10, gi[1]))
    two.register_full_backward_hook(record("two-first"), prepend=True)
    two.register_forward_hook(lambda m, args, out: out + 1)
    x = t.linspace(-1, 1, 6).reshape(2, 3)
    h = lin(x)
    y = two(h, t.tensor([2.0, 3.0]))
    seen.append(("grad_fn", type(y.grad_fn).__name__, type(h.grad_fn).__name__))
    (y * t.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    seen.append(("grads", lin.weight.grad.round(decimals=3).tolist(), lin.bias.grad.tolist()))  # (float32 sums)
    return seen


def test_module_hooks_as_pytorch(real_torch: Any) -> None:
    """Module.register_full_backward_hook / register_forward_hook: the hooks see
    PyTorch's grad_input and grad_output, in its order, and their replacements
    reach the parameters' gradients as in PyTorch."""
    got, want = _hooked_run(tt), _hooked_run(real_torch)
    assert got == want


@pytest.mark.parametrize("opts", [
    {"sci_mode": True}, {"sci_mode": False}, {"profile": "short"}, {"profile": "full", "precision": 2},
    {"precision": 1, "sci_mode": True},
])
def test_print_options_as_pytorch(opts: dict[str, Any], real_torch: Any) -> None:
    """set_printoptions: profiles, then options; sci_mode forced either way
    (integer-valued, mixed-magnitude and all-zero tensors)."""
    def reprs(t: Any) -> list[str]:
        t.set_printoptions(**opts)
        try:
            return [repr(x) for x in (t.tensor([1.0, 2.0, 3000.0]), t.tensor([1e-5, 1.0, 1e5]),
                                      t.zeros(3), t.arange(1500.0), t.tensor([[0.5, -1.25]]))]
        finally:
            t.set_printoptions(profile="default")
    assert reprs(tt) == reprs(real_torch)


if __name__ == "__main__":  # record NAME.out from real PyTorch
    for arg in sys.argv[1:] or PROGRAMS:
        (HERE / f"{arg}.out").write_text(run_program(arg, on_facade=False))
