"""Run under ``mpiexec -n N`` by tests/test_distributed.py: the last rank fails;
the others must not wait forever.

``before``: it raises before the collective: the others raise
DistributedTimeoutError from the fingerprint exchange after
TAPEGRAD_DIST_TIMEOUT seconds.
``between``: it passes the fingerprint exchange, then exits without sending
the data: the watchdog of the others prints the error and aborts the job.
"""

import sys
import time

import numpy as np

import tapegrad.distributed as dist

r, n = dist.rank(), dist.world_size()
tree = {"w": np.ones(3)}
dist.barrier()  # all ranks are up
if r == n - 1:
    if sys.argv[1] == "between":
        leaves, treedef = dist.tree_flatten(tree)
        dist._agree("all_reduce(op='mean')", treedef, dist._Packed(leaves, "").metas())
        time.sleep(30)  # alive, but never sends its data
    raise ValueError(f"rank {r} fails on purpose")
dist.all_reduce(tree)
print(f"UNREACHABLE {r}", flush=True)
