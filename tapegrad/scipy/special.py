"""tapegrad.scipy.special: ``scipy.special`` functions, differentiable.

Same names, signatures and results as SciPy. ``erf erfc gammaln digamma
polygamma`` take their values from SciPy, imported on first use;
``expit logit logsumexp softmax log_softmax`` are written with NumPy alone.
The primitives and their rules are grouped here:

    erf'(x) = 2/sqrt(pi) exp(-x^2)      erfc' = -erf'
    gammaln' = digamma                  digamma' = polygamma(1, .)
    polygamma(n, .)' = polygamma(n + 1, .)
    expit' = expit (1 - expit)          logit'(p) = 1 / (p (1 - p))
    softmax: s (g - sum(g s))           log_softmax: g - exp(ans) sum(g)

Issue 14's functions take their values from SciPy too (``gammasgn`` has no
gradient; ``multigammaln`` is a sum of ``gammaln``; ``psi`` is ``digamma``):

    gamma' = gamma digamma              rgamma' = -rgamma digamma
    d/da log B(a, b) = digamma(a) - digamma(a + b)   (beta: times beta)
    gammainc(a, .)' = x^(a-1) e^-x / Gamma(a)        gammaincc' = -gammainc'
    betainc(a, b, .)' = x^(a-1) (1-x)^(b-1) / B(a, b)
    erfinv' = sqrt(pi)/2 exp(erfinv^2)  erfcinv' = -sqrt(pi)/2 exp(erfcinv^2)
    j0' = -j1   j1' = j0 - j1/x         jn(n, .)' = (j_{n-1} - j_{n+1})/2 (y the same)
    i0' = i1    i1' = i0 - i1/x         iv(v, .)' = (i_{v-1} + i_{v+1})/2
    (j1' and i1' at 0: 1/2)
    ive(v, .)' = (ive_{v-1} + ive_{v+1})/2 - sign(x) ive

The integer orders (``jn``/``yn``/``polygamma``'s ``n``) are not
differentiable (a gradient reaching one raises, naming the function and the
argument). The derivatives with no closed form, ``gammainc``/``gammaincc``
in ``a``, ``betainc`` in ``a`` and ``b``, ``iv``/``ive`` in ``v``, are
primitives of their own computed by series and continued fractions carried
in Taylor arithmetic (``tapegrad/scipy/_series.py``: Moore's AS 187 for the
incomplete gamma function, the continued fraction of ``betainc`` with its
mixed derivatives, the power series or the integral representation of
``ive``), accurate to about 1e-10 relative; each has rules of its own, so
they differentiate to any order:

    d/da gammainc_da(a, x, k) = gammainc_da(a, x, k + 1)
    d/dx gammainc_da(a, x, k) = d^k/da^k [x^(a-1) e^-x / Gamma(a)]   (written with polygamma)
    betainc_dab(a, b, x, j, l): the same in two parameters
    d/dx iv_dv(v, x, k) = (iv_dv(v-1, x, k) + iv_dv(v+1, x, k)) / 2   (ive: less sign(x) ive_dv)

``expit`` is a primitive for numerical stability: with ``e = exp(-|x|)`` it
is ``1 / (1 + e)`` for ``x >= 0`` and ``e / (1 + e)`` below (no overflow, full
relative precision in both tails, 15x faster than ``exp(-logaddexp(0, -x))``)
and its rule reuses the answer. ``softmax`` and ``log_softmax`` are primitives too
(one tape entry each, no intermediate kept; the torch facade records them
as ``SoftmaxBackward0`` and ``LogSoftmaxBackward0``), computed from ``x``
minus its maximum. ``logsumexp`` is ``tapegrad.numpy.logsumexp``. Batching
rules (``vmap``): the elementwise functions broadcast; ``softmax`` and
``log_softmax`` shift their axes past the batch (None: every per-example axis).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch, elementwise_rule, shift_axes
from tapegrad.core.primitive import (
    defjvp,
    defvjp,
    nondifferentiable,
    primitive,
)
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import wrap as w
from tapegrad.numpy.derived import logsumexp, stack, where
from tapegrad.scipy import _series
from tapegrad.scipy._lazy import scipy_module_for

__all__ = ["beta", "betainc", "betaln", "digamma", "erf", "erfc", "erfcinv", "erfinv", "expit", "gamma",
           "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i1", "iv", "ive", "j0", "j1", "jn", "logit",
           "log_softmax", "logsumexp", "multigammaln", "polygamma", "psi", "rgamma", "softmax", "y0", "y1", "yn"]


def _scipy_special(name: str, *args: Any) -> ModuleType:
    """``scipy.special``, or for CuPy arrays ``cupyx.scipy.special`` (the same
    names; one CuPy lacks, as ``jv``, raises ``TypeError`` naming it)."""
    return scipy_module_for("special", name, f"tapegrad.scipy.special.{name}", *args)


def _erf(x: Any) -> Any:
    return _scipy_special("erf", x).erf(x)


def _erfc(x: Any) -> Any:
    return _scipy_special("erfc", x).erfc(x)


def _gammaln(x: Any) -> Any:
    return _scipy_special("gammaln", x).gammaln(x)


def _digamma(x: Any) -> Any:
    return _scipy_special("digamma", x).digamma(x)


def _polygamma(n: Any, x: Any) -> Any:
    return _scipy_special("polygamma", n, x).polygamma(n, x)


def _expit(x: Any) -> Any:
    xp = array_module(x)  # NumPy or CuPy: the facade's sigmoid is this primitive
    e = xp.exp(-xp.abs(x))  # in (0, 1]: never overflows
    return xp.where(x >= 0, 1, e) / (1 + e)


erf = primitive(_erf, "erf", batched=True)
erfc = primitive(_erfc, "erfc", batched=True)
gammaln = primitive(_gammaln, "gammaln", batched=True)
digamma = primitive(_digamma, "digamma", batched=True)
polygamma = primitive(_polygamma, "polygamma", batched=True)
expit = primitive(_expit, "expit", batched=True)  # a primitive for stability (see the module docstring)
psi = digamma

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

defvjp(erf,       lambda ans, x: lambda g: g * (_TWO_OVER_SQRT_PI * w.exp(-x * x)))
defvjp(erfc,      lambda ans, x: lambda g: g * (-_TWO_OVER_SQRT_PI * w.exp(-x * x)))
defvjp(gammaln,   lambda ans, x: lambda g: g * digamma(x))
defvjp(digamma,   lambda ans, x: lambda g: g * polygamma(1, x))
defvjp(polygamma, None,
                  lambda ans, n, x: lambda g: g * polygamma(n + 1, x))
defvjp(expit,     lambda ans, x: lambda g: g * (ans * (1 - ans)))

for _f in (erf, erfc, gammaln, digamma, polygamma, expit):
    defbatch(_f, elementwise_rule(_f))


def logit(p: Any) -> Any:
    """``log(p / (1 - p))``, the inverse of ``expit`` (built from ``log`` and ``log1p``)."""
    return w.log(p) - w.log1p(-p)


# --- softmax, log_softmax ------------------------------------------------------------------------


def _shifted(x: Any, axis: Any) -> Any:
    """``x`` minus its maximum along ``axis`` (0 where that is not finite)."""
    if type(x) is np.ndarray:  # the ufuncs' own reductions: fromnumeric's wrappers cost as much
        if x.size:
            m = np.maximum.reduce(x, axis, keepdims=True)
            return x - np.where(np.isfinite(m), m, 0)
        return x - 0
    xp = array_module(x)
    m = xp.max(x, axis=axis, keepdims=True) if x.size else xp.zeros((1,) * x.ndim, x.dtype)
    return x - xp.where(xp.isfinite(m), m, 0)


def _sum_kept(x: Any, axis: Any) -> Any:
    if type(x) is np.ndarray:
        return np.add.reduce(x, axis, keepdims=True)
    return array_module(x).sum(x, axis=axis, keepdims=True)


def _log_softmax(x: Any, axis: Any = None) -> Any:
    """``x - logsumexp(x, axis, keepdims=True)``, computed stably (SciPy's ``log_softmax``)."""
    s = _shifted(x, axis)
    e = np.exp(s) if type(s) is np.ndarray else array_module(s).exp(s)
    lse = _sum_kept(e, axis)
    s -= np.log(lse) if type(lse) is np.ndarray else array_module(lse).log(lse)
    return s


def _softmax(x: Any, axis: Any = None) -> Any:
    """``exp(x) / sum(exp(x), axis, keepdims=True)``, computed stably (SciPy's ``softmax``)."""
    s = _shifted(x, axis)
    e = np.exp(s) if type(s) is np.ndarray else array_module(s).exp(s)
    e /= _sum_kept(e, axis)
    return e


log_softmax = primitive(_log_softmax, "log_softmax", batched=True)
softmax = primitive(_softmax, "softmax", batched=True)


def _from_end(axis: Any, ndim: int) -> Any:
    """``axis`` counted from the end (rules see leading batch axes)."""
    if isinstance(axis, int):
        return axis - ndim if axis >= 0 else axis
    return tuple(a - ndim for a in w.normalize_axes(axis, ndim))


def _vjp_log_softmax(ans: Any, x: Any, axis: Any = None) -> Any:
    ax = _from_end(axis, x.ndim)
    return lambda g: g - w.exp(ans) * w.sum(g, axis=ax, keepdims=True)


def _jvp_log_softmax(ans: Any, x: Any, axis: Any = None) -> Any:
    ax = _from_end(axis, x.ndim)
    return lambda t: t - w.sum(w.exp(ans) * t, axis=ax, keepdims=True)


def _vjp_softmax(ans: Any, x: Any, axis: Any = None) -> Any:  # the Jacobian is symmetric: also the JVP
    ax = _from_end(axis, x.ndim)
    return lambda g: ans * (g - w.sum(g * ans, axis=ax, keepdims=True))


defvjp(log_softmax, _vjp_log_softmax)
defjvp(log_softmax, _jvp_log_softmax)
defvjp(softmax, _vjp_softmax)
defjvp(softmax, _vjp_softmax)


def _batch_softmax(prim: Any) -> None:
    def rule(args: Any, batched: Any, size: int, axis: Any = None) -> Any:
        x = args[0]  # axis None (all the per-example axes) or given: past the batch axis
        return prim(x, axis=shift_axes(args[1] if len(args) > 1 else axis, x.ndim - 1))

    defbatch(prim, rule)


_batch_softmax(log_softmax)
_batch_softmax(softmax)


# --- issue 14: gamma and beta families, incomplete gamma and beta, inverses of erf, Bessel ------


def _from_scipy(name: str, nargs: int) -> Any:
    """A primitive whose values are ``scipy.special.<name>``'s (SciPy imported on first call)."""
    def fun(*args: Any) -> Any:
        return getattr(_scipy_special(name, *args), name)(*args)

    fun.__name__ = fun.__qualname__ = f"_{name}"
    fun.__doc__ = f"``scipy.special.{name}`` of {nargs} argument(s)."
    return primitive(fun, name, batched=True)


gamma = _from_scipy("gamma", 1)
rgamma = _from_scipy("rgamma", 1)
beta = _from_scipy("beta", 2)
betaln = _from_scipy("betaln", 2)
gammainc = _from_scipy("gammainc", 2)
gammaincc = _from_scipy("gammaincc", 2)
betainc = _from_scipy("betainc", 3)
erfinv = _from_scipy("erfinv", 1)
erfcinv = _from_scipy("erfcinv", 1)
j0 = _from_scipy("j0", 1)
j1 = _from_scipy("j1", 1)
jn = _from_scipy("jn", 2)
y0 = _from_scipy("y0", 1)
y1 = _from_scipy("y1", 1)
yn = _from_scipy("yn", 2)
i0 = _from_scipy("i0", 1)
i1 = _from_scipy("i1", 1)
iv = _from_scipy("iv", 2)
ive = _from_scipy("ive", 2)
_NEW = (gamma, rgamma, beta, betaln, gammainc, gammaincc, betainc, erfinv, erfcinv,
        j0, j1, jn, y0, y1, yn, i0, i1, iv, ive)

_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _d_beta_a(ans: Any, a: Any, b: Any) -> Any:  # d log B(a, b) / da
    return digamma(a) - digamma(a + b)


def _d_gammainc_x(a: Any, x: Any) -> Any:  # x^(a-1) e^(-x) / Gamma(a)
    return w.exp((a - 1) * w.log(x) - x - gammaln(a))


def _d_betainc_x(a: Any, b: Any, x: Any) -> Any:  # x^(a-1) (1-x)^(b-1) / B(a, b)
    return w.exp((a - 1) * w.log(x) + (b - 1) * w.log1p(-x) - betaln(a, b))


# --- derivatives in the shape parameters (values: tapegrad/scipy/_series.py) --------------------


def _gammainc_da(a: Any, x: Any, k: int = 1) -> Any:
    return _series.gammainc_da(a, x, k)


def _betainc_dab(a: Any, b: Any, x: Any, j: int = 1, l: int = 0) -> Any:
    return _series.betainc_dab(a, b, x, j, l)


def _iv_dv(v: Any, x: Any, k: int = 1) -> Any:
    return _series.iv_dv(v, x, k)


def _ive_dv(v: Any, x: Any, k: int = 1) -> Any:
    return _series.ive_dv(v, x, k)


gammainc_da = primitive(_gammainc_da, "gammainc_da", batched=True)
betainc_dab = primitive(_betainc_dab, "betainc_dab", batched=True)
iv_dv = primitive(_iv_dv, "iv_dv", batched=True)
ive_dv = primitive(_ive_dv, "ive_dv", batched=True)


def _exp_derivative(h0: Any, hd: Any, j: int, l: int) -> Any:
    """``d^j/da^j d^l/db^l exp(h)``, given ``h`` and its partial derivatives
    ``hd(p, q)``, by Leibniz's rule on ``d exp(h) = exp(h) dh`` (tapegrad
    operations: it differentiates again)."""
    memo: dict[tuple[int, int], Any] = {(0, 0): w.exp(h0)}

    def F(jj: int, ll: int) -> Any:
        if (jj, ll) not in memo:
            if jj:  # d/da of the (jj - 1, ll) one
                terms = [math.comb(jj - 1, p) * math.comb(ll, q) * F(p, q) * hd(jj - p, ll - q)
                         for p in range(jj) for q in range(ll + 1)]
            else:
                terms = [math.comb(ll - 1, q) * F(0, q) * hd(0, ll - q) for q in range(ll)]
            total = terms[0]
            for t in terms[1:]:
                total = total + t
            memo[jj, ll] = total
        return memo[jj, ll]

    return F(j, l)


def _d_gammainc_da_x(a: Any, x: Any, k: int) -> Any:
    """``d^k/da^k`` of the density ``x^(a-1) e^-x / Gamma(a)``."""
    def hd(p: int, q: int) -> Any:
        return w.log(x) - digamma(a) if p == 1 else -polygamma(p - 1, a)

    return _exp_derivative((a - 1) * w.log(x) - x - gammaln(a), hd, k, 0)


def _d_betainc_dab_x(a: Any, b: Any, x: Any, j: int, l: int) -> Any:
    """``d^j/da^j d^l/db^l`` of the density ``x^(a-1) (1-x)^(b-1) / B(a, b)``."""
    def hd(p: int, q: int) -> Any:
        n = p + q
        out = polygamma(n - 1, a + b)
        if q == 0:
            out = out - polygamma(n - 1, a)
        if p == 0:
            out = out - polygamma(n - 1, b)
        if (p, q) == (1, 0):
            out = out + w.log(x)
        if (p, q) == (0, 1):
            out = out + w.log1p(-x)
        return out

    return _exp_derivative((a - 1) * w.log(x) + (b - 1) * w.log1p(-x) - betaln(a, b), hd, j, l)


defvjp(gammainc_da,
       lambda ans, a, x, k=1: lambda g: g * gammainc_da(a, x, k=k + 1),
       lambda ans, a, x, k=1: lambda g: g * _d_gammainc_da_x(a, x, k))
defvjp(betainc_dab,
       lambda ans, a, b, x, j=1, l=0: lambda g: g * betainc_dab(a, b, x, j=j + 1, l=l),
       lambda ans, a, b, x, j=1, l=0: lambda g: g * betainc_dab(a, b, x, j=j, l=l + 1),
       lambda ans, a, b, x, j=1, l=0: lambda g: g * _d_betainc_dab_x(a, b, x, j, l))
defvjp(iv_dv,
       lambda ans, v, x, k=1: lambda g: g * iv_dv(v, x, k=k + 1),
       lambda ans, v, x, k=1: lambda g: g * (0.5 * (iv_dv(v - 1, x, k=k) + iv_dv(v + 1, x, k=k))))
defvjp(ive_dv,
       lambda ans, v, x, k=1: lambda g: g * ive_dv(v, x, k=k + 1),
       lambda ans, v, x, k=1: lambda g: g * (0.5 * (ive_dv(v - 1, x, k=k) + ive_dv(v + 1, x, k=k))
                                             - w.nondiff["sign"](x) * ans))
for _f in (gammainc_da, betainc_dab, iv_dv, ive_dv):
    defbatch(_f, elementwise_rule(_f))


def _bessel_x(f: Any, sign: int) -> Any:
    """d/dx f(v, x) = (f(v-1, x) + sign * f(v+1, x)) / 2: ``jn``, ``yn`` (sign -1), ``iv`` (+1)."""
    return lambda ans, v, x: lambda g: g * (0.5 * (f(v - 1, x) + sign * f(v + 1, x)))


def _order_one_x(f0: Any, f1: Any) -> Any:
    """d/dx f1 = f0 - f1 / x (``j1``, ``i1``), 1/2 at 0: the order 2 of the usual form spelled
    with the orders 0 and 1 (``cupyx.scipy.special`` has no ``jv``/``iv``)."""
    def rule(ans: Any, x: Any) -> Any:
        zero = w.nondiff["equal"](x, 0)
        safe = where(zero, 1.0, x)
        return lambda g: g * where(zero, 0.5, f0(x) - f1(safe) / safe)
    return rule


def _vjp_rgamma(ans: Any, x: Any) -> Any:
    """-rgamma digamma; at the poles of gamma (0, -1, -2...), where that is 0 * nan,
    the limit cos(pi x) gamma(1 - x) (from the reflection formula)."""
    nd = w.nondiff
    xv = value(x)
    if type(xv) is not Traced and not np.any((xv <= 0) & (xv == np.floor(xv))):  # (no pole: no where)
        return lambda g: g * (-ans * digamma(x))
    pole = nd["logical_and"](nd["less_equal"](x, 0), nd["equal"](x, nd["floor"](x)))
    return lambda g: g * where(pole, w.cos(math.pi * x) * gamma(1 - x), -ans * digamma(x))


def _vjp_ive_x(ans: Any, v: Any, x: Any) -> Any:  # iv' e^-|x| - sign(x) ive
    return lambda g: g * (0.5 * (ive(v - 1, x) + ive(v + 1, x)) - w.nondiff["sign"](x) * ans)


_RULES: list[tuple[Any, tuple[Any, ...]]] = [
    (gamma,     (lambda ans, x: lambda g: g * (ans * digamma(x)),)),
    (rgamma,    (_vjp_rgamma,)),
    (beta,      (lambda ans, a, b: lambda g: g * (ans * _d_beta_a(ans, a, b)),
                 lambda ans, a, b: lambda g: g * (ans * _d_beta_a(ans, b, a)))),
    (betaln,    (lambda ans, a, b: lambda g: g * _d_beta_a(ans, a, b),
                 lambda ans, a, b: lambda g: g * _d_beta_a(ans, b, a))),
    (gammainc,  (lambda ans, a, x: lambda g: g * gammainc_da(a, x, k=1),
                 lambda ans, a, x: lambda g: g * _d_gammainc_x(a, x))),
    (gammaincc, (lambda ans, a, x: lambda g: g * -gammainc_da(a, x, k=1),
                 lambda ans, a, x: lambda g: g * -_d_gammainc_x(a, x))),
    (betainc,   (lambda ans, a, b, x: lambda g: g * betainc_dab(a, b, x, j=1, l=0),
                 lambda ans, a, b, x: lambda g: g * betainc_dab(a, b, x, j=0, l=1),
                 lambda ans, a, b, x: lambda g: g * _d_betainc_x(a, b, x))),
    (erfinv,    (lambda ans, x: lambda g: g * (_SQRT_PI_OVER_TWO * w.exp(ans * ans)),)),
    (erfcinv,   (lambda ans, x: lambda g: g * (-_SQRT_PI_OVER_TWO * w.exp(ans * ans)),)),
    (j0,        (lambda ans, x: lambda g: g * -j1(x),)),
    (j1,        (_order_one_x(j0, j1),)),
    (jn,        (None, _bessel_x(jn, -1))),  # the integer order: not differentiable
    (y0,        (lambda ans, x: lambda g: g * -y1(x),)),
    (y1,        (lambda ans, x: lambda g: g * (0.5 * (y0(x) - yn(2, x))),)),
    (yn,        (None, _bessel_x(yn, -1))),
    (i0,        (lambda ans, x: lambda g: g * i1(x),)),
    (i1,        (_order_one_x(i0, i1),)),
    (iv,        (lambda ans, v, x: lambda g: g * iv_dv(v, x, k=1), _bessel_x(iv, 1))),
    (ive,       (lambda ans, v, x: lambda g: g * ive_dv(v, x, k=1), _vjp_ive_x)),
]
for _f, _makers in _RULES:
    defvjp(_f, *_makers)  # (forward mode transposes them, as for erf: no JVP rules)
for _f in _NEW:
    defbatch(_f, elementwise_rule(_f))


_GAMMASGN: list[Any] = []  # SciPy's ufunc wrapped by nondifferentiable, made on first call


def gammasgn(x: Any) -> Any:
    """The sign of ``gamma(x)``, SciPy's ``gammasgn``: no gradient (piecewise constant).
    (SciPy's own ufunc read by value: ``vmap`` maps it as a ufunc, in one call.)"""
    if not _GAMMASGN:
        _GAMMASGN.append(nondifferentiable(_scipy_special("gammasgn").gammasgn))
    return _GAMMASGN[0](x)


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function, SciPy's ``multigammaln``:
    ``d (d-1)/4 log(pi) + sum_j gammaln(a - (j-1)/2)``, a sum of ``gammaln``."""
    d = np.asarray(d)[()]
    if not np.isscalar(d) or np.floor(d) != d:
        raise ValueError("d should be a positive integer (dimension)")
    av = value(a)
    if type(av) is not Traced and array_module(av) is np and np.any(np.asarray(av) <= 0.5 * (d - 1)):  # (device: no sync)
        raise ValueError(f"condition a ({av}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    terms = gammaln(stack([a - (j - 1.0) / 2 for j in range(1, int(d) + 1)]))
    return (d * (d - 1) * 0.25) * np.log(np.pi) + w.sum(terms, axis=0)


