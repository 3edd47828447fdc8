"""Errors and warnings that say what went wrong, where, and what to do.

A shape mismatch inside a traced op names the primitive, the operand shapes
and the user's line; NumPy's RuntimeWarnings raised in tapegrad's rules are
attributed to the user's line; transforms reject a bad ``argnums`` when they
are made; ``device="cuda"`` without CuPy says how to install it.
"""

from __future__ import annotations

import re
import sys
import traceback
import warnings
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
    expected_who = "jacrev" if name == "jacobian" else name  # (hessian names itself too)
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
    assert msg.startswith(f"{name}(<lambda>) requires floating-point")  # (the transform called)
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


# --- NumPy's RuntimeWarnings, at the user's line -----------------------------------------------


def _next_line() -> int:
    """The line after the caller's (where the call under test is)."""
    return sys._getframe(1).f_lineno + 1


def _log_loss(x: Any) -> Any:
    return tnp.sum(tnp.log(x))  # log(0): divide by zero here, in the forward pass


def _sqrt_loss(x: Any) -> Any:
    return tnp.sum(tnp.sqrt(x))  # sqrt(0) is fine; its gradient 1/(2 sqrt(0)) divides by zero


def _caught(fn: Callable[[], Any], action: str = "always") -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter(action)
        fn()
    return [w for w in got if issubclass(w.category, RuntimeWarning)]


def _where(ws: list[warnings.WarningMessage]) -> list[tuple[str, int, str]]:
    return [(w.filename, w.lineno, str(w.message)) for w in ws]


def test_forward_warning_points_at_the_users_line() -> None:
    ws = _caught(lambda: tg.value_and_grad(_log_loss)(np.ones(2)))
    assert ws == []  # (no error: no warning)
    ws = _caught(lambda: tg.vjp(_log_loss, np.zeros(2)))
    assert _where(ws) == [(HERE, _line(_log_loss), "divide by zero encountered in log")]


def test_backward_warning_points_at_the_grad_call() -> None:
    def run() -> None:
        tg.grad(_sqrt_loss)(np.zeros(2))

    ws = _caught(run)
    assert _where(ws) == [(HERE, _line(run), "divide by zero encountered in the gradient of sqrt")]


def test_forward_and_backward_warnings_of_one_call() -> None:
    def run() -> None:
        tg.grad(_log_loss)(np.zeros(2))  # log(0) forward, 1/0 backward

    assert _where(_caught(run)) == [
        (HERE, _line(_log_loss), "divide by zero encountered in log"),
        (HERE, _line(run), "divide by zero encountered in the gradient of log"),
    ]


def test_jvp_and_nested_warnings_point_at_the_users_line() -> None:
    def run_jvp() -> None:
        tg.jvp(_sqrt_loss, (np.zeros(2),), (np.ones(2),))

    # (forward mode runs the derivative rule with the op: at the op's line)
    assert _where(_caught(run_jvp)) == [
        (HERE, _line(_sqrt_loss), "divide by zero encountered in the derivative of sqrt")]

    def run_nested() -> None:
        tg.grad(lambda y: tnp.sum(tg.grad(_sqrt_loss)(y)))(np.zeros(2))

    ws = _caught(run_nested)
    assert ws and {(f, n) for f, n, _ in _where(ws)} == {(HERE, _line(run_nested))}


def test_tape_warnings_point_at_the_users_lines() -> None:
    ws = _caught(lambda: _tape_call(_log_loss, np.zeros(2)))
    assert _where(ws) == [(HERE, _line(_log_loss), "divide by zero encountered in log")]
    with tg.Tape() as tape:
        x = tape.watch(np.zeros(2))
        y = _sqrt_loss(x)
    line = _next_line()
    ws = _caught(lambda: tape.gradient(y, x))
    assert _where(ws) == [(HERE, line, "divide by zero encountered in the gradient of sqrt")]


def test_facade_backward_warning_points_at_backward() -> None:
    import tapegrad.torch as torch

    t = torch.zeros(2, requires_grad=True)
    y = torch.sqrt(t).sum()
    line = _next_line()
    ws = _caught(lambda: y.backward())
    assert _where(ws) == [(HERE, line, "divide by zero encountered in the gradient of sqrt")]


def test_users_own_numpy_call_is_warned_where_it_is() -> None:
    zero = np.zeros(1)

    def f(x: Any) -> Any:
        return tnp.sum(x * np.log(zero))  # a plain NumPy call inside f

    ws = _caught(lambda: tg.grad(f)(np.ones(1)))
    assert _where(ws) == [(HERE, _line(f), "divide by zero encountered in np.log(zero)")]


