"""Reverse-mode transforms: grad, value_and_grad, vjp, elementwise_grad."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad._gc import tracing
from tapegrad.core.tape import add_seed, ones_seed
from tapegrad.core.traced import Traced, value
from tapegrad.pytree import tree_flatten, tree_map
from tapegrad.transforms._util import Argnums, Traced_call, fun_name, unwrap


def _split_aux(out: Any, has_aux: bool, who: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"{who} was called with has_aux=True, so the function must return a pair "
            f"(output, aux), but it returned {type(out).__name__}"
            + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
        )
    return out[0], tree_map(value, out[1])


def _value_and_grad(f: Callable[..., Any], argnums: int | tuple[int, ...], has_aux: bool,
                    holomorphic: bool, with_value: bool, who: str | None = None) -> Callable[..., Any]:
    """The function of ``value_and_grad`` (``with_value``) or of ``grad``;
    errors name ``who`` (by default ``grad(f)``)."""
    who = who or f"grad({fun_name(f)})"
    nums_for = Argnums(argnums, who)

    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        with tracing:  # (one span for the tape and its backward pass)
            call = Traced_call(f, args, kwargs, nums_for(len(args), who), persistent=False, who=who)
            out, aux = _split_aux(call.out, has_aux, who) if has_aux else (call.out, None)
            _check_scalar(out, who, holomorphic)
            seeds: dict[int, Any] = {}
            node = call.node_of(out)
            if node is not None:
                seeds[node.index] = ones_seed(out._value)
            grads = call.backward(seeds, retain=False)
        g = tuple(grads) if nums_for.many else grads[0]
        if not with_value:
            return (g, aux) if has_aux else g
        val = call.out_value(out)
        return ((val, aux), g) if has_aux else (val, g)

    return value_and_grad_f


def value_and_grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """Return a function computing ``(f(*args), df/dargs)``.

    ``f`` must return a real scalar (complex with ``holomorphic=True``). With
    ``has_aux=True`` it returns ``(output, aux)`` and the result is
    ``((value, aux), grad)``. ``argnums`` picks the differentiated positional
    arguments (an int, or a tuple giving a tuple of gradients); each may be
    a pytree, and its gradient has the same structure, shapes and dtypes.

    Examples:
        >>> tg.value_and_grad(lambda x: tnp.sum(x ** 2))(np.array([1.0, 2.0]))
        (np.float64(5.0), array([2., 4.]))
    """
    vg = _value_and_grad(f, argnums, has_aux, holomorphic, with_value=True,
                         who=f"value_and_grad({fun_name(f)})")
    vg.__name__ = f"value_and_grad({fun_name(f)})"
    vg.__wrapped__ = f  # type: ignore[attr-defined]  # (inspect.signature reads f's, as JAX's wraps does)
    return vg


def grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
         has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """Return a function computing the gradient of scalar-valued ``f``.

    With ``has_aux=True`` it returns ``(grad, aux)``. Composes to any order.

    Examples:
        >>> tg.grad(tnp.tanh)(0.5)
        np.float64(0.7864477329659274)
        >>> tg.grad(tg.grad(tnp.sin))(0.5)        # -sin(0.5)
        np.float64(-0.479425538604203)
    """
    grad_f = _value_and_grad(f, argnums, has_aux, holomorphic, with_value=False)
    grad_f.__name__ = f"grad({fun_name(f)})"
    grad_f.__wrapped__ = f  # type: ignore[attr-defined]  # (inspect.signature reads f's: jit's static_argnames)
    return grad_f


def _check_scalar(out: Any, who: str, holomorphic: bool) -> None:
    v = value(out)
    if not hasattr(v, "shape"):
        if isinstance(v, (float, int)) and not isinstance(v, bool):
            return
        raise TypeError(
            f"{who} requires a scalar array output, but the function returned "
            f"{type(v).__name__}"
        )
    if v.shape != () and v.size == 1:  # HIPS autograd accepts these: say the one-line port
        raise TypeError(
            f"{who} requires a scalar output, but the function returned an array of shape "
            f"{v.shape} (size 1); return a scalar: end the function with `return out.reshape(())` "
            "(or `out.sum()`, `out[0]`)"
        )
    if v.shape != ():
        raise TypeError(
            f"{who} requires a scalar output, but the function returned an array of shape "
            f"{v.shape}; use tg.vjp, tg.jacrev or tg.elementwise_grad for non-scalar outputs"
        )
    kind = v.dtype.kind
    if kind == "c" and not holomorphic:
        raise TypeError(
            f"{who} requires a real-valued output, but the function returned dtype {v.dtype}; "
            "for holomorphic functions use grad(f, holomorphic=True), else take .real or abs()"
        )
    if kind not in "fc":
        raise TypeError(f"{who} requires a floating-point output, but got dtype {v.dtype}")


class VJPFunction:
    """The ``vjp_fn`` of ``vjp``: maps an output cotangent to input cotangents.

    It may be called many times. ``vjp_fn(ct)`` returns a tuple with one
    cotangent per primal.
    """

    def __init__(self, call: Traced_call, out_def: Any, out_leaves: list[Any], name: str) -> None:
        self._call = call
        self._out_def = out_def
        self._shapes = [np.shape(value(x)) for x in out_leaves]
        self._nodes = [call.node_of(x) for x in out_leaves]
        self._name = name

    def __call__(self, ct: Any) -> tuple[Any, ...]:
        return self.batched(ct, ())

    def batched(self, ct: Any, batch: tuple[int, ...]) -> tuple[Any, ...]:
        """Like calling, with every cotangent leaf carrying leading ``batch`` axes;
        one replay pushes the whole batch."""
        leaves, tdef = tree_flatten(ct)
        if tdef != self._out_def:
            raise TypeError(
                f"vjp_fn of {self._name}: the cotangent must have the structure of the "
                f"output, {self._out_def}, but got {tdef}"
            )
        seeds: dict[int, Any] = {}
        for leaf, shape, node in zip(leaves, self._shapes, self._nodes):
            leaf = unwrap(leaf)  # a cotangent may come in an array wrapper, as primals do
            if isinstance(leaf, np.matrix):  # (data only: its * must not reach the rules)
                leaf = np.asarray(leaf)
            got = np.shape(value(leaf))
            if got != batch + shape:
                raise ValueError(
                    f"vjp_fn of {self._name}: cotangent shape {got} does not match the "
                    f"output shape {batch + shape}"
                )
            if node is not None:
                if not hasattr(leaf, "dtype"):
                    leaf = np.asarray(leaf, dtype=node.dtype)
                add_seed(seeds, node.index, leaf)
        with tracing:
            return tuple(self._call.backward(seeds, retain=True, batch=batch))


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Evaluate ``f(*primals)`` and return ``(out, vjp_fn)``.

    ``vjp_fn(ct)`` gives the vector-Jacobian product: a tuple with one
    cotangent per primal (each in its primal's structure). With
    ``has_aux=True`` the result is ``(out, vjp_fn, aux)``.

    Examples:
        >>> out, vjp_fn = tg.vjp(tnp.sin, np.array([0.0, 1.0]))
        >>> vjp_fn(np.ones(2))
        (array([1.        , 0.54030231]),)
    """
    name = fun_name(f)
    who = f"vjp({name})"
    with tracing:
        call = Traced_call(f, primals, {}, tuple(range(len(primals))), persistent=True, who=who)
    out, aux = _split_aux(call.out, has_aux, who)
    leaves, out_def = tree_flatten(out)
    fn = VJPFunction(call, out_def, leaves, name)
    out_val = call.out_value(out)
    return (out_val, fn, aux) if has_aux else (out_val, fn)


