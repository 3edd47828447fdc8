"""Batching rules of tapegrad.numpy.linalg, tapegrad.numpy.fft,
tapegrad.scipy.special, the torch facade's own primitives, and the NumPy
functions with no gradient.

For every primitive: ``vmap`` (``in_axes`` 0, 1 and None mixes) equals the
loop over the examples, stacked; ``vmap(grad(f))`` and ``grad(vmap(f))``
equal their loops (float64, real and complex inputs); and none of them runs
the loop fallback (``tapegrad.batching.loop_rule``, recorded by a fixture):
each is one vectorized call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.batching as batching
import tapegrad.numpy as tnp
import tapegrad.scipy.special as sp
from tapegrad.numpy import fft as tfft
from tapegrad.numpy import linalg as la
from tapegrad.torch import _prims as tprims

B = 3  # examples per batch
RTOL, ATOL = 1e-9, 1e-10

# the primitives this file covers: none of them may fall back to the loop, even inside
# the rules of a composed transform (other primitives there are another file's concern)
OURS = {la.inv_p, la.solve_p, la.det_p, la.adjugate_p, la.slogdet_p, la.cholesky_p, la.eigh_p,
        la.svd_p, la.svdvals_p, la.qr_p, la.pinv_p, tfft.c2c_p, tfft.rfft_p, tfft.irfft_p,
        sp.erf, sp.erfc, sp.gammaln, sp.digamma, sp.polygamma, sp.expit, sp.softmax,
        sp.log_softmax, tprims.relu, tprims.stepped, tprims.elu, tprims.to_device,
        tprims.norm_sqrt, tprims.bce, tprims.bce_logits}


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The functions ``loop_rule`` was called with (the loop fallback), in order."""
    calls: list[Any] = []
    real = batching.loop_rule

    def recording(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(fn)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(batching, "loop_rule", recording)
    return calls


# --- inputs ------------------------------------------------------------------------------------------

Maker = Callable[[np.random.Generator], Any]


def R(*shape: int) -> Maker:
    return lambda rng: rng.uniform(-2.0, 2.0, shape)


def P(*shape: int) -> Maker:  # positive
    return lambda rng: rng.uniform(0.5, 3.0, shape)


def U(*shape: int) -> Maker:  # in (0, 1)
    return lambda rng: rng.uniform(0.05, 0.95, shape)


def C(*shape: int) -> Maker:
    return lambda rng: rng.uniform(-2.0, 2.0, shape) + 1j * rng.uniform(-2.0, 2.0, shape)


def _wc(x: Any) -> Any:
    """Well conditioned."""
    return x + 3.0 * np.eye(x.shape[-1])


def _hpd(x: Any) -> Any:  # (no matmul: its rule reads .flags of a batched value, see the report)
    return tnp.sum(x[..., :, None, :] * tnp.conj(x[..., None, :, :]), axis=-1) + np.eye(x.shape[-1])


def _herm(x: Any) -> Any:
    return x + tnp.conj(tnp.swapaxes(x, -1, -2))


def _eigh(x: Any, uplo: str = "L") -> Any:  # phase-invariant functions of the eigenvectors
    lam, v = la.eigh(_herm(x), UPLO=uplo)
    return lam[..., None, :] * tnp.real(v * tnp.conj(v)) + lam[..., :, None]


def _svd(x: Any) -> Any:
    u, s, vh = la.svd(x, full_matrices=False)
    pu, pv = tnp.real(u * tnp.conj(u)), tnp.real(vh * tnp.conj(vh))
    return tnp.sum(pu * s[..., None, :], axis=-2) + tnp.sum(pv * s[..., :, None] ** 2, axis=-1) + s


def _qr(x: Any) -> Any:  # |Q| and R's diagonal-signed entries are not phase-invariant: |.|^2
    q, r = la.qr(x)
    return tnp.sum(tnp.real(q * tnp.conj(q)) * (1.0 + np.arange(q.shape[-1])), axis=-2) + \
        tnp.sum(tnp.real(r * tnp.conj(r)), axis=-1)


def _slogdet(x: Any) -> Any:
    sign, logdet = la.slogdet(_wc(x))
    return logdet + tnp.real(sign)


class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    makers: tuple[Maker, ...]
    grad: bool = True  # differentiable
    argnums: tuple[int, ...] | None = None  # the differentiable arguments (None: all)


CASES = [
    # --- linalg
    Case("inv", lambda x: la.inv(_wc(x)), (R(3, 3),)),
    Case("inv_stack_complex", lambda x: la.inv(_wc(x)), (C(2, 3, 3),)),
    Case("solve_vec", lambda a, b: la.solve(_wc(a), b), (R(3, 3), R(3))),
    Case("solve_mat", lambda a, b: la.solve(_wc(a), b), (R(3, 3), R(3, 2))),
    Case("solve_stack_vec", lambda a, b: la.solve(_wc(a), b), (R(2, 3, 3), R(3))),
    Case("solve_mat_stack", lambda a, b: la.solve(_wc(a), b), (R(3, 3), R(2, 3, 2))),
    Case("solve_complex", lambda a, b: la.solve(_wc(a), b), (C(3, 3), C(3))),
    Case("det", lambda x: la.det(_wc(x)), (R(3, 3),)),
    Case("det_complex", lambda x: la.det(_wc(x)), (C(3, 3),)),
    Case("adjugate", lambda x: la.adjugate_p(_wc(x)), (R(3, 3),)),
    Case("slogdet", _slogdet, (R(2, 3, 3),)),
    Case("slogdet_complex", _slogdet, (C(3, 3),)),
    Case("cholesky", lambda x: la.cholesky(_hpd(x)), (R(3, 3),)),
    Case("cholesky_upper_complex", lambda x: la.cholesky(_hpd(x), upper=True), (C(3, 3),)),
    Case("eigh", _eigh, (R(3, 3),)),
    Case("eigh_upper_complex", lambda x: _eigh(x, "U"), (C(3, 3),)),
    Case("eigvalsh", lambda x: la.eigvalsh(_herm(x)), (R(2, 3, 3),)),
    Case("svd_tall", _svd, (R(3, 2),)),
    Case("svd_wide_complex", _svd, (C(2, 3),)),
    Case("svdvals", la.svdvals, (R(3, 2),)),
    Case("svd_no_uv_complex", lambda x: la.svd(x, compute_uv=False), (C(2, 3),)),
    Case("norm_2_nuc", lambda x: la.norm(x, 2) + la.norm(x, "nuc"), (R(3, 2),)),
    Case("qr_tall", _qr, (R(3, 2),)),
    Case("qr_wide", _qr, (R(2, 3),)),
    Case("qr_complex", _qr, (C(3, 3),)),
    Case("pinv", la.pinv, (R(3, 2),)),
    Case("pinv_complex", la.pinv, (C(2, 3),)),
    # --- fft (per-example axes: the defaults must stay the example's own)
    Case("fft", tfft.fft, (R(3, 4),)),
    Case("fft_n_axis_ortho", lambda x: tfft.fft(x, 5, axis=0, norm="ortho"), (C(3, 4),)),
    Case("ifft_forward", lambda x: tfft.ifft(x, norm="forward"), (C(4),)),
    Case("fft2", tfft.fft2, (C(2, 3, 4),)),
    Case("fftn_default", tfft.fftn, (C(3, 4),)),
    Case("fftn_s", lambda x: tfft.fftn(x, s=(2, 5), axes=(-2, -1)), (R(2, 3, 4),)),
    Case("fft_truncated", lambda x: tfft.fft(x, 2), (C(3, 4),)),
    Case("ifftn_axes", lambda x: tfft.ifftn(x, axes=(0, -1)), (C(2, 3, 4),)),
    Case("rfft", lambda x: tfft.rfft(x, n=6), (R(3, 4),)),
    Case("rfft_axis0", lambda x: tfft.rfft(x, axis=0, norm="ortho"), (R(5, 2),)),
    Case("irfft", tfft.irfft, (C(3, 4),)),
    Case("irfft_n_axis0", lambda x: tfft.irfft(x, 5, 0, "forward"), (C(3, 2),)),
    # --- scipy.special
    Case("erf", sp.erf, (R(2, 3),)),
    Case("erfc", sp.erfc, (R(4),)),
    Case("gammaln", sp.gammaln, (P(2, 3),)),
    Case("digamma", sp.digamma, (P(4),)),
    Case("polygamma", lambda x: sp.polygamma(2, x), (P(4),)),
    Case("polygamma_n", sp.polygamma, (lambda rng: rng.integers(0, 3, 4), P(4)), grad=False),
    Case("expit", sp.expit, (R(2, 3),)),
    Case("logit", sp.logit, (U(4),)),
    Case("softmax_all", sp.softmax, (R(2, 3),)),
    Case("softmax_axis0", lambda x: sp.softmax(x, 0), (R(2, 3),)),
    Case("log_softmax_all", sp.log_softmax, (R(2, 3),)),
    Case("log_softmax_axes", lambda x: sp.log_softmax(x, axis=(0, -1)), (R(2, 2, 3),)),
    Case("log_softmax_neg", lambda x: sp.log_softmax(x, axis=-1), (R(2, 3),)),
    # --- the torch facade's primitives
    Case("relu", tprims.relu, (R(2, 3),)),
    Case("stepped", lambda x: tprims.stepped(x, tnp.floor(x)) + x, (R(5),)),
    Case("stepped_common_result", lambda x, r: tprims.stepped(x, r) * x, (R(5), R(5)), argnums=(0,)),
    Case("elu", lambda x: tprims.elu(x, 1.5), (R(2, 3),)),
    Case("elu_from_result", lambda x: tprims.elu(x, 0.5, True), (R(5),)),
    Case("to_device", lambda x: tprims.to_device(x, "cpu") * 2.0, (R(2, 3),)),
    Case("norm_sqrt", tprims.norm_sqrt, (P(2, 3),)),
    Case("bce", tprims.bce, (U(2, 3), U(2, 3))),
    Case("bce_logits", lambda x, y: tprims.bce_logits(x, y, None), (R(4), U(4))),
    Case("bce_logits_pw", lambda x, y, pw: tprims.bce_logits(x, y, pw), (R(4), U(4), P(4)), argnums=(0, 1)),
]



def _nan(*shape: int) -> Maker:  # small integers (ties) and NaNs
    def make(rng: np.random.Generator) -> np.ndarray:
        x = rng.integers(-1, 5, shape).astype(float)
        return np.where(rng.random(shape) < 0.2, np.nan, x)
    return make


def I(*shape: int) -> Maker:  # noqa: E743  (small integers, as floats: ties)
    return lambda rng: rng.integers(0, 4, shape).astype(float)


def _sorted_edges(nan: bool = False) -> Maker:  # ties; a NaN sorts last
    return lambda rng: np.sort(np.append(rng.integers(0, 5, 5).astype(float), [np.nan] if nan else []))


def _either_way(rng: np.random.Generator) -> np.ndarray:  # increasing or decreasing, per example
    return np.sort(rng.integers(0, 5, 4).astype(float))[:: rng.choice([1, -1])]


def _sign_all(rng: np.random.Generator) -> np.ndarray:
    return np.full(3, rng.choice([-1.0, 1.0]))


def _maybe_complex(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 3, 4) + 1j * rng.integers(0, 2, 4)


# functions with no gradient (tapegrad.batching.apply_nondifferentiable)
NONDIFF = [
    Case("greater", tnp.greater, (R(2, 3), R(3)), grad=False),
    Case("operators", lambda x, y: tnp.logical_or(tnp.logical_and(x > y, ~(x <= 0.5)), y == x), (I(2, 3), I(3)),
         grad=False),
    Case("sign_floor_trunc", lambda x: tnp.sign(x) + tnp.floor(x) * tnp.trunc(x) - tnp.ceil(x), (R(5),), grad=False),
    Case("isnan_isinf_isfinite", lambda x: tnp.logical_xor(tnp.isnan(x), tnp.isinf(x)) + tnp.isfinite(x), (_nan(4),), grad=False),
    Case("signbit_logical", lambda x: tnp.logical_or(tnp.signbit(x), tnp.logical_not(x > 1)), (R(4),), grad=False),
    Case("floor_divide_heaviside", lambda x, y: tnp.floor_divide(x, y, casting="same_kind") + tnp.heaviside(x, 0.5),
         (I(4), P(4)), grad=False),
    Case("invert_bitwise", lambda x, y: tnp.bitwise_xor(tnp.invert(x), y),
         (lambda rng: rng.integers(0, 9, 4), lambda rng: rng.integers(0, 9, 4)), grad=False),
    Case("around_round_fix", lambda x: tnp.around(x, 2) + tnp.round(x, decimals=1) + tnp.fix(x), (R(4),), grad=False),
    Case("isreal_iscomplex", lambda z: tnp.bitwise_and(tnp.isreal(z), ~tnp.iscomplex(z)), (_maybe_complex,), grad=False),
    Case("isclose", lambda x, y: tnp.isclose(x, y, rtol=0.5), (R(2, 3), R(3)), grad=False),
    Case("isclose_positional", lambda x, y: tnp.isclose(x, y, 0.1, 0.9, True), (_nan(4), _nan(4)), grad=False),
    Case("allclose", lambda x, y: tnp.allclose(x, y, atol=1.5), (R(2), R(2)), grad=False),
    Case("array_equal", lambda x, m: tnp.array_equal(x, tnp.where(m > 0, x, 0.5)), (R(3), _sign_all), grad=False),
    Case("array_equal_nan", lambda x, m: tnp.array_equal(x, x * m, equal_nan=True), (_nan(3), _sign_all), grad=False),
    Case("array_equal_shapes", tnp.array_equal, (R(3), R(2)), grad=False),
    Case("argmax_flat", tnp.argmax, (I(2, 4),), grad=False),
    Case("argmax_positional", lambda x: tnp.argmax(x, 1), (I(2, 4),), grad=False),
    Case("argmax_keepdims", lambda x: tnp.argmax(x, axis=-1, keepdims=True), (I(2, 4),), grad=False),
    Case("argmin_flat_keepdims", lambda x: tnp.argmin(x, keepdims=True), (I(2, 4),), grad=False),
    Case("argmin_method", lambda x: x.argmin(axis=0), (I(2, 4),), grad=False),
    Case("argsort", tnp.argsort, (I(2, 4),), grad=False),
    Case("argsort_flat", lambda x: tnp.argsort(x, axis=None, stable=True), (I(2, 4),), grad=False),
    Case("argsort_axis0", lambda x: tnp.argsort(x, 0, "stable"), (I(2, 4),), grad=False),
    Case("argsort_scalar", lambda x: tnp.argsort(x[0]), (R(1),), grad=False),
    Case("any_all", lambda x: tnp.logical_and(tnp.any(x > 2), tnp.all(x >= 0, axis=None)), (I(2, 4),), grad=False),
    Case("any_axis_keepdims", lambda x: tnp.any(x > 2, 0, None, True), (I(2, 4),), grad=False),
    Case("all_method", lambda x: (x > 0).all(axis=-1), (I(2, 4),), grad=False),
    Case("count_nonzero", lambda x: tnp.count_nonzero(x), (I(2, 4),), grad=False),
    Case("count_nonzero_axes", lambda x: tnp.count_nonzero(x, axis=(0, -1)), (I(2, 2, 4),), grad=False),
    Case("count_nonzero_keepdims", lambda x: tnp.count_nonzero(x, axis=-2, keepdims=True), (I(2, 4),), grad=False),
    Case("searchsorted", tnp.searchsorted, (_sorted_edges(), _nan(2, 3)), grad=False),
    Case("searchsorted_right_nan", lambda a, v: tnp.searchsorted(a, v, side="right"), (_sorted_edges(True), _nan(4)),
         grad=False),
    Case("searchsorted_scalar", lambda a, v: tnp.searchsorted(a, v[0], "left"), (_sorted_edges(True), _nan(1)),
         grad=False),
    Case("searchsorted_sorter", lambda a, v: tnp.searchsorted(a, v, sorter=tnp.argsort(a)), (_nan(5), I(3)),
         grad=False),
    Case("digitize", tnp.digitize, (_nan(2, 3), _either_way), grad=False),
    Case("digitize_right", lambda x, b: tnp.digitize(x, b, right=True), (I(5), _either_way), grad=False),
    Case("digitize_constant_bins", lambda x, b: tnp.digitize(x, b * 0.0 + 2.0, True), (I(5), _either_way), grad=False),
    Case("nondiff_in_a_gradient", lambda x: tnp.where(x > 0, x, 0.1 * x) * tnp.sign(x) + tnp.floor(x), (R(5),)),
]
CASES += NONDIFF

# which arguments the in_axes variants map (None: shared by every example)
AXES_1 = [(0,), (1,), (-1,)]
AXES_2 = [(0, 0), (1, 0), (None, 0), (0, None)]
AXES_3 = [(0, 0, 0), (None, 1, 0), (0, None, None)]


def _variants() -> list[Any]:
    out = []
    for c in CASES:
        for axes in {1: AXES_1, 2: AXES_2, 3: AXES_3}[len(c.makers)]:
            if any(ax is not None and abs(ax) > len(np.shape(m(np.random.default_rng(0)))) for ax, m in zip(axes, c.makers)):
                continue
            out.append(pytest.param(c, axes, id=f"{c.name}-{axes}"))
    return out


def _examples(c: Case, axes: tuple[Any, ...], seed: int = 0) -> tuple[list[Any], list[tuple[Any, ...]]]:
    """The batched arguments (each example's stacked on its axis, or shared) and the examples."""
    rng = np.random.default_rng(seed)
    per = [tuple(m(rng) for m in c.makers) for _ in range(B)]
    args = [per[0][i] if ax is None else np.stack([p[i] for p in per], axis=ax) for i, ax in enumerate(axes)]
    examples = [tuple(per[0][i] if ax is None else p[i] for i, ax in enumerate(axes)) for p in per]
    return args, examples


def _leaves(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple) else [out]


def _assert_stacked(got: Any, wants: list[Any]) -> None:
    got_leaves = _leaves(got)
    for j, g in enumerate(got_leaves):
        want = np.stack([np.asarray(_leaves(w)[j]) for w in wants])
        assert np.shape(g) == want.shape
        assert np.asarray(g).dtype == want.dtype, (np.asarray(g).dtype, want.dtype)
        np.testing.assert_allclose(g, want, rtol=RTOL, atol=ATOL)


def _weights(shape: tuple[int, ...], k: float) -> np.ndarray:
    return np.sin(k + np.arange(int(np.prod(shape)))).reshape(shape)


def _scalar(out: Any, batched: bool = False) -> Any:
    """A fixed real weighting of the per-example outputs: a real scalar per
    example (summed over the examples for a ``batched`` output, batch on axis 0)."""
    total: Any = 0.0
    for leaf in _leaves(out):
        shape = tuple(leaf.shape)[batched:]
        if not shape:  # (an axis of 1: ``imag``'s rule on a 0-d cotangent fails, see the report)
            leaf, shape = tnp.expand_dims(leaf, -1), (1,)
        total = total + tnp.sum(tnp.real(leaf) * _weights(shape, 1.0))
        if np.iscomplexobj(leaf):
            total = total + tnp.sum(tnp.imag(leaf) * _weights(shape, 2.0))
    return total


def _mine(calls: list[Any]) -> list[str]:
    return [getattr(f, "__name__", repr(f)) for f in calls if f in OURS]


# --- vmap == the loop ------------------------------------------------------------------------------


@pytest.mark.parametrize("case, axes", _variants())
def test_vmap_equals_the_loop(case: Case, axes: tuple[Any, ...], loops: list[Any]) -> None:
    args, examples = _examples(case, axes)
    got = tg.vmap(case.fn, in_axes=axes)(*args)
    assert loops == []  # every primitive on the way ran its own rule
    _assert_stacked(got, [case.fn(*ex) for ex in examples])


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_vmap_of_grad_equals_the_loop(case: Case, loops: list[Any]) -> None:
    n = len(case.makers)
    axes = (0,) + (None,) * (n - 1) if n > 1 else (0,)
    argnums = case.argnums or tuple(range(n))
    g = tg.grad(lambda *a: _scalar(case.fn(*a)), argnums=argnums)
    for ax in {axes, (0,) * n}:
        args, examples = _examples(case, ax, seed=1)
        got = tg.vmap(g, in_axes=ax)(*args)
        wants = [g(*ex) for ex in examples]
        assert _mine(loops) == []
        _assert_stacked(tuple(got), [tuple(w) for w in wants])


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=lambda c: c.name)
def test_grad_of_vmap_equals_the_loop(case: Case, loops: list[Any]) -> None:
    n = len(case.makers)
    axes = (0,) * n if n == 1 else (None,) + (0,) * (n - 1)
    args, examples = _examples(case, axes, seed=2)
    argnums = case.argnums or tuple(range(n))
    got = tg.grad(lambda *a: _scalar(tg.vmap(case.fn, in_axes=axes)(*a), batched=True), argnums=argnums)(*args)
    assert _mine(loops) == []
    per = [tg.grad(lambda *a: _scalar(case.fn(*a)), argnums=argnums)(*ex) for ex in examples]
    for k, i in enumerate(argnums):
        want = sum(p[k] for p in per) if axes[i] is None else np.stack([p[k] for p in per])
        np.testing.assert_allclose(got[k], want, rtol=RTOL, atol=ATOL)


