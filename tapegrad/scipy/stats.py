"""tapegrad.scipy.stats: ``scipy.stats`` densities and distribution functions, differentiable.

``norm t gamma beta chi2 poisson dirichlet multivariate_normal`` with SciPy's
names and signatures (``loc``, ``scale``, the shape parameters; SciPy's
broadcasting; ``multivariate_normal.logpdf(x, mean, cov, allow_singular)``):

    norm.logpdf(x, loc=0, scale=1)        t.logpdf(x, df, loc=0, scale=1)
    gamma.logpdf(x, a, loc=0, scale=1)    beta.logpdf(x, a, b, loc=0, scale=1)
    chi2.logpdf(x, df, loc=0, scale=1)    poisson.logpmf(k, mu, loc=0)
    dirichlet.logpdf(x, alpha)            multivariate_normal.logpdf(x, mean=None, cov=1, allow_singular=False)

and ``pdf`` (``pmf`` for poisson), ``cdf``, ``logcdf``, ``sf``, ``logsf``
where SciPy has them (dirichlet and multivariate_normal: ``logpdf``/``pdf``).
They are written with ``tapegrad.numpy`` and ``tapegrad.scipy.special``, so
gradients (in the value and the parameters), ``vmap`` and ``jit`` apply.

The distribution functions use primitives of this module wrapping SciPy's
``ndtr log_ndtr stdtr`` and ``tapegrad.scipy.special``'s ``gammainc
gammaincc betainc``; their derivatives in the value are the densities.
Their derivatives in a shape parameter (``df`` of ``t.cdf``, ``a`` of
``gamma.cdf``, ``a``/``b`` of ``beta.cdf``, ``df`` of ``chi2.cdf``) are
those of the incomplete gamma and beta functions in their parameters
(series and continued fractions, see ``tapegrad.scipy.special``): ``t``'s
through ``stdtr(df, x) = 1/2 + sign(x)/2 I_w(1/2, df/2)`` with
``w = x^2/(df + x^2)`` (for ``x^2 < df``; else the complementary form in
``df/(df + x^2)``). All differentiate to any order.

SciPy is imported only when one of the functions needing its values is
called (``ImportError`` saying so if it is missing).
"""

from __future__ import annotations

import abc
import functools
import math
from types import ModuleType
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.batching import defbatch, elementwise_rule
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import value
from tapegrad.scipy._lazy import scipy_module
from tapegrad.scipy.special import (  # (their rules: the density in x, the series in the parameters)
    _d_betainc_x,
    betainc,
    betainc_dab,
    gammainc,
    gammaincc,
    gammaln,
)

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2PI = math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _sc(name: str) -> ModuleType:
    return scipy_module("special", f"tapegrad.scipy.stats.{name}")


# --- primitives: SciPy's distribution functions, their derivatives in the value ------------------


def _ndtr(x: Any) -> Any:
    return _sc("norm.cdf").ndtr(x)


def _log_ndtr(x: Any) -> Any:
    return _sc("norm.logcdf").log_ndtr(x)


def _stdtr(df: Any, x: Any) -> Any:
    return _sc("t.cdf").stdtr(df, x)


ndtr = primitive(_ndtr, "ndtr", batched=True)
log_ndtr = primitive(_log_ndtr, "log_ndtr", batched=True)
stdtr = primitive(_stdtr, "stdtr", batched=True)


def _norm_pdf(x: Any) -> Any:
    return tnp.exp(-0.5 * x * x) / _SQRT_2PI


def _t_pdf(df: Any, x: Any) -> Any:
    return tnp.exp(_t_logpdf(x, df))


defvjp(ndtr, lambda ans, x: lambda g: g * _norm_pdf(x))
defvjp(log_ndtr, lambda ans, x: lambda g: g * tnp.exp(-0.5 * x * x - ans - _LOG_SQRT_2PI))
def _stdtr_ddf(df: Any, x: Any) -> Any:
    """``d/ddf stdtr(df, x)``, from ``betainc``'s derivatives (see the module docstring)."""
    zero = x == 0
    xs = tnp.where(zero, 1.0, x)
    x2 = xs * xs
    s = df + x2
    sign = tnp.where(xs > 0, 0.5, -0.5)
    w, z = x2 / s, df / s
    dzdf = x2 / (s * s)  # = -dw/ddf
    near = sign * (0.5 * betainc_dab(0.5, df / 2, w, j=0, l=1) - _d_betainc_x(0.5, df / 2, w) * dzdf)
    far = -sign * (0.5 * betainc_dab(df / 2, 0.5, z, j=1, l=0) + _d_betainc_x(df / 2, 0.5, z) * dzdf)
    return tnp.where(zero, 0.0, tnp.where(x2 < df, near, far))


