"""The facade's graph: grad mode, ``grad_fn`` nodes, what they saved and its versions.

There is one facade tape, ``GT`` (a ``tapegrad.core.graph_tape.GraphTape``): it
records while grad mode is on (its per-thread switch), and its graph is owned
by the values that reach it. ``grad_fn`` objects are views over its nodes:
one per facade op, named as PyTorch names them, with ``next_functions``
pointing at the ``grad_fn`` of each input (or the input's
``AccumulateGrad`` when it is a leaf). ``backward`` is the tape's reverse
walk (``tapegrad.core.tape.backprop``) seeded at the root (``_backward.py``).
"""

from __future__ import annotations

import functools
import re
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy import ndarray

from tapegrad.core.graph_tape import (
    FRESH_REFS,
    GraphTape,
)
from tapegrad.core.tape import Entry, next_index, parents_of
from tapegrad.core.traced import Traced, value
from tapegrad.torch._storage import (  # noqa: F401  (bump, counter_of, version_of: the facade's API here too)
    VersionCounter,
    _counter_held,
    _counters,
    _last_bump,
    bump,
    counter_of,
    version_of,
)


class FacadeEntry(Entry):
    """An entry of the facade tape: a tape entry plus what its ``grad_fn`` view needs.

    Every facade op's entry has this one form: the fast paths pass it to
    ``FacadeTape.record``; a general op's ``_result`` (``_naming.named``)
    writes it on the entry its primitive recorded. The ``grad_fn`` view is
    made from it when first asked for (``view_of``) and ``check_versions``
    reads it; nothing else is kept of the node. No field refers to the
    entry's own ``grad_fn`` view (but weakly) or to the tensor it made (both refer to the entry): a graph is
    freed by reference counting alone.

    - ``name``: the PyTorch node name (``"MulBackward0"``), or None for an
      entry no facade op named (a step inside a composite op, an entry a
      transform made: ``core_view`` names it after its primitive).
    - ``shared``: for one output of a multi-output op, ``(view, output_nr)``:
      the ``grad_fn`` all its outputs share (it refers to no entry); unset
      otherwise.
    - ``held_inputs``: the op's inputs in PyTorch's edge order, as the entry
      keeps them (see ``held``): None for a scalar (or an input that is not
      kept: the tensor an in-place op changes), the version counter of a
      non-leaf tensor (or the entry that made it, while it has none), the
      tensor itself otherwise; a bare input (not a tuple) is the first, any
      others being None (see ``inputs_of``: most ops have one tensor input,
      and a tuple per op is an allocation the cyclic collector would scan).
    - ``input_parents``: for each input, where its edge goes: None (no
      edge); an int, the index of its entry among this entry's parents; the
      input's entry itself, when it is not a parent (an op composed of
      several entries: its inputs are parents of the first ones); ``(name,
      item)``: an edge through a one-input node ``name`` that the op fused
      in (``nn.Linear`` fuses ``weight.t()``; an index chains them), ``item``
      being any of these (see ``parent_at``, ``edge_at``).
    - ``input_versions``: the inputs' versions when the op ran (None: all
      0), and, one item longer, the version the op's output is expected at
      (an in-place op's: one past its input's; else 0). Its output's counter is
      ``_counters[entry]`` (made with the tensor's, or given by the op).
    - ``view``: a weak reference to the ``grad_fn`` view, once one was made.
    - ``attrs``: the op's arguments PyTorch's node saves besides tensors
      (``{"dim": (1,), "keepdim": False}``), set by ``note_attrs``;
      ``grad_fn._saved_dim`` reads them.

    Unset slots cost the hot path nothing: readers use ``getattr(entry, name, None)``.
    """

    __slots__ = ("name", "shared", "held_inputs", "input_parents", "input_versions", "view", "attrs")
    name: str | None
    shared: tuple[Any, int]
    held_inputs: Any
    input_parents: Any
    input_versions: tuple[int, ...] | None
    view: weakref.ReferenceType[Any] | None
    attrs: dict[str, Any]


