"""``rewrites.rewrite``: each algebraic rewrite of a traced program fires where
it should (the generated source shows it), stays out where it must, and
gives eager's results."""

from __future__ import annotations

import numpy as np
import pytest
from jithelp import close as _close
from jithelp import rng as _rng

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile import passes, rewrites
from tapegrad.compile.facts import Instr, Var
from tapegrad.core.engine_ops import sum_to
from tapegrad.numpy import wrap


def _ins(fn, name, args, outs, kwargs=()):
    return Instr(fn, name, tuple(args), tuple(kwargs), tuple(outs), False)


def _call(prim_fn, args, outs):
    """The instruction a jit trace writes for a call of primitive ``prim_fn``."""
    prim = prim_fn.primitive
    return Instr(prim.fun, prim.name, tuple(args), (), tuple(outs), False, prim)


def _rewritten(program, values, outputs):
    """The program after rewrite and dead_code, and the outputs renamed."""
    program, rename = rewrites.rewrite(program, values, outputs)
    outputs = [rename.get(n, n) for n in outputs]
    return passes.dead_code(program, outputs), outputs


def _evaluate(program, values, inputs):
    """Run a program on ``inputs`` (Var number -> array) the slow way: each value by its instruction."""
    env = dict(inputs)
    for ins in program:
        args = [env[a.n] if type(a) is Var else a for a in ins.args]
        env[ins.outs[0]] = ins.fn(*args, **dict(ins.kwargs))
    return env


def _ops(text):
    """The operations of generated source: what each assignment calls (or the operator it applies)."""
    ops = []
    for line in text.splitlines()[1:]:
        line = line.strip()
        if " = " in line and not line.startswith(("del", "return")) and "_buffers()" not in line:
            rhs = line.split(" = ", 1)[1]
            ops.append(rhs.split("(")[0] if "(" in rhs.split(" ")[0] else rhs.split(" ")[1])
    return ops


# --- transposes ---------------------------------------------------------------------------------


def test_transpose_of_transpose_cancels():
    x = _rng().standard_normal((3, 4))
    values = [x, x.T, x]
    program = [_call(wrap.transpose, [Var(0)], [1]),
               _call(wrap.transpose, [Var(1), (1, 0)], [2])]
    kept, outs = _rewritten(program, values, [2])
    assert kept == [] and outs == [0]


def test_transposes_compose_into_one():
    x = _rng().standard_normal((2, 3, 4))
    a = np.transpose(x, (1, 0, 2))
    values = [x, a, np.transpose(a, (2, 0, 1))]
    program = [_call(wrap.transpose, [Var(0), (1, 0, 2)], [1]),
               _call(wrap.transpose, [Var(1), (2, 0, 1)], [2])]
    kept, outs = _rewritten(program, values, [2])
    assert len(kept) == 1 and kept[0].args == (Var(0), (2, 1, 0))
    np.testing.assert_array_equal(_evaluate(kept, values, {0: x})[outs[0]], values[2])


def test_transpose_of_a_product_is_the_product_of_transposes_in_c_order():
    rng = _rng()
    x, g = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    xt = x.T
    values = [x, g, xt, xt @ g, (xt @ g).T]
    program = [_call(wrap.transpose, [Var(0)], [2]),
               _call(wrap.matmul, [Var(2), Var(1)], [3]),
               _call(wrap.transpose, [Var(3)], [4])]
    kept, outs = _rewritten(program, values, [4])
    # g.T @ x: the transpose of x's transpose is x
    assert [ins.name for ins in kept] == ["transpose", "matmul"]
    assert kept[1].args[1] == Var(0)
    got = _evaluate(kept, values, {0: x, 1: g})[outs[0]]
    _close(got, (x.T @ g).T, rtol=1e-14, atol=1e-14)
    assert got.flags.c_contiguous and values[outs[0]].flags.c_contiguous


