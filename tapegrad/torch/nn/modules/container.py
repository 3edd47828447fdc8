"""Containers of modules: ``Sequential`` and ``ModuleList``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from typing_extensions import Self

from tapegrad.torch.nn.modules.module import Module

__all__ = ["ModuleList", "Sequential"]


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: submodules named ``"0"``, ``"1"`` ..."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def append(self, module: Module) -> Self:
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence):
    """Modules applied one after another; ``Sequential(a, b)(x) == b(a(x))``.

    Built from modules (named ``"0"``, ``"1"`` ...) or from one ``OrderedDict``
    of named modules. Indexing with an int gives a module, with a slice a
    ``Sequential``.

    Example:
        >>> nn.Sequential(nn.Linear(64, 512), nn.Tanh())
        Sequential(
          (0): Linear(in_features=64, out_features=512, bias=True)
          (1): Tanh()
        )
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:  # noqa: A002
        for m in self._modules.values():
            input = m(input)  # type: ignore[misc]  # noqa: A001  # _modules holds no None here
        return input

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules.values())[idx % n]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[idx]
        setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[idx]]:
            delattr(self, key)
        # keep the names 0, 1, ... contiguous, as PyTorch does
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m


class ModuleList(_ModuleSequence):
    """A list of modules, registered as submodules ``"0"``, ``"1"`` ..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return list(self._modules.values())[idx]
