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

``expit`` is a primitive for numerical stability: it is computed as
``exp(-logaddexp(0, -x))`` (finite for every x, no overflow warning) and its
rule reuses the answer. ``softmax`` and ``log_softmax`` are primitives too
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
from tapegrad.numpy import wrap as w
from tapegrad.numpy.derived import logsumexp
from tapegrad.primitive import REGISTRY, defjvp, defvjp, mark_batched, primitive

__all__ = ["digamma", "erf", "erfc", "expit", "gammaln", "logit", "log_softmax", "logsumexp", "polygamma", "psi",
           "softmax"]


def _scipy_special(name: str) -> ModuleType:
    try:
        import scipy.special
    except ImportError as e:
        raise ImportError(f"tapegrad.scipy.special.{name} needs SciPy: pip install scipy") from e
    return scipy.special


def _erf(x: Any) -> Any:
    return _scipy_special("erf").erf(x)


def _erfc(x: Any) -> Any:
    return _scipy_special("erfc").erfc(x)


def _gammaln(x: Any) -> Any:
    return _scipy_special("gammaln").gammaln(x)


def _digamma(x: Any) -> Any:
    return _scipy_special("digamma").digamma(x)


def _polygamma(n: Any, x: Any) -> Any:
    return _scipy_special("polygamma").polygamma(n, x)


def _expit(x: Any) -> Any:
    xp = array_module(x)  # NumPy or CuPy: the facade's sigmoid is this primitive
    return xp.exp(-xp.logaddexp(0, -x))


_OWN_FROM = len(REGISTRY)  # this module's primitives follow (see mark_batched)
erf = primitive(_erf, "erf")
erfc = primitive(_erfc, "erfc")
gammaln = primitive(_gammaln, "gammaln")
digamma = primitive(_digamma, "digamma")
polygamma = primitive(_polygamma, "polygamma")
expit = primitive(_expit, "expit")  # a primitive for stability (see the module docstring)
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


log_softmax = primitive(_log_softmax, "log_softmax")
softmax = primitive(_softmax, "softmax")


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

mark_batched(_OWN_FROM)  # every rule here takes leading batch axes
