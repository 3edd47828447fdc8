"""The facade's fused batch normalisation primitive (``nn.functional.batch_norm``).

``batch_norm(x, w, b, mean, var, eps=, training=)``: ``x`` is ``(N, C, *S)``;
each channel (axis 1) is normalised, ``(x - mean) / sqrt(var + eps)``, then
scaled by ``w`` and shifted by ``b`` (each ``(C,)``, or None for none).

- ``training``: ``mean`` and ``var`` are the (biased) moments of ``x`` over
  every axis but the channels. The caller may pass them, computed once by
  ``moments`` (it also needs them for the running statistics), or None: the
  primitive computes them. Either way they are functions of ``x``: the VJP
  is the closed-form batch-norm backward, ``dx = w s (g - mean(g) - xhat
  mean(g xhat))`` with ``s = 1 / sqrt(var + eps)``.
- not ``training``: ``mean`` and ``var`` are constants (the running
  statistics): the map is affine per channel, ``dx = w s g``.

The forward pass is one primitive (one tape entry, in place of the ten of the
written-out form): one pass for the mean, one for the variance (an
``einsum``: no squared temporary), and the output made in the one temporary
``x - mean``. The rules are written with tapegrad.numpy calls that recompute
the moments from ``x``, so they differentiate again; they take cotangents with
leading batch axes (axes counted from the end). The batching rule (``vmap``)
puts the batch among the channels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.core.primitive import defvjp
from tapegrad.torch._conv import _bcast, _fold, _unfold

__all__ = ["batch_norm", "moments", "reuse_last"]


def _as3(x: Any) -> Any:
    """``x`` ``(N, C, *S)`` as ``(N, C, prod(S))`` (a view when it can be)."""
    n, c = x.shape[:2]
    return x.reshape(n, c, int(np.prod(x.shape[2:], dtype=np.int64)))


def moments(x: Any) -> tuple[Any, Any]:
    """The per-channel mean and biased variance ``(C,)`` of the array ``x``
    ``(N, C, *S)`` over every axis but axis 1 (two passes over ``x``; each sum
    first over N, rows added whole, which is several times faster than one
    reduction over the axes ``(0, 2)``)."""
    x3 = _as3(x)
    m = x.dtype.type(max(x3.shape[0] * x3.shape[2], 1))
    mean = x3.sum(axis=0).sum(axis=1) / m
    d = x3 - mean[:, None]
    d *= d
    return mean, d.sum(axis=0).sum(axis=1) / m


def _batch_norm(x: Any, w: Any, b: Any, mean: Any, var: Any, eps: float = 1e-5, training: bool = True) -> Any:
    if mean is None or var is None:
        mean, var = moments(x)
    xp = array_module(x)
    x3 = _as3(x)
    scale = 1 / xp.sqrt(var + eps)
    if w is not None:
        scale = scale * w
    out = x3 - mean[:, None]
    out *= scale.astype(x.dtype, copy=False)[:, None]
    if b is not None:
        out += b.astype(x.dtype, copy=False)[:, None]
    return out.reshape(x.shape)


batch_norm = tg.primitive(_batch_norm, "batch_norm", batched=True)


# --- VJP rules: tapegrad.numpy calls, cotangents with leading batch axes ---------------------------


def _chan(a: Any, x: Any) -> Any:
    """A ``(C,)`` array shaped to broadcast against ``x`` (and leading batch axes)."""
    return tnp.reshape(a, (tnp.shape(a)[0],) + (1,) * (tnp.ndim(x) - 2))


def _csum(a: Any, nd: int) -> Any:
    """The keepdims sum of ``a`` (an ``nd``-dim input's shape, after any leading
    batch axes) over all but the channels: over N first, then the rest (a few
    times faster than one reduction over those axes)."""
    r = tnp.sum(a, -nd, keepdims=True)
    return tnp.sum(r, tuple(range(2 - nd, 0)), keepdims=True) if nd > 2 else r


def reuse_last(slot: list[Any], keys: tuple[Any, ...], make: Callable[[], Any], who: int, users: int) -> Any:
    """``make()``, shared by the ``users`` VJP rules of one entry (rule ``who``
    asks): the first rule to ask computes it, each other rule asking with the
    same ``keys`` (each the same object) takes it once, and the slot
    (``[keys, result, rules served]``) is cleared when all have. A rule that
    asks again (the next backward pass, whose cotangent may be the same
    array with new values) computes afresh: a result never outlives the
    rules of the one step it was made for. The keys are kept while the
    slot is full, so an identity check cannot match a recycled address."""
    last = slot[0]
    if last is not None and who not in slot[2] and len(last) == len(keys) and all(a is b for a, b in zip(last, keys)):
        r = slot[1]
        slot[2].add(who)
        if len(slot[2]) >= users:
            slot[:] = [None, None, set()]
        return r
    r = make()
    slot[:] = [keys, r, {who}] if users > 1 else [None, None, set()]
    return r


_last: list[Any] = [None, None, set()]  # see _shared


def _shared(x: Any, g: Any, mean: Any, var: Any, eps: float, training: bool, who: int) -> tuple[Any, ...]:
    """``d = x - mean``, ``s = 1 / sqrt(var + eps)`` (``training``: the moments
    of ``x``, as functions of it), ``sum(g)`` and ``sum(g d)`` per channel, and
    the count ``m`` of numbers per channel. The rules of ``x`` and ``w`` both
    need them for the same arguments and ``g``: made once (``reuse_last``; two
    entries on the same ``x`` may share a cotangent, so all are keys)."""
    def make() -> tuple[Any, ...]:
        nd = tnp.ndim(x)
        m = float(np.prod(tnp.shape(x)) // tnp.shape(x)[1])
        if training:
            d = x - _csum(x, nd) * (1 / m)
            s = tnp.reciprocal(tnp.sqrt(_csum(d * d, nd) * (1 / m) + eps))
        else:
            d, s = x - _chan(mean, x), tnp.reciprocal(tnp.sqrt(_chan(var, x) + eps))
        return d, s, _csum(g, nd), _csum(g * d, nd), m

    return reuse_last(_last, (x, g, mean, var, eps, training), make, who, 2)  # type: ignore[no-any-return]


def _vjp_x(ans: Any, x: Any, w: Any, b: Any, mean: Any, var: Any, eps: float = 1e-5, training: bool = True) -> Any:
    def vjp(g: Any) -> Any:
        d, s, sg, sgd, m = _shared(x, g, mean, var, eps, training, 0)
        k = s if w is None else s * _chan(w, x)
        if not training:
            return g * k
        return g * k - (d * (k * s * s * sgd * (1 / m)) + k * sg * (1 / m))

    return vjp


def _to_c(r: Any, nd: int) -> Any:
    """A keepdims reduction ``(*lead, 1, C, 1...)`` over an ``nd``-dim input as ``(*lead, C)``."""
    shape = tuple(tnp.shape(r))
    lead = shape[:len(shape) - nd]
    return tnp.reshape(r, lead + (shape[len(shape) - nd + 1],))


def _vjp_w(ans: Any, x: Any, w: Any, b: Any, mean: Any, var: Any, eps: float = 1e-5, training: bool = True) -> Any:
    def vjp(g: Any) -> Any:
        d, s, sg, sgd, m = _shared(x, g, mean, var, eps, training, 1)
        return _to_c(sgd * s, tnp.ndim(x))

    return vjp


def _vjp_b(ans: Any, x: Any, w: Any, b: Any, mean: Any, var: Any, eps: float = 1e-5, training: bool = True) -> Any:
    return lambda g: _to_c(_csum(g, tnp.ndim(x)), tnp.ndim(x))


defvjp(batch_norm, _vjp_x, _vjp_w, _vjp_b, None, None)


# --- batching rule (vmap): the batch among the channels ------------------------------------------


def _batch_rule(args: Any, batched: Any, size: int, eps: float = 1e-5, training: bool = True) -> Any:
    (x, w, b, mean, var), (bx, bw, bb, bm, bv) = args, batched
    folded = _fold(_bcast(x, bx, size), size)

    def flat(a: Any, ba: bool) -> Any:
        return None if a is None else tnp.reshape(_bcast(a, ba, size), (-1,))

    if training:  # (the moments of the folded x are those of each example)
        mean = var = None
    r = batch_norm(folded, flat(w, bw), flat(b, bb), flat(mean, bm), flat(var, bv), eps=eps, training=training)
    return _unfold(r, size)


tg.defbatch(batch_norm, _batch_rule)
