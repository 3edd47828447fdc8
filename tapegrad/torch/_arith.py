"""Tensor's arithmetic: the operators, comparisons, named arithmetic, matmul.

Import direction: this module imports ``_tensor`` (and ``_promote``) and
defines ``ArithOps``, whose methods the op table (``_ops.py``) installs
on ``Tensor``; ``_tensor.py`` never imports it.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from numpy import generic as _generic
from numpy import ndarray

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced, value
from tapegrad.torch._batched import _const
from tapegrad.torch._graph import (
    GT,
    SCALAR_TYPE,
    exponents,
    note_attrs,
)
from tapegrad.torch._promote import _contiguous, _promote, _scalar_operand
from tapegrad.torch._shape_errors import (
    broadcast_mismatch,
    device_arg_clash,
    device_clash,
    matmul_mismatch,
)
from tapegrad.torch._tensor_base import (
    _ADD,
    _DIV,
    _MATMUL,
    _MUL,
    _SUB,
    Tensor,
    TensorBase,
    _new,
    _operator,
    _rec2,
    _renamed,
    _result,
    _v,
)
from tapegrad.torch._tensor_base import OpsBase as _Base


def _as_pytorch_shapes(a: Any, b: Any, err: Exception) -> Exception:
    """PyTorch's RuntimeError for operands ``a``, ``b`` on two devices (CuPy's TypeError or
    tapegrad's ValueError said so) or whose shapes do not broadcast (NumPy's ``err`` said so),
    else ``err`` itself."""
    mixed = device_clash(a, b)
    if mixed is not None:
        return mixed
    if not isinstance(err, ValueError):
        return err
    clash = broadcast_mismatch(np.shape(a), np.shape(b))
    return err if clash is None else clash


def _scalar_moved(x: Any, y: Any) -> tuple[Any, Any] | None:
    """The error path's question: is one of tensors ``x``, ``y`` a 0-d CPU tensor and the
    other a CUDA tensor? PyTorch takes such a tensor as a scalar: the pair with it moved
    to the other's device (a differentiable copy), else None."""
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)) or x.device == y.device:
        return None
    if x.ndim == 0 and x.device.type == "cpu":
        return x.to(y.device), y
    if y.ndim == 0 and y.device.type == "cpu":
        return x, y.to(x.device)
    return None


def _no_integer_zero_division(a: Any, b: Any) -> None:
    """PyTorch's ``ZeroDivisionError`` (a RuntimeError) for an integer ``//`` or ``%`` by 0."""
    va, vb = value(a), value(b)
    if np.result_type(va, vb).kind in "iu" and np.any(np.asarray(vb) == 0):
        raise RuntimeError("ZeroDivisionError")


def binary_op(x: TensorBase, other: Any, fn: Any, name: str) -> Tensor:
    """``fn(x, other)`` recorded as node ``name`` (``maximum``, ``atan2``...),
    with PyTorch's error for shapes that do not broadcast."""
    a, b, o = _operands(x, other)
    try:
        r = fn(a, b)
    except (ValueError, TypeError) as e:
        moved = _scalar_moved(x, other)
        if moved is not None:
            return binary_op(*moved, fn, name)
        raise _as_pytorch_shapes(a, b, e) from None
    return _result(r, name, (x, o))


def _check_bool_sub(x: TensorBase, other: Any) -> None:
    """PyTorch refuses ``-`` with a bool operand (a tensor, or a Python bool)."""
    x_bool = x._value.dtype == np.bool_
    o_bool = isinstance(other, builtins.bool) or (isinstance(other, Tensor) and other._value.dtype == np.bool_)
    if x_bool and o_bool and isinstance(other, Tensor):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if x_bool or o_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _operands(self: TensorBase, other: Any, div: bool = False) -> tuple[Any, Any, Any]:
    a = self._value
    if isinstance(other, Tensor):
        b = other._value
        if div or a.dtype != b.dtype:
            a, b = _promote(a, b, div)
        return a, b, other
    if isinstance(other, (ndarray, _generic)):
        b = np.asarray(other)
        if div or a.dtype != b.dtype:
            a, b = _promote(a, b, div)
        return a, b, None
    if type(other) is not builtins.float or a.dtype.kind not in "fc":
        a = _scalar_operand(a, other, div)
    return a, other, None


def _as_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from tapegrad.torch._creation import tensor

    return tensor(x)


