"""Data-parallel collectives over MPI (``mpi4py``): the functional face.

Run the same script on every process with ``mpiexec -n 4 python train.py``;
each process computes gradients on its shard of the batch and
``all_reduce`` averages them, so every process takes the same step.

    import tapegrad as tg
    import tapegrad.distributed as dist

    x, y = dist.shard((X_batch, y_batch))      # this rank's slice of the batch
    grads = tg.grad(loss)(params, x, y)
    grads = dist.all_reduce(grads)             # the mean over the ranks

- One fused message per call: the leaves of a tree are packed into one
  contiguous buffer per dtype (float32 and float64 leaves: two buffers), so
  a model of a hundred parameters costs one reduction, not a hundred.
- Without ``mpiexec`` (no MPI launcher in the environment) every call is the
  identity with ``world_size() == 1``, and ``mpi4py`` is not imported.
  Importing ``tapegrad`` never imports ``mpi4py``.
- Before the data, the ranks exchange a fingerprint (a hash of the tree
  structure, the shapes, the dtypes and the call): ranks that disagree get a
  ``DistributedError`` naming what differs, instead of a hang or a
  silently wrong sum.
- A rank that raises ends the whole job at once. From the first call that
  starts MPI (``rank()``, ``world_size()``, a collective; the facade's
  ``init_process_group``) with more than one process, an exception that
  nobody catches prints its traceback, then calls
  ``MPI.COMM_WORLD.Abort(1)``, as ``python -m mpi4py script.py`` does: the
  other ranks end within seconds instead of waiting in their next
  collective (``TAPEGRAD_DIST_ABORT_ON_ERROR=0`` turns this off; an
  interactive session, ``python -i``, is never aborted).
- No rank waits forever. The fingerprints travel in a non-blocking
  ``Iallgather`` polled against a deadline: when a rank is missing (it hangs,
  or runs other code) the others raise ``DistributedTimeoutError`` after
  ``timeout`` seconds (``TAPEGRAD_DIST_TIMEOUT``, default 300). The data
  then moves in MPI's blocking ``Allreduce`` / ``Bcast`` (MPI's fastest
  algorithms; polling a non-blocking request from Python was several times
  slower on a busy machine) under a watchdog thread that prints the same
  error and calls ``MPI_Abort`` past the deadline.
- CuPy arrays are passed to MPI as device buffers when the MPI build is
  CUDA-aware (``TAPEGRAD_MPI_CUDA_AWARE=1`` forces it, ``=0`` forbids it;
  otherwise ``MPIX_Query_cuda_support`` where mpi4py offers it, or MPICH's
  ``MPIR_CVAR_ENABLE_GPU=1``), and copied through host memory otherwise.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from tapegrad.core.traced import Traced
from tapegrad.pytree import TreeDef, tree_flatten, tree_map, tree_unflatten

__all__ = [
    "DistributedError",
    "DistributedTimeoutError",
    "all_reduce",
    "barrier",
    "broadcast",
    "is_available",
    "rank",
    "set_timeout",
    "shard",
    "shard_bounds",
    "timeout",
    "world_size",
]


class DistributedError(RuntimeError):
    """The ranks disagree (tree structure, shapes, dtypes, or which call they make)."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within ``timeout`` seconds."""


# Environment variables that MPI launchers set in the processes they start:
# MPICH's and Intel MPI's hydra (PMI_*), Open MPI, PMIx-based launchers (srun,
# prterun). Their presence, not mpi4py's, says that we run under a launcher.
_LAUNCHER_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")
_LAUNCHER_ANY = (*_LAUNCHER_SIZE, "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_FD",
                 "MPI_LOCALNRANKS")

_DEFAULT_TIMEOUT = 300.0


class _State:
    """The communicator (``None`` when running alone) and its settings, set on first use."""

    ready = False
    MPI: Any = None
    comm: Any = None
    rank = 0
    size = 1
    timeout: float | None = None
    cuda_aware: bool | None = None


