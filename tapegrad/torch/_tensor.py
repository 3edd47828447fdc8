"""``tapegrad.torch.Tensor``: a skin over tapegrad's traced values.

A tensor holds ``_value``: a plain array (it needs no grad) or a traced value
on the facade tape ``GT`` (it requires grad; a leaf is a watched value).
Every method calls ``tapegrad.numpy`` on ``_value`` and wraps the result;
:func:`_result` attaches the PyTorch-named ``grad_fn`` view when the result
was recorded. No gradient logic lives here.
"""

from __future__ import annotations

import builtins
import math
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from types import FunctionType
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.numpy import wrap as _w
from tapegrad.scipy import special as tsp
from tapegrad.torch import _dtype as D
from tapegrad.torch import _format
from tapegrad.torch import _prims as P
from tapegrad.torch._graph import (
    GT,
    OUTPUT,
    SCALAR_TYPE,
    AccumulateGrad,
    FNode,
    VersionCounter,
    bump,
    edge_of,
    fused_edge,
    held,
    last_inplace,
    leaf_tensor,
    node_class,
    register_leaf,
    saved_key,
    tensor_hooks,
    view_of,
)
from tapegrad.torch._graph import record as _record
from tapegrad.tracer import Traced, value

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
    t: Tensor = object.__new__(cls or Tensor)
    t._value = v
    t._grad_fn = None
    t._vc = VersionCounter()
    return t


def _edge(x: Any) -> tuple[Any, int]:
    fn = x._grad_fn
    if fn is not None:
        return (fn, x._nr)
    v = x._value
    if type(v) is Traced and v._tape is GT:
        n = v._node
        if n.prim is None:
            t = leaf_tensor(n.index)
            return (x if t is None else t, 0)
        return edge_of(n)
    return (None, 0)


_classes: dict[str, type] = {}


def _node(name: str, ins: Sequence[Any], core: Any, out: Any, out_vc: VersionCounter,
          out_ver: int = 0, *, first: builtins.bool = True, output: builtins.bool = True,
          claim: builtins.bool = False) -> Any:
    """The ``grad_fn`` view of a recorded facade op, built now: edges to ``ins``
    (tensors, or None for scalars PyTorch lists). Tape entry ``core`` (the
    op's last) takes the name, the edges and what the op may have saved, with
    versions: ``(saved_key, version counter, version)`` for each input
    (``first``: the first one too) and the output (if ``output``), checked
    only if an in-place op happens later (see ``_graph.check_versions``).
    The entry keeps the view weakly (the view holds the entry), and it takes
    them only if no op named it yet, unless ``claim``."""
    cls = _classes.get(name)
    if cls is None:
        cls = _classes[name] = node_class(name)
    node: Any = object.__new__(cls)
    edges: list[Any] = []
    saved: list[Any] = []
    for k, x in enumerate(ins):
        if x is None:
            edges.append((None, 0))
            continue
        fn = x._grad_fn
        edges.append((fn, x._nr) if fn is not None else _edge(x))
        if first or k:
            vc = x._vc
            saved += (saved_key(x._value), vc, vc.v)
    if output and out is not None:  # (OUTPUT, not the entry: it would refer to itself)
        saved += (OUTPUT if out._node is core else out._node, out_vc, out_ver)
    node._edges = tuple(edges)
    node._core = core
    if type(core) is FNode and (claim or core.fn is None):
        core.fn = name
        core.edges = node._edges
        core.saved = tuple(saved)
        core.view = weakref.ref(node)
    return node


def _result(r: Any, name: str, ins: Sequence[Any]) -> Tensor:
    """Wrap an op's result ``r``; if it was recorded on the facade tape, give
    it a ``grad_fn`` named ``name`` whose inputs are ``ins``."""
    tr = type(r)
    if tr is Traced:
        if r._tape is GT:
            pv = r._value
            if isinstance(pv, _generic):
                r._value = np.asarray(pv)
            t = _new(r)
            t._grad_fn = _node(name, ins, r._node, r, t._vc)
            return t
        return _new(r)
    if tr is not ndarray and isinstance(r, (_generic, builtins.bool, builtins.int, builtins.float, complex)):
        r = np.asarray(r)
    return _new(r)


# the parent of each input of a fast op (None: no edge), see FNode
_LAY1: tuple[int | None, ...] = (0,)  # one tensor
_LAY_S: tuple[int | None, ...] = (0, None)  # a tensor and a scalar PyTorch lists
_LAY2: tuple[int | None, ...] = (0, 1)
_LAY_B: tuple[int | None, ...] = (None, 0)
# primitives with a fast recording path besides the unary and arithmetic ones
_SUM: Any = _w.sum.primitive  # type: ignore[attr-defined]
_MEAN: Any = P.mean.primitive  # type: ignore[attr-defined]
_MATMUL: Any = _w.matmul.primitive  # type: ignore[attr-defined]
_LOGSUMEXP: Any = _w.logsumexp.primitive  # type: ignore[attr-defined]
_ADD: Any = _w.add.primitive  # type: ignore[attr-defined]
_SUB: Any = _w.subtract.primitive  # type: ignore[attr-defined]
_MUL: Any = _w.multiply.primitive  # type: ignore[attr-defined]
_DIV: Any = _w.divide.primitive  # type: ignore[attr-defined]


_new_obj = object.__new__


