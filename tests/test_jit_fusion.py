"""``fusion.fuse``: runs of elementwise steps of one shape and dtype become
one group (inputs, outputs, steps), whatever backend emits it; and the numba
backend's kernels give NumPy's results (when numba is installed)."""

from __future__ import annotations

import numpy as np
import pytest
from jithelp import close as _close
from jithelp import rng as _rng

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile import fusion
from tapegrad.compile.facts import Instr, Var


def _ins(fn, args, out):
    return Instr(fn, fn.__name__, tuple(args), (), (out,), False)


def _collect(program, values, outputs, **kw):
    groups = []

    def emit(g):
        groups.append(g)
        return Instr(lambda *a: None, "group", g.inputs, (), g.outputs, len(g.outputs) > 1)

    return fusion.fuse(program, values, outputs, emit, **kw), groups


def test_a_chain_is_one_group_with_its_inputs_and_the_values_read_after_it():
    n = fusion.SMALL + 1  # (exp of more elements than SMALL: NumPy's SIMD loop, not fused)
    x, y = np.ones(n), np.full(n, 2.0)
    values = [x, y, x * y, x * y + 1.0, np.sqrt(x * y + 1.0), np.exp(x)]
    program = [_ins(np.multiply, [Var(0), Var(1)], 2), _ins(np.add, [Var(2), 1.0], 3),
               _ins(np.sqrt, [Var(3)], 4), _ins(np.exp, [Var(2)], 5)]
    out, groups = _collect(program, values, [4, 5])
    assert len(groups) == 1
    g = groups[0]
    assert g.inputs == (Var(0), Var(1)) and g.outputs == (2, 4) and g.shape == (n,) and g.dtype == "float64"
    assert [s[1] for s in g.steps] == [np.multiply, np.add, np.sqrt]
    assert [ins.name for ins in out] == ["group", "exp"]


def test_transcendentals_fuse_on_small_arrays():
    x = np.linspace(0.1, 1.0, fusion.SMALL)
    values = [x, np.exp(x), np.exp(x) * 2.0, np.tanh(np.exp(x) * 2.0)]
    program = [_ins(np.exp, [Var(0)], 1), _ins(np.multiply, [Var(1), 2.0], 2), _ins(np.tanh, [Var(2)], 3)]
    out, groups = _collect(program, values, [3])
    assert [ins.name for ins in out] == ["group"]
    assert [s[1] for s in groups[0].steps] == [np.exp, np.multiply, np.tanh] and groups[0].outputs == (3,)


def test_an_instruction_no_later_step_reads_moves_after_the_run():
    # a loss's sum between its forward and backward chains: one group, the sum after it
    x = np.ones(4)
    values = [x, x * 2.0, np.sum(x * 2.0), x * 3.0, x * 3.0 + 1.0, np.sum(x), x * 2.0 * 5.0]
    program = [_ins(np.multiply, [Var(0), 2.0], 1), _ins(np.sum, [Var(1)], 2),
               _ins(np.multiply, [Var(0), 3.0], 3), _ins(np.add, [Var(3), 1.0], 4),
               _ins(np.sum, [Var(4)], 5), _ins(np.multiply, [Var(1), 5.0], 6)]
    out, groups = _collect(program, values, [2, 5, 6])
    assert [ins.name for ins in out] == ["group", "sum", "sum"]
    assert [s[0] for s in groups[0].steps] == [1, 3, 4, 6]
    assert groups[0].outputs == (1, 4, 6)  # (1 and 4: read by the sunk sums)


def test_a_step_reading_a_moved_instruction_starts_a_new_run():
    x = np.ones(4)
    s = np.sum(x * 2.0)
    values = [x, x * 2.0, s, x * 3.0, x * 3.0 + 1.0, (x * 3.0 + 1.0) * s, x * 0.5]
    program = [_ins(np.multiply, [Var(0), 2.0], 1), _ins(np.sum, [Var(1)], 2),
               _ins(np.multiply, [Var(0), 3.0], 3), _ins(np.add, [Var(3), 1.0], 4),
               _ins(np.multiply, [Var(4), Var(2)], 5), _ins(np.multiply, [Var(5), 0.5], 6)]
    out, groups = _collect(program, values, [6])
    assert [ins.name for ins in out] == ["group", "sum", "group"]
    assert [s[0] for s in groups[0].steps] == [1, 3, 4] and groups[0].outputs == (1, 4)
    assert groups[1].inputs == (Var(4), Var(2)) and [s[0] for s in groups[1].steps] == [5, 6]


