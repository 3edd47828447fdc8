"""Operands whose shapes do not fit raise PyTorch's RuntimeError, in its words
(checked against PyTorch when it is installed), with or without a graph."""

from __future__ import annotations

import re
from typing import Any

import pytest

import tapegrad.torch as torch

CASES: list[tuple[str, Any]] = [
    ("inconsistent tensor size, expected tensor [3] and src [2] to have the same number of elements, "
     "but got 3 and 2 elements respectively", lambda t, o: o(3) @ o(2)),
    ("size mismatch, got input (2), mat (2x5), vec (3)", lambda t, o: o(2, 5) @ o(3)),
    ("mat1 and mat2 shapes cannot be multiplied (1x5 and 3x4)", lambda t, o: o(5) @ o(3, 4)),
    ("mat1 and mat2 shapes cannot be multiplied (2x5 and 3x4)", lambda t, o: o(2, 5) @ o(3, 4)),
    ("mat1 and mat2 shapes cannot be multiplied (4x5 and 3x4)", lambda t, o: o(2, 2, 5) @ o(3, 4)),
    ("Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 3].",
     lambda t, o: o(2, 2, 5) @ o(2, 3, 4)),
    ("Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 3].",
     lambda t, o: o(2, 5) @ o(2, 3, 4)),
    ("size mismatch, got input (4), mat (4x5), vec (3)", lambda t, o: o(2, 2, 5) @ o(3)),
    ("mat1 and mat2 shapes cannot be multiplied (2x5 and 3x4)", lambda t, o: t.mm(o(2, 5), o(3, 4))),
    ("mat1 and mat2 shapes cannot be multiplied (2x5 and 3x4)", lambda t, o: o(4).addmm(o(2, 5), o(3, 4))),
    ("mat1 and mat2 shapes cannot be multiplied (28x5 and 3x2)",
     lambda t, o: t.nn.functional.linear(o(7, 4, 5), o(2, 3), o(2))),
    ("mat1 and mat2 shapes cannot be multiplied (4x5 and 3x2)", lambda t, o: t.nn.functional.linear(o(4, 5), o(2, 3))),
    ("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
     lambda t, o: o(2, 3) + o(4)),
    ("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 2",
     lambda t, o: o(2, 3) * o(2, 1, 4)),
    ("The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0",
     lambda t, o: o(5, 3) - o(4, 3)),
    ("The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0",
     lambda t, o: t.div(o(5, 3), o(4, 3))),
]


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "graph"])
@pytest.mark.parametrize("message, call", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_shape_errors(message: str, call: Any, grad: bool) -> None:
    def o(*shape: int) -> Any:
        return torch.ones(*shape, requires_grad=grad)

    with pytest.raises(RuntimeError, match=re.escape(message)):
        call(torch, o)


@pytest.mark.parametrize("message, call", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_shape_errors_are_pytorchs(message: str, call: Any) -> None:
    real = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call(real, real.ones)
