"""The functional transforms, each a thin layer over the one tape."""

from tapegrad.transforms import checkpoint_policies
from tapegrad.transforms.custom import checkpoint, custom_jvp, custom_vjp
from tapegrad.transforms.forward import jacfwd, jvp
from tapegrad.transforms.jacobians import hessian, hvp, jacobian, jacrev
from tapegrad.transforms.linear import linear_transpose, linearize
from tapegrad.transforms.remat import checkpoint_name
from tapegrad.transforms.reverse import elementwise_grad, grad, stop_gradient, value_and_grad, vjp
from tapegrad.transforms.vmap import vmap

__all__ = [
    "checkpoint", "checkpoint_name", "checkpoint_policies", "custom_jvp", "custom_vjp", "elementwise_grad", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp",
    "linear_transpose", "linearize",
    "stop_gradient", "value_and_grad", "vjp", "vmap",
]
