"""Autograd mechanics: leaves, retain_grad, hooks, accumulation, no_grad,
detach, higher-order gradients and the errors autograd raises."""
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = x * w
h.retain_grad()
seen = []
h.register_hook(lambda g: seen.append(g.clone()))
x.register_hook(lambda g: g * 2)
out = (h ** 2).sum()
print(x.is_leaf, h.is_leaf, out.is_leaf, out.requires_grad)
print(out.grad_fn, out.grad_fn.next_functions[0][0].__class__.__name__)
out.backward()
print(x.grad, w.grad, h.grad, seen)
out2 = (x * w).sum()
out2.backward()
print(x.grad, w.grad)
x.grad.zero_()
w.grad = None
with torch.no_grad():
    q = x * 2
print(q.requires_grad, q.grad_fn)
d = x.detach()
print(d.requires_grad, d.is_leaf)
y = x ** 3
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
print(g, g.grad_fn is not None)
(g2,) = torch.autograd.grad(g.sum(), x)
print(g2)
z = (x * 2).sum()
z.backward(retain_graph=True)
z.backward()
print(x.grad)
loss = (x * x).sum()
loss.backward()
try:
    loss.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split(".")[0])
try:
    torch.ones(2, requires_grad=True).backward()
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.ones(2).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
leaf = torch.zeros(3, requires_grad=True)
try:
    leaf.add_(1)
except RuntimeError as e:
    print("RuntimeError:", e)
a = torch.tensor(2.0, requires_grad=True)
b = a.exp()
b.mul_(3)
try:
    b.backward()
except RuntimeError:
    print("in-place on saved tensor detected")
else:
    print(a.grad)
with torch.enable_grad():
    print(torch.is_grad_enabled())
torch.set_grad_enabled(False)
print(torch.is_grad_enabled(), (x * 2).requires_grad)
torch.set_grad_enabled(True)
v = torch.tensor([1.0, 0.1, 0.01])
yv = x * 2
yv.backward(v)
print(x.grad)
print(x.requires_grad_(False).requires_grad)
