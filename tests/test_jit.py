"""``tg.jit`` (SPEC section 8): caching, static arguments, guards, ownership of
results and inputs, pytrees, scalars and dtypes, constants, methods, the
generated source, errors. (With the other transforms: test_jit_transforms.py.)"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from jithelp import close as _close
from jithelp import counted as _counted
from jithelp import rng as _rng

import tapegrad as tg
import tapegrad.core.level
import tapegrad.numpy as tnp
from tapegrad.compile.jit import MAX_VARIANTS

# --- caching ---------------------------------------------------------------------------------


def test_same_signature_runs_the_compiled_program():
    f, calls = _counted(lambda x, y: tnp.sin(x) * y + 1.0)
    jf = tg.jit(f)
    rng = _rng()
    for _ in range(4):
        x, y = rng.standard_normal(5), rng.standard_normal(5)
        _close(jf(x, y), np.sin(x) * y + 1.0)
    assert len(calls) == 1


@pytest.mark.parametrize("change", ["shape", "dtype", "structure", "rank", "python_type"])
def test_a_new_signature_traces_again(change):
    def h(t):
        return tnp.sum(t[0] * 2.0) + tnp.sum(t[-1])

    f, calls = _counted(h)
    jf = tg.jit(f)
    x = np.arange(3.0)
    first = (x, x)
    other = {"shape": (np.arange(4.0), x), "dtype": (x.astype(np.float32), x),
             "structure": (x, x, x), "rank": (x[None], x), "python_type": [x, x]}[change]
    jf(first)
    jf(first)
    assert len(calls) == 1
    got = jf(other)
    assert len(calls) == 2
    _close(got, h(other))
    _close(jf(first), h(first))  # the first program is still cached
    jf(other)
    assert len(calls) == 2


def test_python_scalars_are_keyed_by_type_not_value():
    f, calls = _counted(lambda x, a: x * a)
    jf = tg.jit(f)
    x = np.arange(3.0)
    _close(jf(x, 2.0), x * 2.0)
    _close(jf(x, 3.5), x * 3.5)  # another float: the same program
    assert len(calls) == 1
    _close(jf(x, 2), x * 2)  # an int: a new signature
    assert len(calls) == 2


def test_keyword_arguments_are_traced_too():
    f, calls = _counted(lambda x, *, scale: x * scale)
    jf = tg.jit(f)
    x = np.arange(3.0)
    _close(jf(x, scale=np.float64(2.0)), x * 2.0)
    _close(jf(x, scale=np.float64(5.0)), x * 5.0)
    assert len(calls) == 1


# --- static arguments ------------------------------------------------------------------------


def test_static_argnums_are_passed_as_they_are_and_keyed_by_value():
    seen = []

    def f(x, n, mode):
        seen.append((type(n), mode))
        out = x
        for _ in range(n):  # a Python loop bound: needs a plain int
            out = tnp.sin(out)
        return out * 2.0 if mode == "double" else out

    jf = tg.jit(f, static_argnums=(1, -1))
    x = np.linspace(-1, 1, 4)
    _close(jf(x, 3, "double"), np.sin(np.sin(np.sin(x))) * 2.0)
    _close(jf(x + 1, 3, "double"), np.sin(np.sin(np.sin(x + 1))) * 2.0)
    assert seen == [(int, "double")]
    _close(jf(x, 2, "double"), np.sin(np.sin(x)) * 2.0)
    _close(jf(x, 2, "plain"), np.sin(np.sin(x)))
    assert len(seen) == 3


def test_equal_static_values_of_other_types_are_other_signatures():
    jf = tg.jit(lambda x, k: x * k if type(k) is float else x + k, static_argnums=1)
    x = np.ones(2)
    _close(jf(x, 2.0), x * 2.0)
    _close(jf(x, 2), x + 2)
    _close(jf(x, True), x + True)


def test_static_argnums_int_and_negative():
    f, calls = _counted(lambda x, k: x ** k)
    for nums in (1, -1, (1,)):
        jf = tg.jit(f, static_argnums=nums)
        _close(jf(np.arange(3.0), 2), np.arange(3.0) ** 2)
        _close(jf(np.arange(3.0), 3), np.arange(3.0) ** 3)
    assert len(calls) == 4  # (1 and (1,) are the same options: the third shares the first's programs)


def test_static_argnames():
    seen = []

    def f(x, *, axis, keep=False):
        seen.append(axis)
        return tnp.sum(x, axis=axis, keepdims=keep)

    jf = tg.jit(f, static_argnames=("axis", "keep"))
    x = np.arange(6.0).reshape(2, 3)
    _close(jf(x, axis=0), x.sum(0))
    _close(jf(x * 2, axis=0), (x * 2).sum(0))
    _close(jf(x, axis=1, keep=True), x.sum(1, keepdims=True))
    assert seen == [0, 1]
    jg = tg.jit(f, static_argnames="axis")  # one name as a string
    _close(jg(x, axis=-1), x.sum(-1))


def test_unhashable_static_argument_is_a_type_error():
    jf = tg.jit(lambda x, axes: tnp.sum(x, axis=tuple(axes)), static_argnums=1)
    with pytest.raises(TypeError, match="static arguments must be hashable"):
        jf(np.ones((2, 2)), [0, 1])
    jg = tg.jit(lambda x, axes=(0,): x, static_argnames="axes")
    with pytest.raises(TypeError, match="hashable"):
        jg(np.ones(2), axes=[0])


# --- guards: Python control flow on values -----------------------------------------------------


def test_if_on_a_value_is_a_guard_and_the_other_path_is_compiled_too():
    def f(x):
        if tnp.sum(x) > 0:
            return x * 2.0
        return tnp.sin(x)

    f, calls = _counted(f)
    jf = tg.jit(f)
    pos, neg = np.arange(1.0, 4.0), -np.arange(1.0, 4.0)
    _close(jf(pos), pos * 2.0)
    _close(jf(neg), np.sin(neg))  # the guard fails: the other path is traced
    assert len(calls) == 2
    for _ in range(3):  # both paths are compiled now
        _close(jf(pos + 1), (pos + 1) * 2.0)
        _close(jf(neg - 1), np.sin(neg - 1))
    assert len(calls) == 2


def test_while_loop_on_a_value():
    def newton_sqrt(a):
        y = a
        while tnp.max(tnp.abs(y * y - a)) > 1e-12:
            y = 0.5 * (y + a / y)
        return y

    f, calls = _counted(newton_sqrt)
    jf = tg.jit(f)
    a = np.array([2.0, 3.0, 5.0])
    for b in (a, a + 1e-3, a * 1.0001, a, np.array([400.0, 3.0, 5.0]), a + 1e-3):
        _close(jf(b), newton_sqrt(b), rtol=1e-12, atol=0)
    # nearby values take as many iterations (one program); 400 takes more (another)
    assert len(calls) == 2


def test_bool_of_a_traced_value_and_comparisons_of_shapes():
    def f(x):
        out = x
        if bool(tnp.all(x > 0)):
            out = tnp.log(x)
        if x.shape[0] > 2:  # static: no guard
            out = out + 1.0
        return out

    jf = tg.jit(f)
    x = np.array([1.0, 2.0, 3.0])
    _close(jf(x), np.log(x) + 1.0)
    _close(jf(-x), -x + 1.0)
    _close(jf(x[:2]), np.log(x[:2]))
    assert "_fail" in jf.lower(x).as_text()


def test_after_max_variants_it_warns_once_and_runs_eagerly():
    def f(x):
        k = 0
        while x[k] < 0:  # one path per position of the first non-negative entry
            k += 1
        return x * k

    f, calls = _counted(f)
    jf = tg.jit(f)
    n = MAX_VARIANTS + 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(n):
            x = np.ones(n)
            x[:k] = -1.0
            _close(jf(x), x * k)
        (variants,) = jf.cache.values()
        assert len(variants) == MAX_VARIANTS
        for v in variants:  # the fallback tries none of them (each would run up to its failing guard)
            v.fn = _never_called
        x = np.ones(n)
        x[:3] = -1.0
        _close(jf(x), x * 3)  # a path compiled before: eager too, at once
    msgs = [str(w.message) for w in caught if "variants" in str(w.message)]
    assert len(msgs) == 1 and f"{MAX_VARIANTS} compiled variants" in msgs[0]
    assert len(calls) == n + 1  # 8 traces, then eager calls
    assert MAX_VARIANTS == 8


def _never_called(*args):
    raise AssertionError("a compiled variant ran after its signature went eager")


def test_other_signatures_still_compile_after_one_went_eager():
    def f(x):
        k = 0
        while x[k] < 0:
            k += 1
        return x * k

    f, calls = _counted(f)
    jf = tg.jit(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(MAX_VARIANTS + 1):
            x = -np.ones(MAX_VARIANTS + 2)
            x[k:] = 1.0
            _close(jf(x), x * k)
    before = len(calls)
    y = np.ones(3)  # another shape: its own signature, traced once, then compiled
    for _ in range(3):
        _close(jf(y), y * 0)
    assert len(calls) == before + 1 and len(jf.cache) == 2


def test_float_and_int_of_a_traced_value_raise_type_error():
    x = np.arange(3.0)
    for conv in (float, int, complex, lambda v: v.item(), lambda v: range(v),
                 lambda v: np.asarray(v), lambda v: v.tolist()):
        with pytest.raises(TypeError, match="tapegrad"):
            tg.jit(lambda v, conv=conv: conv(tnp.sum(v)))(x)
    assert not tapegrad.core.level.entered()  # the failed traces left nothing behind
    _close(tg.jit(lambda v: tnp.sum(v) * 2)(x), np.float64(6.0))


def test_side_effects_happen_when_tracing_only():
    log = []

    def f(x):
        log.append(x.shape)
        print("tracing", x.shape)
        return x + 1.0

    jf = tg.jit(f)
    for _ in range(3):
        jf(np.zeros(2))
    assert log == [(2,)]
    jf(np.zeros(3))
    assert log == [(2,), (3,)]


# --- ownership: results and inputs -------------------------------------------------------------


def test_returned_arrays_belong_to_the_caller():
    W = _rng().standard_normal((4, 4))

    def f(x):
        h = tnp.tanh(x @ W)
        return h, tnp.sum(h * h), x * 2.0, W  # W: a constant output

    jf = tg.jit(f)
    x1, x2 = _rng(1).standard_normal(4), _rng(2).standard_normal(4)
    want1, want2 = f(x1), f(x2)
    first = jf(x1)
    kept = [np.array(a, copy=True) for a in first]
    second = jf(x2)
    for a, k in zip(first, kept):  # a later call changed nothing the first returned
        np.testing.assert_array_equal(a, k)
    _close(second, want2)
    for k in (0, 2):  # mutate what came back; the next calls are unaffected
        second[k][...] = 1e6
    second[3][...] = 0.0  # the constant too (a copy)
    np.testing.assert_array_equal(W, want1[3])
    _close(jf(x1), want1)
    _close(jf(x2), want2)
    third, fourth = jf(x2), jf(x2)
    assert not any(np.shares_memory(a, b) for a in third for b in fourth if isinstance(a, np.ndarray))


def test_results_of_grad_are_not_overwritten_by_later_calls():
    loss = lambda w, x: tnp.sum(tnp.tanh(x @ w) ** 2)  # noqa: E731
    step = tg.jit(tg.value_and_grad(loss))
    rng = _rng()
    w, xs = rng.standard_normal((3, 2)), [rng.standard_normal((5, 3)) for _ in range(4)]
    outs = [step(w, x) for x in xs]
    for (v, g), x in zip(outs, xs):
        _close((v, g), tg.value_and_grad(loss)(w, x))


def test_inputs_are_never_modified():
    def f(x, d):  # in-place updates of traced values are functional: the caller's arrays stay
        x[0] = 100.0
        x += d["b"]
        z = d["a"]
        z *= 2.0
        z[1:] = tnp.sin(x[1:])
        return x, z

    def want(x, d):
        x, a = x.copy(), d["a"].copy()
        x[0] = 100.0
        x += d["b"]
        a *= 2.0
        a[1:] = np.sin(x[1:])
        return x, a

    jf = tg.jit(f)
    g = tg.jit(tg.grad(lambda x, d: tnp.sum(f(x, d)[0] * f(x, d)[1]), argnums=(0, 1)))
    rng = _rng()
    for _ in range(3):
        x, d = rng.standard_normal(3), {"a": rng.standard_normal(3), "b": rng.standard_normal(3)}
        copies = (x.copy(), {k: v.copy() for k, v in d.items()})
        _close(jf(x, d), want(x, d))
        np.testing.assert_array_equal(x, copies[0])
        _close(g(x, d), tg.grad(lambda x, d: tnp.sum(f(x, d)[0] * f(x, d)[1]), argnums=(0, 1))(x, d))
        np.testing.assert_array_equal(x, copies[0])
        for k in d:
            np.testing.assert_array_equal(d[k], copies[1][k])


def test_outputs_that_are_inputs_or_constants():
    c = np.arange(3.0)
    jf = tg.jit(lambda x, y: (x, c, 2.5, "s", None, y.shape, x.dtype))
    x, y = np.ones(2), np.zeros((2, 3))
    for _ in range(2):
        out = jf(x, y)
        np.testing.assert_array_equal(out[0], x)
        np.testing.assert_array_equal(out[1], c)
        assert out[2:] == (2.5, "s", None, (2, 3), np.dtype(np.float64))
    out[1][0] = 99.0
    assert c[0] == 0.0
    np.testing.assert_array_equal(jf(x, y)[1], np.arange(3.0))


# --- pytrees, scalars, dtypes ------------------------------------------------------------------


def test_pytree_inputs_and_outputs():
    def f(params, batch):
        w, b = params["w"], params["b"]
        out = batch[0] @ w + b
        return {"out": out, "aux": (tnp.sum(out), None), "list": [w.T, batch[1]]}

    jf = tg.jit(f)
    rng = _rng()
    params = {"w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    for _ in range(2):
        batch = (rng.standard_normal((4, 3)), rng.standard_normal(4))
        got = jf(params, batch)
        _close(got, f(params, batch))
        assert got["aux"][1] is None and isinstance(got["list"], list)


def test_none_and_namedtuple_inputs():
    from collections import namedtuple

    P = namedtuple("P", "a b")
    jf = tg.jit(lambda p, nothing: P(p.a * 2.0, p.b if nothing is None else None))
    p = P(np.arange(2.0), np.ones(3))
    got = jf(p, None)
    assert type(got) is P
    _close(got, P(np.arange(2.0) * 2.0, np.ones(3)))


def test_python_scalar_inputs():
    f, calls = _counted(lambda x, a, n, flag: x * a + n if flag else x - a)
    jf = tg.jit(f)
    x = np.arange(3.0)
    _close(jf(x, 2.0, 3, True), x * 2.0 + 3)
    _close(jf(x, 0.5, 7, True), x * 0.5 + 7)
    _close(jf(x, 0.5, 7, False), x - 0.5)  # bool(flag) is a guard
    assert len(calls) == 2
    got = tg.jit(lambda a: a * 2.0)(3.0)
    assert np.result_type(got) == np.float64 and got == 6.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_dtypes_are_kept(dtype):
    rng = _rng()
    w = rng.standard_normal((3, 3)).astype(dtype)
    x = rng.standard_normal(3).astype(dtype)
    f = lambda w, x: tnp.sum(tnp.abs(tnp.tanh(w @ x)) ** 2)  # noqa: E731
    v, g = tg.jit(tg.value_and_grad(f, argnums=(0, 1)))(w, x)
    v0, g0 = tg.value_and_grad(f, argnums=(0, 1))(w, x)
    assert np.result_type(v) == np.result_type(v0)
    assert [a.dtype for a in g] == [dtype, dtype]
    tol = 1e-5 if dtype != np.float64 else 1e-12
    _close((v, g), (v0, g0), rtol=tol, atol=tol)


def test_integer_and_bool_inputs():
    jf = tg.jit(lambda x, i, m: tnp.where(m, x[i], 0.0))
    x = np.arange(5.0)
    for i in (np.array([0, 3]), np.array([4, 4])):
        for m in (np.array([True, False]), np.array([False, True])):
            _close(jf(x, i, m), np.where(m, x[i], 0.0))


def test_a_constant_indexed_at_traced_positions():
    W = np.arange(12.0).reshape(3, 4)

    def f(x):
        i = tnp.argmax(x)  # a traced position under jit (a plain one eagerly)
        return tnp.take(W, i, axis=0) * x[i] + tnp.sum(tnp.take(W, tnp.argsort(x)))

    jf, jg = tg.jit(f), tg.jit(tg.grad(lambda x: tnp.sum(f(x))))
    for x in (np.array([0.1, 3.0, 0.2]), np.array([2.0, -1.0, 0.5])):
        _close(jf(x), f(x))
        _close(jg(x), tg.grad(lambda x: tnp.sum(f(x)))(x))
    with pytest.raises(TypeError, match="tapegrad"):  # a plain NumPy array cannot hold a trace
        tg.jit(lambda x: W[tnp.argmax(x)])(np.ones(3))


def test_constants_are_the_values_they_had_when_traced():
    W = np.ones(2)
    jf = tg.jit(lambda x: (x * W + W * 2.0, W))  # (x * W in the program; W * 2.0 folded when traced)
    x = np.ones(2)
    _close(jf(x), (np.full(2, 3.0), np.ones(2)))
    W[:] = 5.0  # as in JAX: the compiled program keeps what it traced
    _close(jf(x), (np.full(2, 3.0), np.ones(2)))
    jf(x)[1][:] = 7.0  # (a copy of the program's own: the next call's is unchanged)
    _close(jf(x), (np.full(2, 3.0), np.ones(2)))
    _close(tg.jit(lambda x: x * W + W * 2.0)(x), np.full(2, 15.0))  # a new jit traces anew
    np.testing.assert_array_equal(W, np.full(2, 5.0))


def test_random_draws_happen_when_tracing():
    rng = np.random.default_rng(0)
    jf = tg.jit(lambda x: x + rng.standard_normal(3))  # a side effect: its draw is a constant
    a, b = jf(np.zeros(3)), jf(np.zeros(3))
    np.testing.assert_array_equal(a, b)


def test_methods():
    class Model:
        def __init__(self):
            self.w = np.arange(3.0)

        @tg.jit
        def plain(self, x):
            return x * self.w

        @functools.partial(tg.jit, static_argnums=0)
        def scaled(self, x):
            return x * self.w

    m = Model()
    x = np.ones(3)
    _close(m.scaled(x), np.arange(3.0))
    _close(m.scaled(x * 2), np.arange(3.0) * 2)
    with pytest.raises(TypeError, match=r"argument 0 holds a Model.*static_argnums=\(0,\)"):
        m.plain(x)
    _close(Model.scaled(m, x), np.arange(3.0))


def test_jit_as_a_decorator_keeps_the_name():
    @tg.jit
    def my_step(x):
        """Doc."""
        return x + 1.0

    assert my_step.__name__ == "my_step" and my_step.__doc__ == "Doc."


# --- the generated source ------------------------------------------------------------------------


def test_lower_as_text_is_readable_source_with_one_line_per_op():
    def f(x, w):
        return tnp.sum(tnp.tanh(x @ w))

    jf = tg.jit(f)
    x, w = np.ones((2, 3)), np.ones((3, 4))
    text = jf.lower(x, w).as_text()
    lines = [ln.strip() for ln in text.strip().splitlines()]
    assert lines[0].startswith("def jit_f(") and lines[-1].startswith("return")
    # (a line fetching the program's own buffers, then one line per op, then dels)
    ops = [ln for ln in lines[1:-1] if not ln.startswith("del ") and "_buffers()" not in ln]
    assert len(ops) == 3, text
    assert [op.split(" = ")[1].split("(")[0] for op in ops] == ["matmul", "tanh", "sum"]
    compile(text, "<lowered>", "exec")
    # the backward pass shows up in the program of a gradient
    gtext = tg.jit(tg.grad(f, argnums=1)).lower(x, w).as_text()
    assert "tanh" in gtext and gtext.count(" = ") > text.count(" = ")
    # lower() caches: the next call with that signature does not trace again
    g, calls = _counted(f)
    jg = tg.jit(g)
    jg.lower(x, w)
    jg(x, w)
    assert len(calls) == 1


def test_a_function_named_like_what_it_calls():
    def sin(x):
        return tnp.sin(x) * 2.0

    def _fail(x):
        return tnp.sum(x) if tnp.sum(x) > 0 else -x

    for _ in range(2):
        _close(tg.jit(sin)(np.ones(2)), 2 * np.sin(np.ones(2)))
        _close(tg.jit(_fail)(np.ones(2)), np.float64(2.0))


def test_lower_shows_guards_and_constants():
    c = np.arange(3.0)
    jf = tg.jit(lambda x: x * c if tnp.sum(x) > 0 else x)
    text = jf.lower(np.ones(3)).as_text()
    assert "_fail(" in text and "c0" in text


# --- errors ---------------------------------------------------------------------------------------


def test_errors():
    with pytest.raises(TypeError, match="expected a function"):
        tg.jit(5)
    with pytest.raises(TypeError, match=r"argument 1 holds a str.*static_argnums=\(1,\)"):
        tg.jit(lambda x, s: x)(np.ones(2), "relu")
    with pytest.raises(TypeError, match=r"argument 'act' holds a function.*static_argnames"):
        tg.jit(lambda x, act: act(x))(np.ones(2), act=tnp.tanh)
    _close(tg.jit(lambda x, act: act(x), static_argnames="act")(np.ones(2), act=tnp.tanh), np.tanh(np.ones(2)))
    # an error of f is f's own, and leaves no trace level behind
    jf = tg.jit(lambda x: x @ np.ones(4))
    with pytest.raises(ValueError):
        jf(np.ones(3))
    assert not tapegrad.core.level.entered()
    _close(jf(np.ones(4)), np.float64(4.0))
    with pytest.raises(ValueError, match="truth value"):
        tg.jit(lambda x: 1.0 if x > 0 else 0.0)(np.ones(3))
    with pytest.raises(TypeError, match="grad"):
        tg.jit(tg.grad(lambda x: x * 2.0))(np.ones(3))  # grad of a non-scalar output


def test_facade_tensors_run_as_written():
    import tapegrad.torch as torch

    got = tg.jit(lambda a: (a * a).sum())(torch.ones(3))
    assert type(got) is torch.Tensor and float(got) == 3.0


def test_calls_alternating_between_compiled_signatures_skip_the_lookup():
    f, calls = _counted(lambda x, s: tnp.sum(x * x) * s)
    jf = tg.jit(f)
    long, short = np.arange(6.0), np.arange(3.0)
    jf(long, 2.0), jf(short, 2.0)  # (an epoch's batches, and its shorter last one)
    lookups = []
    split = jf._split
    jf._split = lambda *a: lookups.append(1) or split(*a)
    for _ in range(3):
        for x in (long, short, short, long):
            _close(jf(x, 3.0), np.sum(x * x) * 3.0)
    assert lookups == [] and len(calls) == 2
    _close(jf(np.arange(4.0), 1.0), 14.0)  # a new signature: looked up, traced
    assert len(lookups) == 1 and len(calls) == 3