# The observers of recording: each is called with every new facade entry
# (anomaly mode keeps its traceback, saved_tensors_hooks packs what it saved).
# Empty while nobody observes: recording then reads one list's truth value.
observers: list[Callable[[FacadeEntry], None]] = []


def add_observer(fn: Callable[[FacadeEntry], None]) -> None:
    """Have the facade's ``record`` call ``fn`` with each new entry (once, however often added)."""
    if fn not in observers:
        observers.append(fn)


def remove_observer(fn: Callable[[FacadeEntry], None]) -> None:
    """Stop calling ``fn`` on record (nothing happens if it is not observing)."""
    if fn in observers:
        observers.remove(fn)


class FacadeTape(GraphTape):
    """The facade's tape: a ``GraphTape`` whose entries are ``FacadeEntry``."""

    def record(self, prim: Any, ans: Any, args: Sequence[Any], raw: Sequence[Any], kwargs: dict[str, Any],
               argnums: Sequence[int], vjps: Any = None, name: str | None = None, held_inputs: Any = None,
               input_parents: Any = None, input_versions: tuple[int, ...] | None = None) -> Traced:
        """``GraphTape.record`` for the facade: the entry also keeps
        PyTorch's node data (``name``, ``held_inputs``, ``input_parents``,
        ``input_versions``: see ``FacadeEntry``; a general op writes them
        when it returns, ``_naming.named``). Given
        ``vjps``, those are the entry's rules and none is made (an operator's
        rule cached per scalar). A NumPy scalar result becomes a 0-d array
        (tensors hold arrays).

        The facade's every entry is made here; this is its per-op cost, so
        the entry and the value are built field by field (a class call costs
        as much as all the stores)."""
        if type(ans) is not ndarray and isinstance(ans, np.generic):
            ans = np.asarray(ans)
        res = None
        node: FacadeEntry = _new_obj(FacadeEntry)
        if len(argnums) == 1:  # one parent: GraphTape.rules unrolled here (-0.06 us an op, measured)
            i = argnums[0]
            node.parents = p = args[i]._node
            out = _new_obj(Traced)
            out._value = ans
            out._level = self
            if vjps is None:
                maker = prim.vjps.get(i) or prim.vjp_maker(i)
                # (with the arguments spelled out: a call with *args costs 55 ns more)
                if kwargs:
                    vjps = maker(out, *args, **kwargs)
                elif len(args) == 1:
                    vjps = maker(out, args[0])
                elif len(args) == 2:
                    vjps = maker(out, args[0], args[1])
                else:
                    vjps = maker(out, *args)
                if _refcount(out) > FRESH_REFS:  # the rule keeps the output: a twin (see GraphTape.rules)
                    res = Traced(ans, self, None)
                    vjps = maker(res, *args, **kwargs)
            # (an elementwise op's entry keeps its parent's shape tuple: one
            # object less per op for the cyclic collector to walk)
            shape = ans.shape
            node.shape = p.shape if shape == p.shape else shape
        else:  # (the class's attributes, not self's: a thread-local's cost more)
            if vjps is None:
                out, vjps, res = GraphTape.rules(self, prim, ans, args, kwargs, argnums)
            else:
                out = Traced(ans, self, None)
            if len(argnums) == 2:
                i, j = argnums
                node.parents = (args[i]._node, args[j]._node)
            else:
                node.parents = _nodes_of(args, argnums)
            node.shape = ans.shape
        node.name = name
        node.index = next_index()
        node.dtype = ans.dtype
        node.prim = prim
        node.vjps = vjps
        node.held_inputs = held_inputs
        node.input_parents = input_parents
        node.input_versions = input_versions
        out._node = node
        if res is not None:
            node.res = res
        if observers:
            for fn in tuple(observers):
                fn(node)
        return out


