"""The op table: one line per differentiable operation of tapegrad.numpy.

Each case is ``fn(m, *args)``, written once against a module ``m``: the tests
call it with ``numpy`` (the reference values) and with ``tapegrad.numpy``
(the values and derivatives under test). Domains keep inputs where each
function is smooth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np


class Case(NamedTuple):
    name: str
    fn: Callable[..., Any]
    args: tuple[Callable[[np.random.Generator], np.ndarray], ...]
    order: int = 2


def R(*shape: int, lo: float = -2.0, hi: float = 2.0) -> Callable[[np.random.Generator], np.ndarray]:
    """Uniform in [lo, hi], kept away from 0 (no kinks at the origin)."""
    def make(rng: np.random.Generator) -> np.ndarray:
        x = rng.uniform(lo, hi, size=shape)
        return np.where(np.abs(x) < 0.1, 0.1 + np.abs(x), x) if lo < 0 < hi else x
    return make


def P(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return R(*shape, lo=0.5, hi=2.0)


def U(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return R(*shape, lo=-0.8, hi=0.8)


def C(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    def make(rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(0.3, 1.5, size=shape) + 1j * rng.uniform(-1.0, 1.0, size=shape)
    return make


def case(name: str, fn: Callable[..., Any], *args: Any, order: int = 2) -> Case:
    return Case(name, fn, args, order)


def _setitem(m: Any, x: Any) -> Any:
    y = x * 1.0
    y[0] = 5.0
    y[1:, 0] = x[0, 1:3] * 2
    y[2] += x[1]
    return y


def _inplace_ops(m: Any, x: Any) -> Any:
    y = x + 0.0
    y *= x
    y -= 1.0
    y /= 2.0
    return y


OPS: list[Case] = [
    # --- elementwise, one argument
    case("negative", lambda m, x: m.negative(x), R(3, 4)),
    case("positive", lambda m, x: m.positive(x), R(3, 4)),
    case("abs", lambda m, x: m.abs(x), R(3, 4)),
    case("absolute", lambda m, x: m.absolute(x), R(3, 4)),
    case("sqrt", lambda m, x: m.sqrt(x), P(3, 4)),
    case("cbrt", lambda m, x: m.cbrt(x), R(3, 4)),
    case("square", lambda m, x: m.square(x), R(3, 4)),
    case("exp", lambda m, x: m.exp(x), R(3, 4)),
    case("exp2", lambda m, x: m.exp2(x), R(3, 4)),
    case("expm1", lambda m, x: m.expm1(x), R(3, 4)),
    case("log", lambda m, x: m.log(x), P(3, 4)),
    case("log2", lambda m, x: m.log2(x), P(3, 4)),
    case("log10", lambda m, x: m.log10(x), P(3, 4)),
    case("log1p", lambda m, x: m.log1p(x), P(3, 4)),
    case("sin", lambda m, x: m.sin(x), R(3, 4)),
    case("cos", lambda m, x: m.cos(x), R(3, 4)),
    case("tan", lambda m, x: m.tan(x), U(3, 4)),
    case("arcsin", lambda m, x: m.arcsin(x), U(3, 4)),
    case("arccos", lambda m, x: m.arccos(x), U(3, 4)),
    case("arctan", lambda m, x: m.arctan(x), R(3, 4)),
    case("sinh", lambda m, x: m.sinh(x), R(3, 4)),
    case("cosh", lambda m, x: m.cosh(x), R(3, 4)),
    case("tanh", lambda m, x: m.tanh(x), R(3, 4)),
    case("arcsinh", lambda m, x: m.arcsinh(x), R(3, 4)),
    case("arccosh", lambda m, x: m.arccosh(x), R(3, 4, lo=1.2, hi=3.0)),
    case("arctanh", lambda m, x: m.arctanh(x), U(3, 4)),
    case("reciprocal", lambda m, x: m.reciprocal(x), R(3, 4)),
    case("sinc", lambda m, x: m.sinc(x), R(3, 4)),
    case("deg2rad", lambda m, x: m.deg2rad(x), R(3, 4)),
    case("rad2deg", lambda m, x: m.rad2deg(x), R(3, 4)),
    case("radians", lambda m, x: m.radians(x), R(3, 4)),
    case("degrees", lambda m, x: m.degrees(x), R(3, 4)),
    case("real", lambda m, x: m.real(x), R(3, 4)),
    case("imag", lambda m, x: m.imag(x) + x, R(3, 4)),
    case("conj", lambda m, x: m.conj(x), R(3, 4)),
    case("angle", lambda m, x: m.angle(x) + x, R(3, 4)),
    case("sin_0d", lambda m, x: m.sin(x), R()),
    # --- elementwise, several arguments, with broadcasting
    case("add", lambda m, x, y: m.add(x, y), R(3, 1), R(4)),
    case("subtract", lambda m, x, y: m.subtract(x, y), R(3, 4), R(1, 4)),
    case("multiply", lambda m, x, y: m.multiply(x, y), R(2, 3, 1), R(3, 4)),
    case("divide", lambda m, x, y: m.divide(x, y), R(3, 4), R(4)),
    case("true_divide", lambda m, x, y: m.true_divide(x, y), R(3, 1), R(3, 4)),
    case("power", lambda m, x, y: m.power(x, y), P(3, 4), R(3, 4)),
    case("power_int", lambda m, x: m.power(x, 3), R(3, 4)),
    case("power_scalar_base", lambda m, x: m.power(2.0, x), R(3, 4)),
    case("arctan2", lambda m, y, x: m.arctan2(y, x), R(3, 4), R(4)),
    case("maximum", lambda m, x, y: m.maximum(x, y), R(3, 4), R(4)),
    case("minimum", lambda m, x, y: m.minimum(x, y), R(3, 4), R(3, 1)),
    case("fmax", lambda m, x, y: m.fmax(x, y), R(3, 4), R(3, 4)),
    case("fmin", lambda m, x, y: m.fmin(x, y), R(3, 4), R(3, 4)),
    case("hypot", lambda m, x, y: m.hypot(x, y), R(3, 4), R(3, 4)),
    case("logaddexp", lambda m, x, y: m.logaddexp(x, y), R(3, 4), R(4)),
    case("logaddexp2", lambda m, x, y: m.logaddexp2(x, y), R(3, 4), R(4)),
    case("mod", lambda m, x: m.mod(x, 1.7), P(3, 4)),
    case("clip", lambda m, x: m.clip(x, -1.0, 1.0), R(3, 4)),
    case("clip_traced_bounds", lambda m, x, lo, hi: m.clip(x, lo, hi), R(3, 4), R(4, lo=-1.5, hi=-0.5), R(4, lo=0.5, hi=1.5)),
    case("where", lambda m, x, y: m.where(x > 0, x, y), R(3, 4), R(4)),
    case("select", lambda m, x: m.select([x < -1, x > 1], [x * 2, m.sin(x)], x ** 2), R(3, 4)),
    # --- operators and methods of traced values
    case("op_arith", lambda m, x, y: (x + y) * (x - y) / (2 + y) - 3 / x + (-x) ** 2, R(3, 4), R(4)),
    case("op_pow", lambda m, x: x ** 2 + 2 ** x + abs(x) ** 0.5, R(3, 4)),
    case("op_matmul", lambda m, a, b: a @ b, R(3, 4), R(4, 2)),
    case("op_inplace", _inplace_ops, R(3, 4)),
    case("methods", lambda m, x: x.T.reshape(2, 6).sum(axis=0) * x.mean() + x.max() - x.min(axis=1).prod(), R(3, 4)),
    case("methods_stats", lambda m, x: x.std(axis=0) + x.var(ddof=1) + x.cumsum(axis=1).ravel()[3], R(3, 4)),
    case("iter_axis0", lambda m, x: sum(row * i for i, row in enumerate(x)), R(3, 4)),
    # --- reductions and scans
    case("sum", lambda m, x: m.sum(x), R(3, 4)),
    case("sum_axis0", lambda m, x: m.sum(x, axis=0), R(3, 4)),
    case("sum_neg_axis_keepdims", lambda m, x: m.sum(x, axis=-1, keepdims=True), R(2, 3, 4)),
    case("sum_axes_tuple", lambda m, x: m.sum(x, axis=(0, 2)), R(2, 3, 4)),
    case("mean", lambda m, x: m.mean(x, axis=1), R(3, 4)),
    case("mean_keepdims", lambda m, x: m.mean(x, axis=(-1, 0), keepdims=True), R(2, 3, 4)),
    case("prod", lambda m, x: m.prod(x, axis=0), R(3, 4)),
    case("prod_all", lambda m, x: m.prod(x), R(2, 3)),
    case("prod_with_zero", lambda m, x: m.prod(x * m.array([1.0, 0.0, 1.0]), axis=-1), R(2, 3)),
    case("max", lambda m, x: m.max(x), R(3, 4)),
    case("amax_axis", lambda m, x: m.amax(x, axis=-1), R(3, 4)),
    case("min_keepdims", lambda m, x: m.min(x, axis=0, keepdims=True), R(3, 4)),
    case("amin", lambda m, x: m.amin(x, axis=(0, 1)), R(2, 3, 2)),
    case("std", lambda m, x: m.std(x, axis=0), R(3, 4)),
    case("var_ddof", lambda m, x: m.var(x, ddof=1), R(3, 4)),
    case("cumsum", lambda m, x: m.cumsum(x), R(3, 4)),
    case("cumsum_axis", lambda m, x: m.cumsum(x, axis=-2), R(3, 4)),
    case("cumprod", lambda m, x: m.cumprod(x, axis=1), R(3, 4)),
    case("cumprod_flat", lambda m, x: m.cumprod(x), R(2, 3)),
    case("cumprod_zero", lambda m, x: m.cumprod(x * m.array([1.0, 0.0, 1.0, 1.0]), axis=-1), R(2, 4)),
    case("average", lambda m, x, w: m.average(x, axis=0, weights=w), R(3, 4), P(3)),
    case("logsumexp", lambda m, x: m.log(m.sum(m.exp(x), axis=-1)) if m is np else m.logsumexp(x, axis=-1), R(3, 4)),
    # --- shape
    case("reshape", lambda m, x: m.reshape(x, (4, 3)), R(3, 4)),
    case("reshape_F", lambda m, x: m.reshape(x, (2, 6), order="F"), R(3, 4)),
    case("ravel", lambda m, x: m.ravel(x), R(3, 4)),
    case("transpose", lambda m, x: m.transpose(x, (2, 0, 1)), R(2, 3, 4)),
    case("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), R(2, 3, 4)),
    case("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), R(2, 3, 4)),
    case("expand_dims", lambda m, x: m.expand_dims(x, (0, -1)), R(3, 4)),
    case("squeeze", lambda m, x: m.squeeze(x, axis=1), R(3, 1, 4)),
    case("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), R(3, 1)),
    case("atleast_1d", lambda m, x: m.atleast_1d(x), R()),
    case("atleast_2d", lambda m, x: m.atleast_2d(x), R(3)),
    case("concatenate", lambda m, x, y: m.concatenate([x, y, x], axis=-1), R(3, 2), R(3, 4)),
    case("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), R(3, 2), R(4)),
    case("stack", lambda m, x, y: m.stack([x, y], axis=1), R(3, 4), R(3, 4)),
    case("hstack", lambda m, x, y: m.hstack([x, y]), R(3), R(2)),
    case("vstack", lambda m, x, y: m.vstack([x, y]), R(4), R(2, 4)),
    case("split", lambda m, x: m.split(x, 2, axis=1)[1] * 2, R(3, 4)),
    case("array_split", lambda m, x: m.array_split(x, 3)[2], R(7)),
    case("tile", lambda m, x: m.tile(x, (2, 1, 3)), R(3, 2)),
    case("repeat", lambda m, x: m.repeat(x, [1, 2, 3], axis=0), R(3, 2)),
    case("repeat_flat", lambda m, x: m.repeat(x, 2), R(2, 2)),
    case("flip", lambda m, x: m.flip(x, axis=-1), R(3, 4)),
    case("flip_all", lambda m, x: m.flip(x), R(3, 4)),
    case("roll", lambda m, x: m.roll(x, 2, axis=1), R(3, 4)),
    case("roll_flat", lambda m, x: m.roll(x, -5), R(3, 4)),
    case("pad", lambda m, x: m.pad(x, ((1, 0), (2, 1))), R(3, 4)),
    case("triu", lambda m, x: m.triu(x, 1), R(4, 4)),
    case("tril", lambda m, x: m.tril(x, -1), R(2, 3, 3)),
    case("diag_1d", lambda m, x: m.diag(x, 1), R(3)),
    case("diag_2d", lambda m, x: m.diag(x), R(3, 4)),
    case("diagonal", lambda m, x: m.diagonal(x, 1, 0, 2), R(3, 2, 4)),
    case("trace", lambda m, x: m.trace(x), R(3, 3)),
    case("take", lambda m, x: m.take(x, [0, 2, 2], axis=1), R(3, 4)),
    case("take_flat", lambda m, x: m.take(x, [5, 0, 11]), R(3, 4)),
    case("take_along_axis", lambda m, x: m.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), axis=1), R(3, 4)),
    case("sort", lambda m, x: m.sort(x, axis=0), R(3, 4)),
    case("sort_flat", lambda m, x: m.sort(x, axis=None), R(3, 4)),
    # --- indexing
    case("index_basic", lambda m, x: x[1:, ::-2], R(3, 4)),
    case("index_int", lambda m, x: x[-1], R(3, 4)),
    case("index_newaxis_ellipsis", lambda m, x: x[None, ..., 1], R(2, 3, 4)),
    case("index_int_array_repeats", lambda m, x: x[[0, 2, 0, -1]], R(3, 4)),
    case("index_two_arrays", lambda m, x: x[[0, 1, 1], [3, 0, 3]], R(3, 4)),
    case("index_mixed_advanced", lambda m, x: x[[0, 1], :, [1, 2]], R(3, 2, 4)),
    case("index_mask", lambda m, x: x[x > 0], R(3, 4)),
    case("setitem", _setitem, R(3, 4)),
    # --- products
    case("dot_vv", lambda m, x, y: m.dot(x, y), R(4), R(4)),
    case("dot_mm", lambda m, x, y: m.dot(x, y), R(3, 4), R(4, 2)),
    case("dot_nd", lambda m, x, y: m.dot(x, y), R(2, 3, 4), R(3, 4, 2)),
    case("dot_scalar", lambda m, x, y: m.dot(x, y), R(), R(3)),
    case("matmul_mm", lambda m, x, y: m.matmul(x, y), R(3, 4), R(4, 2)),
    case("matmul_vm", lambda m, x, y: m.matmul(x, y), R(4), R(4, 2)),
    case("matmul_mv", lambda m, x, y: m.matmul(x, y), R(3, 4), R(4)),
    case("matmul_vv", lambda m, x, y: m.matmul(x, y), R(4), R(4)),
    case("matmul_batched", lambda m, x, y: m.matmul(x, y), R(2, 3, 4), R(4, 2)),
    case("matmul_batched_v", lambda m, x, y: m.matmul(x, y), R(4), R(2, 4, 3)),
    case("inner", lambda m, x, y: m.inner(x, y), R(3, 4), R(2, 4)),
    case("outer", lambda m, x, y: m.outer(x, y), R(3), R(2, 2)),
    case("tensordot_int", lambda m, x, y: m.tensordot(x, y, 1), R(3, 4), R(4, 2)),
    case("tensordot_pairs", lambda m, x, y: m.tensordot(x, y, ([0, 2], [1, 0])), R(2, 3, 4), R(4, 2, 3)),
    case("einsum_mm", lambda m, x, y: m.einsum("ij,jk->ik", x, y), R(3, 4), R(4, 2)),
    case("einsum_trace", lambda m, x: m.einsum("ii->", x), R(3, 3)),
    case("einsum_diag", lambda m, x: m.einsum("ii->i", x), R(3, 3)),
    case("einsum_sum_one", lambda m, x, y: m.einsum("ij,k->ik", x, y), R(3, 4), R(2)),
    case("einsum_ellipsis", lambda m, x, y: m.einsum("...i,...i->...", x, y), R(2, 3, 4), R(3, 4)),
    case("einsum_implicit", lambda m, x, y: m.einsum("ij,jk", x, y), R(3, 4), R(4, 2)),
    case("vdot", lambda m, x, y: m.vdot(x, y), R(3, 2), R(6)),
    case("kron", lambda m, x, y: m.kron(x, y), R(2, 3), R(2, 2)),
    case("cross", lambda m, x, y: m.cross(x, y), R(4, 3), R(3)),
    # --- construction
    case("array_of_traced", lambda m, x: m.array([[x[0, 0], 2.0], [x[1, 1] * x[0, 1], x[2, 3]]]), R(3, 4)),
    case("asarray", lambda m, x: m.asarray(x) * 2, R(3, 4)),
    case("full", lambda m, x: m.full((2, 3), x[0]), R(3)),
    case("full_like", lambda m, x: m.full_like(x, x[1, 1]) * x, R(3, 4)),
    case("linspace", lambda m, x: m.linspace(x[0], x[1], 5), R(2)),
    case("astype", lambda m, x: m.real(x.astype(np.complex128) * (1 + 2j)) * x.astype(np.float64), R(3, 4)),
    # --- complex inputs (JAX's convention)
    case("complex_mul_abs", lambda m, z: m.abs(z * z + 1j), C(3)),
    case("complex_sin_real", lambda m, z: m.real(m.sin(z)) + m.imag(z ** 2), C(3)),
    case("complex_conj_angle", lambda m, z: m.angle(z) * m.real(m.conj(z) * z), C(2, 2)),
    case("complex_exp_log", lambda m, z: m.exp(z) / m.log(z), C(3)),
]

EMPTY: list[Case] = [
    case("sum_empty", lambda m, x: m.sum(x, axis=0), R(0, 3)),
    case("mul_empty", lambda m, x, y: x * y, R(0, 3), R(3)),
    case("matmul_empty", lambda m, x, y: x @ y, R(2, 0), R(0, 3)),
    case("concatenate_empty", lambda m, x, y: m.concatenate([x, y]), R(0, 2), R(3, 2)),
    case("mean_empty_axis", lambda m, x: m.mean(x, axis=1), R(3, 0, 2)),
    case("index_empty", lambda m, x: x[[]], R(3, 2)),
]


# ==============================================================================================
# --- linalg, fft, scipy.special, complex inputs (issue 5): appended to OPS --------------------
# ==============================================================================================


def _eye(m: Any, x: Any, k: float = 3.0) -> Any:
    return k * np.eye(x.shape[-1])


def _wellcond(m: Any, x: Any) -> Any:
    """A well-conditioned square matrix built from x (real or complex)."""
    return x + _eye(m, x)


def _hpd(m: Any, x: Any) -> Any:
    """A Hermitian positive-definite matrix built from x."""
    return m.matmul(x, m.conj(m.swapaxes(x, -1, -2))) + _eye(m, x, 1.0)


def _herm(m: Any, x: Any) -> Any:
    """A Hermitian matrix built from x (distinct eigenvalues, generically)."""
    return x + m.conj(m.swapaxes(x, -1, -2))


def _eigh(m: Any, x: Any) -> Any:
    lam, v = m.linalg.eigh(_herm(m, x))
    return lam[..., None, :] * m.real(v * m.conj(v)) + lam[..., :, None]


def _svd(m: Any, x: Any) -> Any:
    u, s, vh = m.linalg.svd(x, full_matrices=False)
    pu = m.real(u * m.conj(u))  # phase-invariant functions of the singular vectors
    pv = m.real(vh * m.conj(vh))
    return m.sum(pu * s[..., None, :], axis=-2) + m.sum(pv * s[..., :, None] ** 2, axis=-1) + s


def _qr(m: Any, x: Any) -> Any:
    q, r = m.linalg.qr(x)
    return m.sum(q * (1.0 + m.arange(q.shape[-1])), axis=-2) + m.sum(r * r, axis=-1)


def _slogdet(m: Any, x: Any) -> Any:
    sign, logdet = m.linalg.slogdet(x)
    return logdet + m.real(sign)


def _ri(m: Any, z: Any) -> Any:
    """Real and imaginary parts side by side: a real output for a real input
    (so Jacobians of real-to-complex transforms are checked in both modes)."""
    return m.concatenate([m.real(z), m.imag(z)], axis=-1)


def _special(m: Any) -> Any:
    if m is np:
        import scipy.special

        return scipy.special
    import tapegrad.scipy.special

    return tapegrad.scipy.special


OPS += [
    # --- linalg (real)
    case("linalg_inv", lambda m, x: m.linalg.inv(_wellcond(m, x)), R(3, 3)),
    case("linalg_inv_batched", lambda m, x: m.linalg.inv(_wellcond(m, x)), R(2, 3, 3)),
    case("linalg_solve_vec", lambda m, a, b: m.linalg.solve(_wellcond(m, a), b), R(3, 3), R(3)),
    case("linalg_solve_mat", lambda m, a, b: m.linalg.solve(_wellcond(m, a), b), R(3, 3), R(3, 2)),
    case("linalg_solve_batched", lambda m, a, b: m.linalg.solve(_wellcond(m, a), b), R(2, 3, 3), R(3, 2)),
    case("linalg_solve_batched_vec", lambda m, a, b: m.linalg.solve(_wellcond(m, a), b), R(2, 3, 3), R(3)),
    case("linalg_solve_a_only", lambda m, a: m.linalg.solve(_wellcond(m, a), np.arange(3.0)), R(3, 3)),
    case("linalg_det", lambda m, x: m.linalg.det(x), R(3, 3)),
    case("linalg_det_batched", lambda m, x: m.linalg.det(x), R(2, 3, 3)),
    case("linalg_slogdet", _slogdet, R(3, 3)),
    case("linalg_slogdet_batched", _slogdet, R(2, 3, 3)),
    case("linalg_cholesky", lambda m, x: m.linalg.cholesky(_hpd(m, x)), R(3, 3)),
    case("linalg_cholesky_batched_upper", lambda m, x: m.linalg.cholesky(_hpd(m, x), upper=True), R(2, 3, 3)),
    case("linalg_eigh", _eigh, R(3, 3)),
    case("linalg_eigh_batched", _eigh, R(2, 3, 3)),
    case("linalg_eigh_values", lambda m, x: m.linalg.eigh(_herm(m, x))[0], R(3, 3)),
    case("linalg_eigh_upper", lambda m, x: m.linalg.eigh(_herm(m, x), UPLO="U")[0], R(3, 3)),
    case("linalg_svd_square", _svd, R(3, 3)),
    case("linalg_svd_tall", _svd, R(4, 3)),
    case("linalg_svd_wide", _svd, R(2, 4)),
    case("linalg_svd_batched", _svd, R(2, 3, 2)),
    case("linalg_svd_values", lambda m, x: m.linalg.svd(x, compute_uv=False), R(3, 4)),
    case("linalg_svd_reconstruct", lambda m, x: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*m.linalg.svd(x)), R(3, 3)),
    case("linalg_qr_square", _qr, R(3, 3)),
    case("linalg_qr_tall", _qr, R(4, 3)),
    case("linalg_qr_wide", _qr, R(2, 4)),
    case("linalg_qr_batched_r", lambda m, x: m.linalg.qr(x, mode="r"), R(2, 4, 3)),
    case("linalg_pinv_square", lambda m, x: m.linalg.pinv(_wellcond(m, x)), R(3, 3)),
    case("linalg_pinv_tall", lambda m, x: m.linalg.pinv(x), R(4, 2)),
    case("linalg_pinv_wide_batched", lambda m, x: m.linalg.pinv(x), R(2, 2, 3)),
    case("linalg_norm_default", lambda m, x: m.linalg.norm(x), R(3, 4)),
    case("linalg_norm_vec_ords", lambda m, x: sum(m.linalg.norm(x, o) for o in (None, 1, 2, 3, -1, 0.5, np.inf, -np.inf, 0)), R(5)),
    case("linalg_norm_vec_axis_keepdims", lambda m, x: m.linalg.norm(x, 3, axis=-1, keepdims=True), R(2, 3, 4)),
    case("linalg_norm_mat_ords", lambda m, x: sum(m.linalg.norm(x, o) for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)), R(3, 4)),
    case("linalg_norm_mat_axes", lambda m, x: m.linalg.norm(x, 1, axis=(2, 0), keepdims=True) + m.linalg.norm(x, np.inf, axis=(0, 2))[None, :, None], R(3, 2, 4)),
    case("linalg_norm_nuc_axes", lambda m, x: m.linalg.norm(x, "nuc", axis=(0, 2)), R(3, 2, 4)),
    case("linalg_norm_2_axis", lambda m, x: m.linalg.norm(x, axis=0), R(3, 4)),
    # --- linalg (complex)
    case("linalg_inv_complex", lambda m, x: m.linalg.inv(_wellcond(m, x)), C(3, 3)),
    case("linalg_solve_complex", lambda m, a, b: m.linalg.solve(_wellcond(m, a), b), C(3, 3), C(3, 2)),
    case("linalg_det_complex", lambda m, x: m.linalg.det(x), C(2, 3, 3)),
    case("linalg_slogdet_complex", lambda m, x: m.linalg.slogdet(_wellcond(m, x))[1], C(3, 3)),
    case("linalg_cholesky_complex", lambda m, x: m.linalg.cholesky(_hpd(m, x)), C(3, 3)),
    case("linalg_eigh_complex", _eigh, C(3, 3)),
    case("linalg_svd_complex_tall", _svd, C(4, 3)),
    case("linalg_svd_complex_wide", _svd, C(2, 3)),
    case("linalg_svd_values_complex", lambda m, x: m.linalg.svd(x, compute_uv=False), C(3, 2)),
    case("linalg_qr_complex", lambda m, x: m.linalg.qr(x)[1], C(4, 3)),
    case("linalg_qr_complex_wide", lambda m, x: m.abs(m.linalg.qr(x)[0]) + m.linalg.qr(x)[1][:, :2], C(2, 3)),
    case("linalg_pinv_complex", lambda m, x: m.linalg.pinv(x), C(3, 2)),
    case("linalg_norm_complex", lambda m, x: m.linalg.norm(x) + m.linalg.norm(x, "nuc") + m.linalg.norm(x, 1) + m.linalg.norm(x[0], 3), C(3, 3)),
    # --- fft
    case("fft", lambda m, x: _ri(m, m.fft.fft(x)), R(8)),
    case("fft_n_truncate", lambda m, x: _ri(m, m.fft.fft(x, 6)), R(8)),
    case("fft_n_pad_axis0_ortho", lambda m, x: _ri(m, m.fft.fft(x, 6, axis=0, norm="ortho")), R(4, 3)),
    case("fft_forward_complex", lambda m, x: m.fft.fft(x, norm="forward"), C(2, 5)),
    case("ifft", lambda m, x: m.fft.ifft(x), C(6)),
    case("ifft_n_axis", lambda m, x: m.fft.ifft(x, 4, axis=0, norm="ortho"), C(5, 2)),
    case("rfft", lambda m, x: _ri(m, m.fft.rfft(x)), R(8)),
    case("rfft_odd", lambda m, x: _ri(m, m.fft.rfft(x, norm="ortho")), R(2, 7)),
    case("rfft_n_pad_axis0", lambda m, x: _ri(m, m.fft.rfft(x, 10, axis=0, norm="forward")), R(7, 2)),
    case("rfft_n_truncate", lambda m, x: _ri(m, m.fft.rfft(x, 5)), R(8)),
    case("irfft", lambda m, x: m.fft.irfft(x), C(5)),
    case("irfft_odd_n", lambda m, x: m.fft.irfft(x, 7), C(2, 4)),
    case("irfft_n_pad", lambda m, x: m.fft.irfft(x, 12, norm="ortho"), C(4)),
    case("irfft_n_truncate_axis0", lambda m, x: m.fft.irfft(x, 4, axis=0, norm="forward"), C(6, 2)),
    case("irfft_real_input", lambda m, x: m.fft.irfft(x), R(5)),
    case("fft2", lambda m, x: _ri(m, m.fft.fft2(x)), R(3, 4)),
    case("fft2_s", lambda m, x: m.fft.fft2(x, s=(2, 5), norm="ortho"), C(2, 3, 4)),
    case("ifft2", lambda m, x: m.fft.ifft2(x), C(3, 4)),
    case("fftn_axes", lambda m, x: _ri(m, m.fft.fftn(x, axes=(0, 2))), R(2, 3, 4)),
    case("fftn_all", lambda m, x: m.fft.fftn(x), C(2, 3)),
    case("ifftn_s_axes", lambda m, x: m.fft.ifftn(x, s=(4, 2), axes=(-1, 0), norm="forward"), C(3, 2, 3)),
    case("fft_roundtrip", lambda m, x: m.real(m.fft.ifft(m.fft.fft(x) * m.arange(1.0, 7.0))), R(6)),
    case("rfft_irfft_roundtrip", lambda m, x: m.fft.irfft(m.fft.rfft(x) * m.arange(1.0, 5.0), 6), R(6)),
    # --- complex inputs across the table (JAX's convention)
    case("complex_elementwise", lambda m, z: m.sqrt(z) * m.tanh(z) + m.reciprocal(z) - m.square(z) + m.exp(z) ** 2, C(3, 2)),
    case("complex_log_power", lambda m, z, w: m.log(z) * m.power(z, w) + z ** 3, C(3), C(3)),
    case("complex_trig", lambda m, z: m.sin(z) * m.cos(z) + m.sinh(z) - m.cosh(z), C(4)),
    case("complex_real_imag_conj", lambda m, z: m.real(z) * m.imag(z) + m.conj(z) * z, C(3, 2)),
    case("complex_abs_angle", lambda m, z: m.abs(z) + m.angle(z) * 2, C(3, 2)),
    case("complex_to_real_loss", lambda m, z: m.sum(m.abs(z) ** 2) + m.sum(m.real(z * z)), C(2, 3)),
    case("complex_reductions", lambda m, z: m.sum(z, axis=0) * m.mean(z, axis=0) + m.prod(z, axis=0), C(3, 2)),
    case("complex_cumsum_cumprod", lambda m, z: m.cumsum(z, axis=1) + m.cumprod(z, axis=0), C(2, 3)),
    case("complex_var", lambda m, z: m.var(z, axis=0), C(4, 2)),
    case("complex_matmul", lambda m, a, b: a @ b, C(3, 4), C(4, 2)),
    case("complex_einsum", lambda m, a, b: m.einsum("ij,kj->ik", a, b), C(3, 4), C(2, 4)),
    case("complex_dot_vdot", lambda m, a, b: m.dot(a, b) + m.vdot(a, b), C(4), C(4)),
    case("complex_shape_index", lambda m, z: m.concatenate([z[::-1], m.transpose(z)[:, :1].T]) * 1j, C(2, 2)),
]

try:  # scipy.special references need SciPy; tapegrad.scipy itself does not
    import scipy.special  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    OPS += [
        case("special_erf", lambda m, x: _special(m).erf(x), R(3, 4)),
        case("special_erfc", lambda m, x: _special(m).erfc(x), R(3, 4)),
        case("special_gammaln", lambda m, x: _special(m).gammaln(x), P(3, 4)),
        case("special_digamma", lambda m, x: _special(m).digamma(x), P(3, 4)),
        case("special_polygamma", lambda m, x: _special(m).polygamma(2, x), P(3, 4)),
        case("special_expit", lambda m, x: _special(m).expit(x), R(3, 4)),
        case("special_logit", lambda m, x: _special(m).logit(x), R(3, 4, lo=0.1, hi=0.9)),
        case("special_logsumexp", lambda m, x: _special(m).logsumexp(x, axis=0), R(3, 4)),
        case("special_logsumexp_b", lambda m, x, b: _special(m).logsumexp(x, axis=-1, b=b, keepdims=True), R(3, 4), P(4)),
    ]
    OPS += [
        case("special_softmax", lambda m, x: _special(m).softmax(x, axis=-1), R(3, 4)),
        case("special_softmax_all", lambda m, x: _special(m).softmax(x), R(3, 4)),
        case("special_softmax_axes", lambda m, x: _special(m).softmax(x, axis=(0, 2)), R(2, 3, 4)),
        case("special_log_softmax", lambda m, x: _special(m).log_softmax(x, axis=0), R(3, 4)),
        case("special_log_softmax_all", lambda m, x: _special(m).log_softmax(x), R(3, 4)),
        case("special_log_softmax_axes", lambda m, x: _special(m).log_softmax(x, axis=(-1, 0)), R(2, 3, 4)),
    ]


# ==============================================================================================
# --- tapegrad.numpy.primitives: the primitives NumPy has no name for -------------------------
# ==============================================================================================


class _NumpyPrimitives:
    """NumPy forms of ``tapegrad.numpy.primitives``: the reference values of the cases below."""

    @staticmethod
    def NormalizedIndex(key: Any, ndim: int) -> Any:  # noqa: N802
        return key

    @staticmethod
    def where_mask(mask: Any, x: Any, y: Any) -> Any:
        return np.where(mask, x, y)

    @staticmethod
    def index_set(x: Any, key: Any, v: Any) -> Any:
        out = np.array(x)
        out[key] = v
        return out

    @staticmethod
    def scatter_add(g: Any, key: Any, shape: tuple[int, ...], nbatch: int) -> Any:
        out = np.zeros(g.shape[:nbatch] + shape, g.dtype)
        np.add.at(out, key, g)
        return out

    @staticmethod
    def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims))

    @staticmethod
    def linear(x: Any, w: Any, b: Any) -> Any:
        return x @ w.T + b

    @staticmethod
    def weighted_sum(x: Any, weights: Any, axis: int | None = None) -> Any:
        return np.sum(x * weights, axis=axis)


def _prims(m: Any) -> Any:
    if m is np:
        return _NumpyPrimitives
    import tapegrad.numpy.primitives

    return tapegrad.numpy.primitives


_MASK = np.array([True, False, True, True])
_WEIGHTS = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def _index_set(m: Any, x: Any, v: Any) -> Any:
    p = _prims(m)
    return p.index_set(x, p.NormalizedIndex((slice(1, None), [0, 2]), 2), v)


def _scatter_add(m: Any, g: Any) -> Any:
    p = _prims(m)
    return p.scatter_add(g, p.NormalizedIndex(([0, 2, 0],), 2), (3, 4), 0)  # row 0 twice: add.at


OPS += [
    case("prim_where_mask", lambda m, x, y: _prims(m).where_mask(_MASK, x, y), R(3, 4), R(3, 1)),
    case("prim_index_set", _index_set, R(3, 4), R(2, 2)),
    case("prim_scatter_add", _scatter_add, R(3, 4)),
    case("prim_mean", lambda m, x: _prims(m).mean(x, (0, 2), True), R(2, 3, 4)),
    case("prim_mean_all", lambda m, x: _prims(m).mean(x), R(3, 4)),
    case("prim_logsumexp", lambda m, x: _prims(m).logsumexp(x, 1, True), R(3, 4)),
    case("prim_linear", lambda m, x, w, b: _prims(m).linear(x, w, b), R(4, 3), R(5, 3), R(5)),
    case("prim_weighted_sum", lambda m, x: _prims(m).weighted_sum(x, _WEIGHTS), R(3, 4)),
    case("prim_weighted_sum_axis", lambda m, x: _prims(m).weighted_sum(x, _WEIGHTS, 1), R(3, 4)),
]


# --- issue 14: scipy.special -------------------------------------------------------------------
# (each function in each argument it is differentiable in; the others are constants: integer
# orders, and the arguments whose derivative has no closed form, see tests/test_special_extra.py)
_A = np.array([0.8, 1.5, 2.5, 3.5])  # shape parameters (constants)
try:
    import scipy.special  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    OPS += [
        case("special_gamma", lambda m, x: _special(m).gamma(x), P(3, 4)),
        case("special_gamma_neg", lambda m, x: _special(m).gamma(x - 2.0), U(3, 4)),  # (-2.8, -1.2)
        case("special_gammasgn", lambda m, x: _special(m).gammasgn(x - 2.0) * x, U(3, 4)),
        case("special_rgamma", lambda m, x: _special(m).rgamma(x), P(3, 4)),
        case("special_beta", lambda m, a, b: _special(m).beta(a, b), P(3, 4), P(4)),
        case("special_betaln", lambda m, a, b: _special(m).betaln(a, b), P(3, 1), P(3, 4)),
        case("special_gammainc", lambda m, x: _special(m).gammainc(_A, x), P(3, 4)),
        case("special_gammaincc", lambda m, x: _special(m).gammaincc(_A, x), P(3, 4)),
        case("special_betainc", lambda m, x: _special(m).betainc(_A, 1.7, x), R(3, 4, lo=0.1, hi=0.9)),
        case("special_psi", lambda m, x: _special(m).psi(x), P(3, 4)),
        case("special_polygamma_3", lambda m, x: _special(m).polygamma(3, x), P(3, 4)),
        case("special_multigammaln", lambda m, a: _special(m).multigammaln(a, 3), R(3, 4, lo=1.2, hi=3.0)),
        case("special_multigammaln_0d", lambda m, a: _special(m).multigammaln(a, 1), P()),
        case("special_erfinv", lambda m, x: _special(m).erfinv(x), U(3, 4)),
        case("special_erfcinv", lambda m, x: _special(m).erfcinv(x), R(3, 4, lo=0.2, hi=1.8)),
        case("special_j0", lambda m, x: _special(m).j0(x), R(3, 4)),
        case("special_j1", lambda m, x: _special(m).j1(x), R(3, 4)),
        case("special_jn", lambda m, x: _special(m).jn(3, x), R(3, 4)),
        case("special_jn_orders", lambda m, x: _special(m).jn(np.array([0, 1, 2, 5]), x), R(3, 4)),
        case("special_y0", lambda m, x: _special(m).y0(x), P(3, 4)),
        case("special_y1", lambda m, x: _special(m).y1(x), P(3, 4)),
        case("special_yn", lambda m, x: _special(m).yn(2, x), P(3, 4)),
        case("special_i0", lambda m, x: _special(m).i0(x), R(3, 4)),
        case("special_i1", lambda m, x: _special(m).i1(x), R(3, 4)),
        case("special_iv", lambda m, x: _special(m).iv(_A, x), P(3, 4)),
        case("special_iv_int", lambda m, x: _special(m).iv(2, x), R(3, 4)),
        case("special_ive", lambda m, x: _special(m).ive(_A, x), P(3, 4)),
        case("special_ive_neg", lambda m, x: _special(m).ive(3, x), R(3, 4)),
    ]


# ==============================================================================================
# --- issue 14: fft and eig --------------------------------------------------------------------
# ==============================================================================================


def _spread(m: Any, x: Any) -> Any:
    """A matrix with well-separated eigenvalues (real or complex) built from x."""
    return 0.5 * x + np.diag(2.5 * np.arange(x.shape[-1]))


_PAIR = np.array([[0.0, 2.0, 0.0], [-2.0, 0.0, 0.0], [0.0, 0.0, 4.0]])  # eigenvalues +-2i, 4


def _eig(m: Any, x: Any) -> Any:
    """Eigenvalues, and the gauge-invariant |v_ij|^2 of the eigenvectors."""
    lam, v = m.linalg.eig(x)
    return m.real(v * m.conj(v)) * m.real(lam)[..., None, :] + m.imag(lam)[..., :, None]


def _eig_projections(m: Any, x: Any) -> Any:
    """A weighted sum of the eigenvectors' projections v_j v_j^H (phase-invariant)."""
    lam, v = m.linalg.eig(x)
    vw = v * (1.0 + m.arange(x.shape[-1]))
    return _ri(m, m.matmul(vw, m.conj(m.swapaxes(v, -1, -2))))


