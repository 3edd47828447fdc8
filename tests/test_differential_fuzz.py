"""The differential fuzzer: random tapegrad.numpy programs (tests/fuzz_programs.py)
under grad, jvp, vjp, vmap, jit, hessian, jacfwd, jacrev and compositions
(jit(grad), vmap(grad), grad(grad), jit(vmap(grad))...), compared with each
other, with NumPy's values and with finite differences. Programs favour
size-0 and size-1 axes; a quarter run in float32.

Seeded: the same programs every run. ``TAPEGRAD_FUZZ_N`` sets how many
(default 300, a few seconds); ``TAPEGRAD_FUZZ_START`` the first seed (to
explore new ones). A failing program prints its source.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from fuzz_programs import STEPS, check_program, inputs, make_program

import tapegrad as tg
import tapegrad.numpy as tnp

N = int(os.environ.get("TAPEGRAD_FUZZ_N", "300"))
START = int(os.environ.get("TAPEGRAD_FUZZ_START", "0"))
CHUNK = 25


@pytest.mark.parametrize("first", range(START, START + N, CHUNK))
def test_random_programs_agree_under_every_transform(first):
    failures = []
    for seed in range(first, min(first + CHUNK, START + N)):
        prog = make_program(seed)
        problems = check_program(prog)
        if problems:
            failures.append(prog.source + "\n  " + "\n  ".join(problems))
    assert not failures, "\n\n".join(failures)


def test_the_programs_cover_what_they_should():
    """The generator reaches every kind of step, size-0 and size-1 axes, float32 and
    scalar inputs (so the fuzzer above tests what it claims)."""
    progs = [make_program(s) for s in range(300)]
    texts = "\n".join(p.source for p in progs)
    for word in ("tnp.sum", "tnp.prod", "keepdims=True", "@", "tnp.tensordot", "tnp.inner", "tnp.transpose",
                 "x.reshape", "tnp.sort", "tnp.cumsum", "tnp.cumprod", "x[mask]", "x[1:]", "tnp.concatenate",
                 "tnp.stack", "tnp.broadcast_to", "tnp.pad", "tnp.einsum", "tnp.std", "tnp.where("):
        assert word in texts, word
    shapes = [p.shape for p in progs] + [p.out_shape for p in progs]
    assert any(0 in s for s in shapes) and any(1 in s for s in shapes) and () in shapes
    assert sum(p.dtype == np.float32 for p in progs) > 30
    assert len(STEPS) >= 9


def test_the_checker_catches_a_wrong_rule(monkeypatch):
    """A gradient off by 1% is reported (the checks compare, they do not just run)."""
    real = tg.grad

    def off(f, *a, **k):
        g = real(f, *a, **k)
        return lambda *xs: g(*xs) * 1.01

    progs = [p for p in map(make_program, range(40)) if p.dtype == np.float64
             and np.any(real(p.scalar)(inputs(p)[0]) != 0)]  # (a gradient that 1% changes)
    monkeypatch.setattr(tg, "grad", off)
    missed = [p.seed for p in progs if not check_program(p, extras=False)]
    assert len(progs) > 10 and not missed


def test_a_program_runs_the_same_on_plain_arrays_and_traced_values():
    prog = make_program(1)
    x = np.random.default_rng(0).standard_normal(prog.shape).astype(prog.dtype)
    with tg.Tape() as tape:
        traced = prog.vector(tape.watch(x))
    np.testing.assert_allclose(tg.value(traced), prog.vector(x), rtol=1e-12)
    assert np.shape(tnp.sum(prog.vector(x) * prog.weights)) == ()
