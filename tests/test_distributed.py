"""Data-parallel training over MPI (SPEC section 9): ``tapegrad.distributed``
and the facade's ``torch.distributed``, ``DistributedDataParallel`` and
``DistributedSampler``.

Two kinds of test:

- in this process, without ``mpiexec``: world size 1, every call the
  identity, mpi4py never imported, the argument checks, ``DistributedSampler``
  with explicit ranks (and against PyTorch's when it is installed);
- under ``mpiexec -n 2`` / ``-n 3`` (the scripts in ``tests/mpi_scripts/``,
  run in subprocesses with a timeout): they assert what they check on every
  rank and print ``OK <rank>``. These skip, saying why, when the
  ``distributed`` extra (mpi4py and an MPI with ``mpiexec``) is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tapegrad.distributed as tgd

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "mpi_scripts"
LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                 "PMIX_RANK", "PMIX_SIZE", "MPI_LOCALNRANKS")


def find_mpiexec() -> str | None:
    """``mpiexec`` next to this Python (the ``mpich`` wheel puts it in the venv), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def _skip_reason() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install -e '.[distributed]')"
    if find_mpiexec() is None:
        return "no mpiexec next to the Python executable or on PATH (pip install -e '.[distributed]')"
    return None


needs_mpi = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without launcher variables, with the checkout first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env.update(extra)
    return env


