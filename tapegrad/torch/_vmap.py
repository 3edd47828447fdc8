"""``torch.func.vmap``: PyTorch's vmap over ``tapegrad.vmap``.

PyTorch's pytrees differ from tapegrad's: tuples, lists, dicts (OrderedDict
too) and namedtuples are nodes, and everything else, None included, is a
leaf (tapegrad's pytree takes None for an empty subtree and an OrderedDict for
a leaf). So the facade flattens the arguments itself, checks ``in_dims`` as
PyTorch does (with PyTorch's errors), and hands ``tapegrad.vmap`` only the
mapped tensors' values; the function sees tensors holding batched values
(their ``shape`` is the per-example shape), and the facade's ops meet those
through their general paths. ``out_dims`` are applied to the outputs here,
``chunk_size`` splits the call, and ``randomness`` is a view of the facade's
generator that each thread sees through the vmap levels it is inside.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

import tapegrad as tg
from tapegrad.core.traced import Traced
from tapegrad.torch import _creation
from tapegrad.torch._dtype import Size
from tapegrad.torch._graph import GT
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _result

__all__ = ["vmap"]


def _tensor_of(v: Any) -> Tensor:
    """A tensor of value ``v``; one recorded on the facade tape by tapegrad's
    primitives (not by a facade op) gets the ``grad_fn`` its tape entry names."""
    if type(v) is Traced and v._level is GT:
        if isinstance(v._value, np.generic):
            v._value = np.asarray(v._value)
        return _new(v)
    return _result(v, "", ())


def _is_node(x: Any) -> bool:
    return isinstance(x, (tuple, list, dict)) and type(x) is not Size  # (a torch.Size is a leaf)


def _children(x: Any) -> list[Any]:
    return list(x.values()) if isinstance(x, dict) else list(x)


def _flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """PyTorch's ``tree_flatten``: the leaves, and a function that puts new
    leaves back in the same structure."""
    leaves: list[Any] = []
    _walk(tree, leaves)

    def build(new: list[Any]) -> Any:
        it = iter(new)
        return _rebuild(tree, it)

    return leaves, build


def _walk(x: Any, leaves: list[Any]) -> None:
    if _is_node(x):
        for c in _children(x):
            _walk(c, leaves)
    else:
        leaves.append(x)


def _rebuild(x: Any, it: Any) -> Any:
    if not _is_node(x):
        return next(it)
    if isinstance(x, dict):
        d = copy.copy(x)  # keeps OrderedDict / defaultdict
        for k in x:
            d[k] = _rebuild(x[k], it)
        return d
    kids = [_rebuild(c, it) for c in x]
    t = type(x)
    if t is tuple or isinstance(x, list):
        return t(kids)
    # a namedtuple, or a (values, indices) result of max(dim), sort, topk...
    out = t(*kids)
    if hasattr(x, "__dict__"):
        out.__dict__.update(x.__dict__)
    return out


def _structure(x: Any) -> str:
    """A short text of ``x``'s tree structure (``*`` for a leaf), for errors."""
    if not _is_node(x):
        return "*"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_structure(v)}" for k, v in x.items()) + "}"
    inner = ", ".join(_structure(c) for c in x)
    if isinstance(x, list):
        return f"[{inner}]"
    return f"({inner}{',' if len(x) == 1 else ''})"


def _broadcast(prefix: Any, tree: Any) -> list[Any] | None:
    """``prefix`` (a leaf, or a tree prefix of ``tree``) as one entry per leaf
    of ``tree``; None when it does not match (PyTorch's ``_broadcast_to_and_flatten``)."""
    out: list[Any] = []
    return out if _bcast(prefix, tree, out) else None


def _bcast(prefix: Any, tree: Any, out: list[Any]) -> bool:
    if not _is_node(prefix):
        n: list[Any] = []
        _walk(tree, n)
        out.extend([prefix] * len(n))
        return True
    if not _is_node(tree) or type(prefix) is not type(tree) or len(prefix) != len(tree):
        return False
    if isinstance(prefix, dict):
        if set(prefix) != set(tree):
            return False
        return all(_bcast(prefix[k], tree[k], out) for k in tree)
    return all(_bcast(p, t, out) for p, t in zip(prefix, tree))


def _fname(func: Any) -> str:
    return getattr(func, "__name__", None) or repr(func)


RANDOMNESS_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
    "'different' randomness flags on vmap or perform the randomness operation out of vmap"
)


