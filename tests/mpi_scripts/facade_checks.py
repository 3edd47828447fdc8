"""Run under ``mpiexec -n N`` by tests/test_distributed.py: the PyTorch facade.

torch.distributed's collectives, DistributedDataParallel (broadcast at wrap,
one step equal to the single-process full-batch step, no_sync, unused
parameters, state_dict keys) and DistributedSampler's coverage. Prints
``OK <rank>`` at the end.
"""

import sys

import numpy as np

import tapegrad.distributed as tgd
import tapegrad.torch as torch
import tapegrad.torch.distributed as dist
from tapegrad.torch import nn
from tapegrad.torch.nn.parallel import DistributedDataParallel as DDP
from tapegrad.torch.utils.data import DataLoader, TensorDataset
from tapegrad.torch.utils.data.distributed import DistributedSampler

assert not dist.is_initialized()
dist.init_process_group(backend="mpi")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and n == int(sys.argv[1]) and r == tgd.rank()

# --- collectives on tensors, in place ----------------------------------------------------------
t = torch.tensor([1.0, 2.0]) * (r + 1)
dist.all_reduce(t)
tot = n * (n + 1) / 2
assert t.tolist() == [tot, 2 * tot], t
t = torch.full((2, 2), float(r), dtype=torch.float64)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert t.dtype == torch.float64 and np.allclose(t.numpy(), (n - 1) / 2)
b = torch.arange(3) + 10 * r
dist.broadcast(b, src=n - 1)
assert b.tolist() == [10 * (n - 1), 10 * (n - 1) + 1, 10 * (n - 1) + 2], b
dist.barrier()


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()


# --- DDP: rank 0's weights at wrap; one step equals the full-batch step (1e-12) ------------------
model = DDP(make_model(seed=10 + r))
ref = make_model(seed=10)
for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
    assert torch.equal(p, q), f"not broadcast at wrap: {name}"
try:  # a model that differs between the ranks: a clear error when it is wrapped
    DDP(nn.Linear(3 + (r == n - 1), 2))
except tgd.DistributedError as e:
    assert "rank 0 has float32[2, 3]" in str(e) and "float32[2, 4]" in str(e), str(e)
else:
    raise AssertionError("DDP wrapped models that differ between the ranks")
keys = list(model.state_dict())
assert keys and all(k.startswith("module.") for k in keys), keys
assert [k[len("module."):] for k in keys] == list(ref.state_dict())

rng = np.random.default_rng(3)
N = 12
X, Y = torch.from_numpy(rng.standard_normal((N, 5))), torch.from_numpy(rng.standard_normal((N, 3)))
sampler = DistributedSampler(TensorDataset(X, Y), shuffle=False)
idx = list(sampler)
assert len(idx) == N // n
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
loss_fn = nn.MSELoss()
opt.zero_grad()
loss_fn(model(X[idx]), Y[idx]).backward()
opt.step()
ref_opt.zero_grad()
loss_fn(ref(X), Y).backward()
ref_opt.step()
for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
    err = float((p - q).abs().max())
    assert err <= 1e-12, f"{name}: after one step, {err} from the full-batch step"

# --- no_sync: local accumulation, reduced with the next synchronised backward ------------------
plain = make_model(seed=10)
with torch.no_grad():
    for p, q in zip(plain.parameters(), model.module.parameters()):
        p.copy_(q)
xa, ya = X[r::n], Y[r::n]
xb, yb = X[(r + 1) % n::n], Y[(r + 1) % n::n]
opt.zero_grad()
with model.no_sync():
    loss_fn(model(xa), ya).backward()
loss_fn(plain(xa), ya).backward()
for p, q in zip(model.module.parameters(), plain.parameters()):
    assert torch.equal(p.grad, q.grad), "no_sync: the gradient is not the local one"
loss_fn(model(xb), yb).backward()
loss_fn(plain(xb), yb).backward()
expected = tgd.all_reduce([q.grad.numpy() for q in plain.parameters()])
for p, e in zip(model.module.parameters(), expected):
    assert np.max(np.abs(p.grad.numpy() - e)) <= 1e-15, "no_sync: the accumulated gradient is not averaged"

# autograd.grad fires the hooks but reduces nothing (and leaves no stale state)
g = torch.autograd.grad(loss_fn(model(xa), ya), list(model.parameters()))
gl = torch.autograd.grad(loss_fn(plain(xa), ya), list(plain.parameters()))
assert all(torch.equal(u, v) for u, v in zip(g, gl))


# --- an unused parameter keeps grad None; one used on some ranks is averaged -------------------
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4).double()
        self.never = nn.Linear(4, 1).double()
        self.sometimes = nn.Linear(4, 1).double()

    def forward(self, x):
        h = self.body(x)
        return h.sum() + (self.sometimes(h).sum() if r == 0 else 0.0)


two = DDP(TwoHeads(), find_unused_parameters=True, bucket_cap_mb=1e-4)  # several buckets
assert len(two._buckets) > 1
x4 = torch.ones(2, 4, dtype=torch.float64)
two(x4).backward()
assert two.module.never.weight.grad is None
local = torch.autograd.grad(TwoHeads.forward(two.module, x4), [two.module.sometimes.weight])[0] \
    if r == 0 else None
sw = two.module.sometimes.weight.grad
assert sw is not None
if r == 0:
    assert np.allclose(sw.numpy(), local.numpy() / n), "a parameter used on one rank: sum / world size"

# --- DistributedSampler: every index once per epoch (padded ones twice) ------------------------
for size, drop_last in ((13, False), (13, True), (12, False), (2, False)):
    ds = list(range(size))
    sampler = DistributedSampler(ds, shuffle=True, seed=5, drop_last=drop_last)
    orders = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        mine = list(sampler)
        assert len(mine) == len(sampler)
        counts = np.bincount(np.array(mine, dtype=np.int64), minlength=size).astype(np.int64)
        total = tgd.all_reduce(counts, op="sum")
        orders.append(tgd.all_reduce(np.array(mine + [0] * (size - len(mine)), np.int64), op="sum"))
        if drop_last:
            assert total.max() <= 1 and total.sum() == (size // n) * n, (size, total)
        else:
            assert total.min() >= 1 and total.sum() == len(sampler) * n, (size, total)
            assert total.sum() - size < n or size < n, "padding: fewer than world size extra indices"
    if size > 3:
        assert not np.array_equal(orders[0], orders[1]), "set_epoch did not change the order"
loader = DataLoader(TensorDataset(X, Y), batch_size=4, sampler=DistributedSampler(TensorDataset(X, Y)))
assert sum(len(xb) for xb, _ in loader) == N // n

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"OK {r}", flush=True)  # one write: the ranks share the stdout pipe
