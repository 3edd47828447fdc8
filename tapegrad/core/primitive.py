"""Primitives and their rules: ``primitive()``, ``defvjp()``, ``defjvp()``.

A primitive wraps a function on plain arrays. Called with no traced argument
it *is* that function (one loop over the arguments, no recording). Called with
traced arguments it unboxes those of the highest active tape, calls itself on
the unboxed values (so lower tapes record too), and hands the answer to that
tape's ``record``, the one place that builds entries (see
``tapegrad.core.tape.Tape.record``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from types import FunctionType
from typing import Any

import numpy as np

from tapegrad._where import op_error, reraised
from tapegrad.core.traced import NUMPY_DISPATCH, Traced, overrides_ufuncs, value

VjpMaker = Callable[..., Callable[[Any], Any]]


# The ``argnums`` that the one- and two-operand paths below hand to a tape's
# ``record``: four distinct objects, so that a record can tell the common cases
# apart by identity (``is``). Any other sequence of positions is still accepted.
# (Built with tuple([...]): equal tuple literals could be folded into one object.)
ARGNUMS_UNARY = _UNARY = tuple([0])  # one operand, traced
ARGNUMS_FIRST = _FIRST = tuple([0])  # two operands, the first traced
ARGNUMS_SECOND = _SECOND = tuple([1])  # two operands, the second traced
ARGNUMS_BOTH = _BOTH = tuple([0, 1])  # two operands, both traced

REGISTRY: list[Primitive] = []  # every named primitive (custom-rule calls make unnamed ones)


class Primitive:
    """The rule record of one primitive (what the tape keeps a reference to)."""

    __slots__ = ("name", "fun", "wrapped", "vjps", "vjp_argnum", "jvps", "jvp_argnum",
                 "vjps_batched", "jvps_batched")

    def __init__(self, fun: Callable[..., Any], name: str) -> None:
        self.name = name
        self.fun = fun
        self.wrapped: Callable[..., Any] = fun
        self.vjps: dict[int, VjpMaker | None] = {}
        self.vjp_argnum: Callable[..., Callable[[Any], Any]] | None = None
        self.jvps: dict[int, VjpMaker | None] = {}
        self.jvp_argnum: Callable[..., Callable[[Any], Any]] | None = None
        # Do the rules take leading batch axes (``g.shape == batch + ans.shape``)?
        # If not, a transform pushing a batch calls them once per element (see
        # tapegrad.core.engine_ops.map_batch). Declared by primitive(batched=...) and
        # defvjp/defjvp(batched=...): tapegrad's own primitives are made batched.
        self.vjps_batched = False
        self.jvps_batched = False

    def __repr__(self) -> str:
        return f"<tapegrad primitive {self.name}>"

    def jvp_maker(self, argnum: int) -> VjpMaker | None:
        """The JVP rule maker for ``argnum``, or None (forward mode then
        transposes the VJP rule)."""
        maker = self.jvps.get(argnum)
        if maker is None and self.jvp_argnum is not None:
            return functools.partial(self.jvp_argnum, argnum)
        return maker

    def vjp_maker(self, argnum: int) -> VjpMaker:
        if argnum in self.vjps:
            maker = self.vjps[argnum]
            if maker is not None:
                return maker
        elif self.vjp_argnum is not None:
            return functools.partial(self.vjp_argnum, argnum)
        return functools.partial(_undefined_vjp, self.name, argnum)


def _undefined_vjp(name: str, argnum: int, ans: Any, *args: Any, **kwargs: Any) -> Any:
    def raise_(g: Any) -> Any:
        raise NotImplementedError(
            f"VJP of `{name}` with respect to argument {argnum} is not defined"
        )

    return raise_


def primitive(fun: Callable[..., Any], name: str | None = None, *, batched: bool = False) -> Callable[..., Any]:
    """Make ``fun`` (a function on plain arrays) a differentiable primitive.

    Give it rules with ``defvjp`` (and optionally ``defjvp``). ``batched``
    declares that the rules it will be given take leading batch axes (see
    ``defvjp``; ``defvjp``/``defjvp`` may still say otherwise for theirs).
    Returns the primitive: called on plain arrays it is ``fun``.

    Examples:
        >>> @tg.primitive
        ... def logsin(x):
        ...     return np.log(np.sin(x))
        >>> tg.defvjp(logsin, lambda ans, x: lambda g: g / tnp.tan(x))
    """
    prim = Primitive(fun, name or str(getattr(fun, "__name__", "primitive")))
    prim.vjps_batched = prim.jvps_batched = batched
    REGISTRY.append(prim)

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        # The fast paths: one or two values of a recording tape (``Tape.process``
        # unrolled; ``tape.active`` is the one test of the level, as cheap as a
        # plain attribute gets), then plain arrays (a rule's work in a backward
        # pass). Everything else goes to ``_apply``: the top level processes it.
        n = len(args)
        if n == 1:
            a = args[0]
            if type(a) is Traced:
                tape = a._level
                x = a._value
                if type(x) is not Traced:
                    if tape.active:  # (prim.fun: debug_nans swaps it)
                        try:
                            ans = prim.fun(x, **kwargs) if kwargs else prim.fun(x)
                        except ValueError as e:  # (NumPy refused the shapes: say which op and where)
                            raise op_error(prim.name, args, e)  # noqa: B904 (op_error sets the cause)
                        except TypeError as e:
                            raise named(prim, kwargs, e)  # noqa: B904
                        return tape.record(prim, ans, args, (x,), kwargs, _UNARY)
                    if not tape.abstract:  # a tape no longer recording: its values are constants
                        return prim.fun(x, **kwargs) if kwargs else prim.fun(x)
                try:  # (a recording tape over a lower level's value: _apply1, the nested case)
                    return _apply1(prim, a, kwargs) if tape.active else _apply(prim, args, kwargs)
                except ValueError as e:  # (worded below: the traceback restarts here)
                    raise reraised(e)  # noqa: B904
                except TypeError as e:
                    raise named(prim, kwargs, e)  # noqa: B904
            # plain arrays (a rule's work in a backward pass): no ``**{}`` (it costs 60 ns)
            try:  # (free until it raises: Python's exceptions cost nothing when none is raised)
                return fun(a, **kwargs) if kwargs else fun(a)
            except TypeError as e:
                return _listed(prim, args, kwargs, e)
        if n == 2:
            a, b = args
            if type(a) is Traced:
                if type(b) is Traced:
                    tape = a._level
                    if tape is b._level and tape.active:  # the hot cases, unrolled
                        x, y = a._value, b._value
                        if type(x) is not Traced and type(y) is not Traced:
                            try:
                                ans = prim.fun(x, y, **kwargs) if kwargs else prim.fun(x, y)
                            except ValueError as e:
                                raise op_error(prim.name, args, e)  # noqa: B904
                            except TypeError as e:
                                raise named(prim, kwargs, e)  # noqa: B904
                            return tape.record(prim, ans, args, (x, y), kwargs, _BOTH)
                    try:
                        return _apply2(prim, a, b, kwargs)
                    except ValueError as e:  # (worded below: the traceback restarts here)
                        raise reraised(e)  # noqa: B904
                    except TypeError as e:
                        raise named(prim, kwargs, e)  # noqa: B904
                try:  # (b may be a list holding traced values)
                    return _apply2(prim, a, b, kwargs)
                except TypeError as e:
                    return _listed(prim, args, kwargs, e)
                except ValueError as e:  # (worded below: the traceback restarts here)
                    raise reraised(e)  # noqa: B904
            try:
                if type(b) is Traced:
                    return _apply2(prim, a, b, kwargs)
                return fun(a, b, **kwargs) if kwargs else fun(a, b)
            except TypeError as e:
                return _listed(prim, args, kwargs, e)
            except ValueError as e:  # (worded below, if traced: the traceback restarts here)
                raise reraised(e)  # noqa: B904
        try:
            for a in args:
                if type(a) is Traced:
                    return _apply(prim, args, kwargs)
            return fun(*args, **kwargs)
        except TypeError as e:
            return _listed(prim, args, kwargs, e)
        except ValueError as e:  # (worded by _apply, if traced: the traceback restarts here)
            raise reraised(e)  # noqa: B904

    prim.wrapped = wrapped
    wrapped.primitive = prim  # type: ignore[attr-defined]
    return wrapped


def _listed(prim: Primitive, args: tuple[Any, ...], kwargs: dict[str, Any], err: TypeError) -> Any:
    """A primitive called with no traced argument raised ``err``: if a list or
    tuple argument holds traced values (NumPy's array_like), NumPy's conversion
    of it refused them; call again with each such argument as one traced array
    (``tnp.array``). Otherwise ``err`` stands. Only reached after a TypeError,
    so the plain path pays nothing for it."""
    if type(err).__module__ == "builtins" and str(err).startswith(("Unsupported type", "Implicit conversion")):
        from tapegrad.backend import array_module  # CuPy refused a host array: name both devices

        try:
            array_module(*args, *kwargs.values())
        except ValueError as e:
            raise e from err
    array = NUMPY_DISPATCH.get(np.array)  # (tapegrad.numpy's array, once it is imported)
    if array is None:
        raise named(prim, kwargs, err)

    def level(a: Any) -> int:  # the highest tape level of the traced values in a list
        if type(a) is Traced:
            return int(a._level.level)
        if isinstance(a, (list, tuple)):
            return max((level(o) for o in a), default=-1)
        return -1

    vals = (*args, *kwargs.values())
    listed = max((level(a) for a in vals if isinstance(a, (list, tuple))), default=-1)
    # a nested call (a level below the list's values): the outer level converts the list
    if listed < 0 or listed < max((level(a) for a in vals if type(a) is Traced), default=-1):
        raise named(prim, kwargs, err)
    new = tuple(array(a) if isinstance(a, (list, tuple)) and level(a) >= 0 else a for a in args)
    newkw = {k: array(a) if isinstance(a, (list, tuple)) and level(a) >= 0 else a for k, a in kwargs.items()}
    return prim.wrapped(*new, **newkw)


# the TypeError Python (or NumPy) raises for arguments a function does not take
_BAD_CALL = re.compile(r"([\w.]+)\(\) (?:got an unexpected keyword argument '(\w+)'|got multiple values "
                       r"for argument|missing \d+ required|takes (?:from )?\d+|takes no keyword)")


def named(prim: Primitive, kwargs: dict[str, Any], err: TypeError) -> TypeError:
    """``err``, raised by calling the primitive with arguments it does not take,
    worded with the primitive's name (``sum() got an unexpected keyword
    argument 'axiss'``, not ``reduce()``, the NumPy function it calls, nor
    ``_sum()``, the function it wraps). Any other ``err`` is left as it is."""
    msg = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else ""
    m = _BAD_CALL.match(msg)
    if m is not None and m.group(1) != prim.name:
        fun = prim.fun
        own = m.group(1) in (getattr(fun, "__name__", None), getattr(fun, "__qualname__", None))
        if own or m.group(2) in kwargs:  # (its own binding, or a keyword it passed on)
            err.args = (prim.name + msg[m.end(1):],)
    return err


def _holds(a: Any) -> bool:
    if type(a) is Traced:
        return True
    return isinstance(a, (list, tuple)) and any(_holds(o) for o in a)


_SEQUENCES = (list, tuple)


def _refuse_lists(args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Raise the TypeError that ``_listed`` answers if a list or tuple argument
    holds traced values (only on the paths that would not raise it themselves)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)) and _holds(a):
            raise TypeError("tapegrad: a list or tuple holding traced values")


def _apply(prim: Primitive, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The general path (at least one argument is traced): the highest level
    among the arguments processes the call (see ``tapegrad.core.level``)."""
    top = None
    for a in args:
        if type(a) is Traced:
            t = a._level
            if top is None or t.level > top.level:
                top = t
    assert top is not None
    if not top.active:  # (an abstract level would take such a list as a constant; a tape converts it)
        _refuse_lists(args, kwargs)
    try:
        return top.process(prim, args, kwargs)
    except ValueError as e:  # (NumPy refused the shapes: say which op and where)
        raise op_error(prim.name, args, e)  # noqa: B904 (op_error sets the cause)


