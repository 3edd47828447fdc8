"""Custom rules and rematerialisation: custom_vjp, custom_jvp, checkpoint.

Each decorated call with traced arguments records ONE entry on the highest
tape among its arguments, with a rule object made for that call: the
user's backward function, the transpose of the user's JVP rule, or a
replay of the function itself. The function's own forward work runs one
level down, so it is differentiable there as usual (higher order works).
Pytree outputs are packed into one flat array for the entry and unpacked
by recorded slices, so one rule sees the whole output cotangent.

Under ``vmap`` (a batch level the highest among the arguments), the call
runs one level down as the same kind of call on the batched arrays, with
the function and its rules mapped over the batch (as JAX batches custom
rules): a gradient taken outside the vmap uses the rule, once for the
whole batch, and a rule runs on one example's values as it was written.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import BatchTrace
from tapegrad.core.level import entered
from tapegrad.core.primitive import Primitive, top_tape
from tapegrad.core.tape import Tape
from tapegrad.core.traced import Traced, unbox_idle, value
from tapegrad.pytree import tree_flatten, tree_map, tree_unflatten
from tapegrad.transforms._util import fun_name
from tapegrad.transforms.forward import ForwardTape
from tapegrad.transforms.remat import saving_forward, saving_vjp
from tapegrad.transforms.vmap import batched_call, broadcast_batch, vmap


def _flat_args(args: tuple[Any, ...]) -> tuple[list[Any], Any]:
    return tree_flatten(list(args))


def _unbox(tape: Any, xs: list[Any]) -> list[Any]:
    out = []
    for x in xs:
        x = unbox_idle(x)
        out.append(x._value if type(x) is Traced and x._level is tape else x)
    return out


class _Packing:
    """One flat array standing for a pytree of arrays (common dtype)."""

    def __init__(self, out: Any) -> None:
        self.leaves, self.treedef = tree_flatten(out)
        self.shapes = [np.shape(value(x)) for x in self.leaves]
        self.single = len(self.leaves) == 1
        self.dtype = np.result_type(*[value(x) for x in self.leaves]) if self.leaves else np.float64

    @property
    def ndim(self) -> int:
        """Axes of the packed value (batch axes of a cotangent come on top)."""
        return len(self.shapes[0]) if self.single else 1

    def pack(self, tree: Any = None) -> Any:
        """The packed value of this pytree (or of ``tree``, of the same structure)."""
        import tapegrad.numpy as tnp

        leaves = self.leaves if tree is None else tree_flatten(tree)[0]
        if self.single:
            return leaves[0]
        return tnp.concatenate([tnp.ravel(tnp.asarray(x)).astype(self.dtype) for x in leaves])

    def unpack(self, flat: Any) -> Any:
        """Leaves from the packed value (or its cotangent, with leading batch axes)."""
        if self.single:
            return tree_unflatten(self.treedef, [flat])
        nb = flat.ndim - 1
        leaves, off = [], 0
        for shape in self.shapes:
            size = math.prod(shape)
            piece = flat[(Ellipsis, slice(off, off + size))]
            leaves.append(piece.reshape(flat.shape[:nb] + tuple(shape)))
            off += size
        return tree_unflatten(self.treedef, leaves)


def _apply_rule(name: str, fun: Callable[..., Any], args: tuple[Any, ...],
                forward: Callable[[list[Any]], tuple[Any, Any]],
                make_vjp: Callable[[Any, Any, _Packing], Callable[[Any], list[Any]]]) -> Any | None:
    """Record one entry for a custom-rule call, or return None when nothing is traced.

    ``forward(raw_leaves) -> (out, residuals)`` runs one level down;
    ``make_vjp(residuals, raw_leaves, packing)`` gives ``g -> flat cotangents``.
    """
    flat, tdef = _flat_args(args)
    tape = top_tape(flat)
    if tape is None:
        return None
    raw = _unbox(tape, flat)
    out, res = forward(raw)
    for x in tree_flatten(out)[0]:
        if type(x) is Traced and x._level is tape:
            raise TypeError(
                f"{name}: the function used a traced value that is not among its arguments "
                "(a closure over a value being differentiated, or a value stored by a side "
                "effect); pass it as an argument instead"
            )
    packing = _Packing(out)
    ans = packing.pack()
    bwd = make_vjp(res, raw, packing)
    argnums = [i for i, x in enumerate(flat) if type(x) is Traced and x._level is tape]
    # The engine asks for one argument's cotangent at a time, with the same g:
    # run the rule once per g, and hand each result out once (then drop it).
    pending: dict[int, Any] = {}
    last: list[Any] = [None]

    def cotangent(i: int, g: Any) -> Any:
        if last[0] is not g or i not in pending:
            cts = bwd(g)
            pending.update((j, cts[j]) for j in argnums)
            last[0] = g
        ct = pending.pop(i)
        if not pending:
            last[0] = None
        return ct

    prim = Primitive(fun, name)
    prim.vjps_batched = True  # the rule objects take the batch of cotangents themselves
    for i in argnums:
        prim.vjps[i] = lambda _ans, *_a, _i=i, **_k: lambda g: cotangent(_i, g)
    traced = tape.record(prim, ans, flat, raw, {}, argnums)
    prim.vjps.clear()  # the entry holds the rules now: residuals go when it frees them
    return packing.unpack(traced)


def _check_structure(name: str, got: Any, primals: list[Any], batch: tuple[int, ...]) -> list[Any]:
    if not isinstance(got, (tuple, list)) or len(got) != len(primals):
        raise TypeError(
            f"{name}: the backward function must return a tuple with one cotangent per "
            f"primal argument ({len(primals)}), but returned "
            f"{type(got).__name__}" + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else "")
        )
    leaves: list[Any] = []
    for k, (c, p) in enumerate(zip(got, primals)):
        p_leaves, p_def = tree_flatten(p)
        if c is None:  # zeros for the whole argument, as in JAX
            leaves += [None] * len(p_leaves)
            continue
        c_leaves, c_def = tree_flatten(c)
        if c_def != p_def:
            raise TypeError(f"{name}: the backward function returned a cotangent of structure {c_def} "
                            f"for argument {k}, but the primal has structure {p_def}")
        leaves += c_leaves
    for k, (c, p) in enumerate(zip(leaves, tree_flatten(list(primals))[0])):
        want_shape = batch + np.shape(value(p))
        if c is not None and np.shape(value(c)) != want_shape:
            raise ValueError(f"{name}: cotangent {k} has shape {np.shape(value(c))}, but "
                             f"shape {want_shape} was expected (its primal's)")
    return leaves


def _zeros(p: Any, batch: tuple[int, ...]) -> Any:
    """Zeros of primal ``p``'s shape (per example, if it is batched) and dtype, after ``batch``."""
    v = value(p)
    return array_module(v).zeros(batch + tuple(np.shape(v)), v.dtype if hasattr(v, "dtype") else np.result_type(v))


