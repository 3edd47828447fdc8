"""Derivatives of ``gammainc``, ``gammaincc``, ``betainc`` in their shape
parameters and of ``iv``/``ive`` in their order, on plain arrays.

The incomplete gamma and beta functions are evaluated in truncated Taylor
arithmetic ("jets") in the shape parameters: every number of the series or
continued fraction carries its derivatives in ``a`` (and ``b``) up to a
given order, so the derivatives of the sum converge with the sum.

- ``P(a, x)`` for ``x < a + 1``: the series
  ``P = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))``
  (all terms positive: no cancellation); otherwise ``Q(a, x)`` by Legendre's
  continued fraction (modified Lentz), and ``d^k P = -d^k Q`` for ``k >= 1``.
  This is the approach of Moore (1982, Algorithm AS 187), who differentiates
  the same series and fraction term by term.
- ``I_x(a, b)`` by the continued fraction of Numerical Recipes' ``betacf``
  for ``x < (a+1)/(a+b+2)``, otherwise by ``1 - I_{1-x}(b, a)``; the jets are
  bivariate, so mixed derivatives in ``a`` and ``b`` come out too (the
  derivative form of Boik and Robison-Cox (1998)).
- ``I_v(x)`` in ``v`` (``x > 0``) by differentiating the integral
  representation ``e^-x I_v(x) = 1/pi int_0^pi e^{x(cos t - 1)} cos(vt) dt
  - sin(v pi)/pi int_0^inf e^{-x(cosh t + 1) - vt} dt`` under the integral
  sign (adaptive quadrature, ``scipy.integrate.quad``).

Every function returns ``d^j/da^j d^l/db^l`` of the function (not divided by
factorials). Inputs broadcast; outside the domain the result is NaN, at the
ends of the support (``x = 0``, ``x = 1``...) where the function is constant
in its shape parameters it is 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapegrad.scipy._lazy import scipy_module

_EPS = 3e-16
_TINY = 1e-300
_MAXITER = 100000


def _sp() -> Any:
    return scipy_module("special", "tapegrad.scipy.special")


class Jet:
    """A truncated bivariate Taylor series: ``c[j, l]`` is the coefficient of
    ``da^j db^l`` (arrays of one shape)."""

    __slots__ = ("c",)

    def __init__(self, c: np.ndarray) -> None:
        self.c = c

    @staticmethod
    def const(v: Any, order: tuple[int, int]) -> Jet:
        v = np.asarray(v, dtype=float)
        c = np.zeros((order[0] + 1, order[1] + 1) + v.shape)
        c[0, 0] = v
        return Jet(c)

    @staticmethod
    def var(v: Any, order: tuple[int, int], which: int) -> Jet:
        """The variable ``a`` (``which=0``) or ``b`` (1) at value ``v``."""
        out = Jet.const(v, order)
        if order[which]:
            out.c[(1, 0) if which == 0 else (0, 1)] = 1.0
        return out

    @property
    def v(self) -> np.ndarray:
        return self.c[0, 0]

    def _lift(self, o: Any) -> Jet:
        return o if isinstance(o, Jet) else Jet.const(np.broadcast_to(o, self.v.shape), self.c.shape[:2])

    def __add__(self, o: Any) -> Jet:
        if isinstance(o, Jet):
            return Jet(self.c + o.c)
        c = self.c.copy()
        c[0, 0] = c[0, 0] + o
        return Jet(c)

    __radd__ = __add__

    def __neg__(self) -> Jet:
        return Jet(-self.c)

    def __sub__(self, o: Any) -> Jet:
        return self + (-o)

    def __rsub__(self, o: Any) -> Jet:
        return (-self) + o

    def __mul__(self, o: Any) -> Jet:
        if not isinstance(o, Jet):
            return Jet(self.c * o)
        J, L = self.c.shape[:2]
        out = np.zeros_like(self.c)
        for j in range(J):
            for l in range(L):
                acc = out[j, l]
                for p in range(j + 1):
                    for q in range(l + 1):
                        acc += self.c[p, q] * o.c[j - p, l - q]
        return Jet(out)

    __rmul__ = __mul__

    def recip(self) -> Jet:
        J, L = self.c.shape[:2]
        y = self.c
        out = np.zeros_like(y)
        inv = 1.0 / y[0, 0]
        out[0, 0] = inv
        for j in range(J):
            for l in range(L):
                if j == l == 0:
                    continue
                acc = np.zeros_like(inv)
                for p in range(j + 1):
                    for q in range(l + 1):
                        if p == q == 0:
                            continue
                        acc = acc + y[p, q] * out[j - p, l - q]
                out[j, l] = -acc * inv
        return Jet(out)

    def __truediv__(self, o: Any) -> Jet:
        if not isinstance(o, Jet):
            return Jet(self.c / o)
        return self * o.recip()

    def __rtruediv__(self, o: Any) -> Jet:
        return self.recip() * o

    def exp(self) -> Jet:
        """``exp`` of the series: ``exp(c00) * sum_m N^m / m!`` with ``N`` nilpotent."""
        J, L = self.c.shape[:2]
        n = Jet(self.c.copy())
        n.c[0, 0] = 0.0
        term = Jet.const(np.ones(self.v.shape), (J - 1, L - 1))
        total = Jet(term.c.copy())
        for m in range(1, J + L - 1):
            term = term * n / m
            total = total + term
        return total * np.exp(self.v)

    def deriv(self, j: int, l: int) -> np.ndarray:
        """``d^j/da^j d^l/db^l`` at the point."""
        return self.c[j, l] * (math.factorial(j) * math.factorial(l))


def _fix_small(j: Jet) -> None:
    """Lentz's guard: a value that is exactly 0 becomes tiny."""
    v = j.c[0, 0]
    j.c[0, 0] = np.where(np.abs(v) < _TINY, _TINY, v)


