"""``Dataset``, ``IterableDataset``, ``TensorDataset``, ``Subset``,
``ConcatDataset`` and ``random_split``, as ``torch.utils.data``'s."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tapegrad.torch._creation import randperm
from tapegrad.torch._tensor import Tensor

__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and ``__len__``
    for the default samplers). ``a + b`` concatenates two datasets."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> Any:
        raise NotImplementedError("tapegrad.torch.utils.data does not provide ChainDataset")


class TensorDataset(Dataset):
    """Samples are ``tuple(t[i] for t in tensors)``; the tensors share their first dimension.

    Examples:
        >>> ds = torch.utils.data.TensorDataset(torch.randn(100, 3), torch.randn(100))
        >>> x0, y0 = ds[0]
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].size(0))


class Subset(Dataset):
    """The items of ``dataset`` at ``indices`` (in that order)."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])  # type: ignore[no-any-return]
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after the other."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[d][idx - (self.cumulative_sizes[d - 1] if d else 0)]


def random_split(dataset: Any, lengths: Sequence[int | float], generator: Any = None) -> list[Subset]:
    """Split ``dataset`` at random into subsets of the given lengths, or of the
    given fractions of its length (the remainder dealt one by one from the first).
    The permutation is drawn from ``generator`` (a ``torch.Generator``) when
    given, else from the default generator: the same seed gives the same split,
    though not the split PyTorch gives. Returns the list of ``Subset``.

    Examples:
        >>> train, val = torch.utils.data.random_split(ds, [0.8, 0.2])
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, length in enumerate(sizes):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    else:
        sizes = [int(x) for x in lengths]
    if sum(sizes) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(sizes), generator=generator).tolist()
    return [Subset(dataset, indices[end - size:end]) for end, size in zip(itertools.accumulate(sizes), sizes)]
