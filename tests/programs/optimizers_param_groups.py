"""Optimizers with parameter groups (per-layer learning rates, weight decay),
add_param_group, zero_grad(set_to_none), clip_grad_value_, a BCEWithLogits
loss with pos_weight, and the same fixed problem solved by SGD, Adam, AdamW,
RMSprop and Adagrad."""
import torch
import torch.nn as nn


def make():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(0.4 * torch.cos(torch.arange(p.numel()).float() + i).reshape(p.shape))
    return model


x = torch.linspace(-1, 1, 30).reshape(10, 3)
y = (x.sum(dim=1, keepdim=True) > 0).float()
loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))

for name, make_opt in [
    ("SGD", lambda m: torch.optim.SGD([{"params": m[0].parameters(), "lr": 0.5},
                                        {"params": m[2].parameters()}], lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", lambda m: torch.optim.Adam(m.parameters(), lr=0.05, weight_decay=1e-2, amsgrad=True)),
    ("AdamW", lambda m: torch.optim.AdamW(m.parameters(), lr=0.05, betas=(0.8, 0.99))),
    ("RMSprop", lambda m: torch.optim.RMSprop(m.parameters(), lr=0.01, alpha=0.9, momentum=0.5)),
    ("Adagrad", lambda m: torch.optim.Adagrad(m.parameters(), lr=0.1, lr_decay=0.01)),
]:
    model = make()
    opt = make_opt(model)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        opt.step()
        losses.append(f"{loss.item():.4f}")
    print(name, losses, len(opt.param_groups), sorted(opt.state_dict()["state"][0]))

model = make()
opt = torch.optim.SGD(model[0].parameters(), lr=0.1)
opt.add_param_group({"params": model[2].parameters(), "lr": 0.01, "momentum": 0.9})
print([(g["lr"], g["momentum"], len(g["params"])) for g in opt.param_groups])
loss_fn(model(x), y).backward()
opt.zero_grad(set_to_none=False)
print(model[0].weight.grad.abs().sum().item(), model[2].bias.grad)
opt.zero_grad()
print(model[0].weight.grad)
print(opt)
try:
    opt.add_param_group({"params": model[0].weight})
except ValueError as e:
    print("ValueError:", e)
frozen = make()
frozen[0].requires_grad_(False)
trainable = [p for p in frozen.parameters() if p.requires_grad]
print(len(trainable), sum(p.numel() for p in trainable))
print(nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))(torch.tensor([0.5, -1.0]), torch.tensor([1.0, 0.0])))