def test_what_reads_a_product_now_in_c_order_is_traced_again_for_the_planner():
    rng = _rng()
    x, g = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    prod_t = (x.T @ g).T  # the trace's value: a transposed (F-ordered) view
    values = [x, g, x.T, x.T @ g, prod_t, prod_t.reshape(-1)]  # (its reshape: a copy)
    program = [_call(wrap.transpose, [Var(0)], [2]),
               _call(wrap.matmul, [Var(2), Var(1)], [3]),
               _call(wrap.transpose, [Var(3)], [4]),
               _call(wrap.reshape_c, [Var(4), (-1,)], [5])]
    kept, outs = _rewritten(program, values, [5])
    product = next(ins.outs[0] for ins in kept if ins.name == "matmul")
    assert values[product].flags.c_contiguous
    # the reshape of the C-ordered product is a view of it, as it will be when the program runs
    assert np.shares_memory(values[outs[0]], values[product])
    _close(values[outs[0]], prod_t.reshape(-1), rtol=1e-14, atol=1e-14)


def test_a_product_read_elsewhere_is_not_computed_twice():
    rng = _rng()
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    values = [a, b, a @ b, (a @ b).T]
    program = [_call(wrap.matmul, [Var(0), Var(1)], [2]),
               _call(wrap.transpose, [Var(2)], [3])]
    kept, outs = _rewritten(program, values, [2, 3])
    assert [ins.name for ins in kept] == ["matmul", "transpose"]


def test_the_weight_gradient_of_a_dense_layer_comes_out_c_ordered():
    rng = _rng()
    x, w = rng.standard_normal((8, 5)), rng.standard_normal((3, 5))

    def loss(w, x):
        return tnp.sum(tnp.tanh(x @ w.T))

    jg = tg.jit(tg.grad(loss))
    text = jg.lower(w, x).as_text()
    assert "transpose(" not in text.split("matmul")[-1]  # no transpose after the last product
    for _ in range(2):
        got = jg(w, x)
        _close(got, tg.grad(loss)(w, x))
        assert got.flags.c_contiguous


# --- reductions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": (0, 1)}, {"axis": 1, "keepdims": True}])
def test_sum_is_the_ufuncs_reduction_over_every_axis_by_default(kwargs):
    x = _rng().standard_normal((3, 4))
    jf = tg.jit(lambda x: tnp.sum(x * x, **kwargs))
    assert "sum" in _ops(jf.lower(x).as_text())
    for _ in range(2):
        got = jf(x)
        want = np.sum(x * x, **kwargs)
        np.testing.assert_array_equal(got, want)
        assert type(got) is type(want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": -1, "keepdims": True}])
def test_mean_is_a_sum_and_a_division(dtype, kwargs):
    x = (_rng().standard_normal((3, 4)) * 10).astype(dtype)
    jf = tg.jit(lambda x: tnp.mean(x, **kwargs))
    ops = _ops(jf.lower(x).as_text())
    assert "mean" not in ops and "sum" in ops
    want = tnp.mean(x, **kwargs)
    for _ in range(2):
        got = jf(x)
        np.testing.assert_array_equal(got, want)
        assert type(got) is type(want) and got.dtype == want.dtype


def test_the_gradient_of_a_bias_is_a_product_with_ones():
    rng = _rng()
    x, b = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)

    def loss(b, x):
        return tnp.sum(tnp.tanh(x + b))

    jg = tg.jit(tg.grad(loss))
    text = jg.lower(b, x).as_text()
    assert "sum_to" not in text and " @ " in text
    want = tg.grad(loss)(b, x)
    for _ in range(2):
        got = jg(b, x)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.float32 and got.shape == (4,)


def test_sum_to_of_other_shapes_and_layouts_is_a_reduction_not_the_product():
    x = _rng().standard_normal((4, 3))
    program = [_call(sum_to, [Var(0), (1, 3)], [1]),  # keeps a leading 1
               _call(sum_to, [Var(2), (4,), 0], [3])]  # a transposed (F-ordered) matrix
    values = [x, sum_to(x, (1, 3)), x.T, sum_to(x.T, (4,))]
    kept, outs = _rewritten(program, values, [1, 3])
    assert [ins.name for ins in kept] == ["sum", "sum", "reshape"]
    got = _evaluate(kept, values, {0: x, 2: x.T})
    for o, want in zip(outs, (values[1], values[3])):
        assert got[o].shape == want.shape
        _close(got[o], want, rtol=1e-14, atol=1e-14)


