"""tapegrad.numpy.linalg: NumPy's ``numpy.linalg``, differentiable.

Same names, signatures and results as NumPy, stacked over leading axes as
NumPy is. Called on plain arrays each function is NumPy's own. The
primitives and their VJP rules live together in this file (one banner per
group); rules are written with tapegrad functions, so they differentiate
again, and they accept cotangents with extra leading batch axes. Each
primitive's batching rule (``vmap``) sits beside its VJP rule: the batch is
one more leading stack axis (``solve`` lines up its two operands first).

Decompositions with several outputs (``eigh``, ``svd``, ``qr``,
``slogdet``) are *one* primitive each that returns a single packed array
(the outputs stacked along one axis); the public function slices it. One
factorization is computed, and the rule sees every output's cotangent at
once, which the standard formulas need.

Complex inputs follow JAX's convention: a holomorphic map (``inv``,
``solve``, ``det``) has VJP ``g -> J^T g`` with no conjugation. The
decompositions are not holomorphic; their rules apply the textbook
formulas, written for the pairing ``Re tr(G^H dA)``, between two
conjugations (``conj(rule(conj(g)))``), which turns them into JAX's
``Re sum(g * dA)`` pairing.

Caveats (as in every autodiff library): the gradients of ``eigh`` and of
``svd``'s singular vectors divide by eigenvalue (singular value) gaps, so
they are unreliable (large, or inaccurate) where eigenvalues are repeated
or nearly so: the eigenvectors themselves are not differentiable there.
Where two computed eigenvalues are exactly equal the ``1/gap`` factor is
set to zero instead of inf, so that functions of the eigenvalues (singular
values) alone, whose eigenvector cotangent is zero, get their exact, finite
gradient rather than ``0 * inf = nan``. Symmetric inputs of ``eigh`` and ``cholesky`` get symmetric
(Hermitian) gradients, as in JAX. ``det``'s gradient is the transposed
adjugate computed from an SVD, finite at singular matrices; so is its second
derivative (the inverse's formula where the matrix is known and well
conditioned, an SVD formula elsewhere). See docs/numerics.md.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch, move_to_front
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, concrete, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "norm", "pinv", "qr", "slogdet", "solve",
           "svd", "svdvals", "LinAlgError"]

LinAlgError = np.linalg.LinAlgError


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


# --- helpers (shared by the rules) ------------------------------------------------------


def _traced(*xs: Any) -> bool:
    return builtins.any(type(x) is Traced for x in xs)


def _cplx(x: Any) -> bool:
    return np.iscomplexobj(value(x))


def _T(x: Any) -> Any:
    return d.swapaxes(x, -1, -2)


def _H(x: Any) -> Any:
    return w.conjugate(_T(x)) if _cplx(x) else _T(x)


def _conj(x: Any) -> Any:
    return w.conjugate(x) if _cplx(x) else x


def _mm(a: Any, b: Any) -> Any:
    return w.matmul(a, b)


def _eye(n: int, like: Any) -> np.ndarray:
    return array_module(like).eye(n, dtype=value(like).dtype)


def _embed_diag(v: Any) -> Any:
    """``(..., n) -> (..., n, n)`` with ``v`` on the diagonal."""
    return v[..., :, None] * _eye(v.shape[-1], v)


def _inv_gaps(lam: Any) -> Any:
    """``F[..., i, j] = 1 / (lam_j - lam_i)``, and 0 where the two are equal
    (the diagonal, and exact ties: see the module docstring)."""
    gap = lam[..., None, :] - lam[..., :, None]
    same = value(gap) == 0
    return w.where3(same, 0.0, 1.0 / w.where3(same, 1.0, gap))


def _stacked(prim: Any) -> None:
    """Give ``prim`` (of one stack of matrices) its batching rule: the batch
    is one more leading stack axis, so one call does the whole batch."""
    defbatch(prim, lambda args, batched, size, **kw: prim(*args, **kw))


def _check_square(a: Any, name: str) -> None:
    if np.ndim(value(a)) < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"{name}: last 2 dimensions of the array must be square")


# --- inverse and solve --------------------------------------------------------------------

inv_p = primitive(np.linalg.inv, "inv", batched=True)
defvjp(inv_p, lambda ans, a: lambda g: -_mm(_T(ans), _mm(g, _T(ans))))
_stacked(inv_p)


def _solve(a: Any, b: Any) -> Any:
    return array_module(a, b).linalg.solve(a, b)


solve_p = primitive(_solve, "solve", batched=True)


class _SolveShare:
    """``solve(a^T, g)`` computed once per backward step when both ``a`` and
    ``b`` are differentiated (their rules are called one after the other
    with the same ``g``)."""

    __slots__ = ("shared", "memo")

    def __init__(self) -> None:
        self.shared = False
        self.memo: tuple[Any, Any, Any] | None = None

    def solve_t(self, a: Any, g: Any, vec: bool) -> Any:
        memo = self.memo
        if memo is not None and memo[0] is a and memo[1] is g:
            self.memo = None
            return memo[2]
        out = solve_p(_T(a), g[..., None])[..., 0] if vec else solve_p(_T(a), g)
        if self.shared:
            self.memo = (a, g, out)
        return out


_pending_share: list[Any] = [None, None]  # (id of the answer, its _SolveShare)


def _vjp_solve_a(ans: Any, a: Any, b: Any) -> Any:
    share = _SolveShare()
    _pending_share[:] = [id(ans), share]
    vec = np.ndim(value(b)) == 1

    def vjp(g: Any) -> Any:
        gb = share.solve_t(a, g, vec)
        if vec:
            return -(gb[..., :, None] * ans[..., None, :])
        return -_mm(gb, _T(ans))

    return vjp


def _vjp_solve_b(ans: Any, a: Any, b: Any) -> Any:
    if _pending_share[0] == id(ans):
        share = _pending_share[1]
        share.shared = True
    else:
        share = _SolveShare()
    _pending_share[:] = [None, None]
    vec = np.ndim(value(b)) == 1
    return lambda g: share.solve_t(a, g, vec)


defvjp(solve_p, _vjp_solve_a, _vjp_solve_b)


def _batch_solve(args: Any, batched: Any, size: int) -> Any:
    # b is one vector per example when its per-example rank is 1 (NumPy 2), else a stack of matrices
    (a, b), (ba, bb) = args, batched
    ka, kb = a.ndim - ba, b.ndim - bb
    if bb and not ba and ka == 2 and size:  # one matrix: the batch joins b's columns (one LU)
        if kb == 1:
            return _T(solve_p(a, _T(b)))
        if kb == 2:
            n, k = b.shape[1], b.shape[2]
            x = solve_p(a, w.reshape_c(w.transpose(b, (1, 0, 2)), (n, size * k)))
            return w.transpose(w.reshape_c(x, (n, size, k)), (1, 0, 2))
    if kb == 1 and bb:  # vectors made columns, behind ones for a's stack axes
        x = solve_p(a, w.reshape_c(b, (size,) + (1,) * (ka - 2) + (b.shape[-1], 1)))
        return w.reshape_c(x, tuple(x.shape[:-1]))
    r = max(ka, kb)  # (kb == 1 and b not batched: NumPy broadcasts the vector itself)
    return solve_p(move_to_front(a, r) if ba else a, move_to_front(b, r) if bb and kb > 1 else b)


defbatch(solve_p, _batch_solve)


def inv(a: Any) -> Any:
    """Inverse of a square matrix (or a stack of them), as ``numpy.linalg.inv``."""
    return inv_p(a)


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` for ``x``, as ``numpy.linalg.solve``."""
    return solve_p(a, b)


