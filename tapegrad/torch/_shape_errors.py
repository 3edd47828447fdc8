"""PyTorch's errors for operands whose shapes do not fit, for the facade to
raise (as ``RuntimeError``, PyTorch's type and words) where NumPy raised a
``ValueError`` of its own wording.

Each function returns the error for the shapes, or None when they fit (the
``ValueError`` then had another cause, and is raised as it was).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tapegrad.backend import array_module

__all__ = ["broadcast_mismatch", "conv_type_clash", "device_arg_clash", "device_clash", "index_device_clash",
           "matmul_mismatch"]


def broadcast_mismatch(sa: Sequence[int], sb: Sequence[int]) -> RuntimeError | None:
    """Shapes ``sa`` and ``sb`` of an elementwise op that do not broadcast: the
    first clash from the right, as PyTorch words it."""
    n = max(len(sa), len(sb))
    for i in range(1, n + 1):
        x = sa[-i] if i <= len(sa) else 1
        y = sb[-i] if i <= len(sb) else 1
        if x != y and x != 1 and y != 1:
            return RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                                f"at non-singleton dimension {n - i}")
    return None


def matmul_mismatch(sa: Sequence[int], sb: Sequence[int]) -> RuntimeError | None:
    """Shapes of ``a @ b`` whose inner sizes differ (or batches do not broadcast),
    with PyTorch's message for the kernel it would run (dot, mv, mm, bmm)."""
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        return RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    k = sa[-1]
    if na == 1 and nb == 1:
        if k == sb[0]:
            return None
        return RuntimeError(f"inconsistent tensor size, expected tensor [{k}] and src [{sb[0]}] to have the same "
                            f"number of elements, but got {k} and {sb[0]} elements respectively")
    if nb == 1:
        rows = math.prod(sa[:-1])
        return None if k == sb[0] else RuntimeError(
            f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({sb[0]})")
    if nb == 2:
        rows = math.prod(sa[:-1])
        return None if k == sb[0] else RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {sb[0]}x{sb[1]})")
    ba, bb = tuple(sa[:-2]), tuple(sb[:-2])
    clash = broadcast_mismatch(ba, bb)
    if clash is not None:
        return clash
    if k == sb[-2]:
        return None
    batch = math.prod(np.broadcast_shapes(ba, bb))
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] "
                        f"but got: [{batch}, {sb[-2]}].")


_DEVICES = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def device_clash(*values: Any) -> RuntimeError | None:
    """PyTorch's RuntimeError when ``values`` (arrays, traced values) lie on two devices, else None."""
    try:
        array_module(*values)
    except ValueError:
        return RuntimeError(_DEVICES)
    return None


def _device_name(v: Any) -> str:
    """``"cpu"`` or ``"cuda:0"``: where the array (or traced value) ``v`` lies."""
    return "cuda:0" if array_module(v).__name__ == "cupy" else "cpu"


def device_arg_clash(method: str, *args: tuple[str, Any]) -> RuntimeError | None:
    """PyTorch's RuntimeError when the named arguments ``args`` (``(name, array)``; None
    for an absent one) lie on two devices, as the device check of its generated
    wrappers words it (torch 2.13: ``mm``, ``bmm``, ``addmm``, ``index_select`` and the
    others checked before their kernel): the first argument's device is the common
    one, the first argument on another device is named. ``method`` is the wrapper's
    name (``wrapper_CUDA_bmm``). None when all lie on one device."""
    common = None
    for name, v in args:
        if v is None:
            continue
        dev = _device_name(v)
        if common is None:
            common = dev
        elif dev != common:
            return RuntimeError(f"Expected all tensors to be on the same device, but got {name} is on {dev}, "
                                f"different from other tensors on {common} (when checking argument in method "
                                f"{method})")
    return None


def _type_name(v: Any, scalar_type: str) -> str:
    """PyTorch's ``Tensor.toString()``: ``CUDAFloatType``, ``CPUDoubleType``."""
    return ("CUDA" if _device_name(v) != "cpu" else "CPU") + scalar_type + "Type"


def conv_type_clash(x: Any, w: Any, b: Any, scalar_types: dict[str, str]) -> RuntimeError | None:
    """PyTorch's RuntimeError for a convolution's input ``x``, weight ``w`` and bias
    ``b`` (None: none) on two devices, as its ``check_input_same_type_as_parameters``
    words it (a CPU input: the MKLDNN backend's wording), else None. ``scalar_types``
    maps a NumPy dtype name to PyTorch's (``float32``: ``Float``)."""
    dx = _device_name(x)
    for what, p in (("weight", w), ("bias", b)):
        if p is None or _device_name(p) == dx:
            continue
        tail = f" or input should be a MKLDNN tensor and {what} is a dense tensor" if dx == "cpu" else ""
        return RuntimeError(f"Input type ({_type_name(x, scalar_types[x.dtype.name])}) and {what} type "
                            f"({_type_name(p, scalar_types[p.dtype.name])}) should be the same{tail}")
    return None


def index_device_clash(x: Any, key: Any) -> IndexError | None:
    """PyTorch's IndexError for a CPU tensor ``x`` indexed by a device array in ``key``
    (a CPU index of a CUDA tensor is allowed: PyTorch copies it over), else None."""
    if _device_name(x) != "cpu":
        return None
    for k in key if isinstance(key, tuple) else (key,):
        if hasattr(k, "dtype") and _device_name(k) != "cpu":
            return IndexError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
    return None