def top_tape(args: Sequence[Any]) -> Any:
    """The highest level entered among the traced values in ``args`` (or None):
    a recording tape, or a level that processes primitives in its own way."""
    tape = None
    for a in args:
        if type(a) is Traced:
            t = a._level
            if (t.active or t.abstract and t.entered) and (tape is None or t.level > tape.level):
                tape = t
    return tape


def _apply2(prim: Primitive, a: Any, b: Any, kwargs: dict[str, Any]) -> Any:
    """``_apply`` unrolled for two arguments on a recording tape (binary
    operators and functions with a constant: the hot cases)."""
    ta = type(a) is Traced
    tb = type(b) is Traced
    if ta and tb:
        tape = a._level
        other = b._level
        if tape is not other:  # values of two levels: the higher records, the other is a constant to it
            if tape.level > other.level:
                tb = False
            else:
                ta = False
                tape = other
    else:
        tape = a._level if ta else b._level
    if not tape.active:
        if tape.abstract or kwargs or isinstance(b if ta else a, _SEQUENCES):
            return _apply(prim, (a, b), kwargs)
        # an idle tape (a backward pass without create_graph): its values are constants, as
        # Tape.process reads them (saves the general path's three calls per rule that reads one)
        return prim.wrapped(a._value if ta else a, b._value if tb else b)
    x = a._value if ta else a
    y = b._value if tb else b
    try:
        if type(x) is Traced or type(y) is Traced:
            # (a list can only be the untraced operand or a keyword: the nested
            # path of higher order pays no call when neither is one)
            if kwargs or isinstance(b if ta else a, _SEQUENCES):
                _refuse_lists((a, b), kwargs)
            ans = prim.wrapped(x, y, **kwargs)
        else:
            ans = prim.fun(x, y, **kwargs) if kwargs else prim.fun(x, y)
    except ValueError as e:  # (NumPy refused the shapes: say which op and where)
        raise op_error(prim.name, (a, b), e)  # noqa: B904 (op_error sets the cause)
    return tape.record(prim, ans, (a, b), (x, y), kwargs, _BOTH if ta and tb else (_FIRST if ta else _SECOND))


