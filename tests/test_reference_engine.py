"""The fast engine against the reference engine (tests/reference_engine.py).

The reference records every op with rules made afresh from the primitive's
makers and replays them naively (no carry, no in-place accumulation, no
consumed residuals, unbroadcasting written out, no scalar-rule cache). Over
the op tables (tests/optable.py, tests/torch_optable.py) and over cases
aimed at each speed trick, the fast engine's values and derivatives must be
the reference's: to 1e-12 in float64 (relative, with an absolute floor
scaled by the largest reference value), to float32 rounding in float32.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from optable import OPS, Case
from reference_engine import (
    output_value,
    pullback,
    reference_grad,
    reference_jvp,
    reference_vjp,
    replayed_values_agree,
    trace,
)

import tapegrad as tg
import tapegrad.numpy as tnp

SEED = 1234
RTOL64, RTOL32 = 1e-12, 2e-5


def _args(case: Case, dtype: type = np.float64) -> list[np.ndarray]:
    """The row's inputs (as tests/test_ops.py draws them), in ``dtype``
    (complex inputs in the complex type of ``dtype``'s precision)."""
    rng = np.random.default_rng(SEED)
    out = []
    for make in case.args:
        a = make(rng)
        out.append(a.astype(np.result_type(a.dtype, dtype) if np.iscomplexobj(a) else dtype))
    return out


def _fn(case: Case) -> Callable[..., Any]:
    return lambda *xs: case.fn(tnp, *xs)


def _like(rng: np.random.Generator, x: Any) -> np.ndarray:
    """Random values of ``x``'s shape and dtype (a cotangent or a tangent)."""
    u = rng.standard_normal(np.shape(x))
    if np.iscomplexobj(x):
        u = u + 1j * rng.standard_normal(np.shape(x))
    return np.asarray(u).astype(np.result_type(x))


def _loss(f: Callable[..., Any], us: list[np.ndarray]) -> Callable[..., Any]:
    """The real scalar ``sum_k sum(real(f(...)_k * u_k))`` over ``f``'s output leaves."""
    def loss(*xs: Any) -> Any:
        total = 0.0
        for o, u in zip(tg.tree_flatten(f(*xs))[0], us):
            total = total + tnp.sum(tnp.real(o * u))
        return total
    return loss


def assert_same(got: Sequence[Any], want: Sequence[Any], rtol: float = RTOL64, what: str = "",
                signs: bool = False) -> None:
    """Each ``got[k]`` equals ``want[k]`` in shape and dtype, and in value to
    ``rtol`` relative, with an absolute floor of ``rtol`` times the largest
    magnitude of ``want[k]`` (and 1); with ``signs``, zeros' signs too."""
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}[{k}]: shape {g.shape}, reference {w.shape}"
        assert g.dtype == w.dtype, f"{what}[{k}]: dtype {g.dtype}, reference {w.dtype}"
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0, where=np.isfinite(w))))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what}[{k}]")
        if signs:
            np.testing.assert_array_equal(np.signbit(g.real), np.signbit(w.real), err_msg=f"{what}[{k}] signs")


def check_against_reference(f: Callable[..., Any], args: Sequence[Any], rtol: float = RTOL64,
                            signs: bool = False, seed: int = 0) -> None:
    """The fast engine's value, ``vjp`` (a replay that keeps its rules) and
    ``grad`` of a scalarised ``f`` (a replay that frees them, so residuals
    may be consumed) against the reference's, all arguments at once."""
    rng = np.random.default_rng(seed)
    nums = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tape, xs, out = trace(f, args)
        assert replayed_values_agree(tape) == [], "a recorded output is not its primitive's value"
        want_out = output_value(tape, out)
        us = [_like(rng, o) for o in tg.tree_flatten(want_out)[0]]
        ct = tg.tree_unflatten(tg.tree_flatten(want_out)[1], us)
        want = pullback(tape, xs, out, ct)
        got_out, vjp_fn = tg.vjp(f, *args)
        got = vjp_fn(ct)
        loss = _loss(f, us)
        got_loss = tg.grad(loss, argnums=nums)(*args)
        want_loss = reference_grad(loss)(*args)
    assert_same(tg.tree_flatten(got_out)[0], tg.tree_flatten(want_out)[0], rtol, "value", signs)
    assert_same(got, want, rtol, "vjp", signs)
    assert_same(got_loss, want_loss, rtol, "grad", signs)


