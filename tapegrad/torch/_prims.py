"""Primitives the facade needs that tapegrad.numpy lacks.

- ``sigmoid`` is ``tapegrad.scipy.special.expit`` (a primitive for numerical
  stability whose rule reuses the answer).
- ``relu``: ``maximum(x, 0)`` with the rule ``where(ans > 0, g, 0)``: as
  ``maximum`` its rule would split ties at 0.
- ``stepped``: the result of a step function (``floor``, ``round``,
  ``sign``...) with an exact zero gradient.
- ``elu``: ``x`` where ``x > 0``, else ``alpha expm1(x)``, with PyTorch's two
  rules: ``alpha exp(x)`` (``EluBackward0``), or ``ans + alpha`` from the
  result (``EluBackward1``, in place). tapegrad.numpy's ``expm1`` rule,
  ``ans + 1``, keeps no digits of ``exp(x)`` for x << 0 (1e-3 off at -30).
- ``to_device``: moves an array between NumPy and CuPy; the rule moves the
  cotangent back.
- ``norm_sqrt``: the square root that ends a 2-norm or a standard deviation,
  whose derivative PyTorch takes as 0 where the result is 0 (the gradient
  of ``x.norm()`` at ``x = 0``, or of ``x.std()`` over equal values, is 0
  there, not NaN).
- ``linear`` (``x @ w.T + b``), ``log_softmax``, ``softmax``, ``nll`` and
  ``mean``: what PyTorch computes as one node (``AddmmBackward0``,
  ``LogSoftmaxBackward0``, ``SoftmaxBackward0``, ``NllLossBackward0``,
  ``MeanBackward0``) is one tape entry here too, where a composition of
  tapegrad.numpy calls would record several: fewer entries to record and
  replay, and no intermediate kept.
- ``bce`` and ``bce_logits``: binary cross-entropy of probabilities (logs
  clamped at -100) and of logits (through a stable ``log(sigmoid(x))``),
  computed as PyTorch computes them, with PyTorch's gradient formulas as
  rules. Those are not the derivatives of the values as rounded: PyTorch
  clamps ``p (1 - p)`` at 1e-12 in the gradient (finite at p = 0 or 1,
  where the clamped logs have none), and its logits gradient
  ``sigmoid(x) - y`` is 0 where the loss is 1.9e-22 (x = 50, y = 1).

Rules are written with tapegrad.numpy functions (so ``create_graph=True``
differentiates them again) and accept cotangents and tangents with leading
batch axes (axes are counted from the end).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapegrad.backend import array_module, device_of
from tapegrad.numpy import derived as _d
from tapegrad.numpy import wrap as _w
from tapegrad.primitive import defjvp, defvjp, primitive
from tapegrad.scipy.special import expit as sigmoid
from tapegrad.tracer import value

__all__ = ["bce", "bce_logits", "elu", "linear", "log_softmax", "mean", "nll", "norm_sqrt", "relu", "sigmoid",
           "softmax", "stepped", "to_device"]


def _relu(x: Any) -> Any:
    return array_module(x).maximum(x, x.dtype.type(0))


relu = primitive(_relu, "relu")
defvjp(relu, lambda ans, x: lambda g: _w.where3(value(ans) > 0, g, 0.0))  # (+0 where off, as PyTorch)
defjvp(relu, lambda ans, x: lambda t: _w.where3(value(ans) > 0, t, 0.0))


def _stepped(x: Any, r: Any) -> Any:
    return r


# ``stepped(x, r)`` is ``r``, a step function of ``x`` (its floor, sign...)
# computed outside the tape: zero gradient to ``x``, exactly (a cotangent's
# NaN or infinity does not pass into ``0 * g``)
stepped = primitive(_stepped, "stepped")
defvjp(stepped, lambda ans, x, r: lambda g: _w.where3(True, 0.0, g), None)
defjvp(stepped, lambda ans, x, r: lambda t: _w.where3(True, 0.0, t), None)


def _elu(x: Any, alpha: float, from_result: bool = False) -> Any:
    xp = array_module(x)
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)) * alpha)


elu = primitive(_elu, "elu")


def _elu_rule(ans: Any, x: Any, alpha: float, from_result: bool = False) -> Any:
    neg = value(x) <= 0
    if from_result:  # (inside the rule: an op on ``ans`` here would be recorded before ``ans`` has its entry)
        return lambda g: _w.where3(neg, g * (ans + alpha), g)
    d = _w.exp(_w.where3(neg, x, 0.0)) * alpha
    return lambda g: _w.where3(neg, g * d, g)


defvjp(elu, _elu_rule)  # (elementwise: the same rule pushes tangents forward)
defjvp(elu, _elu_rule)


def _to_device(x: Any, device: str) -> Any:
    if device == "cuda":
        import cupy

        return cupy.asarray(x)
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


to_device = primitive(_to_device, "to_device")
defvjp(to_device, lambda ans, x, device: (lambda dev: lambda g: to_device(g, dev))(device_of(x)))


def _half_over(ans: Any) -> Any:
    """d sqrt(x)/dx = 1 / (2 sqrt(x)), taken as 0 where sqrt(x) is 0."""
    zero = value(ans) == 0
    return _w.where3(zero, 0.0, 0.5 / _w.where3(zero, 1.0, ans))


norm_sqrt = primitive(lambda x: array_module(x).sqrt(x), "norm_sqrt")
defvjp(norm_sqrt, lambda ans, x: lambda g: g * _half_over(ans))
defjvp(norm_sqrt, lambda ans, x: lambda t: t * _half_over(ans))


# --- nn.Linear: x @ w.T + b --------------------------------------------------------------------


def _linear(x: Any, w: Any, b: Any) -> Any:
    """``x @ w.T + b``: ``x`` is (N, in), ``w`` (out, in), ``b`` (out,)."""
    out = x @ w.T
    if out.dtype == b.dtype:
        out += b
        return out
    return out + b


def _swap(a: Any) -> Any:
    """``a`` with its last two axes swapped (leading batch axes kept)."""
    return _w.transpose(a) if a.ndim == 2 else _d.swapaxes(a, -1, -2)


linear = primitive(_linear, "linear")
defvjp(linear,
       lambda ans, x, w, b: lambda g: _w.matmul(g, w),
       lambda ans, x, w, b: lambda g: _w.matmul(_swap(g), x),
       lambda ans, x, w, b: lambda g: _w.sum(g, axis=-2))
defjvp(linear,
       lambda ans, x, w, b: lambda t: _w.matmul(t, _w.transpose(w)),
       lambda ans, x, w, b: lambda t: _w.matmul(x, _swap(t)),
       lambda ans, x, w, b: lambda t: _d.expand_dims(t, -2))


# --- softmax, log_softmax ------------------------------------------------------------------------


def _shifted(x: Any, axis: int) -> Any:
    """``x`` minus its maximum along ``axis`` (0 where that is not finite)."""
    if type(x) is np.ndarray:  # the ufuncs' own reductions: fromnumeric's wrappers cost as much
        if x.size:
            m = np.maximum.reduce(x, axis, keepdims=True)
            return x - np.where(np.isfinite(m), m, 0)
        return x - 0
    xp = array_module(x)
    m = xp.max(x, axis=axis, keepdims=True) if x.size else xp.zeros((1,) * x.ndim, x.dtype)
    return x - xp.where(xp.isfinite(m), m, 0)


def _sum_kept(x: Any, axis: int) -> Any:
    if type(x) is np.ndarray:
        return np.add.reduce(x, axis, keepdims=True)
    return array_module(x).sum(x, axis=axis, keepdims=True)


def _log_softmax(x: Any, axis: int) -> Any:
    s = _shifted(x, axis)
    e = np.exp(s) if type(s) is np.ndarray else array_module(s).exp(s)
    lse = _sum_kept(e, axis)
    s -= np.log(lse) if type(lse) is np.ndarray else array_module(lse).log(lse)
    return s


def _softmax(x: Any, axis: int) -> Any:
    s = _shifted(x, axis)
    e = np.exp(s) if type(s) is np.ndarray else array_module(s).exp(s)
    e /= _sum_kept(e, axis)
    return e


log_softmax = primitive(_log_softmax, "log_softmax")
softmax = primitive(_softmax, "softmax")


def _from_end(axis: int, ndim: int) -> int:
    return axis - ndim if axis >= 0 else axis


def _vjp_log_softmax(ans: Any, x: Any, axis: int) -> Any:
    ax = _from_end(axis, x.ndim)
    return lambda g: g - _w.exp(ans) * _w.sum(g, axis=ax, keepdims=True)


def _jvp_log_softmax(ans: Any, x: Any, axis: int) -> Any:
    ax = _from_end(axis, x.ndim)
    return lambda t: t - _w.sum(_w.exp(ans) * t, axis=ax, keepdims=True)


def _vjp_softmax(ans: Any, x: Any, axis: int) -> Any:  # the Jacobian is symmetric: also the JVP
    ax = _from_end(axis, x.ndim)
    return lambda g: ans * (g - _w.sum(g * ans, axis=ax, keepdims=True))


defvjp(log_softmax, _vjp_log_softmax)
defjvp(log_softmax, _jvp_log_softmax)
defvjp(softmax, _vjp_softmax)
defjvp(softmax, _vjp_softmax)


# --- nll: the weighted sum behind nll_loss ----------------------------------------------------------


def _nll(lp: Any, mask: Any, axis: int | None) -> Any:
    """``sum(lp * mask)``, over every axis (``axis`` None) or over ``axis``.
    ``mask`` (a constant of ``lp``'s shape) holds each sample's weight, with
    the sign and any normaliser, at its target class and 0 elsewhere."""
    prod = lp * mask
    if type(prod) is np.ndarray:
        return np.add.reduce(prod, axis)
    return array_module(prod).sum(prod, axis=axis)


nll = primitive(_nll, "nll")


def _vjp_nll(ans: Any, lp: Any, mask: Any, axis: int | None) -> Any:
    kept = tuple(1 if axis is None or i == axis else n for i, n in enumerate(lp.shape))
    nd = ans.ndim
    return lambda g: _w.reshape_c(g, g.shape[: g.ndim - nd] + kept) * mask


def _jvp_nll(ans: Any, lp: Any, mask: Any, axis: int | None) -> Any:
    axes = tuple(range(-lp.ndim, 0)) if axis is None else _from_end(axis, lp.ndim)
    return lambda t: _w.sum(t * mask, axis=axes)


defvjp(nll, _vjp_nll, None)
defjvp(nll, _jvp_nll, None)


# --- mean ---------------------------------------------------------------------------------------------


def _count(shape: tuple[int, ...], axis: Any) -> int:
    return math.prod(shape[a] for a in _d.normalize_axes(axis, len(shape)))


def _mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if type(x) is np.ndarray:  # the ufunc's reduction: np.sum's wrapper costs as much
        s = np.add.reduce(x, axis, keepdims=keepdims)  # type: ignore[call-overload]
    else:
        s = array_module(x).sum(x, axis=axis, keepdims=keepdims)
    return s / _count(x.shape, axis)


mean = primitive(_mean, "mean")


def _vjp_mean(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    shape, nd, n = x.shape, ans.ndim, _count(x.shape, axis)
    axes = _d.normalize_axes(axis, len(shape))
    kept = tuple(1 if i in axes else k for i, k in enumerate(shape))

    def vjp(g: Any) -> Any:
        lead = g.shape[: g.ndim - nd]
        return _w.broadcast_to(_w.reshape_c(g / n, lead + kept), lead + shape)

    return vjp


def _jvp_mean(ans: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    axes = tuple(a - x.ndim for a in _d.normalize_axes(axis, x.ndim))
    n = _count(x.shape, axis)
    return lambda t: _w.sum(t, axis=axes, keepdims=keepdims) / n


defvjp(mean, _vjp_mean)
defjvp(mean, _jvp_mean)


# --- binary cross-entropy -----------------------------------------------------------------------------


def _bce(p: Any, y: Any) -> Any:
    """PyTorch's elementwise binary cross-entropy of probabilities ``p`` and
    targets ``y``: ``-(y log p + (1 - y) log(1 - p))``, each log clamped at -100."""
    xp = array_module(p)
    with np.errstate(divide="ignore"):
        return (y - 1) * xp.maximum(xp.log1p(-p), -100) - y * xp.maximum(xp.log(p), -100)


bce = primitive(_bce, "bce")
_BCE_EPS = float(np.float32(1e-12))  # PyTorch's floor of p (1 - p) in the gradient (a float constant)


def _bce_dp(ans: Any, p: Any, y: Any) -> Any:
    """d/dp: ``(p - y) / max(p (1 - p), 1e-12)``, finite at p = 0 and 1 (PyTorch's formula)."""
    return lambda g: g * (p - y) / _w.maximum((1 - p) * p, _BCE_EPS)


def _bce_dy(ans: Any, p: Any, y: Any) -> Any:
    """d/dy: ``-logit(p)`` (infinite at p = 0 and 1, as PyTorch's)."""
    def rule(g: Any) -> Any:
        with np.errstate(divide="ignore"):
            return g * -_w.log(p / (1 - p))

    return rule


defvjp(bce, _bce_dp, _bce_dy)  # (elementwise: the same rules push tangents forward)
defjvp(bce, _bce_dp, _bce_dy)


def _bce_logits(x: Any, y: Any, pw: Any) -> Any:
    """PyTorch's elementwise ``-(pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x)))``
    of logits ``x`` (``pw``: the positive weight, a constant, or None for 1),
    computed as ``(1 - y) x - log_sigmoid(x) (1 + (pw - 1) y)``: no overflow."""
    xp = array_module(x)
    ls = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))  # log(sigmoid(x)), as PyTorch computes it
    if pw is not None:
        ls = ls * ((pw - 1) * y + 1)
    return (1 - y) * x - ls


bce_logits = primitive(_bce_logits, "bce_logits")


def _log_sigmoid(x: Any) -> Any:
    return _w.minimum(x, 0.0) - _w.log1p(_w.exp(-_w.absolute(x)))


def _bce_logits_dx(ans: Any, x: Any, y: Any, pw: Any) -> Any:
    """d/dx: ``sigmoid(x) - y``, or ``(1 + pw y - y) sigmoid(x) - pw y`` (PyTorch's formulas)."""
    if pw is None:
        return lambda g: g * (sigmoid(x) - y)
    return lambda g: g * ((pw * y + 1 - y) * sigmoid(x) - pw * y)


def _bce_logits_dy(ans: Any, x: Any, y: Any, pw: Any) -> Any:
    """d/dy: ``-x``, or ``log_sigmoid(-x) - pw log_sigmoid(x)``."""
    if pw is None:
        return lambda g: g * -x
    return lambda g: g * (_log_sigmoid(-x) - _log_sigmoid(x) * pw)


defvjp(bce_logits, _bce_logits_dx, _bce_logits_dy, None)
defjvp(bce_logits, _bce_logits_dx, _bce_logits_dy, None)
