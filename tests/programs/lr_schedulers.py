"""Learning-rate schedulers: StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LambdaLR, ReduceLROnPlateau and OneCycleLR, stepped the
usual way (optimizer.step() then scheduler.step())."""
import torch
import torch.nn as nn


def trace(make, n=8, metric=None):
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = make(opt)
    lrs = []
    for epoch in range(n):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric[epoch])
        lrs.append(round(opt.param_groups[0]["lr"], 6))
    return type(sched).__name__, lrs


S = torch.optim.lr_scheduler
print(*trace(lambda o: S.StepLR(o, step_size=3, gamma=0.1)))
print(*trace(lambda o: S.MultiStepLR(o, milestones=[2, 5], gamma=0.5)))
print(*trace(lambda o: S.ExponentialLR(o, gamma=0.9)))
print(*trace(lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01)))
print(*trace(lambda o: S.LambdaLR(o, lr_lambda=lambda e: 1 / (e + 1))))
losses = [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7]
print(*trace(lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1), metric=losses))
print(*trace(lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.1, patience=0, threshold=0.05,
                                           threshold_mode="abs", cooldown=1, min_lr=0.0005),
             metric=[0.1, 0.2, 0.22, 0.23, 0.5, 0.5, 0.5, 0.5]))
print(*trace(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10), n=10))
print(*trace(lambda o: S.OneCycleLR(o, max_lr=0.5, epochs=2, steps_per_epoch=4, anneal_strategy="linear",
                                    pct_start=0.25, three_phase=True), n=8))

model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=4)
print(round(opt.param_groups[0]["momentum"], 4), sched.get_last_lr())
opt.step()
sched.step()
print(round(opt.param_groups[0]["momentum"], 4))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = S.StepLR(opt, step_size=2)
print(sched.state_dict()["step_size"], sched.last_epoch, sched.get_last_lr())
plateau = S.ReduceLROnPlateau(opt)
print(plateau.patience, plateau.factor, plateau.mode)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = S.OneCycleLR(opt, max_lr=0.1, total_steps=3)
print([round(b, 4) for b in opt.param_groups[0]["betas"]])
for _ in range(3):
    opt.step()
    sched.step()
try:
    opt.step()
    sched.step()
except ValueError as e:
    print("ValueError:", e)
