"""``DistributedSampler``: each rank's share of the dataset's indices, as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapegrad.torch.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that rank ``rank`` of ``num_replicas`` reads, as
    ``torch.utils.data.distributed.DistributedSampler``.

    Every epoch the indices are (shuffled with ``seed + epoch``, the same on
    every rank, then) padded by repeating them from the start to a multiple of
    ``num_replicas`` (or, with ``drop_last=True``, cut to one), and rank ``r``
    takes every ``num_replicas``-th index from ``r``. So together the ranks read
    every index once per epoch (the padded ones twice), each ``len(sampler)`` of them.
    Call ``set_epoch`` before each epoch for a new order.

    The shuffle draws from ``numpy.random.default_rng(seed + epoch)``: the same
    on every rank, but not PyTorch's order.

    Args:
        dataset: anything with ``len()``.
        num_replicas, rank: default to the process group's world size and rank.
        shuffle, seed, drop_last: as PyTorch's.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from tapegrad.torch import distributed as dist

            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size
        mine = indices[self.rank : self.total_size : self.num_replicas]
        assert len(mine) == self.num_samples
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle=True``, each epoch has its own order."""
        self.epoch = epoch
