"""``torch.nn.functional``: activations, ``linear``, normalisation, dropout and losses.

Each function is a tensor method, or a few ``tapegrad.numpy`` calls on the
tensors' values (``linear`` and ``nll_loss``: one fused primitive of
``tapegrad.numpy.primitives`` each; the two binary cross-entropies: one
facade primitive of ``tapegrad.torch._prims`` each) whose result gets
the ``grad_fn`` name PyTorch gives it (``AddmmBackward0``,
``NllLossBackward0``, ``MseLossBackward0``, ``GeluBackward0``...), or the
tensor methods PyTorch itself composes (``l1_loss``, ``normalize``,
``cosine_similarity``, ``dropout``). No gradient rule lives here: where
PyTorch's gradient at a kink differs from a tie split, the value is built
with ``where`` on the side PyTorch differentiates (``leaky_relu`` at 0, the
bounds of ``hardtanh``), and a branch ``where`` discards is computed on a
safe input so its zero gradient stays zero (no ``0 * inf``).

Examples:
    >>> import tapegrad.torch.nn.functional as F
    >>> logits = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
    >>> F.cross_entropy(logits, torch.tensor([0]))
    tensor(0.2413, grad_fn=<NllLossBackward0>)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.scipy.special import erf, expit
from tapegrad.torch import _prims as P
from tapegrad.torch._creation import _rng, broadcast_tensors
from tapegrad.torch._graph import GT
from tapegrad.torch._missing import missing_names
from tapegrad.torch._promote import _promote
from tapegrad.torch._shape_errors import device_arg_clash, device_clash
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _rec, _rec1, _result
from tapegrad.torch.nn.functional_conv import (
    adaptive_avg_pool2d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    max_pool1d,
    max_pool2d,
)

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
    "max_pool1d", "max_pool2d",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "cross_entropy",
    "dropout", "elu", "gelu", "hardtanh", "huber_loss", "l1_loss", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "mish", "mse_loss", "nll_loss", "normalize", "one_hot", "relu", "sigmoid", "silu",
    "smooth_l1_loss", "softmax", "softplus", "tanh", "batch_norm", "embedding", "embedding_bag", "group_norm",
    "instance_norm", "scaled_dot_product_attention", "affine_grid", "grid_sample", "interpolate", "pad",
    "pixel_shuffle", "pixel_unshuffle",
]

_REDUCTIONS = ("mean", "sum", "none")


# --- activations ------------------------------------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``max(input, 0)`` elementwise (``ReluBackward0``)."""
    return input.relu_() if inplace else input.relu()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``1 / (1 + exp(-input))``, computed without overflow."""
    return input.sigmoid()


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """``exp(input) / sum(exp(input), dim)``, computed through ``logsumexp``."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:  # noqa: A002
    """``input - logsumexp(input, dim)``: stable for large logits."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return input.log_softmax(dim, dtype=dtype)


def _activation(input: Tensor, fn: Callable[[Any], Any], name: str, inplace: bool = False,  # noqa: A002
                inplace_name: str | None = None, saves_output: bool = False) -> Tensor:
    """``fn`` (of values) applied to ``input`` as one node ``name``, or in place
    (node ``inplace_name``, by default ``name``)."""
    if inplace:
        return input._inplace(inplace_name or name, fn, saves_output=saves_output)
    return _result(fn(input._value), name, (input,))


_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5  # sqrt(2 / pi), as PyTorch writes it
_GELU_KAPPA = 0.044715


def _gelu(a: Any, approximate: str) -> Any:
    if approximate == "tanh":
        return 0.5 * a * (1 + tnp.tanh(_GELU_BETA * (a + _GELU_KAPPA * (a * a * a))))
    return a * 0.5 * (1 + erf(a * _SQRT1_2))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Phi(x)``, ``Phi`` the standard normal CDF (through ``erf``), or with
    ``approximate='tanh'`` ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (``GeluBackward0``)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _activation(input, lambda a: _gelu(a, approximate), "GeluBackward0")


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)`` elementwise (``SiluBackward0``)."""
    return _activation(input, lambda a: a * expit(a), "SiluBackward0", inplace)


