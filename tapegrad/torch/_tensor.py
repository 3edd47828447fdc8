"""``tapegrad.torch.Tensor``: a skin over tapegrad's traced values.

The class is its core (``TensorBase``: data, attributes, autograd API, in
``_tensor_base.py``) and the op-family classes: the op modules' (``ArithOps``,
``MathOps``...: ops with bespoke logic, operators) and the op table's
``RowOps`` (the methods its rows make: the unary ops, aliases and in-place
twins). It gets every method by inheritance, so ``help(Tensor)``, IDEs and
type checkers see them. It sits above all the op modules, and registers
itself with ``_tensor_base`` as the class the fast paths build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tapegrad.torch._arith import ArithOps
from tapegrad.torch._convert import ConvertOps, _rebuild
from tapegrad.torch._indexing import IndexingOps
from tapegrad.torch._inplace import InplaceOps
from tapegrad.torch._math import MathOps
from tapegrad.torch._ops import FUNCTIONS, RowOps, missing_attribute
from tapegrad.torch._random import RandomOps
from tapegrad.torch._reductions import ReductionOps
from tapegrad.torch._shape import ShapeOps
from tapegrad.torch._tensor_base import TensorBase, register_tensor_class

__all__ = ["FUNCTIONS", "Tensor", "_rebuild"]  # (_rebuild: files saved before it moved to _convert)


class Tensor(RowOps, ConvertOps, ShapeOps, IndexingOps, ReductionOps, MathOps, InplaceOps, ArithOps, RandomOps,
             TensorBase):
    """A PyTorch-style tensor on tapegrad's tape.

    Build one with ``tapegrad.torch.tensor`` (or ``zeros``, ``randn`` ...).
    ``torch.Tensor(data)`` also works (float32, as in PyTorch). The class
    prints as PyTorch's does: ``<class 'torch.Tensor'>``.
    """

    _torch_name = "torch.Tensor"
    __hash__ = ConvertOps.__hash__  # (ArithOps defines ``__eq__``, which drops its own)
    if not TYPE_CHECKING:  # (to a type checker, a missing method is an error)
        __getattr__ = missing_attribute


register_tensor_class(Tensor)
