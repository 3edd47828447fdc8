"""Operators and array methods of traced values: each delegates to a primitive.

Nothing about gradients lives here (the facade is a skin). Binary operators
call the recording path directly, since ``self`` is known to be traced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.core.primitive import _apply1, binary_method, deferred, defers_to, nondifferentiable
from tapegrad.core.traced import Traced
from tapegrad.numpy import array_api
from tapegrad.numpy import derived as d
from tapegrad.numpy import wrap as w
from tapegrad.numpy.updates import at
from tapegrad.numpy.wrap import Index

_NO_KW: dict[str, Any] = {}


def _binary(fn: Any, ufunc: Any) -> tuple[Any, Any]:
    return binary_method(fn, ufunc=ufunc), binary_method(fn, reflected=True, ufunc=ufunc)


def _unary(fn: Any) -> Any:
    prim = fn.primitive
    return lambda self: _apply1(prim, self, _NO_KW)


def _getitem(self: Traced, key: Any) -> Any:
    return w.getitem(self, Index(key, self.ndim))


def _setitem(self: Traced, key: Any, v: Any) -> None:
    """``x[key] = v`` recorded as a functional update: ``x`` now names the result."""
    new = w.setitem(self, Index(key, self.ndim), v)
    if type(new) is Traced:
        self._rebind(new)
    else:
        self._value = new


def _sort_inplace(self: Traced, axis: int = -1, kind: Any = None, order: Any = None) -> None:
    new = d.sort(self, axis=axis, kind=kind)
    self._rebind(new)


def _deferring(f: Any, ufunc: Any, reflected: bool = False) -> Any:
    """A no-gradient binary operator (``<``, ``//``, ``&``...) that leaves an
    object overriding NumPy's ufuncs to it, as ``ndarray``'s do (see ``deferred``)."""
    plain = (float, int, Traced)

    if reflected:
        def rop(self: Traced, other: Any) -> Any:
            if type(other) not in plain and defers_to(other):
                return deferred(self, other, ufunc, True)
            return f(other, self)

        return rop

    def op(self: Traced, other: Any) -> Any:
        if type(other) not in plain and defers_to(other):
            return deferred(self, other, ufunc, False)
        return f(self, other)

    return op


def _array_namespace(self: Traced, /, *, api_version: str | None = None) -> Any:
    """The array API namespace of traced values: ``tapegrad.numpy.array_api``."""
    return array_api.namespace(api_version)


def _device(self: Traced) -> Any:
    """The device of the array inside (``"cpu"`` for NumPy's; CuPy's own)."""
    x = self
    while type(x) is Traced:
        x = x._value
    return getattr(x, "device", "cpu") if hasattr(x, "__array_namespace__") else "cpu"


def _to_device(self: Traced, device: Any, /, *, stream: Any = None) -> Traced:
    if device is not None and device != self.device:
        raise ValueError(f"tapegrad: to_device({device!r}): traced values stay on their device ({self.device!r})")
    return self


def install() -> None:
    T = Traced
    T.__add__, T.__radd__ = _binary(w.add, np.add)
    T.__sub__, T.__rsub__ = _binary(w.subtract, np.subtract)
    T.__mul__, T.__rmul__ = _binary(w.multiply, np.multiply)
    T.__truediv__, T.__rtruediv__ = _binary(w.divide, np.true_divide)
    T.__pow__, T.__rpow__ = _binary(w.power, np.power)
    T.__matmul__, T.__rmatmul__ = _binary(w.matmul, np.matmul)
    T.__mod__, T.__rmod__ = _binary(w.remainder, np.remainder)
    T.__floordiv__ = _deferring(w.nondiff["floor_divide"], np.floor_divide)
    T.__rfloordiv__ = _deferring(w.nondiff["floor_divide"], np.floor_divide, reflected=True)
    T.__neg__ = _unary(w.negative)
    T.__pos__ = _unary(w.positive)
    T.__abs__ = _unary(w.absolute)
    for op, name in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                     ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")]:
        setattr(T, f"__{op}__", _deferring(w.nondiff[name], getattr(np, name)))
    T.__invert__ = lambda self: w.nondiff["invert"](self)
    for op, name in [("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")]:
        f = w.nondiff[name]
        setattr(T, f"__{op}__", _deferring(f, getattr(np, name)))
        setattr(T, f"__r{op}__", _deferring(f, getattr(np, name), reflected=True))
    for op, ufunc in [("lshift", np.left_shift), ("rshift", np.right_shift)]:
        f = nondifferentiable(ufunc)
        setattr(T, f"__{op}__", _deferring(f, ufunc))
        setattr(T, f"__r{op}__", _deferring(f, ufunc, reflected=True))
    T.__array_namespace__ = _array_namespace
    T.device = property(_device)
    T.to_device = _to_device
    T.__getitem__ = _getitem
    T.__setitem__ = _setitem
    T.at = property(at)  # JAX's functional updates: x.at[idx].set(v)

    T.T = property(lambda self: w.transpose(self))
    T.mT = property(lambda self: d.swapaxes(self, -1, -2))
    T.real = property(lambda self: w.real(self))
    T.imag = property(lambda self: w.imag(self))
    T.conj = T.conjugate = lambda self: w.conjugate(self)
    T.sum = lambda self, axis=None, dtype=None, out=None, keepdims=False: w.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)
    T.prod = lambda self, axis=None, dtype=None, out=None, keepdims=False: w.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)
    T.mean = lambda self, axis=None, dtype=None, out=None, keepdims=False: d.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)
    T.var = lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False: d.var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    T.std = lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False: d.std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    T.max = lambda self, axis=None, out=None, keepdims=False: w.amax(self, axis=axis, keepdims=keepdims)
    T.min = lambda self, axis=None, out=None, keepdims=False: w.amin(self, axis=axis, keepdims=keepdims)
    T.cumsum = lambda self, axis=None, dtype=None, out=None: w.cumsum(self, axis=axis, dtype=dtype)
    T.cumprod = lambda self, axis=None, dtype=None, out=None: w.cumprod(self, axis=axis, dtype=dtype)
    T.reshape = lambda self, *shape, order="C": d.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)
    T.transpose = lambda self, *axes: w.transpose(self, (axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes) or None)
    T.swapaxes = lambda self, a1, a2: d.swapaxes(self, a1, a2)
    T.ravel = lambda self, order="C": d.ravel(self, order)
    T.flatten = lambda self, order="C": d.ravel(self, order)
    T.squeeze = lambda self, axis=None: d.squeeze(self, axis)
    T.dot = lambda self, b, out=None: d.dot(self, b)
    T.clip = lambda self, min=None, max=None, out=None, **kw: w.clip(self, min, max)
    T.astype = lambda self, dtype, order="K", casting="unsafe", subok=True, copy=True: d.astype(self, dtype, copy)
    T.copy = lambda self, order="C": w.copy(self)
    T.diagonal = lambda self, offset=0, axis1=0, axis2=1: w.diagonal(self, offset, axis1, axis2)
    T.trace = lambda self, offset=0, axis1=0, axis2=1, dtype=None, out=None: d.trace(self, offset, axis1, axis2, dtype)
    T.repeat = lambda self, repeats, axis=None: d.repeat(self, repeats, axis)
    T.take = lambda self, indices, axis=None, out=None, mode="raise": d.take(self, indices, axis)
    T.sort = _sort_inplace
    for name in ("argmax", "argmin", "argsort", "nonzero", "any", "all", "round"):
        nd = w.nondiff["around" if name == "round" else name]
        setattr(T, name, (lambda f: lambda self, *a, **k: f(self, *a, **k))(nd))
