"""Every row of the op table (tests/optable.py) on CuPy arrays gives the CPU's results.

Per row, on device inputs: the value, the VJP (order 1), the gradient of a
gradient (order 2, where the row has it), the JVP, ``vmap`` of the gradient
and ``jit`` of ``value_and_grad``. Each result must be a device array (no rule
makes a host array of a device input) and equal the CPU result. Runs on real
CuPy with a CUDA device, else on the CPU model of CuPy (the ``cp`` fixture).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from cupy_model.ondevice import device_module, on_device, to_device, to_host
from optable import EMPTY, OPS, Case

import tapegrad as tg
import tapegrad.numpy as tnp


def _args(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(1234)
    return [np.asarray(make(rng)) for make in case.args]


def _cotangent(out: Any, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(np.shape(out))
    return u.astype(np.result_type(out)) if np.iscomplexobj(out) else u


def _programs(case: Case, m: Any, fn: Any, ct: np.ndarray, ct_dev: Any) -> dict[str, Any]:
    """The transforms of one row, each a function of the row's inputs."""
    f = lambda *xs: fn(m, *xs)  # noqa: E731
    n = len(case.args)
    argnums = tuple(range(n))

    def scalar(*xs: Any) -> Any:
        return tnp.sum(tnp.real(f(*xs) * ct_dev))

    def grad2(*xs: Any) -> Any:
        g = tg.grad(scalar, argnums=argnums)(*xs)
        return tnp.sum(sum(tnp.sum(tnp.sin(gi)) for gi in g))

    progs: dict[str, Any] = {
        "value": f,
        "vjp": lambda *xs: tg.vjp(f, *xs)[1](ct_dev),
        "jvp": lambda *xs: tg.jvp(f, xs, tuple(x * 0.5 + 0.25 for x in xs))[1],
        "vmap_grad": lambda *xs: tg.vmap(tg.grad(scalar, argnums=argnums))(*(tnp.stack([x, x * 0.5]) for x in xs)),
        "jit_value_and_grad": lambda *xs: tg.jit(tg.value_and_grad(scalar, argnums=argnums))(*xs),
    }
    if case.order >= 2:
        progs["grad_of_grad"] = lambda *xs: tg.grad(grad2, argnums=argnums)(*xs)
    return progs


def _device_leaves(x: Any, cp: Any) -> list[str]:
    """Types of the array leaves of ``x`` that are not device arrays."""
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _device_leaves(v, cp)]
    if type(x) is cp.ndarray:
        return []
    return [type(x).__name__]


ROWS = OPS + EMPTY

# rows' programs that do not give the CPU's results on CuPy. One cause left: CuPy has no
# Bessel functions of any order but 0 and 1 (and ``yn``): no ``jv``/``jn``, ``iv``, ``ive`` in
# cupyx.scipy.special (CuPy 13), so ``tapegrad.scipy.special.jn``/``iv``/``ive`` raise on the
# device (TypeError naming the missing cupyx function, tested in test_cupy_library). A fix
# removes its entry.
_NO_CUPYX = {'value', 'vjp', 'jvp', 'vmap_grad', 'jit_value_and_grad', 'grad_of_grad'}
KNOWN_FAILING: dict[str, set[str]] = {
    'special_jn': _NO_CUPYX,
    'special_jn_orders': _NO_CUPYX,
    'special_iv': _NO_CUPYX,
    'special_iv_int': _NO_CUPYX,
    'special_ive': _NO_CUPYX,
    'special_ive_neg': _NO_CUPYX,
}


def _failures(case: Case, cp: Any) -> list[str]:
    """What differs on the device: ``"program: why"`` for each program of the row."""
    args = _args(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = case.fn(np, *args)
    ct = _cotangent(out)
    host = _programs(case, tnp, case.fn, ct, ct)
    dev = _programs(case, device_module(tnp, cp), on_device(case.fn, cp), ct, cp.asarray(ct))
    dargs = to_device(args, cp)
    failures = []
    for name, prog in host.items():
        if case in EMPTY and name != "value":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = prog(*args)
            except Exception:  # noqa: BLE001, S112  # not defined on the CPU either: nothing to compare
                continue
            try:
                got = dev[name](*dargs)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name}: {type(e).__name__}: {e}"[:300])
                continue
        stray = _device_leaves(got, cp)
        if stray:
            failures.append(f"{name}: host results {stray}")
            continue
        try:
            np.testing.assert_allclose(_flat(to_host(got, cp)), _flat(want), rtol=1e-9, atol=1e-11)
        except AssertionError as e:
            failures.append(f"{name}: values differ: {str(e)[:200]}")
    return failures


@pytest.mark.parametrize("case", ROWS, ids=lambda c: c.name)
def test_row_on_device_matches_cpu(case: Case, cp: Any) -> None:
    """Every program of the row gives the CPU's result on the device, except the ones
    listed in ``KNOWN_FAILING`` (open work, see docs/gpu.md), which must still fail:
    a fix removes its entry."""
    failures = _failures(case, cp)
    failed = {f.split(":")[0] for f in failures}
    known = KNOWN_FAILING.get(case.name, set())
    assert failed <= known, "\n".join(f for f in failures if f.split(":")[0] not in known)
    assert failed == known, f"now passing on the device (remove from KNOWN_FAILING): {sorted(known - failed)}"


def _flat(x: Any) -> np.ndarray:
    if isinstance(x, (list, tuple)):
        parts = [_flat(v) for v in x]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.ravel(np.asarray(x)).astype(complex)
