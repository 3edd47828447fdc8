"""Resampling layers: F.interpolate / nn.Upsample (nearest, bilinear with and
without align_corners), nn.PixelShuffle / PixelUnshuffle and F.pad, with
their gradients, as in super-resolution examples."""
import torch
import torch.nn as nn
import torch.nn.functional as F

x = torch.arange(8.0).reshape(1, 2, 2, 2)
print(F.interpolate(x, scale_factor=2, mode="nearest"))
print(nn.Upsample(size=(3, 3), mode="bilinear", align_corners=False)(x))
print(F.interpolate(x, size=(3, 4), mode="bilinear", align_corners=True))
print(F.interpolate(torch.arange(4.0).reshape(1, 1, 4), size=6, mode="linear"))
print(nn.Upsample(scale_factor=2)(torch.arange(3.0).reshape(1, 1, 3)))
ps = nn.PixelShuffle(2)
y = torch.arange(16.0).reshape(1, 4, 2, 2)
print(ps, ps(y), ps(y).shape)
print(torch.equal(nn.PixelUnshuffle(2)(ps(y)), y))
print(F.pad(torch.ones(1, 2, 2), (1, 2)))
print(F.pad(torch.arange(4.0).reshape(1, 1, 2, 2), (1, 1, 0, 1), value=-1.0))
print(F.pad(torch.arange(6.0).reshape(1, 2, 3), (2, 1), mode="reflect"))
print(F.pad(torch.arange(6.0).reshape(1, 2, 3), (1, 2), mode="replicate"))
a = torch.arange(8.0).reshape(1, 2, 2, 2).requires_grad_()
out = F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=False)
w = torch.linspace(0, 1, out.numel()).reshape(out.shape)
(out * w).sum().backward()
print(out.grad_fn, a.grad)
b = torch.arange(16.0).reshape(1, 4, 2, 2).requires_grad_()
o2 = F.pixel_shuffle(b, 2)
(o2 * torch.arange(16.0).reshape(o2.shape)).sum().backward()
print(o2.grad_fn, b.grad.flatten())
c = torch.arange(4.0).reshape(1, 1, 2, 2).requires_grad_()
o3 = F.pad(c, (1, 1, 1, 1))
o3.sum().backward()
print(o3.grad_fn, c.grad)
n = torch.arange(4.0).reshape(1, 1, 2, 2).requires_grad_()
o4 = F.interpolate(n, scale_factor=3, mode="nearest")
o4.sum().backward()
print(o4.grad_fn, n.grad)


class SuperResolutionNet(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, upscale_factor ** 2, 3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        return self.pixel_shuffle(self.conv2(torch.relu(self.conv1(x))))


net = SuperResolutionNet(3)
print(net, net(torch.zeros(2, 1, 4, 5)).shape)