def test_jvp_of_vmap_and_nested_vmap(loops: list[Any]) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, B, 3, 3)) + 3 * np.eye(3), rng.standard_normal((2, B, 3))
    out = tg.vmap(tg.vmap(la.solve))(a, b)  # two batch levels: the rule runs at each
    np.testing.assert_allclose(out, np.linalg.solve(a, b[..., None])[..., 0], rtol=RTOL)
    x = rng.standard_normal((2, B, 4)) + 1j * rng.standard_normal((2, B, 4))
    np.testing.assert_allclose(tg.vmap(tg.vmap(tfft.fft))(x), np.fft.fft(x), rtol=RTOL)
    np.testing.assert_allclose(tg.vmap(tg.vmap(sp.softmax), in_axes=1)(x.real),
                               np.moveaxis(np.exp(x.real) / np.exp(x.real).sum(-1, keepdims=True), 1, 0))
    t = rng.standard_normal((B, 3, 3))
    _, tan = tg.jvp(tg.vmap(la.inv), (a[0],), (t,))
    ainv = np.linalg.inv(a[0])
    np.testing.assert_allclose(tan, -ainv @ t @ ainv, rtol=1e-8)
    assert _mine(loops) == []


def test_solve_with_one_matrix_and_many_right_hand_sides_is_one_solve(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = []
    real = np.linalg.solve

    def spy(a: Any, b: Any) -> Any:
        shapes.append((np.shape(a), np.shape(b)))
        return real(a, b)

    monkeypatch.setattr(np.linalg, "solve", spy)
    a = _wc(np.random.default_rng(4).standard_normal((3, 3)))
    for b, want in [(np.ones((5, 3, 2)), (3, 10)), (np.ones((5, 3)), (3, 5))]:
        shapes.clear()
        x = tg.vmap(la.solve, in_axes=(None, 0))(a, b)
        np.testing.assert_allclose(x, real(a, b.reshape(5, 3, -1)).reshape(b.shape))
        assert shapes == [((3, 3), want)]  # the batch joined the columns: one factorization


@pytest.mark.parametrize("case", [c for c in NONDIFF if len(c.makers) < 3], ids=lambda c: c.name)
def test_nondifferentiable_in_nested_vmap(case: Case, loops: list[Any]) -> None:
    rng = np.random.default_rng(5)
    per = [[tuple(m(rng) for m in case.makers) for _ in range(2)] for _ in range(B)]
    args = [np.stack([np.stack([p[i] for p in row]) for row in per]) for i in range(len(case.makers))]
    got = tg.vmap(tg.vmap(case.fn))(*args)
    assert loops == []
    want = [np.stack([np.asarray(case.fn(*p)) for p in row]) for row in per]
    _assert_stacked(got, want)


def test_metadata_is_per_example() -> None:
    x = np.ones((B, 2, 5), np.float32)
    out = tg.vmap(lambda v: (tnp.shape(v), tnp.ndim(v), tnp.size(v), tnp.size(v, 1),
                             tnp.result_type(v, 1.0), tnp.iscomplexobj(v), tnp.isrealobj(v)), out_axes=None)(x)
    assert out == ((2, 5), 2, 10, 5, np.float32, False, True)
    z = tg.vmap(lambda v: tnp.zeros_like(v) + tnp.ones_like(v, dtype=int) + v)(x)
    np.testing.assert_array_equal(z, 2 * x)


def test_data_shaped_results_loop() -> None:
    x = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])
    rows, = tg.vmap(tnp.nonzero)(x)  # (the same count in each example: they stack)
    np.testing.assert_array_equal(rows, [[0, 2], [1, 2]])
    np.testing.assert_array_equal(tg.vmap(tnp.flatnonzero)(x), [[0, 2], [1, 2]])
    hist, edges = tg.vmap(lambda v: tnp.histogram(v, bins=2, range=(0, 4)))(x)
    np.testing.assert_array_equal(hist, [[2, 1], [1, 2]])
    np.testing.assert_array_equal(edges, [[0, 2, 4], [0, 2, 4]])
    np.testing.assert_array_equal(tg.vmap(lambda v: tnp.bincount(v, minlength=3))(np.array([[0, 2], [1, 1]])),
                                  [[1, 0, 1], [0, 2, 0]])
    with pytest.raises(ValueError, match="nonzero gives each example a result whose shape depends on its values"):
        tg.vmap(tnp.nonzero)(np.array([[1.0, 0.0], [1.0, 1.0]]))