defvjp(stdtr, lambda ans, df, x: lambda g: g * _stdtr_ddf(df, x),
       lambda ans, df, x: lambda g: g * _t_pdf(df, x))

for _f in (ndtr, log_ndtr, stdtr):
    defbatch(_f, elementwise_rule(_f))



# --- helpers ---------------------------------------------------------------------------------------


def _betaln(a: Any, b: Any) -> Any:
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def _xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 where ``x == 0`` (SciPy's ``xlogy``), with a gradient that stays finite there."""
    zero = x == 0
    return tnp.where(zero, 0.0, x * tnp.log(tnp.where(zero, 1.0, y)))


def _xlog1py(x: Any, y: Any) -> Any:
    zero = x == 0
    return tnp.where(zero, 0.0, x * tnp.log1p(tnp.where(zero, 0.0, y)))


def _nan_unless(ok: Any, out: Any) -> Any:
    return tnp.where(ok, out, np.nan)


def _t_logpdf(x: Any, df: Any) -> Any:
    return (gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * tnp.log(df * math.pi)
            - (df + 1) / 2 * tnp.log1p(x * x / df))


def _concrete(*xs: Any) -> bool:
    """Whether every one of ``xs`` has a value to read (not inside ``vmap`` or ``jit``)."""
    return all(isinstance(value(x), (np.ndarray, np.generic, int, float)) for x in xs)


class _Rvs:
    """``rvs``: SciPy's random variates, passed through (no gradient)."""

    _scipy_name = ""

    def rvs(self, *args: Any, **kwargs: Any) -> Any:
        """Random variates from ``scipy.stats.<name>.rvs`` with the same
        arguments (``size``, ``random_state``...). Not differentiable: traced
        arguments are read by value (``tg.value``) and the result is a plain
        array."""
        dist = getattr(scipy_module("stats", f"tapegrad.scipy.stats.{self._scipy_name}.rvs"), self._scipy_name)
        plain = [np.asarray(value(a)) if hasattr(value(a), "shape") else value(a) for a in args]
        return dist.rvs(*plain, **{k: value(v) for k, v in kwargs.items()})


class _Continuous(abc.ABC, _Rvs):
    """A ``loc``/``scale`` family: subclasses give the standardized ``_logpdf``,
    ``_cdf``, ``_sf``, their support and the parameters' validity."""

    lower: float = -math.inf
    upper: float = math.inf

    def _valid(self, *shape: Any) -> Any:
        return True

    @abc.abstractmethod
    def _logpdf(self, z: Any, *shape: Any) -> Any:
        """The standardized log density."""

    @abc.abstractmethod
    def _cdf(self, z: Any, *shape: Any) -> Any:
        """The standardized distribution function."""

    def _sf(self, z: Any, *shape: Any) -> Any:
        return 1.0 - self._cdf(z, *shape)

    def _logcdf(self, z: Any, *shape: Any) -> Any:
        return tnp.log(self._cdf(z, *shape))

    def _logsf(self, z: Any, *shape: Any) -> Any:
        return tnp.log(self._sf(z, *shape))

    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any], nshape: int) -> tuple[Any, ...]:
        names = self._names(nshape)
        vals = list(args)
        if len(vals) > len(names):
            raise TypeError(f"{type(self).__name__.lstrip('_').lower()}: too many arguments")
        for n in names[len(vals):]:
            if n in kwargs:
                vals.append(kwargs.pop(n))
            elif n == "loc":
                vals.append(0.0)
            elif n == "scale":
                vals.append(1.0)
            else:
                raise TypeError(f"missing the shape parameter `{n}`")
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        return tuple(vals)

    shapes: tuple[str, ...] = ()

    def _names(self, nshape: int) -> tuple[str, ...]:
        return (*self.shapes, "loc", "scale")

    def _prep(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, tuple[Any, ...], Any]:
        *shape, loc, scale = self._split(args[1:], dict(kwargs), len(self.shapes))
        x = args[0]
        z = (x - loc) / scale
        ok = (scale > 0) & self._valid(*shape)
        return z, scale, tuple(shape), ok

    def logpdf(self, *args: Any, **kwargs: Any) -> Any:
        """The log density at ``x`` (SciPy's signature: ``x, *shape, loc=0, scale=1``)."""
        z, scale, shape, ok = self._prep(args, kwargs)
        inside = (z >= self.lower) & (z <= self.upper)
        zs = tnp.where(inside, z, self._inner)
        if isinstance(scale, (int, float)):  # a Python number stays weak (float32 stays float32)
            log_scale: Any = math.log(scale) if scale > 0 else math.nan
        else:
            log_scale = tnp.log(tnp.where(ok, scale, 1.0))
        out = tnp.where(inside, self._logpdf(zs, *shape), -np.inf) - log_scale
        return _nan_unless(ok, out)

    def pdf(self, *args: Any, **kwargs: Any) -> Any:
        """The density at ``x``: ``exp(logpdf)``."""
        return tnp.exp(self.logpdf(*args, **kwargs))

    def _clipped(self, args: tuple[Any, ...], kwargs: dict[str, Any], fn: Any, below: float, above: float) -> Any:
        z, _, shape, ok = self._prep(args, kwargs)
        inside = (z > self.lower) & (z < self.upper)
        zs = tnp.where(inside, z, self._inner)
        # (one Python number per where: it stays weak, float32 stays float32)
        out = tnp.where(z <= self.lower, below, tnp.where(z >= self.upper, above, fn(zs, *shape)))
        return _nan_unless(ok, out)

    def cdf(self, *args: Any, **kwargs: Any) -> Any:
        """The distribution function at ``x``."""
        return self._clipped(args, kwargs, self._cdf, 0.0, 1.0)

    def logcdf(self, *args: Any, **kwargs: Any) -> Any:
        """The log of the distribution function at ``x``."""
        return self._clipped(args, kwargs, self._logcdf, -np.inf, 0.0)

    def sf(self, *args: Any, **kwargs: Any) -> Any:
        """The survival function ``1 - cdf`` at ``x``."""
        return self._clipped(args, kwargs, self._sf, 1.0, 0.0)

    def logsf(self, *args: Any, **kwargs: Any) -> Any:
        """The log of the survival function at ``x``."""
        return self._clipped(args, kwargs, self._logsf, 0.0, -np.inf)

    _inner = 0.5  # a point inside the support (stands in for the points outside)


