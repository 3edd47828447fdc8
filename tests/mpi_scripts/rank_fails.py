"""Run under ``mpiexec -n N`` by tests/test_distributed.py: the last rank raises
before the collective; the others must raise DistributedTimeoutError after
TAPEGRAD_DIST_TIMEOUT seconds rather than wait forever."""

import numpy as np

import tapegrad.distributed as dist

r, n = dist.rank(), dist.world_size()
dist.barrier()  # all ranks are up
if r == n - 1:
    raise ValueError(f"rank {r} fails on purpose")
dist.all_reduce({"w": np.ones(3)})
print(f"UNREACHABLE {r}", flush=True)
