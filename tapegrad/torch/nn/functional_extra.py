"""``torch.nn.functional`` forms of the normalisation, embedding and attention
layers: ``batch_norm``, ``instance_norm``, ``group_norm``, ``embedding``,
``scaled_dot_product_attention`` (re-exported by ``tapegrad.torch.nn.functional``).

As there, each result is one node named as PyTorch names it
(``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``, ``EmbeddingBackward0``):
the three normalisations are the fused batch-norm primitive
(``tapegrad.torch._norm``) of a view of the input, the others a few
``tapegrad.numpy`` calls; the running statistics are updated in place under
``no_grad``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.numpy import primitives as tp
from tapegrad.torch import _norm
from tapegrad.torch._creation import _rng
from tapegrad.torch._tensor import Tensor, _new, _result
from tapegrad.torch.grad_mode import no_grad
from tapegrad.tracer import Traced, value

__all__ = ["batch_norm", "embedding", "group_norm", "instance_norm", "scaled_dot_product_attention"]

_value_of = value  # (``value`` is also an argument name of the attention functions)


def _verify_batch_size(shape: tuple[int, ...]) -> None:
    size = shape[0]
    for s in shape[2:]:
        size *= s
    if size == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(shape)}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (axis 1) of ``input`` by its batch statistics
    (``training``; the running ones are then updated in place: ``(1 - momentum)
    * running + momentum * batch``, the variance unbiased) or by
    ``running_mean``/``running_var``; then ``* weight + bias``
    (``NativeBatchNormBackward0``)."""
    if training:
        _verify_batch_size(tuple(input.shape))
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    x = input._value
    xv = value(x)
    if training or running_mean is None or running_var is None:
        mean = var = None
        if type(xv) is not Traced:  # (a vmap's or a jit's value: the primitive computes them)
            mean, var = _norm.moments(xv)
        if training and running_mean is not None and running_var is not None:
            if mean is None:
                raise RuntimeError("tapegrad.torch: batch_norm cannot update the running statistics of a "
                                   "batched or compiled input (under vmap or jit); pass training=False or "
                                   "running_mean=running_var=None")
            n = input.numel() // input.shape[1]
            with no_grad():
                running_mean.mul_(1 - momentum).add_(_like(mean * momentum, running_mean))
                running_var.mul_(1 - momentum).add_(_like(var * (momentum * n / max(n - 1, 1)), running_var))
        out = _norm.batch_norm(x, _value_or_none(weight), _value_or_none(bias), mean, var, eps=eps, training=True)
    else:
        out = _norm.batch_norm(x, _value_or_none(weight), _value_or_none(bias), value(running_mean._value),
                               value(running_var._value), eps=eps, training=False)
    return _result(out, "NativeBatchNormBackward0", (input, weight, bias))


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa: A002
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each example of ``input`` ``(N, C, *S)`` over
    its ``S`` (``use_input_stats``; running statistics given are then updated
    in place with the mean over the batch, the variance unbiased), or by
    ``running_mean``/``running_var``; then ``* weight + bias``. As PyTorch:
    ``batch_norm`` of the ``(1, N*C, *S)`` view, the weight, bias and running
    statistics repeated ``N`` times (``ViewBackward0`` of ``NativeBatchNormBackward0``)."""
    shape = tuple(input.shape)
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected an input with at least 2 dims (N, C, ...), got {input.ndim}D")
    n, c = shape[:2]
    for t, what in ((weight, "weight"), (bias, "bias"), (running_mean, "running_mean"), (running_var, "running_var")):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"instance_norm: expected {what} of shape [{c}] (the channels of the input "
                               f"{list(shape)}), got {list(t.shape)}")
    if use_input_stats:
        size = 1
        for s in shape[2:]:
            size *= s
        if size == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             f"torch.Size({list(shape)})")
    elif running_mean is None or running_var is None:
        raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
    rm = None if running_mean is None else running_mean.repeat(n)
    rv = None if running_var is None else running_var.repeat(n)
    out = batch_norm(input.reshape((1, n * c) + shape[2:]), rm, rv,
                     None if weight is None else weight.repeat(n), None if bias is None else bias.repeat(n),
                     use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            for running, rep in ((running_mean, rm), (running_var, rv)):
                if running is not None and rep is not None:
                    running.copy_(rep.view(n, c).mean(0))
    return out.view(shape)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise ``input`` ``(N, C, *S)`` over each group of ``C / num_groups``
    consecutive channels and ``S``, per example, then ``* weight + bias`` per
    channel (``NativeGroupNormBackward0``): the batch norm of the
    ``(1, N * num_groups, C / num_groups * prod(S))`` view, one primitive."""
    shape = tuple(input.shape)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(shape)} and num_groups={num_groups}")
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {what} to be a vector of size equal to the number of channels in input, "
                               f"but got {what} of shape {list(t.shape)} and input of shape {list(shape)}")
    per = c // num_groups
    for s in shape[2:]:
        per *= s
    out = _norm.batch_norm(tnp.reshape(input._value, (1, n * num_groups, per)), None, None, None, None, eps=eps,
                           training=True)
    out = tnp.reshape(out, shape)
    chan = (c,) + (1,) * (len(shape) - 2)
    if weight is not None:
        out = out * tnp.reshape(weight._value, chan)
    if bias is not None:
        out = out + tnp.reshape(bias._value, chan)
    return _result(out, "NativeGroupNormBackward0", (input, weight, bias))


