"""Batching: the level ``vmap`` pushes, its batched values and the batching rules.

A *batched value* is a ``Traced`` whose level is a ``BatchTrace``: a level
on the same stack as the differentiation tapes, so that ``vmap`` nests with
``grad`` and friends in either order, by level. It is ``abstract`` (see
``tapegrad.core.level``): its ``_value`` is the per-example ``Aval`` (the shape
and dtype that ``.shape``, ``.ndim``, ``.dtype``, ``len()`` report) and its
payload ``_array`` carries the batch as axis 0. Every primitive on it reaches
``BatchTrace.process``, which runs the primitive's batching rule.

A batching rule is ``rule(args, batched, size, **kwargs)``: ``args`` are the
primitive's arguments with each batched one replaced by its array (batch on
axis 0), ``batched`` says which those are, ``size`` is the batch size; it
returns the batched result (batch on axis 0), computed with tapegrad
primitives, so that tapes below the batch level record it, or None for a
case it does not cover. A primitive with no rule (or a case its rule does
not cover) is mapped by a loop over the batch (``loop_rule``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad.axes import normalize_axis
from tapegrad.backend import array_module
from tapegrad.core.level import Level
from tapegrad.core.primitive import Primitive
from tapegrad.core.traced import Traced, value

BatchRule = Callable[..., Any]

ESCAPED = ("tapegrad.vmap: a batched value was used after the vmap that made it returned (it "
           "escaped through a side effect: a list, a global, an attribute); return it from the "
           "mapped function instead")


class Aval:
    """The per-example shape and dtype of a batched value (what ``.shape``,
    ``.ndim``, ``.dtype``, ``.size`` and ``len()`` of it report)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d batched value")
        return self.shape[0]

    def __bool__(self) -> bool:
        raise TypeError(
            "tapegrad.vmap: the truth value of a batched value differs from example to "
            "example; Python control flow cannot depend on it inside vmap (use tnp.where, "
            "tnp.maximum, ... to select per example)"
        )

    def __repr__(self) -> str:
        return f"Batched(shape={self.shape}, dtype={np.dtype(self.dtype).name})"

    # Reached only by a batched value used after its vmap returned (kept by a side
    # effect): the engine then reads its per-example stand-in as a constant.
    escaped = ESCAPED  # (what such a use says)

    def _escaped(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(self.escaped)

    __array__ = __array_ufunc__ = _escaped
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _escaped
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __getitem__ = _escaped


class BatchTrace(Level):
    """One ``vmap`` level: its values are batched along axis 0 of their
    arrays (``_array``), ``size`` long; their abstract value (``_value``) is
    the per-example ``Aval``."""

    abstract = True
    what = "a batched value of a vmap"

    def __init__(self, size: int) -> None:
        self.size = size

    def wrap(self, arr: Any) -> Traced:
        """The batched value whose array is ``arr`` (batch on axis 0)."""
        shape = arr.shape
        if not shape or shape[0] != self.size:
            raise ValueError(
                f"tapegrad.vmap: a batching rule returned shape {tuple(shape)}, which has no "
                f"batch axis of size {self.size}"
            )
        out = Traced(Aval(shape[1:], arr.dtype), self, None)
        out._array = arr
        return out

    def process(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Traced:
        """Run primitive ``prim`` on ``args``, some of them batched on this level:
        its batching rule (``BATCH_RULES``), or a loop over the batch."""
        if not self.entered:
            raise TypeError(ESCAPED)
        raw = list(args)
        batched = [False] * len(raw)
        for i, a in enumerate(args):
            if type(a) is Traced and a._level is self:
                raw[i] = a._array
                batched[i] = True
        kw_batched = [k for k, v in kwargs.items() if type(v) is Traced and v._level is self]
        if kw_batched:  # (rules take batched values as positional arguments: loop)
            kw = {k: v._array if k in kw_batched else v for k, v in kwargs.items()}
            return self.wrap(loop_rule(prim.wrapped, raw, batched, self.size, kw_batched=kw_batched, **kw))
        rule = BATCH_RULES.get(prim)
        out = None if rule is None else rule(raw, batched, self.size, **kwargs)
        if out is None:  # no rule, or none for this case
            out = loop_rule(prim.wrapped, raw, batched, self.size, **kwargs)
        return self.wrap(out)

    def process_nondifferentiable(self, fun: Callable[..., Any], again: Callable[..., Any],
                                  args: list[Any], kwargs: dict[str, Any]) -> Any:
        return apply_nondifferentiable(fun, again, args, kwargs)

    def refuse(self, x: Any, what: str) -> TypeError:
        return TypeError(
            f"tapegrad.vmap: cannot convert a batched value to {what}: its value differs "
            "from example to example inside vmap; compute with tapegrad.numpy functions on "
            "it (tnp.where to select per example), or return it from the mapped function."
        )

    def keep(self, x: Any) -> Any:
        arr = value(x._array)  # (the value of its array: no gradient through it)
        return x if arr is x._array else self.wrap(arr)

    def describe(self, x: Any) -> str:
        aval = x._value
        return (f"Batched(shape={tuple(aval.shape)}, dtype={aval.dtype}, "
                f"batch_size={self.size}, level={self.level}, values={x._array!r})")


BATCH_RULES: dict[Any, BatchRule | None] = {}  # primitive -> its batching rule (see defbatch)


def is_batched(x: Any) -> bool:
    """Is ``x`` a batched value (of any vmap level)?"""
    return type(x) is Traced and type(x._level) is BatchTrace


def array_of(x: Any, trace: BatchTrace) -> Any:
    """The array of ``x`` if it is batched on ``trace`` (batch on axis 0), else ``x``."""
    return x._array if type(x) is Traced and x._level is trace else x


# --- generic rules -------------------------------------------------------------------------------


def loop_rule(fn: Callable[..., Any], args: Sequence[Any], batched: Sequence[bool], size: int,
              kw_batched: Sequence[str] = (), **kwargs: Any) -> Any:
    """Map ``fn`` by a loop over the batch: one call per example, stacked (the
    rule of a primitive that has none). Differentiable: the slices and the
    stack are tapegrad operations. ``kw_batched`` names keyword arguments
    that are batched too."""
    if size == 0:  # nothing to call: one call on zeros (of each input's array module) gives the shape
        probe = [array_module(a).zeros(a.shape[1:], a.dtype) if b else a for a, b in zip(args, batched)]
        kw0 = {k: array_module(v).zeros(v.shape[1:], v.dtype) if k in kw_batched else v
               for k, v in kwargs.items()}
        out = fn(*probe, **kw0)
        return array_module(out).zeros((0,) + tuple(np.shape(out)), np.result_type(out))
    outs = [fn(*[a[i] if b else a for a, b in zip(args, batched)],
               **{k: v[i] if k in kw_batched else v for k, v in kwargs.items()}) for i in range(size)]
    return np.stack(outs)


def move_to_front(x: Any, nd: int) -> Any:
    """Batched array ``x`` of per-example rank ``x.ndim - 1`` given rank ``nd``
    (ones inserted after the batch axis), so that it broadcasts against
    per-example arrays of rank ``nd`` the way the examples do."""
    extra = nd - (x.ndim - 1)
    if extra <= 0:
        return x
    return x.reshape((x.shape[0],) + (1,) * extra + tuple(x.shape[1:]))


def elementwise_rule(fn: Callable[..., Any]) -> BatchRule:
    """The rule of an elementwise (broadcasting) primitive ``fn``: batched
    arguments get ones after their batch axis up to the rank of the
    per-example result, then one call does the whole batch."""

    def rule(args: Sequence[Any], batched: Sequence[bool], size: int, **kwargs: Any) -> Any:
        nd = 0
        for a, b in zip(args, batched):
            r = np.ndim(a) - 1 if b else np.ndim(a)
            if r > nd:
                nd = r
        new = [move_to_front(a, nd) if b else a for a, b in zip(args, batched)]
        return fn(*new, **kwargs)

    return rule


def shift_axis(axis: int, nd: int) -> int:
    """Per-example axis ``axis`` (of ``nd`` axes, may be negative) as an axis
    of the batched array (batch on axis 0)."""
    return normalize_axis(axis, nd) + 1


def shift_axes(axis: Any, nd: int) -> Any:
    """``shift_axis`` for None (every per-example axis), an int or a sequence."""
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(shift_axis(a, nd) for a in axis)
    return shift_axis(axis, nd)


def defbatch(prim_fn: Callable[..., Any], rule: BatchRule | None) -> None:
    """Give primitive ``prim_fn`` its batching rule (None: loop over the batch).

    ``rule(args, batched, size, **kwargs)`` gets the arguments with each
    batched one as its array, batch on axis 0 (``batched[i]`` says which),
    the batch size third (positionally: a primitive with a keyword argument
    named ``size`` names that parameter of its rule otherwise),
    and returns the result batched on axis 0, computed with tapegrad
    operations (one vectorized call, not a loop over the batch), or None for
    a case it does not cover (that case then loops over the batch).

    Examples:
        >>> tg.defbatch(my_prim, lambda args, batched, size: my_prim(*args))  # takes leading axes
    """
    prim = getattr(prim_fn, "primitive", None)
    if not isinstance(prim, Primitive):
        raise TypeError(f"{prim_fn!r} is not a tapegrad primitive; wrap it with tg.primitive")
    BATCH_RULES[prim] = rule


# --- functions with no gradient (comparisons, argmax, shape queries...) ----------------------
# ``apply_nondifferentiable`` runs a NumPy function with no gradient (``tapegrad.numpy``'s
# nondifferentiable wrappers) on batched values: one call on the whole batch where the function
# allows it. The rules below get the arrays (batch on axis 0, or plain), which may be batched
# values of a lower vmap level; so they compute with tapegrad.numpy's functions (plain NumPy on
# plain arrays) and call ``again`` (the wrapper), never NumPy directly, on what may be traced.

# per-example metadata: computed on a stand-in of the per-example shape and dtype (the same
# answer for every example: a plain value, which vmap broadcasts)
_METADATA = frozenset("shape ndim size result_type iscomplexobj isrealobj zeros_like ones_like "
                      "empty_like".split())
# elementwise functions that are not ufuncs (their other arguments broadcast, or are scalars)
_ELEMENTWISE = frozenset("fix around round isreal iscomplex isclose".split())
# results whose shape depends on the values (or tuples of those): a loop over the batch, which
# works when every example's result has the same shape and says so otherwise (jax.vmap cannot
# batch them at all). ``bincount`` and ``histogram`` loop too (per-example lengths and edges).
_DATA_SHAPED = frozenset("nonzero flatnonzero argwhere unique bincount histogram".split())


def apply_nondifferentiable(fun: Callable[..., Any], again: Callable[..., Any], args: list[Any],
                            kwargs: dict[str, Any]) -> Any:
    """Run ``fun`` (a NumPy function with no gradient) on ``args``, some of
    them batched; ``again`` is its tapegrad wrapper (for lower vmap levels)."""
    kwargs = {k: value(v) for k, v in kwargs.items()}
    trace = max((a._level for a in [*args, *kwargs.values()] if type(a) is Traced), key=lambda t: t.level)
    name = getattr(fun, "__name__", "")
    ours = getattr(np, name, None) is fun  # (a NumPy function: its name says what it does)
    if ours and name in _METADATA:
        stand_in = [np.broadcast_to(np.zeros((), a.dtype), a.shape) if type(a) is Traced else a
                    for a in args]
        return fun(*stand_in, **kwargs)
    if type(trace) is not BatchTrace:  # a jit trace: it writes the call down
        return trace.apply_nondiff(fun, args, kwargs)
    out = None
    bound: inspect.BoundArguments | None = None
    if ours and not isinstance(fun, np.ufunc):
        try:  # arguments given by keyword (``sorter=``...) made positional, where they can be
            bound = inspect.signature(fun).bind(*args, **kwargs)
        except TypeError:  # a wrong call: the loop gives NumPy's own error
            pass
        if bound is not None:
            bound.apply_defaults()
            args, kwargs = list(bound.args), dict(bound.kwargs)
    raw = [array_of(a, trace) for a in args]
    batched = [type(a) is Traced and a._level is trace for a in args]
    if any(type(v) is Traced and v._level is trace for v in kwargs.values()):
        pass  # a batched keyword-only argument (``where=``): the loop
    elif isinstance(fun, np.ufunc):  # (``where=`` may have more axes than the operands)
        if kwargs.get("out") is None and "where" not in kwargs:
            out = elementwise_rule(again)(raw, batched, trace.size, **kwargs)
    elif ours and name in _NONDIFF_RULES and bound is not None and bound.arguments.get("out") is None:
        out = _NONDIFF_RULES[name](again, raw, batched, trace.size, kwargs,
                                   inspect.signature(fun).bind(*raw, **kwargs))
    if out is None:
        return _loop(name, again, raw, batched, trace, kwargs)
    return trace.wrap(out)


def _loop(name: str, again: Callable[..., Any], raw: list[Any], batched: list[bool],
          trace: BatchTrace, kwargs: dict[str, Any]) -> Any:
    """One call per example, stacked (a tuple result: each of its arrays
    stacked); batched keyword arguments are sliced too."""
    keys = [k for k, v in kwargs.items() if type(v) is Traced and v._level is trace]
    fixed = {k: v for k, v in kwargs.items() if k not in keys}
    n_args = len(raw)
    raw = raw + [kwargs[k]._array for k in keys]
    batched = batched + [True] * len(keys)

    def call(*a: Any) -> Any:
        return again(*a[:n_args], **fixed, **dict(zip(keys, a[n_args:])))

    size = trace.size
    n = 0
    if size:
        first = call(*[a[0] if b else a for a, b in zip(raw, batched)])
        n = len(first) if isinstance(first, tuple) else 0
    try:
        if not n:
            return trace.wrap(loop_rule(call, raw, batched, size))
        return tuple(trace.wrap(loop_rule(lambda *a, j=j: call(*a)[j], raw, batched, size))
                     for j in range(n))
    except ValueError as e:
        if name not in _DATA_SHAPED:
            raise
        raise ValueError(
            f"tapegrad.vmap: numpy.{name} gives each example a result whose shape depends on its "
            "values; those cannot be stacked into one batch when the shapes differ (as in "
            f"jax.vmap): {e}") from e


def _bound_axis(bound: inspect.BoundArguments) -> tuple[Any, dict[str, Any]]:
    """The first argument, and the others as keywords with their defaults."""
    bound.apply_defaults()
    params = bound.signature.parameters  # (defaults other than axis left out: CuPy's signatures are narrower)
    kw = {k: v for k, v in bound.arguments.items() if k == "axis" or v is not params[k].default}
    first = next(iter(kw))
    return kw.pop(first), kw


def _axis_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
               kwargs: dict[str, Any], bound: inspect.BoundArguments) -> Any:
    """Reductions and sorts along ``axis`` (argmax argmin argsort argpartition count_nonzero any all): the
    axis shifted past the batch; None (argsort's 0-d examples too) means over the flattened
    example."""
    if any(batched[1:]):
        return None
    x, kw = _bound_axis(bound)
    nd = x.ndim - 1
    axis = kw["axis"]
    name = getattr(again, "__name__", "")
    if name in ("count_nonzero", "any", "all"):
        kw["axis"] = shift_axes(axis, nd)
        return again(x, **kw)
    if axis is not None and (nd or name != "argsort"):
        kw["axis"] = shift_axis(axis, nd)
        return again(x, **kw)
    keep = kw.pop("keepdims", False) is True  # (argmax/argmin: the flattened index, kept as 1s)
    kw["axis"] = 1
    out = again(np.reshape(x, (size, -1)), **kw)
    return np.reshape(out, (size,) + (1,) * nd) if keep else out


def _elementwise_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
                      kwargs: dict[str, Any], bound: Any) -> Any:
    return elementwise_rule(again)(raw, batched, size, **kwargs)


