"""Run under ``mpiexec -n N`` by tests/test_distributed.py: the last rank fails;
the others must not wait forever.

``raises``: it raises before the collective: its traceback is printed and the
job is aborted at once (the others, waiting in the collective, are ended).
``absent``: it stays alive but never joins the collective: the others raise
DistributedTimeoutError from the fingerprint exchange after the timeout
(argv[2] seconds), which aborts the job.
``between``: it passes the fingerprint exchange, then never sends the data:
the watchdog of the others prints the error and aborts the job.

The timeout is set after the first barrier, so slow starts cannot trip it.
"""

import sys
import time

import numpy as np

import tapegrad.distributed as dist

r, n = dist.rank(), dist.world_size()
tree = {"w": np.ones(3)}
dist.barrier()  # all ranks are up
if len(sys.argv) > 2:
    dist.set_timeout(float(sys.argv[2]))
if r == n - 1:
    if sys.argv[1] == "between":
        leaves, treedef = dist.tree_flatten(tree)
        dist._agree("all_reduce(op='mean')", treedef, dist._Packed(leaves, "").metas())
    if sys.argv[1] in ("between", "absent"):
        time.sleep(3600)  # alive, but never sends its data; the abort ends it
    raise ValueError(f"rank {r} fails on purpose")
dist.all_reduce(tree)
print(f"UNREACHABLE {r}", flush=True)
