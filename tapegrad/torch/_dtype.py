"""torch dtypes, ``torch.Size`` and ``torch.device``, mapped onto NumPy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import builtins  # annotations name builtins.int: this module rebinds ``int`` to a dtype


class PyTorchNamed(type):
    """Metaclass of the facade's public classes: each prints under the name
    PyTorch gives it (``<class 'torch.Tensor'>``), read from the class's own
    ``_torch_name``. A subclass without one (a user's ``class T(torch.Tensor)``)
    prints as usual. ``__module__`` and ``__qualname__`` stay the real ones,
    so pickle, ``copy`` and ``inspect`` find the class where it lives."""

    def __repr__(cls) -> str:
        name = cls.__dict__.get("_torch_name")
        return f"<class '{name}'>" if name else super().__repr__()


# the C++ type behind each dtype, as PyTorch's messages name it (by NumPy dtype name)
CPP_TYPE = {"float16": "c10::Half", "float32": "float", "float64": "double", "int8": "signed char",
            "uint8": "unsigned char", "int16": "short int", "int32": "int", "int64": "long int", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


class dtype(metaclass=PyTorchNamed):  # noqa: N801  (PyTorch's name)
    """A PyTorch dtype: a name and the NumPy dtype that stores it."""

    _torch_name = "torch.dtype"

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str, np_dtype: Any) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        kind = self.np.kind
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "fci"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickle as the same dtype object (dtypes are singletons, compared by identity)."""
        return from_np, (self.np.str,)

    def to_real(self) -> dtype:
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> dtype:
        return {"float32": complex64, "float64": complex128}.get(self.name, self)


float16 = dtype("float16", np.float16)
float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
complex64 = dtype("complex64", np.complex64)
complex128 = dtype("complex128", np.complex128)
int8 = dtype("int8", np.int8)
int16 = dtype("int16", np.int16)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
uint8 = dtype("uint8", np.uint8)
bool_ = dtype("bool", np.bool_)
half, float, double = float16, float32, float64  # noqa: A001
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64  # noqa: A001

_BY_NP: dict[Any, dtype] = {d.np: d for d in (float16, float32, float64, complex64, complex128,
                                               int8, int16, int32, int64, uint8, bool_)}
_DEFAULT = [float32]


def from_np(d: Any) -> dtype:
    """The torch dtype of a NumPy dtype."""
    try:
        return _BY_NP[d]
    except KeyError:
        return _BY_NP[np.dtype(d)]


def to_np(d: Any) -> Any:
    """The NumPy dtype of a torch dtype (NumPy dtypes and Python types pass through)."""
    if isinstance(d, dtype):
        return d.np
    if d is builtins_float:
        return _DEFAULT[0].np
    if d is builtins_int:
        return np.dtype(np.int64)
    if d is builtins_bool:
        return np.dtype(np.bool_)
    return np.dtype(d)


builtins_float, builtins_int, builtins_bool = (1.0).__class__, (1).__class__, True.__class__


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats (``torch.float32`` unless changed)."""
    return _DEFAULT[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating-point dtype (``torch.float32`` or ``torch.float64``)."""
    if not (isinstance(d, dtype) and d.is_floating_point):
        raise TypeError("only floating-point types are supported as the default type")
    _DEFAULT[0] = d


class Size(tuple, metaclass=PyTorchNamed):
    """A tensor's shape: a tuple that prints as ``torch.Size([2, 3])``."""

    _torch_name = "torch.Size"

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> builtins.int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, k: Any) -> Any:
        r = tuple.__getitem__(self, k)
        return Size(r) if isinstance(k, slice) else r


class device(metaclass=PyTorchNamed):  # noqa: N801
    """``torch.device``: ``"cpu"`` or ``"cuda"`` (CuPy arrays), with an optional index."""

    _torch_name = "torch.device"

    __slots__ = ("type", "index")
    type: str
    index: builtins.int | None

    def __init__(self, type: Any, index: builtins.int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        type = str(type)
        if ":" in type:
            type, idx = type.split(":")
            index = builtins_int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> builtins.int:
        return hash((self.type, self.index))