def _rec1(prim: Any, v: Any, name: str, x: Tensor, kwargs: dict[str, Any] | None = None,
          s: Any = None, rules: dict[float, tuple[Any, ...]] | None = None) -> Tensor | None:
    """The fast path of a one-input op: ``prim(v, **kwargs)``, ``v`` being
    tensor ``x``'s value, recorded on the facade tape the way its ``record``
    does it (rules close over the traced input and output), with no dispatch.
    None when it does not apply (``v`` is not recorded on the facade tape
    alone, or grad mode is off): the caller then takes the general path.

    With ``rules`` (an operator's cache), the op is ``prim(v, s)`` instead,
    ``s`` a Python float that needs no promotion (``x * 1.0001``). The rule
    of the four operators that do this depends on ``s`` alone, never on the
    tensor or the output, so the cache keeps one per scalar: a loop
    multiplying by the same constant makes no closure per op, and the
    cyclic collector has fewer objects to walk.
    """
    if type(v) is not Traced or v._tape is not GT:
        return None
    a = v._value
    if type(a) is Traced or not GT.active:
        return None
    ver = x._vc.v
    ins = x if v._node.prim is None else x._vc
    if rules is None:  # (no ``**{}``: it costs as much as the rest of the call)
        ans = prim.fun(a, **kwargs) if kwargs else prim.fun(a)
        out = _record(GT, prim, ans, (v,), (a,), kwargs or _NO_KW, _ARG0, None, name, ins, _LAY1,
                        (ver,) if ver else None)
    else:
        ans = prim.fun(a, s)
        maker = prim.vjps.get(0) or prim.vjp_maker(0)
        c = rules.get(s)
        # the same scalar: the same object, or an equal one that is not a
        # zero (0.0 and -0.0 are equal keys with different products); the
        # same maker (debug_nans swaps them)
        cached = c[2] if c is not None and c[1] is maker and (s or c[0] is s) else None
        out = _record(GT, prim, ans, (v, s), (a, s), _NO_KW, _ARG0, cached, name, ins, _LAY_S,
                        (ver, 0) if ver else None)
        if cached is None:
            vjp = out._node.vjps
            if (type(vjp) is FunctionType and not hasattr(out._node, "res")
                    and not any(k.cell_contents is v for k in vjp.__closure__ or ())):
                if len(rules) >= _SCALAR_RULES_MAX:
                    rules.clear()
                rules[s] = (s, maker, vjp)
    t: Tensor = _new_obj(Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = out._node
    return t


_ARG0: tuple[int, ...] = (0,)
_SCALAR_RULES_MAX = 64  # scalars remembered per operator (a loop uses a few)


def _rec2(prim: Any, a: Any, b: Any, name: str, ins: Sequence[Any]) -> Tensor | None:
    """``_rec1`` for a two-input op on values ``a`` and ``b`` (traced on the
    facade tape, plain arrays or Python scalars); ``ins`` are the grad_fn's inputs."""
    ta = type(a) is Traced
    tb = type(b) is Traced
    if ta:
        if a._tape is not GT:
            return None
        x = a._value
        if type(x) is Traced:
            return None
    else:
        x = a
    if tb:
        if b._tape is not GT:
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
    if x0._vc.v or (x1 is not None and x1._vc.v):
        vers = (x0._vc.v, 0 if x1 is None else x1._vc.v)
    kept = (held(x0), None if x1 is None else held(x1))
    out = _record(GT, prim, prim.fun(x, y), (a, b), (x, y), _NO_KW, nums, None, name, kept, lay, vers)
    t: Tensor = _new_obj(Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = out._node
    return t


_ARG1: tuple[int, ...] = (1,)
_ARGS01: tuple[int, ...] = (0, 1)


def _rec(prim: Any, vals: Sequence[Any], name: str, ins: Sequence[Any], pos: Sequence[Any],
         kwargs: dict[str, Any] | None = None) -> Tensor | None:
    """``_rec1`` for an op of any arity: ``prim(*vals, **kwargs)``, where each
    value is traced on the facade tape alone or a constant. ``ins`` are the
    grad_fn's inputs (tensors, or None); ``pos[k]`` is the index in ``vals``
    of ``ins[k]``'s value (None: no edge; ``(name, i)``: an edge through a
    one-input node ``name`` the op fuses in, see ``FNode``)."""
    if not GT.active:
        return None
    raw: list[Any] = []
    nums: list[int] = []  # the positions in vals of the traced values, in parents' order
    for v in vals:
        if type(v) is Traced:
            a = v._value
            if v._tape is not GT or type(a) is Traced:
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
        if vers is None and x._vc.v:
            vers = tuple([0 if y is None else y._vc.v for y in ins])
        kept.append(held(x))
    out = _record(GT, prim, ans, vals, raw, kw, nums, None, name, tuple(kept), lay, vers)
    t: Tensor = _new_obj(Tensor)
    t._value = out
    t._grad_fn = None
    t._vc = out._node
    return t


_NO_KW: dict[str, Any] = {}


def _operator(prim: Any, name: str, div: builtins.bool = False) -> Callable[[Tensor, Any], Tensor]:
    """A binary operator method of Tensor for primitive ``prim``: the
    tensor-and-float fast path, else ``Tensor._arith`` (promotion, the rest)."""
    fn = prim.wrapped
    rules: dict[float, tuple[Any, ...]] = {}

    def op(self: Tensor, other: Any) -> Tensor:
        if type(other) is builtins.float:
            t = _rec1(prim, self._value, name, self, None, other, rules)
            if t is not None:
                return t
        return self._arith(other, fn, name, div)

    return op


_refcount = sys.getrefcount


def _unary_method(fn: Any, name: str) -> Callable[[Tensor], Tensor]:
    """A one-input math method of Tensor (``sin``, ``exp``...) for primitive
    function ``fn``: ``_rec1`` straight from the method, else ``Tensor._unary``
    (integer promotion, the rest)."""
    prim = fn.primitive

    def op(self: Tensor) -> Tensor:
        t = _rec1(prim, self._value, name, self)
        if t is not None:
            return t
        return self._unary(fn, name)

    op.__name__ = op.__qualname__ = name.removesuffix("Backward0").lower()
    return op


def _multi(rs: Sequence[Any], name: str, ins: Sequence[Any]) -> tuple[Tensor, ...]:
    """Several outputs of one facade op sharing one ``grad_fn`` (unbind, split)."""
    outs = [_result(r, "", ()) for r in rs]
    if any(o._grad_fn is not None for o in outs):
        node = _node(name, ins, None, None, VersionCounter())
        for i, o in enumerate(outs):
            if o._grad_fn is not None:
                o._grad_fn = node
                o._nr = i
                o._value._node.fn = (node, i)
    return tuple(outs)


def _viewed(t: Tensor, base: Tensor, kind: str, arg: Any) -> Tensor:
    """Mark ``t`` as a view of ``base``, as PyTorch's views are: they share
    its version counter, an in-place op on ``t`` writes through to ``base``
    (see ``Tensor._write_back``), and a recorded in-place change of ``base``
    is read again by ``t`` (see ``Tensor._refresh_views``).
    ``kind`` says how ``t`` reads ``base`` (see ``_read_view``): ``"index"``
    (``base[arg]``), ``"perm"`` (its axes permuted by ``arg``), ``"shape"``
    (reshaped to ``arg``); ``"expand"`` (broadcast to ``arg``),
    ``"diagonal"`` (``arg`` = (offset, dim1, dim2)) and ``"multi"`` (output
    of an op that returns several views, ``arg`` = (op, output number, key))
    do not write through."""
    t._base_view = (base, kind, arg)
    t._vc = base._vc  # one version counter for a base and all its views
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


def _read_view(b: Any, kind: str, arg: Any) -> Any:
    """The value a view of ``kind`` reads from its base's value ``b``."""
    if kind == "index":
        return b[arg]
    if kind == "perm":
        return _w.transpose(b, arg)
    if kind == "expand":
        return _w.broadcast_to(b, arg)
    if kind == "diagonal":
        return _w.diagonal(b, *arg)
    if kind == "multi":
        return b[arg[2]]
    return tnp.reshape(b, arg)


def _write_view(b: Any, new: Any, kind: str, arg: Any) -> Any:
    """The base's value once its view (of ``kind``) holds ``new``."""
    if kind == "index":
        return _w.setitem(b, _w.Index(arg, b.ndim), new)
    if kind == "perm":
        return _w.transpose(new, tuple(np.argsort(arg)))
    return tnp.reshape(new, b.shape)


def _renamed(t: Tensor, name: str, ins: Sequence[Any]) -> Tensor:
    """``t``, the result of a composite of facade ops, as one PyTorch node
    ``name`` with edges to ``ins`` (tensors; anything else lists as None)."""
    r = t._value
    if type(r) is not Traced or r._tape is not GT:
        return t
    out = _new(r)
    out._grad_fn = _node(name, tuple(x if isinstance(x, Tensor) else None for x in ins), r._node, r, out._vc,
                         claim=True)
    return out


def _check_bool_sub(x: Tensor, other: Any) -> None:
    """PyTorch refuses ``-`` with a bool operand (a tensor, or a Python bool)."""
    x_bool = x._value.dtype == np.bool_
    o_bool = isinstance(other, builtins.bool) or (isinstance(other, Tensor) and other._value.dtype == np.bool_)
    if x_bool and o_bool and isinstance(other, Tensor):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if x_bool or o_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _v(x: Any) -> Any:
    return x._value if isinstance(x, Tensor) else x


def _np_dtype(dtype: Any) -> Any:
    return D.to_np(dtype)


def _cast(v: Any, dt: Any) -> Any:
    if v.dtype == dt:
        return v
    if type(v) is Traced:
        return tnp.astype(v, dt)
    return v.astype(dt)


def _default_float() -> Any:
    return D.get_default_dtype().np


def _cat(k: str) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[k]


def _promote(a: Any, b: Any, div: bool = False) -> tuple[Any, Any]:
    """Cast two tensor values to PyTorch's result dtype where NumPy's differs."""
    da, db = a.dtype, b.dtype
    if da != db:
        ka, kb = _cat(da.kind), _cat(db.kind)
        if ka != kb:
            if ka > kb:
                b = _cast(b, da if db.kind != "c" else db)
            else:
                a = _cast(a, db)
            da = db = a.dtype if ka > kb else b.dtype
        else:
            za, zb = a.ndim == 0, b.ndim == 0
            if za and not zb:
                a = _cast(a, db)
            elif zb and not za:
                b = _cast(b, da)
    if div and da.kind in "biu" and db.kind in "biu":
        f = _default_float()
        a, b = _cast(a, f), _cast(b, f)
    return a, b


def _scalar_operand(a: Any, s: Any, div: bool = False) -> Any:
    """Cast tensor value ``a`` for an op with Python scalar ``s`` (PyTorch's rules)."""
    k = a.dtype.kind
    if k in "biu":
        ts = type(s)
        if ts is builtins.float or (div and ts in (builtins.int, builtins.bool)):
            return _cast(a, _default_float())
        if ts is complex:
            return _cast(a, np.complex64)
        if ts is builtins.int and k == "b":
            return _cast(a, np.int64)
    return a


def _operands(self: Tensor, other: Any, div: bool = False) -> tuple[Any, Any, Any]:
    a = self._value
    if isinstance(other, Tensor):
        b = other._value
        if div or a.dtype != b.dtype:
            a, b = _promote(a, b, div)
        return a, b, other
    if isinstance(other, (ndarray, _generic)):
        b = np.asarray(other)
        if div or a.dtype != b.dtype:
            a, b = _promote(a, b, div)
        return a, b, None
    if type(other) is not builtins.float or a.dtype.kind not in "fc":
        a = _scalar_operand(a, other, div)
    return a, other, None


def _dims(dim: Any, ndim: int) -> Any:
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(d % builtins.max(ndim, 1) for d in dim) if ndim else tuple(dim)
    return dim


_VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead."
)


def _contiguous(v: Any) -> builtins.bool:
    """Is array ``v`` row-major with no gaps (PyTorch's ``is_contiguous``)?"""
    flags = getattr(v, "flags", None)
    return flags is None or builtins.bool(flags.c_contiguous)


def _viewable(v: Any, shape: tuple[int, ...]) -> builtins.bool:
    """Can array ``v`` take ``shape`` without a copy, as ``Tensor.view`` needs?
    (Arrays other than NumPy's are taken as able to.)"""
    if _contiguous(v) or type(v) is not ndarray:
        return True
    try:
        np.reshape(v, shape, copy=False)  # NumPy >= 2.1
    except TypeError:  # an older NumPy: see whether a reshape would copy
        return builtins.bool(np.may_share_memory(v.reshape(shape), v))
    except ValueError:
        return False
    return True


def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(builtins.int(s) for s in shape)


class _ReturnTypes(tuple):
    """PyTorch's named (values, indices) result of ``max(dim)`` and friends."""

    _name = "max"

    def __new__(cls, values: Any, indices: Any, name: str = "max") -> _ReturnTypes:
        self = super().__new__(cls, (values, indices))
        self._name = name
        return self

    @property
    def values(self) -> Any:
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]

    _fields = ("values", "indices")

    def __repr__(self) -> str:
        a, b = self._fields
        return f"torch.return_types.{self._name}(\n{a}={self[0]!r},\n{b}={self[1]!r})"


# --- helpers of the extra PyTorch ops (scatter, index_add, aminmax ...; see Tensor's section) ------


class _MinMax(_ReturnTypes):
    """PyTorch's named (min, max) result of ``aminmax``."""

    _fields = ("min", "max")

    def __new__(cls, mn: Any, mx: Any) -> _MinMax:
        return super().__new__(cls, mn, mx, "aminmax")  # type: ignore[return-value]

    @property
    def min(self) -> Any:
        return self[0]

    @property
    def max(self) -> Any:
        return self[1]


_INT_INDEX = ("int64", "int32")
CROSS_NO_DIM = (
    "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
    "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
    "with that of linalg.cross in a future release."
)


