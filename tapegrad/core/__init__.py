"""The core: levels, the traced value, primitives and the tapes.

It knows the ``Level`` interface (``level.py``) and nothing built on it: the
transforms, ``tapegrad.numpy``, ``vmap``, ``jit`` and the facade import the
core, never the other way round (``tests/test_core_boundary.py``).

- ``level.py``: ``Level``, the per-thread stack of levels;
- ``traced.py``: ``Traced``, a value of one level, with its NumPy protocols;
- ``primitive.py``: ``Primitive``, ``primitive()``, ``defvjp``/``defjvp``, and
  the dispatch of a call (the tapes' fast paths, else the top level's
  ``process``);
- ``tape.py``: ``Tape``, ``Entry``, ``record`` and the reverse walk;
- ``graph_tape.py``: ``GraphTape``, a tape whose graph its values own;
- ``engine_ops.py``: the engine's own primitives (``sum_to``,
  ``broadcast_to``, ``cast_to``) and ``map_batch``.
"""
