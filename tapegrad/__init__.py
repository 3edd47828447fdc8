"""tapegrad: tape-based, functional automatic differentiation for NumPy arrays.

    import tapegrad as tg
    import tapegrad.numpy as tnp

    tg.grad(lambda x: tnp.sum(tnp.sin(x) ** 2))(np.ones(3))
"""

from typing import Any

from tapegrad import numpy as numpy  # noqa: F401  (installs operators and rules)
from tapegrad import optimizers, tree_util
from tapegrad.batching import defbatch
from tapegrad.compile.jit import jit
from tapegrad.core.primitive import defjvp, defvjp, defvjp_argnum, primitive
from tapegrad.core.tape import Tape
from tapegrad.core.traced import value
from tapegrad.debug import debug_nans
from tapegrad.flatten import ravel_pytree
from tapegrad.numpy._define import elementwise
from tapegrad.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_static,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)
from tapegrad.testing import check_grads
from tapegrad.transforms import (
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
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
    linear_transpose,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)
from tapegrad.transforms.fixed_point import fixed_point

remat = checkpoint  # (JAX's other name for it)

__version__ = "0.1.0"

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "SequenceKey",
    "Tape",
    "check_grads",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
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
    "keystr",
    "linear_transpose",
    "linearize",
    "optimizers",
    "primitive",
    "ravel_pytree",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_static",
    "remat",
    "stop_gradient",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "tree_util",
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
