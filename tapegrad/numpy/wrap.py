"""Every primitive of tapegrad.numpy, by name: an index of the family modules.

The primitives are defined, each with its VJP, JVP and batching rule, in the
family modules: ``elementwise.py``, ``reductions.py``, ``shapes.py``,
``indexing.py``, ``products.py`` (and ``linalg.py``, ``fft.py``); the
functions with no gradient are in ``nondiff.py``. This module gathers them
under one name for code that looks primitives up in one place
(``tapegrad.scipy``, ``tapegrad.compile``'s rewrites). Nothing is defined here.
"""

# ruff: noqa: F401  (an index: it re-exports what the family modules define)
from __future__ import annotations

from tapegrad.axes import normalize_axes, normalize_axis
from tapegrad.core.engine_ops import broadcast_to, sum_to
from tapegrad.numpy.elementwise import (
    _astype,
    absolute,
    add,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    astype_float,
    cbrt,
    clip,
    clip_bounds,
    conjugate,
    copy,
    cos,
    cosh,
    deg2rad,
    divide,
    exp,
    exp2,
    expm1,
    fmax,
    fmin,
    fmod,
    heaviside,
    hypot,
    imag,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    maximum,
    minimum,
    multiply,
    negative,
    positive,
    power,
    rad2deg,
    real,
    reciprocal,
    remainder,
    sin,
    sinc,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    where3,
)
from tapegrad.numpy.indexing import (
    Index,
    batch_like,
    getitem,
    index_add,
    lift,
    setitem,
)
from tapegrad.numpy.nondiff import bincount, histogram, nondiff, unique
from tapegrad.numpy.products import _einsum, _linear, _matmul, einsum_args, linear, matmul
from tapegrad.numpy.reductions import (
    _logsumexp,
    _mean,
    _sum,
    _weighted_sum,
    amax,
    amin,
    cumprod,
    cumsum,
    logsumexp,
    mean,
    prod,
    reduction_size,
    sum,
    weighted_sum,
)
from tapegrad.numpy.shapes import (
    _concatenate,
    _diag_embed,
    _diag_from_vector,
    _reshape,
    _transpose,
    concatenate_args,
    diag_embed,
    diag_from_vector,
    diagonal,
    flip,
    pad,
    reshape_c,
    roll,
    transpose,
    tril,
    triu,
)

__all__ = ["broadcast_to", "normalize_axes", "normalize_axis", "sum_to"]
