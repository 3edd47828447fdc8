"""Rules written for one cotangent (or tangent) at a time (SPEC sections 3 and 5).

A user primitive whose rules were not declared ``batched=True`` gets one
cotangent of the output's shape per call, also under ``jacrev``, ``jacfwd``,
``hessian`` and a batched ``vjp_fn``: tapegrad calls the rule once per batch
element and stacks the results. A primitive declared ``batched=True`` (all of
tapegrad's own) takes the whole batch in one call.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

# --- the primitives under test -------------------------------------------------------------

# Each rule records the shapes it is called with, so the tests can tell how
# the engine called it; each is written for one cotangent or tangent of
# exactly the output's (or the argument's) shape, and is wrong or raises
# when given extra leading axes.
CALLS: dict[str, list[tuple[int, ...]]] = {}


def _seen(name: str, g):  # noqa: ANN001, ANN202
    CALLS.setdefault(name, []).append(tuple(np.shape(tg.value(g))))
    return g


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


@tg.primitive
def lse(x):  # noqa: ANN001, ANN201
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


# the example of the defect: g is assumed a scalar, so a batch of them broadcasts wrongly
tg.defvjp(lse, lambda ans, x: lambda g: _seen("lse", g) * tnp.exp(x - ans))


@tg.primitive
def vecmat(x, w):  # noqa: ANN001, ANN201
    """x (n,) @ w (n, k) -> (k,); VJP rules only."""
    return x @ w


tg.defvjp(vecmat,
          lambda ans, x, w: lambda g: tnp.dot(w, _seen("vecmat", g)),  # (n,k)@(m,k) raises
          lambda ans, x, w: lambda g: tnp.outer(x, _seen("vecmat", g)))  # outer flattens a batch


@tg.primitive
def cube_sum(x, y):  # noqa: ANN001, ANN201
    """sum(x**3) * y with scalar y; JVP rules only."""
    return np.sum(x ** 3) * y


tg.defjvp(cube_sum,
          lambda ans, x, y: lambda t: tnp.dot(3 * x ** 2, _seen("cube_sum", t)) * y,  # dot sums a batch away
          lambda ans, x, y: lambda t: tnp.sum(x ** 3) * _seen("cube_sum", t))


@tg.primitive
def quad(x, a):  # noqa: ANN001, ANN201
    """x @ a @ x (a scalar) with both kinds of rules."""
    return x @ a @ x


tg.defvjp(quad,
          lambda ans, x, a: lambda g: _seen("quad_vjp", g) * ((a + a.T) @ x),
          lambda ans, x, a: lambda g: _seen("quad_vjp", g) * tnp.outer(x, x))
tg.defjvp(quad,
          lambda ans, x, a: lambda t: tnp.dot(_seen("quad_jvp", t), (a + a.T) @ x),
          lambda ans, x, a: lambda t: tnp.sum(_seen("quad_jvp", t) * tnp.outer(x, x)))


@tg.primitive
def outer_self(x):  # noqa: ANN001, ANN201
    """x (n,) -> outer(x, x) (n, n): a matrix-valued output."""
    return np.outer(x, x)


tg.defvjp(outer_self, lambda ans, x: lambda g: (_seen("outer_self", g) + g.T) @ x)  # .T reverses a batch too


@tg.primitive
def lse_batched(x):  # noqa: ANN001, ANN201
    m = np.max(x, axis=-1)
    return m + np.log(np.sum(np.exp(x - m[..., None]), axis=-1))


def _lse_batched_vjp(ans, x):  # noqa: ANN001, ANN202
    return lambda g: _seen("lse_batched", g)[..., None] * tnp.exp(x - ans[..., None])


def _lse_batched_jvp(ans, x):  # noqa: ANN001, ANN202
    s = tnp.exp(x - ans[..., None])
    return lambda t: tnp.sum(_seen("lse_batched_jvp", t) * s, axis=-1)


tg.defvjp(lse_batched, _lse_batched_vjp, batched=True)
tg.defjvp(lse_batched, _lse_batched_jvp, batched=True)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


X4 = np.array([0.3, -1.2, 2.0, 0.7])


def _lse_hessian(x: np.ndarray) -> np.ndarray:
    s = _softmax(x)
    return np.diag(s) - np.outer(s, s)


# --- declaring batch axes ------------------------------------------------------------------


def test_user_primitives_are_not_batched_by_default() -> None:
    prim = lse.primitive  # type: ignore[attr-defined]
    assert not prim.vjps_batched and not prim.jvps_batched
    assert lse_batched.primitive.vjps_batched and lse_batched.primitive.jvps_batched  # type: ignore[attr-defined]


def test_batched_keyword_is_kept_until_changed() -> None:
    @tg.primitive
    def twice(x):  # noqa: ANN001, ANN201
        return 2 * x

    prim = twice.primitive  # type: ignore[attr-defined]
    tg.defvjp(twice, lambda ans, x: lambda g: 2 * g, batched=True)
    assert prim.vjps_batched and not prim.jvps_batched
    tg.defvjp(twice, lambda ans, x: lambda g: 2 * g)  # no ``batched``: the declaration stays
    assert prim.vjps_batched
    tg.defjvp(twice, lambda ans, x: lambda t: 2 * t, batched=True)
    assert prim.jvps_batched
    tg.defvjp(twice, lambda ans, x: lambda g: 2 * g, batched=False)
    assert not prim.vjps_batched and prim.jvps_batched
    from tapegrad.core.primitive import defjvp_argnum, defvjp_argnum

    defvjp_argnum(twice, lambda i, ans, x: lambda g: 2 * g, batched=True)
    defjvp_argnum(twice, lambda i, ans, x: lambda t: 2 * t, batched=False)
    assert prim.vjps_batched and not prim.jvps_batched


_BUILTINS_SCRIPT = textwrap.dedent("""
    import sys
    import tapegrad as tg
    import tapegrad.numpy, tapegrad.numpy.linalg, tapegrad.numpy.fft
    import tapegrad.scipy.special, tapegrad.torch
    from tapegrad.core.primitive import REGISTRY
    assert len(REGISTRY) > 50, len(REGISTRY)
    # (tapegrad.scipy's convolve and solve_banded, and tg.fixed_point, declare rules
    # of one cotangent at a time: the engine maps them over a batch, as it maps a user's)
    one_at_a_time = {"convolve", "solve_banded", "fixed_point"}
    bad = [p.name for p in REGISTRY if not (p.vjps_batched and p.jvps_batched)]
    assert set(bad) <= one_at_a_time, bad
    print(len(REGISTRY))