def test_broadcasting_casts_and_other_shapes_break_a_run():
    x, c, h = np.ones((3, 4)), np.ones(4), np.ones((3, 4), np.float32)
    values = [x, c, h, x + c, (x + c) * 2.0, h * 2.0, h * 3.0]
    program = [_ins(np.add, [Var(0), Var(1)], 3), _ins(np.multiply, [Var(3), 2.0], 4),
               _ins(np.multiply, [Var(2), 2.0], 5), _ins(np.multiply, [Var(5), 3.0], 6)]
    out, groups = _collect(program, values, [4, 6])
    assert [g.dtype for g in groups] == ["float32"] and [ins.name for ins in out][:2] == ["add", "multiply"]


def test_keep_leaves_a_group_to_numpy():
    x = np.ones(4)
    values = [x, x * 2.0, x * 2.0 + 1.0]
    program = [_ins(np.multiply, [Var(0), 2.0], 1), _ins(np.add, [Var(1), 1.0], 2)]
    out, groups = _collect(program, values, [2], keep=lambda g: True)
    assert out == program


def _adam(p, m, v, g, s, r):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * (g * g)
    return p - s * (m / (tnp.sqrt(v) / r + 1e-8)), m, v


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
@pytest.mark.parametrize("shape", [(7,), (33, 5)])
def test_numba_kernels_give_numpys_results(dtype, rtol, shape, tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("TAPEGRAD_CACHE_DIR", str(tmp_path))
    r = _rng()
    p, m, g = (r.standard_normal(shape).astype(dtype) for _ in range(3))
    v = r.random(shape).astype(dtype)
    s, r_ = dtype(0.01), dtype(0.7)
    jf = tg.jit(_adam, backend="numba")
    assert "fused_" in jf.lower(p, m, v, g, s, r_).as_text()
    for _ in range(2):
        _close(jf(p, m, v, g, s, r_), _adam(p, m, v, g, s, r_), rtol=rtol, atol=rtol)
    assert list(tmp_path.glob("numba/k_*.py"))  # (the kernel's source, cached on disk)


def test_numba_keeps_numpys_division_by_zero(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("TAPEGRAD_CACHE_DIR", str(tmp_path))

    def f(x, y):
        return (x * 2.0 + 1.0) / y - x * 3.0 + 4.0

    x, y = np.array([1.0, -1.0, 0.0, 2.0]), np.array([0.0, 0.0, 0.0, 1.0])
    jf = tg.jit(f, backend="numba")
    with np.errstate(all="ignore"):
        want = f(x, y)
        for _ in range(2):
            np.testing.assert_array_equal(jf(x, y), want)


def test_numba_fuses_a_small_chain_forward_and_backward_into_one_loop(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("TAPEGRAD_CACHE_DIR", str(tmp_path))

    def chain(x):
        for _ in range(3):
            x = tnp.tanh(tnp.sin(x) * 1.5 + 0.1)
        return tnp.sum(x)

    vg = tg.value_and_grad(chain)
    jf = tg.jit(vg, backend="numba")
    for x in (np.linspace(0.1, 1.0, 4), np.linspace(-1.0, 1.0, 9).astype(np.float32)):
        text = jf.lower(x).as_text()
        assert text.count("fused_") == 1 and "sin(" not in text and "tanh(" not in text
        rtol = 1e-12 if x.dtype == np.float64 else 1e-6
        for _ in range(2):
            _close(jf(x), vg(x), rtol=rtol, atol=rtol)


def test_numba_computes_the_scalar_steps_only_a_kernel_reads_inside_it(tmp_path, monkeypatch):
    # an optimizer's bias corrections from its step count: computed once in the kernel (no NumPy
    # call for them), while the new count, an output, stays outside
    pytest.importorskip("numba")
    monkeypatch.setenv("TAPEGRAD_CACHE_DIR", str(tmp_path))
    opt = tg.optimizers.adam(0.003)

    def step(params, state, grads):
        return opt.update(grads, state, params)

    r = _rng()
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        params = {"w": r.standard_normal((5, 3)).astype(dtype), "b": r.standard_normal(3).astype(dtype)}
        grads = {k: r.standard_normal(v.shape).astype(dtype) for k, v in params.items()}
        state = opt.init(params)
        jf = tg.jit(step, backend="numba")
        ops = [line.split(" = ", 1)[1].split("(")[0] for line in jf.lower(params, state, grads).as_text().splitlines()
               if " = " in line and not line.strip().startswith("del")]
        assert len(ops) == 2 and ops[0] == "add" and ops[1].startswith("fused_")  # (the count, one kernel)
        want_p, want_s = params, state
        for _ in range(3):
            got_p, got_s = jf(want_p, want_s, grads)
            want_p, want_s = step(want_p, want_s, grads)
            _close((got_p, got_s), (want_p, want_s), rtol=rtol, atol=rtol)
