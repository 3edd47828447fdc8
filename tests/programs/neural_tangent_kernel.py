"""torch.func tutorial: the empirical neural tangent kernel of a small
network, from the Jacobians (jacrev + vmap) and as Jacobian-vector
products, checked against each other."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, jacrev, jvp, vjp, vmap


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()).float() + i).reshape(p.shape) * 0.5)
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


x_train = torch.linspace(-1, 1, 12).reshape(4, 3)
x_test = torch.linspace(-0.5, 1.5, 9).reshape(3, 3)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]
    result = torch.stack([torch.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)])
    return result.sum(0)


ntk = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print(ntk.shape)
print(ntk[0, 0].round(decimals=3))
print(torch.allclose(ntk.sum(), ntk.sum(), atol=0), ntk.dtype)


def empirical_ntk_ntk_vps(func, params, x1, x2):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        basis = torch.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    return result


ntk2 = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test)
print(ntk2.shape, torch.allclose(ntk, ntk2, atol=1e-5))
trace_ntk = torch.einsum("NMaa->NM", ntk)
print(trace_ntk.round(decimals=3))
print(F.relu(torch.tensor([-1.0, 2.0])))
