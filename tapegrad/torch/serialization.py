"""``torch.save`` / ``torch.load``: pickle of tensors, modules, state dicts and optimizers.

The file is a plain pickle (not PyTorch's zip archive, so files do not move
between PyTorch and tapegrad.torch); ``f`` is a path or a binary file-like
object. As in PyTorch 2.6 and later, ``load`` defaults to ``weights_only=True``:
only tensors, parameters, containers and primitive values are rebuilt, and
anything else (a pickled module, say) raises ``pickle.UnpicklingError`` unless
``weights_only=False`` or ``add_safe_globals`` allows it.

Examples:
    >>> torch.save(model.state_dict(), "model.pt")
    >>> model.load_state_dict(torch.load("model.pt"))
    <All keys matched successfully>
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]

DEFAULT_PROTOCOL = 2

# (module, name) pairs a weights-only load rebuilds
_SAFE: set[tuple[str, str]] = {
    ("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "Counter"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"), ("builtins", "complex"),
    ("builtins", "bytearray"), ("builtins", "range"), ("_codecs", "encode"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("tapegrad.torch._tensor", "_rebuild"), ("tapegrad.torch._convert", "_rebuild"),  # (_tensor: older files)
    ("tapegrad.torch.nn.parameter", "_rebuild_parameter"),
    ("tapegrad.torch._dtype", "dtype"), ("tapegrad.torch._dtype", "from_np"), ("tapegrad.torch._dtype", "Size"), ("tapegrad.torch._dtype", "device"),
}
_USER_SAFE: list[Any] = []


def _qualname(obj: Any) -> tuple[str, str]:
    return getattr(obj, "__module__", ""), getattr(obj, "__qualname__", getattr(obj, "__name__", ""))


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow these classes and functions in a ``weights_only`` load."""
    _USER_SAFE.extend(safe_globals)


def clear_safe_globals() -> None:
    _USER_SAFE.clear()


def get_safe_globals() -> list[Any]:
    return list(_USER_SAFE)


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``with safe_globals([cls]): torch.load(f)``: allow ``cls`` for the block."""
    n = len(_USER_SAFE)
    _USER_SAFE.extend(safe_globals)
    try:
        yield
    finally:
        del _USER_SAFE[n:]


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
        if (module, name) in _SAFE:
            return super().find_class(module, name)
        for obj in _USER_SAFE:
            if _qualname(obj) == (module, name):
                return obj
        dotted = f"{module}.{name}"
        raise pickle.UnpicklingError(
            "Weights only load failed. This file can still be loaded, to do so you have two options, "
            "do those steps only if you trust the source of the checkpoint. \n\t(1) In PyTorch 2.6, we "
            "changed the default value of the `weights_only` argument in `torch.load` from `False` to "
            "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it "
            "can result in arbitrary code execution. Do it only if you got the file from a trusted source.\n\t"
            "(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
            "following error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL "
            f"{dotted} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{dotted}])` or the "
            f"`torch.serialization.safe_globals([{dotted}])` context manager to allowlist this global if "
            "you trust this class/function.")


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Pickle ``obj`` (tensors, modules, state dicts, ...) to the path or binary file ``f``."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle_module.dump(obj, fh, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, pickle_module: Any = None,
         *, weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Unpickle what ``save`` wrote to the path or binary file ``f``.

    ``weights_only`` (default ``True``, as in PyTorch 2.6+) rebuilds only
    tensors, containers and primitive values. ``map_location`` is accepted;
    tensors come back on the device they were saved from.
    """
    if weights_only is None:
        weights_only = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0") not in ("1", "true", "True")
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load(fh, weights_only, pickle_module, pickle_load_args)
    return _load(f, weights_only, pickle_module, pickle_load_args)


def _load(fh: IO[bytes], weights_only: bool, pickle_module: Any, kwargs: dict[str, Any]) -> Any:
    if weights_only:
        return _WeightsUnpickler(fh, **kwargs).load()
    if pickle_module is not None:
        return pickle_module.load(fh, **kwargs)
    return pickle.load(fh, **kwargs)


