"""The pieces of ``tg.jit`` on their own: the passes over a traced program
(``dead_code``, ``last_uses``), code generation on small hand-built programs,
and the instructions the trace writes for indices, containers, value-dependent
shapes and Python numbers."""

from __future__ import annotations

import numpy as np
import pytest
from jithelp import close as _close

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile import passes
from tapegrad.compile.codegen import GuardFailed, compile_source, generate
from tapegrad.compile.facts import Guard, Instr, Var
from tapegrad.compile.trace import JitTrace, var_of


def _ins(fn, name, args, outs, kwargs=(), multi=False):
    return Instr(fn, name, tuple(args), tuple(kwargs), tuple(outs), multi)


def _names(program):
    return [ins.name if type(ins) is Instr else "guard" for ins in program]


def _run(program, inputs, outputs, *args, name="prog"):
    source, namespace = generate(program, inputs, outputs, name=name)
    return compile_source(source, namespace, name)(*args), source


# --- dead_code -----------------------------------------------------------------------------------


def test_dead_code_drops_what_no_output_needs():
    program = [
        _ins(np.sin, "sin", [Var(0)], [1]),
        _ins(np.cos, "cos", [Var(0)], [2]),
        _ins(np.multiply, "multiply", [Var(2), 2.0], [3]),
        _ins(np.add, "add", [Var(1), 1.0], [4]),
    ]
    kept = passes.dead_code(program, [4])
    assert _names(kept) == ["sin", "add"]
    assert _names(program) == ["sin", "cos", "multiply", "add"]  # the input is left as it was
    assert passes.dead_code(program, []) == []
    assert _names(passes.dead_code(program, [3, 1])) == ["sin", "cos", "multiply"]


def test_dead_code_keeps_guards_and_what_they_read():
    program = [
        _ins(np.sum, "sum", [Var(0)], [1]),
        _ins(np.greater, "greater", [Var(1), 0], [2]),
        Guard(2, True),
        _ins(np.exp, "exp", [Var(0)], [3]),  # unused
        _ins(np.sin, "sin", [Var(0)], [4]),
    ]
    kept = passes.dead_code(program, [4])
    assert _names(kept) == ["sum", "greater", "guard", "sin"]


def test_dead_code_keeps_an_instruction_with_several_outputs_if_one_is_used():
    program = [
        _ins(np.linalg.eigh, "eigh", [Var(0)], [1, 2], multi=True),
        _ins(np.sum, "sum", [Var(1)], [3]),
    ]
    assert _names(passes.dead_code(program, [3])) == ["eigh", "sum"]


def test_dead_code_follows_keyword_arguments():
    program = [
        _ins(np.abs, "abs", [Var(0)], [1]),
        _ins(np.sum, "sum", [Var(0)], [2], kwargs=[("where", Var(1))]),
    ]
    assert _names(passes.dead_code(program, [2])) == ["abs", "sum"]


def test_dead_code_drops_the_backward_pass_of_an_output_nobody_returns():
    def loss(x):
        return tnp.sum(tnp.sin(x) ** 2)

    with JitTrace() as trace:
        x = trace.input(np.linspace(-1, 1, 3))
        value, grad = tg.value_and_grad(loss)(x)
    both = passes.dead_code(trace.program, [var_of(value), var_of(grad)])
    value_only = passes.dead_code(trace.program, [var_of(value)])
    assert "cos" in _names(both)  # d sin = cos: the backward pass
    assert "cos" not in _names(value_only)
    assert _names(value_only) == ["sin", "power", "sum"]


# --- last_uses ------------------------------------------------------------------------------------


def test_last_uses():
    program = [
        _ins(np.sin, "sin", [Var(0)], [1]),
        _ins(np.add, "add", [Var(0), Var(1)], [2]),
        _ins(np.greater, "greater", [Var(2), 0.0], [3]),
        Guard(3, False),
        _ins(np.sum, "sum", [Var(1)], [4], kwargs=[("where", Var(2))]),
    ]
    last = passes.last_uses(program, [4])
    assert last[0] == 1 and last[1] == 4 and last[2] == 4 and last[3] == 3
    assert last[4] == len(program)  # an output is read after the program


