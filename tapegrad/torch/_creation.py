"""Creation functions and the ``torch.*`` function forms of tensor methods."""

from __future__ import annotations

import builtins
import functools
import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.backend import import_cupy
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.torch import _dtype as D
from tapegrad.torch._graph import GT, SCALAR_TYPE, bump, note_attrs
from tapegrad.torch._promote import _promote, _shape_arg
from tapegrad.torch._shape_errors import device_clash
from tapegrad.torch._tensor_base import Tensor, _new, _result, _v

REQUIRES_FLOAT = "Only Tensors of floating point and complex dtype can require gradients"


def _fresh_seed() -> int:
    return int(cast(int, np.random.SeedSequence().entropy) % (2**63))  # entropy is an int when none is given


def _seed_arg(seed: Any) -> int:
    """A seed as PyTorch takes it: an int in [-2**63, 2**64), negatives wrapped to 64 bits."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError("Overflow when unpacking long long" if seed > 0 else
                         "Seed must be within the range [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]")
    return seed % 2**64


class Generator:
    """A random number generator for the facade's random functions
    (``torch.randn(..., generator=g)``, ``randperm``, ``DataLoader(generator=g)``...).

    Draws are NumPy's PCG64 stream: reproducible per seed, but not the numbers
    PyTorch's generator gives for the same seed.

    Examples:
        >>> g = torch.Generator().manual_seed(0)
        >>> a = torch.randn(3, generator=g)
        >>> torch.equal(a, torch.randn(3, generator=torch.Generator().manual_seed(0)))
        True
    """

    _DEFAULT_SEED = 67280421310721  # PyTorch's initial seed of a new Generator

    def __init__(self, device: Any = "cpu") -> None:
        self.device = D.device(device)
        self._seed = self._DEFAULT_SEED
        self._np = np.random.default_rng(self._seed)

    @property
    def numpy_generator(self) -> Any:
        """The NumPy ``Generator`` the draws come from (tapegrad's own; code that
        wants the facade's stream in NumPy draws from it)."""
        return self._np

    def _set_numpy(self, rng: Any) -> None:
        self._np = rng

    def manual_seed(self, seed: Any) -> Generator:
        """Seed this generator (an int in [-2**63, 2**64)); returns it."""
        self._seed = _seed_arg(seed)
        self._set_numpy(np.random.default_rng(self._seed))
        return self

    def seed(self) -> int:
        """Seed this generator from the operating system's entropy; returns the seed."""
        s = _fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 tensor (for ``set_state``)."""
        state = {"seed": self._seed, "bit_generator": self.numpy_generator.bit_generator.state}
        return _new(np.frombuffer(json.dumps(state).encode(), dtype=np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state that ``get_state`` returned; returns the generator."""
        if not isinstance(new_state, Tensor) or new_state.dtype != D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        try:
            state = json.loads(value(new_state._value).tobytes().decode())
            rng = np.random.Generator(getattr(np.random, state["bit_generator"]["bit_generator"])())
            rng.bit_generator.state = state["bit_generator"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RuntimeError("Generator.set_state: the tensor is not a state from Generator.get_state") from exc
        self._seed = int(state["seed"])
        self._set_numpy(rng)
        return self

    def clone_state(self) -> Generator:
        """A new generator in this one's state."""
        return Generator(self.device).set_state(self.get_state())

    def __repr__(self) -> str:
        return f"<torch.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """``torch.default_generator``: the generator ``torch.manual_seed`` seeds and
    the random functions use when given none (its NumPy generator lives in
    ``_state``, where ``vmap``'s randomness modes put their own view of it)."""

    def __init__(self) -> None:
        self.device = D.device("cpu")
        self._seed = _fresh_seed()
        _state["rng"] = np.random.default_rng(self._seed)

    @property
    def numpy_generator(self) -> Any:
        return _state["rng"]

    def _set_numpy(self, rng: Any) -> None:
        _state["rng"] = rng


_state: dict[str, Any] = {}
default_generator = _DefaultGenerator()


def _rng(generator: Generator | None = None) -> Any:
    """The NumPy generator to draw from: ``generator``'s, else the default one's."""
    if generator is None:
        return _state["rng"]
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tapegrad.torch.Generator, got {type(generator).__name__}")
    return generator.numpy_generator


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator (NumPy's stream, not PyTorch's); returns ``torch.default_generator``."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from ``get_rng_state``."""
    default_generator.set_state(new_state)


def _finish(arr: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    if dtype is not None:
        arr = arr.astype(D.to_np(dtype), copy=False)
    if device is not None and D.device(device).type == "cuda":
        cupy = import_cupy()
        arr = cupy.asarray(arr)
    t = _new(arr)
    if requires_grad:
        if arr.dtype.kind not in "fc":
            raise RuntimeError(REQUIRES_FLOAT)
        t.requires_grad_(True)
    return t


def _nested_values(data: Any) -> Any:
    if isinstance(data, Tensor):
        v = value(data._value)
        return v.item() if getattr(v, "ndim", 1) == 0 else np.asarray(v).tolist()
    if isinstance(data, (list, tuple)):
        return [_nested_values(d) for d in data]
    return data


def _infer_array(data: Any, dtype: Any = None) -> Any:
    """A new array of ``data``: of ``dtype`` (a NumPy dtype) when given, read
    straight into it (Python floats asked for as float64 never pass through
    float32), else of the dtype PyTorch infers."""
    if isinstance(data, Tensor):
        return np.array(value(data._value), dtype=dtype)
    if isinstance(data, np.ndarray):
        return data.astype(dtype) if dtype is not None else data.copy()
    if isinstance(data, np.generic):
        return np.asarray(data, dtype=dtype)
    arr = np.array(_nested_values(data), dtype=dtype)
    if dtype is not None:
        return arr
    if arr.dtype.kind == "O":  # (None, a generator, an object PyTorch infers no dtype of)
        what = type(data).__name__ if arr.ndim == 0 else "an element"
        raise RuntimeError(f"Could not infer dtype of {what}")
    k = arr.dtype.kind
    if k == "f":
        arr = arr.astype(D.get_default_dtype().np)
    elif k == "c":
        arr = arr.astype(D.get_default_dtype().to_complex().np)
    elif k in "iu":
        arr = arr.astype(np.int64)
    return arr


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data``.

    Python floats give ``torch.float32``, ints ``torch.int64``, bools ``torch.bool``;
    NumPy arrays keep their dtype.

    Examples:
        >>> torch.tensor([[1.5, 2.0]], requires_grad=True)
        tensor([[1.5000, 2.0000]], requires_grad=True)
    """
    return _finish(_infer_array(data, None if dtype is None else D.to_np(dtype)), None, device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory with a NumPy array or tensor when it can."""
    if isinstance(data, Tensor):
        return data.to(dtype) if dtype is not None else data
    if isinstance(data, np.ndarray) and (dtype is None or D.to_np(dtype) == data.dtype):
        return _new(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with the NumPy array ``a``."""
    return _new(a)


def from_dlpack(ext: Any) -> Tensor:
    """A tensor sharing memory with ``ext``, any object with ``__dlpack__``
    (a NumPy or CuPy array, a PyTorch or JAX tensor...): no copy. CPU data
    becomes a NumPy array, CUDA data a CuPy array."""
    if isinstance(ext, Tensor):
        return ext
    device_type = ext.__dlpack_device__()[0] if hasattr(ext, "__dlpack_device__") else 1
    if device_type == 1:  # kDLCPU
        return _new(np.from_dlpack(ext))
    cupy = import_cupy()
    return _new(cupy.from_dlpack(ext))


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def numel(x: Tensor) -> int:
    return x.numel()


# --- out= --------------------------------------------------------------------------------------------


def _out_dtype(name: str, out: Any, dtype: Any, device: Any) -> Any:
    """Check ``out=`` of creation function ``name`` as PyTorch does (a tensor;
    ``dtype=`` and ``device=`` agree with it; it needs no grad) and return its
    NumPy dtype, which the values are made in."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    have = out._value.dtype
    if dtype is not None and D.to_np(dtype) != have:
        want = D.to_np(dtype)
        raise RuntimeError(f"dtype {SCALAR_TYPE.get(want.name, want.name)} does not match dtype of out parameter "
                           f"({SCALAR_TYPE.get(have.name, have.name)})")
    if device is not None and D.device(device).type != out.device.type:
        raise RuntimeError(f"device type {D.device(device).type} does not match device type of out parameter "
                           f"({out.device.type})")
    if out.requires_grad:
        if name in ("empty", "randn"):  # PyTorch resizes their out first, in any grad mode
            raise RuntimeError("cannot resize variables that require grad")
        if GT.active:
            raise RuntimeError(f"aten::{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
    return have


def _into(out: Tensor, arr: Any | None, requires_grad: bool, keep_shape: bool = False) -> Tensor:
    """Write ``arr`` into ``out`` in place and return ``out`` (PyTorch's
    ``r is out``): into its buffer when the shape agrees (views of it see
    the values), else ``out`` is resized to ``arr``'s shape. ``keep_shape``:
    ``out`` keeps its own shape when only its number of elements must agree
    (``arange``, ``linspace``). Its ``requires_grad`` becomes ``requires_grad``,
    as PyTorch's factory functions set it (``empty``, ``randn``: checked before)."""
    if out.requires_grad:  # (grad mode is off: checked in _out_dtype)
        out.requires_grad_(False)
    if arr is not None:  # (None: ``empty`` into an ``out`` of its shape leaves it as it is)
        if keep_shape and arr.size == out.numel():
            arr = arr.reshape(out._value.shape)
        if out.device.type == "cuda":
            cupy = import_cupy()
            arr = cupy.asarray(arr)
        if arr.shape == out._value.shape:
            out._write(arr)
        else:
            out._value = arr
        bump(out)
    if requires_grad:
        if out._value.dtype.kind not in "fc":
            raise RuntimeError(REQUIRES_FLOAT)
        out.requires_grad_(True)
    return out


def _not_for(name: str, dt: Any, kinds: str, exc: type[Exception] = NotImplementedError) -> None:
    """PyTorch's error for kernel ``name`` asked for a dtype of a kind in ``kinds``."""
    if dt.kind in kinds:
        raise exc(f"\"{name}\" not implemented for '{SCALAR_TYPE.get(dt.name, dt.name)}'")


def _uniform(shape: tuple[int, ...], dt: Any, generator: Generator | None = None) -> Any:
    _not_for("check_uniform_bounds", dt, "biu")
    rng = _rng(generator)
    r = rng.random(shape)
    return (r + 1j * rng.random(shape) if dt.kind == "c" else r).astype(dt)


def _normal(shape: tuple[int, ...], dt: Any, generator: Generator | None = None) -> Any:
    _not_for("normal_kernel_cpu", dt, "biu")
    rng = _rng(generator)
    if dt.kind == "c":  # PyTorch's complex normal: unit variance in all, half in each part
        return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) / np.sqrt(2)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _sizes(name: str, size: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape of ``name(*size)`` (``zeros(2, 3)``, ``ones((2, 3))``...), or
    the TypeError PyTorch raises for a size that is no int (``ones(2.5)``)."""
    items, listed = size, False
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        items, listed = tuple(size[0]), isinstance(size[0], list)
    for k, s in enumerate(items):
        if isinstance(s, builtins.float):
            if len(size) == 1 and not isinstance(size[0], (tuple, list)):
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not float")
            if listed:
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, but found "
                                f"element of type float at pos {k}")
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos {k + 1} with "
                            'error "type must be tuple of ints,but got float"')
    return _shape_arg(size)


def _factory(name: str, fn: Callable[..., Any], random: bool = False) -> Any:
    """``zeros``, ``rand``...: ``fn(shape, dtype)`` makes the array (``random``:
    ``fn(shape, dtype, generator)``; the others refuse a generator)."""
    def make(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: bool = False, requires_grad: bool = False, generator: Any = None,
             memory_format: Any = None) -> Tensor:
        shape = _sizes(name, size)
        if generator is not None and not random:
            raise TypeError(f"{name}() got an unexpected keyword argument 'generator'")
        draw = functools.partial(fn, generator=generator) if random else fn
        if out is not None:
            dt = _out_dtype(name, out, dtype, device)
            if name == "empty" and shape == out._value.shape:  # nothing to write: out as it is
                return _into(out, None, requires_grad)
            if name == "randn" and shape != out._value.shape:  # resized, then written: two changes
                bump(out)
            return _into(out, draw(shape, dt), requires_grad)
        dt = D.to_np(dtype) if dtype is not None else D.get_default_dtype().np
        return _finish(draw(shape, dt), None, device, requires_grad)

    make.__name__ = make.__qualname__ = name
    return make


zeros = _factory("zeros", lambda s, d: np.zeros(s, d))
ones = _factory("ones", lambda s, d: np.ones(s, d))
empty = _factory("empty", lambda s, d: np.zeros(s, d))
rand = _factory("rand", _uniform, random=True)
randn = _factory("randn", _normal, random=True)
zeros.__doc__ = "A tensor of zeros of the given size (float32 unless ``dtype``; written into ``out`` when given)."
ones.__doc__ = "A tensor of ones of the given size (float32 unless ``dtype``; written into ``out`` when given)."
empty.__doc__ = "An (here: zero-filled) tensor of the given size (written into ``out`` when given)."
rand.__doc__ = ("Uniform random numbers in [0, 1), drawn from ``generator`` or the default generator "
                "(NumPy's stream, not PyTorch's; seed with manual_seed).")
randn.__doc__ = ("Standard normal random numbers, drawn from ``generator`` or the default generator "
                 "(NumPy's stream, not PyTorch's; seed with manual_seed).")


def _fill_dtype(fill_value: Any) -> Any:
    if isinstance(fill_value, builtins.bool):
        return np.bool_
    if isinstance(fill_value, builtins.int):
        return np.int64
    if isinstance(fill_value, complex):
        return D.get_default_dtype().to_complex().np
    return D.get_default_dtype().np


def full(size: Any, fill_value: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, *, out: Tensor | None = None, layout: Any = None) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (written into ``out`` when given)."""
    fill = value(_v(fill_value))
    shape = _shape_arg((size,)) if not isinstance(size, int) else (size,)
    if out is not None:
        return _into(out, np.full(shape, fill, _out_dtype("full", out, dtype, device)), requires_grad)
    dt = D.to_np(dtype) if dtype is not None else _fill_dtype(fill)
    return _finish(np.full(shape, fill, dt), None, device, requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False, *, out: Tensor | None = None, layout: Any = None) -> Tensor:
    """The identity matrix (``n`` x ``m``; written into ``out`` when given)."""
    if out is not None:
        return _into(out, np.eye(n, m, dtype=_out_dtype("eye", out, dtype, device)), requires_grad)
    dt = D.to_np(dtype) if dtype is not None else D.get_default_dtype().np
    return _finish(np.eye(n, m, dtype=dt), None, device, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False, *, out: Tensor | None = None, layout: Any = None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive): int64 for integer arguments, else float32.

    An integer dtype (or ``out``) takes the arguments truncated to integers,
    as PyTorch does: ``arange(0, 4, 1.5, dtype=torch.int64)`` is ``[0, 1, 2, 3]``.
    ``out`` of another number of elements is resized, with PyTorch's warning."""
    if end is None:
        start, end = 0, start
    args = [value(_v(a)) for a in (start, end, step)]
    if out is not None:
        dt = _out_dtype("arange", out, dtype, device)
    else:
        if dtype is None:
            is_int = all(isinstance(a, (builtins.int, np.integer)) for a in args)
            dtype = D.int64 if is_int else D.get_default_dtype()
        dt = D.to_np(dtype)
    _not_for("arange_cpu", dt, "bc")
    if dt.kind in "iu":
        args = [builtins.int(a) for a in args]
    if args[2] == 0:
        raise ValueError("step must be nonzero")
    n = max(0, int(np.ceil((args[1] - args[0]) / args[2])))
    arr = (args[0] + np.arange(n, dtype=np.float64 if dt.kind == "f" else np.int64) * args[2]).astype(dt)
    if out is None:
        return _finish(arr, None, device, requires_grad)
    if out.numel() not in (0, n):
        warnings.warn(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} which "
                      f"does not match the computed number of elements {n}. Note that this may occur as a result of "
                      f"rounding error. The out tensor will be resized to a tensor of shape ({n},).",
                      UserWarning, stacklevel=2)
    return _into(out, arr, requires_grad, keep_shape=True)


def linspace(start: Any, end: Any, steps: int, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, *, out: Tensor | None = None, layout: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (written into ``out`` when given)."""
    if out is not None:
        dt = _out_dtype("linspace", out, dtype, device)
    else:
        dt = D.to_np(dtype) if dtype is not None else D.get_default_dtype().np
    _not_for("linspace_cpu", dt, "b")
    arr = np.linspace(value(_v(start)), value(_v(end)), steps).astype(dt)
    if out is not None:
        return _into(out, arr, requires_grad, keep_shape=True)
    return _finish(arr, None, device, requires_grad)


def randint(low: int, high: Any = None, size: Any = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False, *, out: Tensor | None = None, generator: Any = None,
            layout: Any = None) -> Tensor:
    """Random integers in [low, high) (int64 unless ``dtype``; written into ``out`` when given),
    drawn from ``generator`` or the default generator."""
    if size is None:
        low, high, size = 0, low, high
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    dt = _out_dtype("randint", out, dtype, device) if out is not None else \
        D.to_np(dtype) if dtype is not None else np.dtype(np.int64)
    if dt.kind == "c":
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if dt.kind == "b" and high > 2:
        raise RuntimeError("to - 1 is out of bounds for bool")
    arr = _rng(generator).integers(low, high, tuple(size)).astype(dt)
    return _into(out, arr, requires_grad) if out is not None else _finish(arr, None, device, requires_grad)


def randperm(n: int, dtype: Any = None, *, out: Tensor | None = None, generator: Any = None,
             device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``; written into ``out`` when given),
    drawn from ``generator`` or the default generator."""
    dt = _out_dtype("randperm", out, dtype, device) if out is not None else \
        D.to_np(dtype) if dtype is not None else np.dtype(np.int64)
    _not_for("randperm", dt, "bc")
    arr = _rng(generator).permutation(n).astype(dt)
    return _into(out, arr, requires_grad) if out is not None else _finish(arr, None, device, requires_grad)


def _like(fn: Any, random: bool = False) -> Any:
    def make(t: Tensor, *args: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
             memory_format: Any = None, generator: Generator | None = None) -> Tensor:
        dt = dtype if dtype is not None else t.dtype
        kw: dict[str, Any] = {"dtype": dt, "device": device or t.device, "requires_grad": requires_grad}
        if generator is not None:
            if not random:
                raise TypeError(f"{fn.__name__}_like() got an unexpected keyword argument 'generator'")
            kw["generator"] = generator
        return fn(*args, *t.shape, **kw) if not args else fn(tuple(t.shape), *args, **kw)

    return make


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand, random=True)
randn_like = _like(randn, random=True)
full_like = _like(full)


def randint_like(t: Tensor, low: int, high: Any = None, dtype: Any = None, *,
                 generator: Generator | None = None) -> Tensor:
    """Random integers in [low, high) (or [0, low)) of ``t``'s shape."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(t.shape), dtype=dtype or t.dtype, generator=generator)


def _legacy(dt: D.dtype) -> Any:
    def make(*args: Any) -> Tensor:
        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=dt)
        return zeros(*args, dtype=dt)

    make.__name__ = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                     "int32": "IntTensor", "bool": "BoolTensor"}[dt.name]
    return make


FloatTensor = _legacy(D.float32)
DoubleTensor = _legacy(D.float64)
LongTensor = _legacy(D.int64)
IntTensor = _legacy(D.int32)
BoolTensor = _legacy(D.bool_)


# --- several tensors in ------------------------------------------------------------------------


def _common(tensors: Sequence[Tensor]) -> list[Any]:
    vals = [t._value for t in tensors]
    clash = device_clash(*vals)  # (PyTorch's error for tensors on two devices)
    if clash is not None:
        raise clash
    dts = {v.dtype for v in vals}
    if len(dts) > 1:
        ref = vals[0]
        for v in vals[1:]:
            ref, _ = _promote(ref, v)
        target = ref.dtype
        vals = [v if v.dtype == target else _promote(v, ref)[0] for v in vals]
    return vals


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along ``dim`` (``CatBackward0``)."""
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)
    return note_attrs(_result(tnp.concatenate(_common(tensors), axis=dim), "CatBackward0", tuple(tensors)),
                      dim=dim)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stack along a new axis ``dim`` (``StackBackward0``)."""
    return note_attrs(_result(tnp.stack(_common(tensors), axis=dim), "StackBackward0", tuple(tensors)),
                      dim=dim)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """``cat`` along axis 1 (0 for vectors) of the inputs as ``atleast_1d``
    makes them (a 0-d tensor: ``ViewBackward0``), as PyTorch does."""
    ts = [t.reshape(1) if t.ndim == 0 else t for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """``cat`` along axis 0 of the inputs as ``atleast_2d`` makes them (a
    vector: ``UnsqueezeBackward0``; a 0-d tensor: ``ViewBackward0``), as PyTorch does."""
    return cat([t.reshape(1, 1) if t.ndim == 0 else t.unsqueeze(0) if t.ndim == 1 else t for t in tensors], 0)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``input`` where ``condition`` holds, else ``other`` (``WhereBackward0``)."""
    c = value(_v(condition))
    if input is None and other is None:
        return tuple(_new(np.asarray(i, np.int64)) for i in np.nonzero(c))
    a, b = _v(input), _v(other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        a, b = _promote(a, b)
    elif isinstance(input, Tensor):
        b = np.asarray(b, dtype=a.dtype)
    elif isinstance(other, Tensor):
        a = np.asarray(a, dtype=b.dtype)
    ins = tuple(x if isinstance(x, Tensor) else None for x in (input, other))
    try:
        r = tp.where_mask(c, a, b)
    except (TypeError, ValueError) as e:
        ts = [t for t in (condition, input, other) if isinstance(t, Tensor)]
        dev = next((t.device for t in ts if t.device.type != "cpu"), None)
        if dev is None or not all(t.device == dev or t.ndim == 0 for t in ts):  # (0-d CPU tensors: scalars)
            raise device_clash(c, a, b) or e from None
        moved = [t.to(dev) if isinstance(t, Tensor) else t for t in (condition, input, other)]
        return where(*moved)
    return _result(r, "WhereBackward0", ins)


def einsum(equation: str, *operands: Any) -> Tensor:
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    vals = [t._value for t in operands]
    try:
        r = tnp.einsum(equation, *vals)
    except (TypeError, ValueError) as e:
        raise device_clash(*vals) or e from None
    return _result(r, "ViewBackward0", operands)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return tuple(t.expand(*shape) for t in tensors)


def _is_traced(t: Tensor) -> bool:
    v = t._value
    return type(v) is Traced and v._level is GT
