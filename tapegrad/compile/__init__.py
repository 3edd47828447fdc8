"""``tg.jit``: the tape compiled to a straight-line NumPy program (SPEC section 8).

``trace`` writes down what a function runs, ``passes`` clean the list,
``codegen`` makes it Python source, ``jit`` caches the results per signature.
"""

from tapegrad.compile.jit import Jitted, Lowered, jit

__all__ = ["Jitted", "Lowered", "jit"]