def test_last_uses_of_outputs_that_are_inputs():
    program = [_ins(np.sin, "sin", [Var(0)], [1])]
    assert passes.last_uses(program, [0, 1]) == {0: 1, 1: 1}


# --- code generation ------------------------------------------------------------------------------


def test_generated_source_calls_the_functions_one_line_per_instruction():
    program = [
        _ins(np.sin, "sin", [Var(0)], [1]),
        _ins(np.multiply, "multiply", [Var(1), Var(0)], [2]),
        _ins(np.sum, "sum", [Var(2)], [3], kwargs=[("axis", 0), ("keepdims", True)]),
    ]
    x = np.arange(6.0).reshape(2, 3)
    (out,), source = _run(program, [0], [Var(3)], x)
    np.testing.assert_allclose(out, np.sum(np.sin(x) * x, axis=0, keepdims=True), rtol=1e-15)
    assert "v1 = sin(v0)" in source
    assert "v2 = multiply(v1, v0)" in source
    assert "v3 = sum(v2, axis=0, keepdims=True)" in source
    assert source.startswith("def prog(v0):")
    assert source.rstrip().endswith("return [v3]")


@pytest.mark.parametrize("const,text", [
    (2.5, "2.5"), (3, "3"), (True, "True"), (None, "None"), ("ij->i", "'ij->i'"),
    ((3, 4), "(3, 4)"), ((3,), "(3,)"), ((), "()"), ((1, (2, None)), "(1, (2, None))"),
])
def test_readable_constants_are_literals(const, text):
    program = [_ins(lambda x, c: x, "keep", [Var(0), const], [1])]
    _, source = _run(program, [0], [Var(1)], np.ones(2))
    assert f"v1 = keep(v0, {text})" in source


@pytest.mark.parametrize("const", [np.ones(3), np.float64(2.0), np.float32(1.5), float("nan"), float("inf"),
                                   [1, 2], slice(1, 2), np.dtype(np.float32), (1, np.ones(2))])
def test_other_constants_are_names_in_the_globals(const):
    seen = []
    program = [_ins(lambda x, c: seen.append(c) or x, "keep", [Var(0), const], [1])]
    (out,), source = _run(program, [0], [Var(1)], np.ones(2))
    assert "v1 = keep(v0, c0)" in source
    assert seen[0] is const  # the very object, not a copy nor a repr


def test_one_name_per_constant_and_per_function():
    a, b = np.ones(2), np.zeros(2)
    f1 = lambda x, c: x + c  # noqa: E731
    f2 = lambda x, c: x - c  # noqa: E731
    program = [
        _ins(f1, "add", [Var(0), a], [1]),
        _ins(f1, "add", [Var(1), a], [2]),
        _ins(f2, "add", [Var(2), b], [3]),  # another function of the same name
        _ins(np.sin, "v", [Var(3)], [4]),  # names that clash with the values'
        _ins(np.cos, "2cos", [Var(4)], [5]),
    ]
    x = np.arange(2.0)
    (out,), source = _run(program, [0], [Var(5)], x)
    np.testing.assert_allclose(out, np.cos(np.sin(x + 2.0)), rtol=1e-15)
    assert "v1 = add(v0, c0)" in source and "v2 = add(v1, c0)" in source
    assert "v3 = add_2(v2, c1)" in source
    assert "v4 = f_v(v3)" in source and "v5 = f_2cos(v4)" in source


