"""tapegrad.scipy.stats: values against scipy.stats, derivatives against finite
differences (in the value and the parameters), vmap, jit and float32."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import tapegrad as tg

ss = pytest.importorskip("scipy.stats")
import tapegrad.scipy.stats as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
X = np.linspace(-2.0, 5.0, 15)
FUNS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")

# (name, shape-parameter sets) of the loc/scale families; each set is (shape..., loc, scale)
CONTINUOUS = [
    ("norm", [(), (0.3, 1.7), (-1.0, 0.5)]),
    ("t", [(3.5,), (3.5, 0.3, 1.7), (1.0, -1.0, 0.5), (30.0, 0.0, 2.0)]),
    ("gamma", [(2.5,), (2.5, -0.3, 1.7), (0.7, -1.0, 0.5), (1.0, 0.0, 2.0)]),
    ("chi2", [(3.0,), (3.0, -0.3, 1.7), (1.0, -1.0, 0.5), (7.5, 0.0, 2.0)]),
    ("beta", [(2.5, 1.5), (2.5, 1.5, -1.0, 4.0), (0.7, 3.0, -2.0, 8.0), (1.0, 1.0, 0.0, 2.0)]),
]


def _close(got: Any, want: Any, rtol: float = 1e-10) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


@pytest.mark.parametrize("name, params", CONTINUOUS)
def test_continuous_values_match_scipy(name: str, params: list[tuple[float, ...]]) -> None:
    for p in params:
        for fn in FUNS:
            _close(getattr(getattr(st, name), fn)(X, *p), getattr(getattr(ss, name), fn)(X, *p))


def test_keywords_and_broadcasting_match_scipy() -> None:
    x = X[:, None]
    loc = np.array([0.0, 0.5, -1.0])
    _close(st.norm.logpdf(x, loc=loc, scale=2.0), ss.norm.logpdf(x, loc=loc, scale=2.0))
    _close(st.t.cdf(x, df=np.array([1.0, 2.5, 9.0])), ss.t.cdf(x, df=np.array([1.0, 2.5, 9.0])))
    _close(st.gamma.logpdf(x, a=loc + 2.0, scale=0.5), ss.gamma.logpdf(x, a=loc + 2.0, scale=0.5))
    _close(st.beta.cdf(0.3, 2.0, b=np.array([1.0, 2.0])), ss.beta.cdf(0.3, 2.0, b=np.array([1.0, 2.0])))
    _close(st.chi2.logcdf(2.0, 3.0), ss.chi2.logcdf(2.0, 3.0))


def test_invalid_parameters_give_nan() -> None:
    assert np.isnan(st.norm.logpdf(0.0, scale=-1.0))
    assert np.isnan(st.gamma.cdf(1.0, -1.0))
    assert np.isnan(st.beta.logpdf(0.5, 1.0, 0.0))
    with pytest.raises(TypeError):
        st.t.logpdf(0.0)  # df is required


def test_poisson_values_match_scipy() -> None:
    k = np.arange(-1, 12)
    for mu, loc in ((2.3, 0), (0.4, 0), (7.0, 2)):
        for fn in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
            _close(getattr(st.poisson, fn)(k, mu, loc), getattr(ss.poisson, fn)(k, mu, loc))
    _close(st.poisson.logpmf(2.5, 1.0), ss.poisson.logpmf(2.5, 1.0))  # not an integer: -inf
    _close(st.poisson.cdf(2.5, 1.0), ss.poisson.cdf(2.5, 1.0))
    _close(st.poisson.pmf(3, np.array([0.5, 1.0, 4.0])), ss.poisson.pmf(3, np.array([0.5, 1.0, 4.0])))


ALPHA = np.array([1.5, 2.0, 0.7])
XD = np.array([[0.2, 0.3, 0.05], [0.5, 0.1, 0.9], [0.3, 0.6, 0.05]])  # the components on axis 0


def test_dirichlet_values_match_scipy() -> None:
    for x in (XD, XD[:, 0], XD[:2], XD[:2, 1]):
        _close(st.dirichlet.logpdf(x, ALPHA), ss.dirichlet.logpdf(x, ALPHA))
        _close(st.dirichlet.pdf(x, ALPHA), ss.dirichlet.pdf(x, ALPHA))
    with pytest.raises(ValueError):
        st.dirichlet.logpdf(np.array([0.5, 0.6, 0.2]), ALPHA)  # off the simplex
    with pytest.raises(ValueError):
        st.dirichlet.logpdf(XD[:, 0], -ALPHA)


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
MEAN = np.array([0.1, -0.2, 0.3])
XM = np.random.default_rng(0).standard_normal((4, 3))


def test_multivariate_normal_values_match_scipy() -> None:
    mvn, smvn = st.multivariate_normal, ss.multivariate_normal
    for args in ((XM, MEAN, COV), (XM[0], MEAN, COV), (XM, None, COV), (XM, MEAN, np.array([1.0, 2.0, 3.0])),
                 (XM, MEAN, 2.5), (XM[:, 0], 0.5, 2.0), (XM[0, 0], None, 1), (XM.reshape(2, 2, 3), MEAN, COV)):
        _close(mvn.logpdf(*args), smvn.logpdf(*args))
        _close(mvn.pdf(*args), smvn.pdf(*args))
    sing = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    xs = np.array([[0.5, 0.5, 1.0], [0.5, 0.4, 1.0], [-1.0, -1.0, 0.0]])
    got, want = mvn.logpdf(xs, None, sing, allow_singular=True), smvn.logpdf(xs, None, sing, allow_singular=True)
    assert np.isneginf(got[1]) and np.isneginf(want[1])
    _close(got[[0, 2]], want[[0, 2]])
    with pytest.raises(np.linalg.LinAlgError):
        mvn.logpdf(xs, None, sing)
    with pytest.raises(ValueError):
        mvn.logpdf(xs, None, -COV)


# --- derivatives --------------------------------------------------------------------------------

GRAD_X = np.array([-0.7, 0.4, 1.3, 2.2])


@pytest.mark.parametrize("fn", ["logpdf", "pdf"])
@pytest.mark.parametrize("name, shape", [("norm", ()), ("t", (3.5,)), ("gamma", (2.5,)), ("chi2", (3.0,)),
                                         ("beta", (2.5, 1.5))])
def test_density_gradients_in_value_and_parameters(name: str, shape: tuple[float, ...], fn: str) -> None:
    f = getattr(getattr(st, name), fn)
    loc, scale = (-1.0, 4.0) if name == "beta" else (-1.5, 1.7)
    args = [GRAD_X, *(np.array(s) for s in shape), np.array(loc), np.array(scale)]
    tg.check_grads(f, args, modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("fn", ["cdf", "logcdf", "sf", "logsf"])
@pytest.mark.parametrize("name, shape", [("norm", ()), ("t", (3.5,)), ("gamma", (2.5,)), ("chi2", (3.0,)),
                                         ("beta", (2.5, 1.5))])
def test_cdf_gradients_in_value_loc_scale(name: str, shape: tuple[float, ...], fn: str) -> None:
    f = getattr(getattr(st, name), fn)
    loc, scale = (-1.0, 4.0) if name == "beta" else (-1.5, 1.7)

    def g(x: Any, loc: Any, scale: Any) -> Any:
        return f(x, *shape, loc, scale)

    tg.check_grads(g, [GRAD_X, np.array(loc), np.array(scale)], modes=("rev", "fwd"), order=2)


def test_norm_logcdf_gradient_is_stable_in_the_tail() -> None:
    x = np.array([-40.0, -10.0, 0.0, 10.0])
    g = tg.elementwise_grad(st.norm.logcdf)(x)
    want = np.exp(ss.norm.logpdf(x) - ss.norm.logcdf(x))
    np.testing.assert_allclose(g, want, rtol=1e-8)


def test_poisson_gradients_in_mu() -> None:
    k = np.array([0.0, 1.0, 3.0, 6.0])
    for fn in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
        f = getattr(st.poisson, fn)
        tg.check_grads(lambda mu, f=f: f(k, mu), [np.array([0.5, 2.0, 3.0, 4.5])], modes=("rev", "fwd"), order=2)
    # d/dmu cdf(k, mu) = -pmf(k, mu)
    np.testing.assert_allclose(tg.elementwise_grad(lambda mu: st.poisson.cdf(k, mu))(np.full(4, 2.0)),
                               -ss.poisson.pmf(k, 2.0), rtol=1e-12)


def test_dirichlet_gradients_in_value_and_alpha() -> None:
    # K - 1 components (the last is 1 - sum): finite differences stay on the simplex
    tg.check_grads(st.dirichlet.logpdf, [XD[:2], ALPHA], modes=("rev", "fwd"), order=2)
    tg.check_grads(st.dirichlet.pdf, [XD[:2, 0], ALPHA], modes=("rev", "fwd"), order=2)


def test_multivariate_normal_gradients_in_value_mean_cov() -> None:
    # cov symmetrized: the Cholesky factor (as SciPy's eigh) reads one triangle
    tg.check_grads(lambda x, m, c: st.multivariate_normal.logpdf(x, m, (c + c.T) / 2), [XM, MEAN, COV],
                   modes=("rev", "fwd"), order=2)
    tg.check_grads(lambda x, m, c: st.multivariate_normal.pdf(x, m, (c + c.T) / 2), [XM[0], MEAN, COV],
                   modes=("rev",), order=1)
    tg.check_grads(lambda x, m, d: st.multivariate_normal.logpdf(x, m, d), [XM, MEAN, np.array([1.0, 2.0, 3.0])],
                   modes=("rev", "fwd"), order=2)
    sing = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    xs = np.array([[0.5, 0.5, 1.0], [-1.0, -1.0, 0.3]])
    # in the value, along the support (the mean moves with it)
    tg.check_grads(lambda t: st.multivariate_normal.logpdf(xs + t * np.array([1.0, 1.0, 0.5]), None, sing,
                                                            allow_singular=True), [np.array(0.3)], modes=("rev", "fwd"))


# --- transforms, dtypes ------------------------------------------------------------------------


def test_vmap_over_x_matches_the_broadcast_call() -> None:
    _close(tg.vmap(lambda x: st.t.logpdf(x, 3.5, 0.3, 1.7))(X), ss.t.logpdf(X, 3.5, 0.3, 1.7))
    _close(tg.vmap(lambda x: st.gamma.cdf(x, 2.5, scale=2.0))(X), ss.gamma.cdf(X, 2.5, scale=2.0))
    _close(tg.vmap(lambda x: st.beta.logcdf(x, 2.5, 1.5, -1.0, 4.0))(X), ss.beta.logcdf(X, 2.5, 1.5, -1.0, 4.0))
    _close(tg.vmap(lambda x: st.norm.logcdf(x))(X), ss.norm.logcdf(X))
    _close(tg.vmap(lambda k: st.poisson.logpmf(k, 2.0))(np.arange(6.0)), ss.poisson.logpmf(np.arange(6.0), 2.0))
    _close(tg.vmap(lambda x: st.multivariate_normal.logpdf(x, MEAN, COV))(XM), ss.multivariate_normal.logpdf(XM, MEAN, COV))
    _close(tg.vmap(lambda x: st.dirichlet.logpdf(x, ALPHA), in_axes=1)(XD), ss.dirichlet.logpdf(XD, ALPHA))
    # gradients of the mapped function too
    g = tg.vmap(tg.grad(lambda x: st.chi2.logcdf(x, 3.0)))(X[X > 0])
    np.testing.assert_allclose(g, np.exp(ss.chi2.logpdf(X[X > 0], 3.0) - ss.chi2.logcdf(X[X > 0], 3.0)), rtol=1e-9)


def test_jit() -> None:
    f = tg.jit(lambda x, df, s: st.t.logcdf(x, df, scale=s) + st.norm.logpdf(x, scale=s))
    _close(f(X, 3.5, 1.7), ss.t.logcdf(X, 3.5, scale=1.7) + ss.norm.logpdf(X, scale=1.7))
    _close(f(X + 1, 3.5, 1.7), ss.t.logcdf(X + 1, 3.5, scale=1.7) + ss.norm.logpdf(X + 1, scale=1.7))
    gf = tg.jit(tg.grad(lambda m: st.multivariate_normal.logpdf(XM, m, COV).sum()))
    want = np.linalg.solve(COV, (XM - MEAN).T).sum(axis=1)
    np.testing.assert_allclose(gf(MEAN), want, rtol=1e-10)
    np.testing.assert_allclose(gf(MEAN), want, rtol=1e-10)


@pytest.mark.parametrize("name, shape", [("norm", ()), ("t", (3.5,)), ("gamma", (2.5,)), ("chi2", (3.0,)),
                                         ("beta", (2.5, 1.5))])
def test_float32_stays_float32(name: str, shape: tuple[float, ...]) -> None:
    x = np.linspace(0.1, 0.9, 5, dtype=np.float32)
    p = [np.float32(s) for s in shape]
    for fn in FUNS:
        out = getattr(getattr(st, name), fn)(x, *p)
        assert np.asarray(out).dtype == np.float32, (name, fn, np.asarray(out).dtype)
        np.testing.assert_allclose(out, getattr(getattr(ss, name), fn)(x.astype(np.float64), *shape), rtol=1e-4)
    g = tg.elementwise_grad(lambda v: getattr(st, name).logpdf(v, *p))(x)
    assert g.dtype == np.float32
    c = tg.elementwise_grad(lambda v: getattr(st, name).cdf(v, *p))(x)
    assert c.dtype == np.float32


def test_float32_poisson_dirichlet_mvn() -> None:
    assert np.asarray(st.poisson.logpmf(np.float32(3), np.float32(2.0))).dtype == np.float32
    assert np.asarray(st.dirichlet.logpdf(XD.astype(np.float32), ALPHA.astype(np.float32))).dtype == np.float32
    out = st.multivariate_normal.logpdf(XM.astype(np.float32), MEAN.astype(np.float32), COV.astype(np.float32))
    assert np.asarray(out).dtype == np.float32
    np.testing.assert_allclose(out, ss.multivariate_normal.logpdf(XM, MEAN, COV), rtol=1e-5)


def test_scipy_is_imported_only_when_used() -> None:
    code = ("import sys, tapegrad, tapegrad.scipy, tapegrad.scipy.stats as st; print('scipy' in sys.modules); "
            "st.norm.logpdf(1.0); print('scipy' in sys.modules); st.norm.cdf(1.0); print('scipy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "True"]


def test_vmap_over_parameters() -> None:
    mus = np.array([0.5, 2.0, 4.0])
    _close(tg.vmap(lambda mu: st.poisson.cdf(2.0, mu))(mus), ss.poisson.cdf(2, mus))
    dfs = np.array([1.0, 2.5, 9.0])
    _close(tg.vmap(lambda df: st.t.cdf(1.0, df, scale=2.0))(dfs), ss.t.cdf(1.0, dfs, scale=2.0))
    covs = np.stack([COV, 2 * COV, np.diag([1.0, 2.0, 3.0])])
    _close(tg.vmap(lambda c: st.multivariate_normal.logpdf(XM, MEAN, c))(covs),
           np.stack([ss.multivariate_normal.logpdf(XM, MEAN, c) for c in covs]))
    alphas = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
    _close(tg.vmap(lambda a: st.dirichlet.logpdf(XD[:, 0], a))(alphas),
           np.array([ss.dirichlet.logpdf(XD[:, 0], a) for a in alphas]))


def test_hessians_and_forward_mode() -> None:
    x = np.array([0.5, 1.5, 2.0])
    h = tg.hessian(lambda v: st.gamma.cdf(v, 2.5).sum())(x)
    np.testing.assert_allclose(h, np.diag((ss.gamma.pdf(x + 1e-6, 2.5) - ss.gamma.pdf(x - 1e-6, 2.5)) / 2e-6),
                               rtol=1e-6, atol=1e-12)
    j = tg.jacfwd(lambda mu: st.poisson.cdf(np.arange(3.0), mu))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(j, np.diag(-ss.poisson.pmf(np.arange(3), [1.0, 2.0, 3.0])), rtol=1e-12, atol=0)


def test_outside_the_support_the_gradient_is_zero() -> None:
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_array_equal(tg.elementwise_grad(lambda v: st.beta.logpdf(v, 2.5, 1.5))(x)[[0, 2]], 0.0)
    np.testing.assert_array_equal(tg.elementwise_grad(lambda v: st.beta.cdf(v, 2.5, 1.5))(x)[[0, 2]], 0.0)
    np.testing.assert_array_equal(tg.elementwise_grad(lambda v: st.gamma.logsf(v, 2.5))(x)[0], 0.0)
