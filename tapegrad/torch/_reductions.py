"""Tensor's reductions: sum, mean, max/min, sort, var/std, norm, scans, aminmax.

Import direction: imports ``_tensor`` and ``_promote``; the op table
(``_ops.py``) installs ``ReductionOps``' methods on ``Tensor``.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.traced import value
from tapegrad.numpy import primitives as tp
from tapegrad.torch import _dtype as D
from tapegrad.torch import _prims as P
from tapegrad.torch._batched import _const
from tapegrad.torch._graph import SCALAR_TYPE, note_attrs
from tapegrad.torch._promote import _cast, _dim, _dims
from tapegrad.torch._tensor_base import _MEAN, _SUM, Tensor, _multi, _new, _rec1, _result, _viewed
from tapegrad.torch._tensor_base import OpsBase as _Base


class _ReturnTypes(tuple):
    """PyTorch's named (values, indices) result of ``max(dim)`` and friends."""

    _name = "max"

    def __new__(cls, values: Any, indices: Any, name: str = "max") -> _ReturnTypes:
        self = super().__new__(cls, (values, indices))
        self._name = name
        return self

    @property
    def values(self) -> Any:
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]

    _fields = ("values", "indices")

    def __repr__(self) -> str:
        a, b = self._fields
        return f"torch.return_types.{self._name}(\n{a}={self[0]!r},\n{b}={self[1]!r})"


# --- helpers of the extra PyTorch ops (scatter, index_add, aminmax ...; see Tensor's section) ------


class _MinMax(_ReturnTypes):
    """PyTorch's named (min, max) result of ``aminmax``."""

    _fields = ("min", "max")

    def __new__(cls, mn: Any, mx: Any) -> _MinMax:
        return super().__new__(cls, mn, mx, "aminmax")  # type: ignore[return-value]

    @property
    def min(self) -> Any:
        return self[0]

    @property
    def max(self) -> Any:
        return self[1]


