"""The data and autograd core of ``tapegrad.torch.Tensor``, and the facade's recording helpers.

A tensor holds ``_value``: a plain array (it needs no grad) or a traced value
on the facade tape ``GT`` (it requires grad; a leaf is a watched value).
This module holds the class and its autograd API, and the facade's recording
helpers: the fast paths (``_rec1``, ``_rec2``, ``_rec``, the unary methods and tensor-float
operators) call the facade tape's ``record`` with the node's data; ``_result``
writes the same data (``_naming.named``) on the entry a general op recorded.

``TensorBase`` is the class's core; ``Tensor`` (``_tensor.py``, above the op
modules, which import this one) derives from it and the op-family classes,
and registers itself as the class the helpers build. Here ``Tensor`` names
that class to a type checker; at run time, ``TensorBase`` (for ``isinstance``).
"""

from __future__ import annotations

import builtins
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from typing_extensions import Self

import tapegrad.numpy as tnp
from tapegrad.core.primitive import keep_scalar_rule
from tapegrad.core.traced import Traced, value
from tapegrad.numpy import primitives as tp
from tapegrad.torch import _dtype as D
from tapegrad.torch._graph import (
    GT,
    SCALAR_TYPE,
    AccumulateGrad,
    HookHandle,
    VersionCounter,
    counter_of,
    edge_of,
    held,
    leaf_tensor,
    node_class,
    register_leaf,
    tensor_hooks,
    version_of,
    view_of,
)
from tapegrad.torch._graph import record as _record
from tapegrad.torch._naming import named, own_entry
from tapegrad.torch._promote import _shape_arg
from tapegrad.torch._storage import _viewed

ndarray = np.ndarray
_generic = np.generic
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
MULTI_VIEW = (
    "This view is the output of a function that returns multiple views. Such functions do not allow the "
    "output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
)
OVERLAP_INPLACE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
    "location. Please clone() the tensor before performing the operation."
)
NONLEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


# --- making tensors -------------------------------------------------------------------------------


def _new(v: Any, cls: type | None = None) -> Tensor:
    t: Tensor = object.__new__(cls or _Tensor)
    t._value = v
    t._grad_fn = None
    t._vc = VersionCounter()
    return t


def _edge(x: Any) -> tuple[Any, int]:
    fn = x._grad_fn
    if fn is not None:
        return (fn, x._nr)
    v = x._value
    if type(v) is Traced and v._level is GT:
        n = v._node
        if n.prim is None:
            t = leaf_tensor(n.index)
            return (x if t is None else t, 0)
        return edge_of(n)
    return (None, 0)


def _result(r: Any, name: str, ins: Sequence[Any]) -> Tensor:
    """Wrap an op's result ``r``; if it was recorded on the facade tape, its
    entry becomes a node named ``name`` whose inputs are ``ins`` (see ``_named``)."""
    tr = type(r)
    if tr is Traced:
        if r._level is GT:
            pv = r._value
            if isinstance(pv, _generic):
                r._value = np.asarray(pv)
            r = own_entry(r, ins)
            named(r._node, name, ins)
            t: Tensor = _new_obj(_Tensor)
            t._value = r
            t._grad_fn = None
            t._vc = None  # (made when needed: see _graph.counter_of)
            return t
        return _new(r)
    if tr is not ndarray and isinstance(r, (_generic, builtins.bool, builtins.int, builtins.float, complex)):
        r = np.asarray(r)
    return _new(r)


# the parent of each input of a fast op (None: no edge), see FacadeEntry
_LAY1: tuple[int | None, ...] = (0,)  # one tensor
_LAY_S: tuple[int | None, ...] = (0, None)  # a tensor and a scalar PyTorch lists
_LAY2: tuple[int | None, ...] = (0, 1)
_LAY_B: tuple[int | None, ...] = (None, 0)
# primitives with a fast recording path besides the unary and arithmetic ones
_SUM: Any = tnp.sum.primitive  # type: ignore[attr-defined]
_MEAN: Any = tp.mean.primitive  # type: ignore[attr-defined]
_MATMUL: Any = tnp.matmul.primitive  # type: ignore[attr-defined]
_LOGSUMEXP: Any = tp.logsumexp.primitive  # type: ignore[attr-defined]
_ADD: Any = tnp.add.primitive  # type: ignore[attr-defined]
_SUB: Any = tnp.subtract.primitive  # type: ignore[attr-defined]
_MUL: Any = tnp.multiply.primitive  # type: ignore[attr-defined]
_DIV: Any = tnp.divide.primitive  # type: ignore[attr-defined]