def _softplus(a: Any, beta: float, threshold: float) -> Any:
    z = a * beta
    big = value(z) > threshold
    return tp.where_mask(big, a, tnp.log1p(tnp.exp(tp.where_mask(big, 0.0, z))) / beta)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta x)) / beta``, and ``x`` itself where ``beta x > threshold``
    (``SoftplusBackward0``)."""
    return _activation(input, lambda a: _softplus(a, beta, threshold), "SoftplusBackward0")


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * tanh(softplus(x))`` elementwise (``MishBackward0``)."""
    return _activation(input, lambda a: a * tnp.tanh(_softplus(a, 1.0, 20.0)), "MishBackward0", inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > 0``, else ``alpha (exp(x) - 1)``; the gradient at 0 is
    ``alpha`` as PyTorch's (``EluBackward0``; in place ``EluBackward1``, its
    gradient computed from the result as PyTorch's)."""
    return _activation(input, lambda a: P.elu(a, alpha, from_result=inplace), "EluBackward0", inplace,
                       "EluBackward1", saves_output=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > 0``, else ``negative_slope * x``; the gradient at 0 is
    ``negative_slope`` (``LeakyReluBackward0``; in place ``LeakyReluBackward1``)."""
    return _activation(input, lambda a: tp.where_mask(value(a) > 0, a, a * negative_slope), "LeakyReluBackward0",
                       inplace, "LeakyReluBackward1", saves_output=True)


def _hardtanh(a: Any, lo: float, hi: float) -> Any:
    x = value(a)
    return tp.where_mask((x > lo) & (x < hi), a, x.clip(lo, hi))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``input`` clamped to ``[min_val, max_val]``; no gradient at the bounds,
    as in PyTorch (``HardtanhBackward0``)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(input, lambda a: _hardtanh(a, min_val, max_val), "HardtanhBackward0", inplace,
                       saves_output=True)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """The int64 tensor of shape ``(*tensor.shape, num_classes)`` with a 1 at each
    class index of ``tensor`` (an int64 tensor) and 0 elsewhere; ``num_classes=-1``
    takes the largest index plus one. No gradient."""
    t = value(tensor._value)
    if t.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if not t.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(t.max()) + 1
    if t.size and t.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if t.size and t.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return _new((t[..., None] == array_module(t).arange(num_classes)).astype(np.int64))


# --- linear -----------------------------------------------------------------------------------


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    Named as PyTorch names it: ``AddmmBackward0`` for a 2-D input with a bias,
    its inputs ``(bias, input, weight.t())`` (the ``TBackward0`` node is a view:
    the entry's rules do its work), inside a ``ViewBackward0`` for other ranks;
    ``MmBackward0`` without a bias.
    """
    if bias is None:
        return input.matmul(weight.t())
    if input.ndim == 2:
        return _addmm_t(input, weight, bias)
    lead = input.shape[:-1]
    out = _addmm_t(input.reshape(-1, input.shape[-1]), weight, bias)
    return out.view(*lead, weight.shape[0])


def _addmm_t(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight.T + bias`` for a matrix ``x``: one ``linear`` entry."""
    vals = (x._value, weight._value, bias._value)
    if x.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x{x.shape[-1]} and "
                           f"{weight.shape[-1]}x{weight.shape[0]})")
    t = _rec(_LINEAR, vals, "AddmmBackward0", (bias, x, weight), _ADDMM_EDGES)
    if t is not None:
        return t
    return _result(tp.linear(*vals), "AddmmBackward0", (bias, x, weight))


_ADDMM_EDGES = (2, 0, ("TBackward0", 1))  # bias, x, weight.t(): where each is among linear's arguments
_LINEAR = tp.linear.primitive  # type: ignore[attr-defined]
_NLL = tp.weighted_sum.primitive  # type: ignore[attr-defined]


# --- dropout and normalisation ------------------------------------------------------------------


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """In training, ``input`` with each element zeroed with probability ``p`` and
    the others scaled by ``1 / (1 - p)`` (a ``MulBackward0`` by that noise, drawn
    from ``torch.manual_seed``'s generator); ``input`` itself when not training
    or ``p == 0``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    v = value(input._value)
    if p == 1:
        noise = np.zeros((), v.dtype)
    else:
        noise = (_rng().random(v.shape) >= p).astype(v.dtype) / (1 - p)  # each kept with probability 1 - p
    mask = _new(noise if type(noise) is Traced else array_module(v).asarray(noise))  # (batched: vmap's 'different')
    return input.mul_(mask) if inplace else input * mask


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` with the (biased) mean and
    variance over the trailing ``normalized_shape`` dims (``NativeLayerNormBackward0``)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but got {what} of "
                               f"shape {list(t.shape)} and normalized_shape = {list(shape)}")
    axes = tuple(range(-k, 0))
    d = input._value - tp.mean(input._value, axes, True)
    out = d * tnp.reciprocal(tnp.sqrt(tp.mean(d * d, axes, True) + eps))
    if weight is not None:
        out = out * weight._value
    if bias is not None:
        out = out + bias._value
    return _result(out, "NativeLayerNormBackward0", (input, weight, bias))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``), as
    PyTorch composes it (``DivBackward0``); written into ``out`` if given."""
    r = input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return r if out is None else out.copy_(r)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / |x1| * x2 / |x2|, dim)`` over the broadcast inputs, each norm
    at least ``eps`` (``SumBackward1``)."""
    if tuple(x1.shape) != tuple(x2.shape):
        x1, x2 = broadcast_tensors(x1, x2)

    def unit(x: Tensor) -> Tensor:
        n = x.norm(2, dim, keepdim=True)
        c = n.detach()
        # the norm clamped at eps, differentiated as the norm itself (PyTorch
        # clamps a clone in place, without recording): n - c is exactly 0
        return x / ((n - c) + c.clamp_min(eps))

    return (unit(x1) * unit(x2)).sum(dim)


# --- losses -----------------------------------------------------------------------------------


def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    """The ``reduction`` that PyTorch's deprecated ``size_average`` and ``reduce``
    flags mean (with PyTorch's warning)."""
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average is None or size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  UserWarning, stacklevel=3)
    return ret


def _reduction(size_average: Any, reduce: Any, reduction: str, weighted: bool = False) -> str:
    """The reduction asked for (the legacy flags win), checked with the message
    of PyTorch's weighted (Python) or unweighted (ATen) path."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'." if weighted
                         else f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Any, reduction: str) -> Any:
    """``loss`` averaged, summed or as it is; a Tensor through its methods
    (``MeanBackward0``, ``SumBackward0``), else a value."""
    if isinstance(loss, Tensor):
        return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
    if reduction == "mean":
        return tnp.divide(tnp.sum(loss), array_module(loss).asarray(loss.size, loss.dtype))  # (on its device)
    if reduction == "sum":
        return tnp.sum(loss)
    return loss


def _warn_target_size(input: Tensor, target: Tensor) -> None:  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=3)


def _pointwise_loss(input: Tensor, target: Tensor, reduction: str, name: str,  # noqa: A002
                    fn: Callable[[Any], Any]) -> Tensor:
    """``fn(input - target)`` (of values), reduced, as one node ``name``."""
    a, b = _promote(input._value, target._value)
    try:
        d = tnp.subtract(a, b)
    except (TypeError, ValueError) as e:
        raise device_clash(a, b) or e from None
    return _result(_reduce(fn(d), reduction), name, (input, target))


def _weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: str, by_weight: bool) -> Tensor:  # noqa: A002
    """PyTorch's elementwise ``weight`` of ``l1_loss``, ``mse_loss`` and ``huber_loss``:
    ``loss * weight`` reduced; ``'mean'`` divides by the total weight (``by_weight``)
    or by the count."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" and by_weight else _reduce(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Squared error ``(input - target) ** 2``, averaged (``'mean'``), summed
    (``'sum'``) or elementwise (``'none'``) (``MseLossBackward0``); with ``weight``
    (of ``input``'s shape) each term is weighted and ``'mean'`` divides by the total weight."""
    _warn_target_size(input, target)
    reduction = _reduction(size_average, reduce, reduction, weight is not None)
    if weight is not None:
        return _weighted((input - target).pow(2), input, weight, reduction, True)
    return _pointwise_loss(input, target, reduction, "MseLossBackward0", lambda d: tnp.multiply(d, d))


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Absolute error ``|input - target|``, averaged, summed or elementwise, composed
    as PyTorch composes it (``AbsBackward0`` under ``MeanBackward0`` or ``SumBackward0``);
    ``weight`` as in ``mse_loss``."""
    _warn_target_size(input, target)
    reduction = _reduction(size_average, reduce, reduction, weight is not None)
    err = (input - target).abs()
    return _reduce(err, reduction) if weight is None else _weighted(err, input, weight, reduction, True)


def _smooth_l1(d: Any, beta: float) -> Any:
    z = tnp.absolute(d)
    return tp.where_mask(value(z) < beta, 0.5 * z * z / beta, z - 0.5 * beta)


def _huber(d: Any, delta: float) -> Any:
    z = tnp.absolute(d)
    return tp.where_mask(value(z) < delta, 0.5 * z * z, (z - 0.5 * delta) * delta)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (``d = input - target``),
    reduced (``SmoothL1LossBackward0``); ``beta = 0`` is ``l1_loss``."""
    _warn_target_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta == 0.0:
        return _reduce((input - target).abs(), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _pointwise_loss(input, target, reduction, "SmoothL1LossBackward0", lambda d: _smooth_l1(d, beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - delta / 2)`` (``d = input - target``),
    reduced (``HuberLossBackward0``); with ``weight`` (of ``input``'s shape) each term
    is weighted before the reduction."""
    _warn_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    reduction = _reduction(None, None, reduction, weight is not None)
    loss = _pointwise_loss(input, target, "none" if weight is not None else reduction, "HuberLossBackward0",
                           lambda d: _huber(d, delta))
    return loss if weight is None else _weighted(loss, input, weight, reduction, False)


def _constant(t: Tensor | None, fn: str, arg: str, dtype: Any) -> Any:
    """The value of ``t`` in ``dtype``, an argument PyTorch does not differentiate
    (None stays None)."""
    if t is None:
        return None
    if t.requires_grad and GT.active:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{arg}'. "
                           "This input cannot have requires_grad True.")
    return value(t._value).astype(dtype, copy=False)


def _bce_result(loss: Any, weight: Any, reduction: str, name: str, ins: tuple[Tensor, Tensor]) -> Tensor:
    if weight is not None:
        loss = tnp.multiply(loss, weight)
    return _result(_reduce(loss, reduction), name, ins)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-w (y log p + (1 - y) log(1 - p))`` of probabilities ``input`` and targets
    ``target`` (each log at least -100, as PyTorch), reduced; the gradient is
    PyTorch's (finite at p = 0 and 1) (``BinaryCrossEntropyBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    p, y = _promote(input._value, target._value)
    w = _constant(weight, "binary_cross_entropy", "weight", p.dtype)
    for v, what in ((p, "input"), (y, "target")):
        v = value(v)
        if not ((v >= 0) & (v <= 1)).all():
            raise RuntimeError(f"all elements of {what} should be between 0 and 1")
    return _bce_result(P.bce(p, y), w, reduction, "BinaryCrossEntropyBackward0", (input, target))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed from the logits
    without overflow, the positive term weighted by ``pos_weight`` (broadcast
    along the last dim), reduced (``BinaryCrossEntropyWithLogitsBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    x, y = _promote(input._value, target._value)
    fn = "binary_cross_entropy_with_logits"
    w, pw = _constant(weight, fn, "weight", x.dtype), _constant(pos_weight, fn, "pos_weight", x.dtype)
    return _bce_result(P.bce_logits(x, y, pw), w, reduction, "BinaryCrossEntropyWithLogitsBackward0",
                       (input, target))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under log-probabilities ``input``.

    ``input`` has the classes on axis 1 (``(N, C)``, ``(N, C, d1, ...)``) or is
    ``(C,)`` with a 0-d target. ``weight`` (one per class) weighs each sample,
    and ``'mean'`` divides by the total weight, as PyTorch does; samples whose
    target is ``ignore_index`` count for nothing.
    """
    reduction = _reduction(size_average, reduce, reduction)
    lp = input._value
    t = value(target._value)
    if t.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target._legacy_dtype_name()[:-6]}")
    cls_axis = 0 if lp.ndim == 1 else 1
    if type(t) is not np.ndarray or type(value(lp)) is not np.ndarray:  # batched by vmap, or on the device
        try:
            out = _nll_batched(lp, t, weight, ignore_index, reduction, cls_axis)
        except (TypeError, ValueError) as e:
            raise _nll_devices(lp, t, weight) or e from None
        return _result(out, "NllLossBackward0", (input,))
    try:
        mask = _nll_mask(lp.shape, lp.dtype, t, weight, ignore_index, reduction == "mean")
    except TypeError as e:  # (a weight on the device)
        raise _nll_devices(lp, t, weight) or e from None
    kw = {"weights": mask, "axis": cls_axis if reduction == "none" else None}
    out = _rec1(_NLL, lp, "NllLossBackward0", input, kw)
    if out is not None:
        return out
    return _result(tp.weighted_sum(lp, **kw), "NllLossBackward0", (input,))


def _nll_devices(lp: Any, t: Any, weight: Tensor | None) -> RuntimeError | None:
    """PyTorch's error for ``nll_loss``'s arrays on two devices (as its kernel's
    device check words it), else None."""
    method = "wrapper_CUDA_nll_loss_forward" if lp.ndim <= 2 else "wrapper_CUDA_nll_loss2d_forward"
    return device_arg_clash(method, ("self", lp), ("target", t), ("weight", None if weight is None else weight._value))


def _nll_batched(lp: Any, t: Any, weight: Tensor | None, ignore_index: int, reduction: str,
                 cls_axis: int) -> Any:
    """``nll_loss`` of values batched by ``vmap`` (the input, the target or
    both) or on the device: the mask is built with ``tapegrad.numpy`` operations,
    which batch and stay on the device (out-of-range targets are not checked: that
    would read the values; PyTorch's CUDA kernel asserts on the device)."""
    c = lp.shape[cls_axis]
    classes = array_module(t).arange(c).reshape((c,) + (1,) * (lp.ndim - cls_axis - 1))
    hit = tnp.logical_and(tnp.equal(tnp.expand_dims(t, cls_axis), classes),
                          tnp.expand_dims(tnp.not_equal(t, ignore_index), cls_axis))
    mask = hit.astype(lp.dtype)
    if weight is not None:
        mask = mask * tnp.asarray(value(weight._value), lp.dtype).reshape(classes.shape)
    prod = lp * mask
    if reduction == "none":
        return -tnp.sum(prod, axis=cls_axis)
    if reduction == "sum":
        return -tnp.sum(prod)
    return -tnp.sum(prod) / tnp.sum(mask)


def _nll_mask(shape: tuple[int, ...], dtype: Any, t: Any, weight: Tensor | None, ignore_index: int,
              mean: bool) -> Any:
    """The constant of ``nll``: each sample's weight at its target class,
    negated and, for ``'mean'``, divided by the total weight (as PyTorch
    does; samples whose target is ``ignore_index`` weigh 0). The loss is then
    one multiply-and-sum: no scatter, no ``add.at``."""
    mask = np.zeros(shape, dtype)
    c = shape[0 if len(shape) == 1 else 1]
    if weight is None and len(shape) == 2 and t.shape == shape[:1] and t.size:
        lo, hi = np.minimum.reduce(t), np.maximum.reduce(t)
        if 0 <= lo and hi < c and not lo <= ignore_index <= hi:  # every target counts, once
            one = mask.dtype.type(1)
            mask[np.arange(t.size), t] = -one / mask.dtype.type(t.size) if mean else -one
            return mask
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    safe = np.where(valid, t, 0) if not valid.all() else t
    if weight is None:
        sample_w = valid.astype(dtype)
    else:
        sample_w = np.where(valid, np.asarray(value(weight._value), dtype)[safe], 0).astype(dtype)
    sample_w = sample_w / -sample_w.sum() if mean else -sample_w
    if not mean or valid.any():  # (every sample ignored: 'mean' is 0/0, nan as in PyTorch)
        sample_w = np.where(valid, sample_w, 0)  # an ignored sample weighs +0, not -0 (as PyTorch's gradient)
    if len(shape) == 1:
        mask[safe] = sample_w
    elif len(shape) == 2:
        mask[np.arange(len(safe)), safe] = sample_w
    else:
        m = np.moveaxis(mask, 1, -1)
        np.put_along_axis(m, safe[..., None], sample_w[..., None], axis=-1)
    return mask


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits ``input`` (classes on axis 1) and ``target``.

    ``target`` holds integer class indices (``nll_loss(log_softmax(input, 1),
    target)``, stable for large logits) or class probabilities of
    ``input``'s shape. ``reduction`` is ``'mean'``, ``'sum'`` or ``'none'``.

    Examples:
        >>> F.cross_entropy(torch.tensor([[0.0, 0.0]]), torch.tensor([1]))
        tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if label_smoothing:
        raise NotImplementedError("tapegrad.torch: cross_entropy(label_smoothing=...) is not supported")
    dim = 0 if input.ndim == 1 else 1
    logp = input.log_softmax(dim)
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected floating point target to have the same shape as input")
        prod = logp * target  # PyTorch's graph: -(logp * target * weight).sum(...) [/ batch: DivBackward1]
        if weight is not None:
            shape = [1] * input.ndim
            shape[dim] = -1
            prod = prod * weight.reshape(*shape)
        if reduction == "none":
            return -prod.sum(dim)
        total = -prod.sum()
        if reduction == "sum":
            return total
        return _result(tnp.divide(total._value, input.numel() // input.shape[dim]), "DivBackward1", (total,))
    return nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)


from tapegrad.torch.nn.functional_extra import (  # noqa: E402
    batch_norm,
    embedding,
    embedding_bag,
    group_norm,
    instance_norm,
    scaled_dot_product_attention,
)
from tapegrad.torch.nn.functional_resample import (  # noqa: E402
    affine_grid,
    grid_sample,
    interpolate,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
)

__getattr__ = missing_names(__name__, "torch.nn.functional")
