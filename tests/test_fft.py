"""tapegrad.numpy.fft beyond the op table: dispatch, argument handling, and
the VJPs against the explicit (transposed) linear maps."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

rng = np.random.default_rng(3)


def _cx(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _matrix_of(f, n_in: int, dtype: type) -> np.ndarray:  # noqa: ANN001
    """The (complex) matrix of a linear map of 1-D inputs, column by column."""
    return np.stack([np.asarray(f(np.eye(n_in, dtype=dtype)[k])) for k in range(n_in)], axis=1)


@pytest.mark.parametrize("name", ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft"])
def test_numpy_fft_functions_dispatch(name: str) -> None:
    x = rng.standard_normal((4, 6))
    f_np = lambda v: np.sum(np.abs(getattr(np.fft, name)(v)) ** 2)  # noqa: E731
    f_tnp = lambda v: tnp.sum(tnp.abs(getattr(tnp.fft, name)(v)) ** 2)  # noqa: E731
    np.testing.assert_allclose(tg.grad(f_np)(x), tg.grad(f_tnp)(x), rtol=1e-12)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 5, 11])
def test_fft_vjp_is_the_plain_transpose(norm: str | None, n: int | None) -> None:
    """JAX's convention: the VJP of a linear map is u -> M^T u, no conjugation."""
    x = _cx(8)
    m = _matrix_of(lambda v: np.fft.fft(v, n, norm=norm), 8, complex)
    u = _cx(m.shape[0])
    _, vjp = tg.vjp(lambda v: tnp.fft.fft(v, n, norm=norm), x)
    np.testing.assert_allclose(vjp(u)[0], m.T @ u, atol=1e-12)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 7, 12, 4])
def test_irfft_vjp_against_its_real_linear_map(norm: str | None, n: int | None) -> None:
    """irfft is R-linear in (Re y, Im y); the VJP in JAX's convention is
    g = d/dRe - i d/dIm of <u, irfft(y)>."""
    y = _cx(5)
    u = rng.standard_normal(np.fft.irfft(y, n).shape)
    re = _matrix_of(lambda v: np.fft.irfft(v, n, norm=norm), 5, float)
    im = _matrix_of(lambda v: np.fft.irfft(1j * v, n, norm=norm), 5, float)
    want = u @ re - 1j * (u @ im)
    _, vjp = tg.vjp(lambda v: tnp.fft.irfft(v, n, norm=norm), y)
    np.testing.assert_allclose(vjp(u)[0], want, atol=1e-12)


def test_rfft_vjp_against_its_matrix() -> None:
    x = rng.standard_normal(7)
    for n in (None, 5, 10):
        m = _matrix_of(lambda v, n=n: np.fft.rfft(v, n), 7, float)
        u = _cx(m.shape[0])
        _, vjp = tg.vjp(lambda v, n=n: tnp.fft.rfft(v, n), x)
        np.testing.assert_allclose(vjp(u)[0], np.real(m.T @ u), atol=1e-12)


def test_roundtrip_gradients() -> None:
    x = rng.standard_normal((3, 8))
    g = tg.grad(lambda v: tnp.sum(tnp.fft.irfft(tnp.fft.rfft(v), 8) * v))(x)
    np.testing.assert_allclose(g, 2 * x, atol=1e-12)
    g = tg.grad(lambda v: tnp.sum(tnp.real(tnp.fft.ifftn(tnp.fft.fftn(v))) ** 2))(x)
    np.testing.assert_allclose(g, 2 * x, atol=1e-12)


def test_parseval_gradient_with_ortho_norm() -> None:
    x = _cx(4, 6)
    g = tg.grad(lambda v: tnp.sum(tnp.abs(tnp.fft.fft2(v, norm="ortho")) ** 2))(x)
    np.testing.assert_allclose(g, 2 * np.conj(x), atol=1e-12)


def test_arguments_resolve_like_numpy() -> None:
    x = rng.standard_normal((2, 3, 4))
    for kw in ({"s": (5, 2), "axes": (1, 2)}, {"s": (5, -1), "axes": (0, 2)}, {"axes": (-1,)}, {}):
        np.testing.assert_allclose(tg.value(tg.vjp(lambda v, kw=kw: tnp.fft.fftn(v, **kw), x)[0]),
                                   np.fft.fftn(x, **kw), atol=1e-12)
    with pytest.raises(ValueError, match="norm"):
        tg.grad(lambda v: tnp.sum(tnp.abs(tnp.fft.fft(v, norm="bogus"))))(x)
    with pytest.raises(ValueError):
        tg.grad(lambda v: tnp.sum(tnp.abs(tnp.fft.fft(v, 0))))(x)


def test_plain_arrays_take_numpys_path() -> None:
    x = rng.standard_normal(8)
    np.testing.assert_array_equal(tnp.fft.rfft(x), np.fft.rfft(x))
    np.testing.assert_array_equal(tnp.fft.ifft2(x.reshape(2, 4)), np.fft.ifft2(x.reshape(2, 4)))
