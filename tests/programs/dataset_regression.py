"""Regression with a custom Dataset, random_split, DataLoader batches,
a per-sample weighted loss and a MultiStepLR schedule."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split


class LineDataset(Dataset):
    def __init__(self, n):
        self.x = torch.linspace(-1, 1, n).unsqueeze(1)
        self.y = 3 * self.x - 0.5
        self.w = torch.where(self.x > 0, 2.0, 1.0)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx], self.w[idx]


ds = LineDataset(40)
print(len(ds), [t.shape for t in ds[3]])
train_ds, val_ds = random_split(ds, [30, 10], generator=torch.Generator().manual_seed(0))
print(len(train_ds), len(val_ds), type(train_ds).__name__)
train_loader = DataLoader(ds, batch_size=8, shuffle=False)
xb, yb, wb = next(iter(train_loader))
print(xb.shape, yb.shape, wb.shape, len(train_loader))
print(len(DataLoader(ds, batch_size=16, drop_last=True)), len(DataLoader(ds, batch_size=16)))

model = nn.Linear(1, 1)
with torch.no_grad():
    model.weight.fill_(0.1)
    model.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 6], gamma=0.5)
mse = nn.MSELoss(reduction="none")
for epoch in range(8):
    total = 0.0
    for xb, yb, wb in train_loader:
        opt.zero_grad()
        loss = (mse(model(xb), yb) * wb).sum() / wb.sum()
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    sched.step()
    print(epoch, f"{total / len(ds):.5f}", sched.get_last_lr())
print(model.weight.item() > 2.9, round(model.bias.item(), 2))
tds = TensorDataset(torch.arange(5.0), torch.arange(5))
print(tds[2], len(tds))
for a, b in DataLoader(tds, batch_size=2):
    print(a, b)
