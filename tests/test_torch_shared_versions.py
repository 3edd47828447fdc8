"""Shared data and versions, retain_grad across in-place ops, and the observers
of recording, as PyTorch 2.13 behaves.

Each case runs on the facade and, when PyTorch is installed, on PyTorch too;
the numbers PyTorch 2.13 gives are also written here, so the checks run
without it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as tgt


def _torch() -> Any:
    return pytest.importorskip("torch")


def _both(case: Callable[[Any], Any]) -> list[Any]:
    """``case`` on the facade, then on PyTorch when it is installed."""
    out = [case(tgt)]
    if importlib.util.find_spec("torch") is not None:
        out.append(case(importlib.import_module("torch")))
    return out


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


# --- retain_grad follows the tensor through in-place ops -------------------------------------


def _retain_then_sin_(t: Any) -> tuple[np.ndarray, np.ndarray]:
    x = t.tensor([0.1, 0.2], requires_grad=True)
    y = 3 * x
    y.retain_grad()
    y.sin_()
    (y * y).sum().backward()
    return _np(y.grad), _np(x.grad)


def test_retain_grad_is_the_gradient_of_the_current_version() -> None:
    for yg, xg in _both(_retain_then_sin_):
        np.testing.assert_allclose(yg, [0.591, 1.1293], atol=1e-4)  # 2 sin(3x): PyTorch 2.13
        np.testing.assert_allclose(xg, [1.6939, 2.7961], atol=1e-4)


def _retain_then_view_mul_(t: Any) -> tuple[np.ndarray, np.ndarray, str]:
    x = t.tensor([0.1, 0.2], requires_grad=True)
    y = 3 * x
    y.retain_grad()
    y.view(-1).mul_(3.0)
    (y * y).sum().backward()
    return _np(y.grad), _np(x.grad), y.grad_fn.name()


def test_retain_grad_through_a_view_written_in_place() -> None:
    for yg, xg, name in _both(_retain_then_view_mul_):
        np.testing.assert_allclose(yg, [1.8, 3.6], atol=1e-5)  # PyTorch 2.13 (not 3x that)
        np.testing.assert_allclose(xg, [16.2, 32.4], atol=1e-4)
        assert name == "torch::autograd::CopySlices"


def test_hooks_stay_on_the_version_they_were_registered_on() -> None:
    def case(t: Any) -> list[np.ndarray]:
        x = t.tensor([0.1, 0.2], requires_grad=True)
        y = 3 * x
        seen: list[np.ndarray] = []
        y.register_hook(lambda g: seen.append(_np(g)))
        y.retain_grad()
        y.sin_()
        (y * y).sum().backward()
        return seen + [_np(y.grad)]

    for seen in _both(case):
        np.testing.assert_allclose(seen[0], [0.5646, 0.932], atol=1e-4)  # d/d(3x): the old version
        np.testing.assert_allclose(seen[1], [0.591, 1.1293], atol=1e-4)


# --- detach() shares data and version --------------------------------------------------------


def test_detached_alias_sees_a_recorded_in_place_change() -> None:
    def case(t: Any) -> tuple[np.ndarray, int, int]:
        x = t.tensor([1.0, -2.0], requires_grad=True)
        y = x * 1
        d = y.detach()
        y.mul_(3)
        return _np(d), d._version, y._version

    for d, dv, yv in _both(case):
        np.testing.assert_array_equal(d, [3.0, -6.0])  # PyTorch 2.13
        assert (dv, yv) == (1, 1)


def test_in_place_change_of_a_detached_leaf_changes_the_leaf() -> None:
    def case(t: Any) -> tuple[Any, ...]:
        x = t.tensor([1.0, -2.0], requires_grad=True)
        d = x.detach()
        d.add_(x)
        return (_np(x), _np(d), x._version, d.requires_grad, d.grad_fn.name(), x.is_leaf, x.requires_grad)

    for x, d, ver, d_rg, d_fn, leaf, x_rg in _both(case):
        np.testing.assert_array_equal(x, [2.0, -4.0])  # PyTorch 2.13
        np.testing.assert_array_equal(d, [2.0, -4.0])
        assert (ver, d_rg, d_fn, leaf, x_rg) == (1, True, "AddBackward0", True, True)


def test_write_through_a_detached_alias_fails_the_saved_check() -> None:
    for t in (tgt, _torch()) if importlib.util.find_spec("torch") else (tgt,):
        x = t.tensor([1.0, -2.0], requires_grad=True)
        z = x.sin()
        x.detach().mul_(2)
        with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[2\]\] is at version 1; expected "
                                               r"version 0 instead"):
            z.sum().backward()


def test_detached_view_of_a_leaf_is_writable() -> None:
    def case(t: Any) -> np.ndarray:
        x = t.tensor([1.0, 2.0], requires_grad=True)
        x.detach().view(-1).add_(1.0)
        return _np(x)

    for x in _both(case):
        np.testing.assert_array_equal(x, [2.0, 3.0])


# --- zero_ / fill_ / copy_ on a non-leaf -----------------------------------------------------


@pytest.mark.parametrize("op", ["zero_", "fill_", "copy_"])
def test_overwriting_a_non_leaf_with_nan_and_inf(op: str) -> None:
    def case(t: Any) -> tuple[np.ndarray, np.ndarray, str]:
        x = t.tensor([1.0, 2.0], requires_grad=True)
        y = x * t.tensor([float("nan"), float("inf")])
        if op == "zero_":
            y.zero_()
        elif op == "fill_":
            y.fill_(5.0)
        else:
            y.copy_(t.tensor([4.0, 5.0]))
        name = y.grad_fn.name()
        y.sum().backward()
        return _np(y), _np(x.grad), name

    want = {"zero_": ([0.0, 0.0], "ZeroBackward0"), "fill_": ([5.0, 5.0], "FillBackward2"),
            "copy_": ([4.0, 5.0], "torch::autograd::CopyBackwards")}[op]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's nan * 0; PyTorch is silent)
        for y, xg, name in _both(case):
            np.testing.assert_array_equal(y, want[0])  # PyTorch 2.13: no NaN in the values
            np.testing.assert_array_equal(xg, [np.nan, np.nan])  # 0 * nan, 0 * inf in MulBackward0
            assert name == want[1]


# --- observers of recording: anomaly mode and saved_tensors_hooks together ----------------------


def _count_packs(t: Any, body: Callable[[Any, Any], Any]) -> int:
    n = [0]

    def pack(x: Any) -> Any:
        n[0] += 1
        return x

    x = t.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with t.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            body(t, x)
    return n[0]


def test_anomaly_mode_inside_saved_tensors_hooks() -> None:
    def inside(t: Any, x: Any) -> None:
        with t.autograd.detect_anomaly():
            x.sin() * x.exp()

    for n in _both(lambda t: _count_packs(t, inside)):
        assert n == 4  # PyTorch 2.13: sin saves x, exp its result, mul both


def test_toggling_anomaly_mode_leaves_saved_tensors_hooks_on() -> None:
    def toggle(t: Any, x: Any) -> None:
        t.autograd.set_detect_anomaly(True)
        t.autograd.set_detect_anomaly(False)
        x.sin() * x.exp()

    for n in _both(lambda t: _count_packs(t, toggle)):
        assert n == 4


def test_pack_hook_that_records_then_another_context() -> None:
    def case(t: Any) -> tuple[np.ndarray, int]:
        x = t.tensor([1.0, 2.0], requires_grad=True)
        with t.autograd.graph.saved_tensors_hooks(lambda p: p * 1, lambda p: p):
            x.sin()
        packed = [0]

        def pack(p: Any) -> Any:
            packed[0] += 1
            return p

        with t.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            y = x.cos()
        y.sum().backward()
        return _np(x.grad), packed[0]

    for g, n in _both(case):
        np.testing.assert_allclose(g, [-0.8415, -0.9093], atol=1e-4)  # PyTorch 2.13
        assert n == 1
