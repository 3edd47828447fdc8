"""Linear maps of a function: ``linearize`` (its JVP at a point) and ``linear_transpose``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.pytree import tree_flatten, tree_unflatten
from tapegrad.transforms._util import fun_name
from tapegrad.transforms.forward import jvp
from tapegrad.transforms.reverse import vjp


def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``fun``'s value at ``primals`` and its Jacobian-vector product there, as a function.

    Returns ``(out, f_jvp)`` (``(out, f_jvp, aux)`` with ``has_aux``, where
    ``fun`` returns ``(out, aux)``): ``f_jvp(*tangents)`` is the output
    tangent along ``tangents`` (one per primal, of its structure), JAX's
    ``linearize``. ``f_jvp`` computes in forward mode at the saved primals,
    so each call runs ``fun``'s operations again (JAX keeps the linearized
    program instead: the same numbers).

    Examples:
        >>> out, f_jvp = tg.linearize(tnp.sin, np.array([0.0, 1.0]))
        >>> f_jvp(np.ones(2))
        array([1.        , 0.54030231])
    """
    who = f"linearize({fun_name(fun)})"
    if has_aux:
        got = fun(*primals)
        if not isinstance(got, tuple) or len(got) != 2:
            raise TypeError(f"{who}: with has_aux=True the function must return a pair (output, aux)")
        out, aux = got
        main: Callable[..., Any] = lambda *xs: fun(*xs)[0]  # noqa: E731
    else:
        out, aux, main = fun(*primals), None, fun

    def f_jvp(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise TypeError(f"{who}: the linearized function takes {len(primals)} tangent(s), one per "
                            f"primal, but got {len(tangents)}")
        return jvp(main, tuple(primals), tuple(tangents))[1]

    f_jvp.__name__ = f"jvp_of_{fun_name(fun)}"
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _aval(x: Any) -> tuple[tuple[int, ...], Any]:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), np.dtype(x.dtype)
    a = np.asarray(x)
    return a.shape, a.dtype


def linear_transpose(fun: Callable[..., Any], *primals: Any) -> Callable[[Any], tuple[Any, ...]]:
    """The transpose of ``fun``, a linear function, as JAX's ``linear_transpose``.

    ``primals`` give the shapes and dtypes of ``fun``'s arguments (arrays, or
    objects with ``shape`` and ``dtype``); their values are not used. Returns
    ``f_t(cotangent) -> tuple``: one cotangent per argument of ``fun``, for a
    cotangent of ``fun``'s output (of its structure, shapes and dtypes). ``fun``
    must be linear: the transpose is its VJP, which for a linear function
    does not depend on the point.

    Examples:
        >>> f_t = tg.linear_transpose(lambda x, y: 2 * x + y, 1.0, 1.0)
        >>> f_t(3.0)
        (np.float64(6.0), np.float64(3.0))
    """
    who = f"linear_transpose({fun_name(fun)})"
    zeros = []
    for p in primals:
        leaves, tdef = tree_flatten(p)
        zs = []
        for leaf in leaves:
            shape, dtype = _aval(leaf)
            if dtype.kind not in "fc":
                raise TypeError(f"{who}: linear_transpose only supports [float or complex] -> "
                                f"[float or complex] functions, but got an argument of dtype {dtype}")
            zs.append(np.zeros(shape, dtype)[()] if shape == () else np.zeros(shape, dtype))
        zeros.append(tree_unflatten(tdef, zs))
    out, vjp_fn = vjp(fun, *zeros)
    out_leaves, out_tree = tree_flatten(out)
    out_avals = [_aval(o) for o in out_leaves]

    def f_t(cotangent: Any) -> tuple[Any, ...]:
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected {out_tree} "
                            f"but got {ct_tree}")
        got = [_aval(c) for c in ct_leaves]
        if [s for s, _ in got] != [s for s, _ in out_avals]:
            raise TypeError(f"cotangent type does not match function output, expected shapes "
                            f"{[s for s, _ in out_avals]} but got {[s for s, _ in got]}")
        return tuple(vjp_fn(cotangent))

    f_t.__name__ = f"transpose_of_{fun_name(fun)}"
    return f_t
