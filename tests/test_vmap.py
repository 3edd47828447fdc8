"""tg.vmap (SPEC section 7): axes, nesting, composition with every transform,
user primitives with and without batching rules, errors.

Every result is checked against an explicit Python loop over the examples
(the per-example results stacked with np.stack), in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.core.traced import Traced

RTOL, ATOL = 1e-10, 1e-12


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def close(got, want) -> None:
    """Same pytree structure, plain arrays (never tapegrad's batched values), same values."""
    gl, gd = tg.tree_flatten(got)
    wl, wd = tg.tree_flatten(want)
    assert gd == wd, (gd, wd)
    for g, w in zip(gl, wl):
        assert not isinstance(g, Traced), f"a traced value leaked: {g!r}"
        assert isinstance(g, (np.ndarray, np.generic, float, int)), type(g)
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def _leaf_axes(axes, tree):
    """One axis per leaf of ``tree`` from pytree prefix ``axes`` (the test's own reading)."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tg.tree_flatten(tree)[0])
    if isinstance(axes, dict):
        return [a for k in sorted(tree) for a in _leaf_axes(axes[k], tree[k])]
    return [a for ax, t in zip(axes, tree) for a in _leaf_axes(ax, t)]


def loop(f, in_axes=0, out_axes=0):
    """The reference: ``f`` called once per example, results stacked (np.stack)."""

    def mapped(*args):
        axes = in_axes if not isinstance(in_axes, (tuple, list)) else tuple(in_axes)
        leaves, tdef = tg.tree_flatten(args)
        la = _leaf_axes(axes if isinstance(axes, tuple) else (axes,) * len(args), args)
        n = {np.shape(x)[a] for x, a in zip(leaves, la) if a is not None}.pop()
        outs = []
        for i in range(n):
            sl = [x if a is None else np.take(np.asarray(x), i, axis=a) for x, a in zip(leaves, la)]
            outs.append(f(*tg.tree_unflatten(tdef, sl)))
        if n == 0:
            pytest.skip("the loop has no examples")
        ol, odef = tg.tree_flatten(outs[0])
        oaxes = _leaf_axes(out_axes, outs[0])
        cols = [[tg.tree_flatten(o)[0][k] for o in outs] for k in range(len(ol))]
        res = [c[0] if a is None else np.stack([np.asarray(v) for v in c], axis=a)
               for c, a in zip(cols, oaxes)]
        return tg.tree_unflatten(odef, res)

    return mapped


def check(f, args, in_axes=0, out_axes=0):
    close(tg.vmap(f, in_axes, out_axes)(*args), loop(f, in_axes, out_axes)(*args))


# --- in_axes / out_axes ----------------------------------------------------------------------
A = rng(1).normal(size=(3, 5))


def mlp1(x):
    return tnp.tanh(x @ A.T) * tnp.sum(x ** 2)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_in_axes_int_and_negative(axis):
    x = rng().normal(size=(4, 5)) if axis in (0, -2) else rng().normal(size=(5, 4))
    check(mlp1, (x,), axis)


def test_in_axes_rank3_middle_axis():
    x = rng().normal(size=(2, 6, 5))
    check(lambda m: tnp.sum(tnp.exp(m) @ A.T, axis=0), (x,), 1)
    check(lambda m: tnp.sum(tnp.exp(m) @ A.T, axis=0), (np.moveaxis(x, 1, 2),), -1)


def test_in_axes_none_and_tuples():
    w = rng(2).normal(size=(5,))
    X = rng(3).normal(size=(6, 5))
    Xt = X.T.copy()
    f = lambda w, x, c: tnp.tanh(x * w) + c  # noqa: E731
    c = rng(4).normal(size=(6,))
    check(f, (w, X, 2.0), (None, 0, None))
    check(f, (w, Xt, c), (None, 1, 0))
    check(f, (w, Xt, c), [None, -1, -1])
    check(f, (X, w, 1.5), (0, None, None))


def test_in_axes_nested_pytree_prefixes():
    r = rng(5)
    params = {"w": r.normal(size=(5, 3)), "b": r.normal(size=(6, 3))}
    xs = [r.normal(size=(6, 5)), r.normal(size=(5, 6))]
    pair = (r.normal(size=(6,)), r.normal(size=(2,)))

    def f(p, xs, pair):
        h = tnp.tanh(xs[0] @ p["w"] + xs[1] @ p["w"] + p["b"])
        return tnp.sum(h) * pair[0] + tnp.sum(pair[1])

    in_axes = ({"w": None, "b": 0}, [0, 1], (0, None))
    check(f, (params, xs, pair), in_axes)
    check(f, (params, xs, pair), ({"w": None, "b": 0}, [0, -1], (-1, None)))


def test_keyword_arguments_are_mapped_over_axis_0():
    X = rng().normal(size=(4, 3))
    S = rng(1).normal(size=(4,))

    def f(x, scale=1.0):
        return tnp.sin(x) * scale

    got = tg.vmap(f)(X, scale=S)
    close(got, np.stack([f(X[i], scale=S[i]) for i in range(4)]))


@pytest.mark.parametrize("out_axes", [0, 1, -1, 2, -3])
def test_out_axes_int_and_negative(out_axes):
    X = rng().normal(size=(4, 3))
    f = lambda x: tnp.outer(x, tnp.cos(x))  # noqa: E731
    check(f, (X,), 0, out_axes)


def test_pytree_outputs_and_out_axes_prefixes():
    X = rng().normal(size=(4, 3))

    def f(x):
        return {"s": tnp.sum(x), "m": (tnp.outer(x, x), x[1:] * 2.0)}

    check(f, (X,), 0, 0)
    check(f, (X,), 0, {"s": 0, "m": (1, -1)})
    check(lambda x: (tnp.sin(x), [tnp.cos(x), tnp.sum(x)]), (X,), 0, (1, [0, 0]))


def test_out_axes_none_for_outputs_that_do_not_depend_on_the_batch():
    X = rng().normal(size=(4, 3))
    c = np.arange(3.0)
    got = tg.vmap(lambda x: (tnp.sin(x), c * 2.0, 7.0), out_axes=(0, None, None))(X)
    close(got, (np.sin(X), c * 2.0, 7.0))


def test_outputs_that_do_not_depend_on_the_batch_are_broadcast():
    X = rng().normal(size=(4, 3))
    c = np.arange(3.0)
    got = tg.vmap(lambda x: (c * 2.0, np.float64(1.5), 2.0))(X)
    close(got, (np.broadcast_to(c * 2.0, (4, 3)), np.full(4, 1.5), np.full(4, 2.0)))
    got = tg.vmap(lambda x: c, out_axes=1)(X)
    close(got, np.broadcast_to(c[:, None], (3, 4)))
    got[0, 0] = 1.0  # a writeable array of its own


def test_scalar_outputs_and_scalar_examples():
    x = rng().normal(size=(5,))
    check(lambda s: tnp.sin(s) * s, (x,))
    check(lambda s: s ** 2 + 1.0, (x,))
    check(lambda v: tnp.sum(v) ** 2, (rng().normal(size=(5, 3)),))


@pytest.mark.parametrize("n", [0, 1])
def test_batch_size_zero_and_one(n):
    X = rng().normal(size=(n, 3))
    f = lambda x: (tnp.tanh(x @ A), tnp.sum(x))  # noqa: E731
    got = tg.vmap(f)(X)
    assert got[0].shape == (n, 5) and got[1].shape == (n,)
    want = [np.tanh(X @ A), X.sum(axis=1)]
    close(got, tuple(want))
    g = tg.vmap(tg.grad(lambda x: tnp.sum(tnp.sin(x))))(X)
    close(g, np.cos(X))


# --- nesting --------------------------------------------------------------------------------
def test_vmap_of_vmap_with_different_axes():
    X = rng().normal(size=(3, 4, 5))
    f = lambda v: tnp.sum(tnp.sin(v) * v)  # noqa: E731
    got = tg.vmap(tg.vmap(f, in_axes=1), in_axes=0)(X)
    close(got, np.array([[f(X[i, :, j]) for j in range(5)] for i in range(3)]))
    got = tg.vmap(tg.vmap(f, in_axes=0, out_axes=0), in_axes=2, out_axes=1)(X)
    close(got, np.array([[f(X[i, :, k]) for k in range(5)] for i in range(3)]))


def test_vmap_of_vmap_with_none_mixes():
    A_ = rng(1).normal(size=(3, 4))
    B_ = rng(2).normal(size=(5, 4))
    pair = tg.vmap(tg.vmap(lambda a, b: tnp.dot(a, tnp.tanh(b)), (None, 0)), (0, None))(A_, B_)
    close(pair, A_ @ np.tanh(B_).T)
    # the inner function closes over the outer batched value
    got = tg.vmap(lambda a: tg.vmap(lambda b: tnp.sum(a * b) + tnp.sum(b))(B_))(A_)
    close(got, A_ @ B_.T + B_.sum(axis=1)[None, :])
    # and over the inner one with an unbatched input
    got = tg.vmap(lambda a, c: tg.vmap(lambda b: a * c + b, in_axes=0)(B_), in_axes=(0, None))(A_, 2.0)
    close(got, 2.0 * A_[:, None, :] + B_[None, :, :])


# --- composition with the transforms, in both orders -----------------------------------------
def sinsum(x):
    return tnp.sum(tnp.sin(x) * x[0] + x ** 3)


def vecf(x):
    return tnp.sin(x) * x[0] + tnp.exp(x[-1]) * x


X43 = rng(7).normal(size=(4, 3))


@pytest.mark.parametrize("transform", [
    tg.grad, tg.elementwise_grad, tg.jacrev, tg.jacfwd, tg.hessian,
    lambda f: tg.grad(tg.grad(lambda x: tnp.sum(f(x)))),
], ids=["grad", "elementwise_grad", "jacrev", "jacfwd", "hessian", "grad_grad"])
def test_vmap_of_transform(transform):
    f = vecf if transform in (tg.elementwise_grad, tg.jacrev, tg.jacfwd) else sinsum
    if transform not in (tg.grad, tg.elementwise_grad, tg.jacrev, tg.jacfwd, tg.hessian):
        f = tnp.sin
        check(transform(f), (rng().normal(size=(5,)),))
        return
    check(transform(f), (X43,))


def test_vmap_of_grad_grad_of_vector_function():
    g2 = tg.grad(lambda x: tnp.sum(tg.grad(sinsum)(x) ** 2))
    check(g2, (X43,))
    check(tg.grad(tg.grad(lambda s: tnp.sin(s) * s ** 3)), (rng().normal(size=(6,)),))


@pytest.mark.parametrize("transform", [tg.jacrev, tg.jacfwd, tg.hessian], ids=["jacrev", "jacfwd", "hessian"])
def test_transform_of_vmap(transform):
    f = tg.vmap(vecf) if transform is not tg.hessian else (lambda X: tnp.sum(tg.vmap(sinsum)(X) ** 2))
    want = transform(lambda X: tnp.stack([vecf(X[i]) for i in range(4)])) if transform is not tg.hessian \
        else transform(lambda X: tnp.sum(tnp.stack([sinsum(X[i]) for i in range(4)]) ** 2))
    close(transform(f)(X43), want(X43))


@pytest.mark.parametrize("transform", [tg.jacrev, tg.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobians_of_vmap_with_an_unmapped_argument(transform):
    w = rng(14).normal(size=(3,))
    f = lambda w, x: tnp.tanh(x * w) * tnp.sum(x ** 2 * w)  # noqa: E731
    ref = lambda w, X: tnp.stack([f(w, X[i]) for i in range(4)])  # noqa: E731
    close(transform(tg.vmap(f, (None, 0)))(w, X43), transform(ref)(w, X43))
    close(transform(tg.vmap(f, (None, 0)), argnums=(0, 1))(w, X43), transform(ref, argnums=(0, 1))(w, X43))
    close(transform(tg.vmap(f, (None, 0), 1))(w, X43), transform(lambda w, X: ref(w, X).T)(w, X43))
    check(transform(f, argnums=(0, 1)), (w, X43), (None, 0))
    close(tg.hessian(lambda w: tnp.sum(tg.vmap(f, (None, 0))(w, X43)))(w), tg.hessian(lambda w: tnp.sum(ref(w, X43)))(w))


def test_value_and_grad_with_aux_under_vmap():
    def f(x, y):
        return tnp.sum(tnp.sin(x) * y), {"y2": y * 2.0, "n": tnp.sum(x)}

    Y = rng(8).normal(size=(4, 3))
    check(tg.value_and_grad(f, has_aux=True), (X43, Y))
    check(tg.value_and_grad(f, argnums=(0, 1), has_aux=True), (X43, Y))
    check(tg.grad(f, argnums=1, has_aux=True), (X43, Y), (0, None))


def test_grad_of_function_calling_vmap():
    w = rng(9).normal(size=(3,))
    f = lambda w, x: tnp.tanh(tnp.dot(x, w)) ** 2  # noqa: E731
    got = tg.grad(lambda w: tg.vmap(f, (None, 0))(w, X43).sum())(w)
    want = tg.grad(lambda w: sum(f(w, X43[i]) for i in range(4)))(w)
    close(got, want)
    # value_and_grad, and the batch on axis 1 with a weighted sum of a vector output
    wts = np.arange(1.0, 5.0)
    vg = tg.value_and_grad(lambda w: tnp.sum(tg.vmap(f, (None, 1))(w, X43.T) * wts))(w)
    close(vg, tg.value_and_grad(lambda w: sum(f(w, X43[i]) * wts[i] for i in range(4)))(w))
    close(tg.elementwise_grad(tg.vmap(vecf))(X43),
          tg.elementwise_grad(lambda X: tnp.stack([vecf(X[i]) for i in range(4)]))(X43))


def test_per_example_gradients_of_an_mlp():
    r = rng(10)
    params = {"W1": r.normal(size=(5, 8)) * 0.5, "b1": r.normal(size=(8,)) * 0.1,
              "W2": r.normal(size=(8, 3)) * 0.5, "b2": np.zeros(3)}
    X = r.normal(size=(6, 5))
    Y = np.eye(3)[r.integers(0, 3, size=6)]

    def loss(p, x, y):
        h = tnp.tanh(x @ p["W1"] + p["b1"])
        logits = h @ p["W2"] + p["b2"]
        logp = logits - tnp.log(tnp.sum(tnp.exp(logits - tnp.max(logits)))) - tnp.max(logits)
        return -tnp.sum(y * logp)

    check(tg.grad(loss), (params, X, Y), (None, 0, 0))
    pe = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))(params, X, Y)
    mean = tg.grad(lambda p: tnp.mean(tg.vmap(loss, (None, 0, 0))(p, X, Y)))(params)
    close({k: v.mean(axis=0) for k, v in pe.items()}, mean)
    # per-example value_and_grad on a batch of mini-batches (vmap of vmap inside grad)
    Xb, Yb = X.reshape(2, 3, 5), Y.reshape(2, 3, 3)
    batch_loss = lambda p, xb, yb: tnp.sum(tg.vmap(loss, (None, 0, 0))(p, xb, yb))  # noqa: E731
    check(tg.value_and_grad(batch_loss), (params, Xb, Yb), (None, 0, 0))


def test_vjp_both_orders():
    Y = rng(11).normal(size=(4, 3))
    # vmap of a function that calls vjp
    check(lambda x, g: tg.vjp(vecf, x)[1](g), (X43, Y))
    # vmap of a vjp_fn (many cotangents through one linearization)
    out, fn = tg.vjp(vecf, X43[0])
    check(fn, (Y,))
    # vjp of a vmapped function
    out, fn = tg.vjp(tg.vmap(vecf), X43)
    close(out, loop(vecf)(X43))
    close(fn(Y), (np.stack([tg.vjp(vecf, X43[i])[1](Y[i])[0] for i in range(4)]),))
    # with a None axis: the cotangent of the shared argument is summed over the batch
    w = rng(12).normal(size=(3,))
    out, fn = tg.vjp(tg.vmap(lambda w, x: tnp.sin(w * x), (None, 0)), w, X43)
    gw, gx = fn(Y)
    close(gw, sum(tg.vjp(lambda w: tnp.sin(w * X43[i]), w)[1](Y[i])[0] for i in range(4)))
    close(gx, np.cos(w * X43) * w * Y)


def test_jvp_and_hvp_both_orders():
    T = rng(13).normal(size=(4, 3))
    check(lambda x, t: tg.jvp(vecf, (x,), (t,)), (X43, T))
    check(lambda t: tg.jvp(vecf, (X43[0],), (t,)), (T,))  # one primal, a batch of tangents
    close(tg.jvp(tg.vmap(vecf), (X43,), (T,)), loop(lambda x, t: tg.jvp(vecf, (x,), (t,)))(X43, T))
    check(lambda x, t: tg.hvp(sinsum, (x,), (t,)), (X43, T))
    check(lambda t: tg.hvp(sinsum, (X43[1],), (t,))[1], (T,))
    got = tg.hvp(lambda X: tnp.sum(tg.vmap(sinsum)(X)), (X43,), (T,))
    close(got, (np.sum(loop(sinsum)(X43)), loop(lambda x, t: tg.hvp(sinsum, (x,), (t,))[1])(X43, T)))


def test_jvp_with_an_unbatched_tangent_of_a_batched_primal():
    t = np.array([1.0, -2.0, 0.5])
    check(lambda x: tg.jvp(vecf, (x,), (t,)), (X43,))
    check(lambda x, t: tg.jvp(lambda a, b: tnp.sin(a) * b, (x, t), (t, x)), (X43, t), (0, None))


# --- custom rules, checkpoint, stop_gradient, the explicit tape --------------------------------
def make_custom_vjp(calls):
    """f(w, x) = sin(w * x) with a custom VJP that scales the true gradient by 2 (so a
    result that differentiated the primal instead of using the rule shows)."""

    @tg.custom_vjp
    def f(w, x):
        return tnp.sin(w * x)

    def fwd(w, x):
        calls.append(("fwd", tnp.shape(x)))
        return f(w, x), (w, x, tnp.cos(w * x))

    def bwd(res, g):
        calls.append(("bwd", tnp.shape(g)))
        w, x, c = res
        return 2.0 * g * c * x, 2.0 * g * c * w

    f.defvjp(fwd, bwd)
    return f


def true_twice(w, x):  # the gradient the custom rule gives, written out
    return lambda g: (2.0 * g * np.cos(w * x) * x, 2.0 * g * np.cos(w * x) * w)


def test_custom_vjp_under_vmap_both_orders():
    calls: list = []
    f = make_custom_vjp(calls)
    w = rng(20).normal(size=(3,))
    loss = lambda w, x: tnp.sum(f(w, x) ** 2)  # noqa: E731
    check(f, (w, X43), (None, 0))
    check(f, (X43, X43 * 0.5), 0)
    # vmap of grad: the rule, per example
    pe = tg.vmap(tg.grad(loss, argnums=(0, 1)), (None, 0))(w, X43)
    want = [true_twice(w, X43[i])(2.0 * np.sin(w * X43[i])) for i in range(4)]
    close(pe, tuple(np.stack([p[k] for p in want]) for k in range(2)))
    # grad of vmap: the rule, once for the whole batch (not the primal's derivative)
    calls.clear()
    g = tg.grad(lambda w, X: tnp.sum(tg.vmap(loss, (None, 0))(w, X)), argnums=(0, 1))(w, X43)
    close(g, (sum(p[0] for p in want), np.stack([p[1] for p in want])))
    assert [c[0] for c in calls] == ["fwd", "bwd"], calls  # fwd and bwd were mapped, each run once
    # jacrev / jacfwd / hessian of a vmapped custom function, and the reverse order
    close(tg.jacrev(tg.vmap(f, (None, 0)), argnums=1)(w, X43),
          tg.jacrev(lambda X: tnp.stack([f(w, X[i]) for i in range(4)]))(X43))
    check(tg.jacrev(f, argnums=1), (w, X43), (None, 0))
    check(tg.hessian(loss, argnums=1), (w, X43), (None, 0))
    close(tg.hessian(lambda X: tnp.sum(tg.vmap(loss, (None, 0))(w, X)))(X43[:2]),
          tg.hessian(lambda X: loss(w, X[0]) + loss(w, X[1]))(X43[:2]))


def test_custom_vjp_of_vmap_of_vmap():
    f = make_custom_vjp([])
    X = rng(21).normal(size=(2, 3, 4))
    w = rng(22).normal(size=(4,))
    g = tg.grad(lambda w: tnp.sum(tg.vmap(tg.vmap(f, (None, 0)), (None, 0))(w, X)))(w)
    close(g, sum(true_twice(w, X[i, j])(np.ones(4))[0] for i in range(2) for j in range(3)))


def test_custom_vjp_with_pytrees_and_none_cotangents_under_vmap():
    @tg.custom_vjp
    def f(p, x):
        return {"y": p["a"] * x, "s": tnp.sum(p["b"] * x)}

    def fwd(p, x):
        return f(p, x), (p, x)

    def bwd(res, g):
        p, x = res
        return {"a": g["y"] * x, "b": g["s"] * x}, None  # None: no cotangent for x (zeros)

    f.defvjp(fwd, bwd)
    r = rng(25)
    p = {"a": r.normal(size=(3,)), "b": r.normal(size=(4, 3))}
    loss = lambda p, x: tnp.sum(f(p, x)["y"] ** 2) + f(p, x)["s"]  # noqa: E731
    axes = ({"a": None, "b": 0}, 0)

    def want_one(p, x):  # what the rule gives for one example
        return {"a": 2 * p["a"] * x * x, "b": x}, np.zeros(3)

    per = [want_one({"a": p["a"], "b": p["b"][i]}, X43[i]) for i in range(4)]
    got = tg.vmap(tg.grad(loss, argnums=(0, 1)), axes)(p, X43)
    close(got, ({"a": np.stack([q[0]["a"] for q in per]), "b": np.stack([q[0]["b"] for q in per])},
                np.zeros((4, 3))))
    got = tg.grad(lambda p, X: tnp.sum(tg.vmap(loss, axes)(p, X)), argnums=(0, 1))(p, X43)
    close(got, ({"a": sum(q[0]["a"] for q in per), "b": np.stack([q[0]["b"] for q in per])}, np.zeros((4, 3))))


def make_custom_jvp():
    @tg.custom_jvp
    def softplus(x):
        return tnp.log1p(tnp.exp(x))

    def rule(primals, tangents):  # a deliberately scaled derivative: 3 * sigmoid
        (x,), (t,) = primals, tangents
        return softplus(x), 3.0 * t / (1.0 + tnp.exp(-x))

    softplus.defjvp(rule)
    return softplus


def test_custom_jvp_under_vmap_both_orders():
    sp = make_custom_jvp()
    sig3 = 3.0 / (1.0 + np.exp(-X43))
    check(sp, (X43,))
    close(tg.vmap(tg.grad(lambda x: tnp.sum(sp(x))))(X43), sig3)
    close(tg.grad(lambda X: tnp.sum(tg.vmap(sp)(X)))(X43), sig3)
    close(tg.vmap(lambda x, t: tg.jvp(sp, (x,), (t,)))(X43, X43), (np.log1p(np.exp(X43)), sig3 * X43))
    close(tg.jvp(tg.vmap(sp), (X43,), (X43,)), (np.log1p(np.exp(X43)), sig3 * X43))
    close(tg.jacfwd(tg.vmap(sp))(X43[:2]), tg.jacfwd(sp)(X43[:2]))
    close(tg.jacrev(tg.vmap(sp))(X43[:2]), tg.jacfwd(sp)(X43[:2]))
    check(tg.jacfwd(sp), (X43,))
    check(tg.hessian(lambda x: tnp.sum(sp(x) ** 2)), (X43,))


def test_checkpoint_under_vmap_both_orders():
    layer = lambda w, x: tnp.tanh(x @ w)  # noqa: E731
    ck = tg.checkpoint(layer)
    W = rng(23).normal(size=(3, 3))
    loss = lambda f: lambda w, x: tnp.sum(f(w, f(w, x)) ** 2)  # noqa: E731
    check(ck, (W, X43), (None, 0))
    check(tg.grad(loss(ck)), (W, X43), (None, 0))
    close(tg.grad(lambda w: tnp.sum(tg.vmap(loss(ck), (None, 0))(w, X43)))(W),
          tg.grad(lambda w: tnp.sum(tg.vmap(loss(layer), (None, 0))(w, X43)))(W))
    close(tg.hessian(lambda x: tnp.sum(tg.vmap(loss(ck), (None, 0))(W, x)))(X43[:2]),
          tg.hessian(lambda x: tnp.sum(tg.vmap(loss(layer), (None, 0))(W, x)))(X43[:2]))
    close(tg.vmap(tg.grad(loss(ck)), (0, None))(np.stack([W, 2 * W]), X43[0]),
          np.stack([tg.grad(loss(layer))(v, X43[0]) for v in (W, 2 * W)]))


def test_stop_gradient_under_vmap_both_orders():
    w = rng(24).normal(size=(3,))
    f = lambda w, x: tnp.sum(tg.stop_gradient(x * w) * w) + tnp.sum(x * w)  # noqa: E731
    want = np.stack([X43[i] * w + X43[i] for i in range(4)])
    check(tg.grad(f), (w, X43), (None, 0))
    close(tg.vmap(tg.grad(f), (None, 0))(w, X43), want)
    close(tg.grad(lambda w: tnp.sum(tg.vmap(f, (None, 0))(w, X43)))(w), want.sum(axis=0))
    close(tg.grad(lambda w: tnp.sum(tg.vmap(lambda x: tg.stop_gradient(x * w))(X43)))(w), np.zeros(3))


def test_explicit_tape_under_vmap():
    def tape_grad(x):
        with tg.Tape() as t:
            xx = t.watch(x)
            y = tnp.sum(tnp.sin(xx) * xx)
        return t.gradient(y, xx)

    check(tape_grad, (X43,))

    def persistent(x):
        with tg.Tape(persistent=True) as t:
            p = t.watch({"a": x, "b": x * 2.0})
            y = tnp.sum(p["a"] * p["b"])
        return t.gradient(y, p), t.gradient([y, y], p["a"], output_gradients=[x[0], 1.0])

    check(persistent, (X43,))
    # a tape around vmap: one gradient for the batch
    with tg.Tape() as t:
        X = t.watch(X43)
        y = tnp.sum(tg.vmap(lambda x: tnp.sin(x) * x)(X))
    close(t.gradient(y, X), np.cos(X43) * X43 + np.sin(X43))


# --- user primitives: no batching rule (a loop), or one given with tg.defbatch ---------------
@tg.primitive
def lse(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


tg.defvjp(lse, lambda ans, x: lambda g: g * tnp.exp(x - ans))


def lse_ref(x):
    return np.log(np.sum(np.exp(x)))


def test_primitive_without_a_batching_rule_is_mapped_by_a_loop():
    X = rng(30).normal(size=(5, 4))
    close(tg.vmap(lse)(X), np.array([lse_ref(x) for x in X]))
    close(tg.vmap(lse, in_axes=1)(X), np.array([lse_ref(x) for x in X.T]))
    softmax = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    close(tg.vmap(tg.grad(lse))(X), softmax)
    close(tg.grad(lambda X: tnp.sum(tg.vmap(lse)(X) * np.arange(5.0)))(X), softmax * np.arange(5.0)[:, None])
    close(tg.vmap(tg.vmap(lse))(X.reshape(5, 2, 2)), np.log(np.exp(X.reshape(5, 2, 2)).sum(axis=2)))
    close(tg.vmap(lse)(np.zeros((0, 4))), np.zeros(0))


def test_jacobians_with_vmap_of_a_primitive_with_a_one_cotangent_rule():
    X = rng(30).normal(size=(2, 4))
    softmax = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    close(tg.jacrev(tg.vmap(lse))(X), np.stack([np.eye(2)[:, i, None] * softmax[i] for i in range(2)], axis=1))
    close(tg.vmap(tg.hessian(lse))(X), np.stack([np.diag(s) - np.outer(s, s) for s in softmax]))


def test_primitive_with_a_batching_rule_runs_it_once():
    calls = []

    @tg.primitive
    def rowdot(a, b):
        return np.sum(a * b, axis=-1)

    tg.defvjp(rowdot, lambda ans, a, b: lambda g: g[..., None] * b,
              lambda ans, a, b: lambda g: g[..., None] * a)

    def rule(args, batched, size):
        calls.append(tuple(batched))
        a, b = args
        return rowdot(a if batched[0] else tnp.broadcast_to(a, (size,) + a.shape),
                      b if batched[1] else tnp.broadcast_to(b, (size,) + b.shape))

    tg.defbatch(rowdot, rule)
    B = rng(31).normal(size=(6, 3))
    c = rng(32).normal(size=(3,))
    close(tg.vmap(rowdot, (0, None))(B, c), B @ c)
    assert calls == [(True, False)]
    close(tg.vmap(tg.grad(lambda a, b: rowdot(a, b) ** 2), (0, None))(B, c), 2 * (B @ c)[:, None] * c)
    close(tg.grad(lambda c: tnp.sum(tg.vmap(rowdot, (0, None))(B, c)))(c), B.sum(axis=0))
    with pytest.raises(TypeError, match="not a tapegrad primitive"):
        tg.defbatch(lse_ref, rule)


# --- errors ------------------------------------------------------------------------------
def test_error_mapped_axes_of_different_sizes():
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match=r"(?s)argument 0 \(x\).*size 3.*argument 1 \(y\).*size 4"):
        tg.vmap(f)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"size 2 on axis 1.*size 4 on axis 0"):
        tg.vmap(f, (1, 0))(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"keyword argument y.*size 4"):
        tg.vmap(f)(np.ones((3, 2)), y=np.ones((4, 2)))


def test_error_in_axes_that_do_not_match_the_arguments():
    f = lambda x, y: x * y  # noqa: E731
    with pytest.raises(ValueError, match="in_axes has 3 entries .* 2 positional arguments"):
        tg.vmap(f, (0, 0, None))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match=r"in_axes\[0\].*does not match the structure"):
        tg.vmap(lambda p, y: p[0] * y, ((0, 0), 0))([np.ones(3)], np.ones(3))
    with pytest.raises(ValueError, match=r"in_axes\[0\] has keys \['a', 'c'\] but the value has keys \['a', 'b'\]"):
        tg.vmap(lambda p: p["a"], ({"a": 0, "c": 0},))({"a": np.ones(3), "b": np.ones(3)})
    with pytest.raises(ValueError, match="out_axes.*does not match the structure"):
        tg.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(np.ones(3))


def test_error_axis_out_of_range():
    with pytest.raises(ValueError, match=r"in_axes=2 for argument 0 \(x\) is out of range: it has shape \(3, 4\)"):
        tg.vmap(lambda x: x, in_axes=2)(np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"in_axes=-3 .* out of range"):
        tg.vmap(lambda x: x, in_axes=-3)(np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"argument 1 \(s\) is out of range: it has shape \(\) .*None"):
        tg.vmap(lambda x, s: x * s)(np.ones(3), 2.0)
    with pytest.raises(ValueError, match=r"out_axes=2 is out of range for an output of rank 1"):
        tg.vmap(lambda x: x * 2.0, out_axes=2)(np.ones((3, 4)))


def test_error_all_none_and_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match="maps no argument"):
        tg.vmap(lambda x: x, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match=r"depends on the mapped inputs, but its out_axes is None .*\(4,\)"):
        tg.vmap(lambda x: x * 2.0, out_axes=None)(np.ones((3, 4)))


def test_python_control_flow_and_conversions_on_a_batched_value_raise():
    X = np.ones((3, 2))
    with pytest.raises(TypeError, match="truth value of a batched value.*tnp.where"):
        tg.vmap(lambda x: x if x[0] > 0 else -x)(X)
    with pytest.raises(TypeError, match="truth value of a batched value"):  # through a tape above it
        tg.vmap(tg.grad(lambda x: tnp.sum(x) if tnp.sum(x) > 0 else -tnp.sum(x)))(X)
    for conv in (float, int, lambda x: x.item(), lambda x: np.asarray(x)):
        with pytest.raises(TypeError, match="batched value.*differs from example to example"):
            tg.vmap(lambda x: conv(x[0]))(X)  # noqa: B023
    # outside vmap, control flow on traced values still works
    assert tg.grad(lambda x: x * 2.0 if x > 0 else -x)(1.0) == 2.0


def test_a_batched_value_that_escapes_its_vmap_raises_when_used():
    leak = []
    tg.vmap(lambda x: leak.append(x) or x)(X43)
    for use in (lambda v: v * 2.0, tnp.sin, lambda v: v[0], tnp.sum, lambda v: v + v, lambda v: v @ np.ones(3)):
        with pytest.raises(TypeError, match="used after the vmap that made it returned"):
            use(leak[0])


def test_a_tape_cannot_watch_a_batched_value_of_a_vmap_inside_it():
    with tg.Tape() as t:
        with pytest.raises(ValueError, match="cannot watch a batched value of a vmap entered inside this tape"):
            tg.vmap(lambda x: t.watch(x))(X43)


# --- batched values never leak; they read well ----------------------------------------
def test_outputs_are_plain_arrays_or_traced_one_level_down():
    out = tg.vmap(lambda x: {"a": tnp.sin(x), "b": (x, 1.0)})(X43)
    for leaf in tg.tree_flatten(out)[0]:
        assert type(leaf) is np.ndarray
    seen = []

    def f(w):
        y = tg.vmap(lambda x: tnp.sum(x * w), (0,))(X43)
        seen.append(y)
        return tnp.sum(y)

    tg.grad(f)(np.ones(3))
    assert type(seen[0]) is Traced and type(seen[0]._value) is np.ndarray  # traced on grad's tape only
    assert seen[0].shape == (4,)


def test_a_batched_value_reads_well():
    texts = []

    def f(x):
        texts.append(repr(x))
        assert x.shape == (3,) and x.ndim == 1 and x.dtype == np.float64 and len(x) == 3 and x.size == 3
        return x

    tg.vmap(f)(X43)
    assert texts[0].startswith("Batched(shape=(3,), dtype=float64, batch_size=4, level=1, values=array(")
    tg.vmap(tg.grad(lambda x: tnp.sum(f(x))))(X43)
    assert texts[1].startswith("Traced(Batched(shape=(3,)") and texts[1].endswith("level=2)")
    assert [r.shape for r in tg.vmap(lambda x: list(x))(X43)] == [(4,)] * 3  # iteration over axis 0


def test_differential_against_jax_vmap():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    X = rng(40).normal(size=(4, 3))
    w = rng(41).normal(size=(3,))

    def make(np_):
        return lambda w, x: np_.sum(np_.tanh(x * w) ** 2) + np_.sum(np_.sin(x))

    f_t, f_j = make(tnp), make(jnp)
    close(tg.vmap(f_t, (None, 0))(w, X), np.asarray(jax.vmap(f_j, (None, 0))(w, X)))
    close(tg.vmap(tg.grad(f_t), (None, 0))(w, X), np.asarray(jax.vmap(jax.grad(f_j), (None, 0))(w, X)))
    close(tg.jacrev(tg.vmap(f_t, (None, 1), 0), argnums=1)(w, X.T),
          np.asarray(jax.jacrev(jax.vmap(f_j, (None, 1), 0), argnums=1)(w, X.T)))
    close(tg.vmap(tg.vmap(f_t, (None, 0)), (0, None))(X, X),
          np.asarray(jax.vmap(jax.vmap(f_j, (None, 0)), (0, None))(X, X)))
