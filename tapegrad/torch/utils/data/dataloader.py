"""``torch.utils.data.DataLoader``: batches of a dataset, in order or shuffled."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tapegrad.torch.utils.data.collate import default_collate, default_convert
from tapegrad.torch.utils.data.dataset import IterableDataset
from tapegrad.torch.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    Each batch is ``collate_fn([dataset[i] for i in indices])`` (``default_collate``
    stacks tensors, NumPy arrays and numbers, field by field through tuples,
    lists and dicts). ``shuffle=True`` draws a new permutation every pass,
    with ``generator`` when given, else with the generator ``torch.manual_seed``
    seeds (so a seed makes it repeat; the order is not PyTorch's). The batches
    are made in the calling process whatever ``num_workers`` says.

    Args:
        dataset: a map-style dataset (``__getitem__`` and ``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch (default 1); None yields the samples one by one, unbatched.
        shuffle: a new random order every pass (default False).
        sampler, batch_sampler: the order of the indices, or of the batches' indices.
        collate_fn: makes a batch of a list of samples.
        drop_last: leave out the last, short batch (default False).
        generator: the ``torch.Generator`` of the shuffle (the same seed, the same order).

    Examples:
        >>> loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
        >>> for xb, yb in loader: ...
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[Any], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        elif shuffle not in (False, None) and sampler is not None:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._iter_stream()
            return
        fetch = self.dataset.__getitems__ if callable(getattr(self.dataset, "__getitems__", None)) else None
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                samples = fetch(indices) if fetch is not None else [self.dataset[i] for i in indices]
                yield self.collate_fn(samples)
        else:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])

    def _iter_stream(self) -> Iterator[Any]:
        it: Iterable[Any] = iter(self.dataset)
        if self.batch_size is None:
            for sample in it:
                yield self.collate_fn(sample)
            return
        batch: list[Any] = []
        for sample in it:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
