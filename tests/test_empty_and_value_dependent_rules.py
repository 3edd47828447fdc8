"""Products and scans over size-0 axes, rules that look at values under vmap,
and det's second derivative at singular matrices: each transform agrees
with NumPy (shapes, values) and with closed forms or per-example loops."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


# --- size-0 axes ------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((1, 2, 0), (0, 0)), ((3, 0, 2), (2, 4)), ((0, 2), (2, 3)),
                                   ((2, 0), (0, 3)), ((4, 2, 3), (3, 0))])
def test_matmul_of_size0_stacks_has_numpys_shape(sa, sb):
    a, b = np.ones(sa), np.ones(sb)
    want = np.matmul(a, b)
    got = tnp.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    g = tg.grad(lambda x: tnp.sum(tnp.matmul(x, b)))(a)
    assert g.shape == a.shape


def test_tensordot_over_a_size0_axis_under_grad_and_jvp():
    a, b = np.ones((2, 0)), np.arange(3.0).reshape(1, 3)[:0]  # (2, 0) . (0, 3) -> zeros (2, 3)
    np.testing.assert_array_equal(tnp.tensordot(a, b, axes=1), np.tensordot(a, b, axes=1))
    g = tg.grad(lambda x: tnp.sum(tnp.tensordot(x, b, axes=1)))(a)
    assert g.shape == (2, 0)
    y, t = tg.jvp(lambda x: tnp.tensordot(x, b, axes=1), (a,), (a,))
    np.testing.assert_array_equal(y, np.zeros((2, 3)))
    np.testing.assert_array_equal(t, np.zeros((2, 3)))
    # a size-0 free axis: the gradient of the other operand is zeros of its shape
    c = np.ones((0, 3))
    gb = tg.grad(lambda y: tnp.sum(tnp.tensordot(c, y, axes=([1], [0]))))(np.ones((3, 4)))
    np.testing.assert_array_equal(gb, np.zeros((3, 4)))


def test_inner_with_size0_axes_under_vmap():
    xs = np.ones((4, 2, 0))
    got = tg.vmap(lambda x: tnp.inner(x, np.ones((3, 0))))(xs)
    np.testing.assert_array_equal(got, np.stack([np.inner(x, np.ones((3, 0))) for x in xs]))
    np.testing.assert_array_equal(tg.vmap(lambda x: tnp.inner(x, x))(np.ones((4, 0))), np.zeros(4))


def test_jit_grad_of_cumprod_along_a_size0_axis():
    f = lambda x: tnp.sum(tnp.cumprod(x, axis=1))  # noqa: E731
    x = np.ones((2, 0))
    assert tg.jit(tg.grad(f))(x).shape == (2, 0)
    assert tg.grad(f)(x).shape == (2, 0)
    assert tg.jit(tg.grad(lambda x: tnp.sum(tnp.cumprod(x))))(x).shape == (2, 0)


def test_jit_grad_of_prod_over_axis0_of_a_1_by_0_array():
    f = lambda x: tnp.sum(tnp.prod(x, axis=0))  # noqa: E731
    assert tg.jit(tg.grad(f))(np.ones((1, 0))).shape == (1, 0)
    assert tg.jit(tg.grad(lambda x: tnp.sum(tnp.prod(x, axis=1))))(np.ones((0, 3))).shape == (0, 3)


def test_vmap_grad_through_sort_of_a_product_with_zero_row_matrix():
    C = np.ones((0, 3))
    f = lambda x: tnp.sum(tnp.sort(x @ C.T)) + tnp.sum(x * x)  # noqa: E731
    xs = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(xs), 2 * xs)
    np.testing.assert_allclose(tg.jit(tg.vmap(tg.grad(f)))(xs), 2 * xs)


def test_reshape_with_minus_one_of_empty_examples_under_vmap():
    xs = np.ones((3, 2, 0))
    assert tg.vmap(lambda x: tnp.reshape(x, (-1, 2)))(xs).shape == (3, 0, 2)
    assert tg.vmap(tnp.ravel)(xs).shape == (3, 0)
    assert tg.vmap(lambda x: tnp.cumsum(x))(xs).shape == (3, 0)


# --- rules that branch on values, under vmap --------------------------------------------------
def _prod_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i, j in itertools.product(range(n), repeat=2):
        if i != j:
            h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


XS = np.array([[1.0, 2.0, 3.0], [0.0, 2.0, 5.0], [0.0, 0.0, 4.0]])  # no zero, one zero, two zeros


def test_vmap_hessian_of_prod():
    got = tg.vmap(tg.hessian(tnp.prod))(XS)
    np.testing.assert_allclose(got, np.stack([_prod_hessian(x) for x in XS]))


def test_vmap_jacfwd_of_prod():
    got = tg.vmap(tg.jacfwd(tnp.prod))(XS)
    want = np.stack([[np.prod(np.delete(x, i)) for i in range(3)] for x in XS])
    np.testing.assert_allclose(got, want)


def test_vmap_hvp_of_prod():
    vs = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0], [0.5, -1.0, 3.0]])
    val, hv = tg.vmap(lambda x, v: tg.hvp(tnp.prod, (x,), (v,)))(XS, vs)
    np.testing.assert_allclose(val, np.prod(XS, axis=1))
    np.testing.assert_allclose(hv, np.stack([_prod_hessian(x) @ v for x, v in zip(XS, vs)]))


def test_vmap_jvp_of_prod_over_an_axis():
    xs = np.array([[[1.0, 0.0], [2.0, 3.0]], [[4.0, 5.0], [0.0, 0.0]]])
    ts = np.ones_like(xs)
    _, t = tg.vmap(lambda x, t: tg.jvp(lambda y: tnp.prod(y, axis=0), (x,), (t,)))(xs, ts)
    want = np.stack([tg.jvp(lambda y: tnp.prod(y, axis=0), (x,), (u,))[1] for x, u in zip(xs, ts)])
    np.testing.assert_allclose(t, want)


@pytest.mark.parametrize("fn", [lambda x: tnp.full_like(x, 2.0), lambda x: np.full_like(x, 2.0)])
def test_vmap_of_full_like(fn):
    xs = np.ones((2, 3), dtype=np.float32)
    got = tg.vmap(lambda x: fn(x) * x)(xs)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full((2, 3), 2.0, np.float32))
    np.testing.assert_array_equal(tg.jit(fn)(xs), np.full_like(xs, 2.0))
    np.testing.assert_array_equal(tg.grad(lambda x: tnp.sum(fn(x) * x))(xs[0]), np.full(3, 2.0, np.float32))


def test_full_like_with_a_traced_fill_value():
    assert tg.grad(lambda c: tnp.sum(tnp.full_like(np.ones(3), c)))(2.0) == 3.0
    got = tg.vmap(lambda c: tnp.full_like(np.ones(2), c))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got, [[1.0, 1.0], [2.0, 2.0]])


# --- det's second derivative at singular matrices ---------------------------------------------
def _det_hessian_fd(a, h=1e-5):
    n = a.size
    H = np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        gp = tg.grad(tnp.linalg.det)(a + e.reshape(a.shape)).ravel()
        gm = tg.grad(tnp.linalg.det)(a - e.reshape(a.shape)).ravel()
        H[:, k] = (gp - gm) / (2 * h)
    return H


SINGULAR = [np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)),
            np.outer([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]),  # rank 1
            np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])]  # rank 2


@pytest.mark.parametrize("a", SINGULAR, ids=["2x2-rank1", "3x3-zero", "3x3-rank1", "3x3-rank2"])
def test_hvp_and_hessian_of_det_at_singular_matrices(a):
    want = _det_hessian_fd(a)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(a.shape)
    val, hv = tg.hvp(tnp.linalg.det, (a,), (v,))
    assert val == pytest.approx(np.linalg.det(a), abs=1e-12)
    np.testing.assert_allclose(hv.ravel(), want @ v.ravel(), atol=1e-6)
    np.testing.assert_allclose(tg.hessian(tnp.linalg.det)(a).reshape(want.shape), want, atol=1e-6)
    np.testing.assert_allclose(tg.jit(tg.hessian(tnp.linalg.det))(a).reshape(want.shape), want, atol=1e-6)


def test_vmap_hessian_of_det_mixes_singular_and_invertible():
    a = np.stack([SINGULAR[3], np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])])
    got = tg.vmap(tg.hessian(tnp.linalg.det))(a)
    for gi, ai in zip(got, a):
        np.testing.assert_allclose(gi.reshape(9, 9), _det_hessian_fd(ai), atol=1e-6)


def test_hessian_of_det_at_invertible_matrices_still_differentiates_again():
    # the third derivative of det of a 2x2 matrix is 0 (det is quadratic)
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    third = tg.jacfwd(tg.hessian(tnp.linalg.det))(a)
    np.testing.assert_allclose(third, np.zeros((2, 2) * 3), atol=1e-12)


# --- numpy.matrix arguments --------------------------------------------------------------------
M = np.matrix([[1.0, 2.0], [3.0, 4.0]])

MATRIX_CALLS = {
    "grad": lambda: tg.grad(lambda x: tnp.sum(x * x))(M),
    "value_and_grad": lambda: tg.value_and_grad(lambda x: tnp.sum(x * x))(M),
    "vjp": lambda: tg.vjp(lambda x: x * x, M),
    "jvp": lambda: tg.jvp(lambda x: x * x, (M,), (M,)),
    "jacfwd": lambda: tg.jacfwd(lambda x: x * x)(M),
    "jacrev": lambda: tg.jacrev(lambda x: x * x)(M),
    "hessian": lambda: tg.hessian(lambda x: tnp.sum(x * x))(M),
    "hvp": lambda: tg.hvp(lambda x: tnp.sum(x * x), (M,), (M,)),
    "vmap": lambda: tg.vmap(lambda x: x * x)(M),
}


@pytest.mark.parametrize("name", sorted(MATRIX_CALLS))
def test_matrix_arguments_are_refused_with_the_conversion(name):
    with pytest.raises(TypeError, match=r"numpy\.matrix.*np\.asarray\(m\)"):
        MATRIX_CALLS[name]()


def test_jit_of_a_matrix_runs_the_function_as_numpy_does():
    got = tg.jit(lambda x: x * x)(M)
    assert type(got) is np.matrix
    np.testing.assert_array_equal(got, M * M)  # the matrix product, as NumPy computes it


def test_matrix_tangents_and_cotangents_are_read_as_arrays():
    a = np.asarray(M)
    _, vjp_fn = tg.vjp(lambda x: x * x, a)
    (g,) = vjp_fn(M)
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, 2 * a * a)
    _, t = tg.jvp(lambda x: x * x, (a,), (M,))
    assert type(t) is np.ndarray
    np.testing.assert_array_equal(t, 2 * a * a)