class _Norm(_Continuous):
    """The normal distribution: ``norm.logpdf(x, loc=0, scale=1)``..."""

    _scipy_name = "norm"

    def _logpdf(self, z: Any) -> Any:
        return -0.5 * z * z - _LOG_SQRT_2PI

    def _cdf(self, z: Any) -> Any:
        return ndtr(z)

    def _sf(self, z: Any) -> Any:
        return ndtr(-z)

    def _logcdf(self, z: Any) -> Any:
        return log_ndtr(z)

    def _logsf(self, z: Any) -> Any:
        return log_ndtr(-z)


class _T(_Continuous):
    """Student's t distribution: ``t.logpdf(x, df, loc=0, scale=1)``..."""

    _scipy_name = "t"

    shapes = ("df",)

    def _valid(self, df: Any) -> Any:
        return df > 0

    def _logpdf(self, z: Any, df: Any) -> Any:
        return _t_logpdf(z, df)

    def _cdf(self, z: Any, df: Any) -> Any:
        return stdtr(df, z)

    def _sf(self, z: Any, df: Any) -> Any:
        return stdtr(df, -z)


class _Gamma(_Continuous):
    """The gamma distribution: ``gamma.logpdf(x, a, loc=0, scale=1)``..."""

    _scipy_name = "gamma"

    shapes = ("a",)
    lower = 0.0

    def _valid(self, a: Any) -> Any:
        return a > 0

    def _logpdf(self, z: Any, a: Any) -> Any:
        return _xlogy(a - 1.0, z) - z - gammaln(a)

    def _cdf(self, z: Any, a: Any) -> Any:
        return gammainc(a, z)

    def _sf(self, z: Any, a: Any) -> Any:
        return gammaincc(a, z)


