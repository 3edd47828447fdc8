"""tapegrad.torch: the PyTorch-style facade on tapegrad's one tape.

    import tapegrad.torch as torch

    w = torch.tensor([0.5, -1.0], requires_grad=True)
    y = (w * torch.tensor([2.0, 3.0])).sum()
    y.backward()
    print(w.grad)            # tensor([2., 3.])

Tensors hold plain arrays or traced values on the facade's tape; their
methods call ``tapegrad.numpy``, and ``backward()`` is the tape's reverse
walk. ``torch.nn`` / ``torch.optim`` live in their own modules.
"""

from __future__ import annotations

import builtins
from typing import Any

from tapegrad.torch import (  # noqa: E402, I001
    _dtype,
    _ops,  # noqa: I001  (installs the op table's methods on Tensor first)
    autograd,
    distributed,
    func,
    linalg,
    nn,
    optim,
    serialization,
    utils,
)
from tapegrad.torch._creation import (
    BoolTensor,
    DoubleTensor,
    FloatTensor,
    Generator,
    IntTensor,
    LongTensor,
    arange,
    as_tensor,
    broadcast_tensors,
    cat,
    concat,
    concatenate,
    default_generator,
    einsum,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    hstack,
    initial_seed,
    is_tensor,
    linspace,
    manual_seed,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    stack,
    tensor,
    vstack,
    where,
    zeros,
    zeros_like,
)
from tapegrad.torch._dtype import (
    Size,
    bool_,
    cdouble,
    cfloat,
    complex64,
    complex128,
    device,
    double,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from tapegrad.torch._missing import missing_names
from tapegrad.torch._random import normal, poisson
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from tapegrad.torch.func import vmap
from tapegrad.torch.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from tapegrad.torch.serialization import load, save

bool = bool_  # noqa: A001
float = _dtype.float  # noqa: A001
int = _dtype.int  # noqa: A001
__version__ = "2.13.0"  # the PyTorch release whose behaviour this facade follows
inf = __import__("math").inf
nan = __import__("math").nan
pi = __import__("math").pi
e = __import__("math").e

__all__ = [
    "BoolTensor", "DoubleTensor", "FloatTensor", "IntTensor", "LongTensor", "Size", "Tensor",
    "arange", "as_tensor", "autograd", "bool", "broadcast_tensors", "cat", "cdouble", "cfloat",
    "complex128", "complex64", "concat", "concatenate", "device", "double", "dtype", "einsum",
    "empty", "empty_like", "enable_grad", "eye", "float", "float16", "float32", "float64",
    "from_dlpack", "from_numpy", "full", "full_like", "func", "get_default_dtype", "half", "hstack",
    "inference_mode", "int", "int16", "int32", "int64", "int8", "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "is_tensor", "linspace", "long", "manual_seed", "no_grad", "numel",
    "ones", "ones_like", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like",
    "randperm", "seed", "set_anomaly_enabled", "set_default_dtype", "set_grad_enabled", "short", "stack", "tensor",
    "uint8", "vmap", "vstack", "where", "zeros", "zeros_like", "nn", "optim", "utils",
    "load", "save", "serialization", "distributed", "linalg", "svd", "accelerator",
    "set_default_device", "get_default_device", "Generator", "default_generator", "initial_seed",
    "get_rng_state", "set_rng_state", "normal", "poisson",
]

# the function forms of tensor methods: torch.exp(x), torch.sum(x, dim=0), ... (the op table's rows)
globals().update(_ops.FUNCTIONS)


def max(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:  # noqa: A001, A002
    """``input.max()``, ``input.max(dim)`` (values, indices) or the elementwise maximum."""
    return input.max(dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:  # noqa: A001, A002
    """``input.min()``, ``input.min(dim)`` (values, indices) or the elementwise minimum."""
    return input.min(dim, keepdim)


def is_floating_point(x: Tensor) -> builtins.bool:
    return x.is_floating_point()


def set_printoptions(precision: Any = None, threshold: Any = None, edgeitems: Any = None,
                     linewidth: Any = None, profile: Any = None, sci_mode: Any = None) -> None:
    """Set the repr options as ``torch.set_printoptions``: a ``profile``
    ("default", "short": precision 2 and 2 edge items, "full": no summaries)
    first, then each option given; ``sci_mode`` True or False forces
    scientific notation on or off, None (also when not given) lets each
    tensor's magnitudes decide."""
    from tapegrad.torch import _format

    profiles = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, builtins.float("inf"), 3, 80)}
    if profile in profiles:  # (PyTorch ignores another profile)
        _format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS, _format.LINEWIDTH = profiles[profile]
    for name, v in (("PRECISION", precision), ("THRESHOLD", threshold), ("EDGEITEMS", edgeitems),
                    ("LINEWIDTH", linewidth)):
        if v is not None:
            setattr(_format, name, v)
    _format.SCI_MODE = sci_mode


svd = linalg.torch_svd

_default_device = ["cpu"]


def set_default_device(device: Any) -> None:  # noqa: A002
    """``torch.set_default_device``: the CPU (or None) only; CUDA through CuPy when available."""
    name = "cpu" if device is None else str(device)
    if name.split(":")[0] not in ("cpu", "cuda"):
        raise RuntimeError(f"tapegrad.torch: set_default_device({device!r}): only 'cpu' and 'cuda' are provided")
    if name.startswith("cuda") and not cuda.is_available():
        raise RuntimeError("Found no NVIDIA driver on your system.")
    _default_device[0] = name


def get_default_device() -> Any:
    return _dtype.device(_default_device[0])


class accelerator:  # noqa: N801
    """``torch.accelerator``: CUDA through CuPy when a GPU is there, else none."""

    @staticmethod
    def is_available() -> builtins.bool:
        return cuda.is_available()

    @staticmethod
    def current_accelerator(check_available: builtins.bool = False) -> Any:
        return _dtype.device("cuda") if cuda.is_available() else None

    @staticmethod
    def device_count() -> Any:
        return cuda.device_count()

    @staticmethod
    def current_device_index() -> Any:
        return 0 if cuda.is_available() else -1

    @staticmethod
    def synchronize(device: Any = None) -> None:
        pass


class cuda:  # noqa: N801
    """``torch.cuda``: availability through CuPy."""

    @staticmethod
    def is_available() -> builtins.bool:
        try:
            import cupy

            return cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False

    @staticmethod
    def device_count() -> Any:
        return 1 if cuda.is_available() else 0

    @staticmethod
    def manual_seed(s: Any) -> None:
        pass

    @staticmethod
    def synchronize() -> None:
        pass


__getattr__ = missing_names(__name__, "torch")