def mpirun(n: int, script: str | Path, *args: str, timeout: float = 90,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n N python script args`` in a subprocess (killed after ``timeout``)."""
    mpiexec = find_mpiexec()
    assert mpiexec is not None
    cmd = [mpiexec, "-n", str(n), sys.executable, str(script), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout)


def assert_all_ok(proc: subprocess.CompletedProcess[str], n: int) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{out}"
    # the ranks' lines may interleave: find the marks anywhere
    oks = sorted(int(m) for m in re.findall(r"OK (\d+)", proc.stdout))
    assert oks == list(range(n)), out


# --- one process, no mpiexec ---------------------------------------------------------------------


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> Any:
    """tapegrad.distributed with a fresh state, as in a process started without mpiexec."""
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tgd, "_S", tgd._State())
    return tgd


def test_alone_every_call_is_the_identity(alone: Any) -> None:
    assert alone.rank() == 0 and alone.world_size() == 1
    tree = {"w": np.ones((2, 3), np.float32), "b": [np.zeros(3), 2.0], "none": None}
    assert alone.all_reduce(tree) is tree
    assert alone.all_reduce(tree, op="sum") is tree
    assert alone.broadcast(tree) is tree
    x = np.arange(10)
    assert alone.shard(x) is x
    assert alone.shard_bounds(10) == (0, 10)
    alone.barrier()


def test_alone_argument_errors(alone: Any) -> None:
    with pytest.raises(ValueError, match="op must be 'mean' or 'sum', got 'max'"):
        alone.all_reduce(np.ones(2), op="max")
    with pytest.raises(ValueError, match=r"root must be a rank in \[0, 1\), got 1"):
        alone.broadcast(np.ones(2), root=1)
    with pytest.raises(ValueError, match="positive number of seconds"):
        alone.set_timeout(0)


def test_shard_bounds_split_as_array_split() -> None:
    for n in (0, 1, 5, 12, 13):
        for size in (1, 2, 3, 4):
            parts = np.array_split(np.arange(n), size)
            for r in range(size):
                a, b = tgd.shard_bounds(n, size, r)
                assert np.array_equal(np.arange(n)[a:b], parts[r]), (n, size, r)


def test_timeout_from_the_environment(alone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAPEGRAD_DIST_TIMEOUT", raising=False)
    assert alone.timeout() == 300.0
    monkeypatch.setenv("TAPEGRAD_DIST_TIMEOUT", "2.5")
    assert alone.timeout() == 2.5
    alone.set_timeout(7)
    assert alone.timeout() == 7.0
    alone.set_timeout(None)
    monkeypatch.setenv("TAPEGRAD_DIST_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="TAPEGRAD_DIST_TIMEOUT must be a number of seconds, got 'soon'"):
        alone.timeout()


def test_launched_without_mpi4py_is_an_error(alone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # started by mpiexec with 2 processes but mpi4py missing: not a silent world of 1
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # makes "from mpi4py import MPI" fail
    with pytest.raises(ImportError, match=r"MPI launcher with 2 processes, but mpi4py cannot be imported"):
        alone.world_size()


class _FakeMPI:
    """What the abort hook reads of mpi4py's MPI module; records the Abort."""

    def __init__(self) -> None:
        self.aborted: list[int] = []
        outer = self

        class Comm:
            def Abort(self, code: int) -> None:
                outer.aborted.append(code)

        self.COMM_WORLD = Comm()

    def Is_initialized(self) -> bool:
        return True

    def Is_finalized(self) -> bool:
        return False


def test_uncaught_exception_prints_then_aborts_the_job(alone: Any, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, exc, tb: seen.append(f"{kind.__name__}: {exc}"))
    monkeypatch.delenv("TAPEGRAD_DIST_ABORT_ON_ERROR", raising=False)
    fake = _FakeMPI()
    monkeypatch.setattr(alone._S, "MPI", fake)
    monkeypatch.setattr(alone._S, "rank", 1)
    monkeypatch.setattr(alone._S, "size", 3)
    alone._abort_on_uncaught_exceptions()
    alone._abort_on_uncaught_exceptions()  # installed once, not stacked
    try:
        raise ValueError("boom")
    except ValueError as e:
        sys.excepthook(ValueError, e, e.__traceback__)
    assert seen == ["ValueError: boom"], "the hook it replaced prints the traceback"
    assert fake.aborted == [1]
    assert "rank 1 of 3 raised ValueError; aborting the MPI job (MPI.COMM_WORLD.Abort(1))" in capsys.readouterr().err


def test_abort_on_uncaught_exceptions_can_be_turned_off(alone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = sys.excepthook
    monkeypatch.setenv("TAPEGRAD_DIST_ABORT_ON_ERROR", "0")
    alone._abort_on_uncaught_exceptions()
    assert sys.excepthook is hook


def test_import_tapegrad_does_not_import_mpi4py() -> None:
    code = ("import sys, numpy as np, tapegrad as tg, tapegrad.torch as torch\n"
            "import tapegrad.distributed as d\n"
            "assert tg.distributed is d and torch.distributed.is_available()\n"
            "assert d.world_size() == 1 and d.all_reduce({'a': np.ones(2)})['a'].tolist() == [1, 1]\n"
            "assert 'mpi4py' not in sys.modules, 'mpi4py was imported'\n"
            "print('fine')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "fine" in out.stdout, out.stdout + out.stderr


def test_collectives_reject_traced_values_and_tensors(alone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tapegrad as tg
    import tapegrad.torch as torch

    # the checks run only with more than one rank: pretend there are two
    monkeypatch.setattr(alone._S, "ready", True)
    monkeypatch.setattr(alone._S, "size", 2)

    def f(x: Any) -> Any:
        alone.all_reduce({"x": x})
        return x.sum()

    with pytest.raises(TypeError, match=r"all_reduce\(op='mean'\): leaf 0 is a traced value"):
        tg.grad(f)(np.ones(2))
    with pytest.raises(TypeError, match="leaf 0 is a tapegrad.torch tensor; use tapegrad.torch.distributed"):
        alone.broadcast([torch.ones(2)])
    with pytest.raises(TypeError, match="leaf 0 has dtype int64; the mean takes floating"):
        alone.all_reduce([np.arange(3)])


# --- the facade, one process ---------------------------------------------------------------------


@pytest.fixture
def group(alone: Any) -> Any:
    import tapegrad.torch.distributed as dist

    assert not dist.is_initialized()
    dist.init_process_group(backend="mpi")
    try:
        yield dist
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def test_facade_needs_init_process_group(alone: Any) -> None:
    import tapegrad.torch as torch
    import tapegrad.torch.distributed as dist
    from tapegrad.torch.utils.data.distributed import DistributedSampler

    msg = "Default process group has not been initialized, please make sure to call init_process_group."
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, lambda: dist.all_reduce(torch.ones(1)),
                 lambda: DistributedSampler(range(4)),
                 lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))):
        with pytest.raises(ValueError, match=msg):
            call()
    with pytest.raises(ValueError, match="runs on MPI only: got backend='nccl'"):
        dist.init_process_group(backend="nccl")
    assert not dist.is_initialized()


def test_facade_alone(group: Any) -> None:
    import tapegrad.torch as torch

    dist = group
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "mpi"
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group(backend="mpi")
    t = torch.tensor([1.0, 2.0])
    assert dist.all_reduce(t) is None and t.tolist() == [1.0, 2.0]
    assert dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True).wait()
    with pytest.raises(ValueError, match="op must be ReduceOp.SUM or ReduceOp.AVG"):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    dist.broadcast(t, src=0)
    assert t.tolist() == [1.0, 2.0]
    dist.barrier()
    with pytest.raises(ValueError, match="only the default group"):
        dist.get_rank(group=object())
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_ddp_alone_is_the_module(group: Any) -> None:
    import tapegrad.torch as torch
    from tapegrad.torch import nn

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    ddp = nn.parallel.DistributedDataParallel(net)
    assert ddp.module is net
    assert list(ddp.state_dict()) == ["module." + k for k in net.state_dict()]
    x = torch.randn(5, 3)
    assert torch.equal(ddp(x), net(x))
    ddp(x).sum().backward()
    grads = [p.grad.clone() for p in net.parameters()]
    for p in net.parameters():
        p.grad = None
    net(x).sum().backward()
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
    with ddp.no_sync():
        ddp(x).sum().backward()
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0)