def binary_method(prim_fn: Callable[..., Any], reflected: bool = False,
                  ufunc: Any = None) -> Callable[[Any, Any], Any]:
    """A traced value's operator method for a binary primitive (``__mul__``...).

    ``ufunc`` is NumPy's ufunc of the operator (``np.multiply``): what the
    operator calls for an operand that overrides NumPy's ufuncs, as
    ``ndarray``'s operators do (see ``deferred``).

    The hot case, a value of one tape and a constant (``x * 1.0001``), goes
    straight to the tape's ``record``; everything else through ``_apply2``.
    With a Python float, the rule is looked up in a cache first (see
    ``keep_scalar_rule``): a loop adding the same constant makes no
    closure per op. Rules and functions are looked up at call time
    (debug_nans swaps them)."""
    prim = _lookup(prim_fn)
    rules: dict[float, tuple[Any, ...]] = {}
    argnums = _SECOND if reflected else _FIRST
    argnum = argnums[0]

    def method(self: Traced, other: Any) -> Any:
        x = self._value
        if type(other) is not Traced and type(x) is not Traced:
            if type(other) is not float and type(other) is not np.ndarray and type(other) is not int and defers_to(other):
                return deferred(self, other, ufunc, reflected)
            tape = self._level
            if tape.active:
                try:
                    if reflected:
                        ans, args, raw = prim.fun(other, x), (other, self), (other, x)
                    else:
                        ans, args, raw = prim.fun(x, other), (self, other), (x, other)
                except ValueError as e:  # (NumPy refused the shapes: say which op and where)
                    raise op_error(prim.name, (other, self) if reflected else (self, other), e)  # noqa: B904
                except TypeError as e:  # (CuPy refused a host operand: the error names both devices)
                    return _listed(prim, (other, x) if reflected else (x, other), _NO_KWARGS, e)
                if type(other) is not float:
                    return tape.record(prim, ans, args, raw, _NO_KWARGS, argnums)
                c = rules.get(other)  # (the same scalar and maker: see keep_scalar_rule)
                maker = prim.vjps.get(argnum)
                if c is not None and c[1] is maker and (other or c[0] is other):
                    return tape.record(prim, ans, args, raw, _NO_KWARGS, argnums, c[2])
                out = tape.record(prim, ans, args, raw, _NO_KWARGS, argnums)
                keep_scalar_rule(rules, maker, other, out._node, x, self)
                return out
            if not tape.abstract:  # a stale value: plain arithmetic
                return prim.fun(other, x) if reflected else prim.fun(x, other)
        elif (type(other) is not Traced and type(other) is not float and type(other) is not np.ndarray
                and type(other) is not int and defers_to(other)):  # (as above: these never defer)
            return deferred(self, other, ufunc, reflected)
        try:
            if reflected:
                return _apply2(prim, other, self, _NO_KWARGS)
            return _apply2(prim, self, other, _NO_KWARGS)
        except ValueError as e:  # (worded by _apply2: the traceback restarts here)
            raise reraised(e)  # noqa: B904

    return method