class _Chi2(_Continuous):
    """The chi-squared distribution: ``chi2.logpdf(x, df, loc=0, scale=1)``..."""

    _scipy_name = "chi2"

    shapes = ("df",)
    lower = 0.0

    def _valid(self, df: Any) -> Any:
        return df > 0

    def _logpdf(self, z: Any, df: Any) -> Any:
        return _xlogy(df / 2 - 1, z) - z / 2 - gammaln(df / 2) - (math.log(2) * df) / 2

    def _cdf(self, z: Any, df: Any) -> Any:
        return gammainc(df / 2, z / 2)

    def _sf(self, z: Any, df: Any) -> Any:
        return gammaincc(df / 2, z / 2)


class _Beta(_Continuous):
    """The beta distribution: ``beta.logpdf(x, a, b, loc=0, scale=1)``..."""

    _scipy_name = "beta"

    shapes = ("a", "b")
    lower = 0.0
    upper = 1.0

    def _valid(self, a: Any, b: Any) -> Any:
        return (a > 0) & (b > 0)

    def _logpdf(self, z: Any, a: Any, b: Any) -> Any:
        return _xlog1py(b - 1.0, -z) + _xlogy(a - 1.0, z) - _betaln(a, b)

    def _cdf(self, z: Any, a: Any, b: Any) -> Any:
        return betainc(a, b, z)

    def _sf(self, z: Any, a: Any, b: Any) -> Any:
        return betainc(b, a, 1.0 - z)


class _Poisson(_Rvs):
    """The Poisson distribution: ``poisson.logpmf(k, mu, loc=0)``, ``pmf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``."""

    _scipy_name = "poisson"

    def logpmf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """The log probability of ``k`` (-inf where ``k - loc`` is not a nonnegative integer)."""
        k = k - loc
        ok = (k >= 0) & (tnp.floor(value(k)) == value(k))
        ks = tnp.where(ok, k, 0.0)
        out = tnp.where(ok, _xlogy(ks, mu) - gammaln(ks + 1) - mu, -np.inf)
        return _nan_unless(mu >= 0, out)

    def pmf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """The probability of ``k``: ``exp(logpmf)``."""
        return tnp.exp(self.logpmf(k, mu, loc))

    def _tail(self, k: Any, mu: Any, loc: Any, upper: bool) -> Any:
        k = tnp.floor(value(k - loc))
        ok = k >= 0
        ks = tnp.where(ok, k, 0.0)
        out = gammainc(ks + 1, mu) if upper else gammaincc(ks + 1, mu)
        return _nan_unless(mu >= 0, tnp.where(ok, out, 1.0 if upper else 0.0))

    def cdf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """``P(K <= k)``: ``gammaincc(floor(k - loc) + 1, mu)`` (SciPy's ``pdtr``)."""
        return self._tail(k, mu, loc, False)

    def logcdf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """The log of ``cdf``."""
        return tnp.log(self.cdf(k, mu, loc))

    def sf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """``P(K > k)``: ``gammainc(floor(k - loc) + 1, mu)`` (SciPy's ``pdtrc``)."""
        return self._tail(k, mu, loc, True)

    def logsf(self, k: Any, mu: Any, loc: Any = 0) -> Any:
        """The log of ``sf``."""
        return tnp.log(self.sf(k, mu, loc))


