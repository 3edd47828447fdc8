"""Tensor's elementwise math: unary functions' helpers, rounding, clamp, softmax, remainder...

The plain unary ops (``exp``, ``sin``...) are rows of the op table
(``_ops.py``); this module holds the ones with bespoke logic. Import
direction: imports ``_tensor``, ``_promote``, ``_arith``; ``_ops.py``
installs ``MathOps``' methods on ``Tensor``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.scipy import special as tsp
from tapegrad.torch import _dtype as D
from tapegrad.torch import _prims as P
from tapegrad.torch._arith import _operands, binary_op
from tapegrad.torch._graph import SCALAR_TYPE, note_attrs
from tapegrad.torch._promote import _cast, _default_float, _dims, _scalar_operand
from tapegrad.torch._tensor_base import _LOGSUMEXP, Tensor, _new, _rec1, _result, _v
from tapegrad.torch._tensor_base import OpsBase as _Base


class MathOps(_Base):
    """The methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    def _unary(self, fn: Any, name: str) -> Tensor:
        a = self._value
        prim = getattr(fn, "primitive", None)
        if prim is not None:
            t = _rec1(prim, a, name, self)
            if t is not None:
                return t
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        return _result(fn(a), name, (self,))


    def rsqrt(self) -> Tensor:
        return self._unary(lambda a: tnp.reciprocal(tnp.sqrt(a)), "RsqrtBackward0")

    def square(self) -> Tensor:
        return _result(tnp.power(self._value, 2), "PowBackward0", (self,))


    def relu(self) -> Tensor:
        return _result(P.relu(self._value), "ReluBackward0", (self,))

    def abs(self) -> Tensor:
        return _result(tnp.absolute(self._value), "AbsBackward0", (self,))

    absolute = abs


    def sign(self) -> Tensor:
        return self._rounding(tnp.sign, "SignBackward0")

    def sgn(self) -> Tensor:
        return self._rounding(tnp.sign, "SgnBackward0")

    def _rounding(self, fn: Any, name: str) -> Tensor:
        """``fn`` (a tapegrad.numpy step function: a constant, batched under
        ``vmap``) of the value, recorded as ``name`` with a zero gradient."""
        a = self._value
        r = fn(a)
        if isinstance(r, np.generic):
            r = np.asarray(r)
        if type(a) is Traced and a.dtype.kind in "fc":
            return _result(P.stepped(a, r), name, (self,))
        return _new(r)

    def floor(self) -> Tensor:
        return self._rounding(tnp.floor, "FloorBackward0")

    def ceil(self) -> Tensor:
        return self._rounding(tnp.ceil, "CeilBackward0")

    def round(self, decimals: builtins.int | None = None) -> Tensor:
        """Round half to even; PyTorch's node is ``RoundBackward1`` whenever
        ``decimals`` is given (even ``decimals=0``)."""
        if decimals is None:
            return self._rounding(tnp.round, "RoundBackward0")
        return self._rounding(lambda v: tnp.round(v, decimals), "RoundBackward1")

    def trunc(self) -> Tensor:
        return self._rounding(tnp.trunc, "TruncBackward0")

    def frac(self) -> Tensor:
        return _result(self._value - np.trunc(value(self._value)), "FracBackward0", (self,))

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._clamp(min, max, "ClampBackward1")

    def _clamp(self, min: Any, max: Any, node: str) -> Tensor:  # noqa: A002
        """``clamp``; ``node``: the node's name when the bounds are numbers
        (``clamp_min``'s is ``ClampMinBackward0``)."""
        a = self._value
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            lo = _v(min) if min is not None else None
            hi = _v(max) if max is not None else None
            # PyTorch's gradients at the bounds: to x where min <= x <= max (not
            # a tie split as maximum's), to max where min > max, and to none
            # where x < min == max
            x = value(a)
            r = a
            if lo is not None and hi is not None:
                lv, hv = value(lo), value(hi)
                r = tnp.where((x < lv) & (lv == hv), lv, r)
                r = tnp.where((x < lv) & (lv < hv), lo, r)
                r = tnp.where((x > hv) | (hv < lv), hi, r)
            elif lo is not None:
                r = tnp.where(x < value(lo), lo, r)
            else:
                r = tnp.where(x > value(hi), hi, r)
            ins = [self] + [x for x in (min, max) if isinstance(x, Tensor)]
            return _result(r, "ClampBackward0", ins)
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if isinstance(min, builtins.float) or isinstance(max, builtins.float):
            a = _scalar_operand(a, 1.0)
        return _result(tnp.clip(a, min, max), node, (self,))

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002
        return self._clamp(min, None, "ClampMinBackward0")

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        return self._clamp(None, max, "ClampMaxBackward0")

    def maximum(self, other: Tensor) -> Tensor:
        return binary_op(self, other, tnp.maximum, "MaximumBackward0")

    def minimum(self, other: Tensor) -> Tensor:
        return binary_op(self, other, tnp.minimum, "MinimumBackward0")

    def atan2(self, other: Tensor) -> Tensor:
        return binary_op(self, other, tnp.arctan2, "Atan2Backward0")

    arctan2 = atan2

    def where(self, condition: Any, other: Any) -> Tensor:
        from tapegrad.torch._creation import where

        return where(condition, self, other)

    def masked_fill(self, mask: Any, value_: Any) -> Tensor:
        a = self._value
        fill = _v(value_)
        return _result(tp.where_mask(value(_v(mask)), fill if not isinstance(fill, (builtins.float, builtins.int)) else np.asarray(fill, a.dtype), a),
                       "MaskedFillBackward0", (self,))

    def softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(tsp.softmax, dim, dtype, "SoftmaxBackward0")

    def log_softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(tsp.log_softmax, dim, dtype, "LogSoftmaxBackward0")

    def _softmax(self, fn: Any, dim: builtins.int, dtype: Any, name: str) -> Tensor:
        """``fn`` (softmax or log_softmax) along ``dim``, computed in ``dtype``
        (a cast first, as PyTorch records it)."""
        a = self._value if dtype is None else _cast(self._value, D.to_np(dtype))
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        t = _rec1(fn.primitive, a, name, self, {"axis": dim})
        if t is None:
            t = _result(fn(a, dim), name, (self,))
        return note_attrs(t, dim=dim)

    def logsumexp(self, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        kw = {"axis": _dims(dim, self.ndim), "keepdims": keepdim}
        t = _rec1(_LOGSUMEXP, self._value, "LogsumexpBackward0", self, kw)
        return t if t is not None else _result(tnp.logsumexp(self._value, **kw), "LogsumexpBackward0", (self,))


    # --- more PyTorch ops: elementwise, scatter / index ops, scans ---------------------------------------
    # Built from differentiable tapegrad.numpy calls (no gradient rules of their
    # own); each is one node named as PyTorch names it.
    def _modulo(self, other: Any, fn: Any, op: str) -> Tensor:
        """``fn(self, other)`` (remainder or fmod) with PyTorch's promotion,
        errors and names (``...Backward0`` with a number, ``1`` with a tensor)."""
        a, b, o = _operands(self, other)
        if a.dtype.kind == "b":
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")
        if a.dtype.kind in "iu" and not np.all(value(b)):
            raise RuntimeError("ZeroDivisionError")
        stem = op.capitalize()
        if o is None:
            return _result(fn(a, b), f"{stem}Backward0", (self,))
        return _result(fn(a, b), f"{stem}Backward1", (self, o))

    def remainder(self, other: Any) -> Tensor:
        """Python's modulo: the result has the sign of ``other``."""
        return self._modulo(other, tnp.remainder, "remainder")

    def fmod(self, other: Any) -> Tensor:
        """C's modulo: the result has the sign of ``self``."""
        return self._modulo(other, tnp.fmod, "fmod")

    def _float_pair(self, other: Any, fn: Any, op: str, name: str) -> Tensor:
        """``fn(self, other)`` for an op PyTorch defines on two floating tensors."""
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        a, b, o = _operands(self, other)
        if a.dtype.kind not in "fc":
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{SCALAR_TYPE[a.dtype.name]}'")
        return _result(fn(a, b), name, (self, other))

    def hypot(self, other: Tensor) -> Tensor:
        """``sqrt(self**2 + other**2)``; its gradient at (0, 0) is NaN, as PyTorch's."""
        return self._float_pair(other, tnp.hypot, "hypot", "HypotBackward0")

    def logaddexp(self, other: Tensor) -> Tensor:
        """``log(exp(self) + exp(other))``, computed stably."""
        return self._float_pair(other, tnp.logaddexp, "logaddexp", "LogaddexpBackward0")


    def logit(self, eps: builtins.float | None = None) -> Tensor:
        """``log(p / (1 - p))``; with ``eps``, ``p`` clamped to ``[eps, 1 - eps]``
        first (no gradient outside). Without it the gradient is NaN outside
        ``[0, 1]`` and infinite at 0 and 1, as PyTorch's."""
        a = self._value
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        if eps is not None:
            a = tnp.clip(a, eps, 1 - eps)
        else:
            v = value(a)
            outside = (v < 0) | (v > 1)
            if outside.any():
                a = tnp.multiply(a, np.where(outside, np.nan, 1).astype(v.dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            return _result(tsp.logit(a), "LogitBackward0", (self,))

    def nan_to_num(self, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                   neginf: builtins.float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest and
        lowest values unless given); they get no gradient."""
        a = self._value
        v = value(a)
        if v.dtype.kind not in "fc":
            return _new(v.copy())
        clean = np.nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf)
        return _result(tp.where_mask(np.isfinite(v), a, clean), "NanToNumBackward0", (self,))

    def xlogy(self, other: Any) -> Tensor:
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN).
        PyTorch's gradients: none to ``self`` where it is 0 and ``other <= 0``;
        ``self / other`` to ``other`` (so NaN at (0, 0))."""
        a, b, o = _operands(self, other, div=True)
        if o is None:
            b = np.asarray(b, value(a).dtype)
        xv, yv = value(a), value(b)
        # (where3 passes a zero cotangent to log there, whose rule divides it by y: 0 / 0 at y = 0)
        zero = (xv == 0) & ((yv <= 0) | (yv == np.inf))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = tnp.multiply(a, tp.where_mask(zero, 0.0, tnp.log(b)))
        if o is None:
            return _result(r, "XlogyBackward2", (self,))
        return _result(r, "XlogyBackward0", (self, o))
