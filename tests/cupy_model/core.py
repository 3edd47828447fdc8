"""The model's array type and the rules every CuPy function follows.

Each rule names where in CuPy it comes from (paths are in the cupy/cupy
repository; ``core.pyx`` is ``cupy/_core/core.pyx``).

- ``ndarray`` is a class of its own whose ``__module__`` is ``"cupy"``
  (``core.pyx``: ``cdef class ndarray``, exported as ``cupy.ndarray``). It holds a
  NumPy array, the "device memory", that nothing outside the model reads.
- ``__array__`` raises ``TypeError('Implicit conversion to a NumPy array is not
  allowed. Please use `.get()` to construct a NumPy array explicitly.')``
  (``core.pyx``, ``ndarray.__array__``): ``np.asarray(x)`` on a device array fails.
- ``__array_ufunc__`` (``core.pyx``): a NumPy or SciPy ufunc on a device array
  runs CuPy's ufunc of the same name, from ``cupy`` or else ``cupyx.scipy.special``
  (``NotImplemented`` when CuPy has none);
  operands must be device arrays, scalars of ``_scalar.scalar_type_set``
  (Python and NumPy scalars) or ``numpy.ndarray`` (which the CuPy ufunc then
  refuses, below); anything else gives ``NotImplemented``. The ufunc's methods
  ``reduce``, ``accumulate``, ``outer`` and ``at`` run CuPy's (``at`` only for
  ``add``, ``subtract``, ``maximum``, ``minimum`` and the bitwise ufuncs, else
  ``NotImplementedError``; ``reduceat``: none in the model, ``NotImplemented``).
- ``__array_function__`` (``core.pyx``): a NumPy function runs the CuPy
  function found at the same path (``numpy.linalg.solve`` ->
  ``cupy.linalg.solve``); ``NotImplemented`` (so NumPy's ``TypeError: no
  implementation found``) when CuPy has none or when an argument type other
  than ``cupy.ndarray``/``numpy.ndarray`` takes part.
- A CuPy function refuses a ``numpy.ndarray`` operand with ``TypeError:
  Unsupported type <class 'numpy.ndarray'>`` (``_core/_kernel.pyx``,
  ``_preprocess_args``), and so does this model for every other array-like
  object (one with ``__array__``/``__array_function__``) that is not a device
  array. Only ``cupy.asarray``/``cupy.array`` copy host data to the device.
- An index list or host array is copied to the device (``cupy/_core``:
  ``_prepare_slice_list``); an empty list is an empty ``int32`` index.
- Reductions and scalar-valued functions return 0-d device arrays, never
  NumPy scalars (``cupy/_core/_reduction.pyx``); ``x[i]`` of a 1-d array is 0-d.
- Functions accept only the keywords of CuPy's signature (``SIGNATURES`` in
  ``namespaces.py``): a NumPy-only keyword is a ``TypeError``.
- Device-to-host transfers: ``.get()``, ``cupy.asnumpy``, ``.item()``,
  ``.tolist()``, ``float()``/``int()``/``complex()``/``bool()``, ``repr``/``str``
  /``format`` (``core.pyx``: each calls ``self.get()``). Each counts one in
  ``TRANSFERS`` and raises ``cupyx.DeviceSynchronized`` inside
  ``cupyx.allow_synchronize(False)`` (``cupyx/_runtime``'s syncdetect).
- DLPack: ``__dlpack__``/``__dlpack_device__`` report a CUDA device (type 2,
  ``cupy/_core/dlpack.pyx``); ``cupy.from_dlpack`` takes device tensors only.

What the model cannot show: kernel compile errors, GPU precision, speed,
streams and asynchrony, CuPy's wrap-around of out-of-range integer indices
(the model raises as NumPy does), and CuPy's own type-promotion differences
(the model promotes as NumPy 2 does).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

# --- transfers ------------------------------------------------------------------------------------


class Transfers:
    """Counts of copies between host and device (the model's own instrument)."""

    def __init__(self) -> None:
        self.d2h = 0  # device to host: .get() and everything that calls it
        self.h2d = 0  # host to device: cupy.asarray/cupy.array of host data
        self.log: list[str] = []
        self._local = threading.local()

    def reset(self) -> None:
        """Zero both counts."""
        self.d2h = self.h2d = 0
        self.log.clear()

    def to_host(self, what: str) -> None:
        if not getattr(self._local, "allow", True):
            raise DeviceSynchronized(f"Device synchronization was detected while disallowed ({what})")
        self.d2h += 1
        self.log.append(what)


TRANSFERS = Transfers()


class DeviceSynchronized(RuntimeError):
    """``cupyx.DeviceSynchronized``: a synchronization where ``allow_synchronize(False)`` forbids it."""


@contextlib.contextmanager
def allow_synchronize(allow: bool) -> Iterator[None]:
    """``cupyx.allow_synchronize``: within ``allow_synchronize(False)`` a transfer raises."""
    old = getattr(TRANSFERS._local, "allow", True)
    TRANSFERS._local.allow = allow
    try:
        yield
    finally:
        TRANSFERS._local.allow = old


# --- operands and results -------------------------------------------------------------------------

SCALARS = (bool, int, float, complex, np.generic)


def unsupported(x: Any) -> TypeError:
    return TypeError(f"Unsupported type {type(x)}")


def _is_arraylike(x: Any) -> bool:
    t = type(x)
    return isinstance(x, np.ndarray) or hasattr(t, "__array_function__") or hasattr(t, "__array__")


def unwrap(x: Any) -> Any:
    """A device array's memory; host arrays and other array-likes refused (CuPy's ``_preprocess_args``)."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is list or t is tuple:
        return t(unwrap(v) for v in x)
    if t is dict:
        return {k: unwrap(v) for k, v in x.items()}
    if isinstance(x, SCALARS) or x is None or isinstance(x, (str, slice, type, np.dtype)):
        return x
    if _is_arraylike(x):
        raise unsupported(x)
    return x


def wrap(r: Any) -> Any:
    """Results as device arrays: arrays, NumPy scalars and Python numbers become (0-d) device arrays."""
    t = type(r)
    if t is np.ndarray:
        return ndarray._of(r)
    if isinstance(r, (np.generic, bool, int, float, complex)):
        return ndarray._of(np.asarray(r))
    if isinstance(r, tuple):
        return tuple(wrap(v) for v in r)  # (CuPy returns plain tuples where NumPy 2 has named ones)
    if t is list:
        return [wrap(v) for v in r]
    return r


def index_key(key: Any) -> Any:
    """An index: device arrays unwrapped; host integer/boolean arrays and lists copied to the
    device as CuPy's ``_indexing.pyx`` (``_prepare_slice_list``) does."""
    t = type(key)
    if t is tuple:
        return tuple(index_key(k) for k in key)
    if t is ndarray:
        return key._a
    if isinstance(key, np.ndarray) or t is list:
        TRANSFERS.h2d += 1
        k = np.asarray(key)
        return k.astype(np.int32) if t is list and k.size == 0 else k  # (an empty list: no entries, int32)
    if _is_arraylike(key):
        raise unsupported(key)
    return key


class Device:
    """``cupy.cuda.Device``: device 0, a context manager."""

    def __init__(self, device: int | None = None) -> None:
        self.id = 0 if device is None else int(device)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cuda", self.id))

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"


class DLPackCapsule:
    """What the model's ``__dlpack__`` returns (a real one is a ``PyCapsule``)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a


# --- ufuncs ---------------------------------------------------------------------------------------

# ufuncs whose ``at`` CuPy implements (``_core/_kernel.pyx``: ``scatter_op``)
_AT = {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"}


class ufunc:
    """``cupy.ufunc``: the NumPy ufunc of the same name on device memory."""

    def __init__(self, npufunc: np.ufunc) -> None:
        self._np = npufunc
        self.__name__ = npufunc.__name__
        self.nin, self.nout, self.nargs = npufunc.nin, npufunc.nout, npufunc.nargs
        self.identity = npufunc.identity

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: Any = None, dtype: Any = None, casting: str = "same_kind") -> Any:
        for a in args:
            if not (type(a) is ndarray or isinstance(a, SCALARS)):
                raise unsupported(a)
        kw: dict[str, Any] = {"casting": casting}
        if dtype is not None:
            kw["dtype"] = dtype
        if out is not None:
            if isinstance(out, tuple):
                out = out[0] if len(out) == 1 else out
            if type(out) is not ndarray:
                raise TypeError("Output arguments must be cupy.ndarray")
            self._np(*unwrap(args), out=out._a, **kw)
            return out
        return wrap(self._np(*unwrap(args), **kw))

    def _method(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return wrap(getattr(self._np, name)(*unwrap(args), **unwrap(kwargs)))

    def reduce(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return self._method("reduce", array, axis=axis, dtype=dtype, keepdims=keepdims)

    def accumulate(self, array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        return self._method("accumulate", array, axis=axis, dtype=dtype)

    def outer(self, A: Any, B: Any, **kwargs: Any) -> Any:
        return self._method("outer", A, B, **kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        if self.__name__ not in _AT:
            raise NotImplementedError(f"ufunc.at for {self.__name__} is not supported")
        if type(a) is not ndarray:
            raise unsupported(a)
        self._np.at(a._a, index_key(indices), unwrap(b))


# --- the array ------------------------------------------------------------------------------------

NAMESPACE: dict[str, Any] = {}  # the cupy namespace (filled by namespaces.py): __array_function__ looks here


def _binary(name: str, reflected: bool = False) -> Any:
    def op(self: ndarray, other: Any) -> Any:
        f = NAMESPACE[name]
        if type(other) is ndarray or isinstance(other, SCALARS):
            return f(other, self) if reflected else f(self, other)
        if getattr(type(other), "__array_ufunc__", 0) is None:
            return NotImplemented
        npf = getattr(np, name)  # numpy.<ufunc>: NumPy picks whose override runs (core.pyx)
        return npf(other, self) if reflected else npf(self, other)
    op.__name__ = name
    return op


def _inplace(name: str) -> Any:
    def op(self: ndarray, other: Any) -> ndarray:
        return NAMESPACE[name](self, other, out=self)
    return op


def _to_host_then(conv: Any, what: str) -> Any:
    def op(self: ndarray, *args: Any) -> Any:
        return conv(self.get(_what=what), *args)
    op.__name__ = what
    return op


def _method(name: str) -> Any:
    def m(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        return wrap(getattr(self._a, name)(*unwrap(args), **unwrap(kwargs)))
    m.__name__ = name
    return m


class ndarray:
    """``cupy.ndarray``: an array in (modelled) device memory."""

    __slots__ = ("_a", "__weakref__")
    _a: np.ndarray

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                 order: str = "C") -> None:
        self._a = np.empty(shape, dtype, order=order)

    @classmethod
    def _of(cls, a: np.ndarray) -> ndarray:
        o = cls.__new__(cls)
        o._a = a
        return o

    # attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray._of(self._a.T))
    mT = property(lambda self: ndarray._of(self._a.mT))
    device = property(lambda self: Device(0))

    @property
    def real(self) -> ndarray:
        return ndarray._of(self._a.real)

    @real.setter
    def real(self, v: Any) -> None:
        self._a.real = unwrap(v)

    @property
    def imag(self) -> ndarray:
        return ndarray._of(self._a.imag)

    @imag.setter
    def imag(self, v: Any) -> None:
        self._a.imag = unwrap(v)

    @property
    def base(self) -> ndarray | None:
        return None if self._a.base is None else ndarray._of(self._a.base)  # type: ignore[arg-type]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self._a.shape, "typestr": self._a.dtype.str, "descr": [("", self._a.dtype.str)],
                "data": (self._a.ctypes.data, False), "strides": None if self._a.flags.c_contiguous
                else self._a.strides, "version": 3}

    # conversions
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True,
            _what: str = "get") -> np.ndarray:
        TRANSFERS.to_host(_what)
        a = np.array(self._a, order=order)
        if out is not None:
            out[...] = a
            return out
        return a

    def set(self, arr: Any, stream: Any = None) -> None:
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        TRANSFERS.h2d += 1
        self._a[...] = arr

    def item(self, *args: Any) -> Any:
        return self.get(_what="item").item(*args)

    def tolist(self) -> Any:
        return self.get(_what="tolist").tolist()

    __float__ = _to_host_then(float, "__float__")
    __int__ = _to_host_then(int, "__int__")
    __complex__ = _to_host_then(complex, "__complex__")
    __bool__ = _to_host_then(bool, "__bool__")
    __repr__ = _to_host_then(repr, "__repr__")
    __str__ = _to_host_then(str, "__str__")
    __format__ = _to_host_then(format, "__format__")

    def __index__(self) -> int:
        if self._a.ndim != 0 or self._a.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self.get(_what="__index__"))

    def __reduce__(self) -> Any:
        return (NAMESPACE["array"], (self.get(_what="pickle"),))

    def __copy__(self) -> ndarray:
        return ndarray._of(self._a.copy())

    def __deepcopy__(self, memo: Any) -> ndarray:
        return ndarray._of(self._a.copy())

    # DLPack
    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> DLPackCapsule:
        return DLPackCapsule(self._a)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)  # kDLCUDA, device 0

    def toDlpack(self) -> DLPackCapsule:  # noqa: N802  (CuPy's name)
        return DLPackCapsule(self._a)

    # containers
    def __len__(self) -> int:
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self) -> Iterator[ndarray]:
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))

    def __getitem__(self, key: Any) -> ndarray:
        return wrap(self._a[index_key(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (type(value) is ndarray or isinstance(value, SCALARS)):
            raise unsupported(value)
        self._a[index_key(key)] = unwrap(value)

    def scatter_add(self, slices: Any, value: Any) -> None:
        NAMESPACE["_scatter_add"](self, slices, value)

    # NumPy protocols
    def __array_ufunc__(self, uf: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method not in ("__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        f = NAMESPACE.get(uf.__name__) or NAMESPACE["__special__"].get(uf.__name__)
        if not isinstance(f, ufunc) or not hasattr(f, method):
            return NotImplemented
        if method != "__call__":
            f = getattr(f, method)
        out = kwargs.get("out")
        for x in inputs + (tuple(out) if isinstance(out, tuple) else ()):
            if not (hasattr(x, "__cuda_array_interface__") or type(x) in _SCALAR_TYPES
                    or isinstance(x, np.ndarray)):
                return NotImplemented
        if out is not None:
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = out[0]
        return f(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        mod = func.__module__ or "numpy"
        space = NAMESPACE
        for part in mod.split(".")[1:]:
            space = space.get("__modules__", {}).get(part, {})
        f = space.get(func.__name__)
        if f is None or f is func:
            return NotImplemented
        for t in types:
            if t is not ndarray and t is not np.ndarray:
                return NotImplemented
        return f(*args, **kwargs)

    # operators (core.pyx: the op with a device array, else numpy.<ufunc> so NumPy dispatches)
    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rshift__ = _binary("left_shift"), _binary("right_shift")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]
    __iadd__, __isub__, __imul__ = _inplace("add"), _inplace("subtract"), _inplace("multiply")
    __itruediv__, __ifloordiv__ = _inplace("true_divide"), _inplace("floor_divide")
    __imod__, __ipow__ = _inplace("remainder"), _inplace("power")
    __iand__, __ior__, __ixor__ = _inplace("bitwise_and"), _inplace("bitwise_or"), _inplace("bitwise_xor")

    def __divmod__(self, other: Any) -> Any:
        return NAMESPACE["divmod"](self, other)

    def __neg__(self) -> ndarray:
        return NAMESPACE["negative"](self)

    def __pos__(self) -> ndarray:
        return NAMESPACE["positive"](self)

    def __abs__(self) -> ndarray:
        return NAMESPACE["absolute"](self)

    def __invert__(self) -> ndarray:
        return NAMESPACE["invert"](self)

    # methods (CuPy's ndarray methods: core.pyx)
    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> ndarray:
        if not copy and np.dtype(dtype) == self._a.dtype:
            return self
        return ndarray._of(self._a.astype(dtype, order=order, casting=casting or "unsafe"))

    def copy(self, order: str = "C") -> ndarray:
        return ndarray._of(self._a.copy(order=order))

    def view(self, *args: Any, **kwargs: Any) -> ndarray:
        return ndarray._of(self._a.view(*args, **kwargs))

    def fill(self, value: Any) -> None:
        self._a.fill(unwrap(value))

    def sort(self, axis: int = -1, kind: Any = None) -> None:
        self._a.sort(axis=axis)

    def dot(self, b: Any, out: Any = None) -> ndarray:
        return NAMESPACE["dot"](self, b)


for _name in ("all", "any", "argmax", "argmin", "argpartition", "argsort", "clip", "compress", "conj",
              "conjugate", "cumprod", "cumsum", "diagonal", "flatten", "max", "mean", "min", "nonzero",
              "partition", "prod", "ptp", "put", "ravel", "repeat", "reshape", "round", "squeeze", "std",
              "sum", "swapaxes", "take", "trace", "transpose", "var", "searchsorted"):
    setattr(ndarray, _name, _method(_name))

ndarray.__module__ = "cupy"
ufunc.__module__ = "cupy"
Device.__module__ = "cupy.cuda"
DeviceSynchronized.__module__ = "cupyx"

_SCALAR_TYPES = frozenset({bool, int, float, complex} | {t for t in np.sctypeDict.values()
                                                          if issubclass(t, np.number | np.bool_)})
