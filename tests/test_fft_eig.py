"""Issue 14: ``fft.{rfft2 irfft2 rfftn irfftn fftshift ifftshift}`` and
``linalg.{eig eigvals}``: values against NumPy (plain and traced, ``s``/``axes``
/``norm`` variants), eig's gradients against finite differences (eigenvalues;
eigenvectors through gauge-invariant functions, and through LAPACK's own
normalisation for complex inputs), under ``vmap`` and ``jit``. The op table
(tests/optable.py) checks the same functions under grad, vmap and jit too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

NORMS = [None, "backward", "ortho", "forward"]


def _traced_value(f: Callable[[Any], Any], x: np.ndarray) -> Any:
    """``f`` at ``x`` with ``x`` traced (through ``vjp``): the traced code path's value."""
    out, _ = tg.vjp(f, x)
    return out


# --- fft ---------------------------------------------------------------------------------------

RFFTN = [
    ({}, (3, 4, 5)),
    ({"s": (4, 6), "axes": (0, 2)}, (3, 2, 5)),
    ({"s": (2, 3), "axes": (-2, -1)}, (2, 3, 5)),
    ({"axes": (1,)}, (3, 4, 5)),
    ({"axes": (2, 0)}, (3, 4, 5)),
    ({"s": (5, 7, 2), "axes": (0, 1, 2)}, (3, 4, 5)),
    ({"s": (-1, 6), "axes": (0, 1)}, (3, 4)),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kw,shape", RFFTN, ids=[str(k) for k, _ in RFFTN])
def test_rfftn_and_irfftn_match_numpy(kw: dict[str, Any], shape: tuple[int, ...], norm: Any) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    want = np.fft.rfftn(x, norm=norm, **kw)
    np.testing.assert_allclose(tnp.fft.rfftn(x, norm=norm, **kw), want)
    np.testing.assert_allclose(_traced_value(lambda v: tnp.fft.rfftn(v, norm=norm, **kw), x), want, atol=1e-12)
    z = want + 0.3j  # not Hermitian: irfftn's own conventions (the imaginary DC part dropped)
    back = np.fft.irfftn(z, norm=norm, **kw)
    np.testing.assert_allclose(_traced_value(lambda v: tnp.fft.irfftn(v, norm=norm, **kw), z), back, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
def test_rfft2_irfft2_match_numpy(norm: Any) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 6))
    for kw in ({}, {"s": (4, 4)}, {"axes": (0, 2)}, {"s": (3, 9), "axes": (2, 1)}):
        want = np.fft.rfft2(x, norm=norm, **kw)
        np.testing.assert_allclose(_traced_value(lambda v: tnp.fft.rfft2(v, norm=norm, **kw), x), want, atol=1e-12)
        back = np.fft.irfft2(want, norm=norm, **kw)
        got = _traced_value(lambda v: tnp.fft.irfft2(v, norm=norm, **kw), want)
        np.testing.assert_allclose(got, back, atol=1e-12)
        assert got.dtype == back.dtype


def test_irfftn_default_s_is_numpy_s() -> None:
    z = np.fft.rfftn(np.random.default_rng(2).standard_normal((3, 8)))
    got = _traced_value(tnp.fft.irfftn, z)
    assert got.shape == np.fft.irfftn(z).shape == (3, 8)
    np.testing.assert_allclose(got, np.fft.irfftn(z))


@pytest.mark.parametrize("axes", [None, 0, 1, -1, (0, 2), (2, 0, 1)])
def test_fftshift_ifftshift_match_numpy(axes: Any) -> None:
    x = np.arange(3 * 4 * 5.0).reshape(3, 4, 5) + 1j
    for name in ("fftshift", "ifftshift"):
        want = getattr(np.fft, name)(x, axes)
        np.testing.assert_array_equal(getattr(tnp.fft, name)(x, axes), want)
        np.testing.assert_array_equal(_traced_value(lambda v: getattr(tnp.fft, name)(v, axes), x), want)
    np.testing.assert_array_equal(
        _traced_value(lambda v: tnp.fft.ifftshift(tnp.fft.fftshift(v, axes), axes), x), x)


def test_fftshift_gradient_is_the_inverse_shift() -> None:
    rng = np.random.default_rng(3)
    x, u = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    _, vjp = tg.vjp(tnp.fft.fftshift, x)
    np.testing.assert_array_equal(vjp(u)[0], np.fft.ifftshift(u))


def test_rfftn_gradient_under_vmap_and_jit() -> None:
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((3, 4, 6))

    def f(x: Any) -> Any:
        y = tnp.fft.rfftn(x, s=(4, 8), axes=(0, 1), norm="ortho")
        return tnp.sum(tnp.abs(y) ** 2) + tnp.sum(tnp.fft.irfftn(y * 1j, s=(4, 8), axes=(0, 1)))

    loop = np.stack([tg.grad(f)(x) for x in xs])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), loop, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(f)))(xs), loop, rtol=1e-10, atol=1e-12)


def test_numpy_dispatch_of_the_new_fft_functions() -> None:
    x = np.random.default_rng(5).standard_normal((4, 6))
    got = tg.grad(lambda v: tnp.sum(tnp.real(np.fft.rfft2(v)) + np.fft.fftshift(v)[0, 0]))(x)
    want = tg.grad(lambda v: tnp.sum(tnp.real(tnp.fft.rfft2(v)) + tnp.fft.fftshift(v)[0, 0]))(x)
    np.testing.assert_allclose(got, want)