OPS += [
    # --- fft: real transforms in several axes, shifts
    case("rfftn", lambda m, x: _ri(m, m.fft.rfftn(x)), R(3, 4)),
    case("rfftn_s_axes_ortho", lambda m, x: _ri(m, m.fft.rfftn(x, s=(4, 6), axes=(0, 2), norm="ortho")), R(3, 2, 5)),
    case("rfftn_s_truncate_forward", lambda m, x: _ri(m, m.fft.rfftn(x, s=(2, 3), axes=(-2, -1), norm="forward")), R(2, 3, 5)),
    case("rfft2", lambda m, x: _ri(m, m.fft.rfft2(x)), R(2, 3, 4)),
    case("rfft2_s_axes", lambda m, x: _ri(m, m.fft.rfft2(x, s=(5, 3), axes=(1, 0))), R(3, 4)),
    case("irfftn", lambda m, x: m.fft.irfftn(x), C(3, 4)),
    case("irfftn_s_axes_ortho", lambda m, x: m.fft.irfftn(x, s=(4, 5), axes=(-1, 0), norm="ortho"), C(3, 2, 3)),
    case("irfftn_odd_forward", lambda m, x: m.fft.irfftn(x, s=(3, 7), axes=(0, 1), norm="forward"), C(2, 4)),
    case("irfft2", lambda m, x: m.fft.irfft2(x), C(2, 3, 4)),
    case("irfft2_s", lambda m, x: m.fft.irfft2(x, s=(2, 6)), C(3, 4)),
    case("rfftn_irfftn_roundtrip", lambda m, x: m.fft.irfftn(m.fft.rfftn(x) * m.arange(1.0, 5.0), s=(3, 6), axes=(0, 1)), R(3, 6)),
    case("fftshift", lambda m, x: m.fft.fftshift(x), R(3, 4)),
    case("fftshift_axis", lambda m, x: m.fft.fftshift(x, axes=1), R(3, 5)),
    case("ifftshift_axes_complex", lambda m, x: m.fft.ifftshift(x, axes=(0, -1)), C(5, 2, 3)),
    case("fftshift_of_fft", lambda m, x: _ri(m, m.fft.ifftshift(m.fft.fftshift(m.fft.fft(x)) * m.arange(1.0, 8.0))), R(7)),
    # --- linalg.eig (general matrices; eigenvectors through gauge-invariant functions)
    case("linalg_eig", lambda m, x: _eig(m, _spread(m, x)), R(3, 3)),
    case("linalg_eig_batched", lambda m, x: _eig(m, _spread(m, x)), R(2, 3, 3)),
    case("linalg_eig_complex_pair", lambda m, x: _eig(m, 0.5 * x + _PAIR), R(3, 3)),
    case("linalg_eig_complex", lambda m, x: _eig(m, _spread(m, x)), C(3, 3)),
    case("linalg_eig_projections", lambda m, x: _eig_projections(m, _spread(m, x)), R(3, 3)),
    case("linalg_eig_projections_complex", lambda m, x: _eig_projections(m, 0.5 * x + _PAIR), C(2, 3, 3)),
    case("linalg_eigvals", lambda m, x: _ri(m, m.linalg.eigvals(0.5 * x + _PAIR)), R(3, 3)),
    case("linalg_eigvals_complex", lambda m, x: _ri(m, m.linalg.eigvals(_spread(m, x))), C(4, 4)),
]


