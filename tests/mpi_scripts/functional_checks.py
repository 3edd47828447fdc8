"""Run under ``mpiexec -n N`` by tests/test_distributed.py: the functional face.

Each check computes its expected result locally (every rank can: the data and
the single-process reference are deterministic), asserts, and the script
prints ``OK <rank>`` at the end. An assertion error names the check.
"""

import sys

import numpy as np

import tapegrad as tg
import tapegrad.distributed as dist
import tapegrad.numpy as tnp

r, n = dist.rank(), dist.world_size()
assert n == int(sys.argv[1]), f"world size {n}, expected {sys.argv[1]}"
assert 0 <= r < n


def mlp_params(rng, dtype=np.float64):
    return {"w1": rng.standard_normal((5, 8)).astype(dtype), "b1": rng.standard_normal(8).astype(dtype),
            "w2": rng.standard_normal((8, 3)).astype(dtype), "b2": rng.standard_normal(3).astype(dtype)}


def loss_sum(p, x, y):
    z = tnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return tnp.sum((z - y) ** 2)


def sgd(p, g, lr=0.1):
    return {k: p[k] - lr * g[k] for k in p}


# --- one step equals the single-process full-batch step (float64, 1e-12) --------------------------
# Every rank draws different initial weights: broadcast makes them rank 0's.
rng = np.random.default_rng(100 + r)
params = dist.broadcast(mlp_params(rng))
ref0 = mlp_params(np.random.default_rng(100))
for k in ref0:
    assert params[k].dtype == np.float64 and np.array_equal(params[k], ref0[k]), f"broadcast: {k}"

data = np.random.default_rng(7)
for N in (12, 13):  # 13: uneven shards for n = 2, 3 (7+6; 5+4+4)
    X, Y = data.standard_normal((N, 5)), data.standard_normal((N, 3))
    full = sgd(ref0, tg.grad(lambda p: loss_sum(p, X, Y) / N)(ref0))  # the single-process step
    x, y = dist.shard((X, Y))
    a, b = dist.shard_bounds(N)
    assert np.array_equal(x, X[a:b]) and len(y) == b - a, "shard"
    # each rank's sum over its shard / the global N, summed over the ranks: the full-batch mean
    grads = dist.all_reduce(tg.grad(lambda p: loss_sum(p, x, y) / N)(params), op="sum")
    step = sgd(params, grads)
    for k in full:
        err = np.max(np.abs(step[k] - full[k]))
        assert err <= 1e-12, f"N={N}: {k} differs from the full-batch step by {err}"
    if N % n == 0:  # even shards: the mean over ranks of per-shard means
        g_mean = dist.all_reduce(tg.grad(lambda p: loss_sum(p, x, y) / len(x))(params), op="mean")
        for k in full:
            assert np.max(np.abs(sgd(params, g_mean)[k] - full[k])) <= 1e-12, f"mean: {k}"
# every rank holds the same parameters after the step (bitwise: the same reduced sums)
root = dist.broadcast(step)
assert all(np.array_equal(root[k], step[k]) for k in step), "the ranks' steps differ"

# --- float32 and float64 in one tree, one message per dtype ----------------------------------------
tree = {"a": np.full((3, 2), r + 1, np.float32), "b": [np.arange(4.0) * (r + 1), (r + 1.0) / 3],
        "c": (np.float32(r), np.full(5, r, np.float64)), "d": None}
calls = []
real = dist._S.comm


class Counting:
    def __getattr__(self, name):
        return getattr(real, name)

    def Allreduce(self, *args, **kw):  # noqa: N802  (MPI's names)
        calls.append(args[1].dtype)
        return real.Allreduce(*args, **kw)

    def Iallreduce(self, *args, **kw):  # noqa: N802
        calls.append(args[1].dtype)
        return real.Iallreduce(*args, **kw)

    def Iallgather(self, *args, **kw):  # noqa: N802  (the fingerprints)
        calls.append("fingerprint")
        return real.Iallgather(*args, **kw)


