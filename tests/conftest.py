"""Shared test helpers: the differential harness against real PyTorch.

A differential test runs one program twice, with ``torch`` bound to real
PyTorch and to ``tapegrad.torch``, and asserts that both give the same
values, gradients, ``grad_fn`` names (and ``next_functions`` chains), reprs,
and errors (type and message). Everything here works without PyTorch except
the ``torch_diff`` fixture, which skips the test when PyTorch is absent.

API (import the helpers with ``from conftest import ...``; pytest puts
``tests/`` on ``sys.path``):

- fixture ``real_torch``: the real ``torch`` module, or skip.
- fixture ``torch_diff``: a :class:`TorchDiff` bound to real PyTorch, or skip.
  ``torch_diff.real`` / ``torch_diff.ours`` are the two modules.
- :func:`run_source` (``exec`` a program text, return what it printed with
  object addresses masked) and ``TorchDiff.assert_same_output(src)``.
- :func:`run_graph` (call ``fn(lib, *tensors)``, back-propagate a fixed
  weighting of its outputs, return a :class:`Run`: per output the dtype,
  ``grad_fn`` name, ``next_functions`` names and values; per input the
  gradient) and ``TorchDiff.assert_same_run(fn, inputs, ...)``.
- :func:`assert_close` (``None``-ness, shape, dtype kind; floats at a stated
  tolerance, defaulting by dtype; others exactly).
- :func:`node_name` / :func:`graph_chain` (``grad_fn`` names and the
  ``next_functions`` chain below a tensor).
- ``TorchDiff.assert_same_error(call)``: ``call(real)`` and ``call(ours)``
  raise the same exception type with the same message.
- fixture ``cp``: CuPy for a test of the ``device="cuda"`` path: real CuPy when it
  imports and sees a CUDA device, else the CPU model of CuPy (``tests/cupy_model``)
  put in ``sys.modules`` as ``cupy``/``cupyx`` for the test's duration.
  ``TAPEGRAD_CUPY=real`` makes the test skip rather than fall back to the model,
  ``TAPEGRAD_CUPY=model`` uses the model even where a device exists.
"""

from __future__ import annotations

import io
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, redirect_stdout
from typing import Any, NamedTuple

import numpy as np
import pytest

import tapegrad.torch as tt

# default tolerances of a comparison with PyTorch, by dtype of the expected value
TOL = {np.dtype(np.float64): {"rtol": 1e-10, "atol": 1e-300},
       np.dtype(np.float32): {"rtol": 1e-5, "atol": 1e-6}}


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_torch() -> Any:
    """The real ``torch`` module (the test is skipped without it)."""
    return pytest.importorskip("torch")


@pytest.fixture(scope="session")
def torch_diff(real_torch: Any) -> TorchDiff:
    """The differential harness, bound to real PyTorch (skips without it)."""
    return TorchDiff(real_torch)


def _real_cupy() -> Any:
    """Real CuPy with a CUDA device, or ``None``."""
    if os.environ.get("TAPEGRAD_CUPY") == "model":
        return None
    try:
        import cupy
        if getattr(cupy, "__version__", "").endswith("cpu-model"):
            return None
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # noqa: BLE001  # not installed, no driver, no device: all mean "no real CuPy"
        return None


@pytest.fixture
def cp() -> Iterator[Any]:
    """CuPy: the real one on a CUDA device, else the CPU model (see the module docstring)."""
    real = _real_cupy()
    if real is not None:
        yield real
        return
    if os.environ.get("TAPEGRAD_CUPY") == "real":
        pytest.skip("TAPEGRAD_CUPY=real and no CuPy with a CUDA device")
    from cupy_model import installed
    with installed() as model:
        yield model


# --- graphs --------------------------------------------------------------------------------------


def node_name(fn: Any) -> str | None:
    """A ``grad_fn`` node's class name (``None`` for no node)."""
    return None if fn is None else type(fn).__name__


def graph_chain(t: Any, depth: int = 1) -> tuple[Any, ...]:
    """``(name, (child_chain, ...))`` of ``t.grad_fn`` down ``depth`` levels of
    ``next_functions`` (a child is ``None`` where PyTorch has ``(None, 0)``)."""
    def walk(fn: Any, d: int) -> Any:
        if fn is None:
            return None
        kids = tuple(walk(f, d - 1) for f, _ in fn.next_functions) if d > 0 else ()
        return (node_name(fn), kids)
    return walk(t.grad_fn, depth)


# --- comparisons ---------------------------------------------------------------------------------


