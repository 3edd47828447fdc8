"""tapegrad.numpy.linalg beyond the op table: NumPy dispatch, singular and
degenerate inputs, errors, and the shared backward solve."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

rng = np.random.default_rng(7)


def _adjugate_by_cofactors(a: np.ndarray) -> np.ndarray:
    n = a.shape[0]
    cof = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return cof.T


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "eigh", "svd", "qr", "cholesky", "pinv", "norm", "solve"])
def test_numpy_functions_dispatch_to_tapegrad(name: str) -> None:
    a = rng.standard_normal((3, 3))
    a = a @ a.T + 3 * np.eye(3)
    b = rng.standard_normal(3)

    def use(lib, x):  # noqa: ANN001
        f = getattr(lib.linalg, name)
        if name == "solve":
            out = f(x, b)
        else:
            out = f(x)
        leaves = [o for o in (out if isinstance(out, tuple) else (out,))]
        return sum(lib.sum(lib.real(o) ** 2) for o in leaves if np.iscomplexobj(o) or np.asarray(tg.value(o)).dtype.kind == "f")

    g_np = tg.grad(lambda x: use(np, x))(a)
    g_tnp = tg.grad(lambda x: use(tnp, x))(a)
    np.testing.assert_allclose(g_np, g_tnp, rtol=1e-12)


def test_det_gradient_is_finite_at_singular_matrices() -> None:
    for rank in (0, 1, 2):
        a = rng.standard_normal((3, rank)) @ rng.standard_normal((rank, 3))
        g = tg.grad(tnp.linalg.det)(a)
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, _adjugate_by_cofactors(a).T, atol=1e-12)
    a = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 3))
    tg.check_grads(tnp.linalg.det, [a], order=1)


def test_det_gradient_near_singular_matches_the_adjugate() -> None:
    a = rng.standard_normal((4, 3)) @ rng.standard_normal((3, 4))
    a = a + 1e-13 * np.eye(4)
    g = tg.grad(tnp.linalg.det)(a)
    np.testing.assert_allclose(g, _adjugate_by_cofactors(a).T, rtol=1e-6, atol=1e-9)


def test_slogdet_near_singular_stays_finite() -> None:
    a = rng.standard_normal((3, 3))
    a[2] = a[0] + 1e-10 * a[1]
    sign, logdet = tnp.linalg.slogdet(a)
    assert type(sign) is np.ndarray or np.isscalar(sign)
    g = tg.grad(lambda x: tnp.linalg.slogdet(x)[1])(a)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-6)


def test_slogdet_sign_is_a_plain_array() -> None:
    def f(x):  # noqa: ANN001
        sign, logdet = tnp.linalg.slogdet(x)
        assert type(sign) is not tg.core.traced.Traced
        return logdet * sign

    a = -np.eye(3) * 2
    np.testing.assert_allclose(tg.grad(f)(a), -np.linalg.inv(a).T)


def test_eigh_with_repeated_eigenvalues_gives_finite_eigenvalue_gradients() -> None:
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    a = q @ np.diag([1.0, 1.0, 1.0, 3.0]) @ q.T
    a = (a + a.T) / 2
    g = tg.grad(lambda x: tnp.sum(tnp.linalg.eigh(x)[0] ** 2))(a)  # ||A||_F^2
    np.testing.assert_allclose(g, 2 * a, atol=1e-10)
    # exact ties: 1/gap is 0, not inf, so the unused eigenvector cotangent adds no NaN
    g = tg.grad(lambda x: tnp.sum(tnp.linalg.eigh(x)[0] ** 3))(np.eye(3))
    np.testing.assert_array_equal(g, 3 * np.eye(3))


def test_svd_values_of_repeated_singular_values() -> None:
    g = tg.grad(lambda x: tnp.sum(tnp.linalg.svd(x, compute_uv=False)))(np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    g = tg.grad(lambda x: tnp.sum(tnp.linalg.svd(x)[1]))(2 * np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)


def test_nuclear_and_spectral_norms() -> None:
    a = rng.standard_normal((4, 3))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.linalg.norm(x, "nuc"))(a), u @ vh, atol=1e-10)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.linalg.norm(x, 2))(a), np.outer(u[:, 0], vh[0]), atol=1e-10)


def test_norm_gradient_at_zero_is_zero_not_nan() -> None:
    for f in (lambda x: tnp.linalg.norm(x), lambda x: tnp.linalg.norm(x, "fro"), lambda x: tnp.sum(tnp.linalg.norm(x, axis=0))):
        g = tg.grad(f)(np.zeros((2, 3)))
        np.testing.assert_array_equal(g, np.zeros((2, 3)))


def test_norm_errors_match_numpy() -> None:
    x = rng.standard_normal((2, 3))
    with pytest.raises(ValueError):
        tg.grad(lambda v: tnp.linalg.norm(v, "fro", axis=0))(x)
    with pytest.raises(ValueError):
        tg.grad(lambda v: tnp.linalg.norm(v, 3))(x)
    with pytest.raises(ValueError):
        tg.grad(lambda v: tnp.sum(tnp.linalg.norm(v, axis=(0, 0))))(x)


def test_svd_full_matrices_of_a_rectangular_matrix_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        tg.grad(lambda x: tnp.sum(tnp.linalg.svd(x)[0]))(rng.standard_normal((3, 2)))
    # the values of a plain call are NumPy's, full matrices included
    assert tnp.linalg.svd(np.ones((3, 2)))[0].shape == (3, 3)


def test_qr_complete_of_a_tall_matrix_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="complete"):
        tg.grad(lambda x: tnp.sum(tnp.linalg.qr(x, mode="complete")[0]))(rng.standard_normal((3, 2)))


def test_singular_inverse_raises_numpys_error() -> None:
    with pytest.raises(np.linalg.LinAlgError):
        tg.grad(lambda x: tnp.sum(tnp.linalg.inv(x)))(np.ones((2, 2)))


def test_solve_backward_solves_once_when_both_arguments_are_differentiated(monkeypatch: pytest.MonkeyPatch) -> None:
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    calls = []
    real_solve = np.linalg.solve
    monkeypatch.setattr(np.linalg, "solve", lambda *args: calls.append(1) or real_solve(*args))
    ga, gb = tg.grad(lambda x, y: tnp.sum(tnp.linalg.solve(x, y)), argnums=(0, 1))(a, b)
    assert len(calls) == 2  # the forward solve and one backward solve
    x = real_solve(a, b)
    want_b = real_solve(a.T, np.ones_like(b))
    np.testing.assert_allclose(gb, want_b)
    np.testing.assert_allclose(ga, -want_b @ x.T)
    calls.clear()
    tg.grad(lambda x: tnp.sum(tnp.linalg.solve(x, b)))(a)
    tg.grad(lambda y: tnp.sum(tnp.linalg.solve(a, y)))(b)
    assert len(calls) == 4


def test_batched_inputs_broadcast_like_numpy() -> None:
    a = rng.standard_normal((2, 1, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((4, 3, 2))
    out = tnp.linalg.solve(a, b)
    assert out.shape == np.linalg.solve(a, b).shape == (2, 4, 3, 2)
    tg.check_grads(tnp.linalg.solve, [a, b], order=1)
    tg.check_grads(lambda x: tnp.linalg.slogdet(x)[1], [a], order=2)


def test_third_order_through_inv() -> None:
    # d^3/dt^3 tr(inv(A + t I)) at t = 0 is -6 tr(A^-4)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    f = lambda t: tnp.trace(tnp.linalg.inv(a + t * np.eye(3)))  # noqa: E731
    got = tg.grad(tg.grad(tg.grad(f)))(0.0)
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(got, -6 * np.trace(np.linalg.matrix_power(ainv, 4)), rtol=1e-10)


def test_plain_arrays_take_numpys_path() -> None:
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    for name in ("inv", "det", "pinv"):
        np.testing.assert_array_equal(getattr(tnp.linalg, name)(a), getattr(np.linalg, name)(a))
    assert isinstance(tnp.linalg.slogdet(a), type(np.linalg.slogdet(a)))
    assert tnp.linalg.LinAlgError is np.linalg.LinAlgError


def test_eigvalsh_and_fallthrough_names() -> None:
    a = rng.standard_normal((3, 3))
    a = a + a.T
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(tnp.linalg.eigvalsh(x) ** 2))(a), 2 * a, atol=1e-12)
    np.testing.assert_array_equal(tnp.linalg.matrix_power(a, 2), np.linalg.matrix_power(a, 2))
    np.testing.assert_array_equal(tnp.fft.fftfreq(4), np.fft.fftfreq(4))
    with pytest.raises(TypeError, match="no differentiation rule"):
        tg.grad(lambda x: tnp.sum(tnp.linalg.matrix_power(x, 2)))(a)
