"""A CPU model of CuPy's array rules, for testing tapegrad's ``device="cuda"`` path without a GPU.

Not shipped with tapegrad. ``installed()`` makes ``import cupy`` / ``import cupyx``
find the model inside a ``with`` block (the ``cp`` fixture in ``tests/conftest.py``
does this, or hands out real CuPy when a CUDA device is present). The rules and
where in CuPy's source each comes from are in ``core.py`` (the array) and
``namespaces.py`` (which names exist, their signatures). ``TRANSFERS`` counts
device-to-host copies.

>>> from cupy_model import installed, TRANSFERS
>>> with installed() as cp:
...     x = cp.asarray([1.0, 2.0])
...     s = x.sum()          # a 0-d device array
...     TRANSFERS.reset(); v = float(s); TRANSFERS.d2h
1
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType

from cupy_model.core import TRANSFERS, DeviceSynchronized, ndarray

__all__ = ["TRANSFERS", "DeviceSynchronized", "installed", "is_model", "ndarray"]

_MODULES: dict[str, ModuleType] | None = None


def modules() -> dict[str, ModuleType]:
    """The model's modules by import name (built once)."""
    global _MODULES
    if _MODULES is None:
        from cupy_model.namespaces import build
        _MODULES = build()
    return _MODULES


def is_model(cp: ModuleType) -> bool:
    """Whether ``cp`` is the model (not real CuPy)."""
    return getattr(cp, "ndarray", None) is ndarray


@contextlib.contextmanager
def installed() -> Iterator[ModuleType]:
    """Within: ``cupy``, ``cupyx`` and their submodules in ``sys.modules`` are the model's;
    what was there before comes back after. Yields the ``cupy`` module."""
    mods = modules()
    saved = {k: sys.modules[k] for k in list(sys.modules) if k.split(".")[0] in ("cupy", "cupyx")}
    for k in saved:
        del sys.modules[k]
    sys.modules.update(mods)
    TRANSFERS.reset()
    try:
        yield mods["cupy"]
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] in ("cupy", "cupyx")]:
            del sys.modules[k]
        sys.modules.update(saved)
