"""autograd.grad / autograd.backward with arguments that are not tensors:
PyTorch 2.13's error types and texts (recorded here, and compared with
torch when it is importable)."""

from __future__ import annotations

from typing import Any

import pytest

import tapegrad.torch as tt

INPUTS_MSG = "all inputs have to be Tensors or GradientEdges, but got {}"
CASES: list[tuple[str, dict[str, Any], type, str]] = [
    ("grad", dict(inputs=[0, 2.0]), RuntimeError, INPUTS_MSG.format("float")),
    ("grad", dict(inputs=(0, 3)), RuntimeError, INPUTS_MSG.format("int")),
    ("grad", dict(inputs=[None]), RuntimeError, INPUTS_MSG.format("NoneType")),
    ("grad", dict(inputs=1.0), TypeError, "'float' object is not iterable"),
    ("grad", dict(inputs=0, grad_outputs=[1.0]), TypeError, "gradients can be either Tensors or None, but got float"),
    ("grad", dict(inputs=0, grad_outputs=1.0), TypeError, "'float' object is not iterable"),
    ("grad", dict(outputs=[1, 1.0], inputs=0), AssertionError, "Expected output to be a torch.Tensor"),
    ("backward", dict(inputs=[2.0]), RuntimeError, INPUTS_MSG.format("float")),
    ("backward", dict(inputs=2.0), TypeError, "'float' object is not iterable"),
    ("backward", dict(grad_tensors=[2.0]), TypeError, "gradients can be either Tensors or None, but got float"),
    ("backward", dict(grad_tensors=2.0), TypeError, "'float' object is not iterable"),
]


def _call(lib: Any, fn: str, kw: dict[str, Any]) -> None:
    x = lib.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    ref = {0: x, 1: y}

    def sub(v: Any) -> Any:  # 0 and 1 in CASES stand for x and y
        if isinstance(v, list):
            return [sub(a) for a in v]
        if isinstance(v, tuple):
            return tuple(sub(a) for a in v)
        return ref[v] if type(v) is int and v in ref else v

    kw = {k: sub(v) for k, v in kw.items()}
    if fn == "grad":
        kw.setdefault("outputs", y)
        lib.autograd.grad(**kw)
    else:
        lib.autograd.backward(y, **kw)


@pytest.mark.parametrize("fn, kw, exc, msg", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_non_tensor_arguments_raise_as_pytorch(fn: str, kw: dict[str, Any], exc: type, msg: str) -> None:
    with pytest.raises(exc) as info:
        _call(tt, fn, kw)
    assert str(info.value) == msg
    if type(info.value) is not exc:
        pytest.fail(f"{type(info.value).__name__} raised, {exc.__name__} expected")


@pytest.mark.parametrize("fn, kw, exc, msg", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_recorded_errors_are_torchs(fn: str, kw: dict[str, Any], exc: type, msg: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as info:
        _call(torch, fn, kw)
    assert type(info.value) is exc and str(info.value) == msg
