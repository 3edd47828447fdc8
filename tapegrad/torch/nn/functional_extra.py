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
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.torch import _norm
from tapegrad.torch._creation import _rng
from tapegrad.torch._shape_errors import device_arg_clash
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _result
from tapegrad.torch.grad_mode import no_grad

__all__ = ["batch_norm", "embedding", "embedding_bag", "group_norm", "instance_norm", "scaled_dot_product_attention"]

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
    idx = value(input._value)
    if type(idx) is not np.ndarray and array_module(idx) is not np:  # (device indices stay there)
        return _embedding_on_device(input, weight, idx, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                                    sparse)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    clash = device_arg_clash("wrapper_CUDA__index_select", ("self", weight._value), ("index", idx))
    if clash is not None:
        raise clash
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


def _embedding_on_device(input: Tensor, weight: Tensor, idx: Any, padding_idx: int | None,  # noqa: A002
                         max_norm: float | None, norm_type: float, scale_grad_by_freq: bool,
                         sparse: bool) -> Tensor:
    """``embedding`` of device indices, read on neither side: no bounds check (PyTorch's CUDA
    kernel asserts on the device; the check here would be a host sync), the padding row's
    constant chosen by a mask, ``max_norm`` renormalising every looked-up row at once.
    Indices and weight on two devices: PyTorch's error, as its ``index_select`` words it."""
    w = weight._value
    clash = device_arg_clash("wrapper_CUDA__index_select", ("self", w), ("index", idx))
    if clash is not None:
        raise clash
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        assert -n <= padding_idx < n, "Padding_idx must be within num_embeddings"
        padding_idx = padding_idx % n
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("tapegrad.torch: embedding(scale_grad_by_freq=True or sparse=True) "
                                  "is not supported")
    if max_norm is not None:
        with no_grad():
            wv = weight.data._value
            xp = array_module(wv)
            rows = xp.unique(idx.reshape(-1))
            nrm = xp.linalg.norm(wv[rows], ord=norm_type, axis=1)
            scale = xp.where(nrm > max_norm, max_norm / (nrm + 1e-7), 1).astype(wv.dtype)
            wv[rows] = wv[rows] * scale[:, None]
        w = weight._value
    out = tnp.take(w, idx, axis=0)
    if padding_idx is not None:  # (the padding rows' values, as constants: no gradient)
        pad = (idx == padding_idx)[..., None]
        out = tp.where_mask(pad, value(w)[idx], out)
    return _result(out, "EmbeddingBackward0", (weight,))


def _renorm_rows(weight: Tensor, idx: Any, max_norm: float, norm_type: float) -> None:
    rows = np.unique(idx.reshape(-1))
    with no_grad():
        w = weight.data
        for r in rows.tolist():
            nrm = float(w[r].norm(norm_type))
            if nrm > max_norm:
                w[r] = w[r] * (max_norm / (nrm + 1e-7))



def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Per bag, the sum, mean or max (``mode``) of the rows of ``weight`` at
    the bag's indices (``EmbeddingBagBackward0``). Bags: the rows of a 2-d
    ``input``, or the runs of a 1-d ``input`` starting at ``offsets``
    (``include_last_offset``: the last offset ends the last bag). Indices equal
    to ``padding_idx`` are left out; an empty bag gives zeros;
    ``per_sample_weights`` (mode "sum" only) scale each looked-up row.
    Returns a ``(bags, embedding_dim)`` tensor."""
    idx = np.asarray(value(input._value))
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding_bag)")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = np.arange(0, idx.size, max(idx.shape[1], 1))[: idx.shape[0]]
        include_last_offset = False
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = np.asarray(value(offsets._value)).astype(np.int64)
        if starts.size and starts[0] != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {starts[0]}\n[ {offsets.type()}{{}} ]")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {idx.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature "
                                      "request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
                             f"then it must have the same shape as the input ({input.shape})")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("tapegrad.torch: embedding_bag(scale_grad_by_freq=True or sparse=True) "
                                  "is not supported")
    n = weight.shape[0]
    flat = idx.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {flat[bad[0]]} which is not in the valid "
                           f"range [0, {n})")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    ends = np.append(starts[1:], flat.size)
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    keep = flat != padding_idx if padding_idx is not None else np.ones(flat.shape, bool)
    rows = tnp.take(weight._value, flat, axis=0)
    parents: tuple[Tensor | None, ...] = (weight, None)  # PyTorch's edges: weight, per_sample_weights
    if per_sample_weights is not None:
        rows = rows * tnp.reshape(per_sample_weights._value, (-1, 1))
        parents = (weight, per_sample_weights)
    dt = value(rows).dtype
    if mode == "max":
        zero = np.zeros(weight.shape[1], dt)
        bags = []
        for a, b in zip(starts.tolist(), ends.tolist()):
            members = np.arange(a, b)[keep[a:b]]
            bags.append(tnp.amax(tnp.take(rows, members, axis=0), axis=0) if members.size else zero)
        out = tnp.stack(bags) if bags else np.zeros((0, weight.shape[1]), dt)
    else:
        pos = np.arange(flat.size)
        member = (pos >= starts[:, None]) & (pos < ends[:, None]) & keep
        seg = member.astype(dt)
        if mode == "mean":
            seg = seg / np.maximum(member.sum(axis=1, keepdims=True), 1).astype(dt)
        out = tnp.matmul(seg, rows)
    return _result(out, "EmbeddingBagBackward0", parents)

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
