"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""

from __future__ import annotations

import operator
from collections import OrderedDict, abc
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

from typing_extensions import Self

from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn.modules.module import Module, _addindent
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


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

    Examples:
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

    def insert(self, index: int, module: Module) -> Self:
        """Insert ``module`` before position ``index``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable[Module]) -> Self:
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: int | slice) -> Any:
        v = self[key]
        del self[key]
        return v

    def __add__(self, other: Any) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def __iadd__(self, other: Any) -> Self:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for layer in other:
            self.append(layer)
        return self


def _abs_index(n: int, idx: Any) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


class ModuleList(Module):
    """A list of modules, registered as submodules ``"0"``, ``"1"`` ...

    Examples:
        >>> nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
        ModuleList(
          (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
          (3): ReLU()
        )
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])  # type: ignore[arg-type]
        return self._modules[str(_abs_index(len(self), idx))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(len(self), idx)), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(len(self), idx)))
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def __iadd__(self, modules: Iterable[Module]) -> Self:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, m in enumerate(chain(self, other)):
            combined.add_module(str(i), m)
        return combined

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> Self:
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Any:
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> Self:
        if not isinstance(modules, abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self) -> str:
        """Runs of equal submodule reprs print once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list[Any]] = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, r in blocks:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append(_addindent(head + r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of named submodules.

    Examples:
        >>> nn.ModuleDict({"act": nn.ReLU(), "fc": nn.Linear(1, 2)})
        ModuleDict(
          (act): ReLU()
          (fc): Linear(in_features=1, out_features=2, bias=True)
        )
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[Any] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self) -> abc.KeysView[str]:
        return self._modules.keys()

    def items(self) -> abc.ItemsView[str, Module]:
        return self._modules.items()  # type: ignore[return-value]

    def values(self) -> abc.ValuesView[Module]:
        return self._modules.values()  # type: ignore[return-value]

    def update(self, modules: Mapping[str, Module] | Iterable[Any]) -> None:
        if not isinstance(modules, abc.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, "
                            "but got " + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, abc.Mapping)):
            for key, m in modules.items():
                self[key] = m
            return
        for j, pair in enumerate(modules):
            if not hasattr(pair, "__iter__"):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is"
                                + type(pair).__name__)
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


class ParameterList(Module):
    """A list of parameters (tensors given to it become ``Parameter``\\ s),
    registered as ``"0"``, ``"1"`` ...

    Examples:
        >>> nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(2, 3)])
        ParameterList(
            (0): Parameter containing: [torch.float32 of size 2]
            (1): Parameter containing: [torch.float32 of size 2x3]
        )
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self += values

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(len(self), idx)))

    def __setitem__(self, idx: int, param: Any) -> None:
        idx = _abs_index(len(self), idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> Self:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> Self:
        n = len(self)
        object.__setattr__(self, "_size", n + 1)
        self[n] = value
        return self

    def extend(self, values: Iterable[Any]) -> Self:
        if not isinstance(values, abc.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return _entries_repr(enumerate(self), lambda p: p.dtype)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of named parameters (tensors given to it become
    ``Parameter``\\ s; other values are kept as plain attributes). A plain
    ``dict`` is added in sorted key order, as PyTorch does.

    Examples:
        >>> nn.ParameterDict({"w": torch.ones(2, 2), "b": torch.zeros(2)})
        ParameterDict(
            (b): Parameter containing: [torch.FloatTensor of size 2]
            (w): Parameter containing: [torch.FloatTensor of size 2x2]
        )
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string "
                            f"(type is '{type(key).__name__}'). Open an issue on github if you need "
                            "non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        k = next(reversed(list(self._keys)))
        return k, self.pop(k)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> abc.KeysView[str]:
        return self._keys.keys()  # type: ignore[no-any-return]

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        if not isinstance(parameters, abc.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, "
                            "but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, p in parameters.items():
                self[key] = p
        elif isinstance(parameters, abc.Mapping):
            for key, p in sorted(parameters.items()):
                self[key] = p
        else:
            for j, pair in enumerate(parameters):
                if not hasattr(pair, "__iter__"):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                    + type(pair).__name__)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(pair)}; "
                                     "2 is required")
                self[pair[0]] = pair[1]

    def extra_repr(self) -> str:
        return _entries_repr(self.items(), lambda p: p.type())  # (PyTorch names the type here)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: ParameterDict) -> Self:
        self.update(other)
        return self


def _entries_repr(items: Any, type_of: Callable[[Any], Any]) -> str:
    """The lines ParameterList and ParameterDict print: one per entry (its key,
    what it holds, the type ``type_of`` gives, its size)."""
    lines = []
    for k, p in items:
        if isinstance(p, Tensor):
            size = "x".join(str(s) for s in p.size())
            dev = f" ({p.device})" if p.device.type == "cuda" else ""
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            lines.append(f"  ({k}): {kind} containing: [{type_of(p)} of size {size}{dev}]")
        else:
            lines.append(f"  ({k}): Object of type: {type(p).__name__}")
    return "\n".join(lines)