# --- determinants -----------------------------------------------------------------------------

det_p = primitive(np.linalg.det, "det", batched=True)


def _adjugate(a: Any) -> Any:
    """``adj(A) = det(A) A^{-1}``, from an SVD so that it is finite (and
    accurate) at singular matrices: ``det(U) det(Vh) V diag(prod_{j!=i} s_j) U^H``."""
    xp = array_module(a)
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    ones = xp.ones(s.shape[:-1] + (1,), dtype=s.dtype)
    left = xp.cumprod(xp.concatenate([ones, s[..., : n - 1]], axis=-1), axis=-1)
    right = xp.cumprod(xp.concatenate([ones, s[..., : 0 : -1]], axis=-1), axis=-1)[..., ::-1]
    scale = xp.linalg.det(u) * xp.linalg.det(vh)
    v = xp.conj(xp.swapaxes(vh, -1, -2))
    uh = xp.conj(xp.swapaxes(u, -1, -2))
    return scale[..., None, None] * xp.matmul(v * (left * right)[..., None, :], uh)


adjugate_p = primitive(_adjugate, "adjugate", batched=True)


def _vjp_adjugate(ans: Any, a: Any) -> Any:
    if not _well_conditioned(a):  # singular (or nearly), or not known now (vmap, jit)
        return lambda g: _adjugate_vjp_svd(a, g)

    # d adj = adj tr(A^-1 dA) - A^-1 dA adj (holomorphic; needs A invertible)
    def vjp(g: Any) -> Any:
        ainv_t = _T(inv_p(a))
        return w.sum(g * ans, axis=(-2, -1), keepdims=True) * ainv_t - _mm(ainv_t, _mm(g, _T(ans)))
    return vjp