def defers_to(other: Any) -> bool:
    """Does a traced value's binary operator leave ``other`` to it (see
    ``deferred``), as ``ndarray``'s do? Yes for an object that opts out of
    ufuncs (``__array_ufunc__ = None``) or overrides them with its own
    ``__array_ufunc__`` (xarray, pint, ...): it knows how to combine itself
    with an array; a traced value does not know it. Not for numbers, NumPy's
    arrays and scalars, or CuPy's arrays."""
    if type(other) is not Traced and getattr(type(other), "__array_ufunc__", False) is None:
        return True
    return overrides_ufuncs(other)


def deferred(self: Traced, other: Any, ufunc: Any, reflected: bool) -> Any:
    """What a traced value's binary operator returns for an ``other`` it defers
    to, as ``ndarray``'s operators do (NumPy's NEP 13): NotImplemented for
    one that opts out of ufuncs (Python then calls its reflected operator);
    for one with its own ``__array_ufunc__``, the ufunc (NumPy then calls
    that override: the traced value's own yields to it)."""
    if ufunc is None or getattr(type(other), "__array_ufunc__", None) is None:
        return NotImplemented
    return ufunc(other, self) if reflected else ufunc(self, other)


_SCALAR_RULES_MAX = 64  # scalars remembered per operator (a loop uses a few)


