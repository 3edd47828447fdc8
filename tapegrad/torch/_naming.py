"""How a general facade op names its node: the node data of ``FacadeEntry``
(the form the fast paths pass to ``FacadeTape.record``) written on the entry
its primitive recorded, once the op knows its name and inputs
(``_tensor_base._result``, the in-place ops)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tapegrad.numpy as tnp
from tapegrad.core.tape import parents_of
from tapegrad.core.traced import Traced
from tapegrad.torch._graph import GT, FacadeEntry, VersionCounter, _counters, held, version_of


def named(core: FacadeEntry, name: str, ins: Sequence[Any], out_vc: VersionCounter | None = None,
           out_ver: int = 0, *, first: bool = True) -> None:
    """Write the node data of facade op ``name`` on tape entry ``core`` (the
    op's last), in the one form ``FacadeEntry`` describes (the fast paths pass
    it to ``record``): its inputs ``ins`` (tensors, or None for scalars
    PyTorch lists) as held, the parent of each (an index into ``core``'s
    parents, or, for an input the entry does not use directly, as in a
    composite op, that input's own entry) and their versions. ``first``:
    False when the first input is not held (an in-place op changes it: PyTorch
    saves a copy). ``out_vc``: the counter of the tensor the entry makes when
    it has one already (an in-place op: the tensor's own), ``out_ver`` the
    version its backward expects it at. The ``grad_fn`` view is made from
    these when asked for (``_graph.view_of``)."""
    ps = parents_of(core)
    lay: list[Any] = []
    kept: list[Any] = []
    vers: list[int] = []
    changed = out_ver
    for k, x in enumerate(ins):
        if x is None:
            lay.append(None)
            kept.append(None)
            vers.append(0)
            continue
        v = x._value
        if type(v) is Traced and v._level is GT:
            e = v._node
            lay.append(ps.index(e) if e in ps else e)  # (entries compare by identity)
        else:
            lay.append(None)
        if first or k:
            kept.append(held(x))
            ver = version_of(x)
            vers.append(ver)
            changed = changed or ver
        else:
            kept.append(None)
            vers.append(0)
    core.name = name
    core.held_inputs = tuple(kept)
    core.input_parents = tuple(lay)
    core.input_versions = (tuple(vers) + ((out_ver,) if out_ver else ())) if changed else None
    if out_vc is not None:
        _counters[core] = out_vc
    core.view = None


def own_entry(r: Traced, ins: Sequence[Any]) -> Traced:
    """``r``, or, when its entry is not one a facade op may name (a leaf's, or
    that of one of the op's inputs ``ins``: an op that returns its input's
    value), an alias of it recorded as an entry of its own (no copy)."""
    core = r._node
    if core.prim is not None and type(core) is FacadeEntry:
        for x in ins:
            if x is not None and x._value is r:
                break
        else:
            return r
    return tnp.reshape(r, r.shape)  # type: ignore[return-value]  # (a traced value in, a traced value out)
