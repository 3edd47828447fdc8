"""In-place ops and views: the ``*_`` methods, write-through to a view's base.

``_viewed`` marks a view; ``Tensor._inplace`` runs an in-place op (recorded as
a functional update when it must be), ``_write_back`` / ``_refresh_views``
keep a base and its views in step. Import direction: imports ``_tensor``,
``_promote``, ``_arith``; the op table (``_ops.py``) installs
``InplaceOps``' methods on ``Tensor``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy import generic as _generic
from numpy import ndarray
from typing_extensions import Self

import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.torch._arith import _check_bool_sub
from tapegrad.torch._batched import check_inplace
from tapegrad.torch._graph import (
    GT,
    bump,
    counter_of,
    tensor_hooks,
)
from tapegrad.torch._naming import named, own_entry
from tapegrad.torch._prims import stepped
from tapegrad.torch._promote import _cast
from tapegrad.torch._shape_errors import device_clash
from tapegrad.torch._tensor_base import (
    LEAF_INPLACE,
    MULTI_VIEW,
    OVERLAP_INPLACE,
    VIEW_LEAF_INPLACE,
    Tensor,
    _new,
    _v,
)
from tapegrad.torch._tensor_base import OpsBase as _Base


def _read_view(b: Any, kind: str, arg: Any) -> Any:
    """The value a view of ``kind`` reads from its base's value ``b``."""
    if kind == "index":
        return b[arg]
    if kind == "perm":
        return tnp.transpose(b, arg)
    if kind == "expand":
        return tnp.broadcast_to(b, arg)
    if kind == "diagonal":
        return tnp.diagonal(b, *arg)
    if kind == "multi":
        return b[arg[2]]
    if kind == "alias":
        return value(b)
    return tnp.reshape(b, arg)


def _write_view(b: Any, new: Any, kind: str, arg: Any) -> Any:
    """The base's value once its view (of ``kind``) holds ``new``."""
    if kind == "index":
        return tp.index_set(b, tp.NormalizedIndex(arg, b.ndim), new)
    if kind == "perm":
        return tnp.transpose(new, tuple(np.argsort(arg)))
    return tnp.reshape(new, b.shape)


_DONE = object()  # an in-place op that already wrote into the buffer


def _overwritten(a: Any, new: Any) -> Any:
    """``new`` in place of ``a``'s values: recorded (``a``'s old values get
    an exact zero gradient, NaN and inf included, as in PyTorch) when ``a``
    is traced and grad mode is on, else ``new`` itself."""
    if type(a) is Traced and GT.active:
        return stepped(a, new)
    return new


def _tensors(*xs: Any) -> tuple[Any, ...]:
    """An in-place op's other inputs as grad_fn edges: tensors, None for the rest."""
    return tuple(x if isinstance(x, Tensor) else None for x in xs)


