"""odeint differentiates to any order, in reverse and forward mode, under vmap
and jit: each derivative is another odeint of a larger system (the adjoint,
or the forward sensitivities), written with differentiable operations.

Checked against derivatives of closed-form solutions (y' = -k y, y' = A y
through scipy.linalg.expm and its block-matrix derivatives) and against
central differences (float64) on a nonlinear system.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

sla = pytest.importorskip("scipy.linalg")

from tapegrad.scipy.integrate import odeint  # noqa: E402

TIGHT = dict(rtol=1e-11, atol=1e-11)  # the solver's tolerances, for comparisons with closed forms
FD = dict(rtol=1e-4, atol=1e-5, eps=1e-5)  # central differences of solves to TIGHT


def _decay(y, t, k):
    return -k * y


def _lv(y, t, p):  # Lotka-Volterra, with a forcing in t so that the t-derivatives are not trivial
    return tnp.stack([p[0] * y[0] - p[1] * y[0] * y[1] + 0.1 * tnp.sin(t),
                      -p[2] * y[1] + p[3] * y[0] * y[1]])


# --- y' = -k y: every derivative against the exact solution's ------------------------------------

def _decay_solved(theta):
    """y at three times from the solver: theta = [y0, k, t0, t1, t2]."""
    y0, k = theta[0], theta[1]
    return odeint(_decay, y0, theta[2:], k, **TIGHT)


def _decay_exact(theta):
    y0, k = theta[0], theta[1]
    return y0 * tnp.exp(-k * (theta[2:] - theta[2]))


THETA = np.array([1.5, 0.7, 0.2, 0.9, 1.6])


def test_decay_first_and_second_derivatives_in_y0_k_and_every_time() -> None:
    np.testing.assert_allclose(_decay_solved(THETA), _decay_exact(THETA), rtol=1e-9)
    for jac in (tg.jacrev, tg.jacfwd):
        np.testing.assert_allclose(jac(_decay_solved)(THETA), jac(_decay_exact)(THETA), rtol=1e-8, atol=1e-9)
    want = tg.jacrev(tg.jacrev(_decay_exact))(THETA)  # (3 outputs, 5, 5)
    for outer in (tg.jacrev, tg.jacfwd):
        for inner in (tg.jacrev, tg.jacfwd):
            got = outer(inner(_decay_solved))(THETA)
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8,
                                       err_msg=f"{outer.__name__} of {inner.__name__}")


def test_decay_hessian_by_hand() -> None:
    # y(t1) = y0 exp(-k u), u = t1 - t0: d2y/dk2 = u^2 y, d2y/dk dt1 = -y (1 - k u), d2y/dt1^2 = k^2 y
    y0, k, t0, t1 = 1.5, 0.7, 0.2, 0.9
    u, y = t1 - t0, 1.5 * np.exp(-0.7 * 0.7)
    H = tg.hessian(lambda th: odeint(_decay, y0, tnp.stack([t0, th[1]]), th[0], **TIGHT)[1])(np.array([k, t1]))
    np.testing.assert_allclose(H, [[u * u * y, -y * (1 - k * u)], [-y * (1 - k * u), k * k * y]], rtol=1e-7)


def test_decay_third_order_and_decreasing_times() -> None:
    # y(t) = exp(-k t) on decreasing times (back from 0 to -1): d3/dk3 y(-1) = -(-1)^3 exp(k)
    t = np.array([0.0, -0.5, -1.0])
    f = lambda k: odeint(_decay, 1.0, t, k, **TIGHT)[-1]  # noqa: E731
    np.testing.assert_allclose(f(0.4), np.exp(0.4), rtol=1e-9)
    np.testing.assert_allclose(tg.grad(f)(0.4), np.exp(0.4), rtol=1e-8)
    np.testing.assert_allclose(tg.grad(tg.grad(f))(0.4), np.exp(0.4), rtol=1e-7)
    np.testing.assert_allclose(tg.grad(tg.grad(tg.grad(f)))(0.4), np.exp(0.4), rtol=1e-6)
    # forward over forward over reverse
    np.testing.assert_allclose(tg.jacfwd(tg.jacfwd(tg.grad(f)))(0.4), np.exp(0.4), rtol=1e-6)


def test_scipy_args_keyword_and_hmax_to_second_order() -> None:
    t = np.array([0.0, 1.0])
    for kw in (dict(args=(0.5,)), dict(args=(0.5,), hmax=0.05)):
        d2 = tg.grad(tg.grad(lambda k: odeint(lambda y, t, k: -k * y, 2.0, t, **{**kw, "args": (k,)},
                                              **TIGHT)[1]))(0.5)
        np.testing.assert_allclose(d2, 2.0 * np.exp(-0.5), rtol=1e-7)


# --- y' = A y: y(t) = expm(A t) y0 ---------------------------------------------------------------

A = np.array([[-0.5, 1.0], [-1.0, -0.3]])
Y0 = np.array([1.0, 2.0])
W = np.array([0.3, -1.2])  # the output read along w: s(A) = w . expm(A t) y0
T_END = 1.5


def _lin(y, t, M):
    return tnp.dot(M, y)


def _s(M, y0=Y0):
    return tnp.dot(W, odeint(_lin, y0, np.array([0.0, T_END]), M, **TIGHT)[1])


def test_linear_system_gradient_in_the_matrix_is_the_frechet_derivative() -> None:
    # ds = w . L(A t, dA t) y0, with L expm's Frechet derivative: ds/dA = t (w y0^T) through L^T
    got = tg.grad(_s)(A)
    want = np.array([[W @ sla.expm_frechet(A * T_END, T_END * np.eye(2)[i][:, None] * np.eye(2)[j][None, :],
                                           compute_expm=False) @ Y0 for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-8)
    _, tan = tg.jvp(_s, (A,), (np.eye(2)[[1, 0]],))  # along E = [[0, 1], [1, 0]]
    np.testing.assert_allclose(tan, np.sum(want * np.eye(2)[[1, 0]]), rtol=1e-8)


def _second_directional(E):
    """d2/de2 w . expm((A + e E) t) y0 at e = 0: twice the corner block of the
    exponential of [[A, E, 0], [0, A, E], [0, 0, A]] t."""
    Z = np.zeros((2, 2))
    X = np.block([[A, E, Z], [Z, A, E], [Z, Z, A]]) * T_END
    return 2.0 * W @ sla.expm(X)[:2, 4:] @ Y0


def test_linear_system_second_derivative_in_the_matrix_by_block_expm() -> None:
    E = np.array([[0.2, -0.4], [0.7, 0.1]])
    want = _second_directional(E)
    # reverse over reverse, forward over reverse (hvp), forward over forward
    rr = np.sum(tg.grad(lambda M: tnp.sum(tg.grad(_s)(M) * E))(A) * E)
    fr = np.sum(tg.jvp(tg.grad(_s), (A,), (E,))[1] * E)
    ff = tg.jvp(lambda M: tg.jvp(_s, (M,), (E,))[1], (A,), (E,))[1]
    for name, got in (("rev(rev)", rr), ("fwd(rev)", fr), ("fwd(fwd)", ff)):
        np.testing.assert_allclose(got, want, rtol=1e-7, err_msg=name)
    # linear in y0: no second derivative there, and the mixed one is the Frechet derivative
    np.testing.assert_allclose(tg.hessian(lambda y0: _s(A, y0))(Y0), np.zeros((2, 2)), atol=1e-10)
    mixed = tg.jvp(lambda M: tg.grad(lambda y0: _s(M, y0))(Y0), (A,), (E,))[1]
    np.testing.assert_allclose(mixed, W @ sla.expm_frechet(A * T_END, E * T_END, compute_expm=False),
                               rtol=1e-8)


# --- a nonlinear system against central differences ----------------------------------------------

def test_lotka_volterra_y0_t_args_to_second_order_both_modes() -> None:
    def f(y0, t, p):
        return odeint(_lv, y0, t, p, **TIGHT)

    args = [np.array([1.0, 0.8]), np.array([0.0, 0.6, 1.2]), np.array([1.0, 0.5, 1.0, 0.3])]
    tg.check_grads(f, args, modes=("rev", "fwd"), order=2, **FD)


def test_lotka_volterra_hessian_against_differences_of_the_gradient() -> None:
    t, p = np.array([0.0, 0.5, 1.0]), np.array([1.0, 0.5, 1.0, 0.3])

    def loss(y0):
        return tnp.sum(odeint(_lv, y0, t, p, **TIGHT) ** 2)

    y0, eps = np.array([1.0, 0.8]), 1e-5
    H = tg.hessian(loss)(y0)
    g = tg.grad(loss)
    fd = np.stack([(g(y0 + eps * e) - g(y0 - eps * e)) / (2 * eps) for e in np.eye(2)])
    np.testing.assert_allclose(H, fd, rtol=1e-5)
    np.testing.assert_allclose(H, H.T, rtol=1e-8)


def test_a_stack_of_cotangents_or_tangents_agrees_with_one_at_a_time() -> None:
    # jacrev and jacfwd push all their rows through one solve of a larger system
    t, p, y0 = np.array([0.0, 0.5, 1.0]), np.array([1.0, 0.5, 1.0, 0.3]), np.array([1.0, 0.8])

    def f(p):
        return odeint(_lv, y0, t, p, **TIGHT)

    _, back = tg.vjp(f, p)
    rows = np.stack([back(e.reshape(3, 2))[0] for e in np.eye(6)]).reshape(3, 2, 4)
    np.testing.assert_allclose(tg.jacrev(f)(p), rows, rtol=1e-8, atol=1e-10)
    cols = np.stack([tg.jvp(f, (p,), (e,))[1] for e in np.eye(4)], axis=-1)
    np.testing.assert_allclose(tg.jacfwd(f)(p), cols, rtol=1e-8, atol=1e-10)


# --- vmap and jit ----------------------------------------------------------------------------------

def test_vmap_of_grad_and_hessian_over_initial_conditions() -> None:
    t, p = np.array([0.0, 0.5, 1.0]), np.array([1.0, 0.5, 1.0, 0.3])

    def loss(y0, p):
        return tnp.sum(odeint(_lv, y0, t, p) ** 2)

    y0s = np.array([[1.0, 0.8], [0.7, 1.1], [1.3, 0.4]])
    for transform in (tg.grad, tg.hessian, lambda f: tg.grad(f, argnums=1)):
        got = tg.vmap(transform(loss), in_axes=(0, None))(y0s, p)
        np.testing.assert_allclose(got, [transform(loss)(y0, p) for y0 in y0s], rtol=1e-12, atol=1e-12)


def test_jit_of_grad_and_hessian_solves_again_on_new_inputs() -> None:
    # a solve is one instruction of the compiled program: its adaptive steps run on each call
    t = np.array([0.0, 0.5, 1.0])

    def loss(y0, p):
        return tnp.sum(odeint(_lv, y0, t, p) ** 2)

    g, h = tg.jit(tg.grad(loss, argnums=(0, 1))), tg.jit(tg.hessian(loss))
    for y0, p in ((np.array([1.0, 0.8]), np.array([1.0, 0.5, 1.0, 0.3])),
                  (np.array([0.6, 1.2]), np.array([0.9, 0.4, 1.1, 0.2]))):
        for got, want in zip(g(y0, p), tg.grad(loss, argnums=(0, 1))(y0, p)):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        np.testing.assert_allclose(h(y0, p), tg.hessian(loss)(y0, p), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.jit(loss))(y0, p), tg.grad(loss)(y0, p), rtol=1e-12)


def test_func_closing_over_a_traced_value_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match="extra arguments"):
        tg.grad(lambda k: tnp.sum(odeint(lambda y, t: -k * y, np.ones(2), np.array([0.0, 1.0]))))(0.5)
