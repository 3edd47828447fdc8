"""Facade breadth: missing names, ``out=``, bitwise ops, ``unique``, ``linalg``,
in-place math, ``accelerator``, forward AD, saved-tensor hooks and ``_saved_*``.

Programs run under real PyTorch (when importable) and ``tapegrad.torch``, and
their printed outputs must agree; the torch-free tests check behaviour alone.
"""

from __future__ import annotations

import contextlib
import io
import textwrap

import numpy as np
import pytest

import tapegrad.torch as tt

try:
    import torch as real_torch
except ImportError:  # pragma: no cover
    real_torch = None

needs_torch = pytest.mark.skipif(real_torch is None, reason="PyTorch not installed")


def _run(src: str, module: object) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(src), {"torch": module, "np": np})  # noqa: S102
    return buf.getvalue()


def _same(src: str) -> str:
    """Run ``src`` under both; their printed outputs must agree."""
    mine = _run(src, tt)
    if real_torch is not None:
        assert mine == _run(src, real_torch)
    return mine


# --- 1. missing names -------------------------------------------------------------------------------


def test_missing_torch_name_says_not_provided() -> None:
    assert not hasattr(tt, "no_such_function")
    with pytest.raises(AttributeError, match=r"tapegrad.torch does not provide torch.no_such_function"):
        tt.no_such_function  # noqa: B018


def test_missing_tensor_method_says_not_provided() -> None:
    t = tt.tensor([1.0])
    assert not hasattr(t, "no_such_method")
    with pytest.raises(AttributeError, match=r"does not provide Tensor.no_such_method"):
        t.no_such_method()
    with pytest.raises(AttributeError, match=r"^'Tensor' object has no attribute '_private'$"):
        t._private  # noqa: B018
