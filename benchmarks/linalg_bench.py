"""Gradients of ``slogdet`` and ``solve`` at n = 500: tapegrad vs the NumPy formulas.

Run from the repository root::

    PYTHONPATH=. python3 benchmarks/linalg_bench.py [--quick]

Each case times value + gradient. The baseline is the textbook formula in
plain NumPy, re-timed in the same run:

- ``slogdet``: ``slogdet(A)`` and ``d logdet / dA = inv(A)^T``.
- ``solve`` (vector and n x n right-hand side), loss ``sum(solve(A, B))``:
  ``X = solve(A, B)``, ``gB = solve(A^T, 1)``, ``gA = -gB X^T``.

BLAS runs on one thread (set before NumPy is imported). Contenders are
warmed up, then timed round-robin (order flipped every round); the table
shows medians and the ratio tapegrad / NumPy (the target is <= 1.2).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import tapegrad as tg  # noqa: E402
import tapegrad.numpy as tnp  # noqa: E402


def _median_pair(a: Callable[[], Any], b: Callable[[], Any], repeats: int, warmup: int = 2) -> tuple[float, float]:
    for _ in range(warmup):
        a()
        b()
    ta, tb = [], []
    for r in range(repeats):
        order = ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta))
        for fn, sink in order:
            gc.collect()
            t0 = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def _cases(n: int) -> list[tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any]]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
    bv = rng.standard_normal(n)
    bm = rng.standard_normal((n, n))

    def np_slogdet() -> Any:
        _, logdet = np.linalg.slogdet(a)
        return logdet, np.linalg.inv(a).T

    tg_slogdet_fn = tg.value_and_grad(lambda x: tnp.linalg.slogdet(x)[1])

    def np_solve(b: np.ndarray) -> Callable[[], Any]:
        def run() -> Any:
            x = np.linalg.solve(a, b)
            gb = np.linalg.solve(a.T, np.ones_like(b))
            ga = -np.outer(gb, x) if b.ndim == 1 else -gb @ x.T
            return x.sum(), (ga, gb)
        return run

    tg_solve_fn = tg.value_and_grad(lambda x, b: tnp.sum(tnp.linalg.solve(x, b)), argnums=(0, 1))

    def check(ref: Callable[[], Any], got: Callable[[], Any]) -> None:
        r, g = ref(), got()
        np.testing.assert_allclose(r[0], g[0], rtol=1e-8)
        for x, y in zip(tg.tree_flatten(r[1])[0], tg.tree_flatten(g[1])[0]):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9)

    cases = [
        ("slogdet grad", np_slogdet, lambda: tg_slogdet_fn(a)),
        ("solve grad (vector b)", np_solve(bv), lambda: tg_solve_fn(a, bv)),
        ("solve grad (n x n B)", np_solve(bm), lambda: tg_solve_fn(a, bm)),
    ]
    return [(name, ref, got, lambda ref=ref, got=got: check(ref, got)) for name, ref, got in cases]


def run(quick: bool = False) -> list[tuple[str, float, float]]:
    """Time each case; returns ``(case, numpy_seconds, tapegrad_seconds)`` rows (medians)."""
    n = 500
    repeats = 5 if quick else 21
    rows = []
    for name, ref, got, check in _cases(n):
        check()  # the comparison is only honest if both compute the same thing
        t_np, t_tg = _median_pair(ref, got, repeats)
        rows.append((f"{name}, n={n}", t_np, t_tg))
    return rows


def main(argv: list[str]) -> None:
    rows = run(quick="--quick" in argv)
    print(f"{'case':32s} {'numpy ms':>10s} {'tapegrad ms':>12s} {'ratio':>7s}")
    for name, t_np, t_tg in rows:
        print(f"{name:32s} {t_np * 1e3:10.2f} {t_tg * 1e3:12.2f} {t_tg / t_np:7.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
