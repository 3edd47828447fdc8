"""tapegrad.scipy.signal: ``scipy.signal.convolve``, differentiable.

``convolve(in1, in2, mode, method)`` is SciPy's, in any dimension (SciPy is
imported on first use). Every mode is a crop of the full convolution
(``'same'``: centered on ``in1``'s shape; ``'valid'``: the entries that need
no zero padding), so the rules pad the cotangent back to the full shape
(zeros where the crop dropped entries) and correlate it with the other
input:

    in1_bar = convolve(g_full, flip(in2), 'valid')
    in2_bar = convolve(g_full, flip(in1), 'valid')

written with this primitive, ``pad`` and ``flip``, so they differentiate
again. Complex inputs follow JAX's convention (no conjugation). Under
``vmap`` the primitive is mapped by a loop over the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.batching import defbatch
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import wrap as w
from tapegrad.scipy._lazy import scipy_module

__all__ = ["convolve"]


def _convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    signal = scipy_module("signal", "tapegrad.scipy.signal.convolve")
    return signal.convolve(in1, in2, mode=mode, method=method)


convolve_p = primitive(_convolve, "convolve")


def _crop_start(n1: tuple[int, ...], n2: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    """Where the output of a mode starts in the full convolution (SciPy's ``_centered``)."""
    return [(a + b - 1 - o) // 2 for a, b, o in zip(n1, n2, out)]


def _full_cotangent(g: Any, n1: tuple[int, ...], n2: tuple[int, ...]) -> Any:
    full = [a + b - 1 for a, b in zip(n1, n2)]
    out = tuple(g.shape)
    if tuple(full) == out:
        return g
    start = _crop_start(n1, n2, out)
    pads = [(s, f - s - o) for s, f, o in zip(start, full, out)]
    return w.pad(g, pads)


def _vjp_maker(other: int) -> Any:
    def maker(ans: Any, in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
        n1, n2 = tuple(in1.shape), tuple(in2.shape)
        y = in2 if other == 1 else in1

        def vjp(g: Any) -> Any:
            gf = _full_cotangent(g, n1, n2)
            return convolve_p(gf, w.flip(y), mode="valid", method=method)
        return vjp
    return maker


defvjp(convolve_p, _vjp_maker(1), _vjp_maker(0))  # (rules of one cotangent: the batch loops)


def _batch_convolve(args: Any, batched: Any, size: int, mode: str = "full", method: str = "auto") -> Any:
    """vmap: one batched operand convolves as one N+1-dimensional convolution
    with a kernel of length 1 along the batch (SciPy's modes then crop the
    batch axis to itself). Both batched, or a 'valid'/'same' case where SciPy
    would swap or crop by the other operand: None (a loop over the batch)."""
    in1, in2 = args[0], args[1]
    mode = args[2] if len(args) > 2 else mode
    method = args[3] if len(args) > 3 else method
    if batched[0] and not batched[1]:
        k = w.reshape_c(in2, (1,) + tuple(in2.shape))
        if mode == "valid" and any(a < b for a, b in zip(in1.shape[1:], in2.shape)):
            return None
        return convolve_p(in1, k, mode=mode, method=method)
    if batched[1] and not batched[0] and mode == "full":  # (full convolution commutes)
        return convolve_p(in2, w.reshape_c(in1, (1,) + tuple(np.shape(in1))), mode=mode, method=method)
    return None


defbatch(convolve_p, _batch_convolve)


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """Convolve two N-dimensional arrays, as ``scipy.signal.convolve``;
    differentiable in both.

    ``mode``: ``'full'`` (every overlap), ``'same'`` (the size of ``in1``,
    centered), ``'valid'`` (no zero padding; one input must be at least as
    large as the other in every dimension). ``method``: ``'auto'``,
    ``'direct'`` or ``'fft'``, as SciPy.
    """
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    a = in1 if isinstance(in1, Traced) else np.asarray(in1)
    b = in2 if isinstance(in2, Traced) else np.asarray(in2)
    if np.ndim(value(a)) != np.ndim(value(b)) and a.ndim != b.ndim:
        raise ValueError(f"convolve: in1 and in2 should have the same dimensionality, got {a.ndim} and {b.ndim}")
    return convolve_p(a, b, mode=mode, method=method)
