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

from tapegrad.core.primitive import Primitive
from tapegrad.core.tape import pack_rules
from tapegrad.core.traced import Traced, value
from tapegrad.torch._graph import GT, FacadeEntry, GradFn, counter_of, version_message, version_of
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _edge, _new, _v
from tapegrad.torch.autograd.forward_ad import _levels as _fw_levels
from tapegrad.torch.autograd.forward_ad import set_tangent, tangent_of


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, int]] = []
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True
        self.non_differentiable: set[int] = set()
        self._view: weakref.ref[Any] | None = None  # the outputs' grad_fn (see _Spec.view)

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward`` (read them back with ``saved_tensors``)."""
        self._saved = [(t, version_of(t) if isinstance(t, Tensor) else 0) for t in tensors]

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        out = []
        for t, ver in self._saved:
            if type(t) is _SavedOutput:
                t = t.tensor(self)
            if isinstance(t, Tensor) and version_of(t) != ver:
                raise RuntimeError(version_message(t._value, version_of(t), ver, getattr(t._value, '_node', None)))
            out.append(t)
        return tuple(out)

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for ``jvp`` (forward AD: read back with ``saved_tensors`` there)."""
        self._fw_saved = [(t, version_of(t) if isinstance(t, Tensor) else 0) for t in tensors]

    def mark_dirty(self, *tensors: Any) -> None:
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable |= {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class _Spec:
    """What rebuilds the graph entry of one output of a ``Function.apply``
    call: the class, the inputs' parent entries and ``next_functions`` edges,
    the outputs' shapes and dtypes, the zeros of inputs ``backward`` leaves
    without a gradient. It holds nothing that holds ``ctx`` (``ctx`` is passed
    in), so ``ctx`` may keep it without a reference cycle."""

    __slots__ = ("cls", "inputs", "edges", "diff", "lay", "shapes", "zeros")

    def __init__(self, cls: Any, inputs: tuple[Traced, ...], edges: tuple[Any, ...], diff: list[int],
                 lay: tuple[int | None, ...], shapes: list[Any], zeros: dict[int, Any]) -> None:
        self.cls = cls
        self.inputs = inputs
        self.edges = edges
        self.diff = diff
        self.lay = lay
        self.shapes = shapes
        self.zeros = zeros

    def view(self, ctx: FunctionCtx) -> Any:
        """The ``grad_fn`` of the outputs (made anew when they all are gone)."""
        node = ctx._view() if ctx._view is not None else None
        if node is None:
            node = object.__new__(self.cls._node_class)
            node._edges = self.edges
            node._core = None
            node._ctx = ctx
            ctx._view = weakref.ref(node)
        return node

    def entry(self, ctx: FunctionCtx, k: int, arr: Any) -> FacadeEntry:
        """A new graph entry for output ``k`` (value ``arr``) whose rules call
        ``backward`` with the cotangent in slot ``k``, zeros elsewhere."""
        cache: dict[str, Any] = {}
        shapes = self.shapes
        cls = self.cls
        zeros = self.zeros

        def make(j: int) -> Any:
            def vjp(g: Any) -> Any:
                if cache.get("g") is not g:
                    gs: list[Tensor | None] = []
                    for m, sh in enumerate(shapes):
                        if m == k:
                            gs.append(_new(g))
                        elif sh is not None:
                            gs.append(_new(np.zeros(sh[0], sh[1])))
                        else:
                            gs.append(None)
                    res = cls.backward(ctx, *gs)
                    res = res if isinstance(res, tuple) else (res,)
                    cache["g"], cache["res"] = g, res
                r = cache["res"][j] if j < len(cache["res"]) else None
                if r is None:
                    shape, dtype = zeros[j]
                    return np.zeros(shape, dtype)
                return _v(r)

            return vjp

        inputs = self.inputs
        out = GT.record(cls._primitive, arr, inputs, inputs, {}, range(len(inputs)),
                        pack_rules([make(i) for i in self.diff]), None, None, self.lay)
        entry: FacadeEntry = out._node
        entry.shared = (self.view(ctx), k)  # (every output's entry shows the one grad_fn)
        return entry


class _SavedOutput:
    """An output of ``forward`` saved for ``backward``.

    PyTorch keeps one node for all outputs of a ``Function``, alive while any
    output's graph is; here each output has its own entry, which dies with
    the output when unused (``Sinh.apply(x)[0]``). The entry is held weakly
    (its rules hold ``ctx``, which holds this: a strong reference would be a
    cycle only the cyclic collector frees); when it is gone, ``tensor``
    records a new one with the same rules, so a ``backward`` replayed with
    ``create_graph=True`` still differentiates through the saved output."""

    __slots__ = ("value", "entry", "vc", "k", "spec")

    def __init__(self, t: Tensor, k: int, spec: _Spec) -> None:
        self.value = t._value._value
        self.entry = weakref.ref(t._value._node)
        self.vc = counter_of(t)
        self.k = k
        self.spec = spec

    def tensor(self, ctx: FunctionCtx) -> Tensor:
        """The saved output as ``backward`` sees it: on the graph, through
        output ``k`` of the ``Function``, when grad mode is on."""
        entry = self.entry()
        if entry is None and GT.active:
            entry = self.spec.entry(ctx, self.k, self.value)
            self.entry = weakref.ref(entry)
        t = _new(Traced(self.value, GT, entry) if entry is not None else self.value)
        if entry is not None:
            t._grad_fn = self.spec.view(ctx)
            t._nr = self.k
        t._vc = self.vc
        return t


class _FunctionNode(GradFn):
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

    Examples:
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

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record ``backward`` as the rule of the result;
        under forward AD (``autograd.forward_ad``), with a ``jvp`` of the
        class's own, the outputs are duals whose tangents ``jvp`` gives."""
        if _fw_levels and cls.jvp is not Function.jvp:
            tangents = [tangent_of(a) for a in args]
            if any(t is not None for t in tangents):
                return cls._apply_jvp(args, kwargs, tangents)
        return cls._apply(FunctionCtx(), args, kwargs)

    @classmethod
    def _apply_jvp(cls, args: tuple[Any, ...], kwargs: dict[str, Any], tangents: list[Any]) -> Any:
        """Forward AD through ``jvp``: the outputs are new duals (their tangents ``jvp``'s)."""
        ctx = FunctionCtx()
        outputs = cls._apply(ctx, args, kwargs)
        ts = [None if not isinstance(a, Tensor) else t if t is not None else a.detach() * 0
              for a, t in zip(args, tangents, strict=True)]
        saved = ctx._saved
        ctx._saved = getattr(ctx, "_fw_saved", saved)
        try:
            out_t = cls.jvp(ctx, *ts)
        finally:
            ctx._saved = saved
        single = not isinstance(outputs, tuple)
        outs, out_ts = ((outputs,), (out_t,)) if single else (outputs, out_t)
        duals = []
        for o, t in zip(outs, out_ts, strict=True):
            if isinstance(o, Tensor) and t is not None:
                o = o.detach().requires_grad_(True)  # noqa: PLW2901
                set_tangent(o, t)
            duals.append(o)
        return duals[0] if single else tuple(duals)

    @classmethod
    def _apply(cls, ctx: FunctionCtx, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``apply`` (reverse mode) with ``ctx``."""
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
        diff = [i for i, a in tensor_args if a.requires_grad]
        # the entries' parents, as the tape's record takes them (values traced on it: here
        # their nodes alone, so that the spec keeps no input array alive)
        inputs = tuple([Traced(None, GT, args[i]._value._node) for i in diff])
        # each tensor input's parent entry (PyTorch numbers the node's outputs by them)
        lay = tuple(diff.index(i) if i in diff else None for i, _ in tensor_args)
        shapes: list[Any] = [(np.shape(value(_v(o))), np.result_type(value(_v(o)))) if isinstance(o, Tensor)
                             else None for o in outs]
        zeros = {i: (args[i].shape, args[i]._value.dtype) for i in diff}
        spec = _Spec(cls, inputs, tuple(_edge(a) for _, a in tensor_args), diff, lay, shapes, zeros)
        node = spec.view(ctx)
        new_outs: list[Any] = []
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor) or o._value.dtype.kind not in "fc" or id(o) in ctx.non_differentiable:
                new_outs.append(o)
                continue
            arr = value(o._value)
            t = _new(Traced(arr, GT, spec.entry(ctx, k, arr)))
            t._grad_fn = node
            t._nr = k
            new_outs.append(t)
        remap = {id(o): (k, n) for k, (o, n) in enumerate(zip(outs, new_outs)) if n is not o}
        ctx._saved = [(t if id(t) not in remap else _SavedOutput(remap[id(t)][1], remap[id(t)][0], spec), ver)
                      for t, ver in ctx._saved]
        return new_outs[0] if single else tuple(new_outs)


def once_differentiable(fn: Any) -> Any:
    return fn