class ReductionOps(_Base):
    """The methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    # --- reductions ------------------------------------------------------------------------------------
    def sum(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        dt = D.to_np(dtype) if dtype is not None else (np.int64 if a.dtype.kind in "bi" else None)
        if dim is None:
            if dt is None:
                t = _rec1(_SUM, a, "SumBackward0", self)
                if t is not None:
                    return t
            return _result(tnp.sum(a, dtype=dt), "SumBackward0", (self,))
        axis = _dims(dim, a.ndim)
        if dt is None:
            t = _rec1(_SUM, a, "SumBackward1", self, {"axis": axis, "keepdims": keepdim})
            if t is not None:
                return note_attrs(t, dim=dim, keepdim=keepdim)
        return note_attrs(_result(tnp.sum(a, axis=axis, keepdims=keepdim, dtype=dt), "SumBackward1", (self,)),
                          dim=dim, keepdim=keepdim)

    def nansum(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        a = self._value
        clean = tp.where_mask(np.isnan(value(a)), np.zeros((), a.dtype), a)
        return _result(tnp.sum(clean, axis=_dims(dim, a.ndim), keepdims=keepdim), "NansumBackward0", (self,))

    def mean(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        if dtype is not None:
            a = _cast(a, D.to_np(dtype))
        if a.dtype.kind not in "fc":
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self._legacy_dtype_name()[:-6]}"
            )
        kw = None if dim is None else {"axis": _dims(dim, a.ndim), "keepdims": keepdim}
        name = "MeanBackward0" if dim is None else "MeanBackward1"
        t = _rec1(_MEAN, a, name, self, kw)
        t = t if t is not None else _result(tp.mean(a, **(kw or {})), name, (self,))
        if dim is not None:
            note_attrs(t, dim=dim, keepdim=keepdim)
        return t

    def prod(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        if dim is None:
            return _result(tnp.prod(a), "ProdBackward0", (self,))
        return _result(tnp.prod(a, axis=dim, keepdims=keepdim), "ProdBackward1", (self,))

    def _minmax(self, dim: Any, keepdim: builtins.bool, reducer: Any, arg: Any, name: str, other: Any = None) -> Any:
        a = self._value
        if isinstance(dim, Tensor):
            other = dim
        if other is not None:
            return (self.maximum if name == "max" else self.minimum)(other)
        cap = name.capitalize()
        if dim is None:
            return _result(reducer(a), f"{cap}Backward1", (self,))
        idx = arg(value(a), axis=dim, keepdims=True)
        vals = tnp.take_along_axis(a, idx, dim)
        if not keepdim:
            vals = tnp.squeeze(vals, dim)
            idx = np.squeeze(idx, dim)
        return _ReturnTypes(_result(vals, f"{cap}Backward0", (self,)), _const(idx, np.int64), name)

    def max(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._minmax(dim, keepdim, tnp.amax, np.argmax, "max")

    def min(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._minmax(dim, keepdim, tnp.amin, np.argmin, "min")

    def amax(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        d = None if dim == () else _dims(dim, self.ndim)
        return _result(tnp.amax(self._value, axis=d, keepdims=keepdim), "AmaxBackward0", (self,))

    def amin(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        d = None if dim == () else _dims(dim, self.ndim)
        return _result(tnp.amin(self._value, axis=d, keepdims=keepdim), "AminBackward0", (self,))

    def argmax(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _const(np.argmax(value(self._value), axis=dim, keepdims=keepdim), np.int64)

    def argmin(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _const(np.argmin(value(self._value), axis=dim, keepdims=keepdim), np.int64)

    def argsort(self, dim: builtins.int = -1, descending: builtins.bool = False) -> Tensor:
        v = value(self._value)
        idx = np.argsort(-v if descending else v, axis=dim, kind="stable")
        return _const(idx, np.int64)

    def sort(self, dim: builtins.int = -1, descending: builtins.bool = False) -> Any:
        idx = self.argsort(dim, descending)
        vals = _result(tnp.take_along_axis(self._value, value(idx._value), dim), "SortBackward0", (self,))
        return _ReturnTypes(vals, idx, "sort")

    def unique(self, sorted: builtins.bool = True, return_inverse: builtins.bool = False,  # noqa: A002
               return_counts: builtins.bool = False, dim: Any = None) -> Any:
        """The distinct values (sorted, as PyTorch's CPU kernel gives them
        whatever ``sorted`` says), with the inverse indices and counts when asked."""
        v = value(self._value)
        _, first, inverse, counts = np.unique(v, return_index=True, return_inverse=True, return_counts=True,
                                              axis=None if dim is None else _dim(dim, self.ndim))
        if dim is None:
            out = _result(tnp.take(tnp.ravel(self._value), first), "Unique2Backward0", (self,))
        else:
            out = _result(tnp.take(self._value, first, axis=_dim(dim, self.ndim)), "UniqueDimBackward0", (self,))
        extra = []
        if return_inverse:
            extra.append(_new(np.asarray(inverse, np.int64).reshape(v.shape if dim is None else -1)))
        if return_counts:
            extra.append(_new(np.asarray(counts, np.int64)))
        return (out, *extra) if extra else out

    def topk(self, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True, sorted: builtins.bool = True) -> Any:  # noqa: A002
        idx = self.argsort(dim, descending=largest)
        sl = [slice(None)] * self.ndim
        sl[dim] = slice(0, k)
        ii = value(idx._value)[tuple(sl)]
        vals = _result(tnp.take_along_axis(self._value, ii, dim), "TopkBackward0", (self,))
        return _ReturnTypes(vals, _new(ii), "topk")

    def _var(self, dim: Any, unbiased: Any, keepdim: builtins.bool, correction: Any) -> Any:
        ddof = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
        return tnp.var(self._value, axis=_dims(dim, self.ndim), ddof=ddof, keepdims=keepdim)

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *, correction: Any = None) -> Tensor:
        if isinstance(dim, builtins.bool):
            dim, unbiased = None, dim
        return _result(self._var(dim, unbiased, keepdim, correction), "VarBackward0", (self,))

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *, correction: Any = None) -> Tensor:
        if isinstance(dim, builtins.bool):
            dim, unbiased = None, dim
        return _result(P.norm_sqrt(self._var(dim, unbiased, keepdim, correction)), "StdBackward0", (self,))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        a = self._value
        d = _dims(dim, self.ndim)
        if p in ("fro", 2, 2.0):
            r = P.norm_sqrt(tnp.sum(a * a if a.dtype.kind != "c" else tnp.real(a * tnp.conjugate(a)), axis=d, keepdims=keepdim))
        elif p in (1, 1.0):
            r = tnp.sum(tnp.absolute(a), axis=d, keepdims=keepdim)
        elif p == math.inf:
            r = tnp.amax(tnp.absolute(a), axis=d, keepdims=keepdim)
        elif p == -math.inf:
            r = tnp.amin(tnp.absolute(a), axis=d, keepdims=keepdim)
        elif p == 0:  # the count of nonzeros, with PyTorch's zero gradient (a step function of |a|)
            m = tnp.absolute(a)
            r = tnp.sum(P.stepped(m, (value(m) != 0).astype(value(m).dtype)), axis=d, keepdims=keepdim)
        else:
            r = tnp.power(tnp.sum(tnp.power(tnp.absolute(a), p), axis=d, keepdims=keepdim), 1.0 / p)
        return _result(r, "LinalgVectorNormBackward0", (self,))

    def all(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.all(value(self._value), axis=dim, keepdims=keepdim)))

    def any(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.any(value(self._value), axis=dim, keepdims=keepdim)))

    def count_nonzero(self, dim: Any = None) -> Tensor:
        return _new(np.asarray(np.count_nonzero(value(self._value), axis=dim), np.int64))

    def bincount(self, weights: Any = None, minlength: builtins.int = 0) -> Tensor:
        """How often each value 0..max occurs in this 1-d tensor of
        non-negative integers (at least ``minlength`` bins); with ``weights``
        (1-d, one per element) the sum of the weights per bin, in their dtype
        (float64 for integer weights). Not differentiable (PyTorch defines no
        derivative either)."""
        v = value(self._value)
        if v.ndim != 1 or v.dtype.kind not in "iub" or (v.size and v.min() < 0):
            if v.dtype.kind == "f" and v.ndim == 1:
                raise NotImplementedError(f'"bincount_cpu" not implemented for {SCALAR_TYPE.get(v.dtype.name, v.dtype.name)!r}')
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        if minlength < 0:
            raise RuntimeError("minlength should be >= 0")
        if weights is None:
            return _new(np.bincount(v, minlength=minlength).astype(np.int64))
        w = value(weights._value) if isinstance(weights, Tensor) else np.asarray(weights)
        if w.ndim != 1 or w.shape[0] != v.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
        return _new(np.bincount(v, weights=w, minlength=minlength).astype(out_dtype))

    def cumsum(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return _result(tnp.cumsum(self._value, axis=dim), "CumsumBackward0", (self,))

    def cumprod(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return _result(tnp.cumprod(self._value, axis=dim), "CumprodBackward0", (self,))

    def trace(self) -> Tensor:
        return _result(tnp.trace(self._value), "TraceBackward0", (self,))

    def diag(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(tnp.diag(self._value, diagonal), "DiagonalBackward0_copy" if self.ndim == 2 else "DiagEmbedBackward0", (self,))

    def diagonal(self, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> Tensor:
        return _viewed(_result(tnp.diagonal(self._value, offset, dim1, dim2), "DiagonalBackward0", (self,)), self,
                       "diagonal", (offset, dim1, dim2))

    def triu(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(tnp.triu(self._value, diagonal), "TriuBackward0", (self,))

    def tril(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(tnp.tril(self._value, diagonal), "TrilBackward0", (self,))


    def aminmax(self, *, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The named pair ``(min, max)`` over ``dim`` (all elements without it),
        sharing one ``AminmaxBackward0``; ties share the gradient evenly."""
        a = self._value
        axis = None if dim is None or a.ndim == 0 else _dim(dim, a.ndim)
        if a.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        rs = [f(a, axis=axis, keepdims=keepdim) for f in (tnp.amin, tnp.amax)]
        return _MinMax(*_multi(rs, "AminmaxBackward0", (self,)))

    def logcumsumexp(self, dim: builtins.int) -> Tensor:
        """``log(cumsum(exp(self), dim))``, stable for any range: a scan of
        ``logaddexp`` over doubling strides (log2(n) vectorised steps)."""
        a = self._value
        d = _dim(dim, a.ndim)
        if a.dtype.kind not in "fc":
            raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{SCALAR_TYPE[a.dtype.name]}'")
        x = tnp.moveaxis(a, d, -1) if a.ndim else tnp.reshape(a, (1,))
        n, k = x.shape[-1], 1
        if n <= 1:
            x = tnp.copy(x)
        while k < n:
            x = tnp.concatenate([x[..., :k], tnp.logaddexp(x[..., k:], x[..., :-k])], axis=-1)
            k *= 2
        return _result(tnp.moveaxis(x, -1, d) if a.ndim else tnp.reshape(x, ()), "LogcumsumexpBackward0", (self,))
