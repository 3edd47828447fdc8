"""``jit``: trace a function once per input signature, run it compiled after.

The trace (``tapegrad.compile.trace``) runs ``f`` on traced values of a
jit level and writes down every primitive call, backward passes included;
the passes (``tapegrad.compile.passes``) clean the list; code generation
(``tapegrad.compile.codegen``) makes it one straight-line Python function
over NumPy. Calls with the same signature (pytree structure, shapes, dtypes,
static arguments) run that function; a failed guard traces the other path
too (up to ``MAX_VARIANTS``, then ``f`` runs eagerly).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from tapegrad.compile import backends, horizontal, passes, rewrites
from tapegrad.compile.backends import check_backend
from tapegrad.compile.codegen import GuardFailed, compile_source, generate
from tapegrad.compile.entry import Miss, make_entry
from tapegrad.compile.facts import Var
from tapegrad.compile.trace import JitTrace
from tapegrad.core.level import entered
from tapegrad.core.traced import Traced, unbox_idle
from tapegrad.pytree import TreeDef, tree_flatten, tree_unflatten
from tapegrad.transforms._util import check_argnums, fun_name

MAX_VARIANTS = 8  # compiled paths of one signature before jit gives up and runs eagerly
# Variants tried through their entries, most recently run first, before the general lookup:
# a training epoch alternates two batch shapes (the last batch is shorter), and the lookup
# (flatten, signature, cache, rebuild) costs tens of microseconds where a missed entry
# costs one raised exception.
FAST_ENTRIES = 4


class Compiled:
    """One compiled variant: its program, its source and the function."""

    def __init__(self, source: str, namespace: dict[str, Any], fn_name: str, out_def: Any,
                 program: list[Any]) -> None:
        self.source = source
        self.fn = compile_source(source, namespace, fn_name)
        self.out_def = out_def
        self.program = program

        self.entry: Any = None  # (see tapegrad.compile.entry; set by Jitted for plain calls)
        self.n_args = -1

    def __call__(self, leaves: Sequence[Any]) -> Any:
        return tree_unflatten(self.out_def, self.fn(*leaves))


class Lowered:
    """What ``Jitted.lower`` returns: the compiled program for one signature."""

    def __init__(self, compiled: Compiled) -> None:
        self._compiled = compiled

    def as_text(self) -> str:
        """The generated Python source: one line per operation."""
        return self._compiled.source


class Jitted:
    """A function compiled per input signature (see ``jit``)."""

    backend = "numpy"  # (see jit's ``backend``)
    donate_argnums: tuple[int, ...] = ()  # (see jit's ``donate_argnums``)

    def __init__(self, f: Callable[..., Any], static_argnums: Sequence[int], static_argnames: Sequence[str]) -> None:
        self.f = f
        self.static_argnums = tuple(static_argnums)
        self.static_argnames = tuple(static_argnames)
        self.cache: dict[Hashable, list[Compiled]] = {}
        self.eager: set[Hashable] = set()  # signatures with MAX_VARIANTS variants: run as written
        self._fast: list[Compiled] = []  # (see FAST_ENTRIES)
        self._warned = False
        functools.update_wrapper(self, f)  # type: ignore[arg-type]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """A jitted method: bound to ``obj``, its first argument (which
        ``static_argnums=0`` makes static, or a pytree of arrays)."""
        return self if obj is None else functools.partial(self, obj)

    # --- the signature ------------------------------------------------------------------
    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any, Hashable]:
        """``(leaves, how to rebuild the call, cache key)``."""
        n = len(args)
        static_pos = {i % n if n else i for i in self.static_argnums if -n <= i < n}
        dyn_args = [a for i, a in enumerate(args) if i not in static_pos]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        static = tuple((i, args[i]) for i in sorted(static_pos)) + tuple(
            sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        try:
            hash(static)
        except TypeError as e:
            raise TypeError(f"jit({fun_name(self.f)}): static arguments must be hashable ({e})") from None
        leaves, tdef = tree_flatten((dyn_args, dyn_kw))
        sig = tuple(_leaf_signature(x) for x in leaves)
        if None in sig:
            self._not_an_array(args, kwargs, static_pos)
        types = tuple(type(v) for _, v in static)  # (1, 1.0 and True are equal, and not alike)
        return leaves, (static_pos, n, tdef, static), (tdef, sig, static, types)

    def _not_an_array(self, args: tuple[Any, ...], kwargs: dict[str, Any], static_pos: set[int]) -> None:
        """Raise the TypeError for an argument leaf that is neither an array nor a number."""
        named = [(f"argument {i}", f"static_argnums=({i},)", a)
                 for i, a in enumerate(args) if i not in static_pos]
        named += [(f"argument {k!r}", f"static_argnames=({k!r},)", v)
                  for k, v in kwargs.items() if k not in self.static_argnames]
        for what, hint, a in named:
            for leaf in tree_flatten(a)[0]:
                if _leaf_signature(leaf) is None:
                    raise TypeError(
                        f"jit({fun_name(self.f)}): {what} holds a {type(leaf).__name__}, which is "
                        f"neither an array nor a number; pass it as a static argument ({hint})")

    def _rebuild(self, how: Any, leaves: Sequence[Any], args: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        static_pos, n, tdef, static = how
        dyn_args, dyn_kw = tree_unflatten(tdef, list(leaves))
        it = iter(dyn_args)
        full = tuple(args[i] if i in static_pos else next(it) for i in range(n))
        kw = dict(dyn_kw)
        kw.update({k: v for k, v in static if isinstance(k, str)})
        return full, kw

    # --- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fast and not kwargs and not entered():  # recent variants, no lookup
            n = len(args)
            for i, fast in enumerate(self._fast):
                if n != fast.n_args:
                    continue
                try:
                    out = fast.entry(*args)
                except Miss:  # (another signature: found before running anything)
                    continue
                except GuardFailed:  # (another path: the lookup tries its variants)
                    break
                if i:
                    self._remember(fast, kwargs)
                return out
        if entered():  # inside a transform (or another jit's trace): run as written
            return self.f(*args, **kwargs)
        leaves, how, key = self._split(args, kwargs)
        if key in self.eager or EAGER in key[1] or any(type(x) is Traced for x in leaves):  # (facade tensors)
            return self.f(*args, **kwargs)
        variants = self.cache.setdefault(key, [])
        for variant in variants:
            try:
                out = variant(leaves)
            except GuardFailed:
                continue
            self._remember(variant, kwargs)
            return out
        if len(variants) >= MAX_VARIANTS:
            # From now on this signature runs as written, at once: trying its variants first
            # would run each one up to its failing guard, every call.
            self.eager.add(key)
            self._fast = [f for f in self._fast if not any(f is v for v in variants)]
            if not self._warned:
                self._warned = True
                warnings.warn(f"jit({fun_name(self.f)}): {MAX_VARIANTS} compiled variants of one input "
                              "signature (value-dependent control flow); running eagerly from now on",
                              stacklevel=2)
            return self.f(*args, **kwargs)
        out, compiled = self._trace(leaves, how, args)
        variants.append(compiled)
        if not kwargs and not how[0]:  # (plain positional arrays and numbers: an entry)
            compiled.entry = make_entry(TreeDef(tuple, None, how[2].children[0].children), list(key[1]),
                                        compiled.fn, compiled.out_def)
            compiled.n_args = len(args)
        self._remember(compiled, kwargs)
        return out

    def _remember(self, variant: Compiled, kwargs: dict[str, Any]) -> None:
        if variant.entry is not None and not kwargs:
            self._fast = [variant, *(f for f in self._fast if f is not variant)][:FAST_ENTRIES]

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The compiled program these arguments run (traced now if none yet):
        of their signature, and of the path their values take."""
        leaves, how, key = self._split(args, kwargs)
        variants = self.cache.setdefault(key, [])
        for variant in variants:  # the one these arguments' values take (its guards hold)
            try:
                variant(leaves)
            except GuardFailed:
                continue
            return Lowered(variant)
        compiled = self._trace(leaves, how, args)[1]
        variants.append(compiled)
        return Lowered(compiled)

    def _trace(self, leaves: list[Any], how: Any, args: tuple[Any, ...]) -> tuple[Any, Compiled]:
        """Run ``f`` once on traced inputs: its result, and the compiled program."""
        with JitTrace() as trace:
            inputs = [trace.input(x) for x in leaves]
            full, kw = self._rebuild(how, inputs, args)
            out = self.f(*full, **kw)
        out_leaves, out_def = tree_flatten(out)
        refs = [trace.arg(_own(o, trace))[1] for o in out_leaves]  # (constants: the copies)
        for r in refs:
            if type(r) is Traced:
                raise TypeError(f"jit({fun_name(self.f)}): an output is traced on a transform "
                                "outside the jitted function")
        program, rename = passes.simplify(trace.program, trace.values)
        refs = [Var(rename.get(r.n, r.n)) if type(r) is Var else r for r in refs]
        out_vars = [r.n for r in refs if type(r) is Var]
        program = passes.dead_code(program, out_vars)
        program, rename = rewrites.rewrite(program, trace.values, out_vars)
        refs = [Var(rename.get(r.n, r.n)) if type(r) is Var else r for r in refs]
        out_vars = [r.n for r in refs if type(r) is Var]
        program = passes.dead_code(program, out_vars)
        donated = donated_inputs(self.donate_argnums, args, how[0], trace.inputs)
        program = horizontal.horizontal(program, trace.values, trace.inputs, out_vars,  # (one flat pass per dtype)
                                        vars(self).setdefault("_flat_outputs", {}), donated, self.backend)
        program = backends.lower(self.backend, program, trace.values, out_vars)
        plan = passes.plan_buffers(program, trace.inputs, out_vars, trace.values, donated)
        # (named as JAX names its lowerings: ``def sin`` calling NumPy's ``sin`` would call itself)
        source, namespace = generate(program, trace.inputs, refs, name=f"jit_{fun_name(self.f)}", plan=plan,
                                     donated=donated)
        compiled = Compiled(source, namespace, source.split("(", 1)[0][4:], out_def, program)
        result = [trace.values[r.n] if type(r) is Var else (np.array(r) if isinstance(r, np.ndarray) else r)
                  for r in refs]
        return tree_unflatten(out_def, result), compiled