def test_queue_callback_runs_after_backward_wrote_the_grads() -> None:
    import tapegrad.torch as torch
    from tapegrad.torch.autograd import _engine

    x = torch.ones(2, requires_grad=True)
    seen: list[Any] = []
    def hook(g: Any) -> None:  # as DistributedDataParallel's: queue only inside backward()
        if _engine._callbacks is not None:
            _engine.queue_callback(lambda: seen.append(x.grad.clone()))

    x.register_hook(hook)
    (x * 3).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="no backward"):
        _engine.queue_callback(lambda: None)
    torch.autograd.grad((x * 2).sum(), x)  # the hook runs, outside backward(): nothing queued
    assert len(seen) == 1
    (x * 3).sum().backward()
    assert len(seen) == 2 and seen[1].tolist() == [6.0, 6.0]


# --- DistributedSampler without processes ----------------------------------------------------------


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n, replicas", [(10, 3), (9, 3), (2, 3), (1, 4), (13, 2)])
def test_sampler_covers_the_dataset_once_per_epoch(n: int, replicas: int, drop_last: bool) -> None:
    from tapegrad.torch.utils.data.distributed import DistributedSampler

    for epoch in range(3):
        parts = []
        for r in range(replicas):
            s = DistributedSampler(range(n), num_replicas=replicas, rank=r, seed=1, drop_last=drop_last)
            s.set_epoch(epoch)
            parts.append(list(s))
            assert len(parts[-1]) == len(s)
        assert len({len(p) for p in parts}) == 1, "ranks read different numbers of indices"
        counts = np.bincount(np.concatenate(parts).astype(np.int64), minlength=n) if n else np.zeros(0)
        if drop_last:
            assert counts.max(initial=0) <= 1 and counts.sum() == (n // replicas) * replicas
        else:
            assert counts.min() >= 1 and counts.sum() == -(-n // replicas) * replicas


def test_sampler_errors() -> None:
    from tapegrad.torch.utils.data.distributed import DistributedSampler

    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), num_replicas=3, rank=3)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n, replicas", [(10, 3), (2, 3), (13, 2), (8, 4)])