_new_obj = object.__new__
_refcount = sys.getrefcount


def _nodes_of(args: Sequence[Any], argnums: Sequence[int]) -> tuple[Any, ...]:
    """The entries of ``args[i]`` for ``i`` in ``argnums``. (A function of its
    own: a comprehension in ``FacadeTape.record`` would make ``args`` a closure
    cell, built on every op.)"""
    return tuple([args[i]._node for i in argnums])


GT = FacadeTape()  # the facade's one tape: level 0, recording while grad mode is on
# GT.record, for the facade's fast paths: an attribute of a thread-local costs
# more to look up than a module global (0.1 us per op, measured)
record = FacadeTape.record

# --- version counters --------------------------------------------------------------------------


# --- grad_fn nodes ------------------------------------------------------------------------------


class GradFn:
    """A node of the backward graph (``grad_fn``): ``name()``, ``next_functions``."""

    # ``_core``: the tape entry the view shows (None for a node that exists
    # only as a view); what the op saved is listed on the entry, not here
    __slots__ = ("_edges", "_core", "__weakref__")
    _edges: tuple[tuple[Any, int], ...]
    _core: Any
    _name = "Node"

    def name(self) -> str:
        """The PyTorch name of this node (``"MulBackward0"``)."""
        return self._name

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """One ``(node_or_None, output_index)`` per input, in PyTorch's order."""
        return tuple((_edge_node(t), nr) for t, nr in self._edges)

    @property
    def metadata(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def __dir__(self) -> list[str]:
        """The attributes, with the ``_saved_*`` ones PyTorch's node of this name has."""
        names = list(super().__dir__())
        lister = _saved_reader[1]
        return names + (lister(self) if lister is not None else [])

    def __getattr__(self, name: str) -> Any:
        """``_saved_self``, ``_saved_result``... (the reader ``autograd/graph.py``
        registers with ``set_saved_reader``); only called on a miss."""
        reader = _saved_reader[0]
        if name.startswith(("_saved_", "_raw_saved_")) and reader is not None:
            return reader(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def register_hook(self, fn: Callable[..., Any]) -> Any:
        raise NotImplementedError("tapegrad.torch: hooks on grad_fn nodes are not supported; "
                                  "use Tensor.register_hook")

    register_prehook = register_hook


# the number exponent of each ``x ** c`` entry (PyTorch's ``_saved_exponent``: the rules
# keep c * x ** (c - 1)); written by ``Tensor.__pow__``, read by ``grad_fn._saved_exponent``
exponents: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

# what reads grad_fn._saved_* and what lists them (tapegrad/torch/autograd/graph.py registers them)
_saved_reader: list[Any] = [None, None]


def set_saved_reader(fn: Callable[[Any, str], Any], lister: Callable[[Any], list[str]] | None = None) -> None:
    """Have ``grad_fn._saved_<name>`` read by ``fn(grad_fn, "_saved_<name>")``
    and ``dir(grad_fn)`` list ``lister(grad_fn)`` too."""
    _saved_reader[0] = fn
    _saved_reader[1] = lister


def as_saved_dim(dim: Any) -> Any:
    """A dimension argument as PyTorch's node saves it: as given, a negative
    one as its unsigned 64-bit image (``-1`` -> ``2**64 - 1``), a list as a tuple."""
    if isinstance(dim, (list, tuple)):
        return tuple(as_saved_dim(d) for d in dim)
    return int(dim) + 2**64 if dim < 0 else int(dim)


def note_attrs(t: Any, **attrs: Any) -> Any:
    """Keep ``attrs`` (the op's arguments PyTorch's node saves: ``dim``,
    ``keepdim``..., as the op was given them; ``grad_fn._saved_*`` converts
    them as PyTorch saves them) on the facade entry that made tensor ``t``;
    returns ``t``."""
    v = t._value
    if type(v) is Traced and type(v._node) is FacadeEntry:
        v._node.attrs = attrs
    return t


def _edge_node(t: Any) -> Any:
    if t is None or isinstance(t, GradFn):
        return t
    if isinstance(t, Entry):  # an entry whose view is made when first asked for
        return view_of(t)
    return t._accumulate_grad()  # a leaf tensor


@functools.cache
def node_class(name: str) -> type[GradFn]:
    """The ``grad_fn`` class of a PyTorch node name (one class per name).
    Nodes PyTorch writes in C++ (``CopySlices``) give ``name()`` with their
    namespace, as ``AccumulateGrad`` does."""
    qualified = f"torch::autograd::{name}" if name in _CPP_NODES else name
    return type(name, (GradFn,), {"__slots__": (), "_name": qualified})


_CPP_NODES = frozenset({"CopySlices", "CopyBackwards"})


class AccumulateGrad(GradFn):
    """The node that accumulates into a leaf's ``.grad``; ``.variable`` is the leaf."""

    __slots__ = ("variable",)
    _name = "torch::autograd::AccumulateGrad"

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self._edges = ()
        self._core = None

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


# Prim name -> node name for tape entries no facade op made (``create_graph``):
# the op table's rows (``_ops.py``) register theirs with ``register_core_name``;
# these are the entries no row names.
_CORE_NAMES = {
    "power": "PowBackward1", "sum": "SumBackward1", "sum_to": "SumToSizeBackward0",
    "getitem": "IndexBackward0", "index_add": "IndexPutBackward0", "setitem": "CopySlices",
    "cast": "ToCopyBackward0", "astype": "ToCopyBackward0", "concatenate": "CatBackward0",
    "where": "WhereBackward0",
}


def register_core_name(prim: str, node: str) -> None:
    """Name the entries of primitive ``prim`` ``node`` (an op table row's names)."""
    _CORE_NAMES.setdefault(prim, node)


def core_name(prim: Any) -> str:
    """A PyTorch-style node name for a tape entry no facade op made (``create_graph``)."""
    name = prim.name
    if name in _CORE_NAMES:
        return _CORE_NAMES[name]
    return "".join(p.capitalize() for p in name.split("_")) + "Backward0"


def view_of(core: Any) -> GradFn:
    """The ``grad_fn`` of the tensor that tape entry ``core`` made, built from
    the entry when first asked for. The entry keeps it weakly: the view refers
    to the entry, so a strong reference back would make a cycle. While
    anything holds the view (its tensor, a later op's ``next_functions``),
    asking again gives the same object."""
    if type(core) is not FacadeEntry:
        return core_view(core)
    shared = getattr(core, "shared", None)
    if shared is not None:
        return shared[0]  # type: ignore[no-any-return]
    ref = getattr(core, "view", None)
    if ref is not None:
        view = ref()
        if view is not None:
            return view  # type: ignore[no-any-return]
    if core.name is None:
        return core_view(core)
    view = object.__new__(node_class(core.name))
    parents = parents_of(core)
    edges = tuple([(None, 0) if j is None else edge_of(parents[j], x) if type(j) is int else edge_at(parents, j, x)
                   for x, j in zip(inputs_of(core), core.input_parents)])
    view._edges = edges
    view._core = core
    core.view = weakref.ref(view)
    return view  # type: ignore[no-any-return]


def inputs_of(core: FacadeEntry) -> tuple[Any, ...]:
    """The ``ins`` of facade entry ``core`` as a tuple, one item per ``lay`` item."""
    ins = core.held_inputs
    if type(ins) is tuple:
        return ins
    return (ins,) + (None,) * (len(core.input_parents) - 1)


def parent_at(parents: Sequence[Any], j: Any) -> Any:
    """The entry an ``input_parents`` item ``j`` (not None) leads to, given the entry's ``parents``."""
    while type(j) is tuple:
        j = j[1]
    return parents[j] if type(j) is int else j


def edge_at(parents: Sequence[Any], j: Any, x: Any = None) -> tuple[Any, int]:
    """The ``next_functions`` edge of ``input_parents`` item ``j`` (not None),
    given the entry's ``parents``; ``x``: the input as held (see ``edge_of``)."""
    if type(j) is tuple:
        return fused_edge(j[0], edge_at(parents, j[1], x))
    return edge_of(parents[j] if type(j) is int else j, x)


def fused_edge(name: str, edge: tuple[Any, int]) -> tuple[Any, int]:
    """An edge to a one-input node ``name`` (with ``edge`` as its own) that an
    op fused in: it exists only as a view, the entry's rules do its work."""
    view: Any = object.__new__(node_class(name))
    view._edges = (edge,)
    view._core = None
    return (view, 0)


def held(x: Any) -> Any:
    """What a graph entry keeps of its input tensor ``x``: for a non-leaf,
    its version counter only (its value is kept by the rules that need it,
    so an intermediate result is freed once nothing needs it any more), or,
    while it has none, the entry that made it (see ``counter_of``); else the
    tensor (a leaf: its ``AccumulateGrad`` shows it; a constant: its value is
    matched against what the rules saved)."""
    v = x._value
    if type(v) is Traced and v._node.prim is not None:
        vc = x._vc
        return v._node if vc is None else vc
    return x


def edge_of(p: Any, x: Any = None) -> tuple[Any, int]:
    """The ``next_functions`` edge to parent entry ``p``: its tensor's grad_fn
    (with the output number), or what makes it when asked for: the entry
    itself (its view) or, for a leaf, the leaf tensor (its ``AccumulateGrad``);
    ``x`` is the input tensor the op saw, used for a leaf nobody registered."""
    if p.prim is None:
        t = leaf_tensor(p.index)
        if t is None and x is not None and is_traced_on_gt(x._value) and x._value._node is p:
            t = x
        return (t, 0)
    if type(p) is FacadeEntry:
        shared = getattr(p, "shared", None)
        if shared is not None:
            return shared  # type: ignore[no-any-return]
        ref = getattr(p, "view", None)
        view = ref() if ref is not None else None
        if view is not None:
            return (view, 0)
    return (p, 0)  # the view is made when next_functions reads it


def core_view(core: Any) -> GradFn:
    """The ``grad_fn`` view of a tape entry no facade op made (kept weakly on
    the entry, as ``view_of`` keeps its views)."""
    ref = getattr(core, "view", None)
    node = ref() if ref is not None else None
    if node is None:
        name = core_name(core.prim)
        if name == "SumToSizeBackward0":  # a broadcast gradient summed back (create_graph)
            name = _sum_to_name(core)
        node = object.__new__(node_class(name))
        edges = []
        for p in parents_of(core):
            if p.prim is not None:
                edges.append((core_view(p), 0))
            else:
                edges.append((leaf_tensor(p.index), 0))
        node._edges = tuple(edges)
        node._core = core
        if type(core) is FacadeEntry:
            core.view = weakref.ref(node)
    return node


def _sum_to_name(core: Any) -> str:
    """The node PyTorch's ``sum_to`` ends with when it sums a broadcast
    gradient back to an operand's shape: ``ViewBackward0`` when leading axes
    go, else ``SumBackward1`` (a sum with ``keepdim``). (PyTorch has both
    nodes; the facade one entry, named as the top one.)"""
    parents = parents_of(core)
    return "ViewBackward0" if len(parents) == 1 and len(parents[0].shape) > len(core.shape) else "SumBackward1"


# leaf tensors that require grad, by tape index (the backward walk accumulates into them)
_leaves: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def register_leaf(t: Any) -> None:
    _leaves[t._value._node.index] = t


def leaf_tensor(index: int) -> Any:
    return _leaves.get(index)


class HookHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook away."""

    def __init__(self, store: list[Any], fn: Any) -> None:
        self._store = store
        self._fn = fn

    def remove(self) -> None:
        if self._fn in self._store:
            self._store.remove(self._fn)


# tensor hooks and retain_grad, by tape node (weakly: they go with the graph)
tensor_hooks: weakref.WeakKeyDictionary[Any, list[Callable[[Any], Any]]] = weakref.WeakKeyDictionary()


# --- saved tensors and their versions -----------------------------------------------------------


# What PyTorch's backward of each node saves, by node name (registered from the
# op table, ``_ops.py``): ``(positions, result)``; ``positions`` pairs an edge
# position (``next_functions`` order: an entry's ``held_inputs`` / its view's
# edges) with the edge position whose gradient needs it (None: saved whenever
# the node is made; PyTorch saves a value only for the gradients it will
# compute); ``result``: the node's output is saved. A name with no declaration
# saves nothing that is checked (an entry inside a composite op has no name).
SAVES: dict[str, tuple[tuple[tuple[int, int | None], ...], bool]] = {}


def register_saves(name: str, spec: str) -> None:
    """Declare what node ``name``'s backward saves: ``spec`` lists edge
    positions (``"0 1"``), ``"k<j"`` for position ``k`` saved only when edge
    ``j`` requires grad, and ``out`` for the result (``"1<0 0<1"``: mul)."""
    pos: list[tuple[int, int | None]] = []
    out = False
    for tok in spec.split():
        if tok == "out":
            out = True
        else:
            k, _, j = tok.partition("<")
            pos.append((int(k), int(j) if j else None))
    decl = (tuple(pos), out)
    if SAVES.setdefault(name, decl) != decl:
        raise RuntimeError(f"tapegrad.torch: two declarations of what {name} saves")


class _Meta:
    """The shape and dtype of a saved value, for its error message."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Any, dtype: Any) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype


def _meta(x: Any) -> _Meta:
    v = x if isinstance(x, Entry) else value(x)
    return _Meta(np.shape(v) if not isinstance(v, Entry) else v.shape, v.dtype)


def _saves(decl: tuple[tuple[tuple[int, int | None], ...], bool],
           has_edge: Callable[[int], bool]) -> tuple[set[int], bool]:
    """The edge positions a node declared ``decl`` saved, given which edges
    exist (require grad), and whether it saved its result."""
    return {k for k, j in decl[0] if j is None or has_edge(j)}, decl[1]


def check_versions(order: list[Any]) -> None:
    """Raise PyTorch's error when a tensor an entry of ``order`` saved (as
    ``SAVES`` declares for its node name) was modified in place after
    the entry was recorded."""
    for core in order:
        if type(core) is not FacadeEntry or not core.vjps:
            continue
        name = core.name
        if not name:  # one output of a multi-output op: its shared view's name
            shared = getattr(core, "shared", None)
            name = shared[0].name() if shared is not None else None
        decl = SAVES.get(name) if name else None
        if decl is None:
            continue
        parents = core.input_parents
        pos, out = _saves(decl, lambda j: j < len(parents) and parents[j] is not None)
        vers = core.input_versions
        for k, x in enumerate(inputs_of(core)):
            if x is None or k not in pos:
                continue
            ver = vers[k] if vers else 0
            vc = _counter_held(x)
            if vc is not None and vc.value != ver:
                j = parents[k]
                origin = None if j is None else parent_at(parents_of(core), j)
                meta = _meta(x._value if hasattr(x, "_value") else origin)  # (a tensor held, or a parent)
                view = type(j) is tuple  # saved as the fused view (``weight.t()``)
                if view and j[0] == "TBackward0":
                    meta.shape = meta.shape[::-1]
                raise _version_error(core, version_message(meta, vc.value, ver, origin, vc, view=view))
        if out:  # the result itself was modified in place
            vc = _counters.get(core)
            ver = vers[len(parents)] if vers and len(vers) > len(parents) else 0
            if vc is not None and vc.value != ver:
                raise _version_error(core, version_message(_meta(core), vc.value, ver, core))

# what anomaly mode does when the backward of an entry meets a saved value changed
# in place (it warns with the entry's forward traceback); None while it is off
version_error_hook: list[Callable[[Any], None] | None] = [None]
_ANOMALY_HINT = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                 "The variable in question was changed in there or anywhere later. Good luck!")


def _version_error(core: Any, message: str) -> RuntimeError:
    """The error for entry ``core``'s saved value changed in place: with
    anomaly mode on, its warning first and PyTorch's hint for that case."""
    hook = version_error_hook[0]
    if hook is None:
        return RuntimeError(message)
    hook(core)
    return RuntimeError(message[:message.index("Hint: ")] + _ANOMALY_HINT)


# PyTorch's C++ names of the scalar types, as its error messages spell them
SCALAR_TYPE = {"float16": "Half", "float32": "Float", "float64": "Double", "int32": "Int", "int64": "Long",
               "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int16": "Short",
               "int8": "Char", "uint8": "Byte"}


def version_message(val: Any, now: int, expected: int, origin: Any = None, vc: Any = None, *,
                    view: bool = False) -> str:
    """PyTorch's error for saved value ``val`` changed in place (at version
    ``now``, saved at ``expected``); ``origin``: the tape node that made it
    (None or a leaf: no "which is output ... of" clause); ``vc``: the version
    counter of a saved input (see ``_made_by``); ``view``: what was saved is a
    view of ``origin`` (PyTorch names it by its regenerated ``AsStrided``)."""
    v = val if isinstance(val, (_Meta, Entry)) else value(val)
    kind = SCALAR_TYPE.get(np.dtype(v.dtype).name, "Float")
    shape = ", ".join(str(s) for s in (v.shape if isinstance(v, (_Meta, Entry)) else np.shape(v)))
    made = _made_by(origin, vc)
    if view and made:
        made = ", which is output 0 of AsStrided,"
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [torch.{kind}Tensor [{shape}]]{made} is at version {now}; expected "
        f"version {expected} instead. Hint: enable anomaly detection to find the operation "
        "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


# grad_fn names of the ops whose results are views of their input: a view
# changed in place reads back as PyTorch's AsStrided
_VIEW_NODES = frozenset({
    "AliasBackward0", "AsStridedBackward0", "DiagonalBackward0", "ExpandBackward0", "PermuteBackward0",
    "ReshapeAliasBackward0", "SelectBackward0", "SliceBackward0", "SplitBackward0", "SplitWithSizesBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2", "TBackward0", "TransposeBackward0",
    "UnbindBackward0", "UnsqueezeBackward0", "ViewBackward0",
})


def _made_by(origin: Any, vc: Any = None) -> str:
    """``", which is output 0 of Exp,"``: the op that made a saved value (for
    an input saved with version counter ``vc``, the last in-place op on it),
    as PyTorch's version error names it ("" for a leaf)."""
    if not isinstance(origin, Entry) or origin.prim is None:
        return ""
    nr = 0
    shared = getattr(origin, "shared", None)
    if shared is not None:
        name, nr = shared[0].name(), shared[1]
    else:
        name = getattr(origin, "name", None) or core_name(origin.prim)
    if name in _VIEW_NODES:
        name, nr = "AsStrided", 0
    elif vc is not None and vc.last_inplace is not None:
        name, nr = vc.last_inplace, 0
    if name in _CPP_NODES:
        name = f"torch::autograd::{name}"
    # (PyTorch drops "Backward0" and keeps another overload's number: "Pow1")
    return f", which is output {nr} of {re.sub(r'Backward0?', '', name)},"


def is_traced_on_gt(v: Any) -> bool:
    return type(v) is Traced and v._level is GT
