"""The entry of a compiled variant: the call's signature checked and its
pytrees taken apart and built again by generated code.

``jit`` keys its cache by the arguments' pytree structure, shapes and dtypes;
finding the key takes a flatten of the arguments and a tuple per leaf, and the
result a rebuild: tens of microseconds per call, which a small training step
notices. A variant's *entry* does the same work as straight-line code
specialised to its one signature (``type(a0) is dict and len(a0) == 6``,
``v3.shape == (64, 32)``...), raising ``Miss`` on any difference, so
that the most recently used variant runs with no lookup at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.pytree import TreeDef, registered_node


class Miss(Exception):
    """The arguments do not have the signature the entry was made for."""


def _miss() -> None:
    raise Miss


def make_entry(args_def: TreeDef, sigs: list[Any], program: Any, out_def: TreeDef) -> Any:
    """An entry taking the positional arguments whose structure is
    ``args_def`` (a tuple of them) and leaf signatures ``sigs``, calling
    ``program`` on the leaves and building the result in ``out_def``'s
    structure; None when a signature is one it does not check (such as a
    CuPy array: the general path takes those)."""
    ns: dict[str, Any] = {"_miss": _miss, "_program": program, "ndarray": np.ndarray, "generic": np.generic}
    lines: list[str] = []
    leaves: list[str] = []
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"t{counter[0]}"

    def take_apart(d: TreeDef, expr: str) -> bool:
        if d.kind is None:
            name = f"x{len(leaves)}"
            leaves.append(name)
            lines.append(f"    {name} = {expr}")
            return True
        if d.kind is type(None):
            lines.append(f"    if {expr} is not None: _miss()")
            return True
        if d.registered:  # (a registered class: its flatten, its aux data compared)
            t = fresh()
            flatten = registered_node(d.kind)[0]
            ns[f"k_{t}"], ns[f"f_{t}"], ns[f"a_{t}"] = d.kind, flatten, d.meta
            lines.append(f"    {t} = {expr}")
            lines.append(f"    if type({t}) is not k_{t}: _miss()")
            lines.append(f"    {t}, {t}_aux = f_{t}({t})")
            lines.append(f"    {t} = tuple({t})")
            lines.append(f"    if len({t}) != {len(d.children)} or {t}_aux != a_{t}: _miss()")
            return all(take_apart(c, f"{t}[{i}]") for i, c in enumerate(d.children))
        if d.kind is dict:
            keys = d.meta
            if not all(type(k) is str for k in keys):
                return False
            t = fresh()
            lines.append(f"    {t} = {expr}")
            lines.append(f"    if type({t}) is not dict or len({t}) != {len(keys)}: _miss()")
            return all(take_apart(c, f"{t}[{k!r}]") for k, c in zip(keys, d.children))
        t = fresh()
        lines.append(f"    {t} = {expr}")
        if d.meta is not None:  # a namedtuple
            cls = f"k{counter[0]}"
            ns[cls] = d.meta
            lines.append(f"    if type({t}) is not {cls}: _miss()")
        else:
            lines.append(f"    if type({t}) is not {d.kind.__name__} or len({t}) != {len(d.children)}: _miss()")
        return all(take_apart(c, f"{t}[{i}]") for i, c in enumerate(d.children))

    if args_def.kind is not tuple or args_def.meta is not None:
        return None
    n_args = len(args_def.children)
    for i, c in enumerate(args_def.children):
        if not take_apart(c, f"a{i}"):
            return None
    for name, sig in zip(leaves, sigs):
        kind, shape, dtype = sig
        if kind is np.ndarray:
            dt = f"d_{name}"
            ns[dt] = np.dtype(dtype)
            # (a NumPy scalar and a 0-d array share a signature: an optimizer's step count)
            is_array = (f"(type({name}) is ndarray or isinstance({name}, generic))" if tuple(shape) == ()
                        else f"type({name}) is ndarray")
            # (``is``: NumPy's dtypes of native byte order are one object each; ``!=`` otherwise)
            lines.append(f"    if not {is_array} or {name}.shape != {tuple(shape)!r} "
                         f"or {name}.dtype is not {dt} and {name}.dtype != {dt}: _miss()")
        elif kind in (bool, int, float, complex):
            lines.append(f"    if type({name}) is not {kind.__name__}: _miss()")
        else:
            return None
    lines.append(f"    r = _program({', '.join(leaves)})")
    it = iter(range(out_def.num_leaves))

    def build(d: TreeDef) -> str:
        if d.kind is None:
            return f"r[{next(it)}]"
        if d.kind is type(None):
            return "None"
        kids = [build(c) for c in d.children]
        if d.registered:
            u, a = f"u{len(ns)}", f"m{len(ns)}"
            ns[u], ns[a] = registered_node(d.kind)[1], d.meta
            return f"{u}({a}, ({', '.join(kids)}{',' if len(kids) == 1 else ''}))"
        if d.kind is dict:
            return "{" + ", ".join(f"{k!r}: {e}" for k, e in zip(d.meta, kids)) + "}"
        if d.meta is not None:
            cls = f"o{len(ns)}"
            ns[cls] = d.meta
            return f"{cls}({', '.join(kids)})"
        if d.kind is list:
            return "[" + ", ".join(kids) + "]"
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"

    if not _str_keys(out_def):
        return None
    lines.append(f"    return {build(out_def)}")
    params = ", ".join(f"a{i}" for i in range(n_args))
    source = f"def entry({params}):\n" + "\n".join(lines) + "\n"
    exec(compile(source, "<tapegrad.jit entry>", "exec"), ns)  # noqa: S102  (our own generated source)
    return ns["entry"]


def _str_keys(d: TreeDef) -> bool:
    """Do all the dicts of ``d`` have string keys (which the source spells)?"""
    if d.kind is dict and not all(type(k) is str for k in d.meta):
        return False
    return all(_str_keys(c) for c in d.children)
