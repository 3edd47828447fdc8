"""The functional transforms, each a thin layer over the one tape."""

from tapegrad.transforms.custom import checkpoint, custom_jvp, custom_vjp
from tapegrad.transforms.forward import jacfwd, jvp
from tapegrad.transforms.jacobians import hessian, hvp, jacobian, jacrev
from tapegrad.transforms.reverse import elementwise_grad, grad, stop_gradient, value_and_grad, vjp
from tapegrad.transforms.vmap import vmap

__all__ = [
    "checkpoint", "custom_jvp", "custom_vjp", "elementwise_grad", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp",
    "stop_gradient", "value_and_grad", "vjp", "vmap",
]
