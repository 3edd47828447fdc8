"""nn.init variants, parameter counting, module reprs, named_* iterators,
apply(), buffers and requires_grad freezing."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm1d(8)
        self.fc = nn.Linear(16, 8)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(8, 2, bias=False))
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        x = self.conv(x).mean(dim=1).flatten(1)
        return self.head(self.bn(self.fc(x))) * self.scale


net = Net()
print(net)
print(sum(p.numel() for p in net.parameters()))
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
print([(n, tuple(p.shape)) for n, p in net.named_parameters()])
print([n for n, _ in net.named_buffers()])
print([n for n, _ in net.named_modules()])
print([n for n, _ in net.named_children()])


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 0.01)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Conv2d):
        nn.init.ones_(m.weight)
        nn.init.constant_(m.bias, -0.5)


net.apply(init_weights)
print(net.fc.weight[0, :4], net.conv.bias)
e = torch.empty(3, 3)
nn.init.eye_(e)
print(e)
for fn in (nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.kaiming_uniform_,
           nn.init.kaiming_normal_, nn.init.normal_, nn.init.uniform_, nn.init.orthogonal_):
    t = fn(torch.empty(4, 5))
    print(fn.__name__, t.shape, t.dtype)
u = nn.init.uniform_(torch.empty(1000), -0.1, 0.1)
print(bool(u.min() >= -0.1), bool(u.max() <= 0.1))
print(nn.init.calculate_gain("relu"), nn.init.calculate_gain("tanh"))
for p in net.conv.parameters():
    p.requires_grad = False
print(sum(p.numel() for p in net.parameters() if p.requires_grad))
out = net(torch.ones(3, 1, 4, 4))
out.sum().backward()
print(net.conv.weight.grad, net.fc.weight.grad.shape, out.shape)
print(net.state_dict().keys())
print(net.bn.running_mean.shape, net.bn.num_batches_tracked)
net.double()
print(net.fc.weight.dtype, net.scale.dtype)
print(nn.Parameter(torch.ones(2)))
print(nn.ModuleList([nn.Linear(1, 1), nn.Tanh()]))
print(nn.ModuleDict({"a": nn.Identity()}))