def _per_example_all(x: Any) -> Any:
    return np.all(x, axis=tuple(range(1, np.ndim(x))))


def _allclose_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
                   kwargs: dict[str, Any], bound: Any) -> Any:
    return _per_example_all(elementwise_rule(np.isclose)(raw, batched, size, **kwargs))


def _array_equal_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
                      kwargs: dict[str, Any], bound: inspect.BoundArguments) -> Any:
    bound.apply_defaults()
    a1, a2, equal_nan = bound.arguments["a1"], bound.arguments["a2"], bound.arguments["equal_nan"]
    if any(batched[2:]):
        return None
    if np.shape(a1)[batched[0]:] != np.shape(a2)[batched[1]:]:
        return np.zeros(size, bool)  # (the shapes differ in every example)
    eq = elementwise_rule(np.equal)([a1, a2], batched[:2], size)
    if equal_nan and np.result_type(a1, a2).kind in "fc":
        both_nan = elementwise_rule(np.logical_and)([np.isnan(a1), np.isnan(a2)], batched[:2], size)
        eq = np.logical_or(eq, both_nan)
    return _per_example_all(eq)


def _real_kinds(*xs: Any) -> bool:
    return all(np.result_type(x).kind in "biuf" for x in xs)


def _below(p: Any, q: Any) -> Any:
    """``p < q`` in NumPy's sort order (NaN after every number)."""
    lt = np.less(p, q)
    if np.result_type(p, q).kind == "f":
        lt = np.logical_or(lt, np.logical_and(np.isnan(q), np.logical_not(np.isnan(p))))
    return lt