def _well_conditioned(a: Any) -> bool:
    """Is ``a`` known now and far enough from singular for the inverse-based rule?"""
    v = concrete(a)
    if v is None or v.shape[-1] == 0:
        return False
    with np.errstate(all="ignore"):
        cond = np.linalg.cond(v)
    return bool(np.all(cond < 1.0 / np.sqrt(np.finfo(v.dtype).eps)))


def _leave_two_out(s: Any) -> Any:
    """``P[..., i, j] = prod_{k != i, j} s_k`` for ``i != j``, 0 on the diagonal:
    exclusive products from both ends and between, no division (exact at zeros)."""
    n = s.shape[-1]
    if n == 0:
        return np.zeros(s.shape + (0,), dtype=value(s).dtype)
    one = np.ones(s.shape[:-1] + (1,), dtype=value(s).dtype)
    left = w.cumprod(d.concatenate([one, s[..., : n - 1]], axis=-1), axis=-1)  # prod_{k<i}
    right = w.flip(w.cumprod(d.concatenate([one, w.flip(s, -1)[..., : n - 1]], axis=-1), axis=-1), -1)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)  # k > i
    between = w.cumprod(w.where3(upper, s[..., None, :], 1.0), axis=-1)  # prod_{i<k<=j}
    between = d.concatenate([np.ones(s.shape[:-1] + (n, 1), dtype=one.dtype), between[..., :, : n - 1]], axis=-1)
    p = left[..., :, None] * between * right[..., None, :]  # right for i < j
    return w.where3(upper, p, 0.0) + w.where3(upper.T, _T(p), 0.0)


def _adjugate_vjp_svd(a: Any, g: Any) -> Any:
    """The VJP of ``adj`` at any ``a``, singular included, from ``a = U S V^H``:
    ``d adj(A)[E] = c V X U^H`` with ``c = det(U) det(V^H)``, ``E' = U^H E V`` and
    ``X = diag(P diag(E')) - P o E'`` (``P`` of ``_leave_two_out(S)``), transposed."""
    u, s, vh = svd(a)
    v = _H(vh)
    c = (det_p(u) * det_p(vh))[..., None, None]
    p = _leave_two_out(s)
    gp = _mm(_mm(_T(v), g), _conj(u))
    gd = w.diagonal(gp, 0, -2, -1)
    hp = c * (_embed_diag(_mm(p, gd[..., None])[..., 0]) - p * gp)
    return _mm(_mm(_conj(u), hp), _T(v))


defvjp(adjugate_p, _vjp_adjugate)
_stacked(adjugate_p)
defvjp(det_p, lambda ans, a: lambda g: g[..., None, None] * _T(adjugate_p(a)))
_stacked(det_p)


def _slogdet_packed(a: Any) -> Any:
    xp = array_module(a)
    sign, logdet = xp.linalg.slogdet(a)
    return xp.stack([sign, logdet.astype(sign.dtype)], axis=-1)


# one primitive for (sign, log|det|): one LU; only log|det| has a gradient
slogdet_p = primitive(_slogdet_packed, "slogdet", batched=True)


def _vjp_slogdet(ans: Any, a: Any) -> Any:
    def vjp(g: Any) -> Any:
        gl = g[..., 1]
        if _cplx(gl):
            gl = w.real(gl)
        return gl[..., None, None] * _T(inv_p(a))
    return vjp


defvjp(slogdet_p, _vjp_slogdet)
_stacked(slogdet_p)


