"""Activation checkpointing with torch.utils.checkpoint: the gradients equal
those of the plain forward pass."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return torch.tanh(self.lin(x)) + x


class Net(nn.Module):
    def __init__(self, d, n, use_ckpt):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.use_ckpt = use_ckpt

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.use_ckpt else b(x)
        return x.sum()


def init(m):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.linspace(-0.4, 0.4 + 0.01 * i, p.numel()).reshape(p.shape))
    return m


x = torch.linspace(-1, 1, 12).reshape(3, 4)
plain = init(Net(4, 3, False))
ckpt = init(Net(4, 3, True))
lp = plain(x)
lc = ckpt(x)
print(f"{lp.item():.5f}", f"{lc.item():.5f}", lc.requires_grad)
lp.backward()
lc.backward()
print(all(torch.allclose(a.grad, b.grad, atol=1e-6) for a, b in zip(plain.parameters(), ckpt.parameters())))
xi = x.clone().requires_grad_()
y = checkpoint(lambda a, b: (a * b).sin(), xi, torch.full((4,), 2.0), use_reentrant=False)
y.sum().backward()
print(torch.allclose(xi.grad, 2 * (2 * x).cos()))
seq = init(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))
ref = seq(x)
xs = x.clone().requires_grad_()
out = checkpoint_sequential(seq, 2, xs, use_reentrant=False)
print(torch.allclose(out, ref), out.shape)
out.sum().backward()
print(xs.grad.shape, seq[0].weight.grad is not None)

# the reentrant form: recomputed in backward, parameters' grads accumulated there
lin = init(nn.Linear(3, 3))
xr = torch.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
yr = checkpoint(lambda a: lin(a).tanh() * 2, xr, use_reentrant=True)
print(yr.grad_fn.__class__.__name__, yr.requires_grad)
(yr * torch.arange(6.0).reshape(2, 3)).sum().backward()
print(xr.grad, lin.weight.grad, lin.bias.grad)
seq.zero_grad()
xs2 = x.clone().requires_grad_()
out2 = checkpoint_sequential(seq, 3, xs2, use_reentrant=True)
out2.sum().backward()
print(torch.allclose(out2, ref), torch.allclose(xs2.grad, xs.grad), seq[0].weight.grad.shape)