def test_errstate_ignore_and_raise_are_respected() -> None:
    with np.errstate(divide="ignore"):
        assert _caught(lambda: tg.grad(_log_loss)(np.zeros(2))) == []
        assert _caught(lambda: tg.grad(_sqrt_loss)(np.zeros(2))) == []
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
            tg.grad(_log_loss)(np.zeros(2))
        with pytest.raises(FloatingPointError, match="divide by zero"):
            tg.grad(_sqrt_loss)(np.zeros(2))
    # set inside the differentiated function: respected there (the forward pass)
    def f(x: Any) -> Any:
        with np.errstate(divide="ignore"):
            return tnp.sum(tnp.log(x + 1.0) + tnp.log(x))

    assert [m for *_, m in _where(_caught(lambda: tg.grad(f)(np.zeros(2))))] == [
        "divide by zero encountered in the gradient of log"]


def test_a_users_own_callback_is_respected() -> None:
    seen: list[str] = []
    with np.errstate(divide="call", call=lambda kind, flag: seen.append(kind)):
        assert _caught(lambda: tg.grad(_log_loss)(np.zeros(2))) == []
    assert seen == ["divide by zero", "divide by zero"]  # forward and backward


def test_warning_filters_are_respected() -> None:
    # "error": the warning raises, as NumPy's would
    with pytest.raises(RuntimeWarning, match="divide by zero encountered in the gradient of sqrt"):
        _caught(lambda: tg.grad(_sqrt_loss)(np.zeros(2)), action="error")
    # a filter on the user's module matches (the warning is attributed to it)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
        tg.grad(_log_loss)(np.zeros(2))
    assert [w for w in got if issubclass(w.category, RuntimeWarning)] == []


def test_default_filter_shows_each_user_line_once() -> None:
    def twice() -> None:
        for _ in range(2):
            tg.grad(_sqrt_loss)(np.zeros(2))  # one line, twice: shown once
        tg.grad(_sqrt_loss)(np.zeros(3))  # another line: shown too

    globals().pop("__warningregistry__", None)
    ws = _caught(twice, action="default")
    first = _line(twice) + 1
    assert [(f, n) for f, n, _ in _where(ws)] == [(HERE, first), (HERE, first + 1)]


def test_error_state_is_restored() -> None:
    before = np.geterr(), np.geterrcall()
    tg.grad(_log_loss)(np.ones(2))
    with pytest.raises(ValueError):
        tg.grad(_matmul_loss)(np.ones((2, 5)))
    assert (np.geterr(), np.geterrcall()) == before

    def sets(x: Any) -> Any:
        np.seterr(over="ignore")  # a lasting change made inside: kept, as without tapegrad
        return tnp.sum(x * x)

    old = np.geterr()
    try:
        tg.grad(sets)(np.ones(2))
        assert np.geterr() == {**old, "over": "ignore"}
        assert np.geterrcall() is before[1]
    finally:
        np.seterr(**old)


def test_code_without_a_source_file_is_warned_too() -> None:
    # code run by ``python -c`` or exec: a module whose loader has no source
    import importlib.machinery

    src = "import numpy as np, tapegrad as tg\ntg.grad(lambda x: (x / 0.0).sum())(np.ones(2))\n"
    scope = {"__name__": "__main__", "__loader__": importlib.machinery.BuiltinImporter}
    ws = _caught(lambda: exec(compile(src, "<string>", "exec"), scope))
    assert ws and all((w.filename, w.lineno) == ("<string>", 2) for w in ws)


def test_numpys_python_functions_inside_tapegrad_point_at_the_user() -> None:
    # tnp.mean runs NumPy's Python-level mean: its 0/0 is still the user's line
    def f(x: Any) -> Any:
        return tnp.sum(x) + tnp.mean(x[:0])

    ws = _caught(lambda: tg.value_and_grad(f)(np.ones(2)))
    assert (HERE, _line(f), "invalid value encountered in mean") in _where(ws)
    assert all(w.filename == HERE for w in ws)


# --- specs checked when the transform is made --------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: tg.jit(lambda x: x, static_argnums=2.0), "jit: static_argnums must be an int or a tuple of ints"),
    (lambda: tg.jit(lambda x: x, static_argnums=(0, "x")), "it holds 'x', a str"),
    (lambda: tg.vmap(lambda x: x, in_axes="x"), "in_axes must be an int, None, or a pytree"),
    (lambda: tg.vmap(lambda x, y: x, in_axes=(0, 1.5)), "it holds 1.5, a float"),
    (lambda: tg.vmap(lambda x: x, out_axes=True), "out_axes must be an int, None, or a pytree"),
])
def test_bad_specs_rejected_at_once(make: Any, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        make()


def test_good_axes_specs_accepted() -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(tg.vmap(lambda a, d: a * d["s"], in_axes=(0, {"s": None}))(x, {"s": 2.0}), 2 * x)


def test_tape_watch_of_an_int_says_how_to_convert() -> None:
    with tg.Tape() as tape, pytest.raises(TypeError, match=re.escape("pass a float instead (float(...), or 3.0)")):
        tape.watch(3)
    with tg.Tape() as tape, pytest.raises(TypeError, match=re.escape(".astype(float)")):
        tape.watch(np.arange(3))
