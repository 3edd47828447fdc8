"""tapegrad.scipy.linalg: ``scipy.linalg`` functions, differentiable.

Same names, signatures and results as SciPy (``solve_triangular``,
``solve_banded``, ``cholesky``, ``sqrtm``, ``solve_sylvester``), stacked over leading axes
(SciPy's own take one matrix). SciPy is imported on first use.

Rules (``x = op(T)^-1 b``, ``T`` the triangle of ``a`` that is read, with a
unit diagonal if ``unit_diagonal``; ``op`` the identity or the transpose):

    b_bar = op(T)^-T g        (one more triangular solve)
    a_bar = tri(-b_bar x^T)   (op: identity)  or  tri(-x b_bar^T) (op: transpose)

where ``tri`` keeps the triangle that was read (its diagonal dropped for a
unit diagonal): the other entries of ``a`` are never read, their cotangent is
zero. ``trans=2`` (conjugate transpose) is ``trans=1`` on ``conj(a)``.
Complex inputs follow JAX's convention (no conjugation in the rules).

``sqrtm(a)``: ``X = sqrtm(A)`` satisfies ``X dX + dX X = dA``, so the VJP
solves the Sylvester equation ``X^T Y + Y X^T = G`` for ``Y``
(``solve_sylvester``, itself a primitive with rules, so ``sqrtm``
differentiates again). Domain: symmetric (Hermitian) positive definite
matrices, where the principal square root is unique, smooth and
symmetric, and the Sylvester equation is nonsingular (the eigenvalues of
``X`` are positive). It also works for matrices whose eigenvalues lie off
the closed negative real axis, but only the symmetric positive definite case
is tested.

``cholesky(a, lower=False)``: SciPy's default is the UPPER factor
(``a = U^H U``, reading the upper triangle); ``lower=True`` gives ``L``
(reading the lower triangle). Its rule is ``tapegrad.numpy.linalg``'s
(symmetric gradients, as JAX).

Batching (``vmap``): ``solve_triangular``, ``sqrtm`` and ``solve_sylvester``
take stacks of matrices, so the batch is one more leading stack axis.
"""

from __future__ import annotations

import itertools
from types import ModuleType
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch, elementwise_rule
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import linalg as tla
from tapegrad.numpy import wrap as w
from tapegrad.scipy._lazy import scipy_module, scipy_module_for

__all__ = ["cholesky", "solve_banded", "solve_sylvester", "solve_triangular", "sqrtm"]


def _scipy_linalg(name: str, *arrays: Any) -> ModuleType:
    """``scipy.linalg``, or ``cupyx.scipy.linalg`` for CuPy ``arrays`` (an error when it lacks ``name``)."""
    if arrays:
        return scipy_module_for("linalg", name, f"tapegrad.scipy.linalg.{name}", *arrays)
    return scipy_module("linalg", f"tapegrad.scipy.linalg.{name}")


def _T(x: Any) -> Any:
    return d.swapaxes(x, -1, -2)


def _mm(a: Any, b: Any) -> Any:
    return w.matmul(a, b)


def _stack_loop(fn: Any, out_dtype: Any, *mats: Any) -> Any:
    """``fn`` of single matrices over the broadcast leading axes of ``mats``."""
    lead = np.broadcast_shapes(*[m.shape[:-2] for m in mats])
    mats = tuple(np.broadcast_to(m, lead + m.shape[-2:]) for m in mats)
    first = fn(*[m[(0,) * len(lead)] for m in mats]) if all(lead) or not lead else None
    if not lead:
        return first
    if first is None:  # an empty stack
        shape = lead + mats[-1].shape[-2:]
        return np.zeros(shape, out_dtype)
    out = np.empty(lead + first.shape, first.dtype)
    for idx in itertools.product(*[range(n) for n in lead]):
        out[idx] = fn(*[m[idx] for m in mats])
    return out


# --- solve_triangular -----------------------------------------------------------------------


def _tri(a: Any, lower: bool, unit: bool) -> Any:
    """The triangle of ``a`` that is read (diagonal ones for a unit diagonal)."""
    t = w.tril(a) if lower else w.triu(a)
    if unit:
        n = a.shape[-1]
        xp = array_module(value(a))
        t = t * (1.0 - xp.eye(n)) + xp.eye(n, dtype=np.result_type(value(a).dtype, np.float64))
    return t