class InplaceOps(_Base):
    """The methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    def _inplace_as(self, name: str, op: Callable[[Tensor], Tensor], other: Any = None) -> Self:
        """Out-of-place ``op`` of this tensor written into it, as node ``name``
        (with ``other``, when a tensor, as the op's other input)."""
        return self._inplace(name, lambda a: op(_new(a))._value, (other,) if isinstance(other, Tensor) else ())

    def scatter_(self, dim: builtins.int, index: Tensor, src: Any = None, value: Any = None, *,
                 reduce: str | None = None) -> Self:
        """In-place ``scatter``."""
        s = value if src is None else src
        name = "ScatterBackward0" if isinstance(s, Tensor) else "ScatterBackward1"
        return self._inplace_as(name, lambda t: t.scatter(dim, index, s, reduce=reduce), s)

    def scatter_add_(self, dim: builtins.int, index: Tensor, src: Tensor) -> Self:
        """In-place ``scatter_add``."""
        return self._inplace_as("ScatterAddBackward0", lambda t: t.scatter_add(dim, index, src), src)

    def index_add_(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Self:
        """In-place ``index_add``."""
        return self._inplace_as("IndexAddBackward0", lambda t: t.index_add(dim, index, source, alpha=alpha), source)

    def index_fill_(self, dim: builtins.int, index: Tensor, value: Any) -> Self:
        """In-place ``index_fill``."""
        name = "IndexFillBackward1" if isinstance(value, Tensor) else "IndexFillBackward0"
        return self._inplace_as(name, lambda t: t.index_fill(dim, index, value), value)


    # --- in place ----------------------------------------------------------------------------------------
    def _inplace(self, name: str, fn: Callable[[Any], Any], others: tuple[Any, ...] = (),
                 saves_output: builtins.bool = False) -> Self:
        """Run an in-place op: recorded as a functional update when it must be
        (the tensor now names the result), else written into the buffer.
        The node's entry keeps the tensor's counter at its new version: where
        the node's ``SAVES`` declaration says PyTorch's backward reads the
        result (``exp_``, ``tanh_``...), a later in-place change of the tensor
        is an error. (``saves_output`` is that declaration's ``out``; it is
        read from there, the argument is kept for the callers that pass it.)"""
        v = self._value
        if type(v) is Traced and v._level is GT and GT.active and self._grad_fn is None and v._node.prim is None:
            raise RuntimeError(LEAF_INPLACE)
        view = self._base_view
        if view is not None:
            self._check_view_write(view)
        vc = counter_of(self)
        new = fn(v)
        if type(new) is Traced:
            check_inplace(v, new)
            if view is not None and view[1] == "multi":
                raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad "
                                   f"mode enabled. {MULTI_VIEW}")
            dt = value(v).dtype
            if new.dtype != dt:
                new = _cast(new, dt)
            if new.shape != v.shape:
                raise RuntimeError(
                    f"output with shape {list(v.shape)} doesn't match the broadcast shape {list(new.shape)}")
            if new._level is GT:
                # its own input is not the tensor any more (PyTorch saves a copy of
                # it); its output is checked where the node's declaration says
                # PyTorch's backward reads it (``_graph.SAVES``)
                ins = (self, *others)
                new = own_entry(new, ins)
                named(new._node, name, ins, vc, vc.value + 1, first=False)
                self._grad_fn = None
            else:
                self._grad_fn = None
            old = v._node if type(v) is Traced else None
            self._value = new
            self._nr = 0
            self._rebased(old)
            vc.last_inplace = name
            if view is not None:
                self._write_back(view, others)  # (the base's change counts on the shared counter)
                return self
            self._refresh_views()
        elif new is not _DONE:
            self._write(new)
            if view is not None and view[1] == "alias":
                self._write_back(view, others)
                return self
        bump(self)
        return self

    def _check_view_write(self, view: Any) -> None:
        """Raise as PyTorch does for an in-place op on this view (of a leaf
        that requires grad, or with elements that share memory)."""
        _, kind, arg = view
        if kind == "alias":  # (``detach()``: outside the graph, any write is allowed)
            return
        if kind == "expand":
            v = value(self._value)
            if builtins.any(st == 0 and n > 1 for st, n in zip(v.strides, v.shape)):
                raise RuntimeError(OVERLAP_INPLACE)
        if kind == "multi" and GT.active and self._grad_fn is not None:
            raise RuntimeError(f"Output {arg[1]} of {arg[0]} is a view and is being modified inplace. {MULTI_VIEW}")
        if self._views_a_grad_leaf():
            raise RuntimeError(VIEW_LEAF_INPLACE)

    def _views_a_grad_leaf(self) -> builtins.bool:
        """Is this tensor a view of a leaf that requires grad (grad mode on)?"""
        base = self._base
        b = base._value if base is not None else None
        return type(b) is Traced and b._level is GT and GT.active and base._grad_fn is None and b._node.prim is None

    def _refresh_views(self, skip: Any = None) -> None:
        """After a recorded in-place change of this tensor: each of its live
        views (but ``skip``) reads its value again (``AsStridedBackward0``),
        as PyTorch's views see their base's storage; their own views follow.
        A ``detach()``-ed alias reads the new data, outside the graph."""
        views = self._views
        if not views:
            return
        for ref in views:
            v = ref()
            if v is None or v is skip or v._base_view is None or v._base_view[0] is not self:
                continue
            _, kind, arg = v._base_view
            r = _read_view(self._value, kind, arg)
            if kind == "alias" and type(v._value) is Traced:  # (it joined a graph by its own in-place op)
                v._set_data(r)
            else:
                old = v._value._node if type(v._value) is Traced else None
                v._value = r
                v._nr = 0
                if type(r) is Traced and r._level is GT:  # (the shared counter's bump comes after)
                    vc = v._vc
                    r = v._value = own_entry(r, (self,))
                    named(r._node, "AsStridedBackward0", (self,), vc, vc.value + 1)
                v._grad_fn = None
                v._rebased(old)
            v._refresh_views()

    def _set_data(self, new: Any) -> None:
        """This tensor's data becomes array ``new``, its graph as it is (``.data = ``)."""
        v = self._value
        if type(v) is Traced:
            while type(v._value) is Traced:
                v = v._value
            v._value = new
        else:
            self._value = new

    def _rebased(self, old: Any) -> None:
        """This tensor's graph node changed from ``old`` (an in-place op, or
        its base's, recorded): its ``retain_grad`` moves to the new version,
        as PyTorch's does (hooks registered by ``register_hook`` stay)."""
        if not self._retains:
            return
        fns = tensor_hooks.get(old)
        if not fns:
            return
        mine = [f for f in fns if getattr(f, "_retain", False) and getattr(f, "_tensor")() is self]  # noqa: B009
        new = self._value
        for f in mine:
            fns.remove(f)
            if type(new) is Traced and new._level is GT and new._node.prim is not None:
                tensor_hooks.setdefault(new._node, []).append(f)

    def _refresh_data(self, skip: Any = None) -> None:
        """After this tensor's data was replaced (not its graph: a write
        through a ``detach()``-ed alias), each live view but ``skip`` reads
        the new data, its graph as it is; their own views follow."""
        for ref in self._views or ():
            v = ref()
            if v is None or v is skip or v._base_view is None or v._base_view[0] is not self:
                continue
            _, kind, arg = v._base_view
            v._set_data(value(_read_view(value(self._value), kind, arg)))
            v._refresh_data()

    def _write_back(self, view: Any, others: tuple[Any, ...]) -> None:
        """After a recorded in-place op on this view: write its new value
        into its base (``CopySlices`` there, with the op's other inputs as
        edges); the base's refresh reads it back (``AsStridedBackward0``)."""
        base, kind, arg = view
        if kind == "alias":  # the base's data, not its graph (``detach()``)
            new = value(self._value)
            if value(base._value) is not new:
                base._set_data(new)
                base._refresh_data(skip=self)
            bump(self)
            return
        if kind in ("expand", "diagonal", "multi"):
            raise RuntimeError(
                f"tapegrad.torch: an in-place operation on a {'diagonal()' if kind == 'diagonal' else 'expand()'} "
                "view cannot write through to its base while gradients are recorded; clone() the view first, "
                "or build the new base out of place")
        new = self._value
        base._inplace("CopySlices", lambda b: _write_view(b, new, kind, arg), others)

    def _write(self, new: Any) -> None:
        holder, buf = None, self._value
        while type(buf) is Traced:
            holder, buf = buf, buf._value
        if type(buf) is ndarray and buf.flags.writeable:
            np.copyto(buf, new, casting="unsafe")
            return
        arr = np.array(np.broadcast_to(new, np.shape(buf)), dtype=buf.dtype) if type(buf) is ndarray or isinstance(buf, _generic) else new
        if holder is not None:
            holder._value = arr
        else:
            self._value = arr

    def _binary_(self, other: Any, fn: Any, name: str, div: builtins.bool = False, scalar_edge: builtins.bool = True) -> Self:
        o = other if isinstance(other, Tensor) else None

        def op(a: Any) -> Any:
            b = _v(other)
            if div and a.dtype.kind in "biu":
                raise RuntimeError("result type Float can't be cast to the desired output type Long")
            return fn(a, b)

        try:
            return self._inplace(name, op, (o,) if (o is not None or scalar_edge) else ())
        except (TypeError, ValueError) as e:
            if o is not None and o.ndim == 0 and o.device.type == "cpu" and self.device.type != "cpu":
                return self._binary_(o.to(self.device), fn, name, div, scalar_edge)  # (PyTorch's CPU scalar)
            raise device_clash(self._value, o._value if o is not None else None) or e from None

    def add_(self, other: Any, alpha: Any = 1) -> Self:
        if alpha != 1 and isinstance(other, Tensor):  # one AddBackward0 over self and other, as PyTorch's
            return self._binary_(other, lambda a, b: tnp.add(a, tnp.multiply(b, alpha)), "AddBackward0")
        return self._binary_(other * alpha if alpha != 1 else other, tnp.add, "AddBackward0")

    def sub_(self, other: Any, alpha: Any = 1) -> Self:
        _check_bool_sub(self, other)
        if alpha != 1 and isinstance(other, Tensor):
            return self._binary_(other, lambda a, b: tnp.subtract(a, tnp.multiply(b, alpha)), "SubBackward0")
        return self._binary_(other * alpha if alpha != 1 else other, tnp.subtract, "SubBackward0")

    def mul_(self, other: Any) -> Self:
        return self._binary_(other, tnp.multiply, "MulBackward0")

    def div_(self, other: Any) -> Self:
        return self._binary_(other, tnp.divide, "DivBackward0", div=True,
                             scalar_edge=isinstance(other, Tensor))

    def pow_(self, exponent: Any) -> Self:
        name = "PowBackward1" if isinstance(exponent, Tensor) else "PowBackward0"
        return self._binary_(exponent, tnp.power, name, scalar_edge=False)

    # The composites below run the out-of-place op on the tensor's value inside
    # the in-place step, so that one node (PyTorch's) takes self and the op's
    # tensor arguments as its edges, and self's own gradient flows through it.
    def addcmul_(self, t1: Any, t2: Any, value: Any = 1) -> Self:
        return self._inplace("AddcmulBackward0", lambda a: _new(a).addcmul(t1, t2, value)._value, _tensors(t1, t2))

    def addcdiv_(self, t1: Any, t2: Any, value: Any = 1) -> Self:
        return self._inplace("AddcdivBackward0", lambda a: _new(a).addcdiv(t1, t2, value)._value, _tensors(t1, t2))

    def lerp_(self, end: Any, weight: Any) -> Self:
        if isinstance(weight, Tensor):
            return self._inplace("LerpBackward1", lambda a: _new(a).lerp(end, weight)._value, _tensors(end, weight))
        return self._inplace("LerpBackward0", lambda a: _new(a).lerp(end, weight)._value, _tensors(end))

    def neg_(self) -> Self:
        return self._inplace("NegBackward0", lambda a: tnp.negative(a))


    def zero_(self) -> Self:
        """Fill with zeros in place."""
        return self._inplace("ZeroBackward0", lambda a: _overwritten(a, np.zeros_like(value(a))))

    def fill_(self, fill: Any) -> Self:
        """Fill with ``fill`` (a number or a one-element tensor) in place."""
        f = _v(fill)

        def op(a: Any) -> Any:
            if type(f) is Traced or (type(a) is Traced and GT.active):
                dt = value(a).dtype
                full = tnp.broadcast_to(_cast(tnp.asarray(f) if type(f) is Traced else np.asarray(f, dt), dt), a.shape)
                return full + _overwritten(a, np.zeros_like(value(a)))
            return np.full(np.shape(value(a)), value(f), dtype=value(a).dtype)

        return self._inplace("FillBackward2" if not isinstance(fill, Tensor) else "FillBackward3", op,
                             (fill,) if isinstance(fill, Tensor) else ())

    def copy_(self, src: Any, non_blocking: builtins.bool = False) -> Self:
        """Copy ``src`` (broadcast, cast) into this tensor in place."""
        if isinstance(src, Tensor) and src.device != self.device:  # (PyTorch copies across devices)
            src = src.to(self.device)
        s = _v(src)

        def op(a: Any) -> Any:
            if type(s) is Traced or (type(a) is Traced and GT.active):
                return tnp.broadcast_to(_cast(s, value(a).dtype), a.shape) + _overwritten(a, np.zeros_like(value(a)))
            return value(s)

        return self._inplace("CopyBackwards", op, (src if isinstance(src, Tensor) else None,))

    def clamp_(self, min: Any = None, max: Any = None) -> Self:  # noqa: A002
        return self._inplace("ClampBackward1", lambda a: _new(a).clamp(min, max)._value)

    clip_ = clamp_

    def clamp_min_(self, min: Any) -> Self:  # noqa: A002
        return self._inplace("ClampMinBackward0", lambda a: _new(a).clamp(min=min)._value)

    def masked_fill_(self, mask: Any, v: Any) -> Self:
        return self._inplace("MaskedFillBackward0", lambda a: _new(a).masked_fill(mask, v)._value)

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0, generator: Any = None) -> Self:
        from tapegrad.torch._creation import _rng

        return self._redraw("NormalBackward0", lambda shape: _rng(generator).normal(mean, std, shape))

    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0, generator: Any = None) -> Self:
        from tapegrad.torch._creation import _rng

        return self._redraw("UniformBackward0", lambda shape: _rng(generator).uniform(a, b, shape))

    def _redraw(self, name: str, draw: Callable[[tuple[builtins.int, ...]], Any]) -> Self:
        """Replace the elements with ``draw(shape)`` (a random op in place, node ``name``):
        the old values get an exact zero gradient, as in PyTorch."""
        from tapegrad.torch._prims import stepped

        return self._inplace(name, lambda a: stepped(a, draw(a.shape).astype(value(a).dtype, copy=False)))

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)  # type: ignore[return-value]  # (self: a Tensor)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)  # type: ignore[return-value]  # (self: a Tensor)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)  # type: ignore[return-value]  # (self: a Tensor)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)  # type: ignore[return-value]  # (self: a Tensor)

    def __ipow__(self, other: Any) -> Tensor:
        return self.pow_(other)  # type: ignore[return-value]  # (self: a Tensor)

    # --- in-place shape changes (``unsqueeze_``, ``squeeze_``, ``t_``) ---------------------------------
    def _reshaped_(self, r: Tensor, name: str) -> Self:
        """This tensor becomes ``r``, an out-of-place shape change of it, as node ``name``."""
        v = self._value
        if type(v) is Traced and v._level is GT and GT.active and self._grad_fn is None and v._node.prim is None:
            raise RuntimeError(LEAF_INPLACE)
        if self._views_a_grad_leaf():  # (x.t().unsqueeze_(0), as PyTorch refuses)
            raise RuntimeError(VIEW_LEAF_INPLACE)
        rv = r._value
        vc = counter_of(self)
        if type(rv) is Traced and rv._level is GT and rv._node.prim is not None and (
                type(v) is not Traced or rv._node is not v._node):  # (edges to the tensor as it was)
            named(rv._node, name, (self,), vc, vc.value + 1)
            self._grad_fn = None
            self._nr = 0
        self._value = rv
        self._rebased(v._node if type(v) is Traced else None)
        bump(self)
        return self

    def unsqueeze_(self, dim: builtins.int) -> Self:
        return self._reshaped_(self.unsqueeze(dim), "UnsqueezeBackward1")

    def squeeze_(self, dim: Any = None) -> Self:
        name = "SqueezeBackward3" if dim is None else "SqueezeBackward5" if isinstance(dim, (tuple, list)) \
            else "SqueezeBackward4"
        return self._reshaped_(self.squeeze() if dim is None else self.squeeze(dim), name)

    def t_(self) -> Self:
        return self._reshaped_(self.t(), "TBackward1")