def test_sampler_matches_pytorch_unshuffled(n: int, replicas: int, drop_last: bool) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as Theirs

    from tapegrad.torch.utils.data.distributed import DistributedSampler as Ours

    for r in range(replicas):
        kw = dict(num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
        theirs, ours = Theirs(range(n), **kw), Ours(range(n), **kw)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    del torch


# --- under mpiexec -----------------------------------------------------------------------------------


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_functional_face_under_mpiexec(n: int) -> None:
    # one step equals the full-batch step to 1e-12 (float64), even and uneven shards;
    # float32 and float64 in one tree (one message per dtype); broadcast; mismatch errors
    assert_all_ok(mpirun(n, SCRIPTS / "functional_checks.py", str(n)), n)


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_facade_under_mpiexec(n: int) -> None:
    # torch.distributed collectives, DDP (broadcast at wrap, one step, no_sync, unused
    # parameters, buckets), DistributedSampler's coverage per epoch
    assert_all_ok(mpirun(n, SCRIPTS / "facade_checks.py", str(n)), n)


@needs_mpi
def test_a_rank_that_raises_aborts_the_job_with_its_traceback() -> None:
    # the last of 3 ranks raises while the others wait in all_reduce: its traceback is
    # printed and the job aborted; the others are ended, not left to time out (the
    # timeout is the default 300 s; the subprocess limit only guards against a hang)
    proc = mpirun(3, SCRIPTS / "rank_fails.py", "raises", timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "Traceback (most recent call last)" in out and "ValueError: rank 2 fails on purpose" in out, out
    assert "tapegrad.distributed: rank 2 of 3 raised ValueError; aborting the MPI job" in out, out
    assert "UNREACHABLE" not in out and "DistributedTimeoutError" not in out, out  # ended by the abort


@needs_mpi
def test_a_rank_that_raises_without_the_abort_leaves_the_others_to_time_out() -> None:
    # TAPEGRAD_DIST_ABORT_ON_ERROR=0: the rank that raises just exits; the other raises
    # DistributedTimeoutError from the fingerprint exchange after the timeout (2 s)
    proc = mpirun(2, SCRIPTS / "rank_fails.py", "raises", "2", timeout=900,
                  env=clean_env(TAPEGRAD_DIST_ABORT_ON_ERROR="0"))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "UNREACHABLE" not in out, out
    assert "ValueError: rank 1 fails on purpose" in out and "aborting the MPI job" not in out, out
    assert ("DistributedTimeoutError: tapegrad.distributed.all_reduce(op='mean'): rank 0 of 2 waited 2 s "
            "for the other ranks to join this collective. Another rank has probably failed") in out, out


@needs_mpi
def test_a_rank_that_never_joins_times_out_the_others_and_aborts() -> None:
    # alive but absent: the other raises DistributedTimeoutError after the timeout (2 s),
    # which (uncaught) aborts the job, ending the absent rank too
    proc = mpirun(2, SCRIPTS / "rank_fails.py", "absent", "2", timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "UNREACHABLE" not in out, out
    assert "DistributedTimeoutError: tapegrad.distributed.all_reduce(op='mean'): rank 0 of 2 waited 2 s" in out, out
    assert "rank 0 of 2 raised DistributedTimeoutError; aborting the MPI job" in out, out


@needs_mpi
def test_a_rank_lost_after_the_fingerprints_aborts_the_job() -> None:
    # it passes the fingerprint exchange and never sends data: the watchdog aborts the job
    proc = mpirun(2, SCRIPTS / "rank_fails.py", "between", "2", timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "UNREACHABLE" not in out, out
    assert "DistributedTimeoutError: tapegrad.distributed.all_reduce(op='mean'): rank 0 of 2 waited 2 s" in out, out
    assert "Aborting the MPI job" in out, out


@needs_mpi
def test_train_digits_two_processes_match_one() -> None:
    pytest.importorskip("sklearn")
    example = ROOT / "examples" / "train_digits.py"
    for style in ("functional", "torch", "functional --jit"):
        args = ("--style", *style.split(), "--epochs", "1", "--batch", "256", "--quiet")
        one = subprocess.run([sys.executable, str(example), *args], cwd=ROOT, env=clean_env(),
                             capture_output=True, text=True, timeout=120)
        assert one.returncode == 0, one.stdout + one.stderr
        two = mpirun(2, example, *args, timeout=120)
        assert two.returncode == 0, two.stdout + two.stderr
        acc = [line for line in one.stdout.splitlines() if line.startswith("held-out accuracy")]
        acc2 = [line for line in two.stdout.splitlines() if line.startswith("held-out accuracy")]
        assert len(acc) == 1 and len(acc2) == 1, (one.stdout, two.stdout)  # printed by rank 0 only
        assert "2 processes" in two.stdout and acc2[0].replace(", 2 processes", "") == acc[0], (acc, acc2)