# --- NumPy scalars ---------------------------------------------------------------------------------


def test_arithmetic_on_numpy_scalars_is_written_with_operators():
    def bias_corrections(t):
        t = t + 1
        return 0.1 / (1 - 0.999 ** t), tnp.sqrt(1 - 0.999 ** t).astype(np.float32)

    jf = tg.jit(bias_corrections)
    t = np.array(4)
    ops = _ops(jf.lower(t).as_text())
    # (power stays the ufunc: NumPy's scalar ``**`` rounds 0.999 ** 7 differently)
    assert ops == ["add", "power", "-", "/", "sqrt", "float32"]  # (1 - 0.999 ** t once)
    for step in (t, np.array(6), np.array(17), np.array(22)):
        got, want = jf(step), bias_corrections(step)
        for g, w in zip(got, want):
            assert type(g) is type(w) and g == w


def test_arrays_and_integer_scalars_keep_their_ufuncs():
    def f(x, n):
        return x * 2.0, n * 3, (n * 2).astype(np.float32)

    jf = tg.jit(f)
    x, n = np.ones(3), np.array(5)
    ops = _ops(jf.lower(x, n).as_text())
    assert ops == ["multiply", "multiply", "multiply", "float32"]
    for _ in range(2):
        got, want = jf(x, n), f(x, n)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert type(g) is type(w)


# --- logsumexp and its softmax ------------------------------------------------------------------------


@pytest.mark.parametrize("axis, keepdims", [(1, False), (-1, True), (0, False), (None, False)])
def test_logsumexp_is_written_out_and_its_softmax_reuses_it(axis, keepdims):
    z = _rng().standard_normal((5, 4)) * 30

    def loss(z):
        return tnp.sum(tnp.logsumexp(z, axis=axis, keepdims=keepdims) * 1.5)

    jvg = tg.jit(tg.value_and_grad(loss))
    ops = _ops(jvg.lower(z).as_text())
    assert "logsumexp" not in ops
    assert ops.count("exp") == 1 and "divide" in ops  # the backward's exp(z - lse) is exp(z - max) / sum
    want = tg.value_and_grad(loss)(z)
    for _ in range(2):
        value, grad = jvg(z)
        _close(value, want[0])
        _close(grad, want[1])


def test_the_softmax_of_a_logsumexp_keeps_eagers_nans_and_infinities():
    z = np.array([[0.0, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0]])

    def loss(z):
        return tnp.sum(tnp.logsumexp(z, axis=1))

    jvg = tg.jit(tg.value_and_grad(loss))
    with np.errstate(all="ignore"):
        want = tg.value_and_grad(loss)(z)
        for _ in range(2):
            value, grad = jvg(z)
            np.testing.assert_array_equal(np.isnan(grad), np.isnan(want[1]))
            _close(np.nan_to_num(grad), np.nan_to_num(want[1]))
            assert (np.isnan(value) and np.isnan(want[0])) or value == want[0]


def test_logsumexp_of_what_is_not_a_float_array_stays():
    jf = tg.jit(lambda z: tnp.logsumexp(z, axis=0))
    assert "logsumexp" in _ops(jf.lower(np.arange(3)).as_text())
    np.testing.assert_array_equal(jf(np.arange(3)), tnp.logsumexp(np.arange(3), axis=0))


# --- constants of one repeated value ----------------------------------------------------------------


