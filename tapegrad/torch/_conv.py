"""The facade's convolution and max-pooling primitives (``nn.functional.conv*``, ``max_pool*``).

Arrays are laid out as PyTorch's: ``x`` is ``(N, C, *S)``, a weight ``(O, C/groups, *K)``.
Each option is a tuple per spatial dim: ``stride``, ``dilation``, ``pad`` (pairs
``(low, high)``: "same" pads unevenly) and ``groups`` an int.

- ``conv(x, w)``: the cross-correlation PyTorch calls convolution: an im2col
  by a strided view of a channels-last padded copy (``sliding_window_view``,
  copied as ``(N * P, K * C)``, runs of ``kW * C`` contiguous numbers) and one
  ``matmul`` per group.
- ``conv_t(g, w, spatial=S)``: its transpose in ``x`` (PyTorch's transposed
  convolution): one ``matmul`` to columns, added back into place one kernel
  offset at a time (a loop over the kernel's few offsets, not the pixels).
- ``conv_w(x, g, ksize=K)``: its transpose in ``w``: the correlation of the
  windows of ``x`` with ``g`` (one ``matmul`` over batch and pixels).

The three are bilinear and each one's VJP rules are the other two, so every
order of derivative is again one of them. Their batching rules put the batch
in ``N``, or, where a weight is batched, in the groups.

- ``pool_max(x)``: the max over each window (``-inf`` padding), on the last
  ``len(kernel)`` axes of ``x`` (any leading axes): an elementwise ``maximum``
  over the kernel's offsets (a reduction over small strided axes is slow).
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
from tapegrad.core.traced import value

__all__ = ["conv", "conv_t", "conv_w", "pool_argmax", "pool_max", "pool_max_t", "pool_take"]

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


# --- the arrays' arithmetic ------------------------------------------------------------------------


def _cols(x: Any, k: Ints, stride: Ints, pad: Pads, dilation: Ints, groups: int, out: Ints | None = None) -> Any:
    """The im2col of ``x`` ``(N, C, *S)``, channels last: ``(groups, N * P, K * C/groups)``
    (``P`` the output's pixels, the first ``out`` per dim when given, ``K`` the kernel's).

    The padded copy of ``x`` is made channels-last first, so that the im2col copy
    moves runs of ``kW * C`` contiguous numbers (channels-first, it moves rows of
    the output's width: a few numbers, many times slower on small images)."""
    xp = array_module(x)
    nd = len(k)
    n, c = x.shape[:2]
    last = xp.moveaxis(x, 1, -1)  # (N, *S, C), a view
    if any(p != (0, 0) for p in pad):
        size = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pad))
        full = xp.zeros((n,) + size + (c,), x.dtype)
        full[(slice(None),) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pad))] = last
        last = full
    eff = tuple((kk - 1) * d + 1 for kk, d in zip(k, dilation))
    win = xp.lib.stride_tricks.sliding_window_view(last, eff, axis=tuple(range(1, 1 + nd)))  # (N, *o, C, *eff)
    ends: tuple[int | None, ...] = (None,) * nd if out is None else tuple((q - 1) * s + 1 for q, s in zip(out, stride))
    win = win[(slice(None),) + tuple(slice(0, e, s) for e, s in zip(ends, stride))
              + (slice(None),) + tuple(slice(None, None, d) for d in dilation)]
    outs = win.shape[1:1 + nd]
    win = win.reshape((n,) + outs + (groups, c // groups) + tuple(k))
    order = (nd + 1, 0, *range(1, 1 + nd), *range(nd + 3, 2 * nd + 3), nd + 2)  # (g, N, *out, *K, C/g)
    cols = xp.ascontiguousarray(win.transpose(order))
    return cols.reshape(groups, n * math.prod(outs), math.prod(k) * (c // groups)), outs  # (no -1: N may be 0)


def _wmat(w: Any, groups: int) -> Any:
    """A weight ``(O, C/g, *K)`` as ``(g, K * C/g, O/g)``: the im2col's columns by output channels."""
    nd = w.ndim - 2
    o = w.shape[0]
    wg = w.reshape((groups, o // groups) + w.shape[1:])  # (g, O/g, C/g, *K)
    return wg.transpose(0, *range(3, 3 + nd), 2, 1).reshape(groups, math.prod(w.shape[1:]), o // groups)


def _channels_first(r: Any, n: int, out: Ints) -> Any:
    """``(g, N * P, O/g)`` as a contiguous ``(N, O, *out)``."""
    xp = array_module(r)
    g, _, og = r.shape
    r = r.reshape((g, n, math.prod(out), og)).transpose(1, 0, 3, 2)  # (N, g, O/g, P)
    return xp.ascontiguousarray(r).reshape((n, g * og) + tuple(out))


def _channels_last(a: Any, groups: int) -> Any:
    """``(N, O, *out)`` as ``(g, N * P, O/g)`` (a copy)."""
    xp = array_module(a)
    n, o = a.shape[:2]
    p = math.prod(a.shape[2:])
    a = a.reshape(n, groups, o // groups, p).transpose(1, 0, 3, 2)  # (g, N, P, O/g)
    return xp.ascontiguousarray(a).reshape(groups, n * p, o // groups)


def _conv(x: Any, w: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int) -> Any:
    xp = array_module(x)
    cols, out = _cols(x, w.shape[2:], stride, pad, dilation, groups)
    return _channels_first(xp.matmul(cols, _wmat(w, groups)), x.shape[0], out)  # (g, N*P, O/g) first


def _conv_t(g: Any, w: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int, spatial: Ints) -> Any:
    xp = array_module(g)
    nd = w.ndim - 2
    k = w.shape[2:]
    n, cg = g.shape[0], w.shape[1]
    out = g.shape[2:]
    cols = xp.matmul(_channels_last(g, groups), _wmat(w, groups).swapaxes(-1, -2))  # (g, N*P, K*C/g)
    cols = cols.reshape((groups, n) + out + k + (cg,))
    # col2im, channels last: each kernel offset's columns added back into place
    full = xp.zeros((n,) + tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pad)) + (groups, cg),
                    dtype=cols.dtype)
    src_order = (1, *range(2, 2 + nd), 0, 2 + nd)  # (N, *out, g, C/g) of one offset
    for kk, sl in zip(itertools.product(*(range(m) for m in k)), _offsets(k, stride, dilation, out)):
        full[(slice(None),) + sl] += cols[(slice(None),) * (2 + nd) + kk].transpose(src_order)
    inner = full[(slice(None),) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, pad))]
    inner = inner.reshape((n,) + tuple(spatial) + (groups * cg,))
    return xp.ascontiguousarray(xp.moveaxis(inner, -1, 1))


def _conv_w(x: Any, g: Any, stride: Ints, pad: Pads, dilation: Ints, groups: int, ksize: Ints) -> Any:
    xp = array_module(x)
    nd = len(ksize)
    c, o = x.shape[1], g.shape[1]
    cols, _ = _cols(x, ksize, stride, pad, dilation, groups, out=g.shape[2:])  # (g, N*P, K*C/g)
    r = xp.matmul(_channels_last(g, groups).swapaxes(-1, -2), cols)  # (g, O/g, K*C/g)
    r = r.reshape((groups, o // groups) + tuple(ksize) + (c // groups,))
    return xp.ascontiguousarray(r.transpose(0, 1, 2 + nd, *range(2, 2 + nd))).reshape(
        (o, c // groups) + tuple(ksize))


def _offsets(k: Ints, stride: Ints, dilation: Ints, out: Ints) -> list[tuple[slice, ...]]:
    """Per kernel offset (in the flattened window's order), the strided slice of the
    padded spatial axes that holds that offset of every window: ``(*out)`` elements."""
    return [tuple(slice(j * d, j * d + s * (o - 1) + 1, s) for j, d, s, o in zip(kk, dilation, stride, out))
            for kk in itertools.product(*(range(m) for m in k))]


def _padded(x: Any, nd: int, pad: Pads, fill: float) -> Any:
    """``x`` padded with ``fill`` on its last ``nd`` axes (``x`` itself when ``pad`` is nothing)."""
    if all(p == (0, 0) for p in pad):
        return x
    lead, size = x.shape[:x.ndim - nd], x.shape[x.ndim - nd:]
    full = array_module(x).full(lead + tuple(s + lo + hi for s, (lo, hi) in zip(size, pad)), fill, x.dtype)
    full[(slice(None),) * len(lead) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pad))] = x
    return full


def _pool_out(size: Ints, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Ints:
    return tuple((n + lo + hi - (k - 1) * d - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(size, kernel, stride, pad, dilation))


def _pool_max(x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    # an elementwise maximum over the kernel's offsets (a few whole-array ops; a
    # reduction over the small, strided window axes is many times slower)
    xp, nd = array_module(x), len(kernel)
    lead = (slice(None),) * (x.ndim - nd)
    xpad = _padded(x, nd, pad, -np.inf)
    out = _pool_out(x.shape[x.ndim - nd:], kernel, stride, pad, dilation)
    first, *rest = _offsets(kernel, stride, dilation, out)
    m = xpad[lead + first].copy()
    for sl in rest:
        xp.maximum(m, xpad[lead + sl], out=m)  # (NaN propagates, as in max)
    return m


def _argmax(x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    """The index (into the flattened window) of each window's first max (its last
    NaN, if any, as PyTorch): ``(..., *out)``."""
    xp, nd = array_module(x), len(kernel)
    lead = (slice(None),) * (x.ndim - nd)
    m = _pool_max(x, kernel, stride, pad, dilation)
    xpad = _padded(x, nd, pad, -np.inf)
    offsets = _offsets(kernel, stride, dilation, m.shape[m.ndim - nd:])
    idx = xp.zeros(m.shape, np.intp)
    for n in range(len(offsets) - 1, -1, -1):  # backwards: the first max is written last
        xp.copyto(idx, n, where=xpad[lead + offsets[n]] == m)
    if xp.isnan(m).any():  # a NaN window's max is NaN: its last NaN, as PyTorch's kernel picks
        for n, sl in enumerate(offsets):
            v = xpad[lead + sl]
            xp.copyto(idx, n, where=v != v)
    return idx


def _pool_take(h: Any, x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    xp, nd = array_module(h), len(kernel)
    lead = (slice(None),) * (h.ndim - nd)
    idx = _argmax(x, kernel, stride, pad, dilation)
    hpad = _padded(h, nd, pad, 0.0)
    offsets = _offsets(kernel, stride, dilation, idx.shape[idx.ndim - nd:])
    r = hpad[lead + offsets[0]].copy()
    for n in range(1, len(offsets)):
        xp.copyto(r, hpad[lead + offsets[n]], where=idx == n)
    return r


def _pool_max_t(g: Any, x: Any, kernel: Ints, stride: Ints, pad: Pads, dilation: Ints) -> Any:
    xp, nd = array_module(g), len(kernel)
    idx = _argmax(x, kernel, stride, pad, dilation)
    lead = (slice(None),) * (g.ndim - nd)
    out = g.shape[g.ndim - nd:]
    size = x.shape[x.ndim - nd:]
    full = xp.zeros(g.shape[:g.ndim - nd] + tuple(s + lo + hi for s, (lo, hi) in zip(size, pad)), dtype=g.dtype)
    zero = xp.zeros((), g.dtype)
    disjoint = all(s >= (k - 1) * d + 1 for k, s, d in zip(kernel, stride, dilation))
    for n, sl in enumerate(_offsets(kernel, stride, dilation, out)):
        if disjoint:  # windows do not overlap: each place is written once
            xp.copyto(full[lead + sl], g, where=idx == n)
        else:
            full[lead + sl] += xp.where(idx == n, g, zero)
    return full[lead + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pad))]


pool_argmax = _argmax  # (no gradient: plain arrays)
conv = tg.primitive(_conv, "conv", batched=True)
conv_t = tg.primitive(_conv_t, "conv_t", batched=True)
conv_w = tg.primitive(_conv_w, "conv_w", batched=True)
pool_max = tg.primitive(_pool_max, "pool_max", batched=True)
pool_max_t = tg.primitive(_pool_max_t, "pool_max_t", batched=True)
pool_take = tg.primitive(_pool_take, "pool_take", batched=True)


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
