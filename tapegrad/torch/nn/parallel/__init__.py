"""``torch.nn.parallel``: ``DistributedDataParallel`` (on MPI)."""

from tapegrad.torch.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