def test_a_constant_array_of_one_value_becomes_a_scalar_of_its_dtype():
    c = np.full((4, 3), -0.25, dtype=np.float32)
    jf = tg.jit(lambda x: x * c + c)
    x = _rng().standard_normal((4, 3)).astype(np.float32)
    compiled = jf.lower(x)._compiled
    consts = [v for k, v in compiled.fn.__globals__.items() if k[0] == "c" and k[1:].isdigit()]
    assert consts and all(type(v) is np.float32 for v in consts)
    for _ in range(2):
        got = jf(x)
        np.testing.assert_array_equal(got, x * c + c)
        assert got.dtype == np.float32


@pytest.mark.parametrize("c", [
    np.array([1.0, 2.0, 1.0]),  # not one value
    np.array([0.0, -0.0, 0.0]),  # signed zeros: x * 0.0 and x * -0.0 differ
    np.array([np.nan, np.nan, np.nan]),
    np.full((2, 3), 2.0),  # it broadcasts the result to a shape of its own
])
def test_constants_that_are_not_one_value_or_that_broadcast_stay(c):
    jf = tg.jit(lambda x: x * c)
    x = np.array([1.5, -2.0, np.inf])
    with np.errstate(invalid="ignore"):
        compiled = jf.lower(x)._compiled
        assert any(type(v) is np.ndarray for k, v in compiled.fn.__globals__.items()
                   if k[0] == "c" and k[1:].isdigit())
        np.testing.assert_array_equal(jf(x), x * c)
        assert np.array_equal(np.signbit(jf(x)), np.signbit(x * c))


def test_a_constant_of_one_value_keeps_the_results_dtype():
    c = np.full(3, 2.0)  # float64: x32 * c is float64, and so is x32 * float64(2.0)
    jf = tg.jit(lambda x: x * c)
    x = np.ones(3, np.float32)
    for _ in range(2):
        got = jf(x)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, x * c)


# --- reshapes and sums over broadcast axes --------------------------------------------------------------


def test_a_reshape_to_the_same_shape_is_dropped_and_two_reshapes_are_one():
    x = np.arange(12.0)
    values = [x, x.reshape(3, 4), x.reshape(3, 4).reshape(2, 6), x.reshape(2, 6).reshape(2, 6)]
    program = [_call(wrap.reshape_c, [Var(0), (3, 4)], [1]),
               _call(wrap.reshape_c, [Var(1), (2, 6)], [2]),
               _call(wrap.reshape_c, [Var(2), (2, 6)], [3])]
    kept, outs = _rewritten(program, values, [3])
    assert len(kept) == 1 and kept[0].args == (Var(0), (2, 6))
    np.testing.assert_array_equal(_evaluate(kept, values, {0: x})[outs[0]], x.reshape(2, 6))


@pytest.mark.parametrize("xshape, shape, nbatch", [((4, 3), (4, 1), 0), ((2, 4, 3), (1, 3), 0),
                                                    ((5, 4, 3), (4, 1), 1), ((4, 3), (3,), 0)])
def test_sum_to_is_one_reduction_over_the_broadcast_axes(xshape, shape, nbatch):
    x = _rng().standard_normal(xshape)
    values = [x, sum_to(x, shape, nbatch)]
    kept, outs = _rewritten([_call(sum_to, [Var(0), shape, nbatch], [1])], values, [1])
    assert "sum_to" not in [ins.name for ins in kept]
    got = _evaluate(kept, values, {0: x})[outs[0]]
    assert got.shape == values[1].shape
    _close(got, values[1], rtol=1e-14, atol=1e-14)


def test_a_constant_beside_a_python_number_argument():
    c = np.arange(3.0)
    jf = tg.jit(lambda x, s: c * s + x)  # (s: a Python number, traced as one)
    for s in (2.0, 3.0):
        np.testing.assert_array_equal(jf(np.ones(3), s), c * s + 1.0)


# --- arithmetic: scalars folded, negations absorbed ------------------------------------------------