class _Dirichlet(_Rvs):
    """The Dirichlet distribution: ``dirichlet.logpdf(x, alpha)``, ``pdf``.

    As SciPy: ``alpha`` has shape ``(K,)``; ``x`` has the components on its
    first axis, ``K`` of them or ``K - 1`` (the last is then ``1 - sum``).
    """

    _scipy_name = "dirichlet"

    def _x(self, x: Any, alpha: Any) -> Any:
        alpha = tnp.asarray(alpha) if not hasattr(alpha, "ndim") else alpha
        x = tnp.asarray(x) if not hasattr(x, "ndim") else x
        if alpha.ndim != 1 or alpha.shape[0] < 2:
            raise ValueError("Parameter vector 'a' must be one dimensional, and must have at least two entries.")
        if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
            raise ValueError(f"Vector 'x' must have either the same number of entries as, or one entry fewer "
                             f"than, parameter vector 'a', but alpha.shape = {alpha.shape} and x.shape = {x.shape}.")
        if x.shape[0] != alpha.shape[0]:
            x = tnp.concatenate([x, (1.0 - tnp.sum(x, axis=0))[None]], axis=0)
        if _concrete(x, alpha):
            xv, av = np.asarray(value(x)), np.asarray(value(alpha))
            if np.min(av) <= 0:
                raise ValueError("All parameters must be greater than 0")
            if np.min(xv) < 0:
                raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
            if np.max(xv) > 1:
                raise ValueError("Each entry in 'x' must be smaller or equal one.")
            if (np.abs(np.sum(xv, 0) - 1.0) > 10e-10).any():
                raise ValueError("The input vector 'x' must lie within the normal simplex. "
                                 f"but np.sum(x, 0) = {np.sum(xv, 0)}.")
        return x, alpha

    def logpdf(self, x: Any, alpha: Any) -> Any:
        """The log density at ``x`` (components on the first axis)."""
        x, alpha = self._x(x, alpha)
        lnb = tnp.sum(gammaln(alpha)) - gammaln(tnp.sum(alpha))
        a = tnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
        out = tnp.sum(_xlogy(a - 1.0, x), axis=0) - lnb
        return out

    def pdf(self, x: Any, alpha: Any) -> Any:
        """The density at ``x``: ``exp(logpdf)``."""
        return tnp.exp(self.logpdf(x, alpha))


_EPS_FACTOR = {np.dtype(np.float32): 1e3, np.dtype(np.float64): 1e6}