# --- the op table ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_op_table_float64(case: Case) -> None:
    args = _args(case)
    f = _fn(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tape, _, out = trace(f, args)
        plain = f(*args)  # no tracing: the primitives are their NumPy functions
        numpy = case.fn(np, *args)
    traced = tg.tree_flatten(output_value(tape, out))[0]
    for t, p, n in zip(traced, tg.tree_flatten(plain)[0], tg.tree_flatten(numpy)[0]):
        assert_same([t], [p], what="traced value against untraced")
        assert_same([t], [n], what="traced value against NumPy's")
    check_against_reference(f, args)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_op_table_float32(case: Case) -> None:
    check_against_reference(_fn(case), _args(case, np.float32), rtol=RTOL32)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_op_table_forward_mode(case: Case) -> None:
    """tg.jvp (JVP rules, or transposed VJPs) against the reference's forward
    interpreter (each step's Jacobian read off its VJP rules)."""
    args = _args(case)
    f = _fn(case)
    rng = np.random.default_rng(1)
    ts = [_like(rng, a) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_out, want = reference_jvp(f, args, ts)
        got_out, got = tg.jvp(f, tuple(args), tuple(ts))
    assert_same(tg.tree_flatten(got_out)[0], tg.tree_flatten(want_out)[0], what="value")
    assert_same(tg.tree_flatten(got)[0], tg.tree_flatten(want)[0], rtol=1e-12, what="tangent")


def _hvp(grad: Callable[..., Any], f: Callable[..., Any], args: list[np.ndarray],
         us: list[np.ndarray], vs: list[np.ndarray]) -> Any:
    """The gradient of ``sum_k sum(real(g_k * v_k))`` where ``g = grad(loss)``
    (``loss`` = ``f`` weighted by ``us``): a Hessian-vector product."""
    loss = _loss(f, us)

    def inner(*xs: Any) -> Any:
        total = 0.0
        for g, v in zip(grad(loss)(*xs), vs):
            total = total + tnp.sum(tnp.real(g * v))
        return total

    return grad(inner)(*args)


@pytest.mark.parametrize("case", [c for c in OPS if c.order >= 2], ids=lambda c: c.name)
def test_op_table_second_order(case: Case) -> None:
    """grad of grad on the fast engine against the reference differentiating
    its own backward pass (recorded on an outer reference tape)."""
    args = _args(case)
    f = _fn(case)
    rng = np.random.default_rng(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        us = [_like(rng, o) for o in tg.tree_flatten(f(*args))[0]]
        vs = [_like(rng, a) for a in args]
        nums = tuple(range(len(args)))
        got = _hvp(lambda h: tg.grad(h, argnums=nums), f, args, us, vs)
        want = _hvp(reference_grad, f, args, us, vs)
    assert_same(got, want, rtol=1e-12, what="hvp")


# --- the facade's op table ---------------------------------------------------------------------


def _facade_rows() -> list[Any]:
    from torch_optable import ROWS

    return [pytest.param(r, id=r.name) for r in ROWS]


def _facade_fn(row: Any) -> Callable[..., Any]:
    """The row as a function on arrays (traced values boxed as tensors), so
    that the reference records the very ops the facade runs."""
    import tapegrad.torch as tt

    box = tt.Tensor.__tapegrad_box__
    return lambda *xs: row.fn(tt, *[box(x, None) for x in xs]).__tapegrad_value__()


def _facade_arrays(row: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(SEED)
    return [np.asarray(make(rng), dtype=np.float64) for make in row.args]


def _grads_of(xs: Sequence[Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.zeros_like(a) if x is None or x.grad is None else x.grad.numpy(force=True).copy()
            for x, a in zip(xs, arrays)]


@pytest.mark.parametrize("row", _facade_rows())
@pytest.mark.filterwarnings("ignore")
def test_facade_table_backward(row: Any) -> None:
    """``y.backward(u)`` on the facade's graph tape (its own record and its
    own replay of the graph) leaves the reference's cotangents in ``.grad``."""
    import tapegrad.torch as tt

    arrays = _facade_arrays(row)
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    y = row.fn(tt, *xs)
    u = _like(np.random.default_rng(3), y.detach().numpy())
    y.backward(tt.tensor(u))
    want_out, want = reference_vjp(_facade_fn(row), arrays, u)
    assert_same([y.detach().numpy()], [want_out], what="value")
    assert_same(_grads_of(xs, arrays), want, what="grad")


@pytest.mark.parametrize("row", [p for p in _facade_rows() if p.values[0].order >= 2])
@pytest.mark.filterwarnings("ignore")
def test_facade_table_double_backward(row: Any) -> None:
    """``autograd.grad(create_graph=True)`` then ``backward`` through the
    gradient (a replay recorded on the graph tape) against the reference
    differentiating its own backward pass."""
    import tapegrad.torch as tt

    arrays = _facade_arrays(row)
    rng = np.random.default_rng(4)
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    y = row.fn(tt, *xs)
    u = _like(rng, y.detach().numpy())
    vs = [_like(rng, a) for a in arrays]
    gs = tt.autograd.grad((y * tt.tensor(u)).sum(), xs, create_graph=True, allow_unused=True)
    s = sum(((g * tt.tensor(v)).sum() for g, v in zip(gs, vs) if g is not None), start=tt.tensor(0.0))
    if s.requires_grad:
        s.backward()
    got = _grads_of(xs, arrays) if s.requires_grad else [np.zeros_like(a) for a in arrays]
    want = _hvp(reference_grad, _facade_fn(row), arrays, [u], vs)
    assert_same(got, want, what="hvp")


# --- each speed trick, aimed at ------------------------------------------------------------------

_rng = np.random.default_rng(5)
X = _rng.uniform(-1.5, 1.5, (3, 4))
Y = _rng.uniform(-1.5, 1.5, (4,))


def test_a_long_chain() -> None:
    """300 one-parent links: the walk carries one cotangent down the chain."""
    def f(x: Any) -> Any:
        for _ in range(100):
            x = tnp.sin(x) * 1.0001 + 0.01
        return x

    check_against_reference(f, [X])


def test_a_long_chain_with_side_branches() -> None:
    """A chain whose links are also read by later links (the carry parks and
    resumes), ending in a reduction whose rule broadcasts a read-only view."""
    def f(x: Any) -> Any:
        first = x
        for k in range(30):
            x = tnp.tanh(x) + (first * 0.1 if k % 7 == 0 else 0.0)
        return tnp.sum(x, axis=0) + tnp.mean(first)

    check_against_reference(f, [X])


def test_a_value_used_many_times() -> None:
    """Contributions accumulate into the walk's own buffers in place: never
    into a cotangent that an identity rule handed to two parents, nor into a
    read-only broadcast view, nor into a seed."""
    def f(x: Any, y: Any) -> Any:
        a = x + 0.0  # (the rule hands g on as it is)
        b = a + a  # (both parents are a: the same g twice)
        c = b * y + a - y  # (y broadcast: its contributions are summed back)
        total = tnp.sum(c) + tnp.sum(a)  # (a read-only broadcast of the seed)
        for k in range(20):
            total = total + tnp.sum(a * float(k)) + tnp.sum(tnp.sin(x)) * 0.5
        return total, a, x  # (x itself an output: its seed is the caller's array)

    check_against_reference(f, [X, Y])

    def shared(x: Any, y: Any) -> Any:
        p = x * 2.0
        q = tnp.sin(x) + y
        r = p * q
        return r + (p + q)  # (the two adds hand one g to r, p + q, then to p and q: a shared buffer)

    check_against_reference(shared, [X, Y])


def test_the_same_rule_for_the_same_python_float() -> None:
    """An operator with a Python float reuses the rule it made for that float
    (same object or equal, nonzero): in a loop, reflected, across dtypes."""
    def f(x: Any) -> Any:
        for _ in range(5):
            x = x * 1.5
            x = 1.5 * x - 0.25
            x = 2.0 / (x + 3.0) + x / 4.0
        return x

    check_against_reference(f, [X])
    check_against_reference(f, [X.astype(np.float32)], rtol=RTOL32)
    check_against_reference(f, [X * (1 + 0.5j)])
    check_against_reference(f, [X])  # (the cache now holds the rules of all three)


@pytest.mark.parametrize("op", ["mul", "rmul", "div", "add", "sub", "rsub"])
def test_signed_zeros_do_not_share_a_rule(op: str) -> None:
    """0.0 and -0.0 are equal keys whose products differ in sign: the second
    must not get the first's rule (signs of zeros compared exactly)."""
    fns = {"mul": lambda x, s: x * s, "rmul": lambda x, s: s * x, "div": lambda x, s: x / (s + 2.0),
           "add": lambda x, s: (x + s) * s, "sub": lambda x, s: (x - s) * s, "rsub": lambda x, s: (s - x) * s}
    fn = fns[op]
    for s in (0.0, -0.0, 0.0, -0.0):
        check_against_reference(lambda x, s=s: fn(x, s), [np.abs(X)], signs=True)


def test_integer_and_float_scalars_do_not_share_a_rule() -> None:
    def f(x: Any) -> Any:
        return (x * 2.0) * 2 * True + x * np.float64(2.0) + x * 2.0

    check_against_reference(f, [X])
    check_against_reference(f, [X.astype(np.float32)], rtol=RTOL32)


def test_a_consumed_residual() -> None:
    """tanh's rule may write its derivative into tanh's own output when a
    freeing replay (tg.grad) holds the last reference to it: the result is
    the reference's, and nothing that still reads the output sees it change."""
    x = X.copy()

    def chain(x: Any) -> Any:
        return tnp.sum(tnp.tanh(tnp.tanh(tnp.tanh(x))))

    def reread(x: Any) -> Any:
        y = tnp.tanh(x)
        return tnp.sum(y * y) + tnp.sum(tnp.tanh(y))  # (y read by two later ops)

    def view_kept(x: Any) -> Any:
        y = tnp.tanh(x)
        return tnp.sum(tnp.tanh(x)) + tnp.sum(y[0] * 2.0)  # (a view of y's output held by a rule)

    for f in (chain, reread, view_kept):
        check_against_reference(f, [x])
        np.testing.assert_allclose(tg.grad(f)(x), reference_grad(f)(x)[0], rtol=RTOL64, atol=RTOL64)

    def with_aux(x: Any) -> Any:
        y = tnp.tanh(x)
        return tnp.sum(tnp.tanh(y)), y

    g, aux = tg.grad(with_aux, has_aux=True)(x)
    np.testing.assert_array_equal(aux, np.tanh(x))  # (the output handed back was not consumed)
    np.testing.assert_allclose(g, reference_grad(lambda x: with_aux(x)[0])(x)[0], rtol=RTOL64, atol=RTOL64)
    val, g = tg.value_and_grad(lambda x: tnp.tanh(x))(0.3)
    assert val == np.tanh(0.3) and g == reference_grad(tnp.tanh)(0.3)[0]
    np.testing.assert_array_equal(x, X)  # (the input itself untouched)


def test_the_residual_is_consumed_when_nothing_else_holds_it() -> None:
    """The trick above is exercised, not only harmless: tanh's output buffer
    comes back as the gradient (its address), and the value is the reference's."""
    seen: list[int] = []

    def f(x: Any) -> Any:
        y = tnp.tanh(x)
        seen.append(tg.value(y).ctypes.data)
        return tnp.sum(y)

    g = tg.grad(f)(X)
    assert g.ctypes.data == seen[0], "tanh's rule did not reuse its output's buffer"
    np.testing.assert_allclose(g, reference_grad(f)(X)[0], rtol=RTOL64, atol=RTOL64)


@pytest.mark.parametrize("dtypes", [(np.float32, np.float64), (np.float64, np.float32), (np.float16, np.float64),
                                    (np.complex128, np.float64), (np.float32, np.complex64),
                                    (np.float64, np.complex128)], ids=str)
def test_broadcasting_and_promotion(dtypes: tuple[type, type]) -> None:
    """Contributions summed back to their parent's shape and cast to its
    dtype (the real part for a real parent), only where they differ."""
    a: np.ndarray = (X[:, :1] * (1 + 0.5j if np.dtype(dtypes[0]).kind == "c" else 1)).astype(dtypes[0])  # (3, 1)
    b: np.ndarray = (Y * (1 - 0.25j if np.dtype(dtypes[1]).kind == "c" else 1)).astype(dtypes[1])  # (4,)
    ints = np.arange(4)

    def f(a: Any, b: Any) -> Any:
        c = a * b + a - b  # (3, 4), promoted
        d = c * ints + a * 1.5 + tnp.sum(b)  # (an integer array promotes too)
        return d, tnp.real(c * b[None, :]), a[None, None, :, :] + 0.0

    low = min(np.finfo(t).precision for t in dtypes)  # (the least precise input sets the tolerance)
    rtol = 1e-3 if low < 6 else RTOL32 if low < 15 else RTOL64
    check_against_reference(f, [a, b], rtol=rtol)


def test_third_derivative_of_tanh() -> None:
    """grad(grad(grad(tanh))) against the reference differentiating itself thrice."""
    def d(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda x: reference_grad(fn)(x)[0]

    ref3 = d(d(d(tnp.tanh)))
    for x in (0.3, -1.2, 2.0):
        got = tg.grad(tg.grad(tg.grad(tnp.tanh)))(x)
        assert_same([got], [ref3(x)], what="third derivative")


def test_hessian_vector_products_with_speed_tricks_inside() -> None:
    """Second order through a chain, Python-float operands, broadcasting and
    tanh (its consumable residual now a traced value)."""
    def f(x: Any, y: Any) -> Any:
        for _ in range(5):
            x = tnp.tanh(x * 1.5 + y) * 0.5
        return tnp.sum(x * x) + tnp.sum(tnp.sin(y) * 2.0)

    rng = np.random.default_rng(6)
    vs = [rng.standard_normal(X.shape), rng.standard_normal(Y.shape)]
    got = _hvp(lambda h: tg.grad(h, argnums=(0, 1)), f, [X, Y], [np.array(1.0)], vs)
    want = _hvp(reference_grad, f, [X, Y], [np.array(1.0)], vs)
    assert_same(got, want, what="hvp")
    hx = tg.hessian(lambda x: f(x, Y))(X).reshape(X.size, X.size) @ vs[0].ravel()
    want_x = _hvp(reference_grad, lambda x: f(x, Y), [X], [np.array(1.0)], vs[:1])[0]
    assert_same([hx.reshape(X.shape)], [want_x], what="hessian")


def test_the_reference_differs_from_a_wrong_rule() -> None:
    """The comparison is not vacuous: a rule that the fast engine's recording
    makes differently from the reference's (here every other one is off) is caught."""
    calls = {"n": 0}

    @tg.primitive
    def mul2(a: Any, b: Any) -> Any:
        return a * b

    def maker_a(ans: Any, a: Any, b: Any) -> Callable[[Any], Any]:
        calls["n"] += 1
        scale = 1.0 if calls["n"] % 2 == 0 else 1.001  # (every other rule made is off)
        return lambda g: g * b * scale

    tg.defvjp(mul2, maker_a, lambda ans, a, b: lambda g: g * a)
    with pytest.raises(AssertionError):
        for _ in range(2):
            check_against_reference(lambda x, y: mul2(x, y), [X, Y])