def _source(jf, *args):
    return jf.lower(*args).as_text()


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-6)])
def test_the_bias_correction_of_a_root_folds_into_the_step_size(dtype, rtol):
    def update(p, m, v, t):
        t = t + 1
        step = (0.01 / (1 - 0.9 ** t)).astype(dtype)
        root = tnp.sqrt(1 - 0.999 ** t).astype(dtype)
        return p - step * (m / (tnp.sqrt(v) / root + 1e-8))

    r = _rng()
    p, m = (r.standard_normal((5, 3)).astype(dtype) for _ in range(2))
    v = r.random((5, 3)).astype(dtype)
    jf = tg.jit(update)
    ops = _ops(_source(jf, p, m, v, np.array(3)))
    # one pass over the array fewer: m / (sqrt(v) + eps*root) the only division
    assert ops.count("divide") == 1 and ops.count("multiply") == 1, ops
    for t in (np.array(3), np.array(40)):
        _close(jf(p, m, v, t), update(p, m, v, t), rtol=rtol, atol=0)


def test_scalar_factors_of_a_product_are_multiplied_once():
    x = _rng().standard_normal(7)

    def f(x, s):
        return s * (2.5 * x), 3.0 * (x * s)

    jf = tg.jit(f)
    s = np.float64(1.5)
    ops = _ops(_source(jf, x, s))
    # one pass over the array each (four before): the scalars multiplied first, as NumPy scalars
    assert ops.count("multiply") == 2 and ops.count("*") == 2, ops
    _close(jf(x, s), f(x, s))


@pytest.mark.parametrize("f, kept, gone", [
    (lambda x, y: x + -y, "subtract", "negative"),
    (lambda x, y: -y + x, "subtract", "negative"),
    (lambda x, y: x - -y, "add", "negative"),
    (lambda x, y: tnp.negative(-x) * y, "multiply", "negative"),
    (lambda x, y: x * y + (-x) * (2.0 * y), "subtract", "negative"),
])
def test_negations_are_absorbed(f, kept, gone):
    x, y = _rng().standard_normal((2, 6))
    jf = tg.jit(f)
    ops = _ops(_source(jf, x, y))
    assert kept in ops and gone not in ops, ops
    _close(jf(x, y), f(x, y))


def test_a_difference_of_two_scaled_arrays_is_one_scaled_difference():
    def f(p, onehot):  # (the folded gradient of a mean cross-entropy: softmax/n - onehot/n)
        n = np.float32(64)
        return p * (1 / n) + onehot * (-1 / n), p * np.float32(0.5) + onehot * np.float32(0.5)

    r = _rng()
    p, onehot = r.random((4, 3)).astype(np.float32), np.eye(3, dtype=np.float32)[[0, 2, 1, 0]]
    jf = tg.jit(f)
    ops = _ops(_source(jf, p, onehot))
    assert ops.count("multiply") == 2 and ops.count("subtract") == 1 and ops.count("add") == 1, ops
    _close(jf(p, onehot), f(p, onehot), rtol=1e-6, atol=1e-7)


def test_a_vector_times_a_transpose_is_the_matrix_times_the_vector():
    r = _rng()
    v, a = r.standard_normal(4), r.standard_normal((3, 4))

    def f(v, a):
        return v @ a.T

    jf = tg.jit(f)
    assert _ops(_source(jf, v, a)) == ["matmul"]
    _close(jf(v, a), f(v, a))


_ROW_REDUCTIONS = [(rewrites.MAX_REDUCE, "max", "max_of_rows"), (rewrites.ADD_REDUCE, "sum", "sum_of_rows")]


@pytest.mark.parametrize("reduce, name, of_rows", _ROW_REDUCTIONS)
def test_the_maximum_or_sum_of_short_rows_reduces_their_transpose_and_keeps_nans_and_infinities(
        reduce, name, of_rows):
    z = _rng().standard_normal((40, 10)).astype(np.float32)
    z[3, 4], z[5] = np.nan, -np.inf
    z[7, 2] = np.inf
    program = [_ins(reduce, name, [Var(0), 1, None, None, True], [1])]
    values = [z, reduce(z, 1, None, None, True)]
    kept, outs = _rewritten(program, values, [1])
    assert [ins.name for ins in kept] == [of_rows]
    got = _evaluate(kept, values, {0: z})[outs[0]]
    np.testing.assert_allclose(got, values[1], rtol=1e-6, atol=1e-6)  # (a sum: added in another order)
    assert got.shape == (40, 1) and got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(values[1]))


