"""tapegrad.numpy.fft: NumPy's ``numpy.fft``, differentiable.

Same names, signatures and results as NumPy (``n``/``s``, ``axis``/``axes``,
``norm`` in ``"backward" "ortho" "forward"``). Called on plain arrays each
function is NumPy's own. Three primitives (complex FFT in any number of
axes, ``rfft``, ``irfft``) with their VJP rules, grouped here.

The transforms are linear, so each VJP is the transpose of the linear map,
in JAX's convention (no conjugation): the DFT matrix is symmetric, so the
transpose of ``fftn`` is ``fftn`` with the same normalisation, followed by
the transpose of the zero-padding / truncation to ``s`` (a truncation /
zero-padding back to the input's length). ``rfft``'s transpose zero-pads
the cotangent to ``n``, transforms it and keeps the real part; ``irfft``'s
weights the bins by the Hermitian fold (1 for DC and Nyquist, 2 for the
others) and conjugates. Axes are counted from the end inside the rules, so
cotangents may carry leading batch axes; the batching rules (``vmap``) count
the per-example axes from the end too, and the batch is one more leading axis.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w

__all__ = ["fft", "fft2", "fftn", "fftshift", "ifft", "ifft2", "ifftn", "ifftshift", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftn"]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _traced(*xs: Any) -> bool:
    return builtins.any(type(x) is Traced for x in xs)


def _norm(norm: Any) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
    return norm


def _resize(x: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
    """Truncate or zero-pad ``x`` along ``axes`` (negative) to ``sizes``."""
    for ax, size in zip(axes, sizes):
        cur = x.shape[ax]
        tail = (slice(None),) * (-ax - 1)
        if cur > size:
            x = x[(Ellipsis, slice(0, size)) + tail]
        elif cur < size:
            widths = [(0, 0)] * x.ndim
            widths[x.ndim + ax] = (0, size - cur)
            x = w.pad(x, widths)
    return x


# --- complex transforms (any number of axes) ---------------------------------------------


def _c2c(a: Any, s: tuple[int, ...], axes: tuple[int, ...], norm: str, inverse: bool) -> Any:
    xp = array_module(a)
    return (xp.fft.ifftn if inverse else xp.fft.fftn)(a, s, axes, norm)


c2c_p = primitive(_c2c, "fft", batched=True)


def _vjp_c2c(ans: Any, a: Any, s: Any, axes: Any, norm: str, inverse: bool) -> Any:
    sizes = tuple(a.shape[ax] for ax in axes)
    return lambda g: _resize(c2c_p(g, s=s, axes=axes, norm=norm, inverse=inverse), axes, sizes)


defvjp(c2c_p, _vjp_c2c)


def _kwargs(fn: Any, args: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments after the first as keywords (the primitives' own names)."""
    names = fn.__code__.co_varnames[1 : fn.__code__.co_argcount]
    return {**dict(zip(names, args[1:])), **kwargs}


def _from_end(axis: int, nd: int) -> int:
    """Per-example axis ``axis`` (of ``nd``) counted from the end: the same
    axis of the batched array, and the form the rules expect."""
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    return axis % nd - nd


def _batch_c2c(args: Any, batched: Any, size: int, **kwargs: Any) -> Any:
    # the per-example axes (None: all of them, or the last len(s)) counted from the end
    kw = _kwargs(_c2c, args, kwargs)
    nd = args[0].ndim - 1
    axes, s = kw["axes"], kw["s"]
    if axes is None:
        axes = range(-(nd if s is None else len(s)), 0)
    kw["axes"] = tuple(_from_end(ax, nd) for ax in axes)
    return c2c_p(args[0], **kw)


defbatch(c2c_p, _batch_c2c)

# --- real transforms (one axis) ----------------------------------------------------------------


def _rfft(a: Any, n: int, axis: int, norm: str) -> Any:
    return array_module(a).fft.rfft(a, n, axis, norm)


def _irfft(a: Any, n: int, axis: int, norm: str) -> Any:
    return array_module(a).fft.irfft(a, n, axis, norm)


rfft_p = primitive(_rfft, "rfft", batched=True)
irfft_p = primitive(_irfft, "irfft", batched=True)


def _vjp_rfft(ans: Any, a: Any, n: int, axis: int, norm: str) -> Any:
    size = a.shape[axis]
    def vjp(g: Any) -> Any:
        full = c2c_p(_resize(g, (axis,), (n,)), s=(n,), axes=(axis,), norm=norm, inverse=False)
        return _resize(w.real(full), (axis,), (size,))
    return vjp


def _vjp_irfft(ans: Any, a: Any, n: int, axis: int, norm: str) -> Any:
    size = a.shape[axis]
    bins = n // 2 + 1
    weight = array_module(a).full(bins, 2.0)  # (on the input's device)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    weight = weight.reshape((bins,) + (1,) * (-axis - 1))
    def vjp(g: Any) -> Any:
        h = rfft_p(g, n=n, axis=axis, norm=_SWAP[norm])
        h = w.conjugate(h) * weight.astype(value(g).dtype)
        return _resize(h, (axis,), (size,))
    return vjp


defvjp(rfft_p, _vjp_rfft)
defvjp(irfft_p, _vjp_irfft)


def _batch_real(prim: Any, impl: Any) -> None:
    def rule(args: Any, batched: Any, size: int, **kwargs: Any) -> Any:
        kw = _kwargs(impl, args, kwargs)
        kw["axis"] = _from_end(kw["axis"], args[0].ndim - 1)
        return prim(args[0], **kw)

    defbatch(prim, rule)


_batch_real(rfft_p, _rfft)
_batch_real(irfft_p, _irfft)

# --- the public functions ------------------------------------------------------------------------