class _MultivariateNormal(_Rvs):
    """The multivariate normal: ``multivariate_normal.logpdf(x, mean=None, cov=1, allow_singular=False)``, ``pdf``.

    As SciPy: ``x`` has the components on its last axis; ``cov`` may be a
    scalar (times the identity), a vector (the diagonal) or a matrix; the
    result is squeezed. A positive definite ``cov`` goes through its Cholesky
    factor; with ``allow_singular=True`` it goes through its eigenvalues
    (SciPy's pseudo-determinant and rank, -inf off the support; the gradient
    holds where the rank does not change nearby).
    """

    _scipy_name = "multivariate_normal"

    def _params(self, mean: Any, cov: Any) -> tuple[int, Any, Any]:
        if mean is None:
            cov = tnp.asarray(cov, dtype=float) if not hasattr(cov, "ndim") else cov
            dim = 1 if cov.ndim < 2 else cov.shape[0]
            mean = np.zeros(dim)
        else:
            mean = tnp.asarray(mean, dtype=float) if not hasattr(mean, "ndim") else mean
            dim = mean.size
        cov = tnp.asarray(cov, dtype=float) if not hasattr(cov, "ndim") else cov
        if dim == 1:
            mean = tnp.reshape(mean, (1,))
            cov = tnp.reshape(cov, (1, 1))
        if mean.ndim != 1 or mean.shape[0] != dim:
            raise ValueError(f"Array 'mean' must be a vector of length {dim}.")
        if cov.ndim == 0:
            cov = cov * np.eye(dim, dtype=cov.dtype)
        elif cov.ndim == 1:
            cov = cov * np.eye(dim, dtype=cov.dtype)  # the diagonal
        elif cov.ndim == 2 and cov.shape != (dim, dim):
            raise ValueError(f"Array 'cov' must be of shape ({dim}, {dim}): got {cov.shape}")
        elif cov.ndim > 2:
            raise ValueError(f"Array 'cov' must be at most two-dimensional, but cov.ndim = {cov.ndim}")
        return dim, mean, cov

    def logpdf(self, x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
        """The log density at ``x`` (components on the last axis; squeezed as SciPy)."""
        dim, mean, cov = self._params(mean, cov)
        x = tnp.asarray(x, dtype=float) if not hasattr(x, "ndim") else x
        if x.ndim == 0:
            x = x[None]
        elif x.ndim == 1:
            x = x[:, None] if dim == 1 else x[None, :]
        dev = x - mean
        cv = value(cov)
        rank = None
        if _concrete(cov):
            cv = np.asarray(cv)
            s = np.linalg.eigvalsh(cv)
            eps = _EPS_FACTOR.get(cv.dtype, 1e6) * np.finfo(cv.dtype).eps * np.max(np.abs(s))
            if np.min(s) < -eps:
                raise ValueError("The input matrix must be symmetric positive semidefinite.")
            rank = int(np.sum(s > eps))
            if rank < dim and not allow_singular:
                raise np.linalg.LinAlgError("When `allow_singular is False`, the input matrix must be "
                                            "symmetric positive definite.")
        if not allow_singular or rank == dim:
            chol = tnp.linalg.cholesky(cov)
            z = dev @ tnp.swapaxes(tnp.linalg.solve(chol, np.eye(dim, dtype=cov.dtype)), 0, 1)  # rows: L^-1 (x - mean)
            maha = tnp.sum(z * z, axis=-1)
            logdet = 2.0 * tnp.sum(tnp.log(tnp.diagonal(chol)))
            out = -0.5 * (dim * _LOG_2PI + logdet + maha)
        else:
            out = self._singular(dev, cov, dim)
        return tnp.squeeze(out) if out.ndim else out

    def _singular(self, dev: Any, cov: Any, dim: int) -> Any:
        s, u = tnp.linalg.eigh(cov)
        sv = value(s)
        eps = _EPS_FACTOR.get(np.dtype(sv.dtype), 1e6) * np.finfo(sv.dtype).eps * tnp.max(tnp.abs(sv))
        keep = sv > eps
        ss = tnp.where(keep, s, 1.0)
        rank = tnp.sum(keep)
        log_pdet = tnp.sum(tnp.where(keep, tnp.log(ss), 0.0))
        proj = dev @ u
        maha = tnp.sum(proj * proj * tnp.where(keep, 1.0 / ss, 0.0), axis=-1)
        out = -0.5 * (rank * _LOG_2PI + log_pdet + maha)
        resid = tnp.sqrt(tnp.sum(tnp.where(keep, 0.0, value(proj)) ** 2, axis=-1))
        return tnp.where(resid < 1e3 * eps, out, -np.inf)

    def pdf(self, x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
        """The density at ``x``: ``exp(logpdf)``."""
        return tnp.exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean: Any = None, cov: Any = 1) -> Any:
        """The differential entropy ``(r (1 + log 2 pi) + log pdet(cov)) / 2``, as SciPy's:
        ``r`` the rank of ``cov`` and ``pdet`` its pseudo-determinant (the
        determinant when it is positive definite). Differentiable in ``cov``
        (where the rank does not change nearby); ``mean`` only sets the
        dimension."""
        dim, mean, cov = self._params(mean, cov)
        s = tnp.linalg.eigvalsh(cov)
        sv = value(s)
        eps = _EPS_FACTOR.get(np.dtype(sv.dtype), 1e6) * np.finfo(sv.dtype).eps * tnp.max(tnp.abs(sv))
        if _concrete(s) and np.min(sv) < -eps:
            raise ValueError("The input matrix must be symmetric positive semidefinite.")
        keep = sv > eps
        log_pdet = tnp.sum(tnp.where(keep, tnp.log(tnp.where(keep, s, 1.0)), 0.0))
        return 0.5 * (tnp.sum(keep) * (1.0 + _LOG_2PI) + log_pdet)


def _quiet(fn: Any) -> Any:
    """``fn`` with NumPy's divide-by-zero warnings off (``log(0) = -inf`` at and past the
    support's ends is the answer, as SciPy gives it silently)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(divide="ignore"):
            return fn(*args, **kwargs)

    return wrapped


for _cls in (_Continuous, _Poisson, _Dirichlet, _MultivariateNormal):
    for _name in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "logpmf", "pmf"):
        if _name in vars(_cls):
            setattr(_cls, _name, _quiet(vars(_cls)[_name]))

norm = _Norm()
t = _T()
gamma = _Gamma()
chi2 = _Chi2()
beta = _Beta()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()