def _own(x: Any, trace: JitTrace) -> Any:
    """An output with the tapes ``f`` opened and closed unboxed (``y`` of a
    ``with tg.Tape()`` block, returned after it): its value on ``trace``."""
    return unbox_idle(x)  # (trace is abstract: its values stay)


def donated_inputs(donate_argnums: Sequence[int], args: tuple[Any, ...], static_pos: set[int],
                   inputs: Sequence[int]) -> list[int]:
    """The input Vars holding the leaves of the donated positional arguments."""
    if not donate_argnums:
        return []
    n = len(args)
    donate = {i % n for i in donate_argnums if -n <= i < n}
    out: list[int] = []
    k = 0
    for i, a in enumerate(args):
        if i in static_pos:
            continue
        count = len(tree_flatten(a)[0])
        if i in donate:
            out += inputs[k:k + count]
        k += count
    return out


EAGER = ("eager",)  # the signature of a leaf jit does not compile for


def _leaf_signature(x: Any) -> Hashable:
    """What the cache key holds of an argument leaf (None: not an array nor a number)."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # (NumPy scalars and 0-d arrays alike)
        kind = np.ndarray if isinstance(x, (np.ndarray, np.generic)) else type(x)
        try:
            dtype = np.dtype(x.dtype).str
        except TypeError:  # an array type of its own (a tapegrad.torch tensor): f runs as written
            return EAGER
        return (kind, tuple(x.shape), dtype)
    if isinstance(x, (bool, int, float, complex)):
        return (type(x), (), None)
    return None


def jit(f: Callable[..., Any], static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), *, backend: str = "numpy") -> Jitted:
    """Compile ``f``: trace it once per input signature, then run the trace
    as a straight-line NumPy program (SPEC section 8).

    The signature is the pytree structure, shapes and dtypes of the
    arguments and the values of the static ones (``static_argnums``,
    ``static_argnames``: hashable, passed to ``f`` as they are). Every
    primitive ``f`` runs is compiled, including the backward passes of the
    transforms it calls (``jit(value_and_grad(loss))``). Python control flow
    on values becomes guards: a call that takes another path traces it too.
    Side effects (``print``, random draws) happen when tracing only, and
    arrays ``f`` closes over are read then (the program keeps a copy), as in
    JAX. Arguments are arrays, NumPy scalars or Python numbers (which stay
    weakly typed, as in eager code: ``x32 * lr`` is float32); anything else
    (a string, a function) must be static.

    ``backend``: ``"numpy"`` (the default), or ``"numba"`` (opt-in, ``pip
    install "tapegrad[numba]"``): each chain of elementwise operations of
    the program also runs as one compiled loop (docs/jit.md, "Backends").

    Arguments donated (``donate_argnums``, JAX's meaning) may be written in
    place: after the call their arrays hold whatever the program left there
    (those it overwrote and did not return become read-only, so that using
    one again raises an error); donating an array that shares memory with
    another argument raises ``ValueError``.

    Raises:
        ValueError: an unknown ``backend``.
        ImportError: ``backend="numba"`` without numba installed.

    Returns:
        The compiled function (call it like ``f``); ``.lower(*args).as_text()``
        shows the generated source.

    Examples:
        >>> step = tg.jit(tg.value_and_grad(loss))
        >>> value, grads = step(params, X, Y)    # traces and compiles; later calls run compiled
    """
    if not callable(f):
        raise TypeError(f"tg.jit: expected a function, got {type(f).__name__}")
    check_argnums(static_argnums, "jit", "static_argnums")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    jitted = Jitted(f, nums, names)
    jitted.backend = check_backend(backend)
    return jitted
