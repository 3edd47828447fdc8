"""Masking and index idioms: where, masked_fill, scatter_, gather, one-hot,
topk/sort and accuracy under torch.no_grad with model.eval()."""
import torch
import torch.nn as nn
import torch.nn.functional as F

labels = torch.tensor([2, 0, 1, 2])
one_hot = torch.zeros(4, 3).scatter_(1, labels.unsqueeze(1), 1.0)
print(one_hot)
print(torch.equal(one_hot, F.one_hot(labels, 3).float()), F.one_hot(labels).dtype)
scores = torch.tensor([[0.1, 0.5, 0.4], [0.9, 0.05, 0.05], [0.2, 0.3, 0.5], [0.0, 0.1, 0.9]])
print(scores.gather(1, labels.unsqueeze(1)).squeeze(1))
mask = scores > 0.3
print(mask, scores.masked_fill(~mask, float("-inf")))
print(torch.where(mask, scores, torch.zeros_like(scores)))
print(torch.where(scores > 0.45))
vals, idx = scores.topk(2, dim=1)
print(vals, idx)
s, order = torch.sort(scores[:, 0], descending=True)
print(s, order, torch.argsort(scores[:, 2]))
acc = torch.zeros(5).index_add_(0, torch.tensor([0, 1, 0, 4]), torch.tensor([1.0, 2.0, 3.0, 4.0]))
print(acc, torch.bincount(torch.tensor([0, 1, 1, 4])))
print(scores.masked_select(mask), mask.nonzero(as_tuple=False))
causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
att = torch.zeros(3, 3).masked_fill(causal, float("-inf")).softmax(dim=-1)
print(att)

x = scores.clone().requires_grad_(True)
picked = x.gather(1, labels.unsqueeze(1)).sum()
picked.backward()
print(x.grad, picked.grad_fn)
y = torch.zeros(4, 3, requires_grad=True)
z = y.scatter(1, labels.unsqueeze(1), torch.ones(4, 1))
print(z.grad_fn)
m = x.masked_fill(mask, 0.0)
print(m.grad_fn)

model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 3))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape))
model.eval()
print(model.training, model[2].training)
with torch.no_grad():
    logits = model(scores)
    pred = logits.argmax(dim=1)
    correct = (pred == labels).sum().item()
print(pred, correct, f"{100 * correct / len(labels):.1f}%", logits.requires_grad)
model.train()
print(model[2].training)
