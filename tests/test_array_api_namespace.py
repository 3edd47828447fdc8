"""Traced values implement ``__array_namespace__``: code written against the
Python array API standard (``xp = x.__array_namespace__()``, then only
``xp.*``) differentiates under grad, jvp, vmap, jit and their compositions.
Values are checked against NumPy (and array-api-strict, when installed),
gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.numpy.array_api as tgxp


# --- array-API programs (written only with xp.*) ------------------------------------------------
def softmax(x):
    xp = x.__array_namespace__()
    z = x - xp.max(x, axis=-1, keepdims=True)
    ez = xp.exp(z)
    return ez / xp.sum(ez, axis=-1, keepdims=True)


def logsumexp(x):
    xp = x.__array_namespace__()
    m = xp.max(x, axis=-1, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - m), axis=-1)) + xp.squeeze(m, axis=-1)


def linear_model_loss(W, b, X, y):
    """Cross-entropy of a linear classifier, as scikit-learn's array-API paths write it."""
    xp = W.__array_namespace__()
    X = xp.asarray(X, dtype=W.dtype)
    logits = xp.matmul(X, W) + b
    lse = logsumexp(logits)
    onehot = xp.astype(xp.expand_dims(xp.asarray(y), axis=1) == xp.arange(W.shape[1]), W.dtype)
    return xp.mean(lse - xp.sum(onehot * logits, axis=1)) + 1e-2 * xp.linalg.vector_norm(W) ** 2


def standardize_and_project(x):
    """concat, permute_dims, reshape, std(correction=), linalg.*, vecdot, sort, where, cumulative_sum."""
    xp = x.__array_namespace__()
    m = xp.reshape(x, (2, 3))
    z = (m - xp.mean(m, axis=0)) / (xp.std(m, axis=0, correction=1) + 1.0)
    zz = xp.concat([z, xp.flip(z, axis=0)], axis=0) * xp.linspace(0.5, 2.0, 4)[:, None]  # (4, 3)
    g = xp.matmul(xp.permute_dims(zz, (1, 0)), zz) + xp.eye(3, dtype=x.dtype)
    g = 0.5 * (g + xp.linalg.matrix_transpose(g))
    sol = xp.linalg.solve(g, xp.ones(3, dtype=x.dtype))
    ch = xp.linalg.cholesky(g)
    t = xp.sum(xp.linalg.diagonal(ch)) + xp.linalg.trace(g) * 1e-2
    s = xp.sort(xp.stack([sol, xp.flip(sol)], axis=0), axis=1, descending=True)
    w = xp.where(s > 0, s, 0.5 * s)
    c = xp.cumulative_sum(xp.reshape(w, (-1,)), include_initial=True)
    return (xp.vecdot(c[1:4], c[4:7]) + t + xp.linalg.det(g) * 1e-3
            + xp.linalg.matrix_norm(zz) + xp.prod(xp.clip(c, min=-2.0, max=2.0))
            + xp.sum(xp.tanh(xp.unstack(zz, axis=1)[2])) + xp.sum(xp.linalg.svdvals(zz)))


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _plain(f):
    """``f`` run on NumPy arrays through this namespace (a plain array has NumPy's own namespace)."""
    def run(*args):
        with tg.Tape() as tape:  # (recorded, then read: the values are those of the plain run)
            out = f(*[tape.watch(a) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args])
        return np.asarray(tg.value(out))
    return run


def test_the_namespace_of_a_traced_value():
    with tg.Tape() as tape:
        x = tape.watch(np.ones(3))
        assert x.__array_namespace__() is tgxp
        assert x.__array_namespace__(api_version="2023.12") is tgxp
        assert x.__array_namespace__(api_version="2022.12") is tgxp
        with pytest.raises(ValueError, match="api_version"):
            x.__array_namespace__(api_version="1999.01")
        assert x.device == "cpu"
        assert x.to_device("cpu") is x
        assert tgxp.__array_api_version__ == "2023.12"
    seen = []
    tg.vmap(lambda r: seen.append(r.__array_namespace__()) or r)(np.ones((2, 3)))
    tg.jit(lambda r: seen.append(r.__array_namespace__()) or r)(np.ones(3))
    assert seen == [tgxp, tgxp]