_S = _State()


def _launched_size() -> int | None:
    """The world size a launcher announced in the environment, if any."""
    for var in _LAUNCHER_SIZE:
        v = os.environ.get(var)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


def _init() -> _State:
    if _S.ready:
        return _S
    launched = any(v in os.environ for v in _LAUNCHER_ANY)
    if launched or "mpi4py.MPI" in sys.modules:
        try:
            from mpi4py import MPI
        except ImportError as e:
            size = _launched_size()
            if size is not None and size > 1:
                raise ImportError(
                    f"tapegrad.distributed: this process was started by an MPI launcher "
                    f"with {size} processes, but mpi4py cannot be imported ({e}); install "
                    "the extra: pip install 'tapegrad[distributed]'"
                ) from e
        else:
            _S.MPI = MPI
            _S.rank = MPI.COMM_WORLD.Get_rank()
            _S.size = MPI.COMM_WORLD.Get_size()
            if _S.size > 1:
                # our own communicator: no clash with the user's messages; duplicated
                # without blocking, so a rank that never gets here cannot hang the others
                _abort_on_uncaught_exceptions()
                comm, req = MPI.COMM_WORLD.Idup()
                _wait([req], "initialisation (duplicating MPI.COMM_WORLD)")
                _S.comm = comm
    _S.ready = True
    return _S


_ABORT_GRACE_S = 1.0  # seconds between printing an uncaught exception and aborting the job