def assert_close(got: Any, want: Any, what: str = "", rtol: float | None = None,
                 atol: float | None = None) -> None:
    """``got`` equals ``want``: both ``None`` or both arrays of one shape;
    floating values to ``rtol``/``atol`` (defaults by ``want``'s dtype, see
    ``TOL``), anything else exactly."""
    assert (got is None) == (want is None), f"{what}: {got!r} vs {want!r}"
    if want is None:
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    if want.dtype.kind in "fc":
        tol = dict(TOL.get(want.dtype, TOL[np.dtype(np.float32)]))
        if rtol is not None:
            tol["rtol"] = rtol
        if atol is not None:
            tol["atol"] = atol
        np.testing.assert_allclose(got, want, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


# --- programs as source text ---------------------------------------------------------------------

def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


@contextmanager
def torch_is_the_facade() -> Iterator[None]:
    """Within: ``import torch`` and every ``import torch.X`` find ``tapegrad.torch``
    and its module of that name (every facade module imported so far), as a
    program run on the facade sees them; the real ``torch`` modules come back after."""
    saved = {k: v for k, v in sys.modules.items() if _is_torch(k)}
    for k in saved:
        del sys.modules[k]
    sys.modules.update({"torch" + name[len("tapegrad.torch"):]: mod for name, mod in list(sys.modules.items())
                        if name == "tapegrad.torch" or name.startswith("tapegrad.torch.")})
    try:
        yield
    finally:
        for k in [k for k in sys.modules if _is_torch(k)]:
            del sys.modules[k]
        sys.modules.update(saved)


def run_source(lib: Any, src: str) -> str:
    """Execute program text ``src`` with ``torch`` bound to ``lib`` (on the facade,
    its imports of ``torch`` and ``torch.X`` find the facade too: ``torch_is_the_facade``);
    return what it printed, object addresses masked."""
    buf = io.StringIO()
    with torch_is_the_facade() if lib is tt else nullcontext(), redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(src, {"torch": lib})
    return re.sub(r"0x[0-9a-f]+", "0x?", buf.getvalue())


# --- programs as functions -----------------------------------------------------------------------


class Input(NamedTuple):
    """An input of a program: data, dtype name, whether it requires grad."""

    data: Any
    dtype: str = "float64"
    requires_grad: bool = True


def as_input(x: Any) -> Input:
    """An :class:`Input` from an ``Input``, a ``(data, dtype, requires_grad)``
    triple, or an array (its dtype; requires grad when floating)."""
    if isinstance(x, Input):
        return x
    if isinstance(x, tuple) and len(x) == 3 and isinstance(x[1], str):
        return Input(*x)
    a = np.asarray(x)
    return Input(a, str(a.dtype), a.dtype.kind in "fc")


def weights(shape: tuple[int, ...]) -> np.ndarray:
    """A fixed cotangent, different at every position."""
    n = int(np.prod(shape))
    return np.linspace(0.5, 2.0, n).reshape(shape) if n > 1 else np.full(shape, 1.5)


def weights_like(lib: Any, out: Any) -> Any:
    """:func:`weights` as a constant of ``out``'s dtype."""
    return lib.tensor(weights(tuple(out.shape)), dtype=out.dtype)


class Out(NamedTuple):
    dtype: str
    grad_fn: str | None
    next_functions: tuple[str | None, ...]
    value: np.ndarray


class Run(NamedTuple):
    outputs: list[Out]
    grads: list[np.ndarray | None]  # one per input that requires grad


def run_graph(lib: Any, fn: Callable[..., Any], inputs: Sequence[Any],
              cotangent: Callable[[Any, Any], Any] = weights_like, quiet: bool = True) -> Run:
    """Run ``fn(lib, *tensors)`` on fresh leaves made from ``inputs`` (see
    :func:`as_input`); back-propagate ``sum((out * cotangent(lib, out)).sum())``
    over the outputs that require grad. ``quiet`` silences warnings."""
    ins = [as_input(x) for x in inputs]
    ts = [lib.tensor(d, dtype=getattr(lib, dt), requires_grad=g) for d, dt, g in ins]
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        out = fn(lib, *ts)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        diff = [o for o in outs if o.requires_grad]
        if diff:
            sum((o * cotangent(lib, o)).sum() for o in diff).backward()
    record = [Out(str(o.dtype), node_name(o.grad_fn),
                  tuple(node_name(f) for f, _ in o.grad_fn.next_functions) if o.grad_fn is not None else (),
                  np.array(o.detach().numpy())) for o in outs]
    return Run(record, [None if t.grad is None else np.array(t.grad.numpy()) for t in ts if t.requires_grad])


class TorchDiff:
    """The differential harness, bound to a real PyTorch module."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.ours = tt

    def assert_same_output(self, src: str) -> None:
        """Program text ``src`` prints the same under both (addresses masked)."""
        want = run_source(self.real, src)
        got = run_source(self.ours, src)
        assert got == want

    def runs(self, fn: Callable[..., Any], inputs: Sequence[Any], **kw: Any) -> tuple[Run, Run]:
        """``(ours, theirs)`` of :func:`run_graph`."""
        return run_graph(self.ours, fn, inputs, **kw), run_graph(self.real, fn, inputs, **kw)

    def assert_same_run(self, fn: Callable[..., Any], inputs: Sequence[Any], rtol: float | None = None,
                        atol: float | None = None, next_functions: bool = True, **kw: Any) -> None:
        """Same outputs (dtype, ``grad_fn`` name, its ``next_functions``' names
        when ``next_functions``, values) and same input gradients."""
        got, want = self.runs(fn, inputs, **kw)
        assert len(got.outputs) == len(want.outputs)
        for k, (o, w) in enumerate(zip(got.outputs, want.outputs)):
            assert (o.dtype, o.grad_fn) == (w.dtype, w.grad_fn), f"output {k}"
            if next_functions:
                assert o.next_functions == w.next_functions, f"output {k}: next_functions"
            assert_close(o.value, w.value, f"output {k}", rtol, atol)
        assert len(got.grads) == len(want.grads)
        for k, (g, w) in enumerate(zip(got.grads, want.grads)):
            assert_close(g, w, f"gradient of input {k}", rtol, atol)
            if w is not None:
                assert g.dtype == w.dtype, f"gradient of input {k}: dtype"

    def assert_same_error(self, call: Callable[[Any], Any]) -> None:
        """``call(real)`` raises; ``call(ours)`` raises the same type with the
        same message, word for word."""
        with pytest.raises(Exception) as want:  # noqa: PT011  # PyTorch's error, whatever it is
            call(self.real)
        with pytest.raises(Exception) as got:  # noqa: PT011
            call(self.ours)
        assert type(got.value) is type(want.value), f"{type(got.value)} vs {type(want.value)}: {got.value}"
        assert str(got.value) == str(want.value)