# --- eig ---------------------------------------------------------------------------------------------


def _fd_grad(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences, in JAX's convention for complex inputs (df/dx - i df/dy)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for unit in (1.0, 1j) if np.iscomplexobj(x) else (1.0,):
            e = np.zeros_like(x)
            e[i] = eps * unit
            g[i] += (f(x + e) - f(x - e)) / (2 * eps) * np.conj(unit)
    return g


def _distinct_real(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, n)) + 2 * np.eye(n)
    return q @ np.diag(np.arange(1.0, n + 1)) @ np.linalg.inv(q)  # eigenvalues 1..n


def _complex_matrix(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))


MATRICES = {
    "real_eigs": _distinct_real(4, 0),
    "real_complex_pairs": np.random.default_rng(1).standard_normal((4, 4)),
    "complex": _complex_matrix(4, 2),
}
C = np.random.default_rng(9).standard_normal((4, 4)) + 1j * np.random.default_rng(8).standard_normal((4, 4))


def _values_loss(m: Any) -> Callable[[Any], Any]:
    return lambda a: m.real(m.sum(m.linalg.eigvals(a) * C[0])) + m.sum(m.abs(m.linalg.eig(a)[0]) ** 3)


def _vectors_loss(m: Any) -> Callable[[Any], Any]:
    def f(a: Any) -> Any:
        lam, v = m.linalg.eig(a)
        p = m.matmul(v * C[1], m.conj(m.swapaxes(v, -1, -2)))  # sum_j c_j v_j v_j^H
        return m.sum(m.real(v * m.conj(v)) * m.real(C)) + m.real(m.sum(p * C))

    return f


@pytest.mark.parametrize("which", list(MATRICES))
def test_eig_values_match_numpy(which: str) -> None:
    a = MATRICES[which]
    want_lam, want_v = np.linalg.eig(a)
    out = tg.vjp(lambda x: tnp.linalg.eig(x), a)[0]
    np.testing.assert_allclose(out.eigenvalues, want_lam, rtol=1e-12)
    np.testing.assert_allclose(out.eigenvectors, want_v, rtol=1e-12, atol=1e-14)
    assert np.iscomplexobj(out.eigenvalues) and np.iscomplexobj(out.eigenvectors)  # always, as JAX
    np.testing.assert_allclose(_traced_value(tnp.linalg.eigvals, a), np.linalg.eigvals(a), rtol=1e-12)
    plain = tnp.linalg.eig(a)  # plain arrays: NumPy's own (a real result where NumPy gives one)
    assert plain.eigenvalues.dtype == want_lam.dtype


@pytest.mark.parametrize("which", list(MATRICES))
@pytest.mark.parametrize("loss", [_values_loss, _vectors_loss], ids=["eigenvalues", "eigenvectors"])
def test_eig_gradients_against_finite_differences(which: str, loss: Any) -> None:
    a = MATRICES[which]
    got = tg.grad(loss(tnp))(a)
    assert got.dtype == a.dtype
    np.testing.assert_allclose(got, _fd_grad(loss(np), a), rtol=1e-6, atol=1e-6)


def test_eigvector_gradient_follows_lapack_normalisation() -> None:
    # complex inputs: LAPACK's eigenvectors (unit norm, largest component real) are a smooth
    # function of the matrix, and the rule differentiates through that choice (as JAX's does)
    a = _complex_matrix(3, 5)

    def f(m: Any) -> Callable[[Any], Any]:
        return lambda x: m.real(m.sum(m.linalg.eig(x)[1] * C[:3, :3]))

    np.testing.assert_allclose(tg.grad(f(tnp))(a), _fd_grad(f(np), a), rtol=1e-6, atol=1e-6)


def test_eig_second_order() -> None:
    a = MATRICES["real_eigs"]
    tg.check_grads(lambda x: tnp.real(tnp.linalg.eig(x)[0]), [a], modes=("rev",), order=2)
    tg.check_grads(lambda x: tnp.abs(tnp.linalg.eig(x)[1]) ** 2, [a], modes=("rev",), order=2)


def test_eig_vmap_and_jit() -> None:
    stack = np.stack([_distinct_real(4, s) for s in range(3)])
    f = _vectors_loss(tnp)
    loop = np.stack([tg.grad(f)(x) for x in stack])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(stack), loop, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(f)))(stack), loop, rtol=1e-9, atol=1e-10)
    lam = tg.vmap(lambda x: tnp.linalg.eig(x)[0])(stack)
    np.testing.assert_allclose(lam, np.linalg.eig(stack)[0], rtol=1e-12)
    # stacked inputs without vmap: numpy's leading axes
    np.testing.assert_allclose(tg.grad(lambda x: f(x))(stack), loop, rtol=1e-9, atol=1e-10)


def test_eig_rejects_non_square() -> None:
    with pytest.raises(np.linalg.LinAlgError):
        tg.grad(lambda x: tnp.real(tnp.sum(tnp.linalg.eig(x)[0])))(np.ones((2, 3)))


def test_numpy_dispatch_of_eig() -> None:
    a = MATRICES["real_eigs"]
    got = tg.grad(lambda x: tnp.real(tnp.sum(np.linalg.eigvals(x) ** 2)))(a)
    np.testing.assert_allclose(got, 2 * a.T, rtol=1e-8)  # d tr(A^2) = 2 A^T