def _abort_on_uncaught_exceptions() -> None:
    """Install a ``sys.excepthook`` that prints the traceback (through the hook
    it replaces), then calls ``MPI.COMM_WORLD.Abort(1)``: the launcher then
    ends every rank, as under ``python -m mpi4py``. A rank whose process just
    exited would leave the others blocked in their next collective (MPI
    cannot tell them); aborting at once also spares them the timeout.
    Not in an interactive session, nor with ``TAPEGRAD_DIST_ABORT_ON_ERROR=0``."""
    if os.environ.get("TAPEGRAD_DIST_ABORT_ON_ERROR", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    previous = sys.excepthook
    if getattr(previous, "_tapegrad_aborts", False):
        return

    def excepthook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        try:
            previous(kind, exc, tb)
        finally:
            MPI = _S.MPI
            if not (hasattr(sys, "ps1") or sys.flags.interactive) and MPI.Is_initialized() \
                    and not MPI.Is_finalized():
                sys.stderr.write(f"tapegrad.distributed: rank {_S.rank} of {_S.size} raised "
                                 f"{kind.__name__}; aborting the MPI job (MPI.COMM_WORLD.Abort(1)).\n")
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except Exception:  # a closed or replaced stream: abort all the same
                        pass
                # (MPI_Abort kills the job at once: what the launcher has not read of this
                # rank's output is lost, 1 run in 8 here without this moment to read it)
                time.sleep(_ABORT_GRACE_S)
                MPI.COMM_WORLD.Abort(1)

    excepthook._tapegrad_aborts = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook


def is_available() -> bool:
    """True when ``mpi4py`` can be imported (the ``distributed`` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def rank() -> int:
    """This process's rank, ``0 <= rank() < world_size()`` (0 without ``mpiexec``)."""
    return _init().rank


def world_size() -> int:
    """The number of processes (1 without ``mpiexec``)."""
    return _init().size


def timeout() -> float:
    """Seconds a collective waits for the other ranks before raising
    ``DistributedTimeoutError`` (``TAPEGRAD_DIST_TIMEOUT``, default 300)."""
    if _S.timeout is not None:
        return _S.timeout
    env = os.environ.get("TAPEGRAD_DIST_TIMEOUT")
    if env is None:
        return _DEFAULT_TIMEOUT
    try:
        seconds = float(env)
    except ValueError:
        raise ValueError(f"TAPEGRAD_DIST_TIMEOUT must be a number of seconds, got {env!r}") from None
    if not seconds > 0:
        raise ValueError(f"TAPEGRAD_DIST_TIMEOUT must be positive, got {env!r}")
    return seconds


def set_timeout(seconds: float | None) -> None:
    """Set the collectives' timeout in seconds (``None``: back to the environment's or 300)."""
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ValueError(f"set_timeout: expected a positive number of seconds or None, got {seconds!r}")
    _S.timeout = None if seconds is None else float(seconds)


# --- waiting with a deadline ------------------------------------------------------------------


_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


def _timeout_message(what: str, limit: float) -> str:
    return (f"tapegrad.distributed.{what}: rank {_S.rank} of {_S.size} waited {limit:g} s "
            "for the other ranks to join this collective. Another rank has probably "
            "failed (see its traceback) or is running different code. The timeout is "
            "TAPEGRAD_DIST_TIMEOUT or tapegrad.distributed.set_timeout(seconds).")


def _wait(requests: Sequence[Any], what: str) -> None:
    """Complete ``requests``, polling; raise DistributedTimeoutError past the deadline.

    For the small messages that open a collective (the fingerprints, a
    barrier): a rank that died never joins them, so this is where the others
    notice. Spins on ``Testall`` (which drives MPI's progress), yielding the
    core between tests (on a busy machine the rank we wait for may need it),
    for the first 10 ms; then sleeps in growing steps (up to 1 ms).
    """
    if not requests:
        return
    Request = _S.MPI.Request
    reqs = list(requests)
    if Request.Testall(reqs):
        return
    start = time.perf_counter()
    limit = timeout()
    nap = 0.0
    while not Request.Testall(reqs):
        now = time.perf_counter() - start
        if now > limit:
            raise DistributedTimeoutError(_timeout_message(what, limit))
        if now > 1e-2:
            nap = min(1e-3, nap * 2 or 2e-5)
            time.sleep(nap)
        else:
            _yield()


class _Watchdog:
    """A daemon thread that aborts the MPI job when a blocking wait outlives its deadline.

    The data of a collective moves only after every rank has passed the
    fingerprint exchange, so a rank can be missing there only if it died in
    between. The data moves in MPI's blocking calls, faster than a
    non-blocking request polled from Python (MPI makes progress inside the
    call), but a blocked call cannot raise: past the deadline this thread
    prints the error and calls ``MPI.COMM_WORLD.Abort``.
    Arming and disarming only set an attribute (no lock, no wake-up: the
    thread looks a few times per timeout, at most once a second).
    """

    def __init__(self) -> None:
        import threading

        self.armed: tuple[float, str] | None = None
        self.thread = threading.Thread(target=self._run, name="tapegrad-distributed-watchdog", daemon=True)
        self.thread.start()

    def arm(self, what: str, seconds: float) -> None:
        self.armed = (time.monotonic() + seconds, what)

    def disarm(self) -> None:
        self.armed = None

    def _run(self) -> None:
        while True:
            time.sleep(min(max(timeout() / 8, 0.05), 1.0))
            armed = self.armed
            if armed is None or time.monotonic() < armed[0]:
                continue
            sys.stderr.write(f"tapegrad.distributed.DistributedTimeoutError: "
                             f"{_timeout_message(armed[1], timeout())} Aborting the MPI job.\n")
            sys.stderr.flush()
            time.sleep(_ABORT_GRACE_S)  # let the launcher forward the message before Abort kills it
            _S.MPI.COMM_WORLD.Abort(1)
            os._exit(1)  # Abort does not return; should it, do not write again


_watchdog: list[_Watchdog] = []


def _guarded(what: str, calls: Sequence[Any]) -> None:
    """Run the blocking MPI ``calls`` (the data phase of a collective) under the watchdog."""
    if not _watchdog:
        _watchdog.append(_Watchdog())
    dog = _watchdog[0]
    dog.arm(what, timeout())
    try:
        for call in calls:
            call()
    finally:
        dog.disarm()


def barrier() -> None:
    """Wait until every rank has called ``barrier()`` (a no-op when alone)."""
    s = _init()
    if s.size == 1:
        return
    _wait([s.comm.Ibarrier()], "barrier")


# --- fingerprints: the ranks agree before any data moves ---------------------------------------


def _treedef_str(d: TreeDef) -> str:
    if d.kind is None:
        return "*"
    if d.kind is type(None):
        return "None"
    kids = ", ".join(_treedef_str(c) for c in d.children)
    if d.kind is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(d.meta, (_treedef_str(c) for c in d.children))) + "}"
    if d.registered:
        return f"{d.kind.__name__}({kids})"
    if d.meta is not None:
        return f"{d.meta.__name__}({kids})"
    return f"({kids},)" if d.kind is tuple and len(d.children) == 1 else (
        f"({kids})" if d.kind is tuple else f"[{kids}]")


