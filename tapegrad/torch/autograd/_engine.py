"""``torch.autograd.backward`` and ``torch.autograd.grad``: the reverse pass driven from tensors.

Both seed ``tapegrad.torch._backward.run_backward`` at the output tensors;
``backward`` accumulates the cotangents into the leaves' ``.grad`` (running
their hooks), ``grad`` returns them. Kept apart from ``autograd/__init__.py``
so that ``functional`` and ``gradcheck`` import them without importing their
own package's ``__init__``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.traced import Traced, value
from tapegrad.torch import _dtype as D
from tapegrad.torch._backward import run_backward
from tapegrad.torch._graph import GT, bump, leaf_tensor, tensor_hooks
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new, _own, _result, _v

__all__ = ["backward", "grad"]


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _inputs(ins: list[Any]) -> list[Tensor]:
    """``ins`` checked as PyTorch checks ``inputs`` (tensors only)."""
    for t in ins:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
    return ins


def _seeds(outputs: list[Tensor], grads: list[Any], who: str) -> list[Any]:
    for t in outputs:
        if not isinstance(t, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
    for g in grads:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    seeds = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        v = t._value
        if not (type(v) is Traced and v._level is GT):
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if v.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            seeds.append(array_module(v._value).ones(v.shape, dtype=v.dtype))  # (on the output's device)
            continue
        gv = _v(g)
        if not hasattr(gv, "shape"):
            gv = array_module(v).asarray(gv, dtype=v.dtype)
        if tuple(gv.shape) != tuple(v.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {D.Size(gv.shape)} and "
                f"output[{i}] has a shape of {D.Size(v.shape)}."
            )
        if gv.dtype != v.dtype:
            gv = gv.astype(v.dtype) if type(gv) is not Traced else gv
        seeds.append(gv)
    return seeds


def _leaf_hooks(t: Tensor, g: Any) -> Any:
    for fn in tensor_hooks.get(t._value._node, ()):
        g = fn(g)
    return g


def _accumulate(t: Tensor, g: Any, create_graph: bool, seen: set[int]) -> None:
    if type(g) is np.ndarray:  # (the common case: a fresh array is taken as it is)
        if id(g) in seen or not g.flags.writeable or g.base is not None:
            g = g.copy()
    elif type(g) is not Traced:
        g = _own(array_module(g).asarray(g) if id(g) not in seen else g.copy())  # (a CuPy array stays on the device)
    seen.add(id(g))
    old = t._grad
    if old is None:
        if type(g) is Traced and g._level is GT:  # create_graph: PyTorch copies it in
            t._grad = _result(g, "CopyBackwards", (None, _new(g)))  # (an entry of its own: see _own_entry)
        else:
            t._grad = _new(g)
    elif not create_graph and type(old._value) is Traced and type(g) is not Traced:
        old._write(value(old._value) + g)  # in place, keeping its grad_fn (as PyTorch)
        bump(old)
    elif not create_graph and type(old._value) is np.ndarray and type(g) is not Traced \
            and old._value.flags.writeable:
        old._value += g
        bump(old)
    else:
        t._grad = _new(old._value + g)


# Callbacks queued during a backward() (by a leaf's hook), run once it has written
# every .grad; None while no backward() runs. As PyTorch's
# Variable._execution_engine.queue_callback; DistributedDataParallel uses it.
_callbacks: list[Any] | None = None


def queue_callback(fn: Any) -> None:
    """Run ``fn()`` when the running ``backward()`` has accumulated every ``.grad``."""
    if _callbacks is None:
        raise RuntimeError("queue_callback: no backward() is running")
    _callbacks.append(fn)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves
    (then run the callbacks queued meanwhile, see ``queue_callback``).

    Args:
        tensors: the roots (tensors that require grad).
        grad_tensors: one cotangent per root (None for a one-element root).
        retain_graph: keep saved values for another backward (default: ``create_graph``).
        create_graph: record the backward pass (gradients get a ``grad_fn``).
        inputs: accumulate only into these tensors (leaves or not).
    """
    global _callbacks
    outer, _callbacks = _callbacks, []
    try:
        _backward(tensors, grad_tensors, retain_graph, create_graph, inputs)
        while _callbacks:
            _callbacks.pop(0)()
    finally:
        _callbacks = outer


def _backward(tensors: Any, grad_tensors: Any, retain_graph: bool | None,
              create_graph: bool, inputs: Any) -> None:
    outs = _as_list(tensors)
    grads = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(outs)
    if isinstance(grad_tensors, Tensor):
        grads = [grad_tensors]
    seeds = _seeds(outs, grads, "backward")
    retain = create_graph if retain_graph is None else retain_graph
    only = _inputs(_as_list(inputs))
    for t in only:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    nonleaf = [t for t in only if not t.is_leaf]
    ct = run_backward(outs, seeds, retain, create_graph, capture=nonleaf)
    seen: set[int] = set()
    prev = GT.active
    GT.active = create_graph
    try:
        if only:
            for t in only:
                i = t._value._node.index
                key = i if t.is_leaf else -i
                if key in ct:
                    g = ct[key]
                    _accumulate(t, _leaf_hooks(t, g) if t.is_leaf else g, create_graph, seen)
            return
        hooked = bool(tensor_hooks)
        for i, g in ct.items():
            if i < 0:
                continue
            t = leaf_tensor(i)
            if t is None or not t.is_leaf:
                continue
            _accumulate(t, _leaf_hooks(t, g) if hooked else g, create_graph, seen)
    finally:
        GT.active = prev


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated).

    Returns a tuple with one tensor per input (``None`` for an unused input
    when ``allow_unused=True``; zeros with ``materialize_grads=True``).

    Examples:
        >>> x = torch.tensor(2.0, requires_grad=True)
        >>> torch.autograd.grad(x ** 3, x)
        (tensor(12.),)
    """
    outs = _as_list(outputs)
    ins = _inputs(_as_list(inputs))
    if grad_outputs is None:
        gos = [None] * len(outs)
    else:
        gos = _as_list(grad_outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _seeds(outs, gos, "grad")
    retain = create_graph if retain_graph is None else retain_graph
    ct = run_backward(outs, seeds, retain, create_graph, capture=[t for t in ins if not t.is_leaf])
    result: list[Tensor | None] = []
    prev = GT.active
    GT.active = create_graph
    try:
        for k, t in enumerate(ins):
            i = t._value._node.index
            key = i if t.is_leaf else -i
            if key in ct:
                g = ct[key]
                if t.is_leaf:
                    g = _leaf_hooks(t, g)
                result.append(_new(g if type(g) is Traced else _own(array_module(g).asarray(g))))
            elif materialize_grads:
                result.append(_new(array_module(t._value).zeros(t.shape, dtype=t._value.dtype)))
            elif allow_unused:
                result.append(None)
            else:
                raise RuntimeError(
                    f"The differentiated Tensor at index {k} appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
    finally:
        GT.active = prev
    return tuple(result)
