"""torch.autograd defects found running PyTorch tutorials under the facade:
gradgradcheck, double backward through a Function's saved outputs,
gradcheck's flags, anomaly mode. Each fix has a test that runs without
torch (exact values and messages) and, where torch is installed, one that
compares with it."""

from __future__ import annotations

import gc
import importlib
import textwrap
import warnings
import weakref
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch


def _x() -> Any:
    return torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)


class _Bad(torch.autograd.Function):
    """x**2 with a wrong backward (3x instead of 2x)."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, = ctx.saved_tensors
        return g * 3 * x


class _DetachedBackward(torch.autograd.Function):
    """x**3 whose backward is right but not differentiable (it detaches)."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


# --- 1. gradgradcheck -------------------------------------------------------------------------


def test_gradgradcheck_returns_true() -> None:
    x = _x()
    assert torch.autograd.gradgradcheck(lambda t: t ** 3, x) is True
    assert torch.autograd.gradgradcheck(lambda t: t ** 3, (x,)) is True
    y = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: a * b.exp(), (x, y)) is True
    assert torch.autograd.gradgradcheck(lambda a: (a.sin(), a.cos()), x) is True
    assert torch.autograd.gradgradcheck(lambda a: a ** 2, (x,), grad_outputs=torch.ones(2, dtype=torch.float64))
    assert torch.autograd.gradgradcheck(lambda a, b: a * 2, (x, y)) is True  # second derivative zero
    assert x.grad is None and y.grad is None  # nothing accumulated


def test_gradgradcheck_catches_a_wrong_second_derivative() -> None:
    x = _x()
    assert torch.autograd.gradcheck(_DetachedBackward.apply, x) is True
    with pytest.raises(torch.autograd.GradcheckError) as e:
        torch.autograd.gradgradcheck(_DetachedBackward.apply, x)
    msg = str(e.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[")
    assert msg.endswith("analytical:tensor([[0., 0.],\n        [0., 0.]], dtype=torch.float64)\n")
    assert torch.autograd.gradgradcheck(_DetachedBackward.apply, x, raise_exception=False) is False


def test_gradgradcheck_flag_assertions() -> None:
    with pytest.raises(AssertionError, match="^Expected at least one of check_fwd_over_rev or check_rev_over_rev"):
        torch.autograd.gradgradcheck(lambda t: t, _x(), check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="^Setting check_undefined_grad=True requires check_rev_over_rev"):
        torch.autograd.gradgradcheck(lambda t: t, _x(), check_rev_over_rev=False, check_fwd_over_rev=True)


def test_gradgradcheck_against_torch() -> None:
    torch_ = pytest.importorskip("torch")
    for lib in (torch, torch_):
        x = lib.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), (x, y), check_batched_grad=True)


# --- 2. double backward through a Function's saved outputs ----------------------------------


