"""Anomaly mode names the node whose backward failed and shows the forward
call that made it, for every kind of node (plain, eager-view, multi-input
fused, custom Function, create_graph, hook errors) and for in-place version
errors, whose message then points at "the backtrace further above" as
PyTorch 2.13's does."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

import tapegrad.torch as tt

GOOD_LUCK = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
             "The variable in question was changed in there or anywhere later. Good luck!")


def case_version_exp(torch: Any, x: Any) -> None:
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def case_version_mse(torch: Any, x: Any) -> None:
    a = x * 1
    loss = torch.nn.functional.mse_loss(a, torch.ones(2))
    a.add_(1)
    loss.backward()


def case_version_addmm(torch: Any, x: Any) -> None:
    a = x.reshape(1, 2) * 1
    w = torch.ones(3, 2, requires_grad=True)
    loss = torch.nn.functional.linear(a, w, torch.zeros(3)).sum()
    a.mul_(2)
    loss.backward()


def case_version_square(torch: Any, x: Any) -> None:
    a = x * 2
    b = a * a
    a.mul_(3)
    b.sum().backward()


def case_custom_function(torch: Any, x: Any) -> None:
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, i: Any) -> Any:
            return i * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            raise ValueError("boom")

    Boom.apply(x).sum().backward()


def case_nan_create_graph(torch: Any, x: Any) -> None:
    y = (x * x).sqrt()
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    (g * 0).sqrt().sum().backward()


def case_hook_error(torch: Any, x: Any) -> None:
    y = x.tanh()
    y.register_hook(lambda g: 1 / 0)
    (y * 2).sum().backward()


CASES = {name: f for name, f in globals().items() if name.startswith("case_")}


def _run(torch: Any, f: Any) -> tuple[str, str, list[str]]:
    """The error (type, text) and the anomaly warnings, each as its first line
    plus the frames of this file (library frames dropped: PyTorch shows its own)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            with pytest.raises(Exception) as info:
                f(torch, x)
    texts = []
    for w in caught:
        msg = str(w.message)
        if not issubclass(w.category, UserWarning) or msg.startswith("Anomaly Detection has been enabled"):
            continue
        msg = re.sub(r" \(Triggered internally at [^)]*\)", "", msg).rstrip()
        lines = msg.splitlines()
        keep, take_next = [lines[0]], False
        for line in lines[1:]:
            if take_next:
                keep.append(line.strip())
            take_next = line.strip().startswith("File ") and __file__ in line
            if take_next:
                keep.append(line.strip().split(", ", 1)[1])  # "line N, in case_..."
        texts.append("\n".join(keep))
    return type(info.value).__name__, str(info.value), texts


@pytest.mark.parametrize("name", sorted(CASES))
def test_anomaly_warning_names_the_node_and_the_forward_line(name: str) -> None:
    kind, text, warned = _run(tt, CASES[name])
    assert len(warned) == 1, warned
    assert re.match(r"Error detected in \w+\. Traceback of forward call that caused the error:", warned[0])
    assert f"in {name}" in warned[0]  # the forward call inside the case function
    if name.startswith("case_version"):
        assert kind == "RuntimeError" and text.endswith(GOOD_LUCK)


@pytest.mark.parametrize("name", sorted(CASES))
def test_anomaly_error_and_warning_are_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    assert _run(tt, CASES[name]) == _run(torch, CASES[name])


def test_version_error_without_anomaly_mode_keeps_the_plain_hint() -> None:
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"Hint: enable anomaly detection to find the operation"):
        y.sum().backward()
