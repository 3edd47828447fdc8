"""``torch.nn.functional``: activations, ``linear`` and losses.

Each function is a tensor method, or a few ``tapegrad.numpy`` calls on the
tensors' values (``linear`` and ``nll_loss``: one facade primitive of
``tapegrad.torch._prims`` each) whose result gets the ``grad_fn`` name
PyTorch gives it (``AddmmBackward0``, ``NllLossBackward0``,
``MseLossBackward0``). No gradient rule lives here.

Example:
    >>> import tapegrad.torch.nn.functional as F
    >>> logits = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
    >>> F.cross_entropy(logits, torch.tensor([0]))
    tensor(0.2413, grad_fn=<NllLossBackward0>)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tapegrad.numpy import wrap as _w
from tapegrad.torch import _prims as P
from tapegrad.torch._tensor import Tensor, _promote, _rec, _rec1, _result
from tapegrad.tracer import value

__all__ = [
    "cross_entropy", "linear", "log_softmax", "mse_loss", "nll_loss", "relu", "sigmoid",
    "softmax", "tanh",
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
    t = _rec(_LINEAR, vals, "AddmmBackward0", (bias, x, weight), _ADDMM_EDGES)
    if t is not None:
        return t
    return _result(P.linear(*vals), "AddmmBackward0", (bias, x, weight))


_ADDMM_EDGES = (2, 0, ("TBackward0", 1))  # bias, x, weight.t(): where each is among linear's arguments
_LINEAR = P.linear.primitive  # type: ignore[attr-defined]
_NLL = P.nll.primitive  # type: ignore[attr-defined]


# --- losses -----------------------------------------------------------------------------------


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Any, reduction: str) -> Any:
    if reduction == "mean":
        return _w.divide(_w.sum(loss), np.asarray(loss.size, loss.dtype))
    if reduction == "sum":
        return _w.sum(loss)
    return loss


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """Squared error ``(input - target) ** 2``, averaged (``'mean'``), summed
    (``'sum'``) or elementwise (``'none'``) (``MseLossBackward0``)."""
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=2)
    a, b = _promote(input._value, target._value)
    d = _w.subtract(a, b)
    return _result(_reduce(_w.multiply(d, d), reduction), "MseLossBackward0", (input, target))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None,  # noqa: A002
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under log-probabilities ``input``.

    ``input`` has the classes on axis 1 (``(N, C)``, ``(N, C, d1, ...)``) or is
    ``(C,)`` with a 0-d target. ``weight`` (one per class) weighs each sample,
    and ``'mean'`` divides by the total weight, as PyTorch does; samples whose
    target is ``ignore_index`` count for nothing.
    """
    _check_reduction(reduction)
    lp = input._value
    t = np.asarray(value(target._value))
    if t.dtype.kind not in "iu":
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype_legacy_name()[:-6]}")
    cls_axis = 0 if lp.ndim == 1 else 1
    mask = _nll_mask(lp.shape, lp.dtype, t, weight, ignore_index, reduction == "mean")
    kw = {"mask": mask, "axis": cls_axis if reduction == "none" else None}
    out = _rec1(_NLL, lp, "NllLossBackward0", input, kw)
    if out is not None:
        return out
    return _result(P.nll(lp, **kw), "NllLossBackward0", (input,))


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

    Example:
        >>> F.cross_entropy(torch.tensor([[0.0, 0.0]]), torch.tensor([1]))
        tensor(0.6931)
    """
    _check_reduction(reduction)
    if label_smoothing:
        raise NotImplementedError("tapegrad.torch: cross_entropy(label_smoothing=...) is not supported")
    dim = 0 if input.ndim == 1 else 1
    logp = input.log_softmax(dim)
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected floating point target to have the same shape as input")
        if weight is not None:
            shape = [1] * input.ndim
            shape[dim] = -1
            target = target * weight.reshape(*shape)
        loss = -(logp * target).sum(dim)
        if reduction == "sum":
            return loss.sum()
        if reduction == "mean":
            return loss.sum() / (loss.numel() if loss.ndim else 1)  # PyTorch: DivBackward1
        return loss
    return nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
