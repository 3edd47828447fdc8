"""checkpoint(fun, policy=...) keeps what the policy names and computes the rest
again in the backward pass; gradients equal plain grad's under every transform."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

P = tg.checkpoint_policies
rng = np.random.default_rng(7)
W = rng.normal(size=(3, 3))
X = rng.normal(size=(2, 3))


@pytest.fixture
def matmul_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts NumPy's matrix products (the matmul primitive computes with np.matmul)."""
    calls: list[int] = []
    inner = np.matmul

    def counted(*a, **k):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return inner(*a, **k)

    monkeypatch.setattr(np, "matmul", counted)
    yield calls


calls: list[int] = []


@tg.primitive
def expensive(x):  # noqa: ANN001, ANN201
    calls.append(1)
    return np.sin(x)


tg.defvjp(expensive, lambda ans, x: lambda g: g * tnp.cos(x))
tg.defjvp(expensive, lambda ans, x: lambda t: t * tnp.cos(x))


def net(w, x):  # noqa: ANN001, ANN201
    h = tg.checkpoint_name(expensive(x @ w), "h")
    return tnp.sum(tnp.tanh(h @ w) ** 2)


@pytest.mark.parametrize(("policy", "runs"), [
    (None, 2), (P.nothing_saveable, 2), (P.everything_saveable, 1), (P.dots_saveable, 2),
    (P.save_only_these_names("h"), 1), (P.save_only_these_names("other"), 2),
    (P.save_any_names_but_these("h"), 2), (P.save_any_names_but_these("other"), 1),
    (P.save_from_both_policies(P.dots_saveable, P.save_only_these_names("h")), 1),
])
def test_the_policy_decides_what_runs_again(policy, runs) -> None:  # noqa: ANN001
    want = tg.grad(net, argnums=(0, 1))(W, X)
    calls.clear()
    got = tg.grad(tg.checkpoint(net, policy=policy), argnums=(0, 1))(W, X)
    assert len(calls) == runs
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def _products(calls: list[int], f, *args) -> int:  # noqa: ANN001
    """The matrix products computed in the backward pass of ``f`` at ``args``."""
    _, vjp_fn = tg.vjp(f, *args)
    calls.clear()
    vjp_fn(1.0)
    return len(calls)


def test_dots_saveable_keeps_the_products(matmul_calls) -> None:  # noqa: ANN001
    def f(w, x):  # noqa: ANN001, ANN202
        return tnp.sum(tnp.tanh(tnp.tanh(x @ w) @ w))

    again = _products(matmul_calls, tg.checkpoint(f), W, X)  # both products again, then their rules
    for policy in (P.dots_saveable, P.dots_with_no_batch_dims_saveable, P.everything_saveable):
        assert _products(matmul_calls, tg.checkpoint(f, policy=policy), W, X) == again - 2
        np.testing.assert_allclose(tg.grad(tg.checkpoint(f, policy=policy))(W, X), tg.grad(f)(W, X))
    assert _products(matmul_calls, tg.checkpoint(f, policy=P.save_only_these_names("h")), W, X) == again


def test_dots_with_no_batch_dims_recomputes_stacked_products(matmul_calls) -> None:  # noqa: ANN001
    A = rng.normal(size=(4, 3, 3))

    def f(a):  # noqa: ANN001, ANN202
        return tnp.sum(tnp.sin(a @ a))

    again = _products(matmul_calls, tg.checkpoint(f), A)
    assert _products(matmul_calls, tg.checkpoint(f, policy=P.dots_with_no_batch_dims_saveable), A) == again
    assert _products(matmul_calls, tg.checkpoint(f, policy=P.dots_saveable), A) == again - 1
    np.testing.assert_allclose(tg.grad(tg.checkpoint(f, policy=P.dots_with_no_batch_dims_saveable))(A),
                               tg.grad(f)(A))