def test_several_outputs_are_unpacked():
    program = [
        _ins(np.linalg.eigh, "eigh", [Var(0)], [1, 2], multi=True),
        _ins(np.divmod, "divmod", [Var(1), 1.0], [3, 4], multi=True),
        _ins(lambda x: (x,), "one", [Var(3)], [5], multi=True),
    ]
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    (w, v, r), source = _run(program, [0], [Var(1), Var(2), Var(5)], a)
    want_w, want_v = np.linalg.eigh(a)
    np.testing.assert_allclose(w, want_w)
    np.testing.assert_allclose(r, np.divmod(want_w, 1.0)[0])
    assert "v1, v2 = eigh(v0)" in source and "v5, = one(v3)" in source


def test_guards_raise_guard_failed_when_the_decision_goes_the_other_way():
    program = [
        _ins(np.sum, "sum", [Var(0)], [1]),
        _ins(np.greater, "greater", [Var(1), 0.0], [2]),
        Guard(2, True),
        _ins(np.less, "less", [Var(1), 10.0], [3]),
        Guard(3, False),
        _ins(np.sqrt, "sqrt", [Var(0)], [4]),
    ]
    source, namespace = generate(program, [0], [Var(4)], name="g")
    assert "if not v2: _fail(0)" in source and "if v3: _fail(1)" in source
    fn = compile_source(source, namespace, "g")
    np.testing.assert_allclose(fn(np.array([20.0, 5.0]))[0], np.sqrt([20.0, 5.0]))
    with pytest.raises(GuardFailed) as e:
        fn(np.array([-1.0, -2.0]))
    assert e.value.args == (0,)
    with pytest.raises(GuardFailed) as e:
        fn(np.array([1.0, 2.0]))
    assert e.value.args == (1,)


def test_values_are_deleted_after_their_last_use_and_outputs_are_kept():
    program = [
        _ins(np.sin, "sin", [Var(0)], [1]),
        _ins(np.cos, "cos", [Var(1)], [2]),
        _ins(np.add, "add", [Var(2), Var(1)], [3]),
        _ins(np.exp, "exp", [Var(3)], [4]),
    ]
    _, source = _run(program, [0], [Var(4), Var(2)], np.ones(2))
    lines = [ln.strip() for ln in source.splitlines()]
    assert lines[lines.index("v1 = sin(v0)") + 1] == "del v0"
    after_add = lines[lines.index("v3 = add(v2, v1)") + 1]
    assert after_add == "del v1"  # v2 is an output: never deleted
    assert not any(ln.startswith("del") and "v2" in ln for ln in lines)
    assert not any(ln.startswith("del") and "v4" in ln for ln in lines)


def test_outputs_that_are_constants_are_copied_each_call():
    c = np.arange(3.0)
    (o1, o2, o3), source = _run([], [0], [c, 2.5, Var(0)], np.ones(1))
    assert o1 is not c and np.array_equal(o1, c) and o2 == 2.5
    source, namespace = generate([], [0], [c], name="k")
    fn = compile_source(source, namespace, "k")
    first = fn(np.ones(1))[0]
    first[0] = 99.0
    assert fn(np.ones(1))[0][0] == 0.0 and c[0] == 0.0


def test_no_instruction_program_and_unused_input():
    (out,), source = _run([], [0, 1], [Var(1)], np.ones(2), np.zeros(3))
    np.testing.assert_array_equal(out, np.zeros(3))
    compile(source, "<test>", "exec")


# --- what the trace writes ------------------------------------------------------------------------


def test_an_index_holding_traced_positions_is_an_instruction():
    def f(x):
        return x[tnp.argmax(x, axis=0), [0, 1, 2]]

    jf = tg.jit(f)
    x = np.array([[1.0, 5.0, 0.0], [3.0, 2.0, 4.0]])
    text = jf.lower(x).as_text()
    assert "index(" in text and "getitem(" in text
    for y in (x, -x, x[::-1]):
        np.testing.assert_array_equal(jf(y), y[np.argmax(y, axis=0), [0, 1, 2]])


