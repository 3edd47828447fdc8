"""The facade's backward walk: ``run_backward`` pushes seeds back from root
tensors over the facade tape's graph (``tapegrad.torch._graph``), after
checking the versions of what the graph saved; anomaly mode swaps in its
checked walk with ``use_walk``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapegrad.core.graph_tape import connect_residuals, disconnect_residuals, reachable
from tapegrad.core.tape import FreedGraphError, backprop
from tapegrad.torch._graph import GT, _last_bump, check_versions, tensor_hooks

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)

# the reverse walk backward runs: the tape's, or anomaly mode's checked one while it is on
_walk: list[Callable[..., dict[int, Any]]] = [backprop]


def use_walk(walk: Callable[..., dict[int, Any]] | None) -> None:
    """Have backward walk the graph with ``walk`` (``tapegrad.core.tape.backprop``'s
    signature; anomaly mode's checked walk); None: the tape's own."""
    _walk[0] = walk or backprop


def run_backward(roots: list[Any], seeds: list[Any], retain_graph: bool, create_graph: bool,
                 capture: list[Any] | None = None) -> dict[int, Any]:
    """Push ``seeds`` back from the ``roots`` (tensors that require grad).

    Returns the cotangent table: leaf node index -> cotangent, plus, for each
    tensor in ``capture`` that is not a leaf, ``-index`` -> its total cotangent.
    Tensor hooks run on the way (a hook may replace the gradient).
    """
    ct: dict[int, Any] = {}
    cores = []
    for r, s in zip(roots, seeds):
        node = r._value._node
        cores.append(node)
        i = node.index
        ct[i] = ct[i] + s if i in ct else s
    order = reachable(cores)
    if order and _last_bump[0] > order[-1].index:  # an in-place op since this graph was made
        check_versions(order)
    hooks: dict[int, list[Callable[[Any], Any]]] | None = None
    if tensor_hooks:
        hooks = {n.index: fns for n, fns in tensor_hooks.items() if n.prim is not None}
    captured: dict[int, Any] = {}
    if capture:
        hooks = dict(hooks) if hooks else {}
        for t in capture:
            node = t._value._node
            if node.prim is not None:
                i = node.index
                hooks[i] = list(hooks.get(i, ())) + [_capturer(captured, i)]
    # a recorded replay (create_graph): rules' output twins join the graph while it runs
    twins = connect_residuals(order) if create_graph else None
    prev = GT.active
    GT.active = create_graph
    try:  # (the walk enters tapegrad._gc.tracing itself)
        out = _walk[0](order, ct, retain_graph, hooks)
    except FreedGraphError:  # (the core's words: PyTorch's here)
        raise RuntimeError(SECOND_BACKWARD) from None
    finally:
        GT.active = prev
        if twins:
            disconnect_residuals(twins)
    for i, g in captured.items():
        out[-i] = g
    return out


def _capturer(store: dict[int, Any], i: int) -> Callable[[Any], Any]:
    def capture(g: Any) -> Any:
        store[i] = g
        return g

    return capture