def _edges_and_values(a: Any, ba: bool, v: Any, bv: bool, size: int) -> tuple[Any, Any]:
    """Per-example 1-D edges ``a`` against every value of ``v``: ``a`` as
    ``(size, 1..., n)`` and ``v`` with a last axis of 1 (they broadcast)."""
    if type(v) is not Traced:
        v = np.asarray(v)
    rank = np.ndim(v) - bv
    if ba:
        a = np.reshape(a, (size,) + (1,) * rank + (a.shape[-1],))
    return a, np.expand_dims(v, -1)


def _count(mask: Any) -> Any:
    return np.count_nonzero(mask, axis=-1)  # (intp, as searchsorted's)


def _searchsorted_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
                       kwargs: dict[str, Any], bound: inspect.BoundArguments) -> Any:
    """A common ``a`` (and ``sorter``): NumPy's own call takes any shape of
    ``v``. Per-example ``a``: each value's insertion point is the number of
    edges below it (``side='right'``: not above it), counted in one comparison
    of every value with every edge (exact; NaN sorts last). The count is the
    same in any order of the edges, so a ``sorter`` (a permutation that sorts
    ``a``) has nothing to add."""
    bound.apply_defaults()
    a, v, side = (bound.arguments[k] for k in ("a", "v", "side"))
    ba, bv = batched[0], batched[1]
    if not (ba or len(batched) > 3 and batched[3]):
        return again(*raw)
    if len(batched) > 2 and batched[2] or side not in ("left", "right") or not _real_kinds(a, v):
        return None
    if not (ba or bv):  # (only the sorter is batched)
        out = again(a, v, side)
        return np.broadcast_to(out, (size,) + tuple(np.shape(out)))
    edges, vals = _edges_and_values(a, ba, v, bv, size)
    return _count(_below(edges, vals) if side == "left" else np.logical_not(_below(vals, edges)))