def _resolve_kwargs(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """A custom function's arguments by position, keyword arguments moved to
    their places and defaults filled in (JAX's rule: the rules take positional
    arguments only)."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):  # (no signature to read: a builtin)
        if kwargs:
            raise TypeError("keyword arguments could not be resolved to positions") from None
        return args
    if not kwargs and all(p.default is p.empty for p in sig.parameters.values()):
        return args
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError("keyword arguments could not be resolved to positions")
    return tuple(bound.args)


def _check_nondiff(nondiff_argnums: Any, who: str) -> tuple[int, ...]:
    nums = tuple(nondiff_argnums)
    for i in nums:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"{who}: nondiff_argnums must be a tuple of ints, got {nondiff_argnums!r}")
    return tuple(int(i) for i in nums)


def _split_static(fun: Callable[..., Any], nondiff: tuple[int, ...], args: tuple[Any, ...],
                  who: str) -> tuple[list[Any], list[int], Callable[..., Any]]:
    """``(static, dynamic positions, fun of the dynamic arguments)`` for a call
    of ``fun`` with ``args`` whose ``nondiff`` positions are fixed."""
    for i in nondiff:
        if not -len(args) <= i < len(args):
            raise TypeError(f"{who}: nondiff_argnums names argument {i}, but the call has "
                            f"{len(args)} positional arguments")
    fixed = {i % len(args) for i in nondiff}
    static = [args[i] for i in nondiff]
    dyn = [i for i in range(len(args)) if i not in fixed]

    def of_dynamic(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(dyn, xs):
            full[i] = x
        return fun(*full)

    of_dynamic.__name__ = of_dynamic.__qualname__ = fun_name(fun)
    return static, dyn, of_dynamic


def _in_reverse_pass(tape: Any) -> bool:
    """Is a reverse-mode tape above ``tape`` recording? (Then the call is
    part of that pass's forward, ``fwd`` calling the function itself, and
    forward mode over it is forward-over-reverse: ``hessian``, ``hvp``.)"""
    return any(lv.level > tape.level and lv.active and not isinstance(lv, ForwardTape) for lv in entered())


class custom_vjp:
    """A function with a user-defined VJP (JAX's API).

    ``defvjp(fwd, bwd)`` gives the rule: ``fwd(*args) -> (out, residuals)``,
    ``bwd(residuals, g) -> tuple of cotangents``, one per argument (``None``
    for zeros). ``nondiff_argnums`` names arguments that are not
    differentiated (a function, a flag, a size): ``fwd`` still gets every
    argument, ``bwd`` gets them first, ``bwd(*nondiff, residuals, g)``, and
    returns cotangents for the other arguments only. Forward mode (``jvp``,
    ``jacfwd``) of such a function raises ``TypeError``, as in JAX (use
    ``custom_jvp`` for both modes); forward mode over a reverse pass
    (``hessian``, ``hvp``) differentiates ``bwd`` as usual.

    Examples:
        >>> @tg.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (tnp.clip(g, -1, 1),))
        >>> tg.grad(lambda x: 3 * clip_gradient(x))(2.0)
        np.float64(1.0)
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: tuple[int, ...] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _check_nondiff(nondiff_argnums, f"custom_vjp({fun_name(fun)})")
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any], symbolic_zeros: bool = False) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)``; ``bwd(residuals,
        g) -> tuple of cotangents`` (``bwd(*nondiff_args, residuals, g)`` with
        ``nondiff_argnums``). Returns None, as JAX's does."""
        if symbolic_zeros:
            raise NotImplementedError(f"custom_vjp({fun_name(self.fun)}).defvjp: symbolic_zeros=True "
                                      "is not supported (tapegrad passes zeros as arrays)")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = f"custom_vjp({fun_name(self.fun)})"
        if self.fwd is None or self.bwd is None:
            raise TypeError(f"{name}: no rule yet; call .defvjp(fwd, bwd) first")
        args = _resolve_kwargs(self.fun, args, kwargs)
        if self.nondiff_argnums:
            return self._with_static(args, name)
        flat, tdef = _flat_args(args)
        tape = top_tape(flat)
        if isinstance(tape, ForwardTape) and not _in_reverse_pass(tape):  # (JAX's words)
            raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
        if tape is not None and tape.abstract:  # vmap: batch it; jit: nothing differentiates here
            return self._batched(tape, flat, tdef, name) if type(tape) is BatchTrace else self.fun(*args)
        fwd, bwd = self.fwd, self.bwd

        def forward(raw: list[Any]) -> tuple[Any, Any]:
            got = fwd(*tree_unflatten(tdef, raw))
            if not isinstance(got, tuple) or len(got) != 2:
                raise TypeError(f"{name}: fwd must return a pair (output, residuals)")
            return got

        def make_vjp(res: Any, raw: list[Any], packing: _Packing) -> Callable[[Any], list[Any]]:
            primals = tree_unflatten(tdef, raw)

            def one(g: Any) -> list[Any]:
                cts = _check_structure(name, bwd(res, packing.unpack(g)), primals, ())
                return [_zeros(p, ()) if c is None else c for c, p in zip(cts, raw)]

            def vjp(g: Any) -> list[Any]:
                batch = tuple(g.shape[: g.ndim - packing.ndim])
                if not batch:
                    return one(g)
                # a batch of cotangents (jacrev): bwd is written for one, so map it over
                # them (as JAX does), stacking with tapegrad.numpy (higher order stays)
                import tapegrad.numpy as tnp

                n = math.prod(batch)
                if n == 0:
                    return [_zeros(p, batch) for p in raw]
                gs = tnp.reshape(g, (n,) + tuple(g.shape[len(batch):]))
                per = [one(gs[j, ...]) for j in range(n)]
                return [tnp.reshape(tnp.stack([c[k] for c in per]), batch + tuple(np.shape(value(p))))
                        for k, p in enumerate(raw)]

            return vjp

        out = _apply_rule(name, self.fun, args, forward, make_vjp)
        return self.fun(*args) if out is None else out

    def _with_static(self, args: tuple[Any, ...], name: str) -> Any:
        """The call with ``nondiff_argnums`` fixed: a custom_vjp of the other arguments."""
        fwd, bwd = self.fwd, self.bwd
        assert fwd is not None and bwd is not None
        static, dyn, fun = _split_static(self.fun, self.nondiff_argnums, args, name)
        _, _, fwd_dyn = _split_static(fwd, self.nondiff_argnums, args, name)
        inner = custom_vjp(fun)
        inner.defvjp(fwd_dyn, lambda res, g: bwd(*static, res, g))
        return inner(*[args[i] for i in dyn])

    def _batched(self, trace: Any, flat: list[Any], tdef: Any, name: str) -> Any:
        """The call with arguments batched on ``trace``, the top level: one
        call one level down of a custom_vjp whose function, ``fwd`` and
        ``bwd`` are mapped over the batch (so a gradient taken outside the
        vmap uses the rule, once for the whole batch)."""
        fwd, bwd = self.fwd, self.bwd
        assert fwd is not None and bwd is not None
        args, axes, mapped = _under_vmap(trace, flat, tdef)
        who = f"vmap({name})"

        def fwd_b(*xs: Any) -> Any:
            got, got_axes = batched_call(fwd, xs, axes, who)
            if not isinstance(got, tuple) or len(got) != 2:
                raise TypeError(f"{name}: fwd must return a pair (output, residuals)")
            leaves, odef = tree_flatten(got[0])
            out = tree_unflatten(odef, [x if ax == 0 else broadcast_batch(x, trace.size)  # (all batched)
                                        for x, ax in zip(leaves, tree_flatten(got_axes[0])[0])])
            return out, (got[1], got_axes[1], np.ndim(tree_flatten(out)[0][0]))

        def bwd_b(res: Any, g: Any) -> Any:
            res, res_axes, out_ndim = res
            nb = np.ndim(tree_flatten(g)[0][0]) - out_ndim  # leading axes of many cotangents (jacrev)
            cts = vmap(bwd, in_axes=(res_axes, nb), out_axes=nb)(res, g)
            return _sum_unmapped(cts, mapped, nb)

        inner = custom_vjp(vmap(self.fun, axes))
        inner.defvjp(fwd_b, bwd_b)
        return tree_map(trace.wrap, inner(*args))