def det(a: Any) -> Any:
    """Determinant, as ``numpy.linalg.det``. Its gradient is the transposed
    adjugate, finite at singular matrices."""
    return det_p(a)


def slogdet(a: Any) -> SlogdetResult:
    """``(sign, log|det|)``, as ``numpy.linalg.slogdet``. ``sign`` is a plain
    array (no gradient); ``logabsdet`` is differentiable."""
    if not _traced(a):
        return np.linalg.slogdet(a)
    packed = slogdet_p(a)
    sign = value(packed)[..., 0]
    logdet = packed[..., 1]
    if _cplx(a):
        logdet = w.real(logdet)
    else:
        sign = sign.copy()
    return SlogdetResult(sign, logdet)


# --- cholesky -----------------------------------------------------------------------------------

cholesky_p = primitive(np.linalg.cholesky, "cholesky", batched=True)


def _vjp_cholesky(ans: Any, a: Any) -> Any:
    # A = L L^H:  gA = sym(L^-H Phi(L^H gL) L^-1), Phi = tril with the diagonal halved
    n = a.shape[-1]
    def vjp(u: Any) -> Any:
        L = ans
        gl = _conj(u)
        phi = w.tril(_mm(_H(L), gl)) * (1.0 - 0.5 * _eye(n, L))
        x = solve_p(_H(L), phi)  # L^-H Phi
        s = _H(solve_p(_H(L), _H(x)))  # L^-H Phi L^-1
        return _conj(0.5 * (s + _H(s)))
    return vjp


defvjp(cholesky_p, _vjp_cholesky)
_stacked(cholesky_p)


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Cholesky factor of a Hermitian positive-definite matrix, as
    ``numpy.linalg.cholesky`` (only the lower triangle of ``a`` is read)."""
    if not _traced(a):
        return _H(np.linalg.cholesky(a)) if upper else np.linalg.cholesky(a)  # (CuPy's has no upper=)
    L = cholesky_p(a)
    return _H(L) if upper else L


# --- eigh ------------------------------------------------------------------------------------------


def _eigh_packed(a: Any, UPLO: str = "L") -> Any:
    xp = array_module(a)
    lam, v = xp.linalg.eigh(a, UPLO)
    return xp.concatenate([lam[..., None, :].astype(v.dtype), v], axis=-2)


# one primitive, packed [eigenvalues; eigenvectors] of shape (..., n + 1, n)
eigh_p = primitive(_eigh_packed, "eigh", batched=True)


def _vjp_eigh(ans: Any, a: Any, UPLO: str = "L") -> Any:
    # gA = V (diag(g_lam) + F o (V^H gV)) V^H, symmetrised; F_ij = 1 / (lam_j - lam_i)
    def vjp(u: Any) -> Any:
        g = _conj(u)
        lam, V = ans[..., 0, :], ans[..., 1:, :]
        glam, gV = g[..., 0, :], g[..., 1:, :]
        if _cplx(ans):
            lam, glam = w.real(lam), w.real(glam)
        inner = _embed_diag(glam) + _inv_gaps(lam) * _mm(_H(V), gV)
        ga = _mm(V, _mm(inner, _H(V)))
        return _conj(0.5 * (ga + _H(ga)))
    return vjp


defvjp(eigh_p, _vjp_eigh)
_stacked(eigh_p)


def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix, as
    ``numpy.linalg.eigh``. Gradients divide by eigenvalue gaps: see the
    module docstring for repeated eigenvalues."""
    if not _traced(a):
        return np.linalg.eigh(a, UPLO)
    _check_square(a, "eigh")
    packed = eigh_p(a, UPLO=UPLO)
    lam = packed[..., 0, :]
    return EighResult(w.real(lam) if _cplx(a) else lam, packed[..., 1:, :])


def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """Eigenvalues of a Hermitian matrix, as ``numpy.linalg.eigvalsh``."""
    if not _traced(a):
        return np.linalg.eigvalsh(a, UPLO)
    return eigh(a, UPLO)[0]


# --- svd ----------------------------------------------------------------------------------------------


