"""tapegrad.scipy.signal: ``scipy.signal.convolve``, differentiable.

``convolve(in1, in2, mode, method)`` is SciPy's, in any dimension (SciPy is
imported on first use); HIPS autograd's ``axes=``/``dot_axes=`` are built on
it (a convolution of the rearranged inputs, cropped). Every mode is a crop of the full convolution
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

from tapegrad.backend import array_module
from tapegrad.batching import defbatch
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import wrap as w
from tapegrad.scipy._lazy import scipy_module_for

__all__ = ["convolve"]


def _convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    signal = scipy_module_for("signal", "convolve", "tapegrad.scipy.signal.convolve", in1, in2)
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


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto", *, axes: Any = None,
             dot_axes: Any = None) -> Any:
    """Convolve two N-dimensional arrays, as ``scipy.signal.convolve``;
    differentiable in both.

    ``mode``: ``'full'`` (every overlap), ``'same'`` (the size of ``in1``,
    centered), ``'valid'`` (no zero padding; one input must be at least as
    large as the other in every dimension). ``method``: ``'auto'``,
    ``'direct'`` or ``'fft'``, as SciPy.

    HIPS autograd's extensions, as keywords: ``axes=(axes1, axes2)`` pairs
    the axes of ``in1`` and ``in2`` to convolve, ``dot_axes=(d1, d2)`` pairs
    axes to contract (a tensor dot). The result has ``in1``'s other axes,
    then ``in2``'s, then the convolved ones (autograd's order). (autograd's
    positional order is ``convolve(A, B, axes, dot_axes, mode)``; here pass
    them by name.)

    Examples:
        >>> a, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, -1.0], [2.0, 0.5]])
        >>> convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]))  # sum_i conv(a[i], b[i])
        array([ 6. , 10.5, 13. ,  0.5])
    """
    if not isinstance(mode, str):
        raise TypeError(f"convolve: mode must be 'full', 'same' or 'valid', got {type(mode).__name__}; "
                        "HIPS autograd's convolve(A, B, axes, dot_axes, mode) takes its axes positionally: "
                        "here pass axes= and dot_axes= by name")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    a = in1 if isinstance(in1, Traced) else array_module(in1).asarray(in1)  # (device arrays stay there)
    b = in2 if isinstance(in2, Traced) else array_module(in2).asarray(in2)
    if axes is not None or dot_axes is not None:
        return _convolve_axes(a, b, axes, dot_axes, mode, method)
    if np.ndim(value(a)) != np.ndim(value(b)) and a.ndim != b.ndim:
        raise ValueError(f"convolve: in1 and in2 should have the same dimensionality, got {a.ndim} and {b.ndim}")
    return convolve_p(a, b, mode=mode, method=method)


def _axis_list(axes: Any, ndim: int, who: str) -> list[int]:
    out = [int(ax) + ndim if int(ax) < 0 else int(ax) for ax in axes]
    if any(not 0 <= ax < ndim for ax in out) or len(set(out)) != len(out):
        raise ValueError(f"convolve: {who} {list(axes)} are not distinct axes of an array of {ndim} dimensions")
    return out


def _convolve_axes(a: Any, b: Any, axes: Any, dot_axes: Any, mode: str, method: str) -> Any:
    """autograd's generalized convolve, from the N-dimensional one: both
    inputs laid out as (others of in1, others of in2, contracted, convolved),
    the contracted axis convolved with ``in2`` flipped along it and read at
    its center (``sum_d a[d] b[d]``), then the convolved axes cropped to the mode."""
    if axes is None:
        axes = (list(range(a.ndim)), list(range(a.ndim)))
    if dot_axes is None:
        dot_axes = ((), ())
    conv_a, conv_b = _axis_list(axes[0], a.ndim, "axes"), _axis_list(axes[1], b.ndim, "axes")
    dot_a, dot_b = _axis_list(dot_axes[0], a.ndim, "dot_axes"), _axis_list(dot_axes[1], b.ndim, "dot_axes")
    if len(conv_a) != len(conv_b) or len(dot_a) != len(dot_b):
        raise ValueError("convolve: axes and dot_axes must pair as many axes of in1 as of in2")
    if set(conv_a) & set(dot_a) or set(conv_b) & set(dot_b):
        raise ValueError("convolve: an axis cannot be both convolved and contracted")
    if any(a.shape[i] != b.shape[j] for i, j in zip(dot_a, dot_b)):
        raise ValueError("convolve: the dot_axes of in1 and in2 must have the same lengths")
    na = [a.shape[i] for i in conv_a]
    nb = [b.shape[j] for j in conv_b]
    if mode == "valid" and not (all(x >= y for x, y in zip(na, nb)) or all(x <= y for x, y in zip(na, nb))):
        raise ValueError("convolve: for 'valid' mode, one must be at least as large as the other "
                         "in every convolved dimension")
    rest_a = [i for i in range(a.ndim) if i not in conv_a and i not in dot_a]
    rest_b = [j for j in range(b.ndim) if j not in conv_b and j not in dot_b]
    sa, sb = [a.shape[i] for i in rest_a], [b.shape[j] for j in rest_b]
    D = int(np.prod([a.shape[i] for i in dot_a], dtype=int))
    A = w.reshape_c(w.transpose(a, rest_a + dot_a + conv_a),
                    (int(np.prod(sa, dtype=int)), 1, D, *na))
    B = w.reshape_c(w.transpose(b, rest_b + dot_b + conv_b),
                    (1, int(np.prod(sb, dtype=int)), D, *nb))
    full = convolve_p(A, w.flip(B, axis=2), mode="full", method=method)[:, :, D - 1]
    if mode != "full":
        index = []
        for x, y in zip(na, nb):
            size = x if mode == "same" else abs(x - y) + 1
            start = (x + y - 1 - size) // 2 if mode == "same" else min(x, y) - 1
            index.append(slice(start, start + size))
        full = full[(slice(None), slice(None), *index)]
    return w.reshape_c(full, (*sa, *sb, *full.shape[2:]))
