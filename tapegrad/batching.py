"""Batching: the level ``vmap`` pushes, its batched values and the batching rules.

A *batched value* is a :class:`~tapegrad.tracer.Traced` whose tape is a
:class:`BatchTrace`: a level on the same stack as the differentiation tapes,
so that ``vmap`` nests with ``grad`` and friends in either order, by level.
Its array (``_node``) carries the batch as axis 0; its ``_value`` is a second
traced value of the same level around an :class:`Aval`, the per-example shape
and dtype that ``.shape``, ``.ndim``, ``.dtype``, ``len()`` report. (That
inner traced value sends every fast path of the engine, which runs a
primitive straight on a traced value's ``_value`` when that is not itself
traced, to its general path, which finds the highest level among the
arguments; when that is a batch level, its :meth:`BatchTrace.apply` runs the
primitive's batching rule. Plain arrays and the tapes' hot paths pay nothing
for it.)

A batching rule is ``rule(args, batched, size, **kwargs)``: ``args`` are the
primitive's arguments with each batched one replaced by its array (batch on
axis 0), ``batched`` says which those are, ``size`` is the batch size; it
returns the batched result (batch on axis 0), computed with tapegrad
primitives, so that tapes below the batch level record it, or None for a
case it does not cover. A primitive with no rule (or a case its rule does
not cover) is mapped by a loop over the batch (:func:`loop_rule`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapegrad import tape as _tape
from tapegrad.tracer import Traced

BatchRule = Callable[..., Any]

# tapegrad.numpy (for the loop's slices and stack), set when it is imported:
# tapegrad.numpy imports this module's rules, not the other way round
_numpy: Any = None


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
    def _escaped(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(ESCAPED)

    __array__ = __array_ufunc__ = _escaped
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _escaped
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __getitem__ = _escaped


class BatchTrace:
    """One ``vmap`` level: while entered, it is on the tapes' level stack;
    its values are batched along axis 0 of their arrays, ``size`` long."""

    batching = True

    def __init__(self, size: int) -> None:
        self.size = size
        self.active = False
        self.level = -1

    def __enter__(self) -> BatchTrace:
        tapes = _tape._stack.tapes
        self.level = len(tapes) + 1
        tapes.append(self)  # type: ignore[arg-type]
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        tapes = _tape._stack.tapes
        if tapes and tapes[-1] is self:
            tapes.pop()
        else:
            tapes.remove(self)  # type: ignore[arg-type]
        self.active = False

    def wrap(self, arr: Any) -> Traced:
        """The batched value whose array is ``arr`` (batch on axis 0)."""
        shape = arr.shape
        if not shape or shape[0] != self.size:
            raise ValueError(
                f"tapegrad.vmap: a batching rule returned shape {tuple(shape)}, which has no "
                f"batch axis of size {self.size}"
            )
        return Traced(Traced(Aval(shape[1:], arr.dtype), self, arr), self, arr)

    def apply(self, prim: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Traced:
        """Run primitive ``prim`` on ``args``, some of them batched on this level."""
        if not self.active:
            raise TypeError(ESCAPED)
        raw = list(args)
        batched = [False] * len(raw)
        for i, a in enumerate(args):
            if type(a) is Traced and a._tape is self:
                raw[i] = a._node
                batched[i] = True
        rule = prim.batch_rule
        out = None if rule is None else rule(raw, batched, self.size, **kwargs)
        if out is None:  # no rule, or none for this case
            out = loop_rule(prim.wrapped, raw, batched, self.size, **kwargs)
        return self.wrap(out)


def is_batched(x: Any) -> bool:
    """Is ``x`` a batched value (of any vmap level)?"""
    return type(x) is Traced and getattr(x._tape, "batching", False)


def array_of(x: Any, trace: BatchTrace) -> Any:
    """The array of ``x`` if it is batched on ``trace`` (batch on axis 0), else ``x``."""
    return x._node if type(x) is Traced and x._tape is trace else x


# --- generic rules -------------------------------------------------------------------------------


def loop_rule(fn: Callable[..., Any], args: Sequence[Any], batched: Sequence[bool], size: int,
              **kwargs: Any) -> Any:
    """Map ``fn`` by a loop over the batch: one call per example, stacked (the
    rule of a primitive that has none). Differentiable: the slices and the
    stack are tapegrad operations."""
    tnp = _numpy
    if size == 0:  # nothing to call: one call on zeros gives the per-example shape
        probe = [tnp.zeros(a.shape[1:], a.dtype) if b else a for a, b in zip(args, batched)]
        out = fn(*probe, **kwargs)
        return tnp.zeros((0,) + tuple(np.shape(out)), np.result_type(out))
    outs = [fn(*[a[i] if b else a for a, b in zip(args, batched)], **kwargs) for i in range(size)]
    return tnp.stack(outs)


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
    if not -nd <= axis < max(nd, 1):
        raise np.exceptions.AxisError(axis, nd)
    return (axis % nd if nd else 0) + 1


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
    and returns the result batched on axis 0, computed with tapegrad
    operations (one vectorized call, not a loop over the batch), or None for
    a case it does not cover (that case then loops over the batch).

    Example:
        >>> tg.defbatch(my_prim, lambda args, batched, size: my_prim(*args))  # takes leading axes
    """
    prim = getattr(prim_fn, "primitive", None)
    if prim is None or not hasattr(prim, "batch_rule"):
        raise TypeError(f"{prim_fn!r} is not a tapegrad primitive; wrap it with tg.primitive")
    prim.batch_rule = rule


# --- functions with no gradient (comparisons, argmax, shape queries...) ----------------------

# per-example metadata: computed on a stand-in of the per-example shape, never batched
_METADATA = frozenset("shape ndim size result_type iscomplexobj isrealobj zeros_like ones_like "
                      "empty_like".split())
# reductions along ``axis`` (given by keyword or as the second argument); None means
# "flattened", which has no per-example axis form: those loop
_AXIS_FUNCS = frozenset("argmax argmin argsort count_nonzero any all".split())


def apply_nondifferentiable(fun: Callable[..., Any], again: Callable[..., Any], args: list[Any],
                            kwargs: dict[str, Any]) -> Any:
    """Run ``fun`` (a NumPy function with no gradient) on ``args``, some of
    them batched; ``again`` is its tapegrad wrapper (for lower vmap levels)."""
    trace = max((a._tape for a in args if type(a) is Traced), key=lambda t: t.level)
    name = getattr(fun, "__name__", "")
    if name in _METADATA:
        stand_in = [np.broadcast_to(np.zeros((), a.dtype), a.shape) if type(a) is Traced else a
                    for a in args]
        return fun(*stand_in, **kwargs)
    raw = [array_of(a, trace) for a in args]
    batched = [type(a) is Traced and a._tape is trace for a in args]
    if isinstance(fun, np.ufunc) and not kwargs:
        return trace.wrap(elementwise_rule(again)(raw, batched, trace.size))
    if name in _AXIS_FUNCS and batched[0] and not any(batched[1:]):
        axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
        if axis is not None:
            kw = dict(kwargs)
            kw["axis"] = shift_axis(axis, raw[0].ndim - 1)
            return trace.wrap(again(raw[0], **kw))
    return trace.wrap(loop_rule(again, raw, batched, trace.size, **kwargs))