def _svd_packed(a: Any, hermitian: bool = False) -> Any:
    """Reduced SVD packed as ``[U; s; V]`` (``V = Vh^H``), shape ``(..., m + 1 + n, k)``."""
    xp = array_module(a)
    u, s, vh = xp.linalg.svd(a, full_matrices=False, **({"hermitian": hermitian} if hermitian else {}))
    return xp.concatenate([u, s[..., None, :].astype(u.dtype), xp.conj(xp.swapaxes(vh, -1, -2))], axis=-2)


svd_p = primitive(_svd_packed, "svd", batched=True)


def _split_svd(packed: Any, m: int) -> tuple[Any, Any, Any]:
    s = packed[..., m, :]
    return packed[..., :m, :], (w.real(s) if _cplx(packed) else s), packed[..., m + 1 :, :]


def _vjp_svd(ans: Any, a: Any, hermitian: bool = False) -> Any:
    # Townsend (2016), complex form: gA = U [(J + J^H) S + S (K + K^H) + diag(gs)
    #   + i Im diag(U^H gU) / S] V^H + (I - U U^H) gU S^-1 V^H + U S^-1 gV^H (I - V V^H),
    # J = F o (U^H gU), K = F o (V^H gV), F_ij = 1 / (s_j^2 - s_i^2)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)

    def vjp(u: Any) -> Any:
        g = _conj(u)
        U, s, V = _split_svd(ans, m)
        gU, gs, gV = _split_svd(g, m)
        f = _inv_gaps(s * s)
        uhgu = _mm(_H(U), gU)
        j = f * uhgu
        kk = f * _mm(_H(V), gV)
        inner = (j + _H(j)) * s[..., None, :] + s[..., :, None] * (kk + _H(kk)) + _embed_diag(gs)
        if _cplx(a):
            inner = inner + _embed_diag(1j * w.imag(w.diagonal(uhgu, 0, -2, -1)) / s)
        ga = _mm(U, _mm(inner, _H(V)))
        if m > k:
            ga = ga + _mm((gU - _mm(U, uhgu)) / s[..., None, :], _H(V))
        if n > k:
            gvh = _H(gV)
            ga = ga + _mm(U / s[..., None, :], gvh - _mm(_mm(gvh, V), _H(V)))
        return _conj(ga)

    return vjp


defvjp(svd_p, _vjp_svd)
_stacked(svd_p)


def _svdvals(a: Any) -> Any:
    return array_module(a).linalg.svd(a, compute_uv=False)


svdvals_p = primitive(_svdvals, "svdvals", batched=True)


def _vjp_svdvals(ans: Any, a: Any) -> Any:
    m = a.shape[-2]
    def vjp(g: Any) -> Any:  # g is real: gA = conj(U diag(g) V^H)
        U, _, V = _split_svd(svd_p(a), m)
        return _conj(_mm(U * g[..., None, :], _H(V)))
    return vjp


defvjp(svdvals_p, _vjp_svdvals)
_stacked(svdvals_p)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """Singular value decomposition, as ``numpy.linalg.svd``.

    Gradients of ``U`` and ``Vh`` need the reduced decomposition
    (``full_matrices=False``, or a square matrix) and divide by gaps
    between singular values; see the module docstring. The gradient of the
    singular values alone (``compute_uv=False``) has no such caveat.
    """
    if not _traced(a):
        return np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, **({"hermitian": hermitian} if hermitian else {}))
    if not compute_uv:
        return svdvals_p(a)
    m, n = a.shape[-2], a.shape[-1]
    if full_matrices and m != n:
        raise NotImplementedError(
            "tapegrad.numpy.linalg.svd: gradients with full_matrices=True need a square matrix "
            f"(got {m}x{n}); pass full_matrices=False")
    U, s, V = _split_svd(svd_p(a, hermitian=hermitian), m)
    return SVDResult(U, s, _H(V))


def svdvals(x: Any, /) -> Any:
    """Singular values, as ``numpy.linalg.svdvals``."""
    return svdvals_p(x)


# --- qr ------------------------------------------------------------------------------------------------


def _qr_packed(a: Any) -> Any:
    """Reduced QR packed as ``[Q^T, R]`` along the last axis, shape ``(..., k, m + n)``."""
    xp = array_module(a)
    q, r = xp.linalg.qr(a, mode="reduced")
    return xp.concatenate([xp.swapaxes(q, -1, -2), r], axis=-1)