@pytest.mark.parametrize("policy", [P.everything_saveable, P.dots_saveable, P.save_only_these_names("h")])
def test_gradients_equal_plain_ones_under_every_transform(policy) -> None:  # noqa: ANN001
    ck = tg.checkpoint(net, policy=policy)
    np.testing.assert_allclose(tg.hessian(ck)(W, X), tg.hessian(net)(W, X), rtol=1e-10)
    np.testing.assert_allclose(tg.jacrev(lambda w: tnp.sin(ck(w, X)) * tnp.arange(3.0))(W),
                               tg.jacrev(lambda w: tnp.sin(net(w, X)) * tnp.arange(3.0))(W), rtol=1e-10)
    Xs = rng.normal(size=(4, 2, 3))
    np.testing.assert_allclose(tg.vmap(tg.grad(ck), (None, 0))(W, Xs), tg.vmap(tg.grad(net), (None, 0))(W, Xs),
                               rtol=1e-10)
    np.testing.assert_allclose(tg.grad(lambda w: tnp.sum(tg.vmap(ck, (None, 0))(w, Xs)))(W),
                               tg.grad(lambda w: tnp.sum(tg.vmap(net, (None, 0))(w, Xs)))(W), rtol=1e-10)
    np.testing.assert_allclose(tg.jit(tg.grad(ck))(W, X), tg.grad(net)(W, X), rtol=1e-10)
    np.testing.assert_allclose(tg.jvp(ck, (W, X), (W, X))[1], tg.jvp(net, (W, X), (W, X))[1], rtol=1e-10)
    tg.check_grads(ck, (W, X), modes=("rev",), order=2)


def test_closures_statics_decorator_form_and_remat() -> None:
    def model(w):  # noqa: ANN001, ANN202
        layer = tg.checkpoint(lambda x: tnp.tanh(x @ w), policy=P.dots_saveable)  # closes over w
        return tnp.sum(layer(layer(X)))

    np.testing.assert_allclose(tg.grad(model)(W), tg.grad(lambda w: tnp.sum(tnp.tanh(tnp.tanh(X @ w) @ w)))(W))

    @functools.partial(tg.checkpoint, static_argnums=(1,), policy=P.everything_saveable)
    def power_sum(x, n):  # noqa: ANN001, ANN202
        for _ in range(n):  # (n is a Python int: control flow on it)
            x = x * x
        return tnp.sum(x)

    np.testing.assert_allclose(tg.grad(power_sum)(np.array([1.0, 2.0]), 2), 4 * np.array([1.0, 2.0]) ** 3)
    assert tg.remat is tg.checkpoint
    assert tg.grad(tg.checkpoint(policy=P.dots_saveable)(lambda x: x * x))(3.0) == 6.0


def test_with_a_policy_python_conversions_are_refused_and_value_reads() -> None:
    with pytest.raises(TypeError, match="tg.value"):
        tg.grad(tg.checkpoint(lambda x: x * float(x), policy=P.everything_saveable))(2.0)
    assert tg.grad(tg.checkpoint(lambda x: x * float(tg.value(x)), policy=P.everything_saveable))(2.0) == 2.0
    with pytest.raises(TypeError, match="policy must be a function"):
        tg.checkpoint(net, policy="dots")


def test_checkpoint_name_is_the_identity_everywhere() -> None:
    x = np.array([1.0, -2.0])
    assert tg.checkpoint_name(x, "a") is x
    assert tg.grad(lambda x: tnp.sum(tg.checkpoint_name(x, "a") ** 2))(x).tolist() == [2.0, -4.0]
    assert tg.jvp(lambda x: tg.checkpoint_name(x * 3, "a"), (x,), (np.ones(2),))[1].tolist() == [3.0, 3.0]
    assert tg.vmap(lambda r: tg.checkpoint_name(r, "a") * 2)(np.eye(2)).tolist() == [[2.0, 0.0], [0.0, 2.0]]
    assert tg.jit(lambda r: tg.checkpoint_name(r, "a") + 1)(x).tolist() == [2.0, -1.0]
    with pytest.raises(TypeError, match="must be a str"):
        tg.checkpoint_name(x, 3)