def _under_vmap(trace: Any, flat: list[Any], tdef: Any) -> tuple[tuple[Any, ...], Any, list[list[bool]]]:
    """A custom function's arguments (``flat``, some batched on ``trace``)
    one level down: ``(args, in_axes, mapped)``, the batched ones as their
    arrays (batch on axis 0), ``in_axes`` 0 for those and None for the
    others, and, per argument, which of its leaves are batched."""
    raw = [x._array if type(x) is Traced and x._level is trace else x for x in flat]
    flags = [r is not x for x, r in zip(flat, raw)]
    args = tuple(tree_unflatten(tdef, raw))
    mapped = [tree_flatten(a)[0] for a in tree_unflatten(tdef, flags)]
    return args, tuple(tree_unflatten(tdef, [0 if f else None for f in flags])), mapped


def _sum_unmapped(cts: Any, mapped: list[list[bool]], nb: int) -> Any:
    """Per-example cotangents (batch on axis ``nb``) summed over the batch for
    the leaves that were not mapped (the same value for every example)."""
    import tapegrad.numpy as tnp

    if not isinstance(cts, (tuple, list)) or len(cts) != len(mapped):
        return cts  # (the structure check one level down names what is wrong)
    out = []
    for ct, flags in zip(cts, mapped):
        leaves, tdef = tree_flatten(ct)
        if len(leaves) == len(flags) and not all(flags):
            ct = tree_unflatten(tdef, [c if f else tnp.sum(c, axis=nb) for c, f in zip(leaves, flags)])
        out.append(ct)
    return type(cts)(out)


