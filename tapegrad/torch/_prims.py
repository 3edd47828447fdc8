"""The facade's own primitives: rules that follow PyTorch's conventions where
tapegrad.numpy's do not.

Everything else the facade records is a public primitive of tapegrad.numpy
(``tapegrad.numpy``, ``tapegrad.numpy.primitives``) or tapegrad.scipy; the
primitives here exist only because PyTorch's gradient at a singular point,
or PyTorch's way of computing a value, differs from the plain derivative:

- ``relu``: ``maximum(x, 0)`` with the rule ``where(ans > 0, g, 0)``: as
  ``maximum`` its rule would split ties at 0.
- ``stepped``: the result of a step function (``floor``, ``round``,
  ``sign``...) with an exact zero gradient.
- ``elu``: ``x`` where ``x > 0``, else ``alpha expm1(x)``, with PyTorch's two
  rules: ``alpha exp(x)`` (``EluBackward0``), or ``ans + alpha`` from the
  result (``EluBackward1``, in place). tapegrad.numpy's ``expm1`` rule,
  ``ans + 1``, keeps no digits of ``exp(x)`` for x << 0 (1e-3 off at -30).
- ``norm_sqrt``: the square root that ends a 2-norm or a standard deviation,
  whose derivative PyTorch takes as 0 where the result is 0 (the gradient
  of ``x.norm()`` at ``x = 0``, or of ``x.std()`` over equal values, is 0
  there, not NaN).
- ``bce`` and ``bce_logits``: binary cross-entropy of probabilities (logs
  clamped at -100) and of logits (through a stable ``log(sigmoid(x))``),
  computed as PyTorch computes them, with PyTorch's gradient formulas as
  rules. Those are not the derivatives of the values as rounded: PyTorch
  clamps ``p (1 - p)`` at 1e-12 in the gradient (finite at p = 0 or 1,
  where the clamped logs have none), and its logits gradient
  ``sigmoid(x) - y`` is 0 where the loss is 1.9e-22 (x = 50, y = 1).
- ``to_device``: PyTorch's device model (``tensor.to("cuda")``): moves an
  array between NumPy and CuPy; the rule moves the cotangent back.

Rules are written with public tapegrad.numpy functions (so
``create_graph=True`` differentiates them again) and accept cotangents and
tangents with leading batch axes (axes are counted from the end). Each has a
batching rule (``vmap``): all are elementwise but ``to_device``, which takes
any shape.

"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.backend import array_module, device_of, import_cupy
from tapegrad.core.primitive import defjvp, defvjp, primitive
from tapegrad.core.traced import value
from tapegrad.numpy import primitives as tp
from tapegrad.scipy.special import expit

__all__ = ["bce", "bce_logits", "elu", "norm_sqrt", "relu", "stepped", "to_device"]


# --- batching (vmap): each rule one call on the whole batch -----------------------------------------


def _to_rank(a: Any, nd: int) -> Any:
    """Batched array ``a`` (batch on axis 0) with ones after the batch axis up to
    per-example rank ``nd``: it then broadcasts as its examples do."""
    shape = tuple(np.shape(a))
    return tnp.reshape(a, shape[:1] + (1,) * (nd + 1 - len(shape)) + shape[1:]) if len(shape) <= nd else a


def _elementwise(prim: Any) -> None:
    def rule(args: Any, batched: Any, size: int, **kw: Any) -> Any:
        nd = max(np.ndim(a) - b for a, b in zip(args, batched))
        return prim(*[_to_rank(a, nd) if b else a for a, b in zip(args, batched)], **kw)

    tg.defbatch(prim, rule)


def _relu(x: Any) -> Any:
    return array_module(x).maximum(x, x.dtype.type(0))


relu = primitive(_relu, "relu", batched=True)
defvjp(relu, lambda ans, x: lambda g: tp.where_mask(value(ans) > 0, g, 0.0))  # (+0 where off, as PyTorch)
defjvp(relu, lambda ans, x: lambda t: tp.where_mask(value(ans) > 0, t, 0.0))
_elementwise(relu)


def _stepped(x: Any, r: Any) -> Any:
    return r


# ``stepped(x, r)`` is ``r``, a step function of ``x`` (its floor, sign...)
# computed outside the tape: zero gradient to ``x``, exactly (a cotangent's
# NaN or infinity does not pass into ``0 * g``), and a constant: under
# ``create_graph`` it does not require grad (PyTorch's ``zeros_like(grad)``)
def _zeros_as(g: Any) -> Any:
    return tnp.zeros_like(g)


stepped = primitive(_stepped, "stepped", batched=True)
defvjp(stepped, lambda ans, x, r: _zeros_as, None)
defjvp(stepped, lambda ans, x, r: _zeros_as, None)


def _batch_stepped(args: Any, batched: Any, size: int) -> Any:
    (x, r), (bx, br) = args, batched
    nd = np.ndim(r) - br  # the result is r's: x gets r's per-example rank, r the batch axis
    return stepped(_to_rank(x, nd) if bx else x, r if br else tnp.broadcast_to(r, (size,) + np.shape(r)))


tg.defbatch(stepped, _batch_stepped)
def _elu(x: Any, alpha: float, from_result: bool = False) -> Any:
    xp = array_module(x)
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0)) * alpha)


elu = primitive(_elu, "elu", batched=True)


def _elu_rule(ans: Any, x: Any, alpha: float, from_result: bool = False) -> Any:
    neg = value(x) <= 0
    if from_result:  # (inside the rule: an op on ``ans`` here would be recorded before ``ans`` has its entry)
        return lambda g: tp.where_mask(neg, g * (ans + alpha), g)
    d = tnp.exp(tp.where_mask(neg, x, 0.0)) * alpha
    return lambda g: tp.where_mask(neg, g * d, g)


defvjp(elu, _elu_rule)  # (elementwise: the same rule pushes tangents forward)
defjvp(elu, _elu_rule)
_elementwise(elu)


def _to_device(x: Any, device: str) -> Any:
    if device == "cuda":
        cupy = import_cupy()
        return cupy.asarray(x)
    if type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


to_device = primitive(_to_device, "to_device", batched=True)
defvjp(to_device, lambda ans, x, device: (lambda dev: lambda g: to_device(g, dev))(device_of(x)))
tg.defbatch(to_device, lambda args, batched, size, **kw: to_device(*args, **kw))  # (any shape)


def _half_over(ans: Any) -> Any:
    """d sqrt(x)/dx = 1 / (2 sqrt(x)), taken as 0 where sqrt(x) is 0."""
    zero = value(ans) == 0
    return tp.where_mask(zero, 0.0, 0.5 / tp.where_mask(zero, 1.0, ans))


norm_sqrt = primitive(lambda x: array_module(x).sqrt(x), "norm_sqrt", batched=True)
defvjp(norm_sqrt, lambda ans, x: lambda g: g * _half_over(ans))
defjvp(norm_sqrt, lambda ans, x: lambda t: t * _half_over(ans))
_elementwise(norm_sqrt)


# --- binary cross-entropy -----------------------------------------------------------------------------


def _bce(p: Any, y: Any) -> Any:
    """PyTorch's elementwise binary cross-entropy of probabilities ``p`` and
    targets ``y``: ``-(y log p + (1 - y) log(1 - p))``, each log clamped at -100."""
    xp = array_module(p)
    with np.errstate(divide="ignore"):
        return (y - 1) * xp.maximum(xp.log1p(-p), -100) - y * xp.maximum(xp.log(p), -100)


bce = primitive(_bce, "bce", batched=True)
_BCE_EPS = float(np.float32(1e-12))  # PyTorch's floor of p (1 - p) in the gradient (a float constant)


def _bce_dp(ans: Any, p: Any, y: Any) -> Any:
    """d/dp: ``(p - y) / max(p (1 - p), 1e-12)``, finite at p = 0 and 1 (PyTorch's formula)."""
    return lambda g: g * (p - y) / tnp.maximum((1 - p) * p, _BCE_EPS)


def _bce_dy(ans: Any, p: Any, y: Any) -> Any:
    """d/dy: ``-logit(p)`` (infinite at p = 0 and 1, as PyTorch's)."""
    def rule(g: Any) -> Any:
        with np.errstate(divide="ignore"):
            return g * -tnp.log(p / (1 - p))

    return rule


defvjp(bce, _bce_dp, _bce_dy)  # (elementwise: the same rules push tangents forward)
defjvp(bce, _bce_dp, _bce_dy)
_elementwise(bce)


def _bce_logits(x: Any, y: Any, pw: Any) -> Any:
    """PyTorch's elementwise ``-(pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x)))``
    of logits ``x`` (``pw``: the positive weight, a constant, or None for 1),
    computed as ``(1 - y) x - log_sigmoid(x) (1 + (pw - 1) y)``: no overflow."""
    xp = array_module(x)
    ls = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))  # log(sigmoid(x)), as PyTorch computes it
    if pw is not None:
        ls = ls * ((pw - 1) * y + 1)
    return (1 - y) * x - ls


bce_logits = primitive(_bce_logits, "bce_logits", batched=True)


def _log_sigmoid(x: Any) -> Any:
    return tnp.minimum(x, 0.0) - tnp.log1p(tnp.exp(-tnp.absolute(x)))


def _bce_logits_dx(ans: Any, x: Any, y: Any, pw: Any) -> Any:
    """d/dx: ``sigmoid(x) - y``, or ``(1 + pw y - y) sigmoid(x) - pw y`` (PyTorch's formulas)."""
    if pw is None:
        return lambda g: g * (expit(x) - y)
    return lambda g: g * ((pw * y + 1 - y) * expit(x) - pw * y)


def _bce_logits_dy(ans: Any, x: Any, y: Any, pw: Any) -> Any:
    """d/dy: ``-x``, or ``log_sigmoid(-x) - pw log_sigmoid(x)``."""
    if pw is None:
        return lambda g: g * -x
    return lambda g: g * (_log_sigmoid(-x) - _log_sigmoid(x) * pw)


defvjp(bce_logits, _bce_logits_dx, _bce_logits_dy, None)
defjvp(bce_logits, _bce_logits_dx, _bce_logits_dy, None)
_elementwise(bce_logits)  # (pw: None, or an array that broadcasts)