def test_repeated_traced_positions_accumulate_in_the_backward_pass():
    # the positions repeat in some calls and not in others: each call reads them again
    g = tg.jit(tg.grad(lambda x, i: tnp.sum(x[tnp.argmax(i, axis=1)] * tnp.arange(1.0, 4.0))))
    x = np.arange(4.0)
    for i in (np.eye(4)[[0, 1, 2]], np.eye(4)[[3, 3, 0]], np.eye(4)[[1, 1, 1]]):
        want = np.zeros(4)
        np.add.at(want, np.argmax(i, axis=1), np.arange(1.0, 4.0))
        np.testing.assert_array_equal(g(x, i), want)


def test_a_boolean_mask_gets_a_shape_guard():
    f, calls = (lambda x: tnp.sum(x[x > 0] ** 2)), []
    jf = tg.jit(lambda x: calls.append(1) or f(x))
    x = np.array([1.0, -2.0, 3.0, -4.0])
    assert "shape_is(" in jf.lower(x).as_text()
    for y in (x, -x, x * 2, np.abs(x), -np.abs(x)):
        np.testing.assert_allclose(jf(y), np.sum(y[y > 0] ** 2))
    assert len(calls) == 3  # positives counted 2, 2, 2, 4, 0: three shapes, three programs


def test_slices_and_positions_from_arguments():
    def f(x, n):
        return tnp.sum(x[n:] ** 2) + tnp.sum(x[n] * x[n:n + 2]) + tnp.sum(x[:n])  # (a constant cotangent)

    calls = []
    jf = tg.jit(lambda x, n: calls.append(1) or f(x, n))
    jg = tg.jit(tg.grad(f))
    x = np.arange(6.0)
    for n in (1, 2, 1, 3, -3):
        np.testing.assert_allclose(jf(x, n), f(x, n), rtol=1e-15)
        np.testing.assert_allclose(jg(x, n), tg.grad(f)(x, n), rtol=1e-15)
    assert "shape_is(" in jf.lower(x, 1).as_text()
    assert len(calls) == 3  # one program per length of x[n:] (n = 3 and -3 alike)


@pytest.mark.parametrize("fn", [tnp.nonzero, tnp.flatnonzero, tnp.argwhere, tnp.unique,
                                lambda x: tnp.where(x)])
def test_results_whose_shape_depends_on_values(fn):
    jf = tg.jit(lambda x: fn(x > 0))
    for y in (np.array([1.0, -1.0, 2.0]), np.array([-1.0, -1.0, 2.0]), np.array([3.0, 1.0, 2.0])):
        got, want = jf(y), fn(y > 0)
        for g, w in zip(tg.tree_flatten(got)[0], tg.tree_flatten(want)[0]):
            np.testing.assert_array_equal(g, w)


def test_lists_and_keywords_holding_traced_values():
    def f(x, y):
        return tnp.array([[x[0], y], [x[1] * 2.0, 3.0]]) + tnp.clip(x[:2], y, x[2])

    def loss(x, y):
        return tnp.sum(f(x, y) ** 2)

    jf = tg.jit(f)
    jk = tg.jit(lambda x, y: tnp.clip(x[:2], a_min=y, a_max=x[2]))  # traced keyword arguments
    jg = tg.jit(tg.grad(loss, argnums=(0, 1)))
    for s in (1.0, 2.0):
        x, y = np.array([0.5, 1.5, 1.2]) * s, np.float64(0.7) * s
        np.testing.assert_allclose(jf(x, y), f(x, y), rtol=1e-15)
        np.testing.assert_allclose(jk(x, y), np.clip(x[:2], y, x[2]), rtol=1e-15)
        for g, w in zip(jg(x, y), tg.grad(loss, argnums=(0, 1))(x, y)):
            np.testing.assert_allclose(g, w, rtol=1e-13)


