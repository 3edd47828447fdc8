"""What a tensor says about itself and how it converts.

Metadata (``shape``, ``dtype``, ``device``, strides, contiguity, ``T``,
``real``), conversions (``item``, ``numpy``, ``to``, ``float`` ...,
``clone``, ``new_*``), printing and the Python protocol (``len``, ``iter``,
``bool``, ``float()``, hashing, pickling, copying). None of these is an op
of the op table: ``tapegrad.torch._ops`` installs them on ``Tensor`` as
they are. Import direction: imports ``_tensor`` and ``_creation``; ``_ops`` installs
``ConvertOps``' methods.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from typing_extensions import Self

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced, value
from tapegrad.torch import _dtype as D
from tapegrad.torch import _format
from tapegrad.torch import _prims as P
from tapegrad.torch._batched import CONTROL_FLOW, ITEM, batched_repr
from tapegrad.torch._creation import tensor
from tapegrad.torch._graph import version_of
from tapegrad.torch._promote import _cast, _contiguous, _shape_arg
from tapegrad.torch._tensor_base import OpsBase as _Base
from tapegrad.torch._tensor_base import Tensor, _new, _result, _v


class ConvertOps(_Base):
    """Metadata, conversions, printing and the Python protocol of ``Tensor``."""

    @property
    def shape(self) -> D.Size:
        return D.Size(self._value.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape (a ``torch.Size``), or the length of axis ``dim``."""
        s = self._value.shape
        return D.Size(s) if dim is None else s[dim]

    @property
    def dtype(self) -> D.dtype:
        return D.from_np(self._value.dtype)

    @property
    def device(self) -> D.device:
        mod = type(value(self._value)).__module__
        return D.device("cuda", 0) if mod.startswith("cupy") else D.device("cpu")

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def dim(self) -> int:
        return self._value.ndim

    ndimension = dim

    def numel(self) -> int:
        return builtins.int(math.prod(self._value.shape))

    nelement = numel

    def element_size(self) -> int:
        return self._value.dtype.itemsize

    def stride(self, dim: int | None = None) -> Any:
        shape = self._value.shape
        st: Any
        st, acc = [], 1
        for n in reversed(shape):
            st.append(acc)
            acc *= n
        st = tuple(reversed(st))
        return st if dim is None else st[dim]

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (``view``, indexing,
        ``expand``, ``unbind``...); a ``detach()``ed alias shares the data but is
        not one, as in PyTorch."""
        b = self._base_view
        return b is not None and b[1] != "alias"

    @property
    def _base(self) -> Tensor | None:
        """The tensor this one is a view of (the root of a view of a view), or None."""
        if not self._is_view():
            return None
        t: Any = self
        while t._is_view():
            t = t._base_view[0]
        return t  # type: ignore[no-any-return]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in row-major order with no gaps (a
        transpose, a strided slice or an ``expand`` is not)."""
        return _contiguous(value(self._value))

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """``self`` when contiguous, else a row-major copy (``CloneBackward0``)."""
        return self if self.is_contiguous() else self.clone()  # type: ignore[return-value]  # (self: a Tensor)

    def is_floating_point(self) -> bool:
        return self._value.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._value.dtype.kind == "c"

    @property
    def _version(self) -> int:
        return version_of(self)

    @property
    def output_nr(self) -> int:
        return self._nr

    @property
    def T(self) -> Self:  # noqa: N802
        if self.ndim < 2:
            return self
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return self.transpose(-2, -1)

    @property
    def real(self) -> Tensor:
        if self._value.dtype.kind != "c":
            return self  # type: ignore[return-value]  # (self: a Tensor)
        return _result(tnp.real(self._value), "RealBackward0", (self,))

    @property
    def imag(self) -> Tensor:
        return _result(tnp.imag(self._value), "ImagBackward0", (self,))

    # --- conversion --------------------------------------------------------------------------------
    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        v = value(self._value)
        if type(v) is Traced:  # inside vmap: one number per example
            raise RuntimeError(ITEM)
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        return v.item() if hasattr(v, "item") else v

    def tolist(self) -> Any:
        v = value(self._value)
        if type(v).__module__.startswith("cupy"):
            v = v.get()
        return np.asarray(v).tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory). Refuses a tensor that requires grad."""
        if self.requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        v = value(self._value)
        if type(v).__module__.startswith("cupy"):
            if not force:
                raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                                "to copy the tensor to host memory first.")
            v = v.get()
        return v

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """Convert dtype and/or device; returns ``self`` when nothing changes."""
        dtype = kwargs.get("dtype")
        dev = kwargs.get("device")
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, (str, D.device)):
                dev = a
        t: Any = self
        if dev is not None and D.device(dev).type != self.device.type:
            t = _result(P.to_device(t._value, D.device(dev).type), "ToCopyBackward0", (t,))
        if dtype is not None and D.to_np(dtype) != t._value.dtype:
            t = _result(_cast(t._value, D.to_np(dtype)), "ToCopyBackward0", (t,))
        if kwargs.get("copy") and t is self:
            t = self.clone()
        return t

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"torch.{self._legacy_dtype_name()}"
        if isinstance(dtype, str):
            dtype = {"torch.FloatTensor": D.float32, "torch.DoubleTensor": D.float64,
                     "torch.LongTensor": D.int64, "torch.IntTensor": D.int32,
                     "torch.BoolTensor": D.bool_}[dtype]
        return self.to(dtype)

    def _legacy_dtype_name(self) -> str:
        return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor",
                "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}[self.dtype.name]

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Tensor:
        return self.to("cuda")

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def half(self) -> Tensor:
        return self.to(D.float16)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def int(self) -> Tensor:
        return self.to(D.int32)

    def bool(self) -> Tensor:
        return self.to(D.bool_)

    def clone(self, memory_format: Any = None) -> Tensor:
        return _result(tnp.copy(self._value), "CloneBackward0", (self,))

    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None) -> Tensor:
        return _new(np.zeros(_shape_arg(size), dtype=D.to_np(dtype or self.dtype)))

    def new_ones(self, *size: Any, dtype: Any = None) -> Tensor:
        return _new(np.ones(_shape_arg(size), dtype=D.to_np(dtype or self.dtype)))

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None) -> Tensor:
        return _new(np.full(tuple(size), fill_value, dtype=D.to_np(dtype or self.dtype)))

    def new_empty(self, *size: Any, dtype: Any = None) -> Tensor:
        return self.new_zeros(*size, dtype=dtype)

    # --- printing -----------------------------------------------------------------------------------
    def __repr__(self, *, tensor_contents: Any = None) -> str:
        v = value(self._value)
        if type(v) is Traced:  # inside vmap
            return batched_repr(v)
        if type(v).__module__.startswith("cupy"):
            v, dev = v.get(), "cuda:0"
        else:
            v, dev = np.asarray(v), None
        fn = self.grad_fn
        d = D.from_np(v.dtype)
        default = D.get_default_dtype()
        defaults = (default.name, default.to_complex().name, "int64", "bool")
        return _format.tensor_repr(v, d.name, defaults, dev,
                                   type(fn).__name__ if fn is not None else None, self.requires_grad)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and type(value(self._value)) is not Traced:
            return format(self.item(), spec)
        return format(repr(self), spec)

    # --- Python protocol -----------------------------------------------------------------------------
    def __len__(self) -> builtins.int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> builtins.bool:
        v = value(self._value)
        if type(v) is Traced:  # inside vmap
            raise RuntimeError(CONTROL_FLOW)
        if v.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(v.item() if hasattr(v, "item") else v)

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self) -> builtins.int:
        return builtins.int(self.item())

    def __index__(self) -> builtins.int:
        if self._value.dtype.kind not in "biu":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __hash__(self) -> builtins.int:
        return id(self)

    def __contains__(self, x: Any) -> builtins.bool:
        return builtins.bool(np.any(value(self._value) == value(_v(x))))

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild, (value(self._value), self.requires_grad))

    def __deepcopy__(self, memo: dict[builtins.int, Any]) -> Tensor:
        t = _new(np.array(value(self._value), copy=True), type(self) if type(self) is not Tensor else None)
        if self.requires_grad:
            t.requires_grad_(True)
        if self._grad is not None:
            t._grad = _new(np.array(value(self._grad._value), copy=True))
        memo[id(self)] = t
        return t


def _rebuild(v: Any, requires_grad: bool) -> Tensor:
    t = _new(np.array(v))
    if requires_grad:
        t.requires_grad_(True)
    return t
