"""tapegrad: tape-based, functional automatic differentiation for NumPy arrays.

    import tapegrad as tg
    import tapegrad.numpy as tnp

    tg.grad(lambda x: tnp.sum(tnp.sin(x) ** 2))(np.ones(3))
"""

from typing import Any

from tapegrad import numpy as numpy  # noqa: F401  (installs operators and rules)
from tapegrad import optimizers
from tapegrad.batching import defbatch
from tapegrad.compile.jit import jit
from tapegrad.core.primitive import defjvp, defvjp, defvjp_argnum, primitive
from tapegrad.core.tape import Tape
from tapegrad.core.traced import value
from tapegrad.debug import debug_nans
from tapegrad.flatten import ravel_pytree
from tapegrad.numpy._define import elementwise
from tapegrad.pytree import tree_flatten, tree_map, tree_unflatten
from tapegrad.testing import check_grads
from tapegrad.transforms import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    elementwise_grad,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)
from tapegrad.transforms.fixed_point import fixed_point

__version__ = "0.1.0"

__all__ = [
    "Tape",
    "check_grads",
    "checkpoint",
    "custom_jvp",
    "custom_vjp",
    "debug_nans",
    "defbatch",
    "defjvp",
    "defvjp",
    "defvjp_argnum",
    "distributed",
    "elementwise",
    "elementwise_grad",
    "fixed_point",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "optimizers",
    "primitive",
    "ravel_pytree",
    "stop_gradient",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "value",
    "value_and_grad",
    "vjp",
    "vmap",
]


def __getattr__(name: str) -> Any:
    """``tg.distributed`` is imported on first use (it never imports mpi4py itself)."""
    if name == "distributed":
        import importlib

        return importlib.import_module("tapegrad.distributed")
    raise AttributeError(f"module 'tapegrad' has no attribute {name!r}")