def _lentz_step(an: Any, bn: Any, d: Jet, c: Jet) -> tuple[Jet, Jet]:
    """One step of Lentz's method for a continued fraction with terms ``an / bn``:
    the new ``d`` and ``c`` (their product is the factor the fraction's value takes)."""
    d = an * d + bn
    _fix_small(d)
    c = bn + an / c
    _fix_small(c)
    return d.recip(), c


def _converged(delta: Jet) -> bool:
    err = np.abs(delta.c.copy())
    err[0, 0] = np.abs(delta.c[0, 0] - 1.0)
    err = np.where(np.isnan(err), 0.0, err)
    return bool(np.all(err <= _EPS))


# --- the incomplete gamma function --------------------------------------------------------------


def _gammainc_jet(a: np.ndarray, x: np.ndarray, k: int) -> Jet:
    """The jet of ``P(a, x)`` in ``a`` to order ``k`` (flat arrays, ``0 < x``, ``0 < a``)."""
    sp = _sp()
    order = (k, 0)
    out = Jet.const(np.zeros(a.shape), order)
    ser = x < a + 1
    if np.any(ser):
        aa, xx = a[ser], x[ser]
        A = Jet.var(aa, order, 0)
        # log of x^a e^-x / Gamma(a+1)
        lp = Jet.const(aa * np.log(xx) - xx - sp.gammaln(aa + 1), order)
        if k:
            lp.c[1, 0] = np.log(xx) - sp.digamma(aa + 1)
            for i in range(2, k + 1):
                lp.c[i, 0] = -sp.polygamma(i - 1, aa + 1) / math.factorial(i)
        term = Jet.const(np.ones(aa.shape), order)
        total = Jet(term.c.copy())
        for n in range(1, _MAXITER):
            term = term * xx / (A + n)
            total = total + term
            small = np.abs(term.c) <= _EPS * np.abs(total.c[0, 0])
            if n > 2 and bool(np.all(small | np.isnan(term.c))):
                break
        res = lp.exp() * total
        out.c[:, :, ser] = res.c
    cf = ~ser
    if np.any(cf):
        aa, xx = a[cf], x[cf]
        A = Jet.var(aa, order, 0)
        lp = Jet.const(aa * np.log(xx) - xx - sp.gammaln(aa), order)
        if k:
            lp.c[1, 0] = np.log(xx) - sp.digamma(aa)
            for i in range(2, k + 1):
                lp.c[i, 0] = -sp.polygamma(i - 1, aa) / math.factorial(i)
        b = (-A) + (xx + 1.0)
        c = Jet.const(np.full(aa.shape, 1.0 / _TINY), order)
        d = b.recip()
        h = d
        for i in range(1, _MAXITER):
            an = (A - i) * i  # -i (i - a)
            b = b + 2.0
            d, c = _lentz_step(an, b, d, c)
            delta = d * c
            h = h * delta
            if _converged(delta):
                break
        q = lp.exp() * h
        res = Jet(-q.c)
        res.c[0, 0] = 1.0 + res.c[0, 0]
        out.c[:, :, cf] = res.c
    return out