""")


def test_every_builtin_primitive_is_batched() -> None:
    # a fresh interpreter: this process's REGISTRY holds the tests' own primitives too
    out = subprocess.run([sys.executable, "-c", _BUILTINS_SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


_LAZY_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tapegrad as tg
    assert "tapegrad.scipy.special" not in sys.modules
    mine = tg.primitive(np.sin)
    import tapegrad.scipy.special  # lazily imported: marks its own primitives only
    assert not mine.primitive.vjps_batched and not mine.primitive.jvps_batched
    assert tapegrad.scipy.special.erf.primitive.vjps_batched
""")


def test_a_lazily_imported_module_does_not_mark_user_primitives() -> None:
    out = subprocess.run([sys.executable, "-c", _LAZY_SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# --- the defect's example ------------------------------------------------------------------


def test_lse_grad_calls_the_rule_once_with_a_scalar() -> None:
    np.testing.assert_allclose(tg.grad(lse)(X4), _softmax(X4))
    assert CALLS["lse"] == [()]


def test_lse_jacrev() -> None:
    np.testing.assert_allclose(tg.jacrev(lse)(X4), _softmax(X4))
    assert CALLS["lse"] == [()]  # a batch of one cotangent, sliced


def test_lse_jacfwd() -> None:
    # no JVP rule: forward mode transposes the VJP rule, one tangent at a time
    np.testing.assert_allclose(tg.jacfwd(lse)(X4), _softmax(X4))
    assert set(CALLS["lse"]) == {()}


def test_lse_hessian() -> None:
    np.testing.assert_allclose(tg.hessian(lse)(X4), _lse_hessian(X4), atol=1e-12)
    assert set(CALLS["lse"]) == {()}


def test_lse_reverse_over_forward_and_reverse_over_reverse() -> None:
    np.testing.assert_allclose(tg.jacrev(tg.jacfwd(lse))(X4), _lse_hessian(X4), atol=1e-12)
    np.testing.assert_allclose(tg.jacrev(tg.jacrev(lse))(X4), _lse_hessian(X4), atol=1e-12)
    np.testing.assert_allclose(tg.jacfwd(tg.jacfwd(lse))(X4), _lse_hessian(X4), atol=1e-12)


def test_lse_inside_a_vector_function() -> None:
    # the batch reaches lse through other (batched) primitives
    def f(x):  # noqa: ANN001, ANN202
        return tnp.stack([lse(x), lse(2 * x[:3]), tnp.sin(lse(x))])

    s, s3 = _softmax(X4), _softmax(2 * X4[:3])
    want = np.stack([s, 2 * np.append(s3, 0.0), np.cos(lse(X4)) * s])
    np.testing.assert_allclose(tg.jacrev(f)(X4), want, atol=1e-12)
    np.testing.assert_allclose(tg.jacfwd(f)(X4), want, atol=1e-12)


def test_lse_check_grads() -> None:
    tg.check_grads(lse, (X4,), modes=("rev", "fwd"), order=2)


# --- two arguments, VJP rules only ---------------------------------------------------------


def _vecmat_args() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal(3), rng.standard_normal((3, 2))


def test_two_argument_vjp_only_jacobians() -> None:
    x, w = _vecmat_args()
    want_x = w.T  # d(x @ w)/dx: (2, 3)
    want_w = np.einsum("kj,i->kij", np.eye(2), x)  # d(x @ w)_k / dw_ij = x_i [j == k]
    for jac in (tg.jacrev, tg.jacfwd):
        jx, jw = jac(vecmat, argnums=(0, 1))(x, w)
        np.testing.assert_allclose(jx, want_x, atol=1e-12)
        np.testing.assert_allclose(jw, want_w, atol=1e-12)
    assert set(CALLS["vecmat"]) == {(2,)}


def test_two_argument_vjp_only_hessian() -> None:
    x, w = _vecmat_args()

    def f(x):  # noqa: ANN001, ANN202
        return tnp.sum(tnp.sin(vecmat(x, w)))

    want = -(w * np.sin(x @ w)) @ w.T  # sum_k -sin(z_k) w_ik w_jk
    np.testing.assert_allclose(tg.hessian(f)(x), want, atol=1e-12)


def test_two_argument_vjp_only_batched_vjp_fn() -> None:
    x, w = _vecmat_args()
    _, fn = tg.vjp(vecmat, x, w)
    cts = np.arange(12.0).reshape(2, 3, 2)  # two leading batch axes
    gx, gw = fn.batched(cts, (2, 3))
    assert gx.shape == (2, 3, 3) and gw.shape == (2, 3, 3, 2)
    for i in range(2):
        for j in range(3):
            ex, ew = fn(cts[i, j])
            np.testing.assert_allclose(gx[i, j], ex)
            np.testing.assert_allclose(gw[i, j], ew)
    empty = fn.batched(np.zeros((0, 2)), (0,))
    assert empty[0].shape == (0, 3) and empty[1].shape == (0, 3, 2)


def test_two_argument_vjp_only_check_grads() -> None:
    tg.check_grads(vecmat, _vecmat_args(), modes=("rev", "fwd"), order=2)


# --- JVP rules only ------------------------------------------------------------------------


def test_jvp_only_jacfwd() -> None:
    x, y = np.array([0.5, -1.0, 2.0]), np.array(1.5)
    jx, jy = tg.jacfwd(cube_sum, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, 3 * x ** 2 * y)
    np.testing.assert_allclose(jy, np.sum(x ** 3))
    assert set(CALLS["cube_sum"]) == {(3,), ()}  # one tangent at a time


def test_jvp_only_second_order_forward() -> None:
    x, y = np.array([0.5, -1.0, 2.0]), np.array(1.5)
    h = tg.jacfwd(tg.jacfwd(cube_sum))(x, y)
    np.testing.assert_allclose(h, np.diag(6 * x * y))


def test_jvp_only_check_grads() -> None:
    tg.check_grads(cube_sum, (np.array([0.5, -1.0, 2.0]), np.array(1.5)), modes=("fwd",), order=2)


# --- both kinds of rules -------------------------------------------------------------------


def _quad_args() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.standard_normal(3), rng.standard_normal((3, 3))


def test_both_rules_each_mode_uses_its_own() -> None:
    x, a = _quad_args()
    np.testing.assert_allclose(tg.jacrev(quad)(x, a), (a + a.T) @ x)
    assert "quad_jvp" not in CALLS and CALLS["quad_vjp"] == [()]
    CALLS.clear()
    np.testing.assert_allclose(tg.jacfwd(quad)(x, a), (a + a.T) @ x)
    assert "quad_vjp" not in CALLS and CALLS["quad_jvp"] == [(3,)] * 3
    CALLS.clear()
    np.testing.assert_allclose(tg.jacfwd(quad, argnums=1)(x, a), np.outer(x, x))


def test_both_rules_hessian() -> None:
    x, a = _quad_args()
    np.testing.assert_allclose(tg.hessian(quad)(x, a), a + a.T, atol=1e-12)
    np.testing.assert_allclose(tg.hessian(lambda x: tnp.exp(quad(x, a)))(x),
                               np.exp(x @ a @ x) * (np.outer((a + a.T) @ x, (a + a.T) @ x) + a + a.T),
                               rtol=1e-10)


def test_both_rules_check_grads() -> None:
    tg.check_grads(quad, _quad_args(), modes=("rev", "fwd"), order=2)


# --- a matrix-valued output ----------------------------------------------------------------


def test_matrix_output_jacobians() -> None:
    x = np.array([1.0, -2.0, 0.5])
    eye = np.eye(3)
    want = np.einsum("ik,j->ijk", eye, x) + np.einsum("i,jk->ijk", x, eye)  # d(x_i x_j)/dx_k
    np.testing.assert_allclose(tg.jacrev(outer_self)(x), want)
    assert set(CALLS["outer_self"]) == {(3, 3)}
    np.testing.assert_allclose(tg.jacfwd(outer_self)(x), want)
    assert set(CALLS["outer_self"]) == {(3, 3)}


def test_matrix_output_hessian() -> None:
    x = np.array([1.0, -2.0, 0.5])
    m = np.arange(9.0).reshape(3, 3)
    # f = sum(m * outer(x, x)) = x @ m @ x
    np.testing.assert_allclose(tg.hessian(lambda x: tnp.sum(m * outer_self(x)))(x), m + m.T, atol=1e-12)


def test_matrix_output_check_grads() -> None:
    tg.check_grads(outer_self, (np.array([1.0, -2.0, 0.5]),), modes=("rev", "fwd"), order=2)


# --- the explicit tape with a batch of output gradients ------------------------------------


def test_tape_gradient_with_batched_output_gradients() -> None:
    with tg.Tape() as tape:
        x = tape.watch(X4)
        y = lse(x)
    g = tape.gradient(y, x, output_gradients=np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, np.outer([1.0, 2.0], _softmax(X4)))
    assert CALLS["lse"] == [(), ()]


# --- a primitive declared batched takes the batch in one call ------------------------------


def test_batched_primitive_gets_the_whole_batch() -> None:
    x = np.array([[0.3, -1.2, 2.0], [1.0, 0.0, -1.0]])  # two rows, one lse each
    want = np.stack([np.eye(2)[i][:, None] * _softmax(x[i]) for i in range(2)])  # (2 out, 2, 3)
    np.testing.assert_allclose(tg.jacrev(lse_batched)(x), want, atol=1e-12)
    assert CALLS["lse_batched"] == [(2, 2)]  # one call: batch (2,) + output (2,)
    np.testing.assert_allclose(tg.jacfwd(lse_batched)(x), want, atol=1e-12)
    assert CALLS["lse_batched_jvp"] == [(6, 2, 3)]  # one call: batch (6,) + input (2, 3)


def test_batched_primitive_hessian_and_check_grads() -> None:
    np.testing.assert_allclose(tg.hessian(lse_batched)(X4), _lse_hessian(X4), atol=1e-12)
    tg.check_grads(lse_batched, (X4,), modes=("rev", "fwd"), order=2)
