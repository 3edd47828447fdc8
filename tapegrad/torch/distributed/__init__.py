"""``torch.distributed`` on MPI: the process group of ``mpiexec``'s processes.

    import tapegrad.torch as torch
    import tapegrad.torch.distributed as dist

    dist.init_process_group(backend="mpi")    # under: mpiexec -n 4 python train.py
    model = torch.nn.parallel.DistributedDataParallel(model)

The one backend is MPI (``tapegrad.distributed``, through ``mpi4py``):
ranks and world size are ``mpiexec``'s, so ``init_method``, ``MASTER_ADDR``
and stores are not needed. Run without ``mpiexec``, the group has one rank.
The collectives work in place on tensors, as PyTorch's; ``group`` must be
``None`` (the default group, all ranks).
"""

from __future__ import annotations

import datetime
from typing import Any

from tapegrad import distributed as _tgd
from tapegrad.core.traced import value
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _v

__all__ = [
    "GroupMember", "ReduceOp", "all_reduce", "barrier", "broadcast", "destroy_process_group",
    "get_backend", "get_rank", "get_world_size", "init_process_group", "is_available",
    "is_initialized", "is_mpi_available",
]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class ReduceOp:
    """The reductions ``all_reduce`` takes (``SUM`` and ``AVG`` on MPI here)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


class GroupMember:
    """``GroupMember.WORLD``: the default group (the only group here)."""

    WORLD: Any = None


_group = {"initialized": False}


def is_available() -> bool:
    """True: the package is there (the MPI backend needs ``mpi4py``, see ``is_mpi_available``)."""
    return True


def is_mpi_available() -> bool:
    """True when ``mpi4py`` can be imported."""
    return _tgd.is_available()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and not destroyed)."""
    return _group["initialized"]


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the default process group: all the processes ``mpiexec`` started.

    Args:
        backend: ``"mpi"`` (or ``None``); other backends are not provided.
        timeout: how long a collective waits for the other ranks before it
            raises (``tapegrad.distributed.set_timeout``).
        world_size, rank: if given, must match ``mpiexec``'s.
    """
    if _group["initialized"]:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(
            f"tapegrad.torch.distributed runs on MPI only: got backend={backend!r}; use "
            "init_process_group(backend='mpi') and start the processes with mpiexec")
    if store is not None or (init_method is not None and init_method != "env://"):
        raise ValueError("tapegrad.torch.distributed: MPI forms the group; init_method and store "
                         "are not used (start the processes with mpiexec)")
    if timeout is not None:
        if not isinstance(timeout, datetime.timedelta):
            raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
        _tgd.set_timeout(timeout.total_seconds())
    n, r = _tgd.world_size(), _tgd.rank()
    if world_size not in (-1, n):
        raise ValueError(f"init_process_group: world_size={world_size}, but mpiexec started {n} processes")
    if rank not in (-1, r):
        raise ValueError(f"init_process_group: rank={rank}, but MPI says this process is rank {r}")
    _group["initialized"] = True


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group (MPI itself stays up until the process ends)."""
    _check_group(group)
    if not _group["initialized"]:
        raise ValueError(_NOT_INITIALIZED)
    _group["initialized"] = False


def _check_group(group: Any) -> None:
    if group is not None and group is not GroupMember.WORLD:
        raise ValueError("tapegrad.torch.distributed: only the default group (group=None) is provided")


def _require(group: Any = None) -> None:
    _check_group(group)
    if not _group["initialized"]:
        raise ValueError(_NOT_INITIALIZED)


def get_backend(group: Any = None) -> str:
    """``"mpi"``."""
    _require(group)
    return "mpi"


def get_rank(group: Any = None) -> int:
    """This process's rank in the default group."""
    _require(group)
    return _tgd.rank()


def get_world_size(group: Any = None) -> int:
    """The number of processes in the default group."""
    _require(group)
    return _tgd.world_size()


class _Work:
    """What ``async_op=True`` returns: the operation has already completed."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


def _tensor(t: Any, who: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{who}: expected a Tensor, got {type(t).__name__}")
    return t


def write_into(t: Tensor, arr: Any) -> None:
    """Overwrite ``t``'s values in place with ``arr`` (outside the graph, bumping its version)."""
    from tapegrad.torch.grad_mode import no_grad

    with no_grad():
        t.copy_(_new(arr))


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> _Work | None:
    """Reduce ``tensor`` over all ranks, in place: the sum (``ReduceOp.SUM``) or
    the mean (``ReduceOp.AVG``). Returns ``None`` (a completed work with ``async_op=True``)."""
    _require(group)
    t = _tensor(tensor, "all_reduce")
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"tapegrad.torch.distributed.all_reduce: op must be ReduceOp.SUM or "
                         f"ReduceOp.AVG, got {op!r}")
    if _tgd.world_size() > 1:
        arr = value(_v(t))
        write_into(t, _tgd.all_reduce(arr, op="mean" if op == ReduceOp.AVG else "sum"))
    return _Work() if async_op else None


def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> _Work | None:
    """Overwrite ``tensor`` on every rank with rank ``src``'s values, in place."""
    _require(group)
    t = _tensor(tensor, "broadcast")
    root = src if group_src is None else group_src
    result = _tgd.broadcast(value(_v(t)), root=root)  # checks root, alone too
    if _tgd.world_size() > 1:
        write_into(t, result)
    return _Work() if async_op else None


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> _Work | None:
    """Wait until every rank has reached the barrier."""
    _require(group)
    _tgd.barrier()
    return _Work() if async_op else None


def __getattr__(name: str) -> Any:
    """A PyTorch name this module lacks: an ``AttributeError`` that says so."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}: "
                         f"tapegrad.torch does not provide torch.distributed.{name}")
