"""torch.func tutorial: per-sample gradients with functional_call, vmap and grad."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = SimpleMLP()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.linspace(-0.6, 0.7, p.numel()).reshape(p.shape))

data = torch.linspace(-1, 1, 20).reshape(5, 4)
targets = torch.tensor([0, 1, 1, 0, 1])

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    return F.cross_entropy(predictions, target.unsqueeze(0))


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for name, g in ft_per_sample_grads.items():
    print(name, tuple(g.shape))

manual = []
for i in range(5):
    model.zero_grad()
    loss = F.cross_entropy(model(data[i:i + 1]), targets[i:i + 1])
    loss.backward()
    manual.append([p.grad.clone() for p in model.parameters()])
for j, name in enumerate(params):
    ref = torch.stack([m[j] for m in manual])
    print(name, torch.allclose(ft_per_sample_grads[name], ref, atol=1e-6))
print(ft_per_sample_grads["fc2.bias"].round(decimals=3))