def keep_scalar_rule(rules: dict[float, tuple[Any, ...]], maker: Any, s: float, node: Any, *held: Any) -> None:
    """Remember the rule of entry ``node`` (made by ``maker`` for an operator
    with a traced value and the float ``s``) in the operator's cache, if it
    depends on ``s`` alone: a plain function holding none of ``held`` (the
    operands) and no output. The cache hands it out again for the same
    scalar: the same object, or an equal one that is not a zero (0.0 and
    -0.0 are equal keys with different products), and the same maker
    (debug_nans swaps them). Operators whose rule reads the operand or the
    output (``x ** 2.0``) are never cached."""
    if maker is None or node is None or hasattr(node, "res"):
        return  # (no rule of its own; no entry (a forward trace's); a rule that keeps its output)
    vjp = node.vjps
    if type(vjp) is not FunctionType:
        return
    for cell in vjp.__closure__ or ():
        c = cell.cell_contents
        if type(c) is not float and type(c) is not int:
            return
    if len(rules) >= _SCALAR_RULES_MAX:
        rules.clear()
    rules[s] = (s, maker, vjp)


_NO_KWARGS: dict[str, Any] = {}


def _apply1(prim: Primitive, a: Traced, kwargs: dict[str, Any]) -> Any:
    """A primitive of one traced argument (unary operators and methods): the
    fast path of ``wrapped``, else ``_apply``."""
    tape = a._level
    x = a._value
    if tape.active:
        try:
            if type(x) is Traced:
                ans = prim.wrapped(x, **kwargs)
            else:  # (no ``**{}`` when there are no keywords: a tenth of the per-op cost)
                ans = prim.fun(x, **kwargs) if kwargs else prim.fun(x)
        except ValueError as e:  # (NumPy refused the shapes: say which op and where)
            raise op_error(prim.name, (a,), e)  # noqa: B904 (op_error sets the cause)
        return tape.record(prim, ans, (a,), (x,), kwargs, _UNARY)
    if not tape.abstract and type(x) is not Traced:  # a tape no longer recording: a constant
        return prim.fun(x, **kwargs) if kwargs else prim.fun(x)
    return _apply(prim, (a,), kwargs)


def _lookup(prim_fn: Callable[..., Any]) -> Primitive:
    prim = getattr(prim_fn, "primitive", None)
    if not isinstance(prim, Primitive):
        raise TypeError(f"{prim_fn!r} is not a tapegrad primitive; wrap it with tg.primitive")
    return prim


