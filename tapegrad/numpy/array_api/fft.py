"""The array API standard's ``fft`` extension (2023.12), differentiable:
``tapegrad.numpy.fft`` under the standard's signatures (``n``, ``axis``,
``s``, ``axes`` and ``norm`` keyword-only), with ``hfft`` and ``ihfft``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.numpy import fft as _f
from tapegrad.numpy import wrap as _w
from tapegrad.numpy.array_api._common import check_device

__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfftn", "rfft", "rfftfreq", "rfftn"]

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return _f.fft(x, n, axis, norm)


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return _f.ifft(x, n, axis, norm)


def fftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return _f.fftn(x, s, axes, norm)


def ifftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return _f.ifftn(x, s, axes, norm)


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return _f.rfft(x, n, axis, norm)


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return _f.irfft(x, n, axis, norm)


def rfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return _f.rfftn(x, s, axes, norm)


def irfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return _f.irfftn(x, s, axes, norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The FFT of a Hermitian-symmetric signal (a real spectrum): ``irfft(conj(x))``, norm swapped."""
    return _f.irfft(_w.conjugate(x), n, axis, _SWAP[norm])


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``hfft``: ``conj(rfft(x))``, norm swapped."""
    return _w.conjugate(_f.rfft(x, n, axis, _SWAP[norm]))


def fftfreq(n: int, /, *, d: float = 1.0, device: Any = None) -> Any:
    check_device(device)
    return np.fft.fftfreq(n, d)


def rfftfreq(n: int, /, *, d: float = 1.0, device: Any = None) -> Any:
    check_device(device)
    return np.fft.rfftfreq(n, d)


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    return _f.fftshift(x, axes)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    return _f.ifftshift(x, axes)
