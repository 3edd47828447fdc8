"""``torch.autograd.Function``: user-defined forward and backward.

``apply`` runs ``forward`` with recording off, then records one tape entry
per output whose VJP calls the user's ``backward`` (once per cotangent).
Saved inputs keep their graph, so a ``backward`` written with tensor ops is
itself differentiable under ``create_graph=True``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.primitive import Primitive
from tapegrad.tape import next_index, pack_rules
from tapegrad.torch._graph import GT, FNode, Node, version_message
from tapegrad.torch._tensor import Tensor, _edge, _new, _v
from tapegrad.tracer import Traced, value


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, int]] = []
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True
        self.non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward`` (read them back with ``saved_tensors``)."""
        self._saved = [(t, t._vc.v if isinstance(t, Tensor) else 0) for t in tensors]

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        out = []
        for t, ver in self._saved:
            if type(t) is _SavedOutput:
                t = t.tensor()
            if isinstance(t, Tensor) and t._vc.v != ver:
                raise RuntimeError(version_message(t._value, t._vc.v, ver, getattr(t._value, '_node', None)))
            out.append(t)
        return tuple(out)

    def mark_dirty(self, *tensors: Any) -> None:
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable |= {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class _SavedOutput:
    """An output of ``forward`` saved for ``backward``, kept with a weak
    reference to its graph entry: the entry's rule holds ``ctx``, so holding
    the output tensor itself would be a cycle only the cyclic collector frees."""

    __slots__ = ("value", "entry", "vc")

    def __init__(self, t: Tensor) -> None:
        self.value = t._value._value
        self.entry = weakref.ref(t._value._node)
        self.vc = t._vc

    def tensor(self) -> Tensor:
        """The saved output as ``backward`` sees it (on the graph while it lives)."""
        entry = self.entry()
        t = _new(Traced(self.value, GT, entry) if entry is not None else self.value)
        t._vc = self.vc
        return t


class _FunctionNode(Node):
    __slots__ = ("_ctx",)

    def __repr__(self) -> str:
        return f"<torch.autograd.function.{self._name} object at {hex(id(self))}>"


class _FunctionMeta(type):
    forward: Callable[..., Any]  # defined by Function and its subclasses

    def __init__(cls, name: str, bases: Any, ns: dict[str, Any]) -> None:
        super().__init__(name, bases, ns)
        node_name = f"{name}Backward"
        cls._node_class = type(node_name, (_FunctionNode,), {"__slots__": (), "_name": node_name})
        cls._primitive = Primitive(cls.forward if "forward" in ns else (lambda *a: None), node_name)


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations.

    Example:
        >>> class Exp(torch.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         y, = ctx.saved_tensors
        ...         return g * y
        >>> Exp.apply(torch.tensor(1.0, requires_grad=True))
        tensor(2.7183, grad_fn=<ExpBackward>)
    """

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record ``backward`` as the rule of the result."""
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        prev = GT.active
        GT.active = False
        try:
            outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            GT.active = prev
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not (prev and any(ctx.needs_input_grad)):
            return outputs
        tensor_args = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
        diff = [(i, a) for i, a in tensor_args if a.requires_grad]
        parents = pack_rules([a._value._node for _, a in diff])
        node: Any = object.__new__(cls._node_class)
        node._edges = tuple(_edge(a) for _, a in tensor_args)
        node._core = None
        node._ctx = ctx
        n_out = len(outs)
        shapes: list[Any] = [(np.shape(value(_v(o))), np.result_type(value(_v(o)))) if isinstance(o, Tensor) else None
                  for o in outs]
        new_outs: list[Any] = []
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor) or o._value.dtype.kind not in "fc" or id(o) in ctx.non_differentiable:
                new_outs.append(o)
                continue
            cache: dict[str, Any] = {}

            def make(j: int, k: int = k, cache: dict[str, Any] = cache) -> Any:
                def vjp(g: Any) -> Any:
                    if cache.get("g") is not g:
                        gs: list[Tensor | None] = []
                        for m in range(n_out):
                            if m == k:
                                gs.append(_new(g))
                            elif shapes[m] is not None:
                                gs.append(_new(np.zeros(shapes[m][0], shapes[m][1])))
                            else:
                                gs.append(None)
                        res = cls.backward(ctx, *gs)
                        res = res if isinstance(res, tuple) else (res,)
                        cache["g"], cache["res"] = g, res
                    r = cache["res"][j] if j < len(cache["res"]) else None
                    if r is None:
                        a = args[j]
                        return np.zeros(a.shape, a._value.dtype)
                    return _v(r)

                return vjp

            arr = value(o._value)
            core = FNode(next_index(), arr.shape, arr.dtype, cls._primitive, parents,
                         pack_rules([make(i) for i, _ in diff]), (node, k))
            t = _new(Traced(arr, GT, core))
            t._grad_fn = node
            t._nr = k
            new_outs.append(t)
        remap = {id(o): n for o, n in zip(outs, new_outs) if n is not o}
        ctx._saved = [(t if id(t) not in remap else _SavedOutput(remap[id(t)]), ver) for t, ver in ctx._saved]
        return new_outs[0] if single else tuple(new_outs)


def once_differentiable(fn: Any) -> Any:
    return fn