def _describe(call: str, treedef: TreeDef, metas: list[tuple[tuple[int, ...], str]]) -> tuple[str, str, list[str]]:
    return call, _treedef_str(treedef), [f"{dt}{list(s)}" for s, dt in metas]


def _short(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."


def _mismatch_message(call: str, descs: list[tuple[str, str, list[str]]]) -> str:
    me = _S.rank
    other = next(r for r in range(len(descs)) if descs[r] != descs[0]) if descs[me] == descs[0] else me
    a, b = descs[0], descs[other]
    head = f"tapegrad.distributed.{call}: the ranks disagree; rank 0 and rank {other} differ"
    if a[0] != b[0]:
        return f"{head}: rank 0 called {a[0]}, rank {other} called {b[0]}"
    if a[1] != b[1]:
        return (f"{head} in the tree's structure: rank 0 has {_short(a[1])}, "
                f"rank {other} has {_short(b[1])}")
    for i, (x, y) in enumerate(zip(a[2], b[2])):
        if x != y:
            return f"{head} at leaf {i} (in flattening order): rank 0 has {x}, rank {other} has {y}"
    return head  # pragma: no cover  (unequal descriptions differ somewhere above)


_DIGESTS: dict[Any, Any] = {}


def _agree(call: str, treedef: TreeDef, metas: list[tuple[tuple[int, ...], str]]) -> None:
    """Exchange a 64-bit hash of the call, tree, shapes and dtypes; on a mismatch
    every rank sees it, so all exchange descriptions and raise the same error."""
    key = (call, treedef, tuple(metas))
    mine = _DIGESTS.get(key)
    if mine is None:  # a training loop asks for the same few: hash each once
        text = repr(_describe(call, treedef, metas)).encode()
        mine = np.frombuffer(hashlib.blake2b(text, digest_size=8).digest(), dtype=np.int64).copy()
        if len(_DIGESTS) >= 64:
            _DIGESTS.clear()
        _DIGESTS[key] = mine
    everyone = np.empty(_S.size, dtype=np.int64)
    _wait([_S.comm.Iallgather(mine, everyone)], call)
    if (everyone == everyone[0]).all():
        return
    descs = _S.comm.allgather(_describe(call, treedef, metas))  # every rank saw the same hashes
    raise DistributedError(_mismatch_message(call, descs))


# --- packing: one contiguous buffer per (device, dtype) ------------------------------------------

_MPI_SAFE_KINDS = "biufc"


def _leaf_array(x: Any, call: str, i: int) -> Any:
    if isinstance(x, Traced):
        raise TypeError(
            f"tapegrad.distributed.{call}: leaf {i} is a traced value; collectives take "
            "plain arrays (call them outside the differentiated function, or on tg.value(x))"
        )
    if hasattr(x, "__cuda_array_interface__") or type(x) is np.ndarray:
        return x
    if hasattr(x, "_value") and hasattr(x, "requires_grad"):  # a tapegrad.torch tensor
        raise TypeError(
            f"tapegrad.distributed.{call}: leaf {i} is a tapegrad.torch tensor; use "
            "tapegrad.torch.distributed for tensors, or pass t.detach().numpy()"
        )
    a = np.asarray(x)
    if a.dtype.kind not in _MPI_SAFE_KINDS:
        raise TypeError(f"tapegrad.distributed.{call}: leaf {i} has dtype {a.dtype}, "
                        "not a numeric type MPI can carry")
    return a


class _Packed:
    """The leaves of one tree grouped by (device, dtype): one contiguous buffer per group."""

    def __init__(self, leaves: list[Any], call: str) -> None:
        self.arrays = [_leaf_array(x, call, i) for i, x in enumerate(leaves)]
        self.leaves = leaves
        groups: dict[tuple[bool, str], list[int]] = {}
        for i, a in enumerate(self.arrays):
            gpu = hasattr(a, "__cuda_array_interface__")
            groups.setdefault((gpu, np.dtype(a.dtype).str), []).append(i)
        # sorted: the same order on every rank whatever the leaves' order
        self.groups = sorted(groups.items())

    def metas(self) -> list[tuple[tuple[int, ...], str]]:
        return [(tuple(a.shape), ("cuda:" if hasattr(a, "__cuda_array_interface__") else "")
                 + str(np.dtype(a.dtype))) for a in self.arrays]

    def pack(self, key: tuple[bool, str], idx: list[int], fill: bool = True) -> Any:
        """The group's wire buffer (see ``_wire_buffer``), holding the leaves ``idx``
        one after the other (left as it is unless ``fill``)."""
        total = sum(math.prod(self.arrays[i].shape) for i in idx)
        buf = _wire_buffer(key, total)
        if fill:
            start = 0
            for i in idx:
                a = self.arrays[i]
                n = math.prod(a.shape)
                buf[start:start + n].reshape(a.shape)[...] = a  # casts to a carrier type
                start += n
        return buf

    def unpack(self, key: tuple[bool, str], idx: list[int], buf: Any, out: list[Any],
               divide: int = 1) -> None:
        """The leaves ``idx``, shaped and typed as given, written into ``out``
        (divided by ``divide``). Where the wire carries the leaves' own dtype on the
        host, they are views of ``buf`` itself, which the caller then owns: the pool
        hands ``buf`` out again only once every view of it is gone (``_wire_buffer``),
        so the result costs no copy. Else (a carrier type, or a device buffer) they
        are views of one new array copied out of ``buf``, in the same pass as the
        division."""
        dtype = np.dtype(key[1])
        if not key[0] and buf.dtype == dtype:
            if divide != 1:
                np.divide(buf, divide, out=buf)
            res = buf
        elif divide != 1:
            res = _xp(key[0]).divide(buf, divide, dtype=buf.dtype)
            res = res if res.dtype == dtype else res.astype(dtype)
        else:
            res = buf.astype(dtype, copy=True)
        start = 0
        for i in idx:
            a, leaf = self.arrays[i], self.leaves[i]
            n = math.prod(a.shape)
            piece = res[start:start + n].reshape(a.shape)
            start += n
            if type(leaf) in (int, float, complex, bool):
                out[i] = type(leaf)(piece.item())
            elif isinstance(leaf, np.generic):
                out[i] = piece[()]
            else:
                out[i] = piece


# Transport types for the dtypes MPI lacks (half precision, bool): a wider type
# carries them and the result is cast back.
_CARRIER = {"<f2": np.dtype(np.float32), "|b1": np.dtype(np.uint8)}

# The wire buffers, pooled: MPI moves a buffer it has seen before several times
# faster than fresh memory (an 8 MB all_reduce on two processes: about 3x), so a
# training loop reduces its gradients through the same buffers every step. A
# host buffer that carries the leaves' own dtype is lent to the caller as the
# results (views of it: no copy out, 0.5 ms of an 8 MB all_reduce); the pool
# hands it out again only when no view of it is alive (its reference count:
# every NumPy view holds one on the array that owns the memory), and makes
# another buffer while it is lent.
_POOLS: OrderedDict[tuple[bool, str, int], list[Any]] = OrderedDict()
_MAX_POOLS = 8  # (sizes and dtypes) of the most recent calls
_MAX_LENT = 4  # buffers kept per pool; past that, a fresh one per call
_FREE_REFS = 3  # sys.getrefcount of a pooled buffer with no views: the pool, the loop, the call


def _wire_buffer(key: tuple[bool, str], n: int) -> Any:
    gpu, dtype = key
    wire = _CARRIER.get(dtype, np.dtype(dtype))
    k = (gpu, wire.str, n)
    pool = _POOLS.get(k)
    if pool is None:
        pool = _POOLS[k] = []
        if len(_POOLS) > _MAX_POOLS:
            _POOLS.popitem(last=False)
    else:
        _POOLS.move_to_end(k)
    for buf in pool:
        if sys.getrefcount(buf) <= _FREE_REFS:
            return buf
    buf = _xp(gpu).empty(n, dtype=wire)
    if len(pool) < _MAX_LENT:
        pool.append(buf)
    return buf


def _xp(gpu: bool) -> Any:
    if gpu:
        import cupy

        return cupy
    return np


def _cuda_aware() -> bool:
    """Whether MPI may be handed device buffers (see the module docstring)."""
    if _S.cuda_aware is None:
        env = os.environ.get("TAPEGRAD_MPI_CUDA_AWARE")
        if env is not None:
            _S.cuda_aware = env.strip().lower() in ("1", "true", "yes", "on")
        else:
            query = getattr(_S.MPI, "Query_cuda_support", None)
            if query is not None:
                _S.cuda_aware = bool(query())
            else:
                _S.cuda_aware = os.environ.get("MPIR_CVAR_ENABLE_GPU", "") == "1"
    return _S.cuda_aware


def _to_mpi(buf: Any, gpu: bool) -> Any:
    """What to hand MPI for ``buf``: itself, or for a device buffer without
    CUDA-aware MPI, a host copy (see ``_from_mpi``)."""
    if not gpu:
        return buf
    import cupy

    cupy.cuda.get_current_stream().synchronize()  # MPI reads memory, not the stream
    if _cuda_aware():
        return buf
    return cupy.asnumpy(buf)


def _from_mpi(buf: Any, sent: Any) -> None:
    """Copy a host copy made by ``_to_mpi`` back into the device buffer."""
    if sent is not buf:
        buf.set(sent)


# --- the collectives -----------------------------------------------------------------------------


def _check_op(op: str) -> None:
    if op not in ("mean", "sum"):
        raise ValueError(f"tapegrad.distributed.all_reduce: op must be 'mean' or 'sum', got {op!r}")


def all_reduce(tree: Any, op: str = "mean", *, check: bool = True) -> Any:
    """The element-wise mean (or sum) of ``tree`` over all ranks.

    Every rank passes a tree of the same structure, shapes and dtypes (a
    ``DistributedError`` says where they differ) and gets the same result
    back: new arrays, the inputs are not modified. The leaves are packed into
    one contiguous buffer per dtype and reduced in one message each.

    Args:
        tree: a pytree of NumPy (or CuPy) arrays and scalars.
        op: ``"mean"`` (floating and complex leaves only) or ``"sum"``.
        check: exchange the fingerprints first (one small round trip). Pass
            ``False`` only where every rank is known to pass the same
            structure, shapes and dtypes (``DistributedDataParallel`` does,
            for the buckets it checked at wrap time): a mismatch is then
            undefined behaviour in MPI, and a rank that died is noticed by
            the watchdog (which aborts the job), not by a timeout error.

    Returns:
        A tree of the same structure; each leaf has its input's shape and dtype
        (Python scalars stay Python scalars). With one process: ``tree`` itself.

    Examples:
        >>> grads = dist.all_reduce(tg.grad(loss)(params, *dist.shard((X, y))))
    """
    _check_op(op)
    s = _init()
    if s.size == 1:
        return tree
    call = f"all_reduce(op={op!r})"
    leaves, treedef = tree_flatten(tree)
    packed = _Packed(leaves, call)
    if op == "mean":
        for i, a in enumerate(packed.arrays):
            if np.dtype(a.dtype).kind not in "fc":
                raise TypeError(f"tapegrad.distributed.{call}: leaf {i} has dtype {a.dtype}; "
                                "the mean takes floating or complex leaves (use op='sum')")
    if check:
        _agree(call, treedef, packed.metas())
    MPI = s.MPI
    pending = []
    for key, idx in packed.groups:
        buf = packed.pack(key, idx)
        pending.append((key, idx, buf, _to_mpi(buf, key[0])))
    _guarded(call, [partial(s.comm.Allreduce, MPI.IN_PLACE, p[-1], op=MPI.SUM) for p in pending])
    out: list[Any] = [None] * len(leaves)
    for key, idx, buf, sent in pending:
        _from_mpi(buf, sent)
        packed.unpack(key, idx, buf, out, divide=s.size if op == "mean" else 1)
    return tree_unflatten(treedef, out)


def broadcast(tree: Any, root: int = 0) -> Any:
    """Rank ``root``'s ``tree``, on every rank.

    Every rank passes a tree of the same structure, shapes and dtypes (its own
    values are ignored except on ``root``); one message per dtype.

    Returns:
        New arrays holding ``root``'s values (the inputs are not modified);
        with one process, ``tree`` itself.

    Examples:
        >>> params = dist.broadcast(init_params(rng))   # every rank starts alike
    """
    s = _init()
    if not (isinstance(root, (int, np.integer)) and 0 <= root < s.size):
        raise ValueError(f"tapegrad.distributed.broadcast: root must be a rank in [0, {s.size}), got {root!r}")
    if s.size == 1:
        return tree
    call = f"broadcast(root={int(root)})"
    leaves, treedef = tree_flatten(tree)
    packed = _Packed(leaves, call)
    _agree(call, treedef, packed.metas())
    pending = []
    for key, idx in packed.groups:
        buf = packed.pack(key, idx, fill=s.rank == root)
        pending.append((key, idx, buf, _to_mpi(buf, key[0])))
    _guarded(call, [partial(s.comm.Bcast, p[-1], root=int(root)) for p in pending])
    out: list[Any] = [None] * len(leaves)
    for key, idx, buf, sent in pending:
        _from_mpi(buf, sent)
        packed.unpack(key, idx, buf, out)
    return tree_unflatten(treedef, out)


def shard_bounds(n: int, size: int | None = None, index: int | None = None) -> tuple[int, int]:
    """``(start, stop)`` of rank ``index``'s part of ``n`` items split over ``size`` ranks:
    the first ``n % size`` ranks get one item more (as ``numpy.array_split``)."""
    size = world_size() if size is None else size
    index = rank() if index is None else index
    base, extra = divmod(n, size)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)


def shard(tree: Any) -> Any:
    """This rank's slice of the batch axis (axis 0) of an array, or of every leaf of a pytree.

    ``n`` rows are split into ``world_size()`` contiguous parts as
    ``numpy.array_split`` splits them: the first ``n % world_size()`` ranks get
    one row more. Leaves of a tree are sliced alike (give them the same length).
    Gradients of a mean loss over uneven shards are not the full-batch
    gradient's mean: weight each rank's loss by its share, or use ``op="sum"``
    of per-example sums (see ``docs/distributed.md``).

    Returns:
        The slices (views, for NumPy arrays); with one process, ``tree`` itself.
    """
    s = _init()
    if s.size == 1:
        return tree

    def cut(x: Any) -> Any:
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) == 0:
            raise ValueError(f"tapegrad.distributed.shard: expected arrays with a batch axis, "
                             f"got {type(x).__name__} with shape {shape}")
        a, b = shard_bounds(shape[0], s.size, s.rank)
        return x[a:b]

    return tree_map(cut, tree)