def _nd_args(a: Any, s: Any, axes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """NumPy's ``s``/``axes`` resolution, with axes made negative."""
    nd = a.ndim
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    axes = tuple(d.normalize_axis(ax, nd) - nd for ax in axes)
    if s is None:
        s = tuple(a.shape[ax] for ax in axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    s = tuple(a.shape[ax] if int(n) == -1 else int(n) for n, ax in zip(s, axes))
    for n in s:
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return s, axes


def _one_axis(a: Any, n: Any, axis: int) -> tuple[int, int]:
    ax = d.normalize_axis(axis, a.ndim) - a.ndim
    n = a.shape[ax] if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n, ax


def fft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """1-D discrete Fourier transform, as ``numpy.fft.fft``."""
    if not _traced(a):
        return np.fft.fft(a, n, axis, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    n, ax = _one_axis(a, n, axis)
    return c2c_p(a, s=(n,), axes=(ax,), norm=_norm(norm), inverse=False)


def ifft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """1-D inverse discrete Fourier transform, as ``numpy.fft.ifft``."""
    if not _traced(a):
        return np.fft.ifft(a, n, axis, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    n, ax = _one_axis(a, n, axis)
    return c2c_p(a, s=(n,), axes=(ax,), norm=_norm(norm), inverse=True)


def fftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """N-D discrete Fourier transform, as ``numpy.fft.fftn``."""
    if not _traced(a):
        return np.fft.fftn(a, s, axes, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    s, axes = _nd_args(a, s, axes)
    return c2c_p(a, s=s, axes=axes, norm=_norm(norm), inverse=False)


def ifftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """N-D inverse discrete Fourier transform, as ``numpy.fft.ifftn``."""
    if not _traced(a):
        return np.fft.ifftn(a, s, axes, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    s, axes = _nd_args(a, s, axes)
    return c2c_p(a, s=s, axes=axes, norm=_norm(norm), inverse=True)


def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    """2-D discrete Fourier transform, as ``numpy.fft.fft2``."""
    return fftn(a, s, axes, norm, out)


def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    """2-D inverse discrete Fourier transform, as ``numpy.fft.ifft2``."""
    return ifftn(a, s, axes, norm, out)


def rfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """1-D transform of a real input (the non-negative frequencies), as ``numpy.fft.rfft``."""
    if not _traced(a):
        return np.fft.rfft(a, n, axis, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    n, ax = _one_axis(a, n, axis)
    return rfft_p(a, n=n, axis=ax, norm=_norm(norm))


def irfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """Inverse of ``rfft`` (a real output of length ``n``), as ``numpy.fft.irfft``."""
    if not _traced(a):
        return np.fft.irfft(a, n, axis, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    ax = d.normalize_axis(axis, a.ndim) - a.ndim
    n = 2 * (a.shape[ax] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return irfft_p(a, n=n, axis=ax, norm=_norm(norm))


def rfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """N-D transform of a real input, as ``numpy.fft.rfftn``: ``rfft`` along the
    last of ``axes``, then the complex transform along the others."""
    if not _traced(a):
        return np.fft.rfftn(a, s, axes, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    s, axes = _nd_args(a, s, axes)
    norm = _norm(norm)
    a = rfft_p(a, n=s[-1], axis=axes[-1], norm=norm)
    if len(axes) > 1:
        a = c2c_p(a, s=s[:-1], axes=axes[:-1], norm=norm, inverse=False)
    return a


def irfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """Inverse of ``rfftn``, as ``numpy.fft.irfftn``: the inverse complex
    transform along all of ``axes`` but the last, then ``irfft`` along it."""
    if not _traced(a):
        return np.fft.irfftn(a, s, axes, norm, **({"out": out} if out is not None else {}))  # (CuPy's has no out=)
    last_given = s is not None
    s, axes = _nd_args(a, s, axes)
    if not last_given:
        s = s[:-1] + (2 * (a.shape[axes[-1]] - 1),)
        if s[-1] < 1:
            raise ValueError(f"Invalid number of FFT data points ({s[-1]}) specified.")
    norm = _norm(norm)
    if len(axes) > 1:
        a = c2c_p(a, s=s[:-1], axes=axes[:-1], norm=norm, inverse=True)
    return irfft_p(a, n=s[-1], axis=axes[-1], norm=norm)


def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    """2-D transform of a real input, as ``numpy.fft.rfft2``."""
    return rfftn(a, s, axes, norm, out)


def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    """Inverse of ``rfft2``, as ``numpy.fft.irfft2``."""
    return irfftn(a, s, axes, norm, out)


def _shifts(x: Any, axes: Any, sign: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    nd = np.ndim(x) if not _traced(x) else x.ndim
    shape = np.shape(x) if not _traced(x) else x.shape
    if axes is None:
        axes = tuple(range(nd))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(d.normalize_axis(int(ax), nd) for ax in axes)
    return tuple(sign * (shape[ax] // 2) for ax in axes), axes


def fftshift(x: Any, axes: Any = None) -> Any:
    """The zero-frequency term moved to the centre, as ``numpy.fft.fftshift`` (a roll)."""
    if not _traced(x):
        return np.fft.fftshift(x, axes)
    shift, axes = _shifts(x, axes, 1)
    return w.roll(x, shift, axes)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """Inverse of ``fftshift``, as ``numpy.fft.ifftshift`` (a roll)."""
    if not _traced(x):
        return np.fft.ifftshift(x, axes)
    shift, axes = _shifts(x, axes, -1)
    return w.roll(x, shift, axes)


def __getattr__(name: str) -> Any:
    # the rest of numpy.fft (fftfreq, fftshift, ...)
    return getattr(np.fft, name)


