"""Activation modules: elementwise nonlinearities (``ReLU``, ``GELU`` ...), ``Softmax``/``LogSoftmax``
and, where PyTorch has it, ``MultiheadAttention``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from tapegrad.torch._creation import cat, empty, zeros
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.linear import Linear
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSoftmax", "Mish", "MultiheadAttention", "ReLU", "SiLU", "Sigmoid", "Softmax",
    "Softplus", "Tanh",
]


class _Activation(Module):
    """An elementwise ``nn.functional`` activation ``_fn``, called with the
    attributes named in ``_params`` and the ``inplace`` flag; its ``repr``
    lists them (``inplace`` only when set), as PyTorch's."""

    _fn: Callable[..., Tensor]
    _params: tuple[str, ...] = ()

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return type(self)._fn(input, *[getattr(self, n) for n in self._params], inplace=self.inplace)

    def extra_repr(self) -> str:
        return ", ".join([f"{n}={getattr(self, n)}" for n in self._params] + ["inplace=True"] * self.inplace)


class ReLU(_Activation):
    """``max(x, 0)`` elementwise."""

    _fn = F.relu


class SiLU(_Activation):
    """``x * sigmoid(x)`` elementwise."""

    _fn = F.silu


class Mish(_Activation):
    """``x * tanh(softplus(x))`` elementwise."""

    _fn = F.mish


class ELU(_Activation):
    """``x`` where positive, else ``alpha (exp(x) - 1)``."""

    _fn = F.elu
    _params = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha


class LeakyReLU(_Activation):
    """``x`` where positive, else ``negative_slope * x``."""

    _fn = F.leaky_relu
    _params = ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope


class Hardtanh(_Activation):
    """``x`` clamped to ``[min_val, max_val]``."""

    _fn = F.hardtanh
    _params = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__(inplace)
        for name, given in (("min", min_value), ("max", max_value)):
            if given is not None:  # PyTorch's deprecated spellings
                warnings.warn(f"keyword argument `{name}_value` is deprecated and rename to `{name}_val`",
                              FutureWarning, stacklevel=2)
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        if self.max_val <= self.min_val:
            raise AssertionError  # (PyTorch asserts it)


class GELU(Module):
    """``x * Phi(x)`` (``approximate='tanh'``: its tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.tanh()


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.sigmoid()


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.log_softmax(input, self.dim)


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under the name PyTorch gives ``MultiheadAttention.out_proj``."""


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention, laid out as PyTorch's
    (``in_proj_weight`` ``(3 E, E)`` Xavier-uniform, or ``q_proj_weight``,
    ``k_proj_weight`` ``(E, kdim)`` and ``v_proj_weight`` ``(E, vdim)`` when
    ``kdim``/``vdim`` differ from ``embed_dim``; ``in_proj_bias`` zeros,
    ``out_proj``; with ``add_bias_kv`` a learnt key and value ``bias_k``,
    ``bias_v`` appended to the keys, with ``add_zero_attn`` a key and value
    of zeros). ``forward(query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True,
    is_causal=False)`` returns ``(output, weights or None)``; masks are
    boolean (True: not attended) or float (added to the scores)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), dtype=dtype, device=device))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), dtype=dtype, device=device))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), dtype=dtype, device=device))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), dtype=dtype, device=device))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dtype, device=device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.bias_k: Parameter | None
        self.bias_v: Parameter | None
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), dtype=dtype, device=device))
            self.bias_v = Parameter(empty((1, 1, embed_dim), dtype=dtype, device=device))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None and self.bias_v is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        tgt, n, e = query.shape
        src = key.shape[0]
        h, hd = self.num_heads, self.head_dim
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {e}")
        b = self.in_proj_bias.chunk(3, 0) if self.in_proj_bias is not None else (None, None, None)
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight.chunk(3, 0)
        else:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        q = F.linear(query, w[0], b[0])
        k = F.linear(key, w[1], b[1])
        v = F.linear(value, w[2], b[2])
        if attn_mask is None and is_causal:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        # masks as float, (N, H or 1, L, S), so that the extra key columns below pad them with zeros
        mask = None if attn_mask is None else _float_mask(attn_mask, q)
        if mask is not None and mask.dim() == 3:
            mask = mask.reshape(n, h, tgt, src)
        pad = None if key_padding_mask is None else _float_mask(key_padding_mask, q).reshape(n, 1, 1, src)
        if self.bias_k is not None and self.bias_v is not None:  # one learnt key and value appended
            k = cat([k, self.bias_k.repeat(1, n, 1)])
            v = cat([v, self.bias_v.repeat(1, n, 1)])
            mask, pad, src = _pad_key(mask), _pad_key(pad), src + 1
        # (L, N, E) -> (N, H, L, hd)
        q = q.reshape(tgt, n, h, hd).permute(1, 2, 0, 3)
        k = k.reshape(src, n, h, hd).permute(1, 2, 0, 3)
        v = v.reshape(src, n, h, hd).permute(1, 2, 0, 3)
        if self.add_zero_attn:  # one key and value of zeros appended
            k = cat([k, zeros((n, h, 1, hd), dtype=k.dtype, device=k.device)], dim=2)
            v = cat([v, zeros((n, h, 1, hd), dtype=v.dtype, device=v.device)], dim=2)
            mask, pad, src = _pad_key(mask), _pad_key(pad), src + 1
        scores = (q * (1.0 / math.sqrt(hd))).matmul(k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        if pad is not None:
            scores = scores + pad
        attn = scores.softmax(-1)
        if self.dropout > 0.0:
            attn = F.dropout(attn, self.dropout, self.training)
        out = attn.matmul(v).permute(2, 0, 1, 3).reshape(tgt * n, e)
        out = self.out_proj(out).view(tgt, n, e)
        weights: Tensor | None = None
        if need_weights:
            weights = attn.mean(1) if average_attn_weights else attn
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            if weights is not None:
                weights = weights.squeeze(0)
        return out, weights


def _pad_key(mask: Tensor | None) -> Tensor | None:
    """A float mask with one more key column, of zeros (attended)."""
    if mask is None:
        return None
    return cat([mask, zeros((*mask.shape[:-1], 1), dtype=mask.dtype, device=mask.device)], dim=-1)


def _float_mask(mask: Tensor, like: Tensor) -> Tensor:
    """A boolean mask (True: masked) as ``-inf``/0 of ``like``'s dtype; a float one as it is."""
    if mask.dtype.is_floating_point:
        return mask
    return zeros(tuple(mask.shape), dtype=like.dtype, device=like.device).masked_fill(mask, float("-inf"))
