"""``tg.jit``: the tape compiled to a straight-line NumPy program (SPEC section 8).

``trace`` writes down what a function runs, ``passes`` and ``rewrites`` clean
the list, ``codegen`` makes it Python source, ``jit`` caches the results per
signature. ``facts`` holds what jit knows of each primitive (``defjit``).

This package's ``__init__`` imports nothing: ``tapegrad.numpy`` declares its
primitives' facts with ``tapegrad.compile.facts.defjit`` while it is itself
being imported, before ``jit`` (which traces through ``tapegrad.numpy``) can
be. ``tg.jit`` is ``tapegrad.compile.jit.jit``.
"""
