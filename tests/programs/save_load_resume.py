"""Saving and loading a checkpoint (model and optimizer state_dicts, epoch)
and resuming training so that it continues exactly."""
import io

import torch
import torch.nn as nn


def make():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    return model


x = torch.linspace(-1, 1, 24).reshape(8, 3)
y = x.sum(dim=1, keepdim=True).sin()
loss_fn = nn.MSELoss()


def step(model, opt):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


model = make()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(5):
    step(model, opt)
buf = io.BytesIO()
torch.save({"epoch": 5, "model_state_dict": model.state_dict(),
            "optimizer_state_dict": opt.state_dict(), "loss": 0.5}, buf)
continued = [round(step(model, opt), 6) for _ in range(3)]

buf.seek(0)
checkpoint = torch.load(buf)
model2 = make()
opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
print(list(checkpoint), checkpoint["epoch"])
print(list(checkpoint["model_state_dict"]))
sd = checkpoint["optimizer_state_dict"]
print(list(sd), list(sd["state"]), sorted(sd["state"][0]), sd["state"][0]["step"])
print({k: v for k, v in sd["param_groups"][0].items() if k in ("lr", "betas", "eps", "params")})
print(model2.load_state_dict(checkpoint["model_state_dict"]))
opt2.load_state_dict(checkpoint["optimizer_state_dict"])
model2.train()
resumed = [round(step(model2, opt2), 6) for _ in range(3)]
print(continued == resumed)
fresh = make()
print(all(torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters())))
print(any(torch.equal(a, b) for a, b in zip(model.parameters(), fresh.parameters())))
try:
    fresh.load_state_dict({"0.weight": torch.zeros(4, 3)})
except RuntimeError as e:
    print(str(e).splitlines()[0])
print(fresh.load_state_dict({"0.weight": torch.zeros(4, 3)}, strict=False))
buf2 = io.BytesIO()
torch.save(torch.arange(4.0), buf2)
buf2.seek(0)
print(torch.load(buf2))