@pytest.mark.parametrize("reduce, name, of_rows", _ROW_REDUCTIONS)
@pytest.mark.parametrize("shape, axis, keepdims", [((40, 10), 0, True), ((4, 10), 1, True),
                                                   ((40, 100), 1, True), ((40, 10), 1, False)])
def test_other_maxima_and_sums_stay_numpys_reduction(reduce, name, of_rows, shape, axis, keepdims):
    z = _rng().standard_normal(shape)
    program = [_ins(reduce, name, [Var(0), axis, None, None, keepdims], [1])]
    kept, _ = _rewritten(program, [z, reduce(z, axis, None, None, keepdims)], [1])
    assert [ins.name for ins in kept] == [name]


def test_a_python_integer_beside_a_float_array_is_a_float():
    def f(x, n):
        return 1 - x * x, 2 * x, n * 3

    x, n = _rng().standard_normal(5).astype(np.float32), np.arange(4)
    jf = tg.jit(f)
    text = _source(jf, x, n)
    assert "(1.0, " in text and "(2.0, " in text and "(v1, 3)" in text, text  # (integer arrays keep theirs)
    for g, w in zip(jf(x, n), f(x, n)):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


def test_the_same_scalar_folded_for_several_arrays_is_computed_once():
    def f(xs, s, r):
        return [s * (x / (tnp.sqrt(x * x) / r + 1e-8)) for x in xs]

    xs = [_rng(i).standard_normal(3) for i in range(4)]
    jf = tg.jit(f)
    text = _source(jf, xs, np.float64(0.5), np.float64(0.25))
    assert text.count(" * v") + text.count("* v") >= 1 and text.count("1e-08 *") == 1, text
    _close(jf(xs, np.float64(0.5), np.float64(0.25)), f(xs, np.float64(0.5), np.float64(0.25)))


@pytest.mark.parametrize("make", [
    lambda: tg.optimizers.adam(0.01),
    lambda: tg.optimizers.adam(0.01, weight_decay=0.1),
    lambda: tg.optimizers.rmsprop(0.01, momentum=0.9),
    lambda: tg.optimizers.sgd(0.1, momentum=0.9, nesterov=True),
])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_compiled_optimizer_steps_equal_eager_ones(make, dtype, rtol):
    opt = make()
    r = _rng()
    params = {"w": r.standard_normal((6, 4)).astype(dtype), "b": r.standard_normal(4).astype(dtype)}
    state = opt.init(params)
    step = tg.jit(lambda g, s, p: opt.update(g, s, p))
    p_e, s_e, p_j, s_j = params, state, params, state
    for i in range(4):
        grads = {k: _rng(i + 1).standard_normal(v.shape).astype(dtype) for k, v in params.items()}
        p_e, s_e = opt.update(grads, s_e, p_e)
        p_j, s_j = step(grads, s_j, p_j)
        _close(p_j, p_e, rtol=rtol, atol=rtol)
        _close(s_j, s_e, rtol=rtol, atol=rtol)


def test_views_of_a_rewritten_value_are_views_of_the_new_array_for_the_planner():
    # (2 * x rewritten as 2.0 * x is a new array at compile time; a reshape of it read after the
    # product is written over must keep its buffer alive: the Hessian of sum(tanh(A x)**2))
    r = _rng()
    a = r.standard_normal((60, 60)) / np.sqrt(60)
    x = r.standard_normal(60)

    def f(x):
        return tnp.sum(tnp.tanh(a @ x) ** 2)

    jf = tg.jit(tg.hessian(f))
    want = tg.hessian(f)(x)
    for _ in range(2):
        _close(jf(x), want)