def defvjp(prim_fn: Callable[..., Any], *makers: VjpMaker | None, argnums: Any = None,
           batched: bool | None = None) -> None:
    """Define the VJP rules of a primitive, one maker per argument.

    Each maker is ``(ans, *args, **kwargs) -> (g -> cotangent)``: the outer
    call runs when the op is recorded and decides what is kept; the inner one
    runs in the backward pass. ``None`` marks an argument as not differentiable:
    a gradient that reaches it raises ``NotImplementedError`` naming the
    primitive and the argument (it is never silently zero).
    The returned cotangent may be in the broadcast shape of ``ans``: the
    engine sums it back to the argument's shape and casts it to its dtype.

    ``batched`` says whether the rules take leading batch axes. By default
    (``False`` for a new primitive) a rule sees one cotangent at a time,
    ``g.shape == ans.shape``: when ``jacrev``, ``hessian`` or a batched
    ``vjp_fn`` push a batch of cotangents, tapegrad calls it once per element
    and stacks the results. With ``batched=True``, ``g`` may carry extra
    leading axes (``g.shape == batch + ans.shape``) and the rule must return
    a cotangent carrying the same leading axes: one call takes the whole
    batch (faster). It applies to all the primitive's VJP rules; ``None``
    leaves the current declaration as it is.
    """
    prim = _lookup(prim_fn)
    for i, m in zip(argnums if argnums is not None else range(len(makers)), makers):
        prim.vjps[i] = m
    if batched is not None:
        prim.vjps_batched = bool(batched)


def defvjp_argnum(prim_fn: Callable[..., Any], maker: Callable[..., Any], batched: bool | None = None) -> None:
    """Define all VJPs of a primitive with one ``(argnum, ans, *args, **kw)`` maker
    (``batched`` as for ``defvjp``)."""
    prim = _lookup(prim_fn)
    prim.vjp_argnum = maker
    if batched is not None:
        prim.vjps_batched = bool(batched)


def defjvp(prim_fn: Callable[..., Any], *makers: VjpMaker | None, argnums: Any = None,
           batched: bool | None = None) -> None:
    """Define the JVP rules of a primitive, one maker per argument.

    Each maker is ``(ans, *args, **kwargs) -> (t -> tangent)``. A primitive
    with VJP rules alone still works in forward mode (the VJP is transposed).

    ``batched`` says whether the rules take leading batch axes. By default
    (``False`` for a new primitive) a rule sees one tangent at a time,
    ``t.shape == x.shape``: when ``jacfwd`` or ``hessian`` push a batch of
    tangents, tapegrad calls it once per element and stacks the results.
    With ``batched=True``, ``t`` may carry extra leading axes
    (``t.shape == batch + x.shape``) and the rule must return a tangent
    carrying the same leading axes. It applies to all the primitive's JVP
    rules; ``None`` leaves the current declaration as it is.
    """
    prim = _lookup(prim_fn)
    for i, m in zip(argnums if argnums is not None else range(len(makers)), makers):
        prim.jvps[i] = m
    if batched is not None:
        prim.jvps_batched = bool(batched)


def defjvp_argnum(prim_fn: Callable[..., Any], maker: Callable[..., Any], batched: bool | None = None) -> None:
    """Define all JVPs of a primitive with one ``(argnum, ans, *args, **kw)`` maker
    (``batched`` as for ``defjvp``)."""
    prim = _lookup(prim_fn)
    prim.jvp_argnum = maker
    if batched is not None:
        prim.jvps_batched = bool(batched)


def nondifferentiable(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fun`` so that traced arguments are read by value: the result is
    a plain array with no gradient (comparisons, ``sign``, ``argmax``...)."""

    @functools.wraps(fun)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        for a in (*args, *kwargs.values()) if kwargs else args:
            if type(a) is Traced:
                vals = [value(b) for b in args]
                kw = {k: value(v) for k, v in kwargs.items()} if kwargs else kwargs
                top = None  # the highest level whose values value() keeps (an abstract level's)
                for v in (*vals, *kw.values()):
                    if type(v) is Traced and (top is None or v._level.level > top.level):
                        top = v._level
                if top is not None:
                    return top.process_nondifferentiable(fun, wrapped, vals, kw)
                return fun(*vals, **kw)
        return fun(*args, **kwargs)

    return wrapped
