"""Complex numbers: JAX's convention for gradients, holomorphic grad, the
complex helpers (real imag conj angle abs), and, when JAX is importable, a
differential test of complex-input gradients against JAX."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

rng = np.random.default_rng(11)


def _cx(*shape: int) -> np.ndarray:
    return rng.uniform(0.3, 1.5, shape) + 1j * rng.uniform(-1.0, 1.0, shape)


def test_grad_of_a_complex_output_is_an_error_unless_holomorphic() -> None:
    z = np.array(0.5 + 0.5j)
    with pytest.raises(TypeError, match="holomorphic=True"):
        tg.grad(tnp.sin)(z)
    np.testing.assert_allclose(tg.grad(tnp.sin, holomorphic=True)(z), np.cos(z))
    np.testing.assert_allclose(tg.grad(lambda v: v ** 3, holomorphic=True)(z), 3 * z ** 2)
    np.testing.assert_allclose(tg.grad(lambda v: tnp.linalg.det(v), holomorphic=True)(np.eye(2) * z),
                               np.linalg.det(np.eye(2) * z) * np.linalg.inv(np.eye(2) * z).T)


def test_jax_convention_for_real_valued_functions() -> None:
    """grad f = df/dx - i df/dy: grad |z|^2 = 2 conj(z)."""
    z = _cx(4)
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.abs(v) ** 2))(z), 2 * np.conj(z))
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.real(v)))(z), np.ones(4))
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.imag(v)))(z), -1j * np.ones(4))
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.real(tnp.conj(v) * 1j)))(z), np.full(4, -1j))  # Re(i conj z) = y
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.abs(v)))(z), np.conj(z) / np.abs(z))
    # angle = atan2(y, x): d/dx = -y/|z|^2, d/dy = x/|z|^2
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.angle(v)))(z),
                               (-z.imag - 1j * z.real) / np.abs(z) ** 2)


def test_abs_of_complex_zero_has_zero_gradient() -> None:
    z = np.array([0j, 1 + 1j])
    np.testing.assert_allclose(tg.grad(lambda v: tnp.sum(tnp.abs(v)))(z), [0, (1 - 1j) / np.sqrt(2)])


def test_helpers_on_complex_arrays_match_numpy() -> None:
    z = _cx(2, 3)
    for name in ("real", "imag", "conj", "angle", "abs"):
        np.testing.assert_array_equal(getattr(tnp, name)(z), getattr(np, name)(z))
    np.testing.assert_array_equal(tnp.angle(z, deg=True), np.angle(z, deg=True))


def test_mixed_real_and_complex_arguments() -> None:
    a, b = rng.standard_normal((3, 4)), _cx(4, 2)
    f = lambda x, y: tnp.sum(tnp.abs(x @ y) ** 2)  # noqa: E731
    tg.check_grads(f, [a, b], order=2)
    ga, gb = tg.grad(f, argnums=(0, 1))(a, b)
    assert ga.dtype == np.float64 and gb.dtype == np.complex128


# --- a differential test against JAX (skipped when JAX is not installed) --------------------------

CASES = [
    ("abs_sq", lambda m, z: m.sum(m.abs(z) ** 2), (3, 3)),
    ("angle_abs", lambda m, z: m.sum(m.angle(z) * m.abs(z)), (3, 3)),
    ("elementwise", lambda m, z: m.sum(m.real(m.exp(z) * m.log(z) / (1 + z * z))), (3, 3)),
    ("sqrt_tanh", lambda m, z: m.sum(m.imag(m.sqrt(z) * m.tanh(z))), (3, 3)),
    ("reductions", lambda m, z: m.real(m.prod(m.sum(z, axis=0)) + m.mean(z ** 2)), (3, 3)),
    ("matmul_einsum", lambda m, z: m.sum(m.abs(z @ z.T) + m.real(m.einsum("ij,jk->ik", z, m.conj(z)))), (3, 3)),
    ("inv", lambda m, z: m.sum(m.abs(m.linalg.inv(z + 3 * np.eye(3)))), (3, 3)),
    ("solve", lambda m, z: m.sum(m.real(m.linalg.solve(z + 3 * np.eye(3), z[:, 0]))), (3, 3)),
    ("det", lambda m, z: m.abs(m.linalg.det(z)), (3, 3)),
    ("slogdet", lambda m, z: m.linalg.slogdet(z + 3 * np.eye(3))[1], (3, 3)),
    ("eigh", lambda m, z: m.sum(m.linalg.eigh(z @ m.conj(z.T))[0] ** 2), (3, 3)),
    ("svdvals", lambda m, z: m.sum(m.linalg.svd(z, compute_uv=False) ** 3), (4, 3)),
    ("cholesky", lambda m, z: m.sum(m.abs(m.linalg.cholesky(z @ m.conj(z.T) + np.eye(3)))), (3, 3)),
    ("norms", lambda m, z: m.linalg.norm(z) + m.linalg.norm(z, "nuc") + m.linalg.norm(z, 1), (3, 3)),
    ("fft", lambda m, z: m.sum(m.abs(m.fft.fft(z, axis=0)) ** 2 * np.arange(1.0, 4.0)), (3, 3)),
    ("ifft2_n", lambda m, z: m.sum(m.real(m.fft.ifft2(z, s=(4, 2)) * np.arange(8.0).reshape(4, 2))), (3, 3)),
    ("irfft", lambda m, z: m.sum(m.fft.irfft(z, 5) * np.arange(1.0, 6.0)), (3, 3)),
]


@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
def test_complex_gradients_agree_with_jax(name: str, fn, shape: tuple[int, ...]) -> None:  # noqa: ANN001
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    z = _cx(*shape)
    want = np.asarray(jax.grad(lambda v: fn(jnp, v))(jnp.asarray(z)))
    got = tg.grad(lambda v: fn(tnp, v))(z)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