def test_setting_items_at_traced_positions():
    def f(x):
        y = x * 1.0
        y[tnp.argmin(x)] = 0.0
        y[x > 2.0] = -1.0
        return y

    jf = tg.jit(f)
    jg = tg.jit(tg.grad(lambda x: tnp.sum(f(x) * tnp.arange(4.0))))
    for x in (np.array([1.0, 3.0, 0.5, 2.0]), np.array([4.0, 1.0, 3.0, 0.5])):
        np.testing.assert_array_equal(jf(x), f(x))
        np.testing.assert_array_equal(jg(x), tg.grad(lambda x: tnp.sum(f(x) * tnp.arange(4.0)))(x))


def test_python_numbers_stay_python_numbers():
    def f(x, lr, n):
        return x - lr * 0.5 * x, lr * 2, n + 1, x * (n // 2), abs(lr) > 0.2

    jf = tg.jit(f)
    x = np.ones(3, np.float32)
    for lr, n in ((0.1, 3), (0.3, 4)):
        got, want = jf(x, lr, n), f(x, lr, n)
        assert got[0].dtype == np.float32 and got[3].dtype == np.float32  # NumPy's weak Python scalars
        assert [type(v) for v in got[1:3]] == [float, int] and type(got[4]) is bool
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert "python_number(" in jf.lower(x, 0.1, 3).as_text()


# --- in-place updates of dying temporaries --------------------------------------------------------


def test_an_elementwise_result_goes_into_a_temporary_that_dies_there():
    def f(x, y):
        t = tnp.sin(x)  # a temporary of the program
        u = t * 2.0 + y  # t dies in the multiply, its product in the add
        return u * u, x

    jf = tg.jit(f)
    x, y = np.linspace(0.0, 1.0, 5), np.ones(5)
    text = jf.lower(x, y).as_text()
    assert "multiply(v2, 2.0, out=v2)" in text and "out=v0" not in text and "out=v1" not in text
    first = jf(x, y)
    kept = first[0].copy()
    second = jf(x + 1.0, y)
    np.testing.assert_array_equal(first[0], kept)  # a later call writes into memory of its own
    _close(second[0], (np.sin(x + 1.0) * 2.0 + y) ** 2)
    np.testing.assert_array_equal(x, np.linspace(0.0, 1.0, 5))  # (inputs are never written)
    np.testing.assert_array_equal(y, np.ones(5))


def test_no_inplace_into_what_is_read_later_or_into_another_shape_or_dtype():
    def f(x):
        t = tnp.exp(x)
        u = t * 3.0  # t is read again below: u needs memory of its own
        w = tnp.sum(t * u, axis=0)  # (3,) from (2, 3): t * u may reuse u, not the sum
        return w + 1.0, (u > 1.0) * 1.0  # a bool result is not a float's memory

    jf = tg.jit(f)
    x = np.arange(6.0).reshape(2, 3) / 6
    text = jf.lower(x).as_text()
    lines = {ln.split(" = ")[1].split("(")[0]: ln for ln in text.splitlines() if " = " in ln}
    assert "out=" not in lines["exp"] and "out=" not in lines["greater"]
    for _ in range(2):
        got = jf(x)
        t = np.exp(x)
        _close(got[0], np.sum(t * (t * 3.0), axis=0) + 1.0)
        _close(got[1], (t * 3.0 > 1.0) * 1.0)


def test_plan_inplace_on_a_hand_built_program():
    x = np.ones(4)
    values = [x, np.sin(x), np.sin(x) * 2.0, np.sin(x) * 2.0 + x]
    program = [_ins(np.sin, "sin", [Var(0)], [1]),
               _ins(np.multiply, "multiply", [Var(1), 2.0], [2]),
               _ins(np.add, "add", [Var(2), Var(0)], [3])]
    plan = passes.plan_buffers(program, [0], [3], values)
    assert plan.inplace == {1: 1, 2: 2} and plan.out == {}
    plan = passes.plan_buffers(program, [0], [3, 1], values)  # sin's result is returned: it stays
    assert plan.inplace == {2: 2}
