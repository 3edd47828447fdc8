"""tapegrad.numpy.primitives: the primitives of tapegrad.numpy NumPy has no name for.

``tapegrad.numpy`` keeps NumPy's names and signatures. Code built on tapegrad
that records operations itself (the PyTorch facade ``tapegrad.torch``,
extensions with their own op tables) also needs a few primitives that are no
NumPy function, or that sit behind a NumPy name's front-end; this module is
their public home. Each function here is a primitive: called on plain arrays
it is the array function, called on traced values it records one tape entry,
and ``f.primitive`` is its rule record. Each is defined with its rules in its
family module (``indexing.py``, ``reductions.py``, ``products.py``,
``elementwise.py``), checked by the op table like every other.

Selection and indexing:

- ``where_mask`` ``(mask, x, y)``: NumPy's three-argument ``where`` with a
  constant ``mask`` (``tapegrad.numpy.where`` takes ``value()`` of the
  condition and calls it).
- ``NormalizedIndex`` ``(key, ndim)``: a NumPy index normalised once
  (``...`` expanded, lists made arrays, its kind and uniqueness known), the
  index argument of the two below.
- ``index_set`` ``(x, index, v)``: a copy of ``x`` with ``v`` written at
  ``index`` (``x[index] = v`` as a value).
- ``scatter_add`` ``(g, index, shape, nbatch)``: zeros of ``shape`` with
  ``g`` added at ``index`` (the transpose of ``x[index]``).

Fused reductions and layers (one tape entry where a composition of
tapegrad.numpy calls records several and keeps the intermediates):

- ``mean`` ``(x, axis=None, keepdims=False)``: ``sum / n`` in ``x``'s
  dtype (``tapegrad.numpy.mean`` records it for traced inputs).
- ``logsumexp`` ``(a, axis=None, keepdims=False)``: the primitive behind
  ``tapegrad.numpy.logsumexp`` (no ``b``, no ``return_sign``).
- ``linear`` ``(x, w, b)``: ``x @ w.T + b``, a dense layer.
- ``weighted_sum`` ``(x, weights, axis=None)``: ``sum(x * weights)`` with
  constant ``weights`` (a negative log-likelihood, with the weights at the
  targets).

Examples:
    >>> import numpy as np
    >>> from tapegrad.numpy import primitives as tp
    >>> tp.where_mask(np.array([True, False]), np.ones(2), np.zeros(2))
    array([1., 0.])
"""

from __future__ import annotations

from tapegrad.numpy.elementwise import where3 as where_mask
from tapegrad.numpy.indexing import Index as NormalizedIndex
from tapegrad.numpy.indexing import index_add as scatter_add
from tapegrad.numpy.indexing import setitem as index_set
from tapegrad.numpy.products import linear
from tapegrad.numpy.reductions import logsumexp, mean, weighted_sum

__all__ = ["NormalizedIndex", "index_set", "linear", "logsumexp", "mean", "scatter_add", "weighted_sum",
           "where_mask"]
