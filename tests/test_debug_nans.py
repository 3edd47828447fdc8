"""tg.debug_nans: the first NaN names its primitive and the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp


def _forward_nan(x):  # noqa: ANN001, ANN202
    y = x * 2.0
    return tnp.sum(tnp.sqrt(y - 3.0))  # the NaN is made here


def _backward_nan(x):  # noqa: ANN001, ANN202
    return tnp.sum(tnp.sqrt(x))  # sqrt'(0) = inf, times 0 from where -> NaN below


def test_forward_nan_names_primitive_and_line() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with tg.debug_nans(), pytest.raises(FloatingPointError) as e:
            tg.grad(_forward_nan)(np.array([1.0, 2.0]))
    msg = str(e.value)
    assert "`sqrt`" in msg and "test_debug_nans.py" in msg and "the NaN is made here" in msg


def test_backward_nan_names_the_vjp() -> None:
    def f(x):  # noqa: ANN001, ANN202
        safe = tnp.where(x > 0, x, 0.0)
        return tnp.sum(tnp.where(x > 0, tnp.sqrt(safe), 0.0) * 0.0 + tnp.sqrt(x) * 0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with tg.debug_nans(), pytest.raises(FloatingPointError, match=r"VJP of `\w+` with respect to argument \d+ holds a NaN"):
            tg.grad(f)(np.array([0.0, 1.0]))


def test_global_switch_and_zero_cost_when_off() -> None:
    from tapegrad.core.primitive import REGISTRY

    funs = {id(p): p.fun for p in REGISTRY}
    tg.debug_nans(True)
    try:
        assert any(p.fun is not funs[id(p)] for p in REGISTRY)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(FloatingPointError):
                tg.grad(lambda x: tnp.log(x - 5.0))(1.0)
    finally:
        tg.debug_nans(False)
    assert all(p.fun is funs[id(p)] for p in REGISTRY)  # restored: nothing checked, nothing paid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(tg.grad(lambda x: tnp.log(x - 5.0))(1.0) * 0.0 + tnp.log(-1.0))  # off: no raise


def test_incoming_nans_are_not_blamed_and_clean_code_passes() -> None:
    with tg.debug_nans():
        g = tg.grad(lambda x: tnp.sum(tnp.tanh(x) ** 2))(np.array([0.5, 1.0]))
        assert np.all(np.isfinite(g))
        out = tg.grad(lambda x: tnp.sum(x * 2.0))(np.array([np.nan, 1.0]))  # NaN comes in
    np.testing.assert_array_equal(out, [2.0, 2.0])
