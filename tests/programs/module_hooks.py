"""Module and tensor hooks (forward, forward-pre, full backward), feature
extraction with hooks, anomaly detection and gradient inspection."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


net = Net()
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.linspace(-0.7, 0.9, p.numel()).reshape(p.shape))
features = {}


def save_output(name):
    def hook(module, inputs, output):
        features[name] = output.detach()
    return hook


def pre_hook(module, inputs):
    print("pre", type(module).__name__, [tuple(i.shape) for i in inputs])
    return (inputs[0] * 2,)


grads = []


def backward_hook(module, grad_input, grad_output):
    grads.append((type(module).__name__, [None if g is None else tuple(g.shape) for g in grad_input],
                  [tuple(g.shape) for g in grad_output]))


h1 = net.fc1.register_forward_hook(save_output("fc1"))
h2 = net.act.register_forward_hook(save_output("act"))
h3 = net.fc1.register_forward_pre_hook(pre_hook)
h4 = net.fc2.register_full_backward_hook(backward_hook)
x = torch.linspace(-1, 1, 6).reshape(2, 3)
out = net(x)
print(sorted(features), features["fc1"], features["act"])
out.sum().backward()
print(grads)
print(net.fc1.weight.grad)
for h in (h1, h2, h3, h4):
    h.remove()
features.clear()
net.zero_grad()
out2 = net(x)
print(features, torch.equal(out, out2))
print(net.fc1.weight.grad)


def clip_hook(grad):
    return grad.clamp(-0.1, 0.1)


hh = net.fc2.weight.register_hook(clip_hook)
net(x).sum().backward()
print(net.fc2.weight.grad)
hh.remove()

with torch.autograd.set_detect_anomaly(True):
    a = torch.tensor([1.0, 0.0], requires_grad=True)
    b = a.sqrt()
    print(b)
    try:
        (b * 0).sum().backward()
        print(a.grad)
    except RuntimeError as e:
        print("RuntimeError:", str(e).split("\n")[0][:60])
print(torch.is_anomaly_enabled())
y = torch.tensor([4.0, 9.0], requires_grad=True)
z = y.sqrt().sum()
z.backward()
print(y.grad, z.grad_fn.name(), z.grad_fn.next_functions[0][0].name())
