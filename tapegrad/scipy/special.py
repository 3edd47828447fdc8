"""tapegrad.scipy.special: ``scipy.special`` functions, differentiable.

Same names, signatures and results as SciPy. ``erf erfc gammaln digamma
polygamma`` take their values from SciPy, imported on first use;
``expit logit logsumexp`` are written with NumPy alone. The primitives and
their rules are grouped here:

    erf'(x) = 2/sqrt(pi) exp(-x^2)      erfc' = -erf'
    gammaln' = digamma                  digamma' = polygamma(1, .)
    polygamma(n, .)' = polygamma(n + 1, .)
    expit' = expit (1 - expit)          logit'(p) = 1 / (p (1 - p))

``expit`` is a primitive for numerical stability: it is computed as
``exp(-logaddexp(0, -x))`` (finite for every x, no overflow warning) and its
rule reuses the answer. ``logsumexp`` is ``tapegrad.numpy.logsumexp``.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from tapegrad.numpy import wrap as w
from tapegrad.numpy.derived import logsumexp
from tapegrad.primitive import defvjp, primitive

__all__ = ["digamma", "erf", "erfc", "expit", "gammaln", "logit", "logsumexp", "polygamma", "psi"]


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
    from tapegrad.backend import array_module

    xp = array_module(x)  # NumPy or CuPy: the facade's sigmoid is this primitive
    return xp.exp(-xp.logaddexp(0, -x))


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


def logit(p: Any) -> Any:
    """``log(p / (1 - p))``, the inverse of ``expit`` (built from ``log`` and ``log1p``)."""
    return w.log(p) - w.log1p(-p)
