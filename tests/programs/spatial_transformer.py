"""The spatial transformer tutorial's model on a small input: a localisation
net regresses an affine theta (initialised to the identity), F.affine_grid
and F.grid_sample warp the input, a classifier follows; a few SGD steps."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.fc1 = nn.Linear(4 * 3 * 3, 3)
        self.localization = nn.Sequential(nn.Conv2d(1, 2, kernel_size=3), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(2 * 3 * 3, 8), nn.ReLU(True), nn.Linear(8, 3 * 2))
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(0.3 * torch.sin(torch.arange(p.numel()).float() * 0.9 + i).reshape(p.shape))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 2 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False), theta

    def forward(self, x):
        x, theta = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 4 * 3 * 3)
        return F.log_softmax(self.fc1(x), dim=1), theta


x = torch.cos(torch.arange(2 * 8 * 8).float() * 0.37).reshape(2, 1, 8, 8)
target = torch.tensor([0, 2])
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
out, theta = model(x)
print(out.shape, theta[0])
identity_grid = F.affine_grid(theta.detach(), x.size(), align_corners=False)
print(identity_grid.shape, torch.allclose(F.grid_sample(x, identity_grid, align_corners=False), x, atol=1e-6))
for step in range(4):
    optimizer.zero_grad()
    out, theta = model(x)
    loss = F.nll_loss(out, target)
    loss.backward()
    optimizer.step()
    print(step, f"{loss.item():.4f}", theta.grad_fn, model.fc_loc[2].bias.grad.abs().sum().item() > 0)
print(theta.detach().round(decimals=3))

rot = torch.tensor([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])
img = torch.arange(16.0).reshape(1, 1, 4, 4)
print(F.grid_sample(img, F.affine_grid(rot, (1, 1, 4, 4), align_corners=False), align_corners=False))
shift = torch.tensor([[[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]], requires_grad=True)
g = F.affine_grid(shift, (1, 1, 2, 4), align_corners=True)
print(g, g.grad_fn)
s = F.grid_sample(img[:, :, :2], g, mode="bilinear", padding_mode="zeros", align_corners=True)
print(s)
s.sum().backward()
print(shift.grad)
print(F.grid_sample(img, g, mode="nearest", padding_mode="border", align_corners=True))
print(F.grid_sample(img, g * 1.5, padding_mode="border", align_corners=False))
