"""The facade's convolution and max-pooling primitives (``nn.functional.conv*``, ``max_pool*``).

Arrays are laid out as PyTorch's: ``x`` is ``(N, C, *S)``, a weight ``(O, C/groups, *K)``.
Each option is a tuple per spatial dim: ``stride``, ``dilation``, ``pad`` (pairs
``(low, high)``: "same" pads unevenly) and ``groups`` an int.

- ``conv(x, w)``: the cross-correlation PyTorch calls convolution: an im2col
  by a strided view (``sliding_window_view``, copied with the output's pixels
  innermost) and one ``matmul``, the groups broadcast.
- ``conv_t(g, w, spatial=S)``: its transpose in ``x`` (PyTorch's transposed
  convolution): ``g @ w`` per window, added back into place one kernel
  offset at a time (a loop over the kernel's few offsets, not the pixels).
- ``conv_w(x, g, ksize=K)``: its transpose in ``w``: the correlation of the
  windows of ``x`` with ``g`` (one ``matmul`` over batch and pixels).

The three are bilinear and each one's VJP rules are the other two, so every
order of derivative is again one of them. Their batching rules put the batch
in ``N``, or, where a weight is batched, in the groups.

- ``pool_max(x)``: the max over each window (``-inf`` padding), on the last
  ``len(kernel)`` axes of ``x`` (any leading axes).
- ``pool_max_t(g, x)``: ``g`` added at each window's argmax in ``x`` (first
  max on ties, as PyTorch), the VJP of ``pool_max``; ``pool_take(h, x)``:
  ``h`` read at those argmaxes, its transpose. Both are linear in their
  first argument; ``x`` only picks the places (no gradient).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.primitive import REGISTRY, mark_batched
from tapegrad.tracer import value

__all__ = ["conv", "conv_t", "conv_w", "pool_argmax", "pool_max", "pool_max_t", "pool_take"]

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


# --- the arrays' arithmetic ------------------------------------------------------------------------


def _windows(x: Any, k: Ints, stride: Ints, pad: Pads, dilation: Ints, fill: float = 0.0) -> Any:
    """The windows of padded ``x`` (last ``len(k)`` axes spatial): ``(..., *out, *k)``, a view."""
    xp = array_module(x)
    nd = len(k)
    lead = x.ndim - nd
    if any(p != (0, 0) for p in pad):
        x = xp.pad(x, [(0, 0)] * lead + list(pad), constant_values=fill)
    eff = tuple((kk - 1) * d + 1 for kk, d in zip(k, dilation))
    win = xp.lib.stride_tricks.sliding_window_view(x, eff, axis=tuple(range(lead, lead + nd)))
    sl = (slice(None),) * lead + tuple(slice(None, None, s) for s in stride) + tuple(
        slice(None, None, d) for d in dilation)
    return win[sl]


def _cols(x: Any, k: Ints, stride: Ints, pad: Pads, dilation: Ints, order: tuple[int, ...]) -> Any:
    """The im2col of ``x``: its windows ``(N, C, *out, *K)`` copied in axis ``order``
    (the output's spatial axes last, so that the copy moves whole rows)."""
    win = _windows(x, k, stride, pad, dilation)
    return array_module(x).ascontiguousarray(win.transpose(order))


def _conv(x: Any, w: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int) -> Any:
    xp = array_module(x)
    nd = w.ndim - 2
    n, o = x.shape[0], w.shape[0]
    cols = _cols(x, w.shape[2:], stride, pad, dilation, (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd)))
    out = cols.shape[2 + nd:]
    cols = cols.reshape(n, groups, -1, math.prod(out))  # (N, g, C/g * K, P)
    r = xp.matmul(w.reshape(groups, o // groups, -1), cols)  # (N, g, O/g, P)
    return r.reshape((n, o) + out)


def _conv_t(g: Any, w: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int, spatial: Ints) -> Any:
    xp = array_module(g)
    k = w.shape[2:]
    n, o, cg = g.shape[0], w.shape[0], w.shape[1]
    out = g.shape[2:]
    wt = w.reshape(groups, o // groups, -1).swapaxes(-1, -2)  # (g, C/g * K, O/g)
    cols = xp.matmul(wt, g.reshape(n, groups, o // groups, -1))  # (N, g, C/g * K, P)
    cols = cols.reshape((n, cg * groups) + k + out)
    size = spatial
    full = xp.zeros((n, cg * groups) + tuple(s + lo + hi for s, (lo, hi) in zip(size, pad)),
                    dtype=xp.result_type(g, w))
    for kk in itertools.product(*(range(m) for m in k)):
        sl = tuple(slice(j * d, j * d + s * (q - 1) + 1, s) for j, d, s, q in zip(kk, dilation, stride, out))
        full[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kk]
    return full[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pad))]


def _conv_w(x: Any, g: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int, ksize: Ints) -> Any:
    xp = array_module(x)
    nd = len(ksize)
    n, c, o = x.shape[0], x.shape[1], g.shape[1]
    out = g.shape[2:]
    win_order = (1, *range(2 + nd, 2 + 2 * nd), 0, *range(2, 2 + nd))  # (C, *K, N, *out)
    win = _windows(x, ksize, stride, pad, dilation)
    win = win[(slice(None), slice(None)) + tuple(slice(0, q) for q in out)]
    cols = xp.ascontiguousarray(win.transpose(win_order)).reshape(groups, -1, n * math.prod(out))
    gt = xp.moveaxis(g.reshape(n, groups, o // groups, -1), 0, 2).reshape(groups, o // groups, -1)
    r = xp.matmul(gt, cols.swapaxes(-1, -2))  # (g, O/g, C/g * K)
    return r.reshape((o, c // groups) + tuple(ksize))


def _argmax(x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    """The index (into the flattened window) of each window's first max: ``(..., *out)``."""
    win = _windows(x, kernel, stride, pad, dilation, -np.inf)
    flat = win.reshape(win.shape[:win.ndim - len(kernel)] + (-1,))
    return flat.argmax(-1)


def _pool_max(x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    win = _windows(x, kernel, stride, pad, dilation, -np.inf)
    return win.max(axis=tuple(range(win.ndim - len(kernel), win.ndim)))


def _pool_take(h: Any, x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    xp = array_module(h)
    idx = _argmax(x, kernel, stride, pad, dilation)
    win = _windows(h, kernel, stride, pad, dilation)
    flat = win.reshape(win.shape[:win.ndim - len(kernel)] + (-1,))
    return xp.take_along_axis(flat, idx[..., None], -1)[..., 0]


def _pool_max_t(g: Any, x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    xp = array_module(g)
    nd = len(kernel)
    idx = _argmax(x, kernel, stride, pad, dilation)
    lead = g.ndim - nd
    out = g.shape[lead:]
    size = x.shape[x.ndim - nd:]
    full = xp.zeros(g.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(size, pad)), dtype=g.dtype)
    zero = xp.zeros((), g.dtype)
    for n, kk in enumerate(itertools.product(*(range(m) for m in kernel))):
        sl = tuple(slice(j * d, j * d + s * (o - 1) + 1, s) for j, d, s, o in zip(kk, dilation, stride, out))
        full[(slice(None),) * lead + sl] += xp.where(idx == n, g, zero)
    return full[(slice(None),) * lead + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pad))]


pool_argmax = _argmax  # (no gradient: plain arrays)
_OWN_FROM = len(REGISTRY)  # this module's primitives follow (see mark_batched)
conv = tg.primitive(_conv, "conv")
conv_t = tg.primitive(_conv_t, "conv_t")
conv_w = tg.primitive(_conv_w, "conv_w")
pool_max = tg.primitive(_pool_max, "pool_max")
pool_max_t = tg.primitive(_pool_max_t, "pool_max_t")
pool_take = tg.primitive(_pool_take, "pool_take")


# --- VJP rules: each bilinear map's transposes are the other two -----------------------------------


def _spatial(a: Any) -> Ints:
    return tuple(np.shape(a)[2:])


def _rule(make: Any) -> Any:
    """A VJP maker whose rule takes cotangents with leading batch axes (more
    axes than the result's): those are mapped with ``tg.vmap``, which runs the
    rule once on the whole batch through the batching rules below."""

    def maker(ans: Any, *args: Any, **kw: Any) -> Any:
        rule = make(ans, *args, **kw)
        nd = np.ndim(ans)

        def batched(g: Any) -> Any:
            shape = tuple(np.shape(g))
            if len(shape) == nd:
                return rule(g)
            lead = shape[:len(shape) - nd]
            r = tg.vmap(rule)(tnp.reshape(g, (-1,) + shape[len(lead):]))
            return tnp.reshape(r, lead + tuple(np.shape(r))[1:])

        return batched

    return maker


def _places(ans: Any, a: Any, x: Any, **kw: Any) -> Any:
    """The gradient in ``x``, which only picks the places: 0 (away from ties)."""
    return lambda g: tnp.zeros(tuple(np.shape(g))[:np.ndim(g) - np.ndim(ans)] + tuple(np.shape(x)),
                               dtype=np.result_type(value(x)))


tg.defvjp(conv, _rule(lambda ans, x, w, **kw: lambda g: conv_t(g, w, spatial=_spatial(x), **kw)),
          _rule(lambda ans, x, w, **kw: lambda g: conv_w(x, g, ksize=_spatial(w), **kw)))
tg.defvjp(conv_t, _rule(lambda ans, g, w, spatial, **kw: lambda h: conv(h, w, **kw)),
          _rule(lambda ans, g, w, spatial, **kw: lambda h: conv_w(h, g, ksize=_spatial(w), **kw)))
tg.defvjp(conv_w, _rule(lambda ans, x, g, ksize, **kw: lambda h: conv_t(g, h, spatial=_spatial(x), **kw)),
          _rule(lambda ans, x, g, ksize, **kw: lambda h: conv(x, h, **kw)))
tg.defvjp(pool_max, _rule(lambda ans, x, **kw: lambda g: pool_max_t(g, x, **kw)))
tg.defvjp(pool_max_t, _rule(lambda ans, g, x, **kw: lambda h: pool_take(h, x, **kw)), _places)
tg.defvjp(pool_take, _rule(lambda ans, h, x, **kw: lambda g: pool_max_t(g, x, **kw)), _places)


# --- batching rules (vmap) ---------------------------------------------------------------------------


def _fold(a: Any, size: int) -> Any:
    """Batched ``(B, N, C, ...)`` as ``(N, B*C, ...)``: the batch among the channels."""
    s = tuple(np.shape(a))
    return tnp.reshape(tnp.moveaxis(a, 0, 1), (s[1], s[0] * s[2]) + s[3:])


def _unfold(a: Any, size: int) -> Any:
    """``(N, B*C, ...)`` back to ``(B, N, C, ...)``."""
    s = tuple(np.shape(a))
    return tnp.moveaxis(tnp.reshape(a, (s[0], size, s[1] // size) + s[2:]), 1, 0)


def _bcast(a: Any, b: bool, size: int) -> Any:
    return a if b else tnp.broadcast_to(a, (size,) + tuple(np.shape(a)))


def _merge(a: Any) -> Any:
    s = tuple(np.shape(a))
    return tnp.reshape(a, (s[0] * s[1],) + s[2:])


def _split(a: Any, size: int) -> Any:
    s = tuple(np.shape(a))
    return tnp.reshape(a, (size, s[0] // size) + s[1:])


def _batch_data(prim: Any) -> Any:
    """``conv`` and ``conv_t``: (data, weight): the batch into N when only the data
    is batched, else into the groups."""

    def rule(args: Any, batched: Any, size: int, groups: int, **kw: Any) -> Any:
        (a, w), (ba, bw) = args, batched
        if not bw:
            return _split(prim(_merge(a), w, groups=groups, **kw), size)
        wf = _merge(w)  # (B*O, C/groups, *K): b-major, as the folded channels
        return _unfold(prim(_fold(_bcast(a, ba, size), size), wf, groups=groups * size, **kw), size)

    tg.defbatch(prim, rule)


_batch_data(conv)
_batch_data(conv_t)


def _batch_conv_w(args: Any, batched: Any, size: int, groups: int, **kw: Any) -> Any:
    (x, g), (bx, bg) = args, batched
    r = conv_w(_fold(_bcast(x, bx, size), size), _fold(_bcast(g, bg, size), size), groups=groups * size, **kw)
    return _split(r, size)


tg.defbatch(conv_w, _batch_conv_w)
tg.defbatch(pool_max, lambda args, batched, size, **kw: pool_max(*args, **kw))  # (any leading axes)


def _batch_pool2(prim: Any) -> Any:
    def rule(args: Any, batched: Any, size: int, **kw: Any) -> Any:
        return prim(*[_bcast(a, b, size) for a, b in zip(args, batched)], **kw)

    tg.defbatch(prim, rule)


_batch_pool2(pool_max_t)
_batch_pool2(pool_take)
mark_batched(_OWN_FROM)  # every rule here takes leading batch axes (see _rule)
