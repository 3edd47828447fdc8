"""Instructions per call of a small transform, counted by valgrind: a figure
that load on the machine does not move (timings on a shared machine drift by
10% and more; this does not drift at all).

    python3 benchmarks/instructions.py ROOT [ROOT ...] [--case d1,d3]

For each checkout ROOT (``git worktree add /tmp/old <commit>``) and case, it
runs the case's call N and 4N times under ``valgrind --tool=cachegrind
--cache-sim=no`` and prints the difference over 3N calls: start-up and
warm-up cancel out. The hash seed and BLAS threads are fixed, so two runs
give the same count to the instruction. Between commits, code layout alone
(dict layouts, interned names) moves a count by up to about 2%: read smaller
differences as none. Cases: ``d1``, ``d2``, ``d3``: the
first, second and third derivative of ``tanh`` at a float (the per-call cost
of nested ``grad``); ``hvp``: ``tg.hvp`` of ``sum(tanh(A x)**2)`` at n = 30;
``step``: one ``tapegrad.torch`` training step (``zero_grad``, an
8-16-4 tanh MLP, cross-entropy, ``backward()``, ``Adam.step()``, batch 8:
the facade's bookkeeping, little arithmetic).
Needs valgrind (``apt install valgrind``); about 20 s a count.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

CASES = ("d1", "d2", "d3", "hvp", "step")

# the program valgrind runs: ROOT CASE N
PROGRAM = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import tapegrad as tg
import tapegrad.numpy as tnp
case, n = sys.argv[2], int(sys.argv[3])
if case == "step":
    import tapegrad.torch as torch
    from tapegrad.torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xb, yb = torch.randn(8, 8), torch.arange(8) % 4
    def call():
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
elif case == "hvp":
    A = np.random.default_rng(0).standard_normal((30, 30)) / 30 ** 0.5
    x = v = np.ones(30)
    def call():
        return tg.hvp(lambda x: tnp.sum(tnp.tanh(A @ x) ** 2), (x,), (v,))
else:
    d = tnp.tanh
    for _ in range(int(case[1])):
        d = tg.grad(d)
    def call():
        return d(0.3)
for _ in range(50):
    call()
for _ in range(n):
    call()
"""


def count(root: str, case: str, n: int) -> int:
    """Instructions valgrind counts for the whole run of ``case`` called ``n`` times."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           sys.executable, "-c", PROGRAM, root, case, str(n)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stderr
    m = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if m is None:
        raise RuntimeError(f"valgrind printed no instruction count:\n{out}")
    return int(m.group(1).replace(",", ""))


def per_call(root: str, case: str, n: int = 100) -> int:
    """Instructions per call of ``case`` on checkout ``root`` (start-up cancelled out)."""
    return (count(root, case, 4 * n) - count(root, case, n)) // (3 * n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", help="checkouts of tapegrad to count")
    parser.add_argument("--case", default="d1,d3", help=f"comma-separated, of {', '.join(CASES)}")
    args = parser.parse_args()
    cases = args.case.split(",")
    for c in cases:
        if c not in CASES:
            parser.error(f"unknown case {c!r}; the cases are {', '.join(CASES)}")
    print(f"{'checkout':40} " + " ".join(f"{c:>12}" for c in cases))
    for root in args.roots:
        print(f"{root:40} " + " ".join(f"{per_call(root, c):>12,}" for c in cases), flush=True)


if __name__ == "__main__":
    main()
