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
import inspect
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
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
# Input signatures kept per function (each with up to MAX_VARIANTS programs); the least recently
# used is dropped past it. A program holds its code and constants (tens of kB for a small step),
# so a loop over ever new shapes keeps at most this many.
MAX_SIGNATURES = 256


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


class _Programs:
    """The compiled programs of one function (with one set of static options),
    shared by every ``jit`` of it: up to ``MAX_SIGNATURES`` signatures, least
    recently used first, each with its variants."""

    def __init__(self, static_argnums: tuple[int, ...], static_argnames: tuple[str, ...],
                 donate_argnums: tuple[int, ...], backend: str) -> None:
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.donate_argnums = donate_argnums
        self.backend = backend  # (see jit's ``backend``)
        self.flat_outputs: dict[Any, Any] = {}  # (horizontal fusion: the flat results its programs returned last)
        self.cache: OrderedDict[Hashable, list[Compiled]] = OrderedDict()
        self.eager: set[Hashable] = set()  # signatures with MAX_VARIANTS variants: run as written
        self.fast: list[Compiled] = []  # (see FAST_ENTRIES)
        self.warned_variants = False
        self.warned_evict = False

    def variants(self, key: Hashable, name: str) -> list[Compiled]:
        """The variants of signature ``key`` (made the most recently used;
        a new signature may drop the least recently used one)."""
        try:
            variants = self.cache.get(key)
        except TypeError as e:  # (the static values are hashable: the structure is not)
            raise TypeError(f"jit({name}): the auxiliary data of a registered pytree node in the arguments "
                            f"must be hashable ({e}): {key[0]}") from None  # type: ignore[index]
        if variants is not None:
            self.cache.move_to_end(key)
            return variants
        if len(self.cache) >= MAX_SIGNATURES:
            self._evict(name)
        variants = self.cache[key] = []
        return variants

    def _evict(self, name: str) -> None:
        # the least recently looked up signature, skipping those the fast entries run
        # (a hot signature there is looked up only when another one ran in between)
        fast = {id(c) for c in self.fast}
        victim = next((k for k, vs in self.cache.items() if not any(id(v) in fast for v in vs)),
                      next(iter(self.cache)))
        dropped = self.cache.pop(victim)
        self.eager.discard(victim)
        self.fast = [c for c in self.fast if not any(c is v for v in dropped)]
        if not self.warned_evict:
            self.warned_evict = True
            warnings.warn(f"jit({name}): more than {MAX_SIGNATURES} input signatures (shapes, dtypes, "
                          "static values); the least recently used compiled programs are dropped from now "
                          "on, and a signature seen again is traced again", stacklevel=4)


# f -> {options: _Programs}: one cache per function, held weakly (the function
# collected, its programs go); bound methods under their object and function
# (``obj.method`` is a new object each time it is read)
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, _Programs]] = weakref.WeakKeyDictionary()
_METHODS: dict[int, tuple[weakref.ref[Any], weakref.WeakKeyDictionary[Any, dict[Hashable, _Programs]]]] = {}


def _table(f: Callable[..., Any]) -> dict[Hashable, _Programs] | None:
    """The shared programs of ``f`` by options (None: ``f`` cannot be held weakly)."""
    try:
        if inspect.ismethod(f):
            obj, func = f.__self__, f.__func__
            entry = _METHODS.get(id(obj))
            if entry is None or entry[0]() is not obj:
                k = id(obj)

                def forget(_: Any, k: int = k) -> None:
                    _METHODS.pop(k, None)

                entry = _METHODS[k] = (weakref.ref(obj, forget), weakref.WeakKeyDictionary())
            return entry[1].setdefault(func, {})
        return _SHARED.setdefault(f, {})
    except TypeError:  # (not weakly referable, or unhashable)
        return None


