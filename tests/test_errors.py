"""Errors and warnings that say what went wrong, where, and what to do.

A shape mismatch inside a traced op names the primitive, the operand shapes
and the user's line; NumPy's RuntimeWarnings raised in tapegrad's rules are
attributed to the user's line; transforms reject a bad ``argnums`` when they
are made; ``device="cuda"`` without CuPy says how to install it.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

HERE = __file__
W = np.ones((3, 4))


# --- shape mismatches -----------------------------------------------------------------------


def _matmul_loss(x: Any) -> Any:
    return tnp.sum(x @ W)  # the offending line (first line of the body)


def _tnp_matmul_loss(x: Any) -> Any:
    return tnp.sum(tnp.matmul(x, W))


def _np_matmul_loss(x: Any) -> Any:
    return tnp.sum(np.matmul(x, W))  # NumPy's function on a traced value: dispatched to tapegrad


def _line(f: Callable[..., Any]) -> int:
    return f.__code__.co_firstlineno + 1


def _tape_call(f: Callable[..., Any], x: Any) -> Any:
    with tg.Tape() as tape:
        return f(tape.watch(x))


CALLS: dict[str, Callable[[Callable[..., Any], Any], Any]] = {
    "grad": lambda f, x: tg.grad(f)(x),
    "value_and_grad": lambda f, x: tg.value_and_grad(f)(x),
    "vjp": lambda f, x: tg.vjp(f, x),
    "jvp": lambda f, x: tg.jvp(f, (x,), (np.ones_like(x),)),
    "Tape": _tape_call,
    "grad_of_grad": lambda f, x: tg.grad(lambda y: tnp.sum(tg.grad(f)(y)))(x),
    "jacrev": lambda f, x: tg.jacrev(f)(x),
    "vmap": lambda f, x: tg.vmap(f)(x),
}


def _check_shape_error(err: pytest.ExceptionInfo[ValueError], f: Callable[..., Any],
                       shapes: tuple[str, str], name: str = "matmul") -> None:
    e = err.value
    msg = str(e)
    assert f"`{name}`" in msg
    assert f"shapes {shapes[0]} and {shapes[1]}" in msg
    assert f"{HERE}:{_line(f)}" in msg  # the user's line, in the text
    # NumPy's own error is the cause, and its text is kept
    assert type(e.__cause__) is ValueError
    assert str(e.__cause__) in msg
    # the traceback ends one or two frames below the user's line
    frames = traceback.extract_tb(e.__traceback__)
    user = [i for i, fr in enumerate(frames) if fr.filename == HERE and fr.lineno == _line(f)]
    assert user, [(fr.filename, fr.lineno) for fr in frames]
    assert len(frames) - 1 - user[-1] <= 2, [(fr.filename, fr.name) for fr in frames[user[-1]:]]


@pytest.mark.parametrize("how", list(CALLS))
@pytest.mark.parametrize("f", [_matmul_loss, _tnp_matmul_loss, _np_matmul_loss],
                         ids=["operator", "tnp", "np"])
def test_matmul_shape_mismatch_names_op_shapes_and_line(how: str, f: Callable[..., Any]) -> None:
    x = np.ones((2, 5))
    with pytest.raises(ValueError) as err:
        CALLS[how](f, x)
    # (vmap maps over axis 0: each example has shape (5,))
    _check_shape_error(err, f, ("(5,)" if how == "vmap" else "(2, 5)", "(3, 4)"))


def _add_loss(x: Any) -> Any:
    return tnp.sum(x[:2] + x)  # two traced operands that do not broadcast


def _radd_loss(x: Any) -> Any:
    return tnp.sum(np.ones(3) + x)  # a constant on the left (the reflected operator)


@pytest.mark.parametrize("how", ["grad", "jvp", "Tape", "grad_of_grad"])
def test_broadcast_mismatch_names_op_shapes_and_line(how: str) -> None:
    with pytest.raises(ValueError) as err:
        CALLS[how](_add_loss, np.ones(4))
    _check_shape_error(err, _add_loss, ("(2,)", "(4,)"), "add")
    with pytest.raises(ValueError) as err:
        CALLS[how](_radd_loss, np.ones(4))
    _check_shape_error(err, _radd_loss, ("(3,)", "(4,)"), "add")


def test_one_operand_shape_error_names_its_shape() -> None:
    def f(x: Any) -> Any:
        return tnp.sum(tnp.reshape(x, (4,)))

    with pytest.raises(ValueError, match=r"`reshape` of an operand of shape \(6,\) failed at .*"
                                         r"cannot reshape array of size 6"):
        tg.grad(f)(np.ones(6))


def test_other_error_types_are_left_as_they_are() -> None:
    # LinAlgError is a ValueError subclass: it keeps its type and text
    with pytest.raises(np.linalg.LinAlgError, match="^Singular matrix$"):
        tg.grad(lambda a: tnp.sum(tnp.linalg.inv(a)))(np.zeros((2, 2)))


def test_plain_arrays_keep_numpys_error() -> None:
    with pytest.raises(ValueError) as err:
        tnp.matmul(np.ones((2, 5)), W)
    with pytest.raises(ValueError) as expected:
        np.matmul(np.ones((2, 5)), W)
    assert str(err.value) == str(expected.value)


# --- argnums ------------------------------------------------------------------------------

TAKES_ARGNUMS: dict[str, Callable[..., Any]] = {
    "grad": tg.grad, "value_and_grad": tg.value_and_grad, "jacrev": tg.jacrev,
    "jacobian": tg.jacobian, "jacfwd": tg.jacfwd, "hessian": tg.hessian,
    "elementwise_grad": tg.elementwise_grad,
}


@pytest.mark.parametrize("name", list(TAKES_ARGNUMS))
@pytest.mark.parametrize("bad", [2.0, "x", [0, 1.5], (0, "1"), True, None, (np.bool_(True),)],
                         ids=["float", "str", "list_with_float", "tuple_with_str", "bool", "none",
                              "np_bool"])
def test_bad_argnums_rejected_when_the_transform_is_made(name: str, bad: Any) -> None:
    def loss(x: Any) -> Any:
        return tnp.sum(x * x)

    with pytest.raises(TypeError) as err:
        TAKES_ARGNUMS[name](loss, bad)  # not called: rejected at once
    msg = str(err.value)
    expected_who = "jacrev" if name == "jacobian" else name
    assert msg.startswith(f"{expected_who}(loss): argnums must be an int or a tuple of ints")
    assert repr(bad) in msg


@pytest.mark.parametrize("good", [0, -1, (0,), [0], np.int64(0)])
def test_good_argnums_accepted(good: Any) -> None:
    g = tg.grad(lambda x: x * x, argnums=good)(3.0)
    assert np.allclose(g, 6.0 if not isinstance(good, (tuple, list)) else (6.0,))


def test_out_of_range_argnums_says_how_many_and_why() -> None:
    def f(x: Any, y: Any = 1.0) -> Any:
        return x * y

    with pytest.raises(TypeError, match=r"grad\(f\): argnums=1 is out of range for a call with "
                                        r"1 positional argument \(valid: -1 to 0\).*keyword"):
        tg.grad(f, argnums=1)(2.0, y=3.0)  # y given by keyword
    with pytest.raises(TypeError, match=r"jacfwd\(f\): argnums=\(0, 3\) is out of range .* 2 "):
        tg.jacfwd(f, argnums=(0, 3))(2.0, 3.0)


# --- integer inputs ----------------------------------------------------------------------------

INT_TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "grad": tg.grad, "value_and_grad": tg.value_and_grad, "jacrev": tg.jacrev,
    "jacfwd": tg.jacfwd, "hessian": tg.hessian, "elementwise_grad": tg.elementwise_grad,
}


@pytest.mark.parametrize("name", list(INT_TRANSFORMS))
def test_python_int_input_suggests_float(name: str) -> None:
    with pytest.raises(TypeError) as err:
        INT_TRANSFORMS[name](lambda x: x * 1.0)(3)
    msg = str(err.value)
    assert "argument 0 has dtype int" in msg
    assert "float(...)" in msg and "3.0" in msg
    assert ".astype" not in msg  # a Python int has no .astype


@pytest.mark.parametrize("name", list(INT_TRANSFORMS))
def test_integer_array_input_suggests_astype(name: str) -> None:
    with pytest.raises(TypeError) as err:
        INT_TRANSFORMS[name](lambda x: x * 1.0)(np.arange(3))
    msg = str(err.value)
    assert "argument 0 has dtype int" in msg
    assert ".astype(float)" in msg and "float(...)" not in msg


def test_python_int_in_a_pytree_and_jvp() -> None:
    with pytest.raises(TypeError, match=r"argument 1 has dtype int.*Python int 2.*float\(\.\.\.\)"):
        tg.grad(lambda x, p: x * p["a"], argnums=1)(1.0, {"a": 2})
    with pytest.raises(TypeError, match=r"float\(\.\.\.\)"):
        tg.jvp(lambda x: x * 1.0, (3,), (1,))


# --- CuPy missing -------------------------------------------------------------------------------


@pytest.fixture
def no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # ``import cupy`` now fails


def _check_cupy_error(err: pytest.ExceptionInfo[ImportError]) -> None:
    assert isinstance(err.value, ModuleNotFoundError)
    assert str(err.value).startswith('CuPy is not installed: pip install "tapegrad[cuda]"')
    assert isinstance(err.value.__cause__, ImportError)  # the import's own error


def test_backend_without_cupy_says_how_to_install(no_cupy: None) -> None:
    from tapegrad.backend import import_cupy

    with pytest.raises(ImportError) as err:
        import_cupy()
    _check_cupy_error(err)


@pytest.mark.parametrize("how", ["factory", "tensor", "cuda", "to", "to_device_kw"])
def test_facade_cuda_without_cupy_says_how_to_install(no_cupy: None, how: str) -> None:
    import tapegrad.torch as torch

    calls = {
        "factory": lambda: torch.ones(2, device="cuda"),
        "tensor": lambda: torch.tensor([1.0], device="cuda"),
        "cuda": lambda: torch.ones(2).cuda(),
        "to": lambda: torch.ones(2).to("cuda"),
        "to_device_kw": lambda: torch.ones(2).to(device="cuda"),
    }
    with pytest.raises(ImportError) as err:
        calls[how]()
    _check_cupy_error(err)


def test_a_broken_cupy_keeps_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # CuPy present but failing on something it needs: that error, not "not installed"
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cupy":
            raise ModuleNotFoundError("No module named 'cupy_backends'", name="cupy_backends")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    from tapegrad.backend import import_cupy

    with pytest.raises(ModuleNotFoundError, match="cupy_backends"):
        import_cupy()