# --- issue 14: NumPy names ----------------------------------------------------------------------------

_COORDS = np.array([0.0, 0.5, 1.5, 1.75, 3.0])
_PW = ((2, 3), (1, 4))


def _pad(mode: str, **kw: Any) -> Case:
    suffix = "_".join(f"{k}" for k in kw)
    return case(f"pad_{mode}{'_' + suffix if suffix else ''}", lambda m, x: m.pad(x, _PW, mode=mode, **kw), R(3, 4))


OPS += [
    case("append_flat", lambda m, x, y: m.append(x, y), R(2, 3), R(4)),
    case("append_axis", lambda m, x, y: m.append(x, y, axis=1), R(2, 3), R(2, 2)),
    case("r_slices", lambda m, x, y: m.r_[0:3, x, 2.5, y, 0:1:3j], R(4), R(2)),
    case("r_directive", lambda m, x, y: m.r_["1,2,0", x, y], R(3), R(3, 2)),
    case("c_", lambda m, x, y: m.c_[x, y, 1:4], R(3), R(3, 2)),
    case("vsplit", lambda m, x: m.vsplit(x, [1])[1], R(3, 4)),
    case("hsplit", lambda m, x: m.stack(m.hsplit(x, 2)), R(3, 4)),
    case("dsplit", lambda m, x: m.dsplit(x, [1, 3])[1] * 2.0, R(2, 2, 4)),
    case("flipud", lambda m, x: m.flipud(x), R(3, 4)),
    case("fliplr", lambda m, x: m.fliplr(x), R(3, 4)),
    case("rot90", lambda m, x: m.rot90(x), R(3, 4)),
    case("rot90_k2", lambda m, x: m.rot90(x, 2), R(3, 4)),
    case("rot90_k3_axes", lambda m, x: m.rot90(x, -1, axes=(2, 0)), R(2, 3, 4)),
    case("rollaxis", lambda m, x: m.rollaxis(x, 2), R(2, 3, 4)),
    case("rollaxis_start", lambda m, x: m.rollaxis(x, 0, 3), R(2, 3, 4)),
    case("partition", lambda m, x: m.partition(x, 2), R(3, 5)),
    case("partition_axis0", lambda m, x: m.partition(x, (0, 2), axis=0), R(4, 3)),
    case("gradient_1d", lambda m, x: m.gradient(x), R(5)),
    case("gradient_2d", lambda m, x: m.stack(m.gradient(x, 0.5)), R(3, 5)),
    case("gradient_coords_edge2", lambda m, x: m.gradient(x, _COORDS, axis=1, edge_order=2), R(3, 5)),
    case("gradient_coords", lambda m, x: m.stack(m.gradient(x, 2.0, _COORDS)), R(3, 5)),
    case("diff", lambda m, x: m.diff(x), R(3, 4)),
    case("diff_n2_axis0", lambda m, x: m.diff(x, 2, axis=0), R(4, 3)),
    case("diff_prepend_append", lambda m, x, y: m.diff(x, prepend=1.5, append=y), R(3, 4), R(3, 2)),
    case("fabs", lambda m, x: m.fabs(x), R(3, 4)),
    case("nan_to_num", lambda m, x: m.nan_to_num(x, posinf=1.0), R(3, 4)),
    case("real_if_close_real", lambda m, x: m.real_if_close(x), R(3, 4)),
    _pad("constant", constant_values=1.5),
    _pad("edge"),
    _pad("reflect"),
    _pad("reflect", reflect_type="odd"),
    _pad("symmetric"),
    _pad("symmetric", reflect_type="odd"),
    _pad("wrap"),
    _pad("linear_ramp"),
    _pad("linear_ramp", end_values=((1.0, -2.0), (0.5, 3.0))),
    _pad("maximum"),
    _pad("minimum", stat_length=2),
    _pad("mean"),
    _pad("mean", stat_length=((1, 2), (3, 2))),
    _pad("median"),
    _pad("median", stat_length=3),
    case("pad_reflect_wide", lambda m, x: m.pad(x, (5, 7), mode="reflect", reflect_type="odd"), R(3)),
    case("einsum_interleaved", lambda m, x, y: m.einsum(x, [0, 1], y, [1, 2]), R(3, 4), R(4, 2)),
    case("einsum_interleaved_out", lambda m, x, y: m.einsum(x, [0, 1], y, [1, 2], [2, 0]), R(3, 4), R(4, 2)),
    case("einsum_interleaved_ellipsis", lambda m, x, y: m.einsum(x, [Ellipsis, 1], y, [1], [Ellipsis]), R(2, 3, 4), R(4)),
    case("mean_list", lambda m, x: m.mean([x, x + 2.0], axis=0), R(3)),
    case("var_list", lambda m, x: m.var([x, x * x]), R(3)),
    case("norm_list", lambda m, x: m.linalg.norm([x, x + 2.0]), R(3)),
]
