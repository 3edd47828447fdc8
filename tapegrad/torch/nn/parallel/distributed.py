"""``DistributedDataParallel``: one model per process, gradients averaged in ``backward()``.

At wrap time rank 0's parameters and buffers are broadcast, so every rank
starts alike. Each parameter gets a gradient hook; the first one that fires
in a ``backward()`` queues a callback that runs when ``backward()`` has
written every ``.grad``. That callback averages the gradients over the ranks
in buckets of about ``bucket_cap_mb`` megabytes, in reverse parameter order
(PyTorch's order): one ``tapegrad.distributed.all_reduce`` per bucket,
itself one fused message per dtype. The first reduction compares the ranks'
buckets (fingerprints); the later ones, of the same buckets, skip that
round trip.

Why not reduce each bucket while the backward pass still runs, as PyTorch
does? tapegrad's reverse pass computes every leaf's cotangent before it
accumulates any of them into ``.grad`` (the hooks fire after the whole pass),
so there is no remaining computation to overlap a reduction with.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from tapegrad import distributed as _tgd
from tapegrad.backend import array_module
from tapegrad.core.traced import value
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _v
from tapegrad.torch.autograd import _engine
from tapegrad.torch.distributed import _require, write_into
from tapegrad.torch.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` over the processes of ``mpiexec``.

    Wrap after ``tapegrad.torch.distributed.init_process_group``; call the
    wrapper as the module (``forward`` passes through); ``loss.backward()``
    leaves every rank with the gradients averaged over the ranks.

    Args:
        module: the model (the same architecture on every rank).
        broadcast_buffers: broadcast rank 0's buffers (e.g. batch-norm
            statistics) before each forward.
        bucket_cap_mb: the size of a gradient bucket, in megabytes (25).
        find_unused_parameters: accepted; unused parameters are always handled
            (a parameter without a gradient on any rank keeps ``grad=None``;
            one with a gradient on some ranks gets the sum over those / world size).

    ``state_dict()`` keys carry the ``"module."`` prefix, as PyTorch's;
    ``ddp.module`` is the wrapped model; ``with ddp.no_sync():`` accumulates
    local gradients without communicating (they are reduced, with the next
    backward's, after the block).

    Examples:
        >>> dist.init_process_group(backend="mpi")
        >>> model = DistributedDataParallel(nn.Linear(10, 1))
        >>> loss_fn(model(x), y).backward()      # grads are the mean over the ranks
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **kwargs: Any) -> None:
        super().__init__()
        _require(process_group)
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel expects an nn.Module, got {type(module).__name__}")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if not cap > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        object.__setattr__(self, "_sync", True)
        object.__setattr__(self, "_queued_in", None)  # the backward() whose callbacks hold ours
        object.__setattr__(self, "_checked", False)  # whether the ranks' buckets were compared
        params = [p for p in module.parameters() if p.requires_grad]
        object.__setattr__(self, "_buckets", _buckets(params, cap * 2**20))
        self._sync_state()  # every rank starts from rank 0's weights
        ref = weakref.ref(self)  # the hooks must not keep the wrapper (and model) alive

        def grad_ready(g: Any) -> None:
            ddp = ref()
            if ddp is not None:
                ddp._grad_ready()

        for p in params:
            p.register_hook(grad_ready)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``module(*args, **kwargs)`` (after broadcasting rank 0's buffers, if asked)."""
        if self.broadcast_buffers and _tgd.world_size() > 1:
            bufs = [b for b in self.module.buffers() if b is not None]
            if bufs:
                _broadcast_into(bufs)
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside the block, ``backward()`` accumulates local gradients only."""
        old = self._sync
        object.__setattr__(self, "_sync", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_sync", old)

    # --- the reduction ---------------------------------------------------------------------------
    def _sync_state(self) -> None:
        tensors = [t for t in (*self.module.parameters(), *self.module.buffers()) if t is not None]
        if tensors and _tgd.world_size() > 1:
            _broadcast_into(tensors)

    def _grad_ready(self) -> None:
        # the first gradient hook of a synchronised backward() queues the reduction
        # (hooks also fire in autograd.grad(), which runs no callbacks: nothing then)
        running = _engine._callbacks
        if self._sync and running is not None and self._queued_in is not running \
                and _tgd.world_size() > 1:
            object.__setattr__(self, "_queued_in", running)
            _engine.queue_callback(self._reduce)

    def _reduce(self) -> None:
        object.__setattr__(self, "_queued_in", None)
        # The buckets never change: the first reduction checks that every rank has
        # the same ones (fingerprints); later ones skip that round trip.
        check = not self._checked
        for bucket in self._buckets:
            _reduce_bucket(bucket, check)
        object.__setattr__(self, "_checked", True)


def _buckets(params: Sequence[Tensor], cap: float) -> list[list[Tensor]]:
    """Parameters in reverse order, cut into runs of at most ``cap`` bytes (at least one each)."""
    out: list[list[Tensor]] = []
    size = 0.0
    for p in reversed(params):
        nbytes = float(value(_v(p)).nbytes)
        if not out or size + nbytes > cap:
            out.append([])
            size = 0.0
        out[-1].append(p)
        size += nbytes
    return out


def _reduce_bucket(bucket: list[Tensor], check: bool) -> None:
    """Average the bucket's gradients over the ranks: one all_reduce (one message per
    dtype). A 0/1 flag per parameter rides along in the first parameter's dtype, so
    ranks where a parameter got no gradient contribute zeros, and a parameter no
    rank computed a gradient for keeps ``grad=None``."""
    arrays = []
    for p in bucket:
        g = p.grad
        arrays.append(value(_v(g)) if g is not None else None)
    first = value(_v(bucket[0]))
    xp = array_module(first)
    flags = xp.asarray([0.0 if a is None else 1.0 for a in arrays], dtype=first.dtype)
    tree = [[a if a is not None else xp.zeros_like(value(_v(p))) for a, p in zip(arrays, bucket)], flags]
    means, counts = _tgd.all_reduce(tree, op="mean", check=check)
    for p, a, m, c in zip(bucket, arrays, means, counts.tolist()):
        if c == 0:
            continue
        if a is not None and p.grad is not None:
            write_into(p.grad, m)
        else:
            p.grad = _new(m)


def _broadcast_into(tensors: list[Tensor]) -> None:
    """Overwrite ``tensors`` in place with rank 0's values (one message per dtype)."""
    got = _tgd.broadcast([value(_v(t)) for t in tensors], root=0)
    for t, a in zip(tensors, got):
        write_into(t, a)
