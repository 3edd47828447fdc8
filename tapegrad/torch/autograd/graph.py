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

from collections.abc import Callable
from typing import Any

from tapegrad.core.tape import parents_of
from tapegrad.core.traced import Traced
from tapegrad.torch import _graph
from tapegrad.torch._graph import SAVES, FacadeEntry, GradFn, inputs_of
from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

Node = GradFn  # (PyTorch's name of the grad_fn type)

# the saved-attribute names of PyTorch's nodes -> edge position (-1: the result)
_POSITIONS = {"self": 0, "input": 0, "other": 1, "mat2": 1, "vec": 1, "exponent": 1, "tensor1": 1,
              "tensor2": 2, "weight": 1, "end": 1, "result": -1}


def _rules(core: Any) -> list[Any]:
    vjps = core.vjps
    if vjps is None:
        raise RuntimeError(_graph.SECOND_BACKWARD)
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


def _saved(grad_fn: Any, k: int) -> Any:
    """The value node ``grad_fn`` saved for edge position ``k`` (-1: its result)."""
    core = grad_fn._core
    if core is None:
        raise AttributeError(f"'{type(grad_fn).__name__}' object has no saved values")
    if k == -1:
        v = _find(core, core)
        if v is None:
            raise AttributeError(f"'{type(grad_fn).__name__}' object has no attribute '_saved_result'")
        return _new(v)
    ins = inputs_of(core) if type(core) is FacadeEntry and core.held_inputs is not None else ()
    if k < len(ins) and isinstance(ins[k], Tensor):
        _rules(core)  # (freed: the error)
        return ins[k]
    parents = parents_of(core)
    lay = getattr(core, "input_parents", None)
    j = lay[k] if lay is not None and k < len(lay) else k
    if type(j) is int and j < len(parents):
        p = parents[j]
        if p.prim is None:  # a leaf: the tensor itself
            leaf = _graph.leaf_tensor(p.index)
            if leaf is not None:
                _rules(core)
                return leaf
        v = _find(core, p)
        if v is not None:
            return _new(v)
    if k == 1 and core in _graph.exponents:  # ``x ** 2``: the number PyTorch saved
        _rules(core)
        return _graph.exponents[core]
    raise AttributeError(f"'{type(grad_fn).__name__}' object has no saved value at position {k}")


def saved_attribute(grad_fn: Any, name: str) -> Any:
    """``grad_fn._saved_<name>`` (and ``_raw_saved_<name>``: the same here)."""
    key = name.removeprefix("_raw").removeprefix("_saved_")
    if key not in _POSITIONS:
        raise AttributeError(f"'{type(grad_fn).__name__}' object has no attribute '{name}'")
    return _saved(grad_fn, _POSITIONS[key])


_graph.set_saved_reader(saved_attribute)

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