def test_softmax_and_logsumexp_under_every_transform():
    x = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 1.0]])
    want = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_plain(softmax)(x), want)
    f = lambda x: logsumexp(x)[0]  # noqa: E731
    np.testing.assert_allclose(tg.grad(f)(x), np.vstack([want[0], np.zeros(3)]), atol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), np.vstack([want[0], np.zeros(3)]), atol=1e-12)
    np.testing.assert_allclose(tg.vmap(tg.grad(logsumexp))(x), want, atol=1e-12)
    _, t = tg.jvp(softmax, (x[0],), (np.ones(3),))
    np.testing.assert_allclose(t, np.zeros(3), atol=1e-12)  # (softmax is shift-invariant)
    h = tg.hessian(logsumexp)(x[0])
    np.testing.assert_allclose(h, np.diag(want[0]) - np.outer(want[0], want[0]), atol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.grad(lambda s: logsumexp(s * x[0])))(1.0),
                               _fd_grad(lambda s: tg.grad(lambda u: logsumexp(u * x[0]))(float(s)), np.array(1.0)),
                               rtol=1e-6)


def test_a_linear_model_written_for_the_array_api():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 4)), rng.integers(0, 3, 8)
    W, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    gW, gb = tg.grad(linear_model_loss, argnums=(0, 1))(W, b, X, y)
    np.testing.assert_allclose(gW, _fd_grad(lambda w: _plain(linear_model_loss)(w, b, X, y), W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, _fd_grad(lambda c: _plain(linear_model_loss)(W, c, X, y), b), rtol=1e-6, atol=1e-8)
    jW, jb = tg.jit(tg.grad(linear_model_loss, argnums=(0, 1)))(W, b, X, y)
    np.testing.assert_allclose(jW, gW, rtol=1e-12)
    np.testing.assert_allclose(jb, gb, rtol=1e-12)
    # per-example gradients: vmap over the examples of a batch of one
    per = tg.vmap(lambda xi, yi: tg.grad(linear_model_loss)(W, b, xi[None], yi[None]))(X, y)
    for i in range(3):
        np.testing.assert_allclose(per[i], tg.grad(linear_model_loss)(W, b, X[i:i + 1], y[i:i + 1]), rtol=1e-12)
    # float32 stays float32
    g32 = tg.grad(linear_model_loss)(W.astype(np.float32), b.astype(np.float32), X, y)
    assert g32.dtype == np.float32


def test_manipulation_and_linalg_code_differentiates():
    x = np.array([0.3, -1.2, 0.8, 2.0, 0.1, -0.4])
    f = standardize_and_project
    np.testing.assert_allclose(tg.grad(f)(x), _fd_grad(_plain(f), x), rtol=1e-5, atol=1e-7)
    v = np.linspace(-1.0, 2.0, 6) ** 2
    _, t = tg.jvp(f, (x,), (v,))
    np.testing.assert_allclose(t, _fd_grad(_plain(f), x) @ v, rtol=1e-5)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), tg.grad(f)(x), rtol=1e-10)
    xs = np.stack([x, x[::-1], x * 0.5])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), np.stack([tg.grad(f)(r) for r in xs]), rtol=1e-10)


