"""tapegrad.scipy: differentiable SciPy functions (``tapegrad.scipy.special``,
``tapegrad.scipy.stats``).

SciPy is not a dependency of tapegrad: importing this package works without
it, and the functions that need SciPy's values import it when first called,
raising ``ImportError`` that says so if it is missing. ``expit``, ``logit``
and ``logsumexp`` need only NumPy.
"""

from tapegrad.scipy import special, stats

__all__ = ["special", "stats"]