def _solve_tri(a: Any, b: Any, lower: bool = False, unit_diagonal: bool = False, trans: int = 0) -> Any:
    if a.ndim == 2 and b.ndim == 2:
        return _scipy_linalg("solve_triangular", a, b).solve_triangular(
            a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    t = _tri(a, lower, unit_diagonal)
    if trans:
        t = np.swapaxes(t, -1, -2)
    return np.linalg.solve(t, b)


solve_triangular_p = primitive(_solve_tri, "solve_triangular", batched=True)


def _vjp_tri_a(ans: Any, a: Any, b: Any, lower: bool = False, unit_diagonal: bool = False,
               trans: int = 0) -> Any:
    def vjp(g: Any) -> Any:
        gb = solve_triangular_p(a, g, lower=lower, unit_diagonal=unit_diagonal, trans=1 - trans)
        ga = -_mm(gb, _T(ans)) if trans == 0 else -_mm(ans, _T(gb))
        ga = w.tril(ga) if lower else w.triu(ga)
        if unit_diagonal:
            ga = ga * (1.0 - array_module(value(a)).eye(a.shape[-1]))
        return ga
    return vjp


def _vjp_tri_b(ans: Any, a: Any, b: Any, lower: bool = False, unit_diagonal: bool = False,
               trans: int = 0) -> Any:
    return lambda g: solve_triangular_p(a, g, lower=lower, unit_diagonal=unit_diagonal, trans=1 - trans)


defvjp(solve_triangular_p, _vjp_tri_a, _vjp_tri_b)
defbatch(solve_triangular_p, elementwise_rule(solve_triangular_p))  # (stacks broadcast)

_TRANS = {0: 0, "N": 0, "n": 0, 1: 1, "T": 1, "t": 1, 2: 2, "C": 2, "c": 2}


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``op(a) x = b`` for triangular ``a``, as ``scipy.linalg.solve_triangular``.

    ``trans``: 0 or 'N' (``a x = b``), 1 or 'T' (``a^T x = b``), 2 or 'C'
    (``a^H x = b``). Only the ``lower`` (else upper) triangle of ``a`` is
    read; with ``unit_diagonal`` its diagonal is taken to be ones.
    ``b`` is ``(n,)`` or ``(n, k)`` (or stacks: ``a`` ``(..., n, n)`` with
    ``b`` ``(..., n, k)``). Differentiable in ``a`` and ``b``.
    """
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    tr = _TRANS[trans]
    if np.ndim(value(a)) < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve_triangular: expected a square matrix, got shape {np.shape(value(a))}")
    if not isinstance(a, Traced):
        a = array_module(a).asarray(a)  # (a device array stays on the device)
    if not isinstance(b, Traced):
        b = array_module(b).asarray(b)
    if tr == 2:
        a = w.conjugate(a) if np.iscomplexobj(value(a)) else a
        tr = 1
    vec = b.ndim == 1
    if b.shape[-2 if not vec else 0] != a.shape[-1]:
        raise ValueError(f"solve_triangular: shapes of a {tuple(a.shape)} and b {tuple(b.shape)} "
                         "are incompatible")
    x = solve_triangular_p(a, b[:, None] if vec else b, lower=bool(lower),
                           unit_diagonal=bool(unit_diagonal), trans=tr)
    return x[:, 0] if vec else x


# --- solve_sylvester and sqrtm ------------------------------------------------------------------


def _sylvester(a: Any, b: Any, q: Any) -> Any:
    sl = _scipy_linalg("solve_sylvester", a, b, q)
    return _stack_loop(sl.solve_sylvester, np.result_type(a, b, q), a, b, q)


solve_sylvester_p = primitive(_sylvester, "solve_sylvester", batched=True)


def _sylvester_adjoint(a: Any, b: Any, g: Any) -> Any:
    # Y = S(A, B, Q) solves A Y + Y B = Q; its adjoint in Q solves A^T Z + Z B^T = G
    return solve_sylvester_p(_T(a), _T(b), g)


defvjp(solve_sylvester_p,
       lambda ans, a, b, q: lambda g: -_mm(_sylvester_adjoint(a, b, g), _T(ans)),
       lambda ans, a, b, q: lambda g: -_mm(_T(ans), _sylvester_adjoint(a, b, g)),
       lambda ans, a, b, q: lambda g: _sylvester_adjoint(a, b, g))
defbatch(solve_sylvester_p, elementwise_rule(solve_sylvester_p))


def solve_sylvester(a: Any, b: Any, q: Any) -> Any:
    """Solve ``a x + x b = q`` for ``x``, as ``scipy.linalg.solve_sylvester``;
    differentiable in all three."""
    return solve_sylvester_p(a, b, q)


def _sqrtm(a: Any) -> Any:
    sq = _scipy_linalg("sqrtm", a).sqrtm
    return _stack_loop(sq, np.result_type(a, np.float64), a)


sqrtm_p = primitive(_sqrtm, "sqrtm", batched=True)


def _vjp_sqrtm(ans: Any, a: Any) -> Any:
    return lambda g: solve_sylvester_p(_T(ans), _T(ans), g)


defvjp(sqrtm_p, _vjp_sqrtm)
defbatch(sqrtm_p, lambda args, batched, size, **kw: sqrtm_p(*args, **kw))


def sqrtm(A: Any, disp: bool = True, blocksize: int = 64) -> Any:
    """Principal matrix square root, as ``scipy.linalg.sqrtm`` (stacked over
    leading axes). Gradients for symmetric positive definite ``A`` (see the
    module docstring); ``disp`` and ``blocksize`` are accepted and ignored."""
    if np.ndim(value(A)) < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"sqrtm: expected a square matrix, got shape {np.shape(value(A))}")
    return sqrtm_p(A if isinstance(A, Traced) else array_module(A).asarray(A))




# --- solve_banded ---------------------------------------------------------------------------------


def _solve_banded(ab: Any, b: Any, *, l: int, u: int) -> Any:
    return _scipy_linalg("solve_banded", ab, b).solve_banded((l, u), ab, b)


solve_banded_p = primitive(_solve_banded, "solve_banded")


def _band_transpose(ab: Any, l: int, u: int) -> Any:
    """The banded form (``(u, l)``) of the transpose of the matrix whose banded
    form (``(l, u)``) is ``ab``: row ``r`` is row ``u + l - r`` of ``ab`` shifted
    by ``r - l`` columns (zeros past the ends)."""
    n = ab.shape[-1]
    padded = w.pad(ab, [(0, 0), (l, u)])
    return d.stack([padded[u + l - r, r:r + n] for r in range(l + u + 1)])


def _band_outer(p: Any, q: Any, l: int, u: int) -> Any:
    """The banded form of ``p q^T``'s band: ``[u + i - j, j] = sum_k p[i, k] q[j, k]``."""
    n = q.shape[0]
    padded = w.pad(p, [(u, l), (0, 0)])
    return d.stack([w.sum(padded[r:r + n] * q, axis=-1) for r in range(l + u + 1)])


def _vjp_banded_b(ans: Any, ab: Any, b: Any, *, l: int, u: int) -> Any:
    return lambda g: solve_banded_p(_band_transpose(ab, l, u), g, l=u, u=l)


def _vjp_banded_ab(ans: Any, ab: Any, b: Any, *, l: int, u: int) -> Any:
    return lambda g: -_band_outer(solve_banded_p(_band_transpose(ab, l, u), g, l=u, u=l), ans, l, u)


defvjp(solve_banded_p, _vjp_banded_ab, _vjp_banded_b)


def _batch_banded(args: Any, batched: Any, size: int, *, l: int, u: int) -> Any:
    """vmap: a batch of right-hand sides is one solve with more columns; a batch
    of matrices: None (a loop: SciPy solves one banded matrix at a time)."""
    ab, b = args
    if batched[0]:
        return None
    n, k = b.shape[1], b.shape[2]
    cols = w.reshape_c(d.moveaxis(b, 0, 1), (n, size * k))
    return d.moveaxis(w.reshape_c(solve_banded_p(ab, cols, l=l, u=u), (n, size, k)), 1, 0)


defbatch(solve_banded_p, _batch_banded)


def solve_banded(l_and_u: tuple[int, int], ab: Any, b: Any, overwrite_ab: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solve ``a x = b`` for a banded ``a``, as ``scipy.linalg.solve_banded``.

    ``(l, u)``: the numbers of nonzero lower and upper diagonals; ``ab``
    (shape ``(l + u + 1, n)``) holds ``a`` in banded form,
    ``ab[u + i - j, j] == a[i, j]`` (its unused corners are never read: their
    gradient is zero). ``b`` is ``(n,)`` or ``(n, k)``. Differentiable in
    ``ab`` and ``b`` (the adjoint is a banded solve with the transpose,
    ``(u, l)``), to any order.

    Examples:
        >>> ab = np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])  # tridiagonal
        >>> solve_banded((1, 1), ab, np.array([5.0, 6.0, 5.0]))
        array([1., 1., 1.])
    """
    l, u = (int(v) for v in l_and_u)
    if not isinstance(ab, Traced):
        ab = array_module(ab).asarray(ab)
    if not isinstance(b, Traced):
        b = array_module(b).asarray(b)
    if ab.ndim != 2 or ab.shape[0] != l + u + 1:
        raise ValueError(f"solve_banded: invalid values for the number of lower and upper diagonals: "
                         f"l+u+1 ({l + u + 1}) does not equal ab.shape[0] ({ab.shape[0] if ab.ndim else 0})")
    if b.ndim not in (1, 2) or b.shape[0] != ab.shape[-1]:
        raise ValueError(f"solve_banded: shape of ab {tuple(ab.shape)} and b {tuple(b.shape)} are incompatible")
    vec = b.ndim == 1
    x = solve_banded_p(ab, b[:, None] if vec else b, l=l, u=u)
    return x[:, 0] if vec else x


# --- cholesky ------------------------------------------------------------------------------------


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """Cholesky factor, as ``scipy.linalg.cholesky``: by default the UPPER
    factor ``U`` (``a = U^H U``, only the upper triangle of ``a`` is read);
    with ``lower=True`` the lower one (``a = L L^H``, the lower triangle).
    Raises ``LinAlgError`` for a matrix that is not positive definite."""
    if lower:
        return tla.cholesky(a)
    ah = tla._H(a) if isinstance(a, Traced) else np.conj(np.swapaxes(np.asarray(a), -1, -2))
    return tla._H(tla.cholesky(ah))