class _RandomnessError:
    """What random ops draw from inside ``vmap(randomness='error')``: any draw
    raises PyTorch's error."""

    def __init__(self, rng: Any) -> None:
        self._rng = rng

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(RANDOMNESS_ERROR)


class _RandomnessDifferent:
    """What random ops draw from inside ``vmap(randomness='different')``: each
    draw gets the batch as a leading axis and comes back batched, one draw
    per example (from ``rng``, the enclosing level's generator)."""

    def __init__(self, rng: Any, trace: Any) -> None:
        self._rng = rng
        self._trace = trace

    def _batched(self, size: Any) -> tuple[int, ...]:
        n = self._trace.size
        if size is None:
            return (n,)
        return (n, *((size,) if isinstance(size, int) else tuple(size)))

    def random(self, size: Any = None, *args: Any, **kwargs: Any) -> Any:
        return self._draw("random", size, *args, **kwargs)

    def standard_normal(self, size: Any = None, *args: Any, **kwargs: Any) -> Any:
        return self._draw("standard_normal", size, *args, **kwargs)

    def integers(self, low: Any, high: Any = None, size: Any = None, *args: Any, **kwargs: Any) -> Any:
        return self._draw("integers", size, low, high, *args, **kwargs)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return self._draw("normal", size, loc, scale)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None) -> Any:
        return self._draw("uniform", size, low, high)

    def permutation(self, x: Any) -> Any:
        return self._trace.wrap(np.stack([self._rng.permutation(x) for _ in range(self._trace.size)]))

    def _draw(self, method: str, size: Any, *args: Any, **kwargs: Any) -> Any:
        return self._trace.wrap(getattr(self._rng, method)(*args, size=self._batched(size), **kwargs))

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"tapegrad.torch.func.vmap(randomness='different'): "
                                  f"the generator's {name} cannot draw per example")


class _Dispatch:
    """The facade's generator while some thread is inside ``vmap``: each
    thread draws through the randomness of the vmap levels it is inside
    (innermost last), a thread inside none from the generator itself."""

    def __init__(self, rng: Any) -> None:
        self.rng = rng

    def __getattr__(self, name: str) -> Any:
        gen = self.rng
        for mode, trace in getattr(_levels, "stack", ()):
            if mode == "error":
                gen = _RandomnessError(gen)
            elif mode == "different":
                gen = _RandomnessDifferent(gen, trace)
        return getattr(gen, name)


_levels = threading.local()  # .stack: the (randomness, trace) of the vmap calls this thread is inside
_lock = threading.Lock()
_inside = [0]  # calls inside vmap, all threads