def _value_or_none(t: Tensor | None) -> Any:
    return None if t is None else t._value


def _like(a: Any, t: Tensor) -> Tensor:
    """The array ``a`` as a tensor of ``t``'s dtype and device (no graph)."""
    v = value(t._value)
    return _new(array_module(v).asarray(a, dtype=v.dtype))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """The rows of ``weight`` at the integer indices ``input`` (``EmbeddingBackward0``);
    the row ``padding_idx`` gets no gradient. ``max_norm`` renormalises, in place,
    each looked-up row whose ``norm_type``-norm exceeds it."""
    idx = np.asarray(value(input._value))
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("tapegrad.torch: embedding(scale_grad_by_freq=True or sparse=True) "
                                  "is not supported")
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    w = weight._value
    out = tnp.take(w, idx, axis=0)
    if padding_idx is not None:
        pad = (idx == padding_idx)[..., None]
        if pad.any():
            wv = value(w)
            const = wv[array_module(wv).asarray(idx)]
            out = tp.where_mask(pad, const, out)
    return _result(out, "EmbeddingBackward0", (weight,))


def _renorm_rows(weight: Tensor, idx: Any, max_norm: float, norm_type: float) -> None:
    rows = np.unique(idx.reshape(-1))
    with no_grad():
        w = weight.data
        for r in rows.tolist():
            nrm = float(w[r].norm(norm_type))
            if nrm > max_norm:
                w[r] = w[r] * (max_norm / (nrm + 1e-7))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims,
    ``scale`` by default ``1 / sqrt(E)``; a boolean ``attn_mask`` says which
    positions take part (True), a float one is added; ``is_causal``: the lower
    triangle only; ``dropout_p``: dropout on the weights. Composed of tensor
    methods (the graph is PyTorch's math path, not its fused kernel)."""
    if enable_gqa:
        raise NotImplementedError("tapegrad.torch: scaled_dot_product_attention(enable_gqa=True) is not supported")
    tgt, src = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * s
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        attn_mask = _new(np.tril(np.ones((tgt, src), bool)))
    if attn_mask is not None:
        if attn_mask.dtype.is_floating_point:
            scores = scores + attn_mask
        else:
            v = _value_of(scores._value)
            xp = array_module(v)
            keep = xp.asarray(_value_of(attn_mask._value))
            scores = scores + _new(xp.where(keep, xp.asarray(0.0, v.dtype), xp.asarray(-np.inf, v.dtype)))
    attn = scores.softmax(-1)
    if dropout_p > 0.0:
        w = _value_of(attn._value)
        keep_p = (_rng().random(w.shape) >= dropout_p).astype(w.dtype) / (1 - dropout_p)
        attn = attn * _new(array_module(w).asarray(keep_p))
    return attn.matmul(value)
