"""``torch.autograd.graph``: ``Node``, ``saved_tensors_hooks``, ``save_on_cpu``,
and the ``grad_fn._saved_*`` attributes.

What a node saved is what its tape entry's rules keep (their closures hold
the input and output values PyTorch's backward of that node reads, as
``_graph.SAVES`` declares); ``grad_fn._saved_self`` (``_saved_other``,
``_saved_result``, ``_saved_exponent``, ``_saved_mat2`` ...) reads them back, as a
tensor (the leaf itself, for a leaf input).

``saved_tensors_hooks(pack, unpack)``: each op recorded inside the context
has ``pack`` called on each tensor its node saves (in the order of the
node's inputs, the result last), and each time backward runs the node,
``unpack`` on each packed object. The node's rules then run with what
``unpack`` returned in place of the values they kept (their closures' cells
are swapped for the call, and back after it), so, as in PyTorch, an
``unpack`` that returns another tensor changes the gradient. A rule that
computed its factor when recorded (``x ** c`` keeps ``c * x ** (c - 1)``)
does not see the swap. Packing saves no memory: the rules keep their values.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.core.tape import Entry, parents_of
from tapegrad.core.traced import Traced
from tapegrad.torch import _backward, _graph
from tapegrad.torch._graph import SAVES, FacadeEntry, GradFn, inputs_of
from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

Node = GradFn  # (PyTorch's name of the grad_fn type)

# the saved-attribute names of PyTorch's nodes -> edge position (-1: the result)
_POSITIONS = {"self": 0, "input": 0, "other": 1, "mat2": 1, "vec": 1, "exponent": 1, "tensor1": 1,
              "tensor2": 2, "weight": 1, "end": 1, "result": -1, "target": 1}


def _rules(core: Any) -> list[Any]:
    vjps = core.vjps
    if vjps is None:
        raise RuntimeError(_backward.SECOND_BACKWARD)
    return list(vjps) if type(vjps) is tuple else [vjps]


def _closure(fn: Any, depth: int = 3) -> list[Any]:
    """The values the closure of rule ``fn`` holds (nested rules' too)."""
    fn = getattr(fn, "_tg_wrapped", fn)
    out: list[Any] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if callable(v) and depth and not isinstance(v, type):
            out += _closure(v, depth - 1)
        elif type(v) in (tuple, list):
            out += list(v)
        else:
            out.append(v)
    return out


def _find(core: Any, node: Any) -> Any:
    """The traced value of tape node ``node`` that ``core``'s rules keep (None: none)."""
    for fn in _rules(core):
        for v in _closure(fn):
            if type(v) is Traced and v._node is node:
                return v
    if node is core and getattr(core, "res", None) is not None:  # (the rules' twin of the output)
        return Traced(core.res._value, _graph.GT, core)
    return None


# the tensor last given for each saved value's tape node, while it lives: as in
# PyTorch, a value saved twice (``y * y``) reads back as one tensor object
_given: dict[int, weakref.ReferenceType[Any]] = {}


def _unpacked(v: Any) -> Any:
    """A tensor of saved traced value ``v``: the one given before for its node while it lives."""
    key = id(v._node)
    ref = _given.get(key)
    t = ref() if ref is not None else None
    if t is not None and type(t._value) is Traced and t._value._node is v._node:
        return t
    t = _new(v)

    def forget(r: Any, key: int = key) -> None:
        if _given.get(key) is r:
            del _given[key]

    _given[key] = weakref.ref(t, forget)
    return t


def _saved(grad_fn: Any, k: int) -> Any:
    """The value node ``grad_fn`` saved for edge position ``k`` (-1: its result)."""
    core = grad_fn._core
    if core is None:
        raise AttributeError(f"'{type(grad_fn).__name__}' object has no saved values")
    if k == -1:
        v = _find(core, core)
        if v is None:
            raise AttributeError(f"'{type(grad_fn).__name__}' object has no attribute '_saved_result'")
        return _new(v)  # (a fresh tensor each time, as PyTorch unpacks a saved output)
    lay = getattr(core, "input_parents", None)
    j: Any = lay[k] if lay is not None and k < len(lay) else k
    ins = inputs_of(core) if type(core) is FacadeEntry and core.held_inputs is not None else ()
    if k < len(ins) and isinstance(ins[k], Tensor):
        _rules(core)  # (freed: the error)
        return ins[k].t() if _transposed(j) else ins[k]
    parents = parents_of(core)
    if isinstance(j, Entry):  # an input of a composite op (a parent of one of its steps)
        if j.prim is None:
            leaf = _graph.leaf_tensor(j.index)
            if leaf is not None:
                _rules(core)
                return leaf
        v = _find_inside(core, j)
        if v is not None:
            _rules(core)
            return _unpacked(v)
    if _transposed(j) and j[1] < len(parents):  # a transposed view the op fused in
        p = parents[j[1]]
        base = _graph.leaf_tensor(p.index) if p.prim is None else None
        if base is None:
            v = _find(core, p)
            base = None if v is None else _unpacked(v)
        if base is not None:
            _rules(core)
            return base.t()
    if type(j) is int and j < len(parents):
        p = parents[j]
        if p.prim is None:  # a leaf: the tensor itself
            leaf = _graph.leaf_tensor(p.index)
            if leaf is not None:
                _rules(core)
                return leaf
        v = _find(core, p)
        if v is not None:
            return _unpacked(v)
    if k == 1 and core in _graph.exponents:  # ``x ** 2``: the number PyTorch saved
        _rules(core)
        return _graph.exponents[core]
    raise AttributeError(f"'{type(grad_fn).__name__}' object has no saved value at position {k}")


# The ``_saved_*`` attributes of PyTorch 2.13's nodes (``dir(grad_fn)``), as torch lists them
_SAVED_NAMES: dict[str, tuple[str, ...]] = {
    "AddBackward0": ("alpha",), "SubBackward0": ("alpha",), "RsubBackward1": ("alpha",),
    "MulBackward0": ("other", "self"), "DivBackward0": ("other", "self"),
    "MmBackward0": ("mat2", "mat2_sym_sizes", "mat2_sym_strides", "self", "self_sym_sizes", "self_sym_strides"),
    "AddmmBackward0": ("alpha", "beta", "mat1", "mat1_sym_sizes", "mat1_sym_strides", "mat2", "mat2_sym_sizes",
                       "mat2_sym_strides"),
    "MvBackward0": ("self", "vec"),
    "TanhBackward0": ("result",), "SigmoidBackward0": ("result",), "ExpBackward0": ("result",),
    "ReluBackward0": ("result",), "SqrtBackward0": ("result",), "LogBackward0": ("self",), "SinBackward0": ("self",),
    "CosBackward0": ("self",), "AbsBackward0": ("self",), "Log1PBackward0": ("self",),
    "PowBackward0": ("exponent", "self"), "PowBackward1": ("exponent", "result", "self"),
    "SumBackward0": ("self_sym_sizes",), "SumBackward1": ("dim", "keepdim", "self_sym_sizes"),
    "MeanBackward0": ("self_sym_numel", "self_sym_sizes"),
    "MeanBackward1": ("dim", "keepdim", "self_sym_numel", "self_sym_sizes"),
    "ViewBackward0": ("self_sym_sizes",), "ExpandBackward0": ("self_sym_sizes",),
    "UnsafeViewBackward0": ("self_sym_sizes",), "TransposeBackward0": ("dim0", "dim1"),
    "SoftmaxBackward0": ("dim", "result"), "LogSoftmaxBackward0": ("dim", "result"),
    "CatBackward0": ("dim",), "StackBackward0": ("dim",), "MaxBackward1": ("result", "self"),
    "PermuteBackward0": ("dims",), "UnsqueezeBackward0": ("dim",), "SqueezeBackward1": ("dim", "self_sym_sizes"),
    "SqueezeBackward2": ("dim", "self_sym_sizes"), "SqueezeBackward0": ("self_sym_sizes",),
    "SqueezeBackward4": ("dim", "self_sym_sizes"),
    "MseLossBackward0": ("reduction", "self", "target"),
    "BinaryCrossEntropyWithLogitsBackward0": ("pos_weight", "reduction", "self", "target", "weight"),
}
# edge positions of tensor attributes where a node's differ from ``_POSITIONS``
_NODE_POSITIONS: dict[str, dict[str, int]] = {
    "AddmmBackward0": {"mat1": 1, "mat2": 2}, "MseLossBackward0": {"target": 1},
    "BinaryCrossEntropyWithLogitsBackward0": {"target": 1, "weight": 2, "pos_weight": 3},
}
_DIM_LISTS = frozenset({"SumBackward1", "MeanBackward1"})  # nodes that save ``dim`` as a list
_DEFAULTS = {"alpha": 1, "beta": 1, "reduction": 1}  # (PyTorch's enum: 1 is "mean")
_MISSING = object()


def _transposed(j: Any) -> bool:
    """Whether ``input_parents`` item ``j`` is a transposed view of a parent
    that the op fused in (``weight.t()`` in ``F.linear``)."""
    return type(j) is tuple and j[0] == "TBackward0" and type(j[1]) is int


def _input_shape(core: Any, k: int) -> tuple[tuple[int, ...], bool] | None:
    """The shape of node ``core``'s input at edge position ``k``, and whether
    it is a transposed view the op fused in (``weight.t()`` in ``F.linear``)."""
    lay = getattr(core, "input_parents", None)
    j: Any = lay[k] if lay is not None and k < len(lay) else k
    ins = inputs_of(core) if type(core) is FacadeEntry and core.held_inputs is not None else ()
    if k < len(ins) and isinstance(ins[k], Tensor):
        return tuple(ins[k].shape)[::-1] if _transposed(j) else tuple(ins[k].shape), _transposed(j)
    parents = parents_of(core)
    if isinstance(j, Entry):
        return tuple(j.shape), False
    if type(j) is int and j < len(parents):
        return tuple(parents[j].shape), False
    if _transposed(j) and j[1] < len(parents):
        return tuple(parents[j[1]].shape)[::-1], True
    return None


def _strides(shape: tuple[int, ...], transposed: bool) -> tuple[int, ...]:
    """Contiguous strides (in elements) of ``shape``; of a transposed contiguous tensor's view."""
    dims = shape[::-1] if transposed else shape
    out, step = [], 1
    for n in reversed(dims):
        out.append(step)
        step *= max(n, 1)
    out.reverse()
    return tuple(out[::-1]) if transposed else tuple(out)


def _scalar_operand(core: Any) -> Any:
    """The Python number an op took as its other operand (``x * 2``): the one
    number its rule keeps, as PyTorch's 0-d wrapped-number tensor (None: none)."""
    nums = [v for fn in _rules(core) for v in _closure(fn)
            if isinstance(v, (int, float)) and not isinstance(v, bool) or (type(v) is np.ndarray and v.ndim == 0)]
    return _new(np.asarray(nums[0])) if len(nums) == 1 else None


def _has_edge(core: Any, k: int) -> bool:
    """Whether node ``core``'s input at edge position ``k`` requires grad (has an edge)."""
    lay = getattr(core, "input_parents", None)
    if lay is None:
        return k < len(parents_of(core))
    return k < len(lay) and lay[k] is not None


def _attr_value(grad_fn: Any, name: str, key: str) -> Any:
    """``grad_fn._saved_<key>`` for node ``name`` (``_MISSING``: not known here)."""
    core = grad_fn._core
    if core is None:
        return _MISSING
    attrs = getattr(core, "attrs", None) or {}
    if key in attrs:
        v = attrs[key]
        if key in ("dim", "dims", "dim0", "dim1"):
            if name in _DIM_LISTS and not isinstance(v, (list, tuple)):
                v = (v,)
            v = _graph.as_saved_dim(v)
        return v
    base, _, what = key.partition("_sym_")
    if what:
        pos = _NODE_POSITIONS.get(name, {}).get(base, _POSITIONS.get(base))
        found = None if pos is None else _input_shape(core, pos)
        if found is None or pos is None:
            return _MISSING
        shape, transposed = found
        if what == "sizes":
            return shape
        if what == "strides":  # (saved for the input's own gradient only)
            return _strides(shape, transposed) if _has_edge(core, pos) else ()
        return int(np.prod(shape, dtype=np.int64))  # numel
    if key in _DEFAULTS:
        return _DEFAULTS[key]
    if key == "exponent" and core in _graph.exponents:
        _rules(core)
        return _graph.exponents[core]
    pos = _NODE_POSITIONS.get(name, {}).get(key, _POSITIONS.get(key))
    if pos is None:
        return _MISSING
    decl = SAVES.get(name)
    if pos >= 0 and decl is not None:
        wanted = [j for k, j in decl[0] if k == pos]
        if not wanted:
            return None  # (an input the node does not save: ``weight=None``)
        if wanted[0] is not None and not _has_edge(core, wanted[0]):
            return None  # saved only for a gradient nobody asked for
    try:
        return _saved(grad_fn, pos)
    except AttributeError:
        if pos >= 0 and type(core) is FacadeEntry and core.input_parents is not None \
                and pos < len(core.input_parents) and core.input_parents[pos] is None:
            v = _scalar_operand(core)
            return _MISSING if v is None else v
        return _MISSING


def saved_names(grad_fn: Any) -> list[str]:
    """The ``_saved_*`` attributes ``dir(grad_fn)`` lists: PyTorch's for the
    node's name, those whose value is known here."""
    name = grad_fn.name()
    out = []
    for key in _SAVED_NAMES.get(name, ()):
        try:
            known = _attr_value(grad_fn, name, key) is not _MISSING
        except RuntimeError:  # (freed by a backward: PyTorch lists them still)
            known = True
        if known:
            out.append("_saved_" + key)
    return out


def _find_inside(core: Any, node: Any, depth: int = 4) -> Any:
    """``_find`` in ``core``'s rules, then in those of the unnamed entries
    below it (the steps of a composite op whose top entry ``core`` is)."""
    v = _find(core, node)
    if v is not None or not depth:
        return v
    for p in parents_of(core):
        if p is not node and p.prim is not None and p.vjps is not None and getattr(p, "name", None) is None:
            v = _find_inside(p, node, depth - 1)
            if v is not None:
                return v
    return None


def saved_attribute(grad_fn: Any, name: str) -> Any:
    """``grad_fn._saved_<name>`` (and ``_raw_saved_<name>``: the same here)."""
    key = name.removeprefix("_raw").removeprefix("_saved_")
    node = grad_fn.name()
    if key in _SAVED_NAMES.get(node, ()):
        v = _attr_value(grad_fn, node, key)
        if v is not _MISSING:
            return v
    if key not in _POSITIONS:
        raise AttributeError(f"'{type(grad_fn).__name__}' object has no attribute '{name}'")
    return _saved(grad_fn, _POSITIONS[key])


_graph.set_saved_reader(saved_attribute, saved_names)

# --- saved_tensors_hooks --------------------------------------------------------------------------

_Hooks = tuple[Callable[[Any], Any], Callable[[Any], Any]]
_hooks: list[_Hooks] = []  # the open contexts' (pack, unpack), innermost last
# entries recorded inside a hooks context, not packed yet, each with the
# context's hooks (a general op names its entry after recording it: packing
# waits for the next record or the context's exit)
_pending: list[tuple[Any, _Hooks]] = []
_packing = [False]  # a pack hook is running: what it records is not packed


def _on_record(entry: Any) -> None:
    """The observer of recording while a hooks context is open."""
    if _packing[0] or not _hooks:
        return
    _flush()
    _pending.append((entry, _hooks[-1]))


def _flush() -> None:
    """Pack what the pending entries' nodes saved (their names are known by now)."""
    if not _pending:
        return
    entries = list(_pending)
    _pending.clear()
    _packing[0] = True
    try:
        for e, hooks in entries:
            _pack(e, *hooks)
    finally:
        _packing[0] = False


def _pack(e: Any, pack: Callable[[Any], Any], unpack: Callable[[Any], Any]) -> None:
    """Pack what entry ``e``'s node saved with ``pack``; its backward unpacks them."""
    if e.vjps is None or e.name is None or e.name not in SAVES:
        return
    view = _graph.view_of(e)
    positions, result = SAVES[e.name]
    saved, keys = [], []
    for k, _ in sorted(positions, reverse=True):  # (PyTorch packs ``other`` before ``self``)
        try:
            t = _saved(view, k)
        except AttributeError:
            continue
        if isinstance(t, Tensor):
            saved.append(t)
            keys.append(t._value._node if type(t._value) is Traced else t._value)
    if result:
        try:
            saved.append(_saved(view, -1))
        except AttributeError:
            pass
        else:  # (the rules keep the output, or its twin when they would otherwise hold the entry)
            res = getattr(e, "res", None)
            keys.append(e if res is None else res)
    _wrap_rules(e, keys, [pack(t) for t in saved], unpack)


def _wrap_rules(e: Any, keys: list[Any], packed: list[Any], unpack: Callable[[Any], Any]) -> None:
    """Have entry ``e``'s rules, when backward runs them, unpack ``packed``
    and compute with what ``unpack`` returns in place of the values they
    kept (``keys``: the tape node of each, the rules' twin of the output,
    or the array of a constant)."""
    vjps = e.vjps
    rules = list(vjps) if type(vjps) is tuple else [vjps]
    last: list[Any] = [None, None]  # the cotangent of the last call and the rules' results for it

    def run_all(g: Any) -> list[Any]:
        subst = {}
        for key, p in zip(keys, packed):
            t = unpack(p)
            subst[id(key)] = (key, t._value if isinstance(t, Tensor) else t)
        undo: list[tuple[Any, Any]] = []
        try:
            for rule in rules:
                _swap_cells(rule, subst, undo)
            return [rule(g) for rule in rules]
        finally:
            for cell, v in reversed(undo):
                cell.cell_contents = v

    def wrap(k: int) -> Any:
        def run(g: Any) -> Any:
            if last[0] is not g or k == 0:  # (a node's rules run in order, with the same cotangent)
                last[0], last[1] = g, run_all(g)
            out = last[1][k]
            if k == len(rules) - 1:
                last[0] = last[1] = None
            return out

        run._tg_wrapped = rules[k]  # type: ignore[attr-defined]
        return run

    e.vjps = tuple(wrap(k) for k in range(len(rules))) if type(vjps) is tuple else wrap(0)


def _swap_cells(fn: Any, subst: dict[int, tuple[Any, Any]], undo: list[tuple[Any, Any]], depth: int = 3) -> None:
    """Put the substitutes ``subst`` (id of a tape node or array -> (it, the
    new value)) in the closure cells of rule ``fn`` (and of the rules it
    closes over) that hold those values; record in ``undo`` how to put the
    old contents back."""
    fn = getattr(fn, "_tg_wrapped", fn)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        new = _substituted(v, subst)
        if new is not v:
            undo.append((cell, v))
            cell.cell_contents = new
        elif callable(v) and depth and not isinstance(v, type):
            _swap_cells(v, subst, undo, depth - 1)


def _substituted(v: Any, subst: dict[int, tuple[Any, Any]]) -> Any:
    """``v`` with the values ``subst`` names replaced (itself when none is)."""
    if type(v) is Traced:
        hit = subst.get(id(v._node)) or subst.get(id(v))
        return hit[1] if hit is not None and (hit[0] is v._node or hit[0] is v) else v
    if type(v) in (tuple, list):
        items = [_substituted(x, subst) for x in v]
        return type(v)(items) if any(a is not b for a, b in zip(items, v)) else v
    hit = subst.get(id(v))
    return hit[1] if hit is not None and hit[0] is v else v


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """Context manager: ``pack_hook`` on each tensor an op saves, ``unpack_hook`` when backward uses it."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _flush()
        if not _hooks:
            _graph.add_observer(_on_record)
        _hooks.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: Any) -> None:
        _flush()
        _hooks.pop()
        if not _hooks:
            _graph.remove_observer(_on_record)


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Saved tensors kept on the CPU (they are: both hooks are the identity here)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:  # noqa: N801
    """Context manager in which opening ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self._saved = saved_tensors_hooks.__enter__

        def refuse(_: Any) -> None:
            raise RuntimeError(self.error_message)

        saved_tensors_hooks.__enter__ = refuse  # type: ignore[method-assign, assignment]

    def __exit__(self, *exc: Any) -> None:
        saved_tensors_hooks.__enter__ = self._saved  # type: ignore[method-assign]

__getattr__ = missing_names(__name__, "torch.autograd.graph")