class Jitted:
    """A function compiled per input signature (see ``jit``).

    Attributes:
        static_argnums: the positions of the static arguments (those named in
            ``static_argnames`` included, where the signature tells them).
        static_argnames: the names of the static arguments (those at
            ``static_argnums`` included).
        donate_argnums: the positions of the donated arguments, as given.
    """

    def __init__(self, f: Callable[..., Any], programs: _Programs) -> None:
        self.f = f
        self._programs = programs
        self.static_argnums = programs.static_argnums
        self.static_argnames = programs.static_argnames
        self.donate_argnums = programs.donate_argnums
        self.backend = programs.backend
        functools.update_wrapper(self, f)  # type: ignore[arg-type]

    @property
    def cache(self) -> OrderedDict[Hashable, list[Compiled]]:
        """The compiled variants by input signature (shared by every ``jit`` of this function)."""
        return self._programs.cache

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
        programs = self._programs
        if programs.fast and not kwargs and not entered():  # recent variants, no lookup
            n = len(args)
            for i, fast in enumerate(programs.fast):
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
        if EAGER in key[1] or any(type(x) is Traced for x in leaves):  # (facade tensors)
            return self.f(*args, **kwargs)
        variants = programs.variants(key, fun_name(self.f))
        if key in programs.eager:
            return self.f(*args, **kwargs)
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
            programs.eager.add(key)
            programs.fast = [f for f in programs.fast if not any(f is v for v in variants)]
            if not programs.warned_variants:
                programs.warned_variants = True
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
            programs = self._programs
            programs.fast = [variant, *(f for f in programs.fast if f is not variant)][:FAST_ENTRIES]

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The compiled program these arguments run (traced now if none yet):
        of their signature, and of the path their values take."""
        leaves, how, key = self._split(args, kwargs)
        variants = self._programs.variants(key, fun_name(self.f))
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
        donated = donated_inputs(self._programs.donate_argnums, args, how[0], trace.inputs)
        program = horizontal.horizontal(program, trace.values, trace.inputs, out_vars,  # (one flat pass per dtype)
                                        self._programs.flat_outputs, donated, self._programs.backend)
        program = backends.lower(self._programs.backend, program, trace.values, out_vars)
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
        if isinstance(x, np.matrix):  # (its * is a matrix product: f runs as written, on NumPy)
            return EAGER
        kind = np.ndarray if isinstance(x, (np.ndarray, np.generic)) else type(x)
        try:
            dtype = np.dtype(x.dtype).str
        except TypeError:  # an array type of its own (a tapegrad.torch tensor): f runs as written
            return EAGER
        return (kind, tuple(x.shape), dtype)
    if isinstance(x, (bool, int, float, complex)):
        return (type(x), (), None)
    return None


def jit(f: Callable[..., Any] | None = None, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None, donate_argnums: int | Sequence[int] | None = None,
        *, backend: str = "numpy") -> Any:
    """Compile ``f``: trace it once per input signature, then run the trace
    as a straight-line NumPy program (SPEC section 8).

    The signature is the pytree structure, shapes and dtypes of the
    arguments and the values of the static ones (``static_argnums``,
    ``static_argnames``: hashable, passed to ``f`` as they are). As in JAX,
    static arguments are mapped through ``f``'s signature: given only
    ``static_argnums``, the parameters at those positions are static when
    passed by keyword too; given only ``static_argnames``, the named
    parameters are static when passed by position too. A position or name
    that matches no parameter raises ``ValueError``. ``donate_argnums``
    (positions of arguments whose buffers the program may reuse) is
    checked the same way and kept as ``.donate_argnums``.

    Every primitive ``f`` runs is compiled, including the backward passes of
    the transforms it calls (``jit(value_and_grad(loss))``). Python control
    flow on values becomes guards: a call that takes another path traces it
    too. Side effects (``print``, random draws) happen when tracing only, and
    arrays ``f`` closes over are read then (the program keeps a copy), as in
    JAX. Arguments are arrays, NumPy scalars or Python numbers (which stay
    weakly typed, as in eager code: ``x32 * lr`` is float32), or pytrees of
    them (registered classes included); anything else (a string, a
    function) must be static.

    The compiled programs belong to ``f``: every ``tg.jit(f)`` with the same
    options shares them (``tg.jit(f)(x)`` in a loop traces once), they are
    freed when ``f`` is, and at most ``MAX_SIGNATURES`` (256) signatures are
    kept per function, the least recently used dropped (with one warning).

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
        shows the generated source. Without ``f``, a decorator that compiles
        the function it decorates with these options.

    Examples:
        >>> step = tg.jit(tg.value_and_grad(loss))
        >>> value, grads = step(params, X, Y)    # traces and compiles; later calls run compiled
        >>> @tg.jit(static_argnames="n")
        ... def power(x, n):
        ...     return x ** n
        >>> power(np.ones(3), 2)                 # n is static, by position too
        array([1., 1., 1.])
    """
    if f is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, backend=backend)
    if not callable(f):
        raise TypeError(f"tg.jit: expected a function, got {type(f).__name__}")
    raw = (_as_tuple(static_argnums, "static_argnums"), _as_names(static_argnames),
           _as_tuple(donate_argnums, "donate_argnums"), check_backend(backend))
    table = _table(f)
    programs = None if table is None else table.get(raw)
    if programs is None:
        programs = _Programs(*_resolve(f, *raw[:3]), raw[3])
        if table is not None:
            table[raw] = programs
    return Jitted(f, programs)


def _as_tuple(argnums: Any, name: str) -> tuple[int, ...] | None:
    if argnums is None:
        return None
    check_argnums(argnums, "jit", name)
    return tuple(int(i) for i in argnums) if isinstance(argnums, (tuple, list)) else (int(argnums),)


def _as_names(argnames: Any) -> tuple[str, ...] | None:
    if argnames is None:
        return None
    names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"jit: static_argnames must be a str or an iterable of str, got {argnames!r} "
                            f"(it holds {n!r}, a {type(n).__name__})")
    return names


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _resolve(f: Callable[..., Any], nums: tuple[int, ...] | None, names: tuple[str, ...] | None,
             donate: tuple[int, ...] | None) -> tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...]]:
    """``(static_argnums, static_argnames, donate_argnums)``: each of the
    static pair completed from the other through ``f``'s signature, all
    checked against it, as ``jax.jit`` does (JAX's
    ``api_util.infer_argnums_and_argnames``, ``_validate_argnums`` and
    ``_validate_argnames``: given both, neither is inferred; an index out of
    range of a function without ``*args`` and a name of no parameter of a
    function without ``**kwargs`` raise ``ValueError``; a positional-only
    name raises ``ValueError``; ``static_argnums`` and ``donate_argnums``
    must not intersect). A function whose signature Python cannot tell
    (some builtins) is not checked."""
    try:
        sig: inspect.Signature | None = inspect.signature(f)
    except (TypeError, ValueError):
        sig = None
    donate_nums = donate or ()
    if sig is None:
        static_nums, static_names = nums or (), names or ()
    else:
        params = list(sig.parameters.values())
        if nums is not None and names is None:
            static_nums, static_names = nums, tuple(
                p.name for i, p in enumerate(params) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and i in nums)
        elif names is not None and nums is None:
            static_nums, static_names = tuple(
                i for i, p in enumerate(params) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                and p.name in names), names
        else:
            static_nums, static_names = nums or (), names or ()
        _check_argnums(params, static_nums, "static_argnums", f)
        _check_argnames(params, static_names, "static_argnames", f)
        _check_argnums(params, donate_nums, "donate_argnums", f)
    if donate_nums:
        n = len(sig.parameters) if sig is not None else 0
        common = {i % n if n and i < 0 else i for i in static_nums} & {i % n if n and i < 0 else i for i in donate_nums}
        if common:
            raise ValueError(f"jit({fun_name(f)}): `static_argnums` {sorted(set(static_nums))} and "
                             f"`donate_argnums` {sorted(set(donate_nums))} cannot intersect.")
    return static_nums, static_names, donate_nums


def _check_argnums(params: list[inspect.Parameter], argnums: tuple[int, ...], what: str,
                   f: Callable[..., Any]) -> None:
    if not argnums or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return  # (``*args`` takes any position)
    n = sum(p.kind in _POSITIONAL for p in params)
    if -min(argnums) > n or max(argnums) >= n:
        raise ValueError(f"Jitted function has {what}={argnums}, but only accepts {n} positional "
                         f"arguments. (jit({fun_name(f)}))")


def _check_argnames(params: list[inspect.Parameter], argnames: tuple[str, ...], what: str,
                    f: Callable[..., Any]) -> None:
    positional_only = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                            inspect.Parameter.VAR_POSITIONAL)}
    if bad := positional_only & set(argnames):
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are positional-only "
                         f"(jit({fun_name(f)}))")
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return  # (``**kwargs`` takes any name)
    if bad := set(argnames) - {p.name for p in params if p.kind in _BY_NAME}:
        raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does not take "
                         f"these args. (jit({fun_name(f)}))")