class custom_jvp:
    """A function with a user-defined JVP rule (JAX's API).

    ``defjvp(rule)`` gives the rule, ``rule(primals, tangents) ->
    (primal_out, tangent_out)`` (with ``nondiff_argnums``,
    ``rule(*nondiff_args, primals, tangents)``, the primals and tangents of
    the other arguments only); ``defjvps(*fns)`` gives one tangent function
    per argument instead. Reverse mode transposes the rule (it must be linear
    in the tangents) and runs it once in the forward pass: the function's
    value is the rule's ``primal_out``, so ``grad`` evaluates the function
    once.

    Examples:
        >>> @tg.custom_jvp
        ... def log1pexp(x):
        ...     return tnp.log1p(tnp.exp(x))
        >>> @log1pexp.defjvp
        ... def log1pexp_jvp(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return log1pexp(x), t * (1 - 1 / (1 + tnp.exp(x)))
        >>> tg.grad(log1pexp)(100.0)
        np.float64(1.0)
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: tuple[int, ...] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _check_nondiff(nondiff_argnums, f"custom_jvp({fun_name(fun)})")
        self.rule: Callable[..., Any] | None = None

    def defjvp(self, rule: Callable[..., Any], symbolic_zeros: bool = False) -> Callable[..., Any]:
        """Set the rule, ``rule(primals, tangents) -> (primal_out,
        tangent_out)`` (``rule(*nondiff_args, primals, tangents)`` with
        ``nondiff_argnums``), and return it: usable as a decorator."""
        if symbolic_zeros:
            raise NotImplementedError(f"custom_jvp({fun_name(self.fun)}).defjvp: symbolic_zeros=True "
                                      "is not supported (tapegrad passes zeros as arrays)")
        self.rule = rule
        return rule

    def defjvps(self, *tangent_fns: Callable[..., Any] | None) -> None:
        """Set the rule from one function per argument: ``fn(tangent,
        primal_out, *primals)`` is that argument's part of the output tangent
        (``None``: the output does not depend on it); the parts are summed."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            if len(tangent_fns) != len(primals):
                raise TypeError(f"custom_jvp({fun_name(self.fun)}).defjvps: {len(tangent_fns)} tangent "
                                f"functions for {len(primals)} arguments")
            out = self(*primals)
            parts = [fn(t, out, *primals) for fn, t in zip(tangent_fns, tangents) if fn is not None]
            if not parts:
                return out, tree_map(lambda o: _zeros(o, ()), out)
            return out, tree_map(lambda *ts: functools.reduce(lambda a, b: a + b, ts), *parts)

        self.defjvp(rule)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = f"custom_jvp({fun_name(self.fun)})"
        if self.rule is None:
            raise TypeError(f"{name}: no rule yet; call .defjvp(rule) first")
        args = _resolve_kwargs(self.fun, args, kwargs)
        if self.nondiff_argnums:
            rule_s = self.rule
            static, dyn, fun = _split_static(self.fun, self.nondiff_argnums, args, name)
            inner = custom_jvp(fun)
            inner.defjvp(lambda primals, tangents: rule_s(*static, primals, tangents))
            return inner(*[args[i] for i in dyn])
        flat, tdef = _flat_args(args)
        tape = top_tape(flat)
        if isinstance(tape, ForwardTape):
            return self._push(tape, flat, tdef)
        if tape is not None and tape.abstract:  # vmap: batch it; jit: nothing differentiates here
            return self._batched(tape, flat, tdef) if type(tape) is BatchTrace else self.fun(*args)
        rule = self.rule

        def forward(raw: list[Any]) -> tuple[Any, Any]:
            # the rule once, on tangents watched by a tape of its own: its primal output
            # is the value (the function does not run again), and what it records of the
            # tangents is the linear map that the backward pass transposes
            primals = tuple(tree_unflatten(tdef, raw))
            lin = Tape(persistent=True)  # (its VJPs may run more than once: a persistent outer tape)
            with lin:
                ts = [lin._watch_leaf(z) if z.dtype.kind in "fc" else z
                      for z in (_zeros(x, ()) for x in raw)]
                out, tout = rule(primals, tuple(tree_unflatten(tdef, ts)))
                tflat = _Packing(out).pack(tout)
            return out, (lin, ts, tflat)

        def make_vjp(res: Any, raw: list[Any], packing: _Packing) -> Callable[[Any], list[Any]]:
            lin, ts, tflat = res

            def vjp(g: Any) -> list[Any]:  # transpose t -> rule(primals, t)[1] at g
                watched = [t for t in ts if type(t) is Traced]
                got = iter(lin.gradient(tflat, watched, output_gradients=g) if watched else ())
                batch = tuple(g.shape[: g.ndim - packing.ndim])
                return [next(got) if type(t) is Traced else _zeros(x, batch) for t, x in zip(ts, raw)]

            return vjp

        out = _apply_rule(name, self.fun, args, forward, make_vjp)
        return self.fun(*args) if out is None else out

    def _batched(self, trace: Any, flat: list[Any], tdef: Any) -> Any:
        """The call with arguments batched on ``trace``, the top level: one
        call one level down of a custom_jvp whose function and rule are
        mapped over the batch (tangents are batched as their primals are)."""
        rule = self.rule
        assert rule is not None
        args, axes, _ = _under_vmap(trace, flat, tdef)
        inner = custom_jvp(vmap(self.fun, axes))
        inner.defjvp(vmap(rule, in_axes=(axes, axes)))
        return tree_map(trace.wrap, inner(*args))

    def _push(self, tape: ForwardTape, flat: list[Any], tdef: Any) -> Any:
        """Forward mode: call the rule with the tangents (row by row for a batch)."""
        from tapegrad.numpy import stack

        rule = self.rule
        assert rule is not None
        raw = _unbox(tape, flat)
        tans: list[Any] = [
            x._tangent if type(x) is Traced and x._level is tape
            else np.zeros(tape.batch + np.shape(value(r)), np.result_type(value(r)))
            for x, r in zip(flat, raw)
        ]
        primals = tuple(tree_unflatten(tdef, raw))
        if not tape.batch:
            out, tout = rule(primals, tuple(tree_unflatten(tdef, tans)))
        else:
            rows = [rule(primals, tuple(tree_unflatten(tdef, [t[j] for t in tans])))
                    for j in range(tape.batch[0])]
            out = rows[0][0]
            tout = stack([r[1] for r in rows])
        return tape.watch_with(out, tout)


