"""The functional transforms, each a thin layer over the one tape."""

from tapegrad.transforms.forward import jvp
from tapegrad.transforms.reverse import elementwise_grad, grad, stop_gradient, value_and_grad, vjp

__all__ = ["elementwise_grad", "grad", "jvp", "stop_gradient", "value_and_grad", "vjp"]
