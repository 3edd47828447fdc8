"""The facade's op table (``tapegrad/torch/_ops.py``) is complete and true.

Every row's method (and aliases) is on ``Tensor``, its function forms are in
``tapegrad.torch``, its in-place twin exists, and a call on a small float64
tensor that requires grad records the node name the row states (the twin on a
non-leaf copy, its ``inplace_node``). Every public ``Tensor`` method named
``*_`` is a row's twin or an in-place-only row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
from tapegrad.torch._ops import TABLE, Op

# in-place methods of the autograd API, in Tensor's class body (no op)
CORE_INPLACE = {"requires_grad_", "detach_"}
# in-place ops that write fresh samples into the buffer, recording nothing
def _o(*shape: int) -> Any:
    n = int(np.prod(shape))
    return torch.tensor(np.linspace(0.2, 0.8, n).reshape(shape))


def _mask() -> Any:
    return torch.tensor([[True, False, True], [False, True, False], [True, True, False]])


_IDX1 = lambda: torch.tensor([0, 2])  # noqa: E731
_IDX2 = lambda: torch.tensor([[0, 1, 2], [2, 1, 0]])  # noqa: E731

# the arguments of a call (default: none) and the shape of self (default: 3 x 3)
ARGS: dict[str, Callable[[], tuple[Any, ...]]] = {
    **{n: (lambda: (_o(3, 3),)) for n in (
        "add", "sub", "mul", "div", "matmul", "mm", "maximum", "minimum", "atan2", "hypot", "logaddexp",
        "xlogy", "remainder", "fmod", "eq", "ne", "lt", "le", "gt", "ge", "equal", "allclose", "isclose",
        "logical_and", "logical_or", "logical_xor", "kron", "view_as", "reshape_as", "copy_")},
    "pow": lambda: (2,), "mv": lambda: (_o(3),), "dot": lambda: (_o(3),), "outer": lambda: (_o(3),),
    "bmm": lambda: (_o(2, 3, 3),), "addmm": lambda: (_o(3, 3), _o(3, 3)),
    "addcmul": lambda: (_o(3, 3), _o(3, 3)), "addcdiv": lambda: (_o(3, 3), _o(3, 3)),
    "lerp": lambda: (_o(3, 3), 0.5), "clamp": lambda: (0.3, 0.7), "clamp_min": lambda: (0.3,),
    "clamp_max": lambda: (0.7,), "where": lambda: (_mask(), _o(3, 3)), "masked_fill": lambda: (_mask(), 0.0),
    "softmax": lambda: (0,), "log_softmax": lambda: (0,), "logsumexp": lambda: (0,), "cumsum": lambda: (0,),
    "cumprod": lambda: (0,), "logcumsumexp": lambda: (0,), "cross": lambda: (_o(3, 3), 1),
    "view": lambda: (9,), "reshape": lambda: (9,), "unflatten": lambda: (1, (3, 1)),
    "transpose": lambda: (0, 1), "permute": lambda: (1, 0), "movedim": lambda: (0, 1),
    "unsqueeze": lambda: (0,), "expand": lambda: (2, 3, 3), "expand_as": lambda: (_o(2, 3, 3),),
    "broadcast_to": lambda: ((2, 3, 3),), "repeat": lambda: (2, 1), "flip": lambda: (0,), "roll": lambda: (1,), "multinomial": lambda: (2,),
    "split": lambda: (1,), "chunk": lambda: (3,), "narrow": lambda: (0, 0, 2), "select": lambda: (0, 1),
    "repeat_interleave": lambda: (2,), "tile": lambda: (2,), "index_select": lambda: (0, _IDX1()),
    "gather": lambda: (0, _IDX2()), "take": lambda: (_IDX1(),), "masked_select": lambda: (_mask(),),
    "scatter": lambda: (0, _IDX2(), _o(3, 3)), "scatter_add": lambda: (0, _IDX2(), _o(3, 3)),
    "index_add": lambda: (0, _IDX1(), _o(2, 3)), "index_fill": lambda: (0, _IDX1(), 0.0),
    "topk": lambda: (2,), "fill_": lambda: (0.5,),
}
SHAPE: dict[str, tuple[int, ...]] = {"dot": (3,), "outer": (3,), "bmm": (2, 3, 3)}


def _x(name: str) -> Any:
    x = _o(*SHAPE.get(name, (3, 3)))
    if name == "acosh":  # (its domain starts at 1)
        x = x + 1.0
    return x.requires_grad_()


def _node(y: Any) -> str | None:
    if isinstance(y, tuple):
        y = y[0]
    fn = getattr(y, "grad_fn", None)
    return None if fn is None else type(fn).__name__  # (name() qualifies a C++ node: torch::autograd::)


def _ids(row: Op) -> str:
    return row.name


@pytest.mark.parametrize("row", TABLE, ids=_ids)
def test_row_is_installed(row: Op) -> None:
    for name in (row.name, *row.aliases):
        assert callable(getattr(torch.Tensor, name, None)), name
    for name in row.functions:
        assert callable(getattr(torch, name, None)), f"torch.{name}"
    if row.twin is not None:
        for name in (row.twin, *row.twin_aliases):
            assert callable(getattr(torch.Tensor, name, None)), name


@pytest.mark.parametrize("row", TABLE, ids=_ids)
def test_row_node_name(row: Op) -> None:
    args = ARGS.get(row.name, tuple)()
    x = _x(row.name)
    if row.name.endswith("_"):  # an in-place-only op: on a non-leaf
        x = x.clone()
    if row.name in ("bitwise_and", "bitwise_or", "bitwise_xor"):  # (integer operands)
        x, args = torch.tensor([1, 2]), (3,)
    if row.name == "bincount":  # (non-negative integers)
        x, args = torch.tensor([1, 2]), ()
    node = _node(getattr(x, row.name)(*args))
    assert node == row.node  # (random in-place ops too: NormalBackward0, with a zero gradient)
    if row.twin is not None:
        y = _x(row.name).clone()
        getattr(y, row.twin)(*ARGS.get(row.name, tuple)())
        assert _node(y) == row.inplace_node


def test_table_is_complete_for_inplace_variants() -> None:
    covered = set(CORE_INPLACE)
    for row in TABLE:
        covered.add(row.name)
        if row.twin is not None:
            covered.update((row.twin, *row.twin_aliases))
    inplace = {n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_")}
    assert inplace <= covered, sorted(inplace - covered)


def test_every_node_name_the_facade_makes_is_declared_in_the_op_table_module() -> None:
    """``tapegrad/torch/_ops.py`` is the one source of node names: each name
    written anywhere in the facade (``"PowBackward2"`` in a method's code) is
    a row's node, in-place node or variant, a name with a declared save
    (``SAVES``) or one of ``OTHER_NODES``."""
    import ast
    import os
    import re

    from tapegrad.torch import _graph, _ops

    declared = set(_ops.OTHER_NODES) | set(_graph.SAVES)
    for row in _ops.TABLE:
        declared.update(n for n in (row.node, row.inplace_node, *row.variants) if n)
    root = os.path.join(os.path.dirname(__file__), "..", "tapegrad", "torch")
    undeclared = set()
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            if fn.endswith(".py"):
                with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                undeclared.update(
                    f"{fn}: {n.value}" for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and re.fullmatch(r"[A-Z][A-Za-z0-9]*Backward[0-9]*[A-Za-z0-9_]*", n.value)
                    and n.value not in declared)
    assert not undeclared, f"node names not declared in tapegrad/torch/_ops.py: {sorted(undeclared)}"


def test_tensor_inherits_its_methods_and_type_checkers_see_the_rows() -> None:
    """``Tensor`` gets every method from its op-family classes (no setattr at
    import: ``help()``, IDEs and mypy see them), and the table's ``RowOps``
    declares for type checkers exactly the methods its rows make."""
    import ast
    import inspect
    import pydoc

    from tapegrad.torch import _ops

    T = torch.Tensor
    for name in ("exp", "exp_", "add", "add_", "sum", "softmax", "view", "clamp_", "bitwise_and", "__pow__", "__mul__"):
        assert name not in vars(T), name
        assert any(name in vars(c) for c in T.__mro__[1:]), name
    text = pydoc.render_doc(T, renderer=pydoc.plaintext)
    assert "exp_(" in text and "add_(" in text
    tree = ast.parse(inspect.getsource(_ops))
    declared: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "RowOps":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    declared.add(item.name)
                elif isinstance(item, ast.Assign):
                    declared.update(t.id for t in item.targets if isinstance(t, ast.Name))
    assert declared == set(_ops.ROW_METHODS)
