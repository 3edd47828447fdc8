"""JAX's functional updates: x.at[idx].set/add/... on traced values and
tnp.at(x)[idx] on any array; the original never changes, repeated positions
and out-of-bound indices behave as in JAX, gradients under every transform."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = np.arange(5.0)
REP = np.array([0, 0, 3, -1])  # a repeat and a negative index


def test_jax_documented_examples() -> None:
    x = np.arange(5.0)
    assert tnp.at(x)[2].get() == 2.0
    np.testing.assert_array_equal(tnp.at(x)[2].add(10), [0, 1, 12, 3, 4])
    np.testing.assert_array_equal(tnp.at(x)[10].add(10), x)  # dropped
    np.testing.assert_array_equal(tnp.at(x)[20].add(10, mode="clip"), [0, 1, 2, 3, 14])
    assert tnp.at(x)[20].get() == 4.0  # clipped
    assert np.isnan(tnp.at(x)[20].get(mode="fill"))
    assert tnp.at(x)[20].get(mode="fill", fill_value=-1) == -1
    np.testing.assert_array_equal(tnp.at(x)[-1].set(99), [0, 1, 2, 3, 99])
    np.testing.assert_array_equal(tnp.at(x)[-1].set(99, wrap_negative_indices=False, mode="drop"), x)
    np.testing.assert_array_equal(x, np.arange(5.0))  # never in place
    with pytest.raises(ValueError, match="Unknown gather mode"):
        tnp.at(x)[0].get(mode="wrap")
    with pytest.raises(IndexError):
        tnp.at(x)[7].set(1.0, mode="promise_in_bounds")


def test_repeated_positions_against_numpy_ufunc_at() -> None:
    v = np.array([2.0, 3.0, 4.0, 5.0])
    for method, ufunc, x in [("add", np.add, X), ("multiply", np.multiply, X + 1), ("min", np.minimum, X),
                             ("max", np.maximum, X), ("power", None, X + 1), ("divide", None, X + 1)]:
        want = x.copy()
        if ufunc is not None:
            ufunc.at(want, REP, v)
        elif method == "power":
            want[[0, 3, 4]] = [1.0 ** 6.0, 4.0 ** 4.0, 5.0 ** 5.0]  # (x ** a) ** b
        else:
            want[[0, 3, 4]] = [1.0 / 6.0, 4.0 / 4.0, 5.0 / 5.0]
        np.testing.assert_allclose(getattr(tnp.at(x)[REP], method)(v), want, err_msg=method)
    np.testing.assert_array_equal(tnp.at(X)[REP].set(v), [3.0, 1, 2, 4, 5])  # the last of the repeats wins
    np.testing.assert_array_equal(tnp.at(X)[REP].subtract(1.0), [-2.0, 1, 2, 2, 3])
    np.testing.assert_array_equal(tnp.at(X)[REP].apply(lambda a: a * 10), [0.0, 1, 2, 30, 40])
    np.testing.assert_array_equal(tnp.at(X + 1)[REP].apply(lambda a: a * 10), [100.0, 2, 3, 40, 50])


@pytest.mark.parametrize("key", [
    (slice(None), [1, 1, 2]), ([0, 0], [1, 1]), (1, [0, 0, 3]), ([[0], [2]], [1, 1]), ([0, 0], slice(None), [1, 1]),
    (np.array([True, False, True]), [2, 2]), (Ellipsis, [3, 3]), (None, 0, [1, 1]),
])
def test_repeats_in_multidimensional_indices(key) -> None:  # noqa: ANN001
    x = np.arange(1.0, 1.0 + 3 * 4 * 5).reshape(3, 4, 5)[..., :4] if len(key) == 3 and key[1] == slice(None) else \
        np.arange(1.0, 13.0).reshape(3, 4)
    sel = x[key].shape
    v = np.arange(1.0, 1.0 + np.prod(sel)).reshape(sel)
    for method, ufunc in [("add", np.add), ("multiply", np.multiply), ("max", np.maximum)]:
        want = x.copy()
        ufunc.at(want, key, v)
        np.testing.assert_allclose(getattr(tnp.at(x)[key], method)(v), want, err_msg=f"{method} {key}")


def test_gradients_against_finite_differences() -> None:
    v = np.array([2.0, 3.0, 4.0, 5.0])
    for method in ("set", "add", "multiply", "divide", "power", "min", "max"):
        def f(x, v, method=method):  # noqa: ANN001, ANN202
            return tnp.sum(tnp.sin(getattr(tnp.at(x)[REP], method)(v * 0.7)) * tnp.arange(1.0, 6.0))

        tg.check_grads(f, (X + 0.5, v), modes=("rev", "fwd"), order=2)
    tg.check_grads(lambda x: tnp.sum(tnp.at(x)[1:3].get() * x[:2]), (X,), order=2)


def test_set_gives_the_gradient_to_the_update_that_wins() -> None:
    g = tg.grad(lambda v: tnp.sum(tnp.at(X)[REP].set(v) ** 2))(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 4.0, 6.0, 8.0])
    g = tg.grad(lambda x: tnp.sum(tnp.at(x)[REP].set(0.0) * np.arange(5.0)))(X)
    np.testing.assert_array_equal(g, [0.0, 1.0, 2.0, 0.0, 0.0])
    # add: each update gets its position's cotangent, repeats included
    g = tg.grad(lambda v: tnp.sum(tnp.at(X)[REP].add(v) * np.arange(5.0)))(np.ones(4))
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0, 4.0])


def test_the_property_on_traced_values_under_every_transform() -> None:
    def f(x):  # noqa: ANN001, ANN202
        return x.at[REP].add(x[:4] ** 2).at[1].multiply(x[2])

    want = tnp.at(tnp.at(X)[REP].add(X[:4] ** 2))[1].multiply(X[2])
    np.testing.assert_allclose(tg.jit(f)(X), want)
    J = tg.jacrev(f)(X)
    np.testing.assert_allclose(tg.jacfwd(f)(X), J)
    np.testing.assert_allclose(tg.vmap(f)(np.stack([X, X])), np.stack([want, want]))
    np.testing.assert_allclose(tg.vmap(tg.jacrev(f))(np.stack([X, X])), np.stack([J, J]))
    np.testing.assert_allclose(tg.jit(tg.jacrev(f))(X), J)


def test_indices_computed_under_vmap_and_jit() -> None:
    idx = np.array([[0, 0, 2], [1, 4, 4]])
    got = tg.vmap(lambda r, j: r.at[j].add(1.0))(np.zeros((2, 5)), idx)
    np.testing.assert_array_equal(got, [[2, 0, 1, 0, 0], [0, 1, 0, 0, 2]])  # repeats accumulate
    got = tg.jit(lambda r, j: r.at[j].add(1.0))(np.zeros(5), idx[0])
    np.testing.assert_array_equal(got, [2, 0, 1, 0, 0])
    got = tg.vmap(lambda r, j: r.at[j].set(7.0))(np.zeros((2, 5)), idx)
    np.testing.assert_array_equal(got, [[7, 0, 7, 0, 0], [0, 7, 0, 0, 7]])


def test_dtype_of_the_array_is_kept() -> None:
    x = np.zeros(3, np.float32)
    out = tnp.at(x)[0].set(1.5)
    assert out.dtype == np.float32
    assert tg.grad(lambda v: tnp.sum(tnp.at(x)[1].add(v)))(np.float32(2.0)) == 1.0
    assert tnp.at(np.arange(3))[0].add(2).tolist() == [2, 1, 2]
