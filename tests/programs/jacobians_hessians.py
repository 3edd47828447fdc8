"""torch.func tutorial: Jacobians and Hessians (jacrev, jacfwd, hessian, vmap)
and torch.autograd.functional."""
import torch
from torch.autograd.functional import hessian as ahess
from torch.autograd.functional import jacobian as ajac
from torch.func import hessian, jacfwd, jacrev, jvp, vjp, vmap

D = 4
weight = torch.linspace(-1, 1, D * D).reshape(D, D)
bias = torch.linspace(0, 0.3, D)
x = torch.linspace(-0.5, 0.5, D)


def predict(weight, bias, x):
    return torch.nn.functional.linear(x, weight, bias).tanh()


jacobian = jacrev(predict, argnums=2)(weight, bias, x)
print(jacobian.shape)
print(jacobian.round(decimals=4))
jac_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
print(torch.allclose(jacobian, jac_fwd, atol=1e-6))
ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
print(ft_jac_weight.shape, ft_jac_bias.shape)

batch = torch.linspace(-1, 1, 3 * D).reshape(3, D)
compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
batch_jacobian = compute_batch_jacobian(weight, bias, batch)
print(batch_jacobian.shape)

hess_api = hessian(predict, argnums=2)(weight, bias, x)
hess_fwdrev = jacfwd(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
print(hess_api.shape, torch.allclose(hess_api, hess_fwdrev, atol=1e-6))


def f(x):
    return (x.sin() * x).sum()


print(hessian(f)(torch.tensor([0.0, 1.0, 2.0])).round(decimals=4))
out, vjp_fn = vjp(torch.sin, torch.tensor([0.0, 1.0]))
print(out, vjp_fn(torch.ones(2)))
print(jvp(torch.exp, (torch.tensor([0.0, 1.0]),), (torch.ones(2),)))
print(ajac(lambda t: t ** 2, torch.tensor([1.0, 2.0])))
print(ahess(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0])))