class _Sinh(torch.autograd.Function):
    """The tutorial's Sinh: intermediate results returned as outputs so
    that saving them keeps them on the graph."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx: Any, grad_out: Any, grad_exp: Any, grad_negexp: Any) -> Any:
        expx, expnegx = ctx.saved_tensors
        return grad_out * (expx + expnegx) / 2 + grad_exp * expx - grad_negexp * expnegx


def _sinh(x: Any) -> Any:
    return _Sinh.apply(x)[0]


def test_function_saved_output_double_backward() -> None:
    x = torch.tensor([[0.1, 0.5], [1.0, -0.3]], dtype=torch.float64, requires_grad=True)
    g, = torch.autograd.grad(_sinh(x).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "SubBackward0"
    np.testing.assert_allclose(g.detach().numpy(), np.cosh(x.detach().numpy()))
    gg, = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.sinh(x.detach().numpy()))
    assert repr(gg) == ("tensor([[ 0.1002,  0.5211],\n        [ 1.1752, -0.3045]], dtype=torch.float64)")
    assert torch.autograd.gradcheck(_sinh, x) and torch.autograd.gradgradcheck(_sinh, x)


def test_function_saved_output_double_backward_with_backward() -> None:
    x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's create_graph reference-cycle warning, if any
        _sinh(x).backward(create_graph=True)
    assert x.grad.grad_fn is not None
    assert float(x.grad) == pytest.approx(np.cosh(0.7))
    g = x.grad
    x.grad = None
    g.backward()
    assert float(x.grad) == pytest.approx(np.sinh(0.7))


def test_function_saved_output_graph_freed_by_refcount() -> None:
    gc.collect()
    gc.disable()
    try:
        x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        outs = _Sinh.apply(x)
        refs = [weakref.ref(o._value._node) for o in outs]
        g, = torch.autograd.grad(outs[0].sum(), x, create_graph=True)
        del outs
        gg, = torch.autograd.grad(g.sum(), x)
        del g, gg
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_function_saved_output_against_torch() -> None:
    pytest.importorskip("torch")
    src = textwrap.dedent('''
        class Sinh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                expx = torch.exp(x)
                expnegx = torch.exp(-x)
                ctx.save_for_backward(expx, expnegx)
                return (expx - expnegx) / 2, expx, expnegx

            @staticmethod
            def backward(ctx, grad_out, grad_exp, grad_negexp):
                expx, expnegx = ctx.saved_tensors
                return grad_out * (expx + expnegx) / 2 + grad_exp * expx - grad_negexp * expnegx

        x = torch.tensor([[0.1, 0.5], [1.0, -0.3]], dtype=torch.float64, requires_grad=True)
        g, = torch.autograd.grad(Sinh.apply(x)[0].sum(), x, create_graph=True)
        print(g, type(g.grad_fn).__name__)
        print(torch.autograd.grad(g.sum(), x))
        a, b, c = Sinh.apply(x)
        g, = torch.autograd.grad((a * b).sum(), x, create_graph=True)
        print(torch.autograd.grad(g.sum(), x))
    ''')
    outs = []
    for mod in ("torch", "tapegrad.torch"):
        ns: dict[str, Any] = {"torch": __import__(mod, fromlist=["_"])}
        lines: list[str] = []
        ns["print"] = lambda *a: lines.append(" ".join(map(str, a)))
        exec(src, ns)
        outs.append(lines)
    assert outs[0] == outs[1]


# --- 3. gradcheck's flags --------------------------------------------------------------------


def test_gradcheck_flag_assertions() -> None:
    f = lambda t: t ** 3  # noqa: E731
    with pytest.raises(AssertionError, match="^Expected at least one of check_forward_ad or check_backward_ad to be True$"):
        torch.autograd.gradcheck(f, _x(), check_forward_ad=False, check_backward_ad=False)
    with pytest.raises(AssertionError, match="^Setting check_batched_grad=True requires check_backward_ad to be True$"):
        torch.autograd.gradcheck(f, _x(), check_batched_grad=True, check_backward_ad=False, check_forward_ad=True)


def test_gradcheck_forward_only_ignores_a_wrong_backward() -> None:
    x = _x()
    # forward mode differentiates the forward (x**2): right, though backward is wrong
    assert torch.autograd.gradcheck(_Bad.apply, x, check_forward_ad=True, check_backward_ad=False) is True
    with pytest.raises(torch.autograd.GradcheckError) as e:
        torch.autograd.gradcheck(_Bad.apply, x)
    assert str(e.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[1.0000, 0.0000],\n        [0.0000, 3.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[1.5000, 0.0000],\n        [0.0000, 4.5000]], dtype=torch.float64)\n")
    assert torch.autograd.gradcheck(_Bad.apply, x, raise_exception=False) is False
    assert torch.autograd.gradcheck(lambda t: t ** 3, x, check_forward_ad=True) is True


def test_gradcheck_forward_mode_mismatch_message(monkeypatch: pytest.MonkeyPatch) -> None:
    gc_mod = importlib.import_module("tapegrad.torch.autograd.gradcheck")
    monkeypatch.setattr(gc_mod, "_forward_jacobians",
                        lambda func, ins, j, idx: [np.diag([1.5, 4.5])])
    with pytest.raises(torch.autograd.GradcheckError) as e:
        torch.autograd.gradcheck(lambda t: t ** 2, _x(), check_forward_ad=True, check_backward_ad=False)
    assert str(e.value) == (
        "Jacobian computed with forward mode mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[1.0000, 0.0000],\n        [0.0000, 3.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[1.5000, 0.0000],\n        [0.0000, 4.5000]], dtype=torch.float64)\n")


def test_gradcheck_inputs_and_outputs_edge_cases() -> None:
    x = _x()
    y = torch.tensor([2.0, 3.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda a, b, c: a * b * c, (x, y, 2.0))
    assert torch.autograd.gradcheck(lambda a: a.sin(), [x])
    assert torch.autograd.gradcheck(lambda a: (a.sin(), a.cos()), x, check_batched_grad=True)
    assert torch.autograd.gradcheck(lambda t: (t > 1).double(), x)  # no differentiable output, constant
    with pytest.raises(torch.autograd.GradcheckError, match="^Numerical gradient for function expected to be zero$"):
        torch.autograd.gradcheck(lambda t: t.detach() * 2, x)
    with pytest.raises(ValueError, match="^gradcheck expects at least one input tensor to require gradient, "
                                         "but none of them have requires_grad=True.$"):
        torch.autograd.gradcheck(lambda t: t ** 3, y)
    with pytest.warns(UserWarning, match="^Input #0 requires gradient and is not a double precision floating point"):
        torch.autograd.gradcheck(lambda t: t ** 3, torch.tensor([1.0, 2.0], requires_grad=True), atol=0.1, rtol=0.1)


class _NotScaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2, x * 3

    @staticmethod
    def backward(ctx: Any, g: Any, h: Any) -> Any:
        return g * 2 + h * 3 + (1e-3 if bool((g == 0).all()) and bool((h == 0).all()) else 0)


def test_gradcheck_backward_must_scale_with_the_cotangent() -> None:
    with pytest.raises(torch.autograd.GradcheckError, match="^backward not multiplied by grad_output$"):
        torch.autograd.gradcheck(_NotScaled.apply, _x(), atol=1e-2)


def test_gradcheck_nondeterministic_backward() -> None:
    calls = [0]

    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            calls[0] += 1
            return g * 2 + g * 1e-9 * calls[0]

    with pytest.raises(torch.autograd.GradcheckError, match="^Backward is not reentrant, i.e., running backward"):
        torch.autograd.gradcheck(Noisy.apply, _x())
    assert torch.autograd.gradcheck(Noisy.apply, _x(), nondet_tol=1e-6)


def test_gradcheck_grad_dtypes() -> None:
    class Float32Grad(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return (g * 2).float()

    # the tape casts each gradient to its input's dtype, as PyTorch's engine does
    assert torch.autograd.gradcheck(Float32Grad.apply, _x(), check_grad_dtypes=True, atol=1e-4)


def test_gradcheck_flags_against_torch() -> None:
    torch_ = pytest.importorskip("torch")
    for lib in (torch, torch_):
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(lambda t: t ** 3, x, check_forward_ad=True, check_backward_ad=False)
        assert lib.autograd.gradcheck(lambda t: t.tanh(), x, check_forward_ad=True, check_batched_grad=True,
                                      check_grad_dtypes=True, nondet_tol=1e-12)
        with pytest.raises(AssertionError):
            lib.autograd.gradcheck(lambda t: t, x, check_forward_ad=False, check_backward_ad=False)


# --- 4. anomaly mode --------------------------------------------------------------------------


@pytest.fixture
def anomaly_off() -> Any:
    yield
    torch.autograd.set_detect_anomaly(False)


def test_anomaly_switches(anomaly_off: Any) -> None:
    from tapegrad.core.tape import backprop
    from tapegrad.torch import _backward, _graph

    assert (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == (False, True)
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled. This mode will increase the "
                                         "runtime and should only be enabled for debugging.$"):
        ctx = torch.autograd.detect_anomaly(check_nan=False)
    with ctx:
        assert (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == (True, False)
        assert _backward._walk[0] is not backprop and _graph.observers
    assert (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == (False, True)
    assert not _graph.observers and _backward._walk[0] is backprop  # the plain path is untouched
    torch.autograd.set_detect_anomaly(True, check_nan=False)  # takes effect at once
    assert (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) == (True, False)
    torch.autograd.set_detect_anomaly(False)
    with torch.autograd.set_detect_anomaly(True):
        assert torch.is_anomaly_enabled()
    assert not torch.is_anomaly_enabled()


def test_anomaly_nan_names_node_and_output(anomaly_off: Any) -> None:
    torch.autograd.set_detect_anomaly(True)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = torch.tensor([-1.0, 4.0], requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^Function 'PowBackward0' returned nan values in its 0th output.$"):
            (x ** 0.5).sum().backward()
        a = torch.tensor([0.0], requires_grad=True)
        b = torch.tensor([0.0], requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^Function 'DivBackward0' returned nan values in its 1th output.$"):
            (a / b).sum().backward()

        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any, k: Any, b: Any) -> Any:
                return a * b

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g, None, g * float("nan")

        with pytest.raises(RuntimeError, match=r"^Function 'FBackward' returned nan values in its 1th output.$"):
            F.apply(a, 3, b).sum().backward()
        with pytest.raises(RuntimeError, match=r"^Function 'FBackward' returned nan values in its 2th output.$"):
            F.apply(a, torch.tensor(2.0), b).sum().backward()
        torch.autograd.set_detect_anomaly(True, check_nan=False)
        x = torch.tensor([-1.0], requires_grad=True)
        (x ** 0.5).sum().backward()
        assert np.isnan(x.grad.numpy()).all()


class _Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        raise ValueError("boom")


def test_anomaly_warns_with_forward_traceback(anomaly_off: Any) -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.autograd.set_detect_anomaly(True)
    y = _Boom.apply(x)  # the forward line the warning shows
    with pytest.warns(UserWarning) as rec, pytest.raises(ValueError, match="^boom$"):
        y.sum().backward()
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 1
    assert msgs[0].startswith("Error detected in _BoomBackward. Traceback of forward call that caused the error:\n")
    assert "    y = _Boom.apply(x)  # the forward line the warning shows\n" in msgs[0]
    assert msgs[0].endswith("    y = _Boom.apply(x)  # the forward line the warning shows\n")
    assert rec[0].filename == __file__  # it points at the user's backward call
    torch.autograd.set_detect_anomaly(False)
    y = _Boom.apply(x)  # recorded with anomaly detection off
    torch.autograd.set_detect_anomaly(True)
    with pytest.warns(UserWarning) as rec, pytest.raises(ValueError, match="^boom$"):
        y.sum().backward()
    assert [str(w.message) for w in rec] == [
        "Error detected in _BoomBackward. No forward pass information available. "
        "Enable detect anomaly during forward pass for more information."]


def test_anomaly_double_backward_names_the_inducing_node(anomaly_off: Any) -> None:
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, = ctx.saved_tensors
            return g * torch.sqrt(x * x) * 2  # the backward line

    torch.autograd.set_detect_anomaly(True)
    with np.errstate(all="ignore"):
        x = torch.tensor([0.0, 2.0], requires_grad=True)
        y = Sq.apply(x)  # the forward line
        g, = torch.autograd.grad(y.sum(), x, create_graph=True)
        with pytest.warns(UserWarning) as rec, pytest.raises(
                RuntimeError, match=r"^Function 'MulBackward0' returned nan values in its 0th output.$"):
            g.sum().backward()
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 2
    assert msgs[0].startswith("Error detected in MulBackward0. Traceback of forward call that caused the error:\n")
    assert msgs[0].endswith("    return g * torch.sqrt(x * x) * 2  # the backward line\n")
    assert msgs[1].startswith("\n\nPrevious calculation was induced by SqBackward. Traceback of forward call "
                              "that induced the previous calculation:\n")
    assert msgs[1].endswith("    y = Sq.apply(x)  # the forward line\n")


def test_anomaly_values_and_memory(anomaly_off: Any) -> None:
    torch.autograd.set_detect_anomaly(True)
    gc.collect()
    gc.disable()
    try:
        x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        y = ((x * 3).sin() * x.exp()).sum()
        ref = weakref.ref(y._value._node)
        g, = torch.autograd.grad(y, x, create_graph=True)
        g.sum().backward(retain_graph=True)
        v = x.detach().numpy()
        np.testing.assert_allclose(g.detach().numpy(), np.exp(v) * (3 * np.cos(3 * v) + np.sin(3 * v)))
        np.testing.assert_allclose(x.grad.numpy(), np.exp(v) * (6 * np.cos(3 * v) - 8 * np.sin(3 * v)))
        del y, g
        assert ref() is None
    finally:
        gc.enable()


def test_anomaly_against_torch(anomaly_off: Any) -> None:
    torch_ = pytest.importorskip("torch")
    for lib in (torch, torch_):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                x = lib.tensor([-1.0, 4.0], requires_grad=True)
                with pytest.raises(RuntimeError) as e:
                    (x ** 0.5).sum().backward()
        assert str(e.value) == "Function 'PowBackward0' returned nan values in its 0th output."
        assert not lib.is_anomaly_enabled()
