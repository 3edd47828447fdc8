"""Data parallel over MPI: what ``tapegrad.distributed`` costs and what it buys.

Run from the repository root (needs the ``distributed`` extra and scikit-learn)::

    PYTHONPATH=. python benchmarks/distributed_bench.py [--quick]

It launches ``mpiexec`` itself (the one next to this Python first) and prints,
from one run:

(1) ``all_reduce`` of a pytree of 6 float64 leaves, 1,000,000 elements in all
    (8 MB), against one raw ``mpi4py`` ``Allreduce`` of a 1M-float64 buffer
    (the same bytes, preallocated, blocking), on 2 processes; medians over
    interleaved repetitions after warm-up, each timed from a barrier. The
    ratio's target: at most 1.3x.
(2) One training epoch of ``examples/train_digits.py`` (MLP 64-256-10, Adam) at
    global batch 1024, in both styles (and the functional style under
    ``tg.jit``), with 1 process (no ``mpiexec``) and with 2 processes (each
    computes on half of every batch); throughput in samples per second, the
    median epoch over several. The ratio's target: at least 1.6x on a
    two-core machine. An epoch is two steps (1,437 samples) of about 1 ms: the
    per-step costs that do not shrink with the shard (recording the tape,
    about 0.13 ms a gradient eagerly and 0.02 ms compiled; Adam; the
    ``all_reduce``) bound the speed-up (Amdahl).

Every process runs with one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1). The
figures depend on the machine being otherwise idle: two processes need two
free cores.
"""

from __future__ import annotations

# ruff: noqa: E402
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LEAF_SIZES = (400_000, 250_000, 150_000, 100_000, 60_000, 40_000)  # 1,000,000 float64


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        sys.exit("distributed_bench: no mpiexec (pip install -e '.[distributed]')")
    return found


# --- workers (run under mpiexec, or alone) ------------------------------------------------------------


def worker_allreduce(reps: int) -> dict[str, float]:
    """Median seconds of tg's all_reduce of the 6-leaf tree and of one raw Allreduce."""
    from mpi4py import MPI

    import tapegrad.distributed as dist

    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(dist.rank())
    tree = [rng.standard_normal(n) for n in LEAF_SIZES]
    send, recv = np.concatenate(tree), np.empty(sum(LEAF_SIZES))
    ours, raw, ours_mean = [], [], []
    for i in range(reps + 3):  # 3 warm-up rounds
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(send, recv, op=MPI.SUM)
        t1 = time.perf_counter()
        comm.Barrier()
        t2 = time.perf_counter()
        out = dist.all_reduce(tree, op="sum")  # each result lives until the next call's
        t3 = time.perf_counter()
        comm.Barrier()
        t4 = time.perf_counter()
        out_mean = dist.all_reduce(tree, op="mean")
        t5 = time.perf_counter()
        if i >= 3:
            raw.append(t1 - t0)
            ours.append(t3 - t2)
            ours_mean.append(t5 - t4)
    assert np.allclose(np.concatenate(out), recv) and np.allclose(np.concatenate(out_mean), recv / comm.size)
    # the slowest rank's time is the collective's time
    med = {k: comm.allreduce(statistics.median(v), op=MPI.MAX)
           for k, v in (("raw", raw), ("ours", ours), ("ours_mean", ours_mean))}
    return med


def worker_epoch(style: str, epochs: int) -> dict[str, float]:
    """Median seconds of one epoch of the example at global batch 1024."""
    sys.path.insert(0, str(ROOT / "examples"))
    import train_digits as ex

    import tapegrad.distributed as dist

    Xtr, ytr, _, _ = ex.load_data()
    jit = style.endswith("+jit")
    step, _, rng = ex.make_trainer(style.removesuffix("+jit"), Xtr, ytr, seed=0, jit=jit)
    times = []
    for _ in range(epochs + 2):  # 2 warm-up epochs
        dist.barrier()
        t0 = time.perf_counter()
        for idx in ex.batches(rng, len(Xtr), 1024):
            step(idx)
        dist.barrier()
        times.append(time.perf_counter() - t0)
    return {"epoch": statistics.median(times[2:]), "samples": float(len(Xtr))}


def run_worker(args: argparse.Namespace) -> None:
    import tapegrad.distributed as dist

    res = worker_allreduce(args.reps) if args.worker == "allreduce" else worker_epoch(args.worker, args.reps)
    if dist.rank() == 0:
        print("RESULT " + json.dumps(res), flush=True)


# --- the launcher ------------------------------------------------------------------------------------


def launch(n: int | None, worker: str, reps: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--worker", worker, "--reps", str(reps)]
    if n is not None:
        cmd = [mpiexec(), "-n", str(n), *cmd]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return
    reps_ar, epochs = (10, 5) if args.quick else (40, 15)
    print(f"tapegrad.distributed over MPI, one BLAS thread per process, {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f} at start")
    ar = launch(2, "allreduce", reps_ar)
    print(f"(1) 2 processes, 6 float64 leaves, 1M elements (8 MB), median of {reps_ar}:")
    print(f"    raw mpi4py Allreduce (one buffer)   {ar['raw'] * 1e3:8.2f} ms")
    print(f"    tapegrad all_reduce(op='sum')       {ar['ours'] * 1e3:8.2f} ms   "
          f"{ar['ours'] / ar['raw']:.2f}x raw (target <= 1.3x)")
    print(f"    tapegrad all_reduce(op='mean')      {ar['ours_mean'] * 1e3:8.2f} ms   "
          f"{ar['ours_mean'] / ar['raw']:.2f}x raw")
    print(f"(2) one epoch of examples/train_digits.py at global batch 1024, median of {epochs} epochs:")
    for style in ("functional", "torch", "functional+jit"):
        one = launch(None, style, epochs)
        two = launch(2, style, epochs)
        t1, t2 = one["samples"] / one["epoch"], two["samples"] / two["epoch"]
        print(f"    {style:>14}: 1 process {one['epoch'] * 1e3:7.1f} ms ({t1:8.0f} samples/s), "
              f"2 processes {two['epoch'] * 1e3:7.1f} ms ({t2:8.0f} samples/s): "
              f"{t2 / t1:.2f}x (target >= 1.6x)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