def _dim(dim: int, ndim: int) -> int:
    """``dim`` counted from 0, or PyTorch's IndexError when it is out of range."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _index_arg(index: Any, dtypes: tuple[str, ...], exc: type[Exception], msg: str) -> Any:
    """The values of index tensor ``index``; ``exc(msg)`` when its dtype is not
    one of ``dtypes`` (``{}`` in ``msg``: PyTorch's name of the dtype)."""
    idx = np.asarray(value(_v(index)))
    if idx.dtype.name not in dtypes:
        raise exc(msg.format(SCALAR_TYPE.get(idx.dtype.name, idx.dtype.name)))
    return idx


def _check_bounds(idx: Any, size: int, dim: int, exc: type[Exception] = RuntimeError,
                  wrap: builtins.bool = False) -> None:
    """PyTorch's error for an index outside ``[0, size)`` (``[-size, size)`` with ``wrap``)."""
    bad = (idx >= size) | (idx < (-size if wrap else 0))
    if bad.any():
        raise exc(f"index {idx[bad].flat[0]} is out of bounds for dimension {dim} with size {size}")


def _broadcast_shape(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of shapes ``sa`` and ``sb``, or PyTorch's error."""
    n = builtins.max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    for i, (p, q) in enumerate(zip(pa, pb)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) "
                               f"at non-singleton dimension {i}")
    return tuple(q if p == 1 else p for p, q in zip(pa, pb))


def _scatter_key(x: Tensor, dim: int, index: Any, src: Any) -> tuple[tuple[Any, ...], tuple[slice, ...]]:
    """For ``x.scatter(dim, index, src)`` and ``scatter_add``: the NumPy index
    of the elements of ``x`` written (``index`` along ``dim``, its own
    positions along the others) and the part of ``src`` read, after
    PyTorch's checks."""
    shape = x._value.shape
    nd = len(shape)
    d = _dim(dim, nd)
    idx = _index_arg(index, _INT_INDEX, RuntimeError, "scatter(): Expected dtype int32/int64 for index")
    if idx.ndim != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    big = builtins.any(n > shape[k] for k, n in enumerate(idx.shape) if k != d)
    msg = f"Expected index {list(idx.shape)} to be no larger than self {list(shape)} apart from dimension {d}"
    if isinstance(src, Tensor):
        if src.ndim != nd:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if src._value.dtype != x._value.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        big = big or builtins.any(n > m for n, m in zip(idx.shape, src.shape))
        msg += f" and to be no larger size than src {list(src.shape)}"
    if big:
        raise RuntimeError(msg)
    _check_bounds(idx, shape[d] if nd else 1, d)
    key = tuple(idx if k == d else np.arange(n).reshape((-1,) + (1,) * (nd - k - 1)) for k, n in enumerate(idx.shape))
    return key, tuple(slice(0, n) for n in idx.shape)


def _put(x: Tensor, key: tuple[Any, ...], v: Any, src: Tensor | None, name: str) -> Tensor:
    """``x`` with ``v`` (values of tensor ``src``, or a number) written at NumPy
    index ``key``: node ``name`` with inputs ``x`` (and ``src``). Written-over
    elements get no gradient; each written value the gradient where it went."""
    a = x._value
    dt = value(a).dtype
    v = _cast(v, dt) if src is not None else np.asarray(v, dt)
    return _result(_w.setitem(a, _w.Index(key, a.ndim), v), name, (x,) if src is None else (x, src))


def _added(x: Tensor, key: tuple[Any, ...], v: Any, src: Tensor, name: str) -> Tensor:
    """``x`` with values ``v`` of tensor ``src`` added at NumPy index ``key``
    (repeated positions add up): node ``name`` with inputs ``x`` and ``src``."""
    a = x._value
    return _result(_w.add(a, _w.index_add(v, _w.Index(key, a.ndim), a.shape, 0)), name, (x, src))


def _index_key(key: Any) -> Any:
    """A PyTorch index with tensors read as NumPy arrays."""
    if isinstance(key, tuple):
        return tuple(_index_key(k) for k in key)
    if isinstance(key, Tensor):
        return value(key._value)
    if isinstance(key, list) and builtins.any(isinstance(k, Tensor) for k in key):
        return [_index_key(k) for k in key]
    return key


def _basic_key(k: Any) -> builtins.bool:
    """Does index ``k`` pick a view (ints, slices, None, ``...``), not a copy?"""
    items = k if isinstance(k, tuple) else (k,)
    return builtins.all(i is None or i is Ellipsis or isinstance(i, (slice, builtins.int, np.integer))
                        and not isinstance(i, (builtins.bool, np.bool_)) for i in items)


def _index_steps(k: Any, shape: tuple[int, ...]) -> list[str]:
    """The view ops PyTorch applies for basic index ``k`` on ``shape``, in
    order: ``None`` unsqueezes, an int selects, a slice that is no no-op
    slices (``x[-1, -2:]``: select, then slice)."""
    items = list(k) if isinstance(k, tuple) else [k]
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * fill
    steps, dim = [], 0
    for i in items:
        if i is None:
            steps.append("UnsqueezeBackward0")
            continue
        if isinstance(i, slice):
            if i.indices(shape[dim]) != (0, shape[dim], 1):
                steps.append("SliceBackward0")
        else:
            steps.append("SelectBackward0")
        dim += 1
    return steps


def _index_name(key: Any, setting: bool = False) -> str:
    items = key if isinstance(key, tuple) else (key,)
    advanced = False
    for k in items:
        if isinstance(k, (list, ndarray)) or (isinstance(k, Tensor)):
            advanced = True
    if setting:
        return "IndexPutBackward0" if advanced else "CopySlices"
    if advanced:
        return "IndexBackward0"
    if isinstance(key, slice):
        return "SliceBackward0"
    last = "AliasBackward0"
    for k in items:
        if k is None:
            last = "UnsqueezeBackward0"
        elif isinstance(k, slice):
            if k != slice(None):
                last = "SliceBackward0"
        elif k is not Ellipsis:
            last = "SelectBackward0"
    return last


def _wrap_hook(hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def raw(g: Any) -> Any:
        out = hook(_new(g))
        return g if out is None else _v(out)

    return raw


class _Handle:
    def __init__(self, store: list[Any], fn: Any) -> None:
        self._store = store
        self._fn = fn

    def remove(self) -> None:
        if self._fn in self._store:
            self._store.remove(self._fn)


_DONE = object()  # an in-place op that already wrote into the buffer


def _own(g: Any) -> Any:
    if type(g) is ndarray and (not g.flags.writeable or g.base is not None):
        return g.copy()
    return g


# --- the tensor ------------------------------------------------------------------------------------


class Tensor(metaclass=D.PyTorchNamed):
    """A PyTorch-style tensor on tapegrad's tape.

    Build one with :func:`tapegrad.torch.tensor` (or ``zeros``, ``randn`` ...).
    ``torch.Tensor(data)`` also works (float32, as in PyTorch). The class
    prints as PyTorch's does: ``<class 'torch.Tensor'>``.
    """

    _torch_name = "torch.Tensor"

    __slots__ = ("_value", "_grad_fn", "_vc", "__dict__", "__weakref__")
    _value: Any
    _grad_fn: Any
    _vc: Any  # a VersionCounter, or the FNode of the op that made the tensor (it counts too)
    _nr: builtins.int = 0  # which output of its grad_fn (set only by multi-output ops)
    __array_priority__ = 1000.0
    __array_ufunc__ = None
    _grad: Any = None
    _retains = False
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
        return _new(arr, cls if cls is not Tensor else None)

    # --- the wrapper protocol (tg.grad of a function of tensors) --------------------------------
    def __tapegrad_value__(self) -> Any:
        return self._value

    @classmethod
    def __tapegrad_box__(cls, v: Any, like: Any) -> Tensor:
        if type(v) is Traced and v._tape is GT:
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
        return type(v) is Traced and v._tape is GT

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    @property
    def is_leaf(self) -> bool:
        if self._grad_fn is not None:
            return False
        v = self._value
        return not (type(v) is Traced and v._tape is GT and v._node.prim is not None)

    @property
    def grad_fn(self) -> Any:
        fn = self._grad_fn
        if fn is None:
            v = self._value
            if type(v) is Traced and v._tape is GT and v._node.prim is not None:
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
        new = value(_v(other))
        v = self._value
        if type(v) is Traced:
            while type(v._value) is Traced:
                v = v._value
            v._value = new
        else:
            self._value = new

    @property
    def shape(self) -> D.Size:
        return D.Size(self._value.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape (a ``torch.Size``), or the length of axis ``dim``."""
        s = self._value.shape
        return D.Size(s) if dim is None else s[dim]

    @property
    def dtype(self) -> D.dtype:
        return D.from_np(self._value.dtype)

    @property
    def device(self) -> D.device:
        mod = type(value(self._value)).__module__
        return D.device("cuda", 0) if mod.startswith("cupy") else D.device("cpu")

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def dim(self) -> int:
        return self._value.ndim

    ndimension = dim

    def numel(self) -> int:
        return builtins.int(math.prod(self._value.shape))

    nelement = numel

    def element_size(self) -> int:
        return self._value.dtype.itemsize

    def stride(self, dim: int | None = None) -> Any:
        shape = self._value.shape
        st: Any
        st, acc = [], 1
        for n in reversed(shape):
            st.append(acc)
            acc *= n
        st = tuple(reversed(st))
        return st if dim is None else st[dim]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in row-major order with no gaps (a
        transpose, a strided slice or an ``expand`` is not)."""
        return _contiguous(value(self._value))

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """``self`` when contiguous, else a row-major copy (``CloneBackward0``)."""
        return self if self.is_contiguous() else self.clone()

    def is_floating_point(self) -> bool:
        return self._value.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._value.dtype.kind == "c"

    @property
    def _version(self) -> int:
        return self._vc.v

    @property
    def output_nr(self) -> int:
        return self._nr

    @property
    def T(self) -> Tensor:  # noqa: N802
        if self.ndim < 2:
            return self
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return self.transpose(-2, -1)

    @property
    def real(self) -> Tensor:
        if self._value.dtype.kind != "c":
            return self
        return _result(tnp.real(self._value), "RealBackward0", (self,))

    @property
    def imag(self) -> Tensor:
        return _result(tnp.imag(self._value), "ImagBackward0", (self,))

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
        """A tensor sharing this one's data and version counter, outside the graph."""
        t = _new(value(self._value))
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        self._value = value(self._value)
        self._grad_fn = None
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (leaves only); returns ``self``."""
        v = self._value
        on = type(v) is Traced and v._tape is GT
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
        tensor_hooks.setdefault(self._value._node, []).append(retain)

    def register_hook(self, hook: Callable[[Tensor], Any]) -> _Handle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned
        tensor replaces the gradient. Returns a handle with ``remove()``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fns = tensor_hooks.setdefault(self._value._node, [])
        raw = _wrap_hook(hook)
        at = next((i for i, f in enumerate(fns) if getattr(f, "_retain", False)), len(fns))
        fns.insert(at, raw)
        return _Handle(fns, raw)

    def _accumulate_grad(self) -> AccumulateGrad:
        ref = self._acc
        acc = ref() if ref is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._acc = weakref.ref(acc)
        return acc

    # --- conversion --------------------------------------------------------------------------------
    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        v = value(self._value)
        if v.size != 1:
            raise RuntimeError(f"a Tensor with {v.size} elements cannot be converted to Scalar")
        return v.item() if hasattr(v, "item") else v

    def tolist(self) -> Any:
        v = value(self._value)
        if type(v).__module__.startswith("cupy"):
            v = v.get()
        return np.asarray(v).tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory). Refuses a tensor that requires grad."""
        if self.requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        v = value(self._value)
        if type(v).__module__.startswith("cupy"):
            if not force:
                raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                                "to copy the tensor to host memory first.")
            v = v.get()
        return v

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """Convert dtype and/or device; returns ``self`` when nothing changes."""
        dtype = kwargs.get("dtype")
        dev = kwargs.get("device")
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, (str, D.device)):
                dev = a
        t = self
        if dev is not None and D.device(dev).type != self.device.type:
            t = _result(P.to_device(t._value, D.device(dev).type), "ToCopyBackward0", (t,))
        if dtype is not None and D.to_np(dtype) != t._value.dtype:
            t = _result(_cast(t._value, D.to_np(dtype)), "ToCopyBackward0", (t,))
        if kwargs.get("copy") and t is self:
            t = self.clone()
        return t

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"torch.{self.dtype_legacy_name()}"
        if isinstance(dtype, str):
            dtype = {"torch.FloatTensor": D.float32, "torch.DoubleTensor": D.float64,
                     "torch.LongTensor": D.int64, "torch.IntTensor": D.int32,
                     "torch.BoolTensor": D.bool_}[dtype]
        return self.to(dtype)

    def dtype_legacy_name(self) -> str:
        return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor",
                "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}[self.dtype.name]

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Tensor:
        return self.to("cuda")

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def half(self) -> Tensor:
        return self.to(D.float16)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def int(self) -> Tensor:
        return self.to(D.int32)

    def bool(self) -> Tensor:
        return self.to(D.bool_)

    def clone(self, memory_format: Any = None) -> Tensor:
        return _result(tnp.copy(self._value), "CloneBackward0", (self,))

    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> Tensor:
        from tapegrad.torch._creation import tensor

        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None) -> Tensor:
        return _new(np.zeros(_shape_arg(size), dtype=D.to_np(dtype or self.dtype)))

    def new_ones(self, *size: Any, dtype: Any = None) -> Tensor:
        return _new(np.ones(_shape_arg(size), dtype=D.to_np(dtype or self.dtype)))

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None) -> Tensor:
        return _new(np.full(tuple(size), fill_value, dtype=D.to_np(dtype or self.dtype)))

    def new_empty(self, *size: Any, dtype: Any = None) -> Tensor:
        return self.new_zeros(*size, dtype=dtype)

    # --- printing -----------------------------------------------------------------------------------
    def __repr__(self, *, tensor_contents: Any = None) -> str:
        v = value(self._value)
        if type(v).__module__.startswith("cupy"):
            v, dev = v.get(), "cuda:0"
        else:
            v, dev = np.asarray(v), None
        fn = self.grad_fn
        d = D.from_np(v.dtype)
        default = D.get_default_dtype()
        defaults = (default.name, default.to_complex().name, "int64", "bool")
        return _format.tensor_repr(v, d.name, defaults, dev,
                                   type(fn).__name__ if fn is not None else None, self.requires_grad)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    # --- Python protocol -----------------------------------------------------------------------------
    def __len__(self) -> builtins.int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> builtins.bool:
        v = value(self._value)
        if v.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(v.item() if hasattr(v, "item") else v)

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self) -> builtins.int:
        return builtins.int(self.item())

    def __index__(self) -> builtins.int:
        if self._value.dtype.kind not in "biu":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __hash__(self) -> builtins.int:
        return id(self)

    def __contains__(self, x: Any) -> builtins.bool:
        return builtins.bool(np.any(value(self._value) == value(_v(x))))

    def __reduce_ex__(self, proto: Any) -> Any:
        return (_rebuild, (value(self._value), self.requires_grad))

    def __deepcopy__(self, memo: dict[builtins.int, Any]) -> Tensor:
        t = _new(np.array(value(self._value), copy=True), type(self) if type(self) is not Tensor else None)
        if self.requires_grad:
            t.requires_grad_(True)
        if self._grad is not None:
            t._grad = _new(np.array(value(self._grad._value), copy=True))
        memo[id(self)] = t
        return t

    # --- arithmetic ----------------------------------------------------------------------------------
    def _arith(self, other: Any, fn: Any, name: str, div: builtins.bool = False) -> Tensor:
        """``fn(self, other)`` with PyTorch's promotion, named ``name``."""
        if fn is _w.subtract:
            _check_bool_sub(self, other)
        a, b, o = _operands(self, other, div)
        t = _rec2(fn.primitive, a, b, name, (self, o))
        if t is not None:
            return t
        return _result(fn(a, b), name, (self, o))

    # A float tensor and a Python float (x * 1.0001) need no promotion: the
    # operators try _rec1 first, before _arith's general path.
    __add__ = __radd__ = _operator(_ADD, "AddBackward0")
    __sub__ = _operator(_SUB, "SubBackward0")

    def __rsub__(self, other: Any) -> Tensor:
        _check_bool_sub(self, other)
        a, b, o = _operands(self, other)
        return _result(_w.subtract(b, a), "RsubBackward1", (self,))

    __mul__ = __rmul__ = _operator(_MUL, "MulBackward0")
    __truediv__ = _operator(_DIV, "DivBackward0", div=True)

    def __rtruediv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other, div=True)
        r = _result(_w.reciprocal(a), "ReciprocalBackward0", (self,))
        return _result(_w.multiply(r._value, b), "MulBackward0", (r, None))

    def __floordiv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        return _new(np.asarray(np.floor_divide(value(a), value(b))))

    def __rfloordiv__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        return _new(np.asarray(np.floor_divide(value(b), value(a))))

    def __mod__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        if o is not None:
            return _result(_w.remainder(a, b), "RemainderBackward1", (self, o))
        return _result(_w.remainder(a, b), "RemainderBackward0", (self,))

    def __rmod__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(_w.remainder(b, a), "RemainderBackward1", (self,))

    def __pow__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        if o is None:
            return _result(_w.power(a, b), "PowBackward0", (self,))
        return _result(_w.power(a, b), "PowBackward1", (self, o))

    def __rpow__(self, other: Any) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(_w.power(b, a), "PowBackward2", (self,))

    def __matmul__(self, other: Any) -> Tensor:
        a, b = self._value, _v(other)
        if a.dtype != b.dtype:
            a, b = _promote(a, b)
        na, nb = a.ndim, b.ndim
        if na == 1 and nb == 1:
            name = "DotBackward0"
        elif na == 2 and nb == 1:
            name = "MvBackward0"
        elif na == 2 and nb == 2:
            name = "MmBackward0"
        elif na == 1 and nb == 2:
            name = "SqueezeBackward4"
        else:
            name = "UnsafeViewBackward0" if na >= 3 and nb <= 2 or (na >= 3 and nb >= 3) else "ExpandBackward0"
            if na <= 2 and nb >= 3:
                name = "UnsafeViewBackward0"
        if isinstance(other, Tensor):
            t = _rec2(_MATMUL, a, b, name, (self, other))
            if t is not None:
                return t
        return _result(_w.matmul(a, b), name, (self, other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return _as_tensor(other).__matmul__(self)

    def __neg__(self) -> Tensor:
        if self._value.dtype == np.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return _result(_w.negative(self._value), "NegBackward0", (self,))

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        v = value(self._value)
        return _new(np.asarray(~v if v.dtype.kind in "biu" else np.logical_not(v)))

    def __and__(self, other: Any) -> Tensor:
        return _new(np.asarray(np.bitwise_and(value(self._value), value(_v(other)))))

    def __or__(self, other: Any) -> Tensor:
        return _new(np.asarray(np.bitwise_or(value(self._value), value(_v(other)))))

    def __xor__(self, other: Any) -> Tensor:
        return _new(np.asarray(np.bitwise_xor(value(self._value), value(_v(other)))))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def _compare(self, other: Any, fn: Any) -> Tensor:
        return _new(np.asarray(fn(value(self._value), value(_v(other)))))

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    def eq(self, other: Any) -> Tensor:
        return self == other

    def ne(self, other: Any) -> Tensor:
        return self != other

    def lt(self, other: Any) -> Tensor:
        return self < other

    def le(self, other: Any) -> Tensor:
        return self <= other

    def gt(self, other: Any) -> Tensor:
        return self > other

    def ge(self, other: Any) -> Tensor:
        return self >= other

    def equal(self, other: Tensor) -> builtins.bool:
        a, b = value(self._value), value(other._value)
        return a.shape == b.shape and builtins.bool(np.all(a == b))

    def allclose(self, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> builtins.bool:
        return builtins.bool(np.allclose(value(self._value), value(_v(other)), rtol, atol, equal_nan))

    def isclose(self, other: Tensor, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08, equal_nan: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.isclose(value(self._value), value(_v(other)), rtol, atol, equal_nan)))

    def isnan(self) -> Tensor:
        return _new(np.asarray(np.isnan(value(self._value))))

    def isinf(self) -> Tensor:
        return _new(np.asarray(np.isinf(value(self._value))))

    def isfinite(self) -> Tensor:
        return _new(np.asarray(np.isfinite(value(self._value))))

    def logical_not(self) -> Tensor:
        return _new(np.asarray(np.logical_not(value(self._value))))

    def logical_and(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_and)

    def logical_or(self, other: Any) -> Tensor:
        return self._compare(other, np.logical_or)

    # named arithmetic
    def add(self, other: Any, alpha: Any = 1) -> Tensor:
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other: Any, alpha: Any = 1) -> Tensor:
        return self - (other * alpha if alpha != 1 else other)

    subtract = sub

    def mul(self, other: Any) -> Tensor:
        return self * other

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self / other
        fn = np.floor_divide if rounding_mode == "floor" else (lambda a, b: np.trunc(a / b))
        r = np.asarray(fn(value(self._value), value(_v(other))))
        return _new(r.astype(self._value.dtype) if self._value.dtype.kind in "biu" else r)

    divide = true_divide = div

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def neg(self) -> Tensor:
        return -self

    negative = neg

    def matmul(self, other: Tensor) -> Tensor:
        return self @ other

    def mm(self, other: Tensor) -> Tensor:
        return self @ other

    def mv(self, other: Tensor) -> Tensor:
        return self @ other

    def dot(self, other: Tensor) -> Tensor:
        return self @ other

    def outer(self, other: Tensor) -> Tensor:
        return self.reshape(-1, 1) * other

    ger = outer

    def bmm(self, other: Tensor) -> Tensor:
        """Batched matrix product of two 3-D tensors (``BmmBackward0``)."""
        if self.ndim != 3 or other.ndim != 3:
            raise RuntimeError("batch1 must be a 3D tensor" if self.ndim != 3 else "batch2 must be a 3D tensor")
        if self.shape[0] != other.shape[0] or self.shape[2] != other.shape[1]:
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{self.shape[0]}, {self.shape[2]}] "
                f"but got: [{other.shape[0]}, {other.shape[1]}].")
        a, b = self._value, other._value
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_TYPE[a.dtype.name]} but found "
                               f"{SCALAR_TYPE[b.dtype.name]}")
        return _result(_w.matmul(a, b), "BmmBackward0", (self, other))

    # (added for nn.Linear) ``torch.addmm``: one node, named as PyTorch names it
    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)`` as one ``AddmmBackward0`` node
        (``self`` broadcasts; ``nn.Linear`` calls ``bias.addmm(x, weight.t())``)."""
        a, b, s = mat1._value, mat2._value, self._value
        if a.ndim != 2 or b.ndim != 2:
            raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor" if a.ndim != 2
                               else f"mat2 must be a matrix, got {b.ndim}-D tensor")
        m = _w.matmul(a, b)
        if alpha != 1:
            m = _w.multiply(m, alpha)
        if beta != 1:
            s = _w.multiply(s, beta)
        return _result(_w.add(m, s), "AddmmBackward0", (self, mat1, mat2))

    def addcmul(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        r = self + t1 * t2 * value if value != 1 else self + t1 * t2
        return _renamed(r, "AddcmulBackward0", (self, t1, t2))

    def addcdiv(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        r = self + t1 / t2 * value if value != 1 else self + t1 / t2
        return _renamed(r, "AddcdivBackward0", (self, t1, t2))

    def lerp(self, end: Any, weight: Any) -> Tensor:
        r = self + (end - self) * weight
        if isinstance(weight, Tensor):
            return _renamed(r, "LerpBackward1", (self, end, weight))
        return _renamed(r, "LerpBackward0", (self, end))

    def _unary(self, fn: Any, name: str) -> Tensor:
        a = self._value
        prim = getattr(fn, "primitive", None)
        if prim is not None:
            t = _rec1(prim, a, name, self)
            if t is not None:
                return t
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        return _result(fn(a), name, (self,))

    exp = _unary_method(_w.exp, "ExpBackward0")
    exp2 = _unary_method(_w.exp2, "Exp2Backward0")
    expm1 = _unary_method(_w.expm1, "Expm1Backward0")
    log = _unary_method(_w.log, "LogBackward0")
    log2 = _unary_method(_w.log2, "Log2Backward0")
    log10 = _unary_method(_w.log10, "Log10Backward0")
    log1p = _unary_method(_w.log1p, "Log1PBackward0")
    sqrt = _unary_method(_w.sqrt, "SqrtBackward0")

    def rsqrt(self) -> Tensor:
        return self._unary(lambda a: _w.reciprocal(_w.sqrt(a)), "RsqrtBackward0")

    def square(self) -> Tensor:
        return _result(_w.power(self._value, 2), "PowBackward0", (self,))

    sin = _unary_method(_w.sin, "SinBackward0")
    cos = _unary_method(_w.cos, "CosBackward0")
    tan = _unary_method(_w.tan, "TanBackward0")
    asin = _unary_method(_w.arcsin, "AsinBackward0")
    acos = _unary_method(_w.arccos, "AcosBackward0")
    atan = _unary_method(_w.arctan, "AtanBackward0")

    arcsin, arccos, arctan = asin, acos, atan

    sinh = _unary_method(_w.sinh, "SinhBackward0")
    cosh = _unary_method(_w.cosh, "CoshBackward0")
    tanh = _unary_method(_w.tanh, "TanhBackward0")
    asinh = _unary_method(_w.arcsinh, "AsinhBackward0")
    acosh = _unary_method(_w.arccosh, "AcoshBackward0")
    atanh = _unary_method(_w.arctanh, "AtanhBackward0")
    sigmoid = _unary_method(P.sigmoid, "SigmoidBackward0")

    def relu(self) -> Tensor:
        return _result(P.relu(self._value), "ReluBackward0", (self,))

    def abs(self) -> Tensor:
        return _result(_w.absolute(self._value), "AbsBackward0", (self,))

    absolute = abs

    reciprocal = _unary_method(_w.reciprocal, "ReciprocalBackward0")

    def sign(self) -> Tensor:
        return self._rounding(np.sign, "SignBackward0")

    def sgn(self) -> Tensor:
        return self.sign()

    def _rounding(self, fn: Any, name: str) -> Tensor:
        a = self._value
        r = fn(value(a))
        if type(a) is Traced and a.dtype.kind in "fc":
            return _result(P.stepped(a, np.asarray(r)), name, (self,))
        return _new(np.asarray(r))

    def floor(self) -> Tensor:
        return self._rounding(np.floor, "FloorBackward0")

    def ceil(self) -> Tensor:
        return self._rounding(np.ceil, "CeilBackward0")

    def round(self, decimals: builtins.int = 0) -> Tensor:
        return self._rounding(lambda v: np.round(v, decimals), "RoundBackward0")

    def trunc(self) -> Tensor:
        return self._rounding(np.trunc, "TruncBackward0")

    def frac(self) -> Tensor:
        return _result(self._value - np.trunc(value(self._value)), "FracBackward0", (self,))

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        a = self._value
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            lo = _v(min) if min is not None else None
            hi = _v(max) if max is not None else None
            # PyTorch's gradients at the bounds: to x where min <= x <= max (not
            # a tie split as maximum's), to max where min > max, and to none
            # where x < min == max
            x = value(a)
            r = a
            if lo is not None and hi is not None:
                lv, hv = value(lo), value(hi)
                r = tnp.where((x < lv) & (lv == hv), lv, r)
                r = tnp.where((x < lv) & (lv < hv), lo, r)
                r = tnp.where((x > hv) | (hv < lv), hi, r)
            elif lo is not None:
                r = tnp.where(x < value(lo), lo, r)
            else:
                r = tnp.where(x > value(hi), hi, r)
            ins = [self] + [x for x in (min, max) if isinstance(x, Tensor)]
            return _result(r, "ClampBackward0", ins)
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if isinstance(min, builtins.float) or isinstance(max, builtins.float):
            a = _scalar_operand(a, 1.0)
        return _result(_w.clip(a, min, max), "ClampBackward1", (self,))

    clip = clamp

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002
        t = self.clamp(min=min)
        if t._grad_fn is not None and not isinstance(min, Tensor):
            t._grad_fn.__class__ = node_class("ClampMinBackward0")
        return t

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002
        t = self.clamp(max=max)
        if t._grad_fn is not None and not isinstance(max, Tensor):
            t._grad_fn.__class__ = node_class("ClampMaxBackward0")
        return t

    def maximum(self, other: Tensor) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(_w.maximum(a, b), "MaximumBackward0", (self, o))

    def minimum(self, other: Tensor) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(_w.minimum(a, b), "MinimumBackward0", (self, o))

    def atan2(self, other: Tensor) -> Tensor:
        a, b, o = _operands(self, other)
        return _result(_w.arctan2(a, b), "Atan2Backward0", (self, o))

    arctan2 = atan2

    def where(self, condition: Any, other: Any) -> Tensor:
        from tapegrad.torch._creation import where

        return where(condition, self, other)

    def masked_fill(self, mask: Any, value_: Any) -> Tensor:
        a = self._value
        fill = _v(value_)
        return _result(_w.where3(value(_v(mask)), fill if not isinstance(fill, (builtins.float, builtins.int)) else np.asarray(fill, a.dtype), a),
                       "MaskedFillBackward0", (self,))

    def softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(P.softmax, dim, dtype, "SoftmaxBackward0")

    def log_softmax(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return self._softmax(P.log_softmax, dim, dtype, "LogSoftmaxBackward0")

    def _softmax(self, fn: Any, dim: builtins.int, dtype: Any, name: str) -> Tensor:
        """``fn`` (softmax or log_softmax) along ``dim``, computed in ``dtype``
        (a cast first, as PyTorch records it)."""
        a = self._value if dtype is None else _cast(self._value, D.to_np(dtype))
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        t = _rec1(fn.primitive, a, name, self, {"axis": dim})
        if t is not None:
            return t
        return _result(fn(a, dim), name, (self,))

    def logsumexp(self, dim: Any, keepdim: builtins.bool = False) -> Tensor:
        kw = {"axis": _dims(dim, self.ndim), "keepdims": keepdim}
        t = _rec1(_LOGSUMEXP, self._value, "LogsumexpBackward0", self, kw)
        return t if t is not None else _result(tnp.logsumexp(self._value, **kw), "LogsumexpBackward0", (self,))

    # --- reductions ------------------------------------------------------------------------------------
    def sum(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        dt = D.to_np(dtype) if dtype is not None else (np.int64 if a.dtype.kind in "bi" else None)
        if dim is None:
            if dt is None:
                t = _rec1(_SUM, a, "SumBackward0", self)
                if t is not None:
                    return t
            return _result(_w.sum(a, dtype=dt), "SumBackward0", (self,))
        axis = _dims(dim, a.ndim)
        if dt is None:
            t = _rec1(_SUM, a, "SumBackward1", self, {"axis": axis, "keepdims": keepdim})
            if t is not None:
                return t
        return _result(_w.sum(a, axis=axis, keepdims=keepdim, dtype=dt), "SumBackward1", (self,))

    def nansum(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        a = self._value
        clean = _w.where3(np.isnan(value(a)), np.zeros((), a.dtype), a)
        return _result(_w.sum(clean, axis=_dims(dim, a.ndim), keepdims=keepdim), "NansumBackward0", (self,))

    def mean(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        if dtype is not None:
            a = _cast(a, D.to_np(dtype))
        if a.dtype.kind not in "fc":
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {self.dtype_legacy_name()[:-6]}"
            )
        kw = None if dim is None else {"axis": _dims(dim, a.ndim), "keepdims": keepdim}
        name = "MeanBackward0" if dim is None else "MeanBackward1"
        t = _rec1(_MEAN, a, name, self, kw)
        return t if t is not None else _result(P.mean(a, **(kw or {})), name, (self,))

    def prod(self, dim: Any = None, keepdim: builtins.bool = False, dtype: Any = None) -> Tensor:
        a = self._value
        if dim is None:
            return _result(_w.prod(a), "ProdBackward0", (self,))
        return _result(_w.prod(a, axis=dim, keepdims=keepdim), "ProdBackward1", (self,))

    def _minmax(self, dim: Any, keepdim: builtins.bool, reducer: Any, arg: Any, name: str, other: Any = None) -> Any:
        a = self._value
        if isinstance(dim, Tensor):
            other = dim
        if other is not None:
            return (self.maximum if name == "max" else self.minimum)(other)
        cap = name.capitalize()
        if dim is None:
            return _result(reducer(a), f"{cap}Backward1", (self,))
        idx = arg(value(a), axis=dim, keepdims=True)
        vals = tnp.take_along_axis(a, idx, dim)
        if not keepdim:
            vals = tnp.squeeze(vals, dim)
            idx = np.squeeze(idx, dim)
        return _ReturnTypes(_result(vals, f"{cap}Backward0", (self,)), _new(np.asarray(idx, np.int64)), name)

    def max(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._minmax(dim, keepdim, _w.amax, np.argmax, "max")

    def min(self, dim: Any = None, keepdim: builtins.bool = False) -> Any:
        return self._minmax(dim, keepdim, _w.amin, np.argmin, "min")

    def amax(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        d = None if dim == () else _dims(dim, self.ndim)
        return _result(_w.amax(self._value, axis=d, keepdims=keepdim), "AmaxBackward0", (self,))

    def amin(self, dim: Any = (), keepdim: builtins.bool = False) -> Tensor:
        d = None if dim == () else _dims(dim, self.ndim)
        return _result(_w.amin(self._value, axis=d, keepdims=keepdim), "AminBackward0", (self,))

    def argmax(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.argmax(value(self._value), axis=dim, keepdims=keepdim), np.int64))

    def argmin(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.argmin(value(self._value), axis=dim, keepdims=keepdim), np.int64))

    def argsort(self, dim: builtins.int = -1, descending: builtins.bool = False) -> Tensor:
        v = value(self._value)
        idx = np.argsort(-v if descending else v, axis=dim, kind="stable")
        return _new(np.asarray(idx, np.int64))

    def sort(self, dim: builtins.int = -1, descending: builtins.bool = False) -> Any:
        idx = self.argsort(dim, descending)
        vals = _result(tnp.take_along_axis(self._value, value(idx._value), dim), "SortBackward0", (self,))
        return _ReturnTypes(vals, idx, "sort")

    def topk(self, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True, sorted: builtins.bool = True) -> Any:  # noqa: A002
        idx = self.argsort(dim, descending=largest)
        sl = [slice(None)] * self.ndim
        sl[dim] = slice(0, k)
        ii = value(idx._value)[tuple(sl)]
        vals = _result(tnp.take_along_axis(self._value, ii, dim), "TopkBackward0", (self,))
        return _ReturnTypes(vals, _new(ii), "topk")

    def _var(self, dim: Any, unbiased: Any, keepdim: builtins.bool, correction: Any) -> Any:
        ddof = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
        return tnp.var(self._value, axis=_dims(dim, self.ndim), ddof=ddof, keepdims=keepdim)

    def var(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *, correction: Any = None) -> Tensor:
        if isinstance(dim, builtins.bool):
            dim, unbiased = None, dim
        return _result(self._var(dim, unbiased, keepdim, correction), "VarBackward0", (self,))

    def std(self, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False, *, correction: Any = None) -> Tensor:
        if isinstance(dim, builtins.bool):
            dim, unbiased = None, dim
        return _result(P.norm_sqrt(self._var(dim, unbiased, keepdim, correction)), "StdBackward0", (self,))

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        a = self._value
        d = _dims(dim, self.ndim)
        if p in ("fro", 2, 2.0):
            r = P.norm_sqrt(_w.sum(a * a if a.dtype.kind != "c" else _w.real(a * _w.conjugate(a)), axis=d, keepdims=keepdim))
        elif p in (1, 1.0):
            r = _w.sum(_w.absolute(a), axis=d, keepdims=keepdim)
        elif p == math.inf:
            r = _w.amax(_w.absolute(a), axis=d, keepdims=keepdim)
        else:
            r = _w.power(_w.sum(_w.power(_w.absolute(a), p), axis=d, keepdims=keepdim), 1.0 / p)
        return _result(r, "LinalgVectorNormBackward0", (self,))

    def all(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.all(value(self._value), axis=dim, keepdims=keepdim)))

    def any(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _new(np.asarray(np.any(value(self._value), axis=dim, keepdims=keepdim)))

    def count_nonzero(self, dim: Any = None) -> Tensor:
        return _new(np.asarray(np.count_nonzero(value(self._value), axis=dim), np.int64))

    def cumsum(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return _result(_w.cumsum(self._value, axis=dim), "CumsumBackward0", (self,))

    def cumprod(self, dim: builtins.int, dtype: Any = None) -> Tensor:
        return _result(_w.cumprod(self._value, axis=dim), "CumprodBackward0", (self,))

    def trace(self) -> Tensor:
        return _result(tnp.trace(self._value), "TraceBackward0", (self,))

    def diag(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(tnp.diag(self._value, diagonal), "DiagBackward0" if self.ndim == 2 else "DiagEmbedBackward0", (self,))

    def diagonal(self, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> Tensor:
        return _viewed(_result(_w.diagonal(self._value, offset, dim1, dim2), "DiagonalBackward0", (self,)), self,
                       "diagonal", (offset, dim1, dim2))

    def triu(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(_w.triu(self._value, diagonal), "TriuBackward0", (self,))

    def tril(self, diagonal: builtins.int = 0) -> Tensor:
        return _result(_w.tril(self._value, diagonal), "TrilBackward0", (self,))

    # --- shape -------------------------------------------------------------------------------------------
    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], D.dtype):
            return _new(value(self._value).view(shape[0].np))
        size = _shape_arg(shape)
        if not _viewable(value(self._value), size):
            raise RuntimeError(_VIEW_ERROR)
        return _viewed(_result(tnp.reshape(self._value, size), "ViewBackward0", (self,)), self, "shape", size)

    def reshape(self, *shape: Any) -> Tensor:
        """A view when the elements allow one, else a copy, named as PyTorch
        names them: ``ViewBackward0`` (contiguous), ``ReshapeAliasBackward0``
        (a view of a non-contiguous tensor), ``UnsafeViewBackward0`` after a
        ``CloneBackward0`` (a copy)."""
        size = _shape_arg(shape)
        a = self._value
        v = value(a)
        if type(a) is not Traced or _contiguous(v):
            return _viewed(_result(tnp.reshape(a, size), "ViewBackward0", (self,)), self, "shape", size)
        if _viewable(v, size):
            return _viewed(_result(tnp.reshape(a, size), "ReshapeAliasBackward0", (self,)), self, "shape", size)
        c = self.clone()
        return _result(tnp.reshape(c._value, size), "UnsafeViewBackward0", (c,))

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(*other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(*other.shape)

    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        s = self._value.shape
        if not s:
            return self.reshape(1)
        st, en = start_dim % len(s), end_dim % len(s)
        if st == en:
            return self
        return self.reshape(*(s[:st] + (-1,) + s[en + 1 :]))

    def unflatten(self, dim: builtins.int, sizes: Sequence[builtins.int]) -> Tensor:
        s = self._value.shape
        d = dim % len(s)
        return self.view(*(s[:d] + tuple(sizes) + s[d + 1 :]))

    def ravel(self) -> Tensor:
        return self.reshape(-1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return _viewed(_result(_w.transpose(self._value), "TBackward0", (self,)), self, "perm",
                       tuple(range(self.ndim))[::-1])

    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor:
        perm = list(range(self.ndim))
        if perm:
            perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return _viewed(_result(tnp.swapaxes(self._value, dim0, dim1), "TransposeBackward0", (self,)), self, "perm",
                       tuple(perm))

    swapaxes = swapdims = transpose

    def permute(self, *dims: Any) -> Tensor:
        perm = tuple(d % builtins.max(self.ndim, 1) for d in _shape_arg(dims))
        return _viewed(_result(_w.transpose(self._value, perm), "PermuteBackward0", (self,)), self, "perm", perm)

    def movedim(self, source: Any, destination: Any) -> Tensor:
        r = _result(tnp.moveaxis(self._value, source, destination), "PermuteBackward0", (self,))
        # the permutation: where moveaxis sends the axes of a zero-stride array
        # whose sizes number them
        probe = np.broadcast_to(np.empty(()), tuple(range(2, self.ndim + 2)))
        perm = tuple(n - 2 for n in np.moveaxis(probe, source, destination).shape)
        return _viewed(r, self, "perm", perm)

    def squeeze(self, dim: Any = None) -> Tensor:
        a = self._value
        if dim is None:
            r = _result(tnp.squeeze(a), "SqueezeBackward0", (self,))
            return _viewed(r, self, "shape", r.shape)
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        keep = tuple(d % builtins.max(a.ndim, 1) for d in dims if a.ndim and a.shape[d] == 1)
        name = "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"
        r = _result(tnp.squeeze(a, keep) if keep else tnp.reshape(a, a.shape), name, (self,))
        return _viewed(r, self, "shape", r.shape)

    def unsqueeze(self, dim: builtins.int) -> Tensor:
        r = _result(tnp.expand_dims(self._value, dim), "UnsqueezeBackward0", (self,))
        return _viewed(r, self, "shape", r.shape)

    def expand(self, *sizes: Any) -> Tensor:
        sizes = _shape_arg(sizes)
        a = self._value
        lead = len(sizes) - a.ndim
        shape = tuple(a.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(sizes))
        if shape[lead:] == a.shape and builtins.all(n == 1 for n in shape[:lead]):  # no element repeats:
            return _viewed(_result(tnp.reshape(a, shape), "ExpandBackward0", (self,)), self, "shape", shape)  # a plain view
        return _viewed(_result(_w.broadcast_to(a, shape), "ExpandBackward0", (self,)), self, "expand", shape)

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(*other.shape)

    def broadcast_to(self, size: Any) -> Tensor:
        return self.expand(*size)

    def repeat(self, *sizes: Any) -> Tensor:
        return _result(tnp.tile(self._value, _shape_arg(sizes)), "RepeatBackward0", (self,))

    def flip(self, *dims: Any) -> Tensor:
        return _result(_w.flip(self._value, _shape_arg(dims)), "FlipBackward0", (self,))

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        return _result(_w.roll(self._value, shifts, dims), "RollBackward0", (self,))

    def unbind(self, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim`` (one ``UnbindBackward0`` node for all of them)."""
        a = self._value
        d = dim % a.ndim
        pre = (slice(None),) * d
        keys = [pre + (i,) for i in range(a.shape[d])]
        outs = _multi([a[k] for k in keys], "UnbindBackward0", (self,))
        return tuple(_viewed(o, self, "multi", ("Unbind", i, k)) for i, (o, k) in enumerate(zip(outs, keys)))

    def split(self, split_size: Any, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        a = self._value
        d = dim % a.ndim
        n = a.shape[d]
        if isinstance(split_size, (list, tuple)):
            sizes, name = list(split_size), "SplitWithSizesBackward0"
        else:
            sizes, name = [builtins.min(split_size, n - i) for i in range(0, n, split_size)], "SplitBackward0"
        pre = (slice(None),) * d
        keys, at = [], 0
        for s in sizes:
            keys.append(pre + (slice(at, at + s),))
            at += s
        outs = _multi([a[k] for k in keys], name, (self,))
        return tuple(_viewed(o, self, "multi", (name.removesuffix("Backward0"), i, k))
                     for i, (o, k) in enumerate(zip(outs, keys)))

    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        n = self._value.shape[dim]
        return self.split(builtins.max(1, -(-n // chunks)), dim)

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        key = (slice(None),) * (dim % self.ndim) + (slice(start, start + length),)
        return _viewed(_result(self._value[key], "SliceBackward0", (self,)), self, "index", key)

    def select(self, dim: builtins.int, index: builtins.int) -> Tensor:
        key = (slice(None),) * (dim % self.ndim) + (index,)
        return _viewed(_result(self._value[key], "SelectBackward0", (self,)), self, "index", key)

    def index_select(self, dim: builtins.int, index: Tensor) -> Tensor:
        key = (slice(None),) * (dim % self.ndim) + (value(_v(index)),)
        return _result(self._value[key], "IndexSelectBackward0", (self,))

    def gather(self, dim: builtins.int, index: Tensor) -> Tensor:
        return _result(tnp.take_along_axis(self._value, value(_v(index)), dim), "GatherBackward0", (self,))

    def nonzero(self, as_tuple: builtins.bool = False) -> Any:
        nz = np.nonzero(value(self._value))
        if as_tuple:
            return tuple(_new(np.asarray(i, np.int64)) for i in nz)
        return _new(np.stack(nz, axis=1).astype(np.int64))

    # --- more PyTorch ops: elementwise, scatter / index ops, scans ---------------------------------------
    # Built from differentiable tapegrad.numpy calls (no gradient rules of their
    # own); each is one node named as PyTorch names it.
    def _modulo(self, other: Any, fn: Any, op: str) -> Tensor:
        """``fn(self, other)`` (remainder or fmod) with PyTorch's promotion,
        errors and names (``...Backward0`` with a number, ``1`` with a tensor)."""
        a, b, o = _operands(self, other)
        if a.dtype.kind == "b":
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")
        if a.dtype.kind in "iu" and not np.all(value(b)):
            raise RuntimeError("ZeroDivisionError")
        stem = op.capitalize()
        if o is None:
            return _result(fn(a, b), f"{stem}Backward0", (self,))
        return _result(fn(a, b), f"{stem}Backward1", (self, o))

    def remainder(self, other: Any) -> Tensor:
        """Python's modulo: the result has the sign of ``other``."""
        return self._modulo(other, _w.remainder, "remainder")

    def fmod(self, other: Any) -> Tensor:
        """C's modulo: the result has the sign of ``self``."""
        return self._modulo(other, _w.fmod, "fmod")

    def _float_pair(self, other: Any, fn: Any, op: str, name: str) -> Tensor:
        """``fn(self, other)`` for an op PyTorch defines on two floating tensors."""
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        a, b, o = _operands(self, other)
        if a.dtype.kind not in "fc":
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{SCALAR_TYPE[a.dtype.name]}'")
        return _result(fn(a, b), name, (self, other))

    def hypot(self, other: Tensor) -> Tensor:
        """``sqrt(self**2 + other**2)``; its gradient at (0, 0) is NaN, as PyTorch's."""
        return self._float_pair(other, _w.hypot, "hypot", "HypotBackward0")

    def logaddexp(self, other: Tensor) -> Tensor:
        """``log(exp(self) + exp(other))``, computed stably."""
        return self._float_pair(other, _w.logaddexp, "logaddexp", "LogaddexpBackward0")

    erf = _unary_method(tsp.erf, "ErfBackward0")
    sinc = _unary_method(_w.sinc, "SincBackward0")

    def logit(self, eps: builtins.float | None = None) -> Tensor:
        """``log(p / (1 - p))``; with ``eps``, ``p`` clamped to ``[eps, 1 - eps]``
        first (no gradient outside). Without it the gradient is NaN outside
        ``[0, 1]`` and infinite at 0 and 1, as PyTorch's."""
        a = self._value
        if a.dtype.kind in "biu":
            a = _cast(a, _default_float())
        if eps is not None:
            a = _w.clip(a, eps, 1 - eps)
        else:
            v = value(a)
            outside = (v < 0) | (v > 1)
            if outside.any():
                a = _w.multiply(a, np.where(outside, np.nan, 1).astype(v.dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            return _result(tsp.logit(a), "LogitBackward0", (self,))

    def nan_to_num(self, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                   neginf: builtins.float | None = None) -> Tensor:
        """NaN, +inf and -inf replaced (by 0 and the dtype's largest and
        lowest values unless given); they get no gradient."""
        a = self._value
        v = value(a)
        if v.dtype.kind not in "fc":
            return _new(v.copy())
        clean = np.nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf)
        return _result(_w.where3(np.isfinite(v), a, clean), "NanToNumBackward0", (self,))

    def xlogy(self, other: Any) -> Tensor:
        """``self * log(other)``, 0 where ``self`` is 0 (unless ``other`` is NaN).
        PyTorch's gradients: none to ``self`` where it is 0 and ``other <= 0``;
        ``self / other`` to ``other`` (so NaN at (0, 0))."""
        a, b, o = _operands(self, other, div=True)
        if o is None:
            b = np.asarray(b, value(a).dtype)
        xv, yv = value(a), value(b)
        # (where3 passes a zero cotangent to log there, whose rule divides it by y: 0 / 0 at y = 0)
        zero = (xv == 0) & ((yv <= 0) | (yv == np.inf))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = _w.multiply(a, _w.where3(zero, 0.0, _w.log(b)))
        if o is None:
            return _result(r, "XlogyBackward2", (self,))
        return _result(r, "XlogyBackward0", (self, o))

    def kron(self, other: Tensor) -> Tensor:
        """The Kronecker product."""
        a, b, o = _operands(self, other)
        return _result(tnp.kron(a, b), "UnsafeViewBackward0", (self, o))

    def cross(self, other: Tensor, dim: builtins.int | None = None) -> Tensor:
        """The cross product of 3-vectors along ``dim`` (without it, the first
        dimension of size 3, with PyTorch's deprecation warning)."""
        a, b = self._value, other._value
        if a.ndim != b.ndim:
            raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_TYPE[a.dtype.name]} but found "
                               f"{SCALAR_TYPE[b.dtype.name]}")
        if dim is None:
            warnings.warn(CROSS_NO_DIM, UserWarning, stacklevel=2)
            dim = next((i for i, n in enumerate(a.shape) if n == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
        d = _dim(dim, a.ndim)
        if a.shape[d] != 3 or b.shape[d] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. "
                               f"Got {a.shape[d]} and {b.shape[d]}")
        return _result(tnp.cross(a, b, axis=d), "LinalgCrossBackward0", (self, other))

    def repeat_interleave(self, repeats: Any, dim: builtins.int | None = None, *,
                          output_size: builtins.int | None = None) -> Tensor:
        """Each element (each slice along ``dim``; without it, of the flattened
        tensor) repeated ``repeats`` times, as PyTorch builds it: unsqueeze,
        expand, clone, view (a tensor of counts: ``index_select``)."""
        x = self if dim is not None else self.flatten()
        d = 0 if dim is None else _dim(dim, x.ndim)
        if isinstance(repeats, Tensor):
            counts = value(repeats._value)
            if counts.size not in (1, x.shape[d]):
                raise RuntimeError("repeats must have the same size as input along dim, but got "
                                   f"repeats.size(0) = {counts.size} and input.size({d}) = {x.shape[d]}")
            return x.index_select(d, _new(np.repeat(np.arange(x.shape[d]), counts)))
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        s = x.shape
        return x.unsqueeze(d + 1).expand(*s[: d + 1], repeats, *s[d + 1 :]).clone().flatten(d, d + 1)

    def tile(self, *dims: Any) -> Tensor:
        """``repeat``, with ``dims`` padded with leading ones to the tensor's rank."""
        reps = _shape_arg(dims)
        return self.repeat(*((1,) * (self.ndim - len(reps)) + reps))

    moveaxis = movedim

    def diff(self, n: builtins.int = 1, dim: builtins.int = -1, prepend: Tensor | None = None,
             append: Tensor | None = None) -> Tensor:
        """The ``n``-th forward difference along ``dim`` (after concatenating
        ``prepend`` and ``append``), as PyTorch computes it: slices subtracted."""
        if self.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"order must be non-negative but got {n}")
        x = self
        if prepend is not None or append is not None:
            from tapegrad.torch._creation import cat

            x = cat([t for t in (prepend, self, append) if t is not None], dim)
        d = _dim(dim, x.ndim)
        if n == 0:  # PyTorch copies into a new tensor
            return _result(tnp.copy(x._value), "CopyBackwards", (None, x))
        if x._value.dtype == np.bool_:  # (a logical xor; no gradient)
            return _new(np.diff(value(x._value), n, axis=d))
        for _ in range(builtins.min(n, x.shape[d])):
            m = x.shape[d] - 1
            x = x.narrow(d, 1, m) - x.narrow(d, 0, m)
        return x

    def take(self, index: Tensor) -> Tensor:
        """The elements of the flattened tensor at ``index`` (negatives count from the end)."""
        if not isinstance(index, Tensor):
            raise TypeError(f"take(): argument 'index' (position 1) must be Tensor, not {type(index).__name__}")
        idx = _index_arg(index, ("int64",), RuntimeError, "take(): Expected a long tensor for index, but got {}")
        n = self.numel()
        if n == 0 and idx.size:
            raise IndexError("take(): tried to take from an empty tensor")
        bad = (idx >= n) | (idx < -n)
        if bad.any():
            raise IndexError(f"out of range: tried to access index {idx[bad].flat[0]} on a tensor of {n} elements.")
        return _result(tnp.take(self._value, idx), "TakeBackward0", (self,))

    def masked_select(self, mask: Tensor) -> Tensor:
        """The elements where boolean ``mask`` (broadcast with ``self``) holds, as a 1-D tensor."""
        m = np.asarray(value(_v(mask)))
        if m.dtype != np.bool_:
            raise RuntimeError("masked_select: expected BoolTensor for mask")
        a = self._value
        shape = _broadcast_shape(m.shape, a.shape)
        if a.shape != shape:
            a = _w.broadcast_to(a, shape)
        return _result(a[np.broadcast_to(m, shape)], "MaskedSelectBackward0", (self,))

    def aminmax(self, *, dim: builtins.int | None = None, keepdim: builtins.bool = False) -> Any:
        """The named pair ``(min, max)`` over ``dim`` (all elements without it),
        sharing one ``AminmaxBackward0``; ties share the gradient evenly."""
        a = self._value
        axis = None if dim is None or a.ndim == 0 else _dim(dim, a.ndim)
        if a.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        rs = [f(a, axis=axis, keepdims=keepdim) for f in (_w.amin, _w.amax)]
        return _MinMax(*_multi(rs, "AminmaxBackward0", (self,)))

    def logcumsumexp(self, dim: builtins.int) -> Tensor:
        """``log(cumsum(exp(self), dim))``, stable for any range: a scan of
        ``logaddexp`` over doubling strides (log2(n) vectorised steps)."""
        a = self._value
        d = _dim(dim, a.ndim)
        if a.dtype.kind not in "fc":
            raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{SCALAR_TYPE[a.dtype.name]}'")
        x = tnp.moveaxis(a, d, -1) if a.ndim else tnp.reshape(a, (1,))
        n, k = x.shape[-1], 1
        if n <= 1:
            x = _w.copy(x)
        while k < n:
            x = tnp.concatenate([x[..., :k], _w.logaddexp(x[..., k:], x[..., :-k])], axis=-1)
            k *= 2
        return _result(tnp.moveaxis(x, -1, d) if a.ndim else tnp.reshape(x, ()), "LogcumsumexpBackward0", (self,))

    def scatter(self, dim: builtins.int, index: Tensor, src: Any = None, value: Any = None, *,
                reduce: str | None = None) -> Tensor:
        """``self`` with ``src`` (a tensor, or a number: ``value``) written along
        ``dim`` at ``index``: ``out[i][index[i][j]] = src[i][j]`` for ``dim=1``.
        A position written twice keeps the last write; every element of ``src``
        gets the gradient of the position it went to, as in PyTorch."""
        if reduce is not None:
            raise NotImplementedError("tapegrad.torch: scatter(reduce=...) is not supported; use scatter_add")
        s = value if src is None else src
        key, part = _scatter_key(self, dim, index, s)
        if isinstance(s, Tensor):
            return _put(self, key, s._value[part], s, "ScatterBackward0")
        return _put(self, key, s, None, "ScatterBackward1")

    def scatter_add(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        """``self`` with ``src`` added along ``dim`` at ``index`` (repeats add up)."""
        if not isinstance(src, Tensor):
            raise TypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
        key, part = _scatter_key(self, dim, index, src)
        return _added(self, key, src._value[part], src, "ScatterAddBackward0")

    def index_add(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """``self`` with ``alpha * source`` added at positions ``index`` along ``dim`` (repeats add up)."""
        a, s = self._value, source._value
        d = _dim(dim, a.ndim)
        idx = _index_arg(index, _INT_INDEX, RuntimeError, "index_add_(): Expected dtype int32/int64 for index but got: {}")
        if idx.ndim > 1:
            raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
                             f"{SCALAR_TYPE[idx.dtype.name]} and size: {list(idx.shape)}")
        idx = idx.reshape(-1)
        if s.dtype != a.dtype:
            raise RuntimeError(f"index_add_(): self ({SCALAR_TYPE[a.dtype.name]}) and source "
                               f"({SCALAR_TYPE[s.dtype.name]}) must have the same scalar type")
        if s.ndim != a.ndim or builtins.any(p != q for k, (p, q) in enumerate(zip(s.shape, a.shape)) if k != d):
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(a.shape)} source.shape = {list(s.shape)}")
        if s.shape[d] != idx.size:
            raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                               f"source.size(dim): ({s.shape[d]}), for dim: {d}")
        _check_bounds(idx, a.shape[d], d)
        if alpha != 1:
            s = _w.multiply(s, alpha)
        return _added(self, (slice(None),) * d + (idx,), s, source, "IndexAddBackward0")

    def index_fill(self, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """``self`` with ``value`` (a number or a 0-d tensor) written at positions
        ``index`` along ``dim``; a tensor ``value`` gets the gradient of every
        filled position (each counted once)."""
        a = self._value
        d = _dim(dim, a.ndim)
        idx = _index_arg(index, ("int64",), IndexError, "index_fill_(): Expected dtype int64 for index.")
        if idx.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        n = a.shape[d]
        _check_bounds(idx, n, d, IndexError, wrap=True)
        key = (slice(None),) * d + (np.unique(idx.reshape(-1) % n),)
        if isinstance(value, Tensor):
            return _put(self, key, value._value, value, "IndexFillBackward1")
        return _put(self, key, value, None, "IndexFillBackward0")

    def _inplace_as(self, name: str, op: Callable[[Tensor], Tensor], other: Any = None) -> Tensor:
        """Out-of-place ``op`` of this tensor written into it, as node ``name``
        (with ``other``, when a tensor, as the op's other input)."""
        return self._inplace(name, lambda a: op(_new(a))._value, (other,) if isinstance(other, Tensor) else ())

    def scatter_(self, dim: builtins.int, index: Tensor, src: Any = None, value: Any = None, *,
                 reduce: str | None = None) -> Tensor:
        """In-place ``scatter``."""
        s = value if src is None else src
        name = "ScatterBackward0" if isinstance(s, Tensor) else "ScatterBackward1"
        return self._inplace_as(name, lambda t: t.scatter(dim, index, s, reduce=reduce), s)

    def scatter_add_(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor:
        """In-place ``scatter_add``."""
        return self._inplace_as("ScatterAddBackward0", lambda t: t.scatter_add(dim, index, src), src)

    def index_add_(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """In-place ``index_add``."""
        return self._inplace_as("IndexAddBackward0", lambda t: t.index_add(dim, index, source, alpha=alpha), source)

    def index_fill_(self, dim: builtins.int, index: Tensor, value: Any) -> Tensor:
        """In-place ``index_fill``."""
        name = "IndexFillBackward1" if isinstance(value, Tensor) else "IndexFillBackward0"
        return self._inplace_as(name, lambda t: t.index_fill(dim, index, value), value)

    # --- indexing ---------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        def as_int(i: Any) -> Any:  # a 0-dim signed-integer tensor indexes as its int: a select (a view)
            return builtins.int(value(i._value)) if isinstance(i, Tensor) and i.ndim == 0 \
                and i._value.dtype.kind == "i" else i

        key = tuple(as_int(i) for i in key) if isinstance(key, tuple) else as_int(key)
        k = _index_key(key)
        if not _basic_key(k):
            return _result(self._value[k], _index_name(key), (self,))
        r = self._value[k]
        if type(r) is not Traced:  # (recorded nothing: no node to name)
            return _viewed(_result(r, "", (self,)), self, "index", k)
        # a lone slice is always a slice op, even one that keeps every element
        # (``w[:]``, ``w[0:100]``); in a tuple a no-op slice is skipped (``w[:, :]``: an alias)
        steps = ["SliceBackward0"] if isinstance(key, slice) else _index_steps(k, self._value.shape)
        t = _result(r, steps[-1] if steps else "AliasBackward0", (self,))
        if len(steps) > 1 and t._grad_fn is not None:  # PyTorch's chain: one view node per step
            edge = t._grad_fn._edges[0]
            for name in steps[:-1]:
                edge = fused_edge(name, edge)
            t._grad_fn._edges = r._node.edges = (edge,)
        return _viewed(t, self, "index", k)

    def __setitem__(self, key: Any, v: Any) -> None:
        k = _index_key(key)
        val = _v(v)
        name = _index_name(key, setting=True)
        dt = self._value.dtype
        if isinstance(val, Traced) and val.dtype != dt:
            val = _cast(val, dt)

        def setitem(a: Any) -> Any:
            if type(a) is Traced or type(val) is Traced:
                return _w.setitem(a, _w.Index(k, a.ndim), val)
            if not a.flags.writeable:
                a = self._value = a.copy()
            a[k] = value(val)
            return _DONE

        self._inplace(name, setitem, (v if isinstance(v, Tensor) else None,))

    # --- in place ----------------------------------------------------------------------------------------
    def _inplace(self, name: str, fn: Callable[[Any], Any], others: tuple[Any, ...] = (),
                 saves_output: builtins.bool = False) -> Tensor:
        """Run an in-place op: recorded as a functional update when it must be
        (the tensor now names the result), else written into the buffer.
        ``saves_output``: PyTorch's backward of the op reads its result (``exp_``,
        ``tanh_``...), so a later in-place change of the tensor is an error."""
        v = self._value
        if type(v) is Traced and v._tape is GT and GT.active and self._grad_fn is None and v._node.prim is None:
            raise RuntimeError(LEAF_INPLACE)
        view = self._base_view
        if view is not None:
            self._check_view_write(view)
        new = fn(v)
        if type(new) is Traced:
            if view is not None and view[1] == "multi":
                raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad "
                                   f"mode enabled. {MULTI_VIEW}")
            dt = value(v).dtype
            if new.dtype != dt:
                new = _cast(new, dt)
            if new.shape != v.shape:
                raise RuntimeError(
                    f"output with shape {list(v.shape)} doesn't match the broadcast shape {list(new.shape)}")
            if new._tape is GT:
                # its own input is not the tensor any more; its output counts as
                # saved only where PyTorch's backward reads it (our rules may keep
                # it where PyTorch's keep the inputs: x / y)
                self._grad_fn = _node(name, (self,) + others, new._node, new, self._vc, self._vc.v + 1,
                                      first=False, output=saves_output, claim=True)
                if saves_output and type(new._node) is FNode:  # checked from the entry's list, the output included
                    new._node.ins = None
            else:
                self._grad_fn = None
            self._value = new
            self._nr = 0
            last_inplace[self._vc] = name
            if view is not None:
                self._write_back(view, others)  # (the base's change counts on the shared counter)
                return self
            self._refresh_views()
        elif new is not _DONE:
            self._write(new)
        bump(self._vc)
        return self

    def _check_view_write(self, view: Any) -> None:
        """Raise as PyTorch does for an in-place op on this view (of a leaf
        that requires grad, or with elements that share memory)."""
        base, kind, arg = view
        if kind == "expand":
            v = value(self._value)
            if builtins.any(st == 0 and n > 1 for st, n in zip(v.strides, v.shape)):
                raise RuntimeError(OVERLAP_INPLACE)
        if kind == "multi" and GT.active and self._grad_fn is not None:
            raise RuntimeError(f"Output {arg[1]} of {arg[0]} is a view and is being modified inplace. {MULTI_VIEW}")
        while base._base_view is not None:
            base = base._base_view[0]
        b = base._value
        if type(b) is Traced and b._tape is GT and GT.active and base._grad_fn is None and b._node.prim is None:
            raise RuntimeError(VIEW_LEAF_INPLACE)

    def _refresh_views(self) -> None:
        """After a recorded in-place change of this tensor: each of its live
        views reads its value again (``AsStridedBackward0``), as PyTorch's
        views see their base's storage; their own views follow."""
        views = self._views
        if not views:
            return
        for ref in views:
            v = ref()
            if v is None or v._base_view is None or v._base_view[0] is not self:
                continue
            _, kind, arg = v._base_view
            r = _read_view(self._value, kind, arg)
            v._value = r
            v._nr = 0
            if type(r) is Traced and r._tape is GT:  # (the shared counter's bump comes after)
                v._grad_fn = _node("AsStridedBackward0", (self,), r._node, r, v._vc, v._vc.v + 1, claim=True)
                if type(r._node) is FNode:
                    r._node.ins = None
            else:
                v._grad_fn = None
            v._refresh_views()

    def _write_back(self, view: Any, others: tuple[Any, ...]) -> None:
        """After a recorded in-place op on this view: write its new value
        into its base (``CopySlices`` there, with the op's other inputs as
        edges); the base's refresh reads it back (``AsStridedBackward0``)."""
        base, kind, arg = view
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

    def _binary_(self, other: Any, fn: Any, name: str, div: builtins.bool = False, scalar_edge: builtins.bool = True) -> Tensor:
        o = other if isinstance(other, Tensor) else None

        def op(a: Any) -> Any:
            b = _v(other)
            if div and a.dtype.kind in "biu":
                raise RuntimeError("result type Float can't be cast to the desired output type Long")
            return fn(a, b)

        return self._inplace(name, op, (o,) if (o is not None or scalar_edge) else ())

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        return self._binary_(other * alpha if alpha != 1 else other, _w.add, "AddBackward0")

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        _check_bool_sub(self, other)
        return self._binary_(other * alpha if alpha != 1 else other, _w.subtract, "SubBackward0")

    def mul_(self, other: Any) -> Tensor:
        return self._binary_(other, _w.multiply, "MulBackward0")

    def div_(self, other: Any) -> Tensor:
        return self._binary_(other, _w.divide, "DivBackward0", div=True,
                             scalar_edge=isinstance(other, Tensor))

    def pow_(self, exponent: Any) -> Tensor:
        return self._binary_(exponent, _w.power, "PowBackward0", scalar_edge=False)

    def addcmul_(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        prod = t1 * t2 * value if value != 1 else t1 * t2
        return self._binary_(prod, _w.add, "AddcmulBackward0")

    def addcdiv_(self, t1: Any, t2: Any, value: Any = 1) -> Tensor:
        q = t1 / t2 * value if value != 1 else t1 / t2
        return self._binary_(q, _w.add, "AddcdivBackward0")

    def lerp_(self, end: Any, weight: Any) -> Tensor:
        return self._binary_((end - self.detach()) * weight if not isinstance(end, Tensor) or not end.requires_grad else (end - self) * weight, _w.add, "LerpBackward0")

    def neg_(self) -> Tensor:
        return self._inplace("NegBackward0", lambda a: _w.negative(a))

    def _unary_(self, method: str) -> Tensor:
        name = {"sqrt": "SqrtBackward0", "exp": "ExpBackward0", "abs": "AbsBackward0",
                "relu": "ReluBackward0", "sigmoid": "SigmoidBackward0", "tanh": "TanhBackward0",
                "log": "LogBackward0"}[method]

        def op(a: Any) -> Any:
            t = _new(a)
            return getattr(t, method)()._value

        return self._inplace(name, op, saves_output=method not in ("abs", "log"))

    def sqrt_(self) -> Tensor:
        return self._unary_("sqrt")

    def exp_(self) -> Tensor:
        return self._unary_("exp")

    def abs_(self) -> Tensor:
        return self._unary_("abs")

    def relu_(self) -> Tensor:
        return self._unary_("relu")

    def sigmoid_(self) -> Tensor:
        return self._unary_("sigmoid")

    def tanh_(self) -> Tensor:
        return self._unary_("tanh")

    def log_(self) -> Tensor:
        return self._unary_("log")

    def zero_(self) -> Tensor:
        """Fill with zeros in place."""
        return self._inplace("ZeroBackward0", lambda a: a * 0 if type(a) is Traced and GT.active else np.zeros_like(value(a)))  # type: ignore[operator]  # Traced's operators are installed at runtime

    def fill_(self, fill: Any) -> Tensor:
        """Fill with ``fill`` (a number or a one-element tensor) in place."""
        f = _v(fill)

        def op(a: Any) -> Any:
            if type(f) is Traced or (type(a) is Traced and GT.active):
                return _w.broadcast_to(_cast(tnp.asarray(f) if type(f) is Traced else np.asarray(f, value(a).dtype), value(a).dtype), a.shape) + a * 0
            return np.full(np.shape(value(a)), value(f), dtype=value(a).dtype)

        return self._inplace("FillBackward2" if not isinstance(fill, Tensor) else "FillBackward3", op,
                             (fill,) if isinstance(fill, Tensor) else ())

    def copy_(self, src: Any, non_blocking: builtins.bool = False) -> Tensor:
        """Copy ``src`` (broadcast, cast) into this tensor in place."""
        s = _v(src)

        def op(a: Any) -> Any:
            if type(s) is Traced or (type(a) is Traced and GT.active):
                return _w.broadcast_to(_cast(s, value(a).dtype), a.shape) + a * 0
            return value(s)

        return self._inplace("CopyBackwards", op, (src if isinstance(src, Tensor) else None,))

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace("ClampBackward1", lambda a: _new(a).clamp(min, max)._value)

    clip_ = clamp_

    def clamp_min_(self, min: Any) -> Tensor:  # noqa: A002
        return self._inplace("ClampMinBackward0", lambda a: _new(a).clamp(min=min)._value)

    def masked_fill_(self, mask: Any, v: Any) -> Tensor:
        return self._inplace("MaskedFillBackward0", lambda a: _new(a).masked_fill(mask, v)._value)

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0, generator: Any = None) -> Tensor:
        from tapegrad.torch._creation import _rng

        return self._inplace("NormalBackward0", lambda a: _rng().normal(mean, std, a.shape))

    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0, generator: Any = None) -> Tensor:
        from tapegrad.torch._creation import _rng

        return self._inplace("UniformBackward0", lambda x: _rng().uniform(a, b, x.shape))

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    def __ipow__(self, other: Any) -> Tensor:
        return self.pow_(other)


def _rebuild(v: Any, requires_grad: bool) -> Tensor:
    t = _new(np.array(v))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _as_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from tapegrad.torch._creation import tensor

    return tensor(x)
