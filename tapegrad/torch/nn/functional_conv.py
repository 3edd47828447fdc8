"""``torch.nn.functional``'s convolutions and poolings (re-exported by ``functional``).

``conv1d``, ``conv2d`` and ``conv_transpose2d`` are one primitive of
``tapegrad.torch._conv`` each (plus the bias), named ``ConvolutionBackward0``
with the inputs ``(input, weight, bias)`` as PyTorch's; an unbatched input
goes through ``unsqueeze(0)`` and ``squeeze(0)`` as in PyTorch.
``max_pool2d`` is the ``pool_max`` primitive (``MaxPool2DWithIndicesBackward0``:
the gradient goes to each window's first max), ``max_pool1d`` the same
between an ``unsqueeze`` and a ``squeeze`` (PyTorch's graph);
``avg_pool2d`` a convolution with ones divided by PyTorch's divisors
(``AvgPool2DBackward0``); ``adaptive_avg_pool2d`` two products with
averaging matrices (``AdaptiveAvgPool2DBackward0``), or a mean for output 1.

Examples:
    >>> x = torch.ones(1, 1, 4, 4, requires_grad=True)
    >>> F.conv2d(x, torch.ones(1, 1, 3, 3)).grad_fn
    <ConvolutionBackward0 object at 0x...>
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.core.traced import value
from tapegrad.torch import _conv as C
from tapegrad.torch._graph import SCALAR_TYPE
from tapegrad.torch._shape_errors import conv_type_clash
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _result

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
    "max_pool1d", "max_pool2d",
]

Ints = tuple[int, ...]


def _tuple(v: Any, nd: int) -> Ints:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * nd
    t = tuple(int(a) for a in v)
    return t * nd if len(t) == 1 else t


def _conv_pads(padding: Any, k: Ints, dilation: Ints, stride: Ints) -> C.Pads:
    nd = len(k)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        tot = [d * (kk - 1) for kk, d in zip(k, dilation)]
        if any(t % 2 for t in tot):
            warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                          "zero-padded copy of the input be created", UserWarning, stacklevel=4)
        return tuple((t // 2, t - t // 2) for t in tot)
    return tuple((p, p) for p in _tuple(padding, nd))


def _conv_nd(nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,  # noqa: A002
             dilation: Any, groups: int) -> Tensor:
    if input.ndim == nd + 1:
        return _conv_nd(nd, input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    if input.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to conv{nd}d, but got "
                           f"input of size: {list(input.shape)}")
    k = tuple(weight.shape[2:])
    st, dil = _tuple(stride, nd), _tuple(dilation, nd)
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
                           f"{input.shape[1]} channels instead")
    try:
        out = _add_bias(C.conv(input._value, weight._value, stride=st, pad=_conv_pads(padding, k, dil, st),
                               dilation=dil, groups=groups), bias, nd)
    except (TypeError, ValueError) as e:
        raise _conv_devices(input, weight, bias) or e from None
    return _result(out, "ConvolutionBackward0", (input, weight, bias))


def _conv_devices(input: Tensor, weight: Tensor, bias: Tensor | None) -> RuntimeError | None:  # noqa: A002
    """PyTorch's error for a convolution's tensors on two devices, else None."""
    return conv_type_clash(input._value, weight._value, None if bias is None else bias._value, SCALAR_TYPE)


def _add_bias(out: Any, bias: Tensor | None, nd: int) -> Any:
    return out if bias is None else tnp.add(out, tnp.reshape(bias._value, (-1,) + (1,) * nd))


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D cross-correlation of ``input`` ``(N, C, L)`` with ``weight`` ``(O, C/groups, K)``."""
    return _conv_nd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``input`` ``(N, C, H, W)`` with ``weight`` ``(O, C/groups, kH, kW)``;
    ``padding`` an int, a pair, ``'valid'`` or ``'same'``."""
    return _conv_nd(2, input, weight, bias, stride, padding, dilation, groups)


def _conv_t_nd(nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,  # noqa: A002
               padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    if input.ndim == nd + 1:
        return _conv_t_nd(nd, input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                          dilation).squeeze(0)
    k = tuple(weight.shape[2:])
    st, pad, op, dil = (_tuple(v, nd) for v in (stride, padding, output_padding, dilation))
    if input.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got "
                           f"{input.shape[1]} channels instead")
    size = tuple((n - 1) * s - 2 * p + d * (kk - 1) + o + 1
                 for n, s, p, d, kk, o in zip(input.shape[2:], st, pad, dil, k, op))
    try:
        out = _add_bias(C.conv_t(input._value, weight._value, stride=st, pad=tuple((p, p) for p in pad),
                                 dilation=dil, groups=groups, spatial=size), bias, nd)
    except (TypeError, ValueError) as e:
        raise _conv_devices(input, weight, bias) or e from None
    return _result(out, "ConvolutionBackward0", (input, weight, bias))


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transpose of ``conv1d``; ``weight`` is ``(C_in, C_out/groups, K)``."""
    return _conv_t_nd(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transpose of ``conv2d`` (the gradient of a convolution in its input);
    ``weight`` is ``(C_in, C_out/groups, kH, kW)``."""
    return _conv_t_nd(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


# --- pooling ------------------------------------------------------------------------------------------


def _pool_geometry(size: Sequence[int], k: Ints, st: Ints, pad: Ints, dil: Ints, ceil_mode: bool) -> tuple[Ints, C.Pads]:
    """PyTorch's output size per dim, and the (low, high) padding whose windows give it."""
    outs, pads = [], []
    for n, kk, s, p, d in zip(size, k, st, pad, dil):
        span = n + 2 * p - d * (kk - 1) - 1
        o = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        if o < 1:
            raise RuntimeError(f"Given input size: too small for kernel size {kk}: calculated output size {o}")
        outs.append(o)
        pads.append((p, max(p, (o - 1) * s + d * (kk - 1) + 1 - n - p)))
    return tuple(outs), tuple(pads)


def _pool_args(kernel_size: Any, stride: Any, padding: Any, nd: int) -> tuple[Ints, Ints, Ints]:
    k = _tuple(kernel_size, nd)
    st = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, nd)
    return k, st, _tuple(padding, nd)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The max over each ``kernel_size`` window of the last two dims (``MaxPool2DWithIndicesBackward0``);
    with ``return_indices`` also each max's flat index into ``H * W``."""
    k, st, pad = _pool_args(kernel_size, stride, padding, 2)
    dil = _tuple(dilation, 2)
    for p, kk, d in zip(pad, k, dil):
        if p > ((kk - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={kk} and dilation={d}")
    _, pads = _pool_geometry(input.shape[-2:], k, st, pad, dil, ceil_mode)
    kw = {"kernel": k, "stride": st, "pad": pads, "dilation": dil}
    out = _result(C.pool_max(input._value, **kw), "MaxPool2DWithIndicesBackward0", (input,))
    if not return_indices:
        return out
    return out, _new(_indices(value(input._value), input.shape[-1], kw))


def _indices(x: Any, width: int, kw: dict[str, Any]) -> Any:
    """The flat ``h * W + w`` index in ``x`` of each window's (first) max, as PyTorch's ``int64``."""
    xp = array_module(x)
    n = C.pool_argmax(x, **kw)  # into the flattened window
    (_, kw_), (sh, sw), ((ph, _), (pw, _)), (dh, dw) = kw["kernel"], kw["stride"], kw["pad"], kw["dilation"]
    oh, ow = n.shape[-2:]
    h = xp.arange(oh)[:, None] * sh - ph + (n // kw_) * dh
    w = xp.arange(ow)[None, :] * sw - pw + (n % kw_) * dw
    return (h * width + w).astype(np.int64)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The max over each window of the last dim: ``max_pool2d`` of ``input.unsqueeze(-2)``,
    squeezed back (PyTorch's graph: ``SqueezeBackward1``)."""
    k, st, pad = _pool_args(kernel_size, stride, padding, 1)
    r = max_pool2d(input.unsqueeze(-2), (1,) + k, (1,) + st, (0,) + pad, (1,) + _tuple(dilation, 1), ceil_mode,
                   return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each window of the last two dims, with PyTorch's divisors
    (``count_include_pad``, ``divisor_override``; windows cut at the padded edge) (``AvgPool2DBackward0``)."""
    k, st, pad = _pool_args(kernel_size, stride, padding, 2)
    for p, kk in zip(pad, k):
        if p > kk // 2:
            raise RuntimeError(f"pad should be at most half of kernel size, but got pad={p} and kernel_size={kk}")
    size = tuple(input.shape[-2:])
    outs, pads = _pool_geometry(size, k, st, pad, (1, 1), ceil_mode)
    v = input._value
    lead = tuple(input.shape[:-2])
    xp = array_module(value(v))
    dtype = value(v).dtype
    ones = xp.ones((1, 1) + k, dtype)
    s = C.conv(tnp.reshape(v, (-1, 1) + size), ones, stride=st, pad=pads, dilation=(1, 1), groups=1)
    if divisor_override:
        div: Any = float(divisor_override)
    else:
        per = []
        for n, kk, sd, p, o in zip(size, k, st, pad, outs):
            start = np.arange(o) * sd - p
            end = np.minimum(start + kk, n + p)
            per.append(end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0))
        div = xp.asarray(np.outer(per[0], per[1]).astype(dtype))
    return _result(tnp.reshape(tnp.divide(s, div), lead + outs), "AvgPool2DBackward0", (input,))


def _avg_matrix(n: int, o: int, xp: Any, dtype: Any) -> Any:
    a = np.zeros((o, n), dtype)
    for i in range(o):
        lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
        a[i, lo:hi] = 1.0 / (hi - lo)
    return xp.asarray(a)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """The mean over PyTorch's adaptive windows (``floor(i n / o)`` to ``ceil((i + 1) n / o)``)
    of the last two dims (``AdaptiveAvgPool2DBackward0``; a ``mean`` for output size 1)."""
    h, w = input.shape[-2:]
    osz = (output_size, output_size) if output_size is None or isinstance(output_size, int) else tuple(output_size)
    oh, ow = (h if osz[0] is None else osz[0]), (w if osz[1] is None else osz[1])
    if (oh, ow) == (1, 1):
        return input.mean((-1, -2), keepdim=True)
    v = input._value
    xp = array_module(value(v))
    dtype = value(v).dtype
    r = tnp.matmul(tnp.matmul(_avg_matrix(h, oh, xp, dtype), v), _avg_matrix(w, ow, xp, dtype).T)
    return _result(r, "AdaptiveAvgPool2DBackward0", (input,))
