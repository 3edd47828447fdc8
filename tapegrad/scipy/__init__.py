"""tapegrad.scipy: differentiable SciPy functions (``special``, ``stats``,
``linalg``, ``signal``, ``integrate``).

SciPy is not a dependency of tapegrad: importing this package works without
it, and the functions that need SciPy's values import it when first called,
raising ``ImportError`` that says so if it is missing. ``expit``, ``logit``
and ``logsumexp`` need only NumPy.
"""

from tapegrad.scipy import integrate, linalg, signal, special, stats

__all__ = ["integrate", "linalg", "signal", "special", "stats"]