@contextlib.contextmanager
def _randomness(mode: str, trace: Any) -> Any:
    """Random ops inside: raise (``'error'``), draw once for the whole batch
    (``'same'``) or once per example (``'different'``)."""
    state = _creation._state
    with _lock:
        if type(state["rng"]) is not _Dispatch:
            state["rng"] = _Dispatch(state["rng"])
        _inside[0] += 1
    stack = _levels.__dict__.setdefault("stack", [])
    stack.append((mode, trace))
    try:
        yield
    finally:
        stack.pop()
        with _lock:
            _inside[0] -= 1
            rng = state["rng"]
            if not _inside[0] and type(rng) is _Dispatch:  # (manual_seed inside replaced it: keep that)
                state["rng"] = rng.rng


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """``func`` mapped over a dimension of its inputs, as PyTorch's ``torch.func.vmap``.

    ``in_dims`` says which dimension of each positional argument is mapped: an
    int (negative counts from the end), None (not mapped) or a tuple with one
    entry per positional argument, nested like the arguments (dicts, lists,
    tuples). Keyword arguments are not mapped. ``out_dims`` says where the
    mapped dimension goes in each output (an int, None for an output that
    does not depend on the mapped inputs, or a tuple like the outputs).
    ``func`` runs once, on whole batches (``tapegrad.vmap``); it composes with
    ``grad``, ``jacrev``, ``jacfwd``, ``hessian`` in either
    order, and with ``backward()``.

    ``randomness``: a random op inside raises (``'error'``), draws the same
    values for every example (``'same'``) or different ones (``'different'``).
    ``chunk_size``: map that many examples at a time and concatenate.

    Examples:
        >>> torch.func.vmap(torch.dot)(torch.ones(3, 2), torch.ones(3, 2))
        tensor([2., 2., 2.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_out_dims(out_dims, func)

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        leaves, build = _flatten(args)
        dims = _check_in_dims(func, in_dims, args, leaves)
        size = _batch_size(leaves, dims)
        mapped = [i for i, d in enumerate(dims) if d is not None]
        if chunk_size is None or chunk_size >= size:
            return _vmap_call(func, out_dims, randomness, leaves, build, dims, mapped, kwargs)
        parts = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            chunk = list(leaves)
            for i in mapped:
                chunk[i] = leaves[i].narrow(dims[i], start, n)
            parts.append(_vmap_call(func, out_dims, randomness, chunk, build, dims, mapped, kwargs,
                                    flat=True))
        outs, out_build, odims = parts[0]
        joined = [o if od is None else _creation.cat([p[0][k] for p in parts], od)
                  for k, (o, od) in enumerate(zip(outs, odims))]
        return out_build(joined)

    return wrapped


def _check_out_dims(out_dims: Any, func: Any) -> None:
    leaves: list[Any] = []
    _walk(out_dims, leaves)
    if not all(d is None or isinstance(d, int) for d in leaves):
        name = _fname(func)
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                         "python collection of ints representing where in the outputs the vmapped "
                         "dimension should appear.")


def _check_in_dims(func: Any, in_dims: Any, args: tuple[Any, ...], leaves: list[Any]) -> list[Any]:
    """One dim (int, normalized, or None) per leaf of ``args``, checked as PyTorch does."""
    name = _fname(func)
    who = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{who}: expected `in_dims` to be int or a (potentially nested) tuple matching "
                         f"the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                         "are trying to vmap over a function with no inputs. The latter is unsupported.")
    dims = _broadcast(in_dims, args)
    if dims is None:
        raise ValueError(f"{who}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                         f"structure {_structure(in_dims)} but inputs has structure {_structure(args)}.")
    for i, (a, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{who}: Got in_dim={d} for an input but in_dim must be either an integer "
                             "dimension or None.")
        if not isinstance(a, Tensor):
            raise ValueError(f"{who}: Got in_dim={d} for an input but the input is of type {type(a)}. We "
                             "cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
        nd = a.dim()
        if not -nd <= d < nd:
            raise ValueError(f"{who}: Got in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {nd} so expected in_dim to satisfy -{nd} <= in_dim < {nd}.")
        dims[i] = d % nd
    return dims


def _batch_size(leaves: list[Any], dims: list[Any]) -> int:
    sizes = [a.shape[d] for a, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got "
                         f"sizes {sizes} for the mapped dimension")
    return int(sizes[0])


def _vmap_call(func: Any, out_dims: Any, randomness: str, leaves: list[Any], build: Any,
               dims: list[Any], mapped: list[int], kwargs: dict[str, Any], flat: bool = False) -> Any:
    """One ``tapegrad.vmap`` call of ``func`` over the mapped leaves. Returns
    the outputs, or with ``flat`` (the outputs' leaves, their builder, their out_dims)."""
    name = _fname(func)
    got: dict[str, Any] = {}

    def flat_f(*xs: Any) -> tuple[Any, ...]:
        trace = xs[0]._level  # the batch level tapegrad.vmap pushed
        full = list(leaves)
        for i, x in zip(mapped, xs):
            full[i] = _tensor_of(x)
        with _randomness(randomness, trace):
            out = func(*build(full), **kwargs)
        outs, out_build = _flatten(out)
        odims = _broadcast(out_dims, out)
        if odims is None:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                             f"with the structure of `outputs`. out_dims has structure {_structure(out_dims)} "
                             f"but outputs has structure {_structure(out)}.")
        kept = []
        for o, od in zip(outs, odims):
            if od is None:
                if isinstance(o, Tensor) and type(o._value) is Traced and o._value._level is trace:
                    raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                                     "out_dim is None")
            elif not isinstance(o, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. "
                                 "Did you mean to set out_dims= to None for output?")
            else:
                kept.append(o._value)
        got.update(outs=outs, build=out_build, odims=odims)
        return tuple(kept)

    in_axes = tuple(dims[i] for i in mapped)
    res = iter(tg.vmap(flat_f, in_axes=in_axes, out_axes=0)(*[leaves[i]._value for i in mapped]))
    outs = []
    for o, od in zip(got["outs"], got["odims"]):
        if od is None:
            outs.append(o)
            continue
        t = _tensor_of(next(res))
        nd = t.dim()
        if not -nd <= od < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {od})")
        if od % nd:
            t = t.movedim(0, od)
        outs.append(t)
    if flat:
        return outs, got["build"], got["odims"]
    return got["build"](outs)