qr_p = primitive(_qr_packed, "qr", batched=True)


def _rinv_h(x: Any, r: Any) -> Any:
    """``x @ R^-H`` for an upper-triangular ``R`` (a solve, differentiable)."""
    return _H(solve_p(r, _H(x)))


def _qr_grad_tall(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    # m >= n (Walter & Lehmann; Roberts & Roberts 2020), standard pairing
    qdq = _mm(_H(q), gq)
    rdr = _mm(r, _H(gr))
    low = w.tril(qdq - _H(qdq) + rdr - _H(rdr))
    ga = _mm(q, gr + _rinv_h(low, r)) + _rinv_h(gq - _mm(q, qdq), r)
    if _cplx(q):
        dg = w.diagonal(rdr - _H(qdq), 0, -2, -1)
        ga = ga + _rinv_h(_mm(q, _H(_embed_diag(1j * w.imag(dg)))), r)
    return ga


def _vjp_qr(ans: Any, a: Any) -> Any:
    m, n = a.shape[-2], a.shape[-1]

    def vjp(u: Any) -> Any:
        g = _conj(u)
        q, r = _T(ans[..., :m]), ans[..., m:]
        gq, gr = _T(g[..., :m]), g[..., m:]
        if m >= n:
            return _conj(_qr_grad_tall(q, r, gq, gr))
        # wide: A = [X Y], R = [U V]; reduce to the square case on X
        y = a[..., :, m:]
        gv = gr[..., :, m:]
        gx = _qr_grad_tall(q, r[..., :, :m], gq + _mm(y, _H(gv)), gr[..., :, :m])
        return _conj(d.concatenate([gx, _mm(q, gv)], axis=-1))

    return vjp


defvjp(qr_p, _vjp_qr)
_stacked(qr_p)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition, as ``numpy.linalg.qr``. Differentiable for
    ``mode='reduced'`` and ``'r'`` (and ``'complete'`` when ``m <= n``)."""
    if not _traced(a):
        return np.linalg.qr(a, mode=mode)
    m, n = a.shape[-2], a.shape[-1]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m > n):
        raise NotImplementedError(
            f"tapegrad.numpy.linalg.qr: mode={mode!r} is not differentiable "
            "(use 'reduced', 'r', or 'complete' with m <= n)")
    packed = qr_p(a)
    r = packed[..., m:]
    return r if mode == "r" else QRResult(_T(packed[..., :m]), r)


# --- pinv ----------------------------------------------------------------------------------------------


def _pinv(a: Any, **kw: Any) -> Any:
    return array_module(a).linalg.pinv(a, **kw)


pinv_p = primitive(_pinv, "pinv", batched=True)


def _vjp_pinv(ans: Any, a: Any, **kw: Any) -> Any:
    # Golub & Pereyra (valid where the rank is locally constant), standard pairing:
    # gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)
    m, n = a.shape[-2], a.shape[-1]
    def vjp(u: Any) -> Any:
        g, p = _conj(u), ans
        ph, gh = _H(p), _H(g)
        out = -_mm(ph, _mm(g, ph))
        out = out + _mm(_eye(m, p) - _mm(a, p), _mm(gh, _mm(p, ph)))
        out = out + _mm(_mm(ph, p), _mm(gh, _eye(n, p) - _mm(p, a)))
        return _conj(out)
    return vjp


defvjp(pinv_p, _vjp_pinv)
_stacked(pinv_p)


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, **kw: Any) -> Any:
    """Moore-Penrose pseudo-inverse, as ``numpy.linalg.pinv``. Its gradient
    holds where the numerical rank does not change nearby."""
    if rcond is not None:
        kw["rcond"] = rcond
    if hermitian:
        kw["hermitian"] = hermitian
    if not _traced(a):
        return np.linalg.pinv(a, **kw)
    return pinv_p(a, **kw)


def __getattr__(name: str) -> Any:
    # the rest of numpy.linalg (not differentiable here: traced arguments raise TypeError)
    return getattr(np.linalg, name)



from tapegrad.numpy.linalg_eig import EigResult, eig, eigvals  # noqa: E402  (defined apart: their rule calls solve)
from tapegrad.numpy.linalg_norm import norm  # noqa: E402  (defined apart: built from primitives)

__all__ += ["EigResult", "eig", "eigvals"]