def gammainc_da(a: Any, x: Any, k: int = 1) -> np.ndarray:
    """``d^k/da^k gammainc(a, x)`` (``k >= 1``); ``gammaincc``'s is its negative."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (x > 0) & np.isfinite(x)
    out[(a > 0) & ((x == 0) | (x == np.inf))] = 0.0
    if np.any(ok):
        out[ok] = _gammainc_jet(a[ok], x[ok], k).deriv(k, 0)
    return out.reshape(shape)


# --- the regularized incomplete beta function -------------------------------------------------


def _betacf(A: Jet, B: Jet, x: np.ndarray) -> Jet:
    """The continued fraction of ``I_x(a, b)`` (Numerical Recipes' ``betacf``) in jets."""
    qab = A + B
    qap = A + 1.0
    qam = A - 1.0
    c = Jet.const(np.ones(x.shape), (A.c.shape[0] - 1, A.c.shape[1] - 1))
    d = 1.0 - qab * x / qap
    _fix_small(d)
    d = d.recip()
    h = d
    for m in range(1, _MAXITER):
        m2 = 2 * m
        aa = (B - m) * (m * x) / ((qam + m2) * (A + m2))
        d, c = _lentz_step(aa, 1.0, d, c)
        h = h * d * c
        aa = -((A + m) * (qab + m) * x) / ((A + m2) * (qap + m2))
        d, c = _lentz_step(aa, 1.0, d, c)
        delta = d * c
        h = h * delta
        if _converged(delta):
            break
    return h


def _log_front(a: np.ndarray, b: np.ndarray, x: np.ndarray, order: tuple[int, int]) -> Jet:
    """The jet of ``log(x^a (1-x)^b / B(a, b))``."""
    sp = _sp()
    J, L = order
    lp = Jet.const(sp.gammaln(a + b) - sp.gammaln(a) - sp.gammaln(b) + a * np.log(x) + b * np.log1p(-x), order)
    for j in range(J + 1):
        for l in range(L + 1):
            n = j + l
            if n == 0:
                continue
            coef = sp.polygamma(n - 1, a + b)
            if l == 0:
                coef = coef - sp.polygamma(n - 1, a)
            if j == 0:
                coef = coef - sp.polygamma(n - 1, b)
            if (j, l) == (1, 0):
                coef = coef + np.log(x)
            if (j, l) == (0, 1):
                coef = coef + np.log1p(-x)
            lp.c[j, l] = coef / (math.factorial(j) * math.factorial(l))
    return lp


def betainc_dab(a: Any, b: Any, x: Any, j: int, l: int) -> np.ndarray:
    """``d^j/da^j d^l/db^l betainc(a, b, x)`` (``j + l >= 1``)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    shape = a.shape
    a, b, x = a.ravel(), b.ravel(), x.ravel()
    out = np.full(a.shape, np.nan)
    good = (a > 0) & (b > 0)
    out[good & ((x == 0) | (x == 1))] = 0.0
    ok = good & (x > 0) & (x < 1)
    order = (j, l)
    for swap in (False, True):
        sel = ok & ((x >= (a + 1) / (a + b + 2)) == swap)
        if not np.any(sel):
            continue
        aa, bb, xx = a[sel], b[sel], x[sel]
        A, B = Jet.var(aa, order, 0), Jet.var(bb, order, 1)
        front = _log_front(aa, bb, xx, order).exp()
        if not swap:
            res = front * _betacf(A, B, xx) / A
        else:
            res = -(front * _betacf(B, A, 1.0 - xx) / B)
        out[sel] = res.deriv(j, l)
    return out.reshape(shape)


# --- the modified Bessel function in its order --------------------------------------------------


def _ive_dv_one(v: float, x: float, k: int) -> float:
    quad = scipy_module("integrate", "tapegrad.scipy.special.ive").quad
    opts = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 500}

    def first(t: float) -> float:  # d^k/dv^k cos(v t) = t^k cos(v t + k pi/2)
        return math.exp(x * (math.cos(t) - 1.0)) * t ** k * math.cos(v * t + k * math.pi / 2)

    total = quad(first, 0.0, math.pi, **opts)[0] / math.pi
    # - d^k/dv^k [sin(v pi) / pi * int e^{-x (cosh t + 1) - v t} dt], by Leibniz's rule
    for m in range(k + 1):
        dsin = math.pi ** m * math.sin(v * math.pi + m * math.pi / 2)
        if dsin == 0.0:
            continue
        n = k - m

        def second(t: float, n: int = n) -> float:
            if t > 700.0:
                return 0.0
            e = -x * (math.cosh(t) + 1.0) - v * t
            return (-t) ** n * math.exp(e) if e > -745 else 0.0

        integral = quad(second, 0.0, math.inf, **opts)[0]
        total -= math.comb(k, m) * dsin / math.pi * integral
    return total


def _ive_series(v: np.ndarray, x: np.ndarray, k: int) -> np.ndarray:
    """``d^k/dv^k ive(v, x)`` by the power series ``sum_m (x/2)^(2m+v) / (m! Gamma(m+v+1))``
    times ``e^-x``, in jets (``v > -1``: every term positive)."""
    sp = _sp()
    order = (k, 0)
    lx = np.log(x / 2)
    total = Jet.const(np.zeros(v.shape), order)
    for m in range(_MAXITER):
        e = Jet.const((2 * m + v) * lx - sp.gammaln(m + 1.0) - sp.gammaln(m + v + 1) - x, order)
        if k:
            e.c[1, 0] = lx - sp.digamma(m + v + 1)
            for i in range(2, k + 1):
                e.c[i, 0] = -sp.polygamma(i - 1, m + v + 1) / math.factorial(i)
        term = e.exp()
        total = total + term
        if m > x and bool(np.all(np.abs(term.c) <= _EPS * (np.abs(total.c) + np.abs(total.c[0, 0])))):
            break
    return total.deriv(k, 0)


def ive_dv(v: Any, x: Any, k: int = 1) -> np.ndarray:
    """``d^k/dv^k ive(v, x)`` for ``x >= 0`` (NaN for ``x < 0``, where
    ``iv`` is real only at integer orders): the power series where its
    terms fall fast (``x^2/4 <= 4 (v + 1)``, ``v > -1``), else the integral."""
    v, x = np.broadcast_arrays(np.asarray(v, dtype=float), np.asarray(x, dtype=float))
    shape = v.shape
    v, x = v.ravel(), x.ravel()
    out = np.full(v.shape, np.nan)
    finite = np.isfinite(v) & np.isfinite(x)
    ser = finite & (x > 0) & (v > -1) & (x * x / 4 <= 4 * (v + 1))
    if np.any(ser):
        out[ser] = _ive_series(v[ser], x[ser], k)
    for i in np.flatnonzero(finite & ~ser):
        vi, xi = float(v[i]), float(x[i])
        if xi > 0:
            out[i] = _ive_dv_one(vi, xi, k)
        elif xi == 0:
            out[i] = _iv_at_zero_dv(vi, k)
    return out.reshape(shape)


def _iv_at_zero_dv(v: float, k: int) -> float:
    """``I_v(0)`` is 1 at ``v = 0``, 0 for ``v > 0``: the derivative in ``v`` is 0
    for ``v > 0`` (``I_v(x) ~ (x/2)^v / Gamma(v+1)``), NaN elsewhere."""
    return 0.0 if v > 0 else math.nan


def iv_dv(v: Any, x: Any, k: int = 1) -> np.ndarray:
    """``d^k/dv^k iv(v, x)``: ``e^|x|`` times ``ive_dv``."""
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(np.abs(x)) * ive_dv(v, x, k)
