"""tg.ravel_pytree: one flat vector and back, differentiable, under vmap and jit."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

Pair = namedtuple("Pair", "a b")


def _tree() -> dict:
    return {"w": np.arange(6.0).reshape(2, 3), "b": (np.array([7.0, 8.0]), None, 9.0),
            "p": Pair(np.array(10.0), [np.ones((1, 2))])}


def test_exported() -> None:
    assert "ravel_pytree" in tg.__all__


def test_roundtrip_order_and_shapes() -> None:
    t = _tree()
    flat, unravel = tg.ravel_pytree(t)
    assert flat.shape == (12,) and flat.dtype == np.float64
    leaves, _ = tg.tree_flatten(t)
    np.testing.assert_array_equal(flat, np.concatenate([np.ravel(x) for x in leaves]))
    back = unravel(flat)
    assert back["b"][1] is None and isinstance(back["p"], Pair)
    for x, y in zip(tg.tree_flatten(back)[0], leaves):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_array_equal(x, y)


def test_dtypes() -> None:
    t = [np.array([1, 2], np.int32), np.array([0.5], np.float32)]
    flat, unravel = tg.ravel_pytree(t)
    assert flat.dtype == np.result_type(np.int32, np.float32)
    a, b = unravel(flat)
    assert a.dtype == np.int32 and b.dtype == np.float32
    np.testing.assert_array_equal(a, [1, 2])
    flat32, un32 = tg.ravel_pytree([np.ones(2, np.float32)])
    assert flat32.dtype == np.float32 and un32(flat32)[0].dtype == np.float32


def test_empty_and_single() -> None:
    flat, unravel = tg.ravel_pytree({})
    assert flat.shape == (0,) and unravel(flat) == {}
    flat, unravel = tg.ravel_pytree(np.ones((2, 2)))
    assert flat.shape == (4,) and unravel(flat).shape == (2, 2)


def test_wrong_length_raises() -> None:
    _, unravel = tg.ravel_pytree([np.ones(3)])
    with pytest.raises(ValueError, match="3 elements"):
        unravel(np.ones(4))


def test_gradient_through_ravel() -> None:
    t = _tree()

    def f(tree):
        flat, _ = tg.ravel_pytree(tree)
        return tnp.sum(flat ** 2 * np.arange(12.0))

    g = tg.grad(f)(t)
    flat, unravel = tg.ravel_pytree(t)
    want = unravel(2 * flat * np.arange(12.0))
    for x, y in zip(tg.tree_flatten(g)[0], tg.tree_flatten(want)[0]):
        np.testing.assert_allclose(x, y)


def test_gradient_through_unravel() -> None:
    t = _tree()
    flat, unravel = tg.ravel_pytree(t)

    def f(v):
        tree = unravel(v)
        return tnp.sum(tree["w"] ** 2) + tree["b"][2] * tnp.sum(tree["p"].b[0])

    g = tg.grad(f)(flat)
    # keys sorted: b[0] (2), b[2] (1), p.a (1), p.b[0] (2), w (6)
    want = np.zeros(12)
    want[2] = np.sum(flat[4:6])
    want[4:6] = flat[2]
    want[6:] = 2 * flat[6:]
    np.testing.assert_allclose(g, want)
    tg.check_grads(lambda v: unravel(v)["w"] * unravel(v)["b"][2], [flat], order=2)


def test_under_vmap_and_jit() -> None:
    xs = np.arange(12.0).reshape(3, 4)

    def f(x):
        flat, unravel = tg.ravel_pytree({"a": x[:2], "b": x[2:] * 2.0})
        return unravel(flat * 3.0)["b"]

    got = tg.vmap(f)(xs)
    np.testing.assert_allclose(got, xs[:, 2:] * 6.0)
    np.testing.assert_allclose(tg.jit(f)(xs[0]), xs[0, 2:] * 6.0)
    np.testing.assert_allclose(tg.jit(tg.vmap(f))(xs), xs[:, 2:] * 6.0)
    g = tg.grad(lambda x: tnp.sum(tg.vmap(f)(x)))(xs)
    want = np.zeros_like(xs)
    want[:, 2:] = 6.0
    np.testing.assert_allclose(g, want)