class ArithOps(_Base):
    """The methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    # --- arithmetic ----------------------------------------------------------------------------------
    def _arith(self, other: Any, fn: Any, name: str, div: builtins.bool = False) -> Tensor:
        """``fn(self, other)`` with PyTorch's promotion, named ``name``."""
        if fn is tnp.subtract:
            _check_bool_sub(self, other)
        a, b, o = _operands(self, other, div)
        try:
            t = _rec2(fn.primitive, a, b, name, (self, o))
            if t is not None:
                return t
            return _result(fn(a, b), name, (self, o))
        except (ValueError, TypeError) as e:
            moved = _scalar_moved(self, other)
            if moved is not None:
                return moved[0]._arith(moved[1], fn, name, div)
            raise _as_pytorch_shapes(a, b, e) from None

    # A float tensor and a Python float (x * 1.0001) need no promotion: the
    # operators try _rec1 first, before _arith's general path.
    __add__ = __radd__ = _operator(_ADD, "AddBackward0")
    __sub__ = _operator(_SUB, "SubBackward0")

    def __rsub__(self, other: Any) -> Tensor:
        _check_bool_sub(self, other)
        a, b, o = _operands(self, other)
        return _result(tnp.subtract(b, a), "RsubBackward1", (self,))

    __mul__ = __rmul__ = _operator(_MUL, "MulBackward0")
    __truediv__ = _operator(_DIV, "DivBackward0", div=True)

    def __rtruediv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other, div=True)
        r = _result(tnp.reciprocal(a), "ReciprocalBackward0", (self,))
        return _result(tnp.multiply(r._value, b), "MulBackward0", (r, None))

    def __floordiv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        _no_integer_zero_division(a, b)
        return _const(np.floor_divide(value(a), value(b)))

    def __rfloordiv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        _no_integer_zero_division(b, a)
        return _const(np.floor_divide(value(b), value(a)))

    def __mod__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        _no_integer_zero_division(a, b)
        if o is not None:
            return _result(tnp.remainder(a, b), "RemainderBackward1", (self, o))
        return _result(tnp.remainder(a, b), "RemainderBackward0", (self,))

    def __rmod__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        _no_integer_zero_division(b, a)
        return _result(tnp.remainder(b, a), "RemainderBackward1", (self,))

    def __pow__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        try:
            r = tnp.power(a, b)
        except (ValueError, TypeError) as e:
            moved = _scalar_moved(self, other)
            if moved is not None:
                return moved[0].__pow__(moved[1])
            raise _as_pytorch_shapes(a, b, e) from None
        if o is None:
            t = _result(r, "PowBackward0", (self,))
            v = t._value
            if type(v) is Traced and v._level is GT and isinstance(other, (int, float)):
                exponents[v._node] = other  # (what grad_fn._saved_exponent reads)
            return t
        return _result(r, "PowBackward1", (self, o))

    def __rpow__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(tnp.power(b, a), "PowBackward2", (self,))


    def __matmul__(self, other: Any) -> Tensor:
        try:
            return self._matmul(other)
        except (ValueError, TypeError):
            clash = device_clash(self._value, _v(other)) or matmul_mismatch(self.shape, np.shape(_v(other)))
            if clash is None:
                raise
            raise clash from None

    def _matmul(self, other: Any) -> Tensor:
        a, b = self._value, _v(other)
        if a.dtype != b.dtype:
            a, b = _promote(a, b)
        na, nb = a.ndim, b.ndim
        if na == 1 and nb == 1:
            name = "DotBackward0"
        elif na == 2 and nb == 1:
            name = "MvBackward0"
        elif na == 2 and nb == 2:
            name = "MmBackward0"
        elif na == 1 and nb == 2:
            name = "SqueezeBackward4"
        else:
            name = "UnsafeViewBackward0" if na >= 3 and nb <= 2 or (na >= 3 and nb >= 3) else "ExpandBackward0"
            if na <= 2 and nb >= 3:
                name = "UnsafeViewBackward0"
        if isinstance(other, Tensor) and (na == 1 and nb == 2 or na >= 3 and nb <= 2 and _contiguous(value(a))):
            return _matmul_composite(self, other, a, b)
        if isinstance(other, Tensor):
            t = _rec2(_MATMUL, a, b, name, (self, other))
            if t is not None:
                return t
        return _result(tnp.matmul(a, b), name, (self, other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return _as_tensor(other).__matmul__(self)

    def __neg__(self) -> Tensor:
        if self._value.dtype == np.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return _result(tnp.negative(self._value), "NegBackward0", (self,))

    def __pos__(self) -> Tensor:
        return self  # type: ignore[return-value]  # (self: a Tensor)

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        v = value(self._value)
        return _const(~v if v.dtype.kind in "biu" else np.logical_not(v))

    def __and__(self, other: Any) -> Tensor:
        return _const(np.bitwise_and(value(self._value), value(_v(other))))

    def __or__(self, other: Any) -> Tensor:
        return _const(np.bitwise_or(value(self._value), value(_v(other))))

    def __xor__(self, other: Any) -> Tensor:
        return _const(np.bitwise_xor(value(self._value), value(_v(other))))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def _compare(self, other: Any, fn: Any) -> Tensor:
        a, b = value(self._value), value(_v(other))
        try:
            return _const(fn(a, b))
        except TypeError as e:  # (CuPy's or NumPy's refusal of the other device's array)
            raise device_clash(a, b) or e from None

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    def eq(self, other: Any) -> Tensor:
        return self == other

    def ne(self, other: Any) -> Tensor:
        return self != other

    def lt(self, other: Any) -> Tensor:
        return self < other

    def le(self, other: Any) -> Tensor:
        return self <= other

    def gt(self, other: Any) -> Tensor:
        return self > other

    def ge(self, other: Any) -> Tensor:
        return self >= other

    def equal(self, other: Tensor) -> builtins.bool:
        a, b = value(self._value), value(other._value)
        return a.shape == b.shape and builtins.bool(np.all(a == b))

    def allclose(self, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> builtins.bool:
        return builtins.bool(np.allclose(value(self._value), value(_v(other)), rtol, atol, equal_nan))

    def isclose(self, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> Tensor:
        return _const(np.isclose(value(self._value), value(_v(other)), rtol, atol, equal_nan))

    def isnan(self) -> Tensor:
        return _const(np.isnan(value(self._value)))

    def isinf(self) -> Tensor:
        return _const(np.isinf(value(self._value)))

    def isfinite(self) -> Tensor:
        return _const(np.isfinite(value(self._value)))

    def logical_not(self) -> Tensor:
        return _const(np.logical_not(value(self._value)))

    def logical_and(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_and)

    def logical_or(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_or)

    def logical_xor(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_xor)

    # named arithmetic
    def add(self, other: Any, alpha: Any = 1) -> Tensor:
        if alpha != 1 and isinstance(other, Tensor):  # one AddBackward0 over self and other, as PyTorch's
            return _renamed(self + other * alpha, "AddBackward0", (self, other))
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other: Any, alpha: Any = 1) -> Tensor:
        if alpha != 1 and isinstance(other, Tensor):
            return _renamed(self - other * alpha, "SubBackward0", (self, other))
        return self - (other * alpha if alpha != 1 else other)

    subtract = sub

    def mul(self, other: Any) -> Tensor:
        return self * other

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self / other
        fn = np.floor_divide if rounding_mode == "floor" else (lambda a, b: np.trunc(a / b))
        r = np.asarray(fn(value(self._value), value(_v(other))))
        return _new(r.astype(self._value.dtype) if self._value.dtype.kind in "biu" else r)

    divide = true_divide = div

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def neg(self) -> Tensor:
        return -self

    negative = neg

    def matmul(self, other: Tensor) -> Tensor:
        return self @ other

    def mm(self, other: Tensor) -> Tensor:
        for what, t in (("self", self), ("mat2", other)):
            if isinstance(t, TensorBase) and t.ndim != 2:
                raise RuntimeError(f"{what} must be a matrix")
        return self @ other

    def mv(self, other: Tensor) -> Tensor:
        return self @ other

    def dot(self, other: Tensor) -> Tensor:
        return self @ other

    def outer(self, other: Tensor) -> Tensor:
        return self.reshape(-1, 1) * other

    ger = outer

    def bmm(self, other: Tensor) -> Tensor:
        """Batched matrix product of two 3-D tensors (``BmmBackward0``)."""
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor" if self.ndim != 3 else "batch2 must be a 3D tensor")
        if self.shape[0] != other.shape[0] or self.shape[2] != other.shape[1]:
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{self.shape[0]}, {self.shape[2]}] "
                f"but got: [{other.shape[0]}, {other.shape[1]}].")
        a, b = self._value, other._value
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_TYPE[a.dtype.name]} but found "
                               f"{SCALAR_TYPE[b.dtype.name]}")
        try:
            r = tnp.matmul(a, b)
        except (TypeError, ValueError) as e:
            raise device_arg_clash("wrapper_CUDA_bmm", ("self", a), ("mat2", b)) or e from None
        return _result(r, "BmmBackward0", (self, other))

    # (added for nn.Linear) ``torch.addmm``: one node, named as PyTorch names it
    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)`` as one ``AddmmBackward0`` node
        (``self`` broadcasts; ``nn.Linear`` calls ``bias.addmm(x, weight.t())``)."""
        a, b, s = mat1._value, mat2._value, self._value
        if a.ndim != 2 or b.ndim != 2:
            raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor" if a.ndim != 2
                               else f"mat2 must be a matrix, got {b.ndim}-D tensor")
        clash = matmul_mismatch(a.shape, b.shape)
        if clash is not None:
            raise clash
        try:
            m = tnp.matmul(a, b)
            if alpha != 1:
                m = tnp.multiply(m, alpha)
            if beta != 1:
                s = tnp.multiply(s, beta)
            r = tnp.add(m, s)
        except (TypeError, ValueError) as e:
            raise device_arg_clash("wrapper_CUDA_addmm", ("self", s), ("mat1", a), ("mat2", b)) or e from None
        return _result(r, "AddmmBackward0", (self, mat1, mat2))

    def addcmul(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        r = self + t1 * t2 * value if value != 1 else self + t1 * t2
        return _renamed(r, "AddcmulBackward0", (self, t1, t2))

    def addcdiv(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        r = self + t1 / t2 * value if value != 1 else self + t1 / t2
        return _renamed(r, "AddcdivBackward0", (self, t1, t2))

    def lerp(self, end: Any, weight: Any) -> Tensor:
        r = self + (end - self) * weight
        if isinstance(weight, Tensor):
            return _renamed(r, "LerpBackward1", (self, end, weight))
        return _renamed(r, "LerpBackward0", (self, end))


def _matmul_composite(x: TensorBase, y: TensorBase, a: Any, b: Any) -> Tensor:
    """``x @ y`` (values ``a``, ``b``) as PyTorch's composite records it: a
    vector times a matrix as ``SqueezeBackward4 <- MmBackward0 <-
    UnsqueezeBackward0``; a batch of matrices times a matrix or vector folded
    into one product, ``UnsafeViewBackward0 <- Mm/MvBackward0 <- ViewBackward0``."""
    if a.ndim == 1:
        u = _result(tnp.expand_dims(a, 0), "UnsqueezeBackward0", (x,))
        m = _result(tnp.matmul(u._value, b), "MmBackward0", (u, y))
        return note_attrs(_result(tnp.squeeze(m._value, 0), "SqueezeBackward4", (m,)), dim=0)
    f = _result(tnp.reshape(a, (-1, a.shape[-1])), "ViewBackward0", (x,))
    m = _result(tnp.matmul(f._value, b), "MmBackward0" if b.ndim == 2 else "MvBackward0", (f, y))
    return _result(tnp.reshape(m._value, a.shape[:-1] + b.shape[1:]), "UnsafeViewBackward0", (m,))


# --- function forms with a Python number first ---------------------------------------------------------

# PyTorch's function forms that take a Python number as ``input`` (a "wrapped
# number": it takes part in promotion as a scalar, exact in the result's
# dtype), with the node PyTorch names when it is not the method's own (the
# number is then no edge). Every other binary form refuses a number first.
_SCALAR_FIRST: dict[str, str | None] = {
    **dict.fromkeys(("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "remainder")),
    "pow": "PowBackward2", "xlogy": "XlogyBackward1",
}
_DIVIDING = frozenset({"div", "divide", "true_divide", "xlogy"})
# forms whose refusal is an overload mismatch (PyTorch then lists the overloads, not reproduced here)
_OVERLOADED = frozenset(
    "addcdiv addcmul addmm all any argsort clamp clamp_max clamp_min clip count_nonzero fmod index_fill lerp "
    "masked_fill mean moveaxis movedim narrow prod repeat_interleave round scatter sort squeeze std sum var".split())


def scalar_first(name: str, s: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``torch.name(s, x, ...)`` for a Python number ``s`` and tensor ``x``:
    ``s`` as a 0-d tensor of the result's dtype (exact: ``torch.pow(1.7, x)``
    of a float64 ``x`` uses the double 1.7), or PyTorch's TypeError."""
    if name not in _SCALAR_FIRST:
        if name in _OVERLOADED:
            got = ", ".join(type(a).__name__ for a in (s, x, *args))
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                            "but expected one of:")
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(s).__name__}")
    if name in ("sub", "subtract"):
        _check_bool_sub(x, s)
    dt = _scalar_operand(value(x._value), s, name in _DIVIDING).dtype
    if type(s) is complex and dt.kind != "c":
        dt = np.dtype(np.complex128 if dt == np.float64 else np.complex64)
    r = getattr(_new(np.asarray(s, dt)), name)(x, *args, **kwargs)
    node = _SCALAR_FIRST[name]
    return r if node is None else _renamed(r, node, (x,))