_new_obj = object.__new__


def _rec1(prim: Any, v: Any, name: str, x: TensorBase, kwargs: dict[str, Any] | None = None) -> Tensor | None:
    """The fast path of a one-input op: ``prim(v, **kwargs)``, ``v`` being
    tensor ``x``'s value, recorded by the facade tape's ``record`` with no
    dispatch. None when it does not apply (``v`` is not recorded on the
    facade tape alone, or grad mode is off): the caller then takes the
    general path. (The unary methods and the tensor-float operators unroll
    it: see ``_unary_method`` and ``_operator``.)
    """
    if type(v) is not Traced or v._level is not GT:
        return None
    a = v._value
    if type(a) is Traced or not GT.active:
        return None
    vc = x._vc
    ver = 0 if vc is None else vc.value
    vs = (v,)
    # (no ``**{}``: it costs as much as the rest of the call)
    out = _record(GT, prim, prim.fun(a, **kwargs) if kwargs else prim.fun(a), vs, vs, kwargs or _NO_KW,
                  _ARG0, None, name, x if v._node.prim is None else v._node if vc is None else vc, _LAY1, (ver,) if ver else None)
    t: Tensor = _new_obj(_Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = None  # (made when needed: see _graph.counter_of)
    return t


_ARG0: tuple[int, ...] = (0,)


def _rec2(prim: Any, a: Any, b: Any, name: str, ins: Sequence[Any]) -> Tensor | None:
    """``_rec1`` for a two-input op on values ``a`` and ``b`` (traced on the
    facade tape, plain arrays or Python scalars); ``ins`` are the grad_fn's inputs."""
    ta = type(a) is Traced
    tb = type(b) is Traced
    if ta:
        if a._level is not GT:
            return None
        x = a._value
        if type(x) is Traced:
            return None
    else:
        x = a
    if tb:
        if b._level is not GT:
            return None
        y = b._value
        if type(y) is Traced:
            return None
    else:
        y = b
    if not GT.active or not (ta or tb):
        return None
    if ta and tb:
        nums, lay = _ARGS01, _LAY2
    elif ta:
        nums, lay = _ARG0, _LAY_S
    else:
        nums, lay = _ARG1, _LAY_B
    x0, x1 = ins
    vers = None
    v0 = version_of(x0)
    v1 = 0 if x1 is None else version_of(x1)
    if v0 or v1:
        vers = (v0, v1)
    kept = (held(x0), None if x1 is None else held(x1))
    out = _record(GT, prim, prim.fun(x, y), (a, b), (x, y), _NO_KW, nums, None, name, kept, lay, vers)
    t: Tensor = _new_obj(_Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = None  # (made when needed: see _graph.counter_of)
    return t


_ARG1: tuple[int, ...] = (1,)
_ARGS01: tuple[int, ...] = (0, 1)


def _rec(prim: Any, vals: Sequence[Any], name: str, ins: Sequence[Any], pos: Sequence[Any],
         kwargs: dict[str, Any] | None = None) -> Tensor | None:
    """``_rec1`` for an op of any arity: ``prim(*vals, **kwargs)``, where each
    value is traced on the facade tape alone or a constant. ``ins`` are the
    grad_fn's inputs (tensors, or None); ``pos[k]`` is the index in ``vals``
    of ``ins[k]``'s value (None: no edge; ``(name, i)``: an edge through a
    one-input node ``name`` the op fuses in, see ``FacadeEntry``)."""
    if not GT.active:
        return None
    raw: list[Any] = []
    nums: list[int] = []  # the positions in vals of the traced values, in parents' order
    for v in vals:
        if type(v) is Traced:
            a = v._value
            if v._level is not GT or type(a) is Traced:
                return None
            nums.append(len(raw))
            raw.append(a)
        else:
            raw.append(v)
    if not nums:
        return None
    kw = kwargs or _NO_KW
    ans = prim.fun(*raw, **kw)
    lay = tuple([None if j is None or (j if type(j) is int else j[1]) not in nums
                 else nums.index(j) if type(j) is int else (j[0], nums.index(j[1])) for j in pos])
    vers = None
    kept: list[Any] = []
    for x in ins:
        if x is None:
            kept.append(None)
            continue
        vc = x._vc  # (version_of, inlined: an optimizer's step has bumped every parameter)
        if vers is None and vc is not None and vc.value:
            vers = tuple([0 if y is None or y._vc is None else y._vc.value for y in ins])
        kept.append(held(x))
    out = _record(GT, prim, ans, vals, raw, kw, nums, None, name, tuple(kept), lay, vers)
    t: Tensor = _new_obj(_Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = None  # (made when needed: see _graph.counter_of)
    return t


_NO_KW: dict[str, Any] = {}


def _operator(prim: Any, name: str, div: builtins.bool = False) -> Callable[[Tensor, Any], Tensor]:
    """A binary operator method of Tensor for primitive ``prim``: the
    tensor-and-float fast path, else ``Tensor._arith`` (promotion, the rest).

    The fast path (``x * 1.0001``: a float needs no promotion) is ``_rec1``
    unrolled into the method (one frame less per op: -0.08 us, measured),
    with a cache of rules: the rule of the four operators that take it
    depends on the scalar alone, never on the tensor or the output, so the
    cache keeps one per scalar: a loop multiplying by the same constant
    makes no closure per op, and the cyclic collector has fewer objects to
    walk."""
    fn = prim.wrapped
    rules: dict[float, tuple[Any, ...]] = {}

    def op(self: Tensor, other: Any) -> Tensor:
        if type(other) is builtins.float:
            v = self._value
            if type(v) is Traced and v._level is GT and type(v._value) is not Traced and GT.active:
                a = v._value
                maker = prim.vjps.get(0)
                c = rules.get(other)  # (the same scalar and maker: see keep_scalar_rule)
                cached = c[2] if c is not None and c[1] is maker and (other or c[0] is other) else None
                vc = self._vc
                ver = 0 if vc is None else vc.value
                vs = (v, other)
                out = _record(GT, prim, prim.fun(a, other), vs, vs, _NO_KW, _ARG0, cached, name,
                              self if v._node.prim is None else v._node if vc is None else vc, _LAY_S, (ver, 0) if ver else None)
                node = out._node
                if cached is None:
                    keep_scalar_rule(rules, maker, other, node)
                t: Tensor = _new_obj(_Tensor)
                t._value = out
                t._grad_fn = None
                t._vc = None
                return t
        return self._arith(other, fn, name, div)

    return op




def _unary_method(fn: Any, name: str) -> Callable[[Tensor], Tensor]:
    """A one-input math method of Tensor (``sin``, ``exp``...) for primitive
    function ``fn``: ``_rec1`` straight from the method, else ``Tensor._unary``
    (integer promotion, the rest)."""
    prim = fn.primitive

    def op(self: Tensor) -> Tensor:
        v = self._value
        # _rec1's common case unrolled into the method: one frame less per op (-0.08 us, measured)
        if type(v) is Traced and v._level is GT and type(v._value) is not Traced and GT.active:
            a = v._value
            vc = self._vc
            ver = 0 if vc is None else vc.value
            vs = (v,)
            out = _record(GT, prim, prim.fun(a), vs, vs, _NO_KW, _ARG0, None, name,
                          self if v._node.prim is None else v._node if vc is None else vc, _LAY1, (ver,) if ver else None)
            t: Tensor = _new_obj(_Tensor)
            t._value = out
            t._grad_fn = None
            t._vc = None  # (made when needed: see _graph.counter_of)
            return t
        return self._unary(fn, name)

    op.__name__ = op.__qualname__ = name.removesuffix("Backward0").lower()
    return op


def _multi(rs: Sequence[Any], name: str, ins: Sequence[Any]) -> tuple[Tensor, ...]:
    """Several outputs of one facade op sharing one ``grad_fn`` (unbind, split):
    each output's entry lists the inputs (what the node saved) and shows the
    shared view (``FacadeEntry.shared``)."""
    outs = [_result(r, "", ins) for r in rs]
    node: Any = None
    for i, o in enumerate(outs):
        v = o._value
        if type(v) is Traced and v._level is GT:
            if node is None:
                cls = _classes.get(name)
                if cls is None:
                    cls = _classes[name] = node_class(name)
                node = object.__new__(cls)
                node._edges = tuple([(None, 0) if x is None else _edge(x) for x in ins])
                node._core = None
            o._grad_fn = node
            o._nr = i
            v._node.shared = (node, i)
    return tuple(outs)


_classes: dict[str, type] = {}


def _renamed(t: Tensor, name: str, ins: Sequence[Any]) -> Tensor:
    """``t``, the result of a composite of facade ops, as one PyTorch node
    ``name`` with edges to ``ins`` (tensors; anything else lists as None).
    The node is an entry of its own, an alias of ``t``'s value (no copy):
    the entry of the composite's last op keeps the name that op gave it, so
    every entry's node data is written once."""
    r = t._value
    if type(r) is not Traced or r._level is not GT:
        return t
    return _result(tnp.reshape(r, r.shape), name, tuple(x if isinstance(x, Tensor) else None for x in ins))


def _v(x: Any) -> Any:
    return x._value if isinstance(x, Tensor) else x


def _wrap_hook(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def raw(g: Any) -> Any:
        out = hook(_new(g))
        return g if out is None else _v(out)

    return raw


def _own(g: Any) -> Any:
    if type(g) is ndarray and (not g.flags.writeable or g.base is not None):
        return g.copy()
    return g


# --- the tensor ------------------------------------------------------------------------------------


class TensorBase(metaclass=D.PyTorchNamed):
    """The core of ``tapegrad.torch.Tensor`` (see the module docstring): its
    data, attributes and autograd API; the op methods come from the op-family
    classes ``Tensor`` also derives from."""

    __slots__ = ("_value", "_grad_fn", "_vc", "__dict__", "__weakref__")
    _value: Any
    _grad_fn: Any
    _vc: VersionCounter | None  # None for a fast op's result until it needs one (see _graph.counter_of)
    _nr: builtins.int = 0  # which output of its grad_fn (set only by multi-output ops)
    __array_priority__ = 1000.0
    __array_ufunc__ = None
    _grad: Any = None
    _retains = False

    if TYPE_CHECKING:
        # (to the op-family classes, which call each other's methods on ``self``, those are ``Any``)
        def __getattr__(self, name: str) -> Any: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __iadd__(self, other: Any) -> Tensor: ...
        def __isub__(self, other: Any) -> Tensor: ...
        def __imul__(self, other: Any) -> Tensor: ...
        def __itruediv__(self, other: Any) -> Tensor: ...
        def __ipow__(self, other: Any) -> Tensor: ...
        def __getitem__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __setitem__(self, key: Any, v: Any) -> None: ...
    _acc: Any = None  # a weak reference to the leaf's AccumulateGrad (it refers to the tensor)
    # for a view: (base tensor, kind, argument), see _viewed; None otherwise
    _base_view: Any = None
    _views: Any = None  # a base's weak references to its views (see _viewed), once it has some

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        if len(args) == 1 and not isinstance(args[0], builtins.int):
            data = args[0]
            if isinstance(data, Tensor):
                return data
            arr = np.array(value(_v(data)) if isinstance(data, Tensor) else data, dtype=np.float32)
        else:
            arr = np.empty(_shape_arg(args) if args else (0,), dtype=np.float32)
        return _new(arr, cls)

    # --- the wrapper protocol (tg.grad of a function of tensors) --------------------------------
    def __tapegrad_value__(self) -> Any:
        return self._value

    @classmethod
    def __tapegrad_box__(cls, v: Any, like: Any) -> Tensor:
        if type(v) is Traced and v._level is GT:
            if v._node.prim is None:
                t = leaf_tensor(v._node.index)
                if t is not None:
                    return t
            # made by a transform, not a facade op: grad_fn is the entry's own view
            return _new(v)
        return _result(v, "", ())

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """Export the data by DLPack (no copy); refuses a tensor that requires grad."""
        if self.requires_grad:
            raise RuntimeError("Can't export a tensor that requires grad with __dlpack__. "
                               "Use tensor.detach() first.")
        return value(self._value).__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return value(self._value).__dlpack_device__()

    # --- attributes --------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        v = self._value
        return type(v) is Traced and v._level is GT

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    @property
    def is_leaf(self) -> bool:
        if self._grad_fn is not None:
            return False
        v = self._value
        return not (type(v) is Traced and v._level is GT and v._node.prim is not None)

    @property
    def grad_fn(self) -> Any:
        fn = self._grad_fn
        if fn is None:
            v = self._value
            if type(v) is Traced and v._level is GT and v._node.prim is not None:
                fn = view_of(v._node)
        return fn

    @property
    def grad(self) -> Any:
        g = self._grad
        if g is None and not self.is_leaf and not self._retains:
            warnings.warn(NONLEAF_GRAD, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, g: Any) -> None:
        """Set ``.grad`` to ``None`` or a tensor of this tensor's dtype, device
        type and size; else raise PyTorch's error (checked in its order)."""
        if g is not None:
            if not isinstance(g, Tensor):
                cls = type(g)  # named as CPython's tp_name: module-qualified for C types
                kind = cls.__name__ if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins" \
                    else f"{cls.__module__}.{cls.__name__}"
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {kind}")
            mine, theirs = self._value.dtype, g._value.dtype
            if mine != theirs:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{D.CPP_TYPE.get(theirs.name, theirs.name)}' to a "
                    f"tensor with grad_dtype '{SCALAR_TYPE.get(mine.name, mine.name)}'. The gradient must match the "
                    "tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype "
                    "attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. "
                    "Diverging the dtypes of a tensor and its gradient may break downstream systems that assume "
                    "they match.")
            if g.device.type != self.device.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{g.device.type}' to a tensor with device "
                    f"type '{self.device.type}'. Please ensure that the gradient and the tensor are on the same "
                    "device")
            if g._value.shape != self._value.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(g._value.shape)}' to a tensor of size "
                    f"'{list(self._value.shape)}'. Please ensure that the gradient and the tensor are the same size")
        self._grad = g

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains

    @property
    def data(self) -> Tensor:
        return _new(value(self._value))

    @data.setter
    def data(self, other: Tensor) -> None:
        self._set_data(value(_v(other)))

    # --- autograd ------------------------------------------------------------------------------
    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad.

        Args:
            gradient: the cotangent of ``self`` (needed unless ``self`` has one element).
            retain_graph: keep the graph's saved values for another backward
                (default: ``create_graph``).
            create_graph: record the backward pass, so gradients are differentiable.
            inputs: accumulate only into these tensors.
        """
        from tapegrad.torch.autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing this one's data and version counter, outside the
        graph: an in-place change of either is seen by the other (and counts
        on the shared counter), as in PyTorch."""
        return _viewed(_new(value(self._value)), self, "alias", None)

    def detach_(self) -> Self:
        counter_of(self)  # (the counter stays with the data, found from the entry no more)
        self._value = value(self._value)
        self._grad_fn = None
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Set ``requires_grad`` in place (leaves only); returns ``self``."""
        v = self._value
        on = type(v) is Traced and v._level is GT
        if requires_grad and not on:
            if type(v) is Traced:
                v = value(v)
            if v.dtype.kind not in "fc":
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            self._value = GT.watch(v)
            register_leaf(self)
        elif not requires_grad and on:
            if not self.is_leaf:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            self._value = value(v)
        return self

    def retain_grad(self) -> None:
        """Populate ``.grad`` of this non-leaf tensor in backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains:
            return
        self._retains = True
        ref = weakref.ref(self)

        def retain(g: Any) -> Any:
            t = ref()
            if t is not None:
                old = t._grad
                if old is None:
                    t._grad = _new(g.copy() if type(g) is ndarray else g)
                else:
                    t._grad = _new(old._value + g)
            return g

        retain._retain = True  # type: ignore[attr-defined]
        retain._tensor = ref  # type: ignore[attr-defined]
        tensor_hooks.setdefault(self._value._node, []).append(retain)

    def register_hook(self, hook: Callable[[Tensor], Any]) -> HookHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned
        tensor replaces the gradient. Returns a handle with ``remove()``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fns = tensor_hooks.setdefault(self._value._node, [])
        raw = _wrap_hook(hook)
        at = next((i for i, f in enumerate(fns) if getattr(f, "_retain", False)), len(fns))
        fns.insert(at, raw)
        return HookHandle(fns, raw)

    def _accumulate_grad(self) -> AccumulateGrad:
        ref = self._acc
        acc = ref() if ref is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._acc = weakref.ref(acc)
        return acc

# The base of the op-family classes (``ArithOps``...): ``TensorBase`` to a type
# checker; at run time a plain class (``Tensor`` lists ``TensorBase`` once, last).
if TYPE_CHECKING:
    OpsBase = TensorBase
    from tapegrad.torch._tensor import Tensor
else:
    OpsBase = object
    Tensor = TensorBase  # (see the module docstring)
_Tensor: type = TensorBase  # the class the helpers build: ``Tensor``, once registered (below)


def register_tensor_class(cls: type) -> None:
    """Make ``cls`` (``Tensor``, from ``_tensor.py``) the class the helpers here build."""
    global _Tensor
    _Tensor = cls


def tensor_class() -> type[Tensor]:
    """``tapegrad.torch.Tensor`` (for the op table's ``add_row``)."""
    return _Tensor