def elementwise_grad(f: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """Gradient of ``sum(f(x))``: for elementwise ``f``, its pointwise derivative.

    Examples:
        >>> tg.elementwise_grad(tnp.tanh)(np.array([0.0, 1.0]))
        array([1.        , 0.41997434])
    """
    name = fun_name(f)
    who = f"elementwise_grad({name})"
    nums_for = Argnums(argnums, who)

    def egrad(*args: Any, **kwargs: Any) -> Any:
        with tracing:  # (one span for the tape and its backward pass)
            call = Traced_call(f, args, kwargs, nums_for(len(args), who), persistent=False, who=who)
            seeds: dict[int, Any] = {}
            for leaf in tree_flatten(call.out)[0]:
                node = call.node_of(leaf)
                if node is not None:
                    add_seed(seeds, node.index, ones_seed(leaf._value))
            grads = call.backward(seeds, retain=False)
        return tuple(grads) if nums_for.many else grads[0]

    egrad.__name__ = f"elementwise_grad({name})"
    return egrad


def stop_gradient(x: Any) -> Any:
    """Return ``x`` (a pytree) with no gradient flowing through it, at any level."""
    return tree_map(value, x)


__all__ = ["Traced", "elementwise_grad", "grad", "stop_gradient", "value_and_grad", "vjp"]