def checkpoint(fun: Callable[..., Any] | None = None, *, policy: Callable[..., Any] | None = None,
               prevent_cse: bool = True, static_argnums: int | tuple[int, ...] = ()) -> Any:
    """``fun``, keeping only its inputs for the backward pass and running it
    again there (rematerialisation): less memory, one more forward.

    ``fun`` must be pure: it runs twice, and must not modify its arguments.
    It may close over traced values (a layer's weights, as JAX's checkpoint
    allows): those found in its closure (and in the closures of the
    functions it closes over, and in tuples, lists and dicts there) are made
    explicit arguments of the checkpointed call, so they get gradients.

    Args:
        fun: the function (omitted: a decorator with these options).
        policy: what to keep besides the inputs (``tg.checkpoint_policies``;
            JAX's policies): the primitive calls it accepts are not computed
            again in the backward pass, their outputs are kept. With a policy,
            ``fun`` runs on values of its own level: ``float(x)`` and
            ``np.asarray(x)`` are refused there (``tg.value(x)`` reads one).
        prevent_cse: accepted for JAX's signature (nothing here merges
            the recomputation with the forward pass).
        static_argnums: arguments passed as they are (Python numbers, flags,
            functions), never traced.

    ``tg.remat`` is the same function (JAX's other name).

    Examples:
        >>> layer = tg.checkpoint(lambda w, x: tnp.tanh(x @ w))
        >>> tg.grad(lambda w: tnp.sum(layer(w, np.ones((2, 3)))))(np.eye(3)).shape
        (3, 3)
    """
    if fun is None:
        return functools.partial(checkpoint, policy=policy, prevent_cse=prevent_cse,
                                 static_argnums=static_argnums)
    from tapegrad.transforms import checkpoint_policies as policies

    if policy is policies.nothing_saveable:
        policy = None  # (the default: nothing to log)
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be a function (tg.checkpoint_policies), got {policy!r}")
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = f"checkpoint({fun_name(fun)})"
    if statics:
        @functools.wraps(fun)
        def with_statics(*args: Any) -> Any:
            _, dyn, of_dynamic = _split_static(fun, statics, args, name)
            return checkpoint(of_dynamic, policy=policy)(*[args[i] for i in dyn])

        return with_statics
    convert = not getattr(fun, "_closure_explicit", False)  # (see _explicit)

    @functools.wraps(fun)
    def remat(*args: Any) -> Any:
        from tapegrad.transforms.reverse import vjp as vjp_

        cells = _traced_cells(fun) if convert else ()
        if cells:  # closure conversion: the closed-over traced values become arguments
            return _explicit(fun, cells, name, policy)(*args, *[c.cell_contents for c in cells])
        flat, tdef = _flat_args(args)
        trace = top_tape(flat)
        if trace is not None and trace.abstract:
            if type(trace) is not BatchTrace:  # a jit trace: nothing differentiates here
                return fun(*args)
            args_b, axes, _ = _under_vmap(trace, flat, tdef)  # the mapped function, checkpointed one level down
            return tree_map(trace.wrap, remat_b(axes)(*args_b))

        def forward(raw: list[Any]) -> tuple[Any, Any]:
            guarded = [_read_only(x) for x in raw]
            try:
                if policy is not None:  # (the outputs the policy keeps are logged)
                    return saving_forward(lambda *xs: fun(*tree_unflatten(tdef, list(xs))), guarded, policy)
                out = fun(*tree_unflatten(tdef, guarded))
            except ValueError as e:
                if "read-only" in str(e):
                    raise TypeError(
                        f"{name}: the function modified one of its arguments in place; a "
                        "checkpointed function runs again in the backward pass and must not "
                        "change its inputs"
                    ) from e
                raise
            return out, None

        def make_vjp(res: Any, raw: list[Any], packing: _Packing) -> Callable[[Any], list[Any]]:
            def vjp(g: Any) -> list[Any]:
                def again(*xs: Any) -> Any:
                    return packing.pack(fun(*tree_unflatten(tdef, list(xs))))

                if res is not None:  # (a policy's log: its kept outputs are not computed again)
                    return saving_vjp(again, raw, res, g)
                _, fn = vjp_(again, *raw)
                nb = g.ndim - packing.ndim
                return list(fn.batched(g, g.shape[:nb]) if nb else fn(g))

            return vjp

        out = _apply_rule(name, fun, args, forward, make_vjp)
        return fun(*args) if out is None else out

    def remat_b(axes: Any) -> Callable[..., Any]:
        mapped = vmap(fun, axes)
        mapped.__name__ = f"vmap({fun_name(fun)})"
        return checkpoint(mapped, policy=policy)

    return remat


