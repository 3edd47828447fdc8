"""What tensors that share data share: the version counter, views and aliases.

PyTorch counts in-place changes of a tensor's data on a version counter that
the tensor's views and ``detach()``-ed aliases share (``VersionCounter``); an
op that saves a tensor keeps its counter and version, and backward checks
them (``_graph.check_versions``). ``_viewed`` marks a view or alias of a
base tensor (``_inplace.py`` writes through it). Imports nothing of the facade.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from tapegrad.core.tape import next_index

if TYPE_CHECKING:
    from tapegrad.torch._tensor_base import Tensor, TensorBase


class VersionCounter:
    """The version of a tensor's data, as PyTorch counts it: one counter is
    shared by a tensor, its views and its ``detach()``-ed aliases (they share
    the data), and every in-place change of any of them bumps it. An op that
    saves a tensor keeps the counter and its ``value`` then; backward
    compares them (``check_versions``).

    ``last_inplace``: the ``grad_fn`` name of the latest in-place op on the
    data (what PyTorch's version error names a changed input after)."""

    __slots__ = ("value", "last_inplace", "__weakref__")

    def __init__(self) -> None:
        self.value = 0
        self.last_inplace: str | None = None


# The counters of tensors made by a fast op (``_tensor._rec1``...), by the
# entry that made the tensor: such a tensor has none until something needs it
# (an in-place op, a view, ``detach``: see ``counter_of``), so that an op costs
# no counter; until then an op that saves the tensor holds that entry (``held``).
_counters: weakref.WeakKeyDictionary[Any, VersionCounter] = weakref.WeakKeyDictionary()


def counter_of(t: Any) -> VersionCounter:
    """Tensor ``t``'s version counter, made now if it has none yet (a fast
    op's result: its counter is then found from its entry too)."""
    vc = t._vc
    if vc is None:
        vc = t._vc = VersionCounter()
        _counters[t._value._node] = vc
    return vc  # type: ignore[no-any-return]


def version_of(t: Any) -> int:
    """Tensor ``t``'s version (0 while it has no counter)."""
    vc = t._vc
    return 0 if vc is None else vc.value  # type: ignore[no-any-return]


def _counter_held(x: Any) -> VersionCounter | None:
    """The counter an entry's held input ``x`` refers to (see ``held``): a
    counter, a tensor's, or the one made later for an entry's tensor."""
    if type(x) is VersionCounter:
        return x
    if hasattr(x, "_vc"):  # a tensor
        return counter_of(x)
    return _counters.get(x)  # the entry that made a tensor


_last_bump = [0]  # tape index at the latest in-place bump (graphs older than it get checked)


def bump(*tensors: Any) -> None:
    """Count an in-place change of the data of each tensor in ``tensors``
    (and of everything sharing its counter)."""
    for t in tensors:
        vc = t._vc
        (vc if vc is not None else counter_of(t)).value += 1
    _last_bump[0] = next_index()


# --- views and aliases -------------------------------------------------------------------------


def _viewed(t: Tensor, base: TensorBase, kind: str, arg: Any) -> Tensor:
    """Mark ``t`` as a view of ``base``, as PyTorch's views are: they share
    its version counter, an in-place op on ``t`` writes through to ``base``
    (see ``Tensor._write_back``), and a recorded in-place change of ``base``
    is read again by ``t`` (see ``Tensor._refresh_views``).
    ``kind`` says how ``t`` reads ``base`` (see ``_read_view``): ``"index"``
    (``base[arg]``), ``"perm"`` (its axes permuted by ``arg``), ``"shape"``
    (reshaped to ``arg``); ``"expand"`` (broadcast to ``arg``),
    ``"diagonal"`` (``arg`` = (offset, dim1, dim2)) and ``"multi"`` (output
    of an op that returns several views, ``arg`` = (op, output number, key))
    do not write through; ``"alias"`` (``detach()``: ``base``'s data, outside
    the graph) writes through as data (see ``InplaceOps._write_back``)."""
    t._base_view = (base, kind, arg)
    t._vc = counter_of(base)  # one version counter for a base and all its views
    views = base._views
    if views is None:
        base._views = views = _Views()
    elif len(views) >= views.limit:  # drop the views that died, now and then
        views[:] = [r for r in views if r() is not None]
        views.limit = 2 * len(views) + 16
    views.append(weakref.ref(t))
    return t


class _Views(list):  # type: ignore[type-arg]
    """Weak references to the views of a tensor (see ``_viewed``)."""

    limit = 16
