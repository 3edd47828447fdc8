"""``torch.nn.parallel``: ``DistributedDataParallel`` (on MPI) and ``DataParallel`` (a pass-through)."""

from tapegrad.torch.nn.parallel.data_parallel import DataParallel
from tapegrad.torch.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
