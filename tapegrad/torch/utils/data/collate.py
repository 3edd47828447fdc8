"""``default_collate`` (a list of samples to a batch) and ``default_convert``
(NumPy arrays to tensors), as ``torch.utils.data``'s."""

from __future__ import annotations

import collections.abc
import re
from typing import Any

import numpy as np

from tapegrad.torch._creation import as_tensor, stack, tensor
from tapegrad.torch._dtype import float64
from tapegrad.torch._tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_NP_STR = re.compile(r"[SaUO]")

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _rebuild(elem: Any, items: Any) -> Any:
    """``type(elem)`` made from ``items`` (a dict, or the values of a sequence), or a plain one."""
    if isinstance(elem, collections.abc.MutableMapping):
        try:
            out = elem.copy() if hasattr(elem, "copy") else type(elem)()
            out.update(items)
            return out
        except TypeError:
            return dict(items)
    if isinstance(elem, collections.abc.Mapping):
        kind: Any = type(elem)
        try:
            return kind(items)
        except TypeError:
            return dict(items)
    try:
        return type(elem)(items)
    except TypeError:
        return list(items)


def default_collate(batch: list[Any]) -> Any:
    """Stack a list of samples into a batch: tensors with ``torch.stack``,
    NumPy arrays and scalars as tensors, Python floats as float64 and ints as
    int64 tensors, strings kept as a list; dicts, named tuples, tuples and
    lists are collated field by field (a tuple becomes a list, as in PyTorch).

    Examples:
        >>> default_collate([(torch.zeros(2), 0), (torch.ones(2), 1)])
        [tensor([[0., 0.],
                [1., 1.]]), tensor([0, 1])]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if type(elem).__module__ == "numpy" and type(elem).__name__ not in ("str_", "string_"):
        if isinstance(elem, np.ndarray) or isinstance(elem, np.memmap):
            if _NP_STR.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if elem.shape == ():
            return as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(list(s)) for s in transposed]
        return _rebuild(elem, [default_collate(list(s)) for s in transposed])
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """NumPy arrays (not of strings) and scalars to tensors, inside dicts,
    named tuples, tuples and lists; everything else as it is."""
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and type(data).__name__ not in ("str_", "string_"):
        if isinstance(data, np.ndarray) and _NP_STR.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
