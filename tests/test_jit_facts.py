"""What ``tg.jit`` knows of a primitive is declared with ``defjit`` and keyed
by the primitive: the traced program keeps each call's primitive, and a
user's primitive declaring a fact (a result shaped by values, ``out=``, a
rewrite) is compiled accordingly."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.compile.facts import JIT_FACTS, NO_FACTS, Var, defjit, facts_of
from tapegrad.compile.trace import JitTrace
from tapegrad.core.engine_ops import sum_to
from tapegrad.numpy import wrap


def test_defjit_refuses_a_function_that_is_not_a_primitive():
    with pytest.raises(TypeError, match="not a tapegrad primitive"):
        defjit(np.sin, fresh_out=True)
    with pytest.raises(TypeError, match="not a tapegrad primitive"):
        defjit(lambda x: x, shape_from_values=True)


def test_a_later_defjit_keeps_the_facts_it_does_not_name():
    p = tg.primitive(lambda x: x * 2.0)
    assert facts_of(p.primitive) is NO_FACTS
    defjit(p, fresh_out=True)
    defjit(p, shape_from_values=True)
    facts = JIT_FACTS[p.primitive]
    assert facts.fresh_out and facts.shape_from_values and not facts.shape_from_index
    assert facts.rewrite is None
    defjit(p, fresh_out=False)
    assert not JIT_FACTS[p.primitive].fresh_out and JIT_FACTS[p.primitive].shape_from_values


def test_tapegrads_own_primitives_declare_their_facts():
    assert JIT_FACTS[wrap.matmul.primitive].fresh_out
    assert JIT_FACTS[wrap.getitem.primitive].shape_from_index
    for prim_fn in (wrap.transpose, wrap.reshape_c, wrap.sum, wrap.mean, wrap.astype_float,
                    wrap.logsumexp, wrap.exp, sum_to):
        assert JIT_FACTS[prim_fn.primitive].rewrite is not None, prim_fn
    assert facts_of(None) is NO_FACTS


def test_the_traced_program_keeps_each_calls_primitive():
    with JitTrace() as trace:
        x = trace.input(np.linspace(-1.0, 1.0, 4))
        y = tnp.sin(x) * 2.0
        tnp.argmax(y)  # (no gradient: a NumPy function, no primitive)
    by_name = {ins.name: ins.prim for ins in trace.program}
    assert by_name["sin"] is tnp.sin.primitive
    assert by_name["multiply"] is tnp.multiply.primitive
    assert by_name["argmax"] is None


def _positive(x):
    return x[x > 0]


def test_a_primitive_shaped_by_values_gets_a_shape_guard():
    declared = tg.primitive(_positive, "positive")
    defjit(declared, shape_from_values=True)
    undeclared = tg.primitive(_positive, "positive")
    x = np.linspace(-1.0, 1.0, 10)
    assert "shape_is(" in tg.jit(lambda x: declared(x) + 1.0).lower(x).as_text()
    assert "shape_is(" not in tg.jit(lambda x: undeclared(x) + 1.0).lower(x).as_text()


def test_a_primitive_shaped_by_values_is_traced_again_for_each_shape():
    positive = tg.primitive(_positive, "positive")
    defjit(positive, shape_from_values=True)
    calls = []
    # large enough that its result gets a buffer of the program's (a fixed shape)
    jf = tg.jit(lambda x: calls.append(1) or positive(x) * 3.0 + 1.0)
    rng = np.random.default_rng(0)
    x = np.abs(rng.standard_normal(200_000)) + 0.1
    for y in (x, -x, x, np.where(np.arange(x.size) % 2 == 0, x, -x), x):
        np.testing.assert_array_equal(jf(y), y[y > 0] * 3.0 + 1.0)
    assert len(calls) == 3  # all, none, half of the entries positive: three shapes


def _doubled(x, out=None):
    return np.multiply(x, 2.0, out=out)


def test_a_primitive_declared_fresh_out_writes_into_the_programs_buffers():
    doubled = tg.primitive(_doubled, "doubled")
    tg.defvjp(doubled, lambda ans, x: lambda g: g * 2.0)
    plain = tg.primitive(_doubled, "doubled")
    tg.defvjp(plain, lambda ans, x: lambda g: g * 2.0)
    defjit(doubled, fresh_out=True)
    x = np.linspace(-1.0, 1.0, 256 * 512).reshape(256, 512)  # (1 MiB: a buffer's size)

    def f(p):
        return lambda x: tnp.sin(p(x))

    assert "doubled(v0, out=b" in tg.jit(f(doubled)).lower(x).as_text()
    assert "out=" not in tg.jit(f(plain)).lower(x).as_text()
    jf, jg = tg.jit(f(doubled)), tg.jit(tg.grad(lambda x: tnp.sum(f(doubled)(x))))
    for y in (x, x * 3.0, x):
        np.testing.assert_array_equal(jf(y), np.sin(2.0 * y))
        np.testing.assert_allclose(jg(y), 2.0 * np.cos(2.0 * y), rtol=1e-15)


def test_a_users_rewrite_registered_by_primitive():
    def copy(x):
        return x.copy()

    kept = tg.primitive(copy, "copy_kept")
    dropped = tg.primitive(copy, "copy_dropped")
    rewritten = []

    def drop(rw, ins):  # copy(x) read by other instructions is x itself
        rewritten.append(ins.prim)
        return ins.args[0] if type(ins.args[0]) is Var else None

    defjit(dropped, rewrite=drop)
    x = np.linspace(-1.0, 1.0, 5)
    assert "copy_kept(" in tg.jit(lambda x: tnp.sin(kept(x))).lower(x).as_text()
    jf = tg.jit(lambda x: tnp.sin(dropped(x)))
    assert "copy_dropped(" not in jf.lower(x).as_text()
    assert rewritten and all(p is dropped.primitive for p in rewritten)
    np.testing.assert_array_equal(jf(x), np.sin(x))