def _traced_cells(fun: Any, seen: set[int] | None = None) -> list[Any]:
    """The closure cells of ``fun`` (and of the functions it closes over,
    recursively) that hold traced values of an active tape, directly or in a
    tuple, list or dict."""
    seen = set() if seen is None else seen
    if id(fun) in seen:
        return []
    seen.add(id(fun))
    found = []
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:  # (an empty cell: a name not bound yet)
            continue
        if callable(v) and hasattr(v, "__closure__"):
            found += _traced_cells(v, seen)
        elif type(v) is Traced or isinstance(v, (tuple, list, dict)):
            leaves = tree_flatten(v)[0]
            if any(type(x) is Traced and (x._level.active or x._level.abstract and x._level.entered)
                   for x in leaves) and all(
                    type(x) is Traced or isinstance(x, (np.ndarray, float, complex)) for x in leaves):
                found.append(cell)
    return found


def _explicit(fun: Callable[..., Any], cells: list[Any], name: str,
              policy: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``fun`` checkpointed with the contents of closure ``cells`` as extra
    trailing arguments: each call puts the values it is given into the cells
    while ``fun`` runs (the forward one level down, the replay in the
    backward pass) and restores them after."""
    k = len(cells)

    def explicit(*args_and_closed: Any) -> Any:
        args, closed = args_and_closed[:-k], args_and_closed[-k:]
        saved = [c.cell_contents for c in cells]
        for c, v in zip(cells, closed):
            c.cell_contents = v
        try:
            return fun(*args)
        finally:
            for c, v in zip(cells, saved):
                c.cell_contents = v

    explicit.__name__ = explicit.__qualname__ = fun_name(fun)
    explicit._closure_explicit = True  # type: ignore[attr-defined]  # (its cells are its arguments now)
    return checkpoint(explicit, policy=policy)


def _read_only(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x
