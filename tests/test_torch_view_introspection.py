"""What libraries built on PyTorch read off the facade (torchviz, version checks):
``torch.__version__``, ``Tensor._is_view()`` and ``Tensor._base``, as PyTorch 2.13
answers them."""

from __future__ import annotations

from typing import Any

import pytest

import tapegrad.torch as tt


def _cases(t: Any) -> list[tuple[str, Any, Any]]:
    """(what, tensor, its expected base): ``None`` for a tensor that is no view."""
    x = t.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.view(4)
    return [
        ("a leaf", x, None),
        ("a result", x * 1, None),
        ("view", y, x),
        ("a view of a view: the root", y[1:3], x),
        ("transpose", x.t(), x),
        ("expand", x[0].expand(3, 2), x),
        ("unbind", x.unbind()[1], x),
        ("detach: an alias, no view", x.detach(), None),
        ("reshape of a contiguous tensor", x.reshape(4), x),
    ]


def test_views_and_bases() -> None:
    for what, t, base in _cases(tt):
        assert t._is_view() is (base is not None), what
        assert t._base is base, what


def test_as_pytorch() -> None:
    torch = pytest.importorskip("torch")
    for (what, ours, ob), (_, theirs, tb) in zip(_cases(tt), _cases(torch)):
        assert ours._is_view() == theirs._is_view(), what
        assert (ours._base is ob) and (theirs._base is tb), what


def test_version_is_the_release_it_follows() -> None:
    assert tt.__version__ == "2.13.0"
    torch = pytest.importorskip("torch")
    assert torch.__version__.split("+")[0] == tt.__version__


def test_inplace_function_forms_as_pytorch() -> None:
    """``torch.sin_(x)`` and the other in-place function forms torch 2.13 has: the
    method in place, the same node name, the same error on a leaf that requires grad."""
    from tapegrad.torch._ops import INPLACE_FUNCTIONS

    for name in INPLACE_FUNCTIONS:
        x = tt.tensor([0.25, 0.5], requires_grad=True)
        y = x * 1.0
        args = (0.0,) if name in ("clamp_", "clamp_min_", "clip_", "fill_") else ()
        out = getattr(tt, name)(y, *args)
        assert out is y, name
        if name != "detach_":
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
                getattr(tt, name)(x, *args)
    torch = pytest.importorskip("torch")
    assert {n for n in dir(torch) if n in INPLACE_FUNCTIONS} == set(INPLACE_FUNCTIONS)
    for name in INPLACE_FUNCTIONS:
        if name in ("detach_", "zero_", "fill_"):
            continue
        args = (0.0,) if name in ("clamp_", "clamp_min_", "clip_") else ()
        ours, theirs = tt.tensor([0.25, 0.5], requires_grad=True) * 1.0, torch.tensor([0.25, 0.5], requires_grad=True) * 1.0
        getattr(tt, name)(ours, *args)
        getattr(torch, name)(theirs, *args)
        assert ours.grad_fn.name() == theirs.grad_fn.name(), name
        assert ours.tolist() == pytest.approx(theirs.tolist(), nan_ok=True), name