def test_reductions_return_arrays_and_follow_the_standard_signatures():
    x = np.arange(6.0).reshape(2, 3)
    s = tgxp.sum(x)
    assert isinstance(s, np.ndarray) and s.shape == ()
    assert tgxp.std(x, correction=1) == pytest.approx(np.std(x, ddof=1))
    assert tgxp.var(x, axis=0, keepdims=True).shape == (1, 3)
    np.testing.assert_array_equal(tgxp.argsort(np.array([1.0, 3.0, 3.0, 2.0]), descending=True), [1, 2, 3, 0])
    np.testing.assert_array_equal(tgxp.sort(np.array([1.0, 3.0, 2.0]), descending=True), [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(tgxp.cumulative_sum(np.ones(3), include_initial=True), [0, 1, 2, 3])
    v = tgxp.unique_all(np.array([[2.0, 1.0], [2.0, 3.0]]))
    np.testing.assert_array_equal(v.values, [1.0, 2.0, 3.0])
    assert v.inverse_indices.shape == (2, 2)
    np.testing.assert_array_equal(v.counts, [1, 2, 1])
    with pytest.raises(TypeError):
        tgxp.sum(x, 0)  # axis is keyword-only
    assert tgxp.isdtype(tgxp.float32, "real floating") and not tgxp.isdtype(tgxp.int8, "real floating")
    assert tgxp.isdtype(tgxp.int8, ("bool", "signed integer"))
    assert tgxp.result_type(tgxp.float32, 1.0) == tgxp.float32
    assert tgxp.finfo(tgxp.float32).eps == np.finfo(np.float32).eps
    info = tgxp.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.default_dtypes()["real floating"] == tgxp.float64
    with pytest.raises(ValueError, match="device"):
        tgxp.zeros(3, device="gpu")
    a = tgxp.astype(np.ones(3, np.float32), tgxp.float32, copy=False)
    assert a.dtype == np.float32


def test_fft_and_linalg_extensions():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(8)
    np.testing.assert_allclose(tgxp.fft.hfft(np.fft.rfft(x)), np.fft.hfft(np.fft.rfft(x)))
    np.testing.assert_allclose(tgxp.fft.ihfft(x), np.fft.ihfft(x))
    np.testing.assert_allclose(tgxp.fft.rfft(x, norm="ortho"), np.fft.rfft(x, norm="ortho"))
    f = lambda x: tgxp.sum(tgxp.abs(tgxp.fft.rfft(x)) ** 2)  # noqa: E731  (Parseval: 2-ish * x)
    np.testing.assert_allclose(tg.grad(f)(x), _fd_grad(lambda u: float(f(u)), x), rtol=1e-6)
    a = rng.standard_normal((3, 3))
    np.testing.assert_allclose(tgxp.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, 3), rtol=1e-12)
    np.testing.assert_allclose(tgxp.linalg.matrix_power(a, -2), np.linalg.matrix_power(a, -2), rtol=1e-10)
    np.testing.assert_allclose(tgxp.linalg.matrix_power(a, 0), np.eye(3))
    g = tg.grad(lambda a: tgxp.sum(tgxp.linalg.matrix_power(a, 3)))(a)
    np.testing.assert_allclose(g, _fd_grad(lambda u: np.sum(np.linalg.matrix_power(u, 3)), a), rtol=1e-6)
    for ord_ in (1, 2, np.inf, -np.inf, 3):
        np.testing.assert_allclose(tgxp.linalg.vector_norm(a, axis=(0, 1), ord=ord_),
                                   np.linalg.norm(a.ravel(), ord_))
    np.testing.assert_allclose(tgxp.linalg.vector_norm(a, axis=1, keepdims=True),
                               np.linalg.norm(a, axis=1, keepdims=True))
    assert tg.grad(lambda v: tgxp.linalg.vector_norm(v))(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert tgxp.linalg.matrix_rank(np.ones((3, 3))) == 1
    np.testing.assert_allclose(tgxp.vecdot(np.array([1j, 2.0]), np.array([1j, 1.0])), 3.0)


def test_operators_and_methods_the_standard_asks_of_arrays():
    f = lambda x: x.mT @ x + (x ** 2).T  # noqa: E731
    x = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x)))(x), _fd_grad(lambda u: np.sum(f(u)), x), rtol=1e-6)
    xs = np.arange(6).reshape(2, 3)
    got = tg.vmap(lambda r: (r << 1) + (r >> 1))(xs)
    np.testing.assert_array_equal(got, (xs << 1) + (xs >> 1))


# --- cross-checks with the reference implementation ---------------------------------------------
def _strict():
    strict = pytest.importorskip("array_api_strict")
    strict.set_array_api_strict_flags(api_version="2023.12")
    return strict


# array-api-strict's own helpers, typing names, and eig/eigvals (not in the 2023.12 standard)
NOT_STANDARD = {"Array", "Device", "ArrayAPIStrictFlags", "get_array_api_strict_flags",
                "set_array_api_strict_flags", "reset_array_api_strict_flags", "ModuleType", "DType",
                "Literal", "NamedTuple", "Sequence", "np", "numpy", "partial", "requires_api_version",
                "requires_extension", "normalize_axis_tuple", "EigResult", "eig", "eigvals",
                "ALL_DEVICES", "device_supports_dtype"}


def test_every_name_of_the_2023_12_standard_is_here():
    strict = _strict()
    for ns, ours in ((strict, tgxp), (strict.linalg, tgxp.linalg), (strict.fft, tgxp.fft)):
        names = {n for n in getattr(ns, "__all__", dir(ns)) if not n.startswith("_")} - NOT_STANDARD
        missing = sorted(n for n in names if not hasattr(ours, n))
        assert not missing, f"{ns.__name__}: {missing}"


def test_values_agree_with_array_api_strict():
    strict = _strict()
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)
    W, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    want = linear_model_loss(strict.asarray(W), strict.asarray(b), strict.asarray(X), strict.asarray(y))
    np.testing.assert_allclose(_plain(linear_model_loss)(W, b, X, y), float(want), rtol=1e-12)
    x = rng.standard_normal(6)
    want = standardize_and_project(strict.asarray(x))
    np.testing.assert_allclose(_plain(standardize_and_project)(x), float(want), rtol=1e-10)


def test_array_api_compat_finds_the_namespace():
    compat = pytest.importorskip("array_api_compat")
    with tg.Tape() as tape:
        x = tape.watch(np.ones(2))
        assert compat.array_namespace(x) is tgxp
        assert compat.array_namespace(x, 1.0) is tgxp
