"""``tapegrad.numpy.linalg.eig`` and ``eigvals``: the general (non-Hermitian)
eigen-decomposition, differentiable. Re-exported as ``tnp.linalg.eig`` and
``tnp.linalg.eigvals`` by ``linalg``, which imports this module (its rule
calls ``solve`` through NumPy's protocol: ``np.linalg.solve`` on traced
values is ``tnp.linalg.solve``).

One primitive returns the packed ``[eigenvalues; eigenvectors]`` of shape
``(..., n + 1, n)``, always complex (as JAX's ``eig``): NumPy returns real
arrays when every eigenvalue of the input happens to be real, a dtype that
depends on the values, which ``jit`` cannot follow. Traced inputs therefore
get complex results (equal in value to NumPy's); plain arrays get NumPy's own.

Eigenvectors are NumPy's (LAPACK's ``geev``): each column has unit norm and
its largest-magnitude component real. The rule differentiates through that
choice, as JAX's ``eig_jvp_rule`` does: with ``A = V diag(w) V^-1``,
``P = V^-1 dA V``,

    dw = diag(P),   U = V (F o P),   F_ij = 1 / (w_j - w_i)  (0 for i = j),
    dv_j = u_j + c_j v_j,   c_j = -Re(v_j^H u_j) - i Im(u_kj) / v_kj,

``k`` the row of ``v_j``'s largest-magnitude entry. The VJP below is the
transpose of that real-linear map, written for the pairing ``Re tr(G^H dA)``
between two conjugations (JAX's convention, as in ``linalg``). Repeated
eigenvalues make ``F`` infinite: the eigenvectors are not differentiable
there; exact ties get 0 instead of inf (as in ``eigh``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w

__all__ = ["EigResult", "eig", "eigvals"]


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def _eig_packed(a: Any) -> Any:
    xp = array_module(a)
    if hasattr(xp.linalg, "eig"):
        lam, v = xp.linalg.eig(a)
    else:  # a device array with no general eig there: computed on the host
        lam, v = (xp.asarray(t) for t in np.linalg.eig(xp.asnumpy(a)))
    dt = np.result_type(lam.dtype, v.dtype, np.complex64)
    return xp.concatenate([lam[..., None, :].astype(dt), v.astype(dt)], axis=-2)


eig_p = primitive(_eig_packed, "eig", batched=True)


def _H(x: Any) -> Any:
    return w.conjugate(d.swapaxes(x, -1, -2))


def _vjp_eig(ans: Any, a: Any) -> Any:
    real_input = not np.iscomplexobj(value(a))

    def vjp(u: Any) -> Any:
        g = w.conjugate(u)  # the cotangent for the pairing Re tr(G^H dA)
        lam, V = ans[..., 0, :], ans[..., 1:, :]
        gw, gv = g[..., 0, :], g[..., 1:, :]
        # c_j's transpose: the cotangent of the free scale of each eigenvector
        gc = w.sum(w.conjugate(V) * gv, axis=-2)
        mag = w.absolute(V)
        top = w.where3(mag == w.amax(mag, axis=-2, keepdims=True), 1.0, 0.0)  # rows k_j
        vk = w.real(w.sum(top * V, axis=-2))
        gu = gv - V * w.real(gc)[..., None, :] - 1j * top * (w.imag(gc) / vk)[..., None, :]
        gap = lam[..., None, :] - lam[..., :, None]
        same = gap == 0
        F = w.where3(same, 0.0, 1.0 / w.where3(same, 1.0, gap))
        inner = gw[..., :, None] * array_module(value(ans)).eye(lam.shape[-1], dtype=value(ans).dtype) + w.conjugate(F) * w.matmul(_H(V), gu)
        ga = w.conjugate(np.linalg.solve(_H(V), w.matmul(inner, _H(V))))
        return w.real(ga) if real_input else ga

    return vjp


defvjp(eig_p, _vjp_eig)
defbatch(eig_p, lambda args, batched, size, **kw: eig_p(*args, **kw))  # one more stack axis


def _traced(a: Any) -> bool:
    return type(a) is Traced


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors of a square matrix (or a stack of
    them), as ``numpy.linalg.eig``; complex for traced inputs (see the module
    docstring). Gradients divide by eigenvalue gaps."""
    if not _traced(a):
        return EigResult(*np.linalg.eig(a))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("eig: last 2 dimensions of the array must be square")
    packed = eig_p(a)
    return EigResult(packed[..., 0, :], packed[..., 1:, :])


def eigvals(a: Any) -> Any:
    """Eigenvalues of a square matrix, as ``numpy.linalg.eigvals`` (complex for
    traced inputs)."""
    if not _traced(a):
        return np.linalg.eigvals(a)
    return eig(a)[0]