dist._S.comm = Counting()
try:
    out = dist.all_reduce(tree)
    assert sorted(str(d) for d in calls) == ["fingerprint", "float32", "float64"], f"messages: {calls}"
    calls.clear()
    unchecked = dist.all_reduce(tree, check=False)  # the same data, no fingerprint round trip
    assert sorted(str(d) for d in calls) == ["float32", "float64"], f"messages: {calls}"
finally:
    dist._S.comm = real
assert all(np.array_equal(u, o) for u, o in zip(dist.tree_flatten(unchecked)[0], dist.tree_flatten(out)[0]))
tot = n * (n + 1) / 2  # sum of r + 1
assert out["a"].dtype == np.float32 and np.allclose(out["a"], tot / n), out["a"]
assert out["b"][0].dtype == np.float64 and np.allclose(out["b"][0], np.arange(4.0) * tot / n)
assert type(out["b"][1]) is float and abs(out["b"][1] - tot / n / 3) < 1e-15, out["b"][1]
assert isinstance(out["c"][0], np.float32) and abs(out["c"][0] - (n - 1) / 2) < 1e-6
assert out["d"] is None and out["c"][1].shape == (5,)
assert np.array_equal(tree["a"], np.full((3, 2), r + 1, np.float32)), "all_reduce modified its input"
s = dist.all_reduce({"i": np.array([r, 1], np.int64)}, op="sum")
assert s["i"].dtype == np.int64 and s["i"].tolist() == [n * (n - 1) // 2, n]

# --- results lent from the pooled wire buffer: never overwritten while alive -------------------
t = {"a": np.full(3, r + 1.0), "b": np.full((2, 2), 2.0 * (r + 1))}
r1 = dist.all_reduce(t, op="sum")
r2 = dist.all_reduce(t, op="mean")  # r1 is alive: another buffer
assert r1["a"].tolist() == [tot] * 3 and r2["a"].tolist() == [tot / n] * 3, (r1, r2)
assert not np.shares_memory(r1["a"], r2["a"])
lent = id(r1["a"].base)
del r1
z = dist.all_reduce(t, op="sum")
assert id(z["a"].base) == lent, "the buffer did not come back to the pool once its views were gone"
z["a"] += 1  # the caller's to change
w = dist.all_reduce(t, op="sum")
assert w["a"].tolist() == [tot] * 3 and z["a"].tolist() == [tot + 1] * 3 and r2["b"].tolist() == [[2 * tot / n] * 2] * 2
h = dist.all_reduce({"h": np.full(3, r + 1, np.float16), "s": 1.5}, op="sum")  # (float16 rides as float32)
assert h["h"].dtype == np.float16 and h["h"].tolist() == [tot] * 3 and h["s"] == 1.5 * n

# --- mismatched trees and shapes: a clear error on every rank, and the ranks go on ---------------
bad = [({"a": np.ones(3)} if r == 0 else [np.ones(3)], "in the tree's structure"),
       ({"a": np.ones(3 if r == 0 else 4)}, "at leaf 0 (in flattening order): rank 0 has float64[3]"),
       ({"a": np.ones(3, np.float64 if r == 0 else np.float32)}, "float32[3]")]
for t, words in bad:
    try:
        dist.all_reduce(t)
    except dist.DistributedError as e:
        assert "ranks disagree" in str(e) and words in str(e), str(e)
    else:
        raise AssertionError(f"no error for a mismatch ({words})")
try:  # one rank broadcasts while the others reduce
    dist.broadcast({"a": np.ones(2)}) if r == n - 1 else dist.all_reduce({"a": np.ones(2)})
except dist.DistributedError as e:
    assert "called broadcast(root=0)" in str(e) and "all_reduce" in str(e), str(e)
else:
    raise AssertionError("no error when ranks call different collectives")
assert dist.all_reduce(np.ones(2), op="sum").tolist() == [n, n]  # still in step
dist.barrier()
print(f"OK {r}", flush=True)  # one write: the ranks share the stdout pipe