def _digitize_rule(again: Callable[..., Any], raw: list[Any], batched: list[bool], size: int,
                   kwargs: dict[str, Any], bound: inspect.BoundArguments) -> Any:
    """Common ``bins``: NumPy's own call. Per-example ``bins``: counted as in
    ``searchsorted``, increasing or decreasing per example as NumPy decides."""
    bound.apply_defaults()
    x, bins, right = bound.arguments["x"], bound.arguments["bins"], bound.arguments["right"]
    if not batched[1]:
        return again(x, bins, right=right)
    if len(batched) > 2 and batched[2] or not _real_kinds(x, bins):
        return None
    up = np.any(np.less(bins[:, :-1], bins[:, 1:]), axis=-1)  # NumPy's test, NaN steps ignored
    down = np.any(np.greater(bins[:, :-1], bins[:, 1:]), axis=-1)
    if type(up) is not Traced and np.any(up & down):  # (a lower vmap level's values are not read)
        raise ValueError("bins must be monotonically increasing or decreasing")
    edges, vals = _edges_and_values(bins, True, x, batched[0], size)
    if right:  # increasing: #(edges < x); decreasing: #(edges >= x)
        inc, dec = _count(_below(edges, vals)), _count(np.logical_not(_below(edges, vals)))
    else:  # increasing: #(edges <= x); decreasing: #(edges > x)
        inc, dec = _count(np.logical_not(_below(vals, edges))), _count(_below(vals, edges))
    dec_b = move_to_front(np.logical_and(down, np.logical_not(up)), np.ndim(inc) - 1)
    return np.where(dec_b, dec, inc)


_NONDIFF_RULES: dict[str, Callable[..., Any]] = {
    **dict.fromkeys("argmax argmin argsort argpartition count_nonzero any all".split(), _axis_rule),
    **dict.fromkeys(_ELEMENTWISE, _elementwise_rule),
    "allclose": _allclose_rule,
    "array_equal": _array_equal_rule,
    "searchsorted": _searchsorted_rule,
    "digitize": _digitize_rule,
}