def test_digitize_needs_monotonic_bins_in_every_example() -> None:
    bins = np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 1.0]])
    with pytest.raises(ValueError, match="monotonically"):
        tg.vmap(tnp.digitize)(np.ones((2, 3)), bins)


def test_fft_axes_none_with_s_are_the_examples_last_axes() -> None:
    x = np.random.default_rng(6).standard_normal((B, 2, 3, 4))
    out = tg.vmap(lambda v: tfft.c2c_p(v, s=(2, 5), axes=None, norm="ortho", inverse=True))(x)
    np.testing.assert_allclose(out, np.fft.ifftn(x, (2, 5), axes=(-2, -1), norm="ortho"), rtol=RTOL)


def test_rules_are_errors_where_numpy_errs() -> None:
    x = np.ones((B, 3))
    with pytest.raises(np.exceptions.AxisError):
        tg.vmap(lambda v: sp.softmax(v, axis=1))(x)
    with pytest.raises(np.exceptions.AxisError):
        tg.vmap(lambda v: tfft.c2c_p(v, s=None, axes=(1,), norm="backward", inverse=False))(x)
    with pytest.raises(np.linalg.LinAlgError):
        tg.vmap(la.inv)(np.zeros((B, 3, 3)))


def test_searchsorted_with_only_the_sorter_batched(loops: list[Any]) -> None:
    a, v = np.array([3.0, 1.0, np.nan, 2.0]), np.array([[0.0, 2.0, np.nan]])
    sorters = np.stack([np.argsort(a), np.argsort(a, stable=True)])
    out = tg.vmap(lambda s: tnp.searchsorted(a, v, "right", s))(sorters)
    np.testing.assert_array_equal(out, [np.searchsorted(a, v, "right", s) for s in sorters])
    assert loops == []
