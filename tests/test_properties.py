"""Property tests (hypothesis): broadcasting and reductions over random shapes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg
import tapegrad.numpy as tnp

shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


@settings(max_examples=60, deadline=None)
@given(shapes, st.integers(0, 2**31 - 1))
def test_broadcast_product_gradients_sum_back(bs, seed: int) -> None:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(bs.input_shapes[0])
    y = rng.standard_normal(bs.input_shapes[1])
    gx, gy = tg.grad(lambda x, y: tnp.sum(x * y + x), argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape
    # compare with sum-to-shape done by NumPy's own broadcasting algebra
    full_x = np.broadcast_to(y, bs.result_shape) + 1.0
    full_y = np.broadcast_to(x, bs.result_shape)
    np.testing.assert_allclose(gx, _sum_to(full_x, x.shape))
    np.testing.assert_allclose(gy, _sum_to(full_y, y.shape))


def _sum_to(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=axes, keepdims=True) if axes else a


@settings(max_examples=60, deadline=None)
@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), st.data())
def test_reductions_over_any_axis_and_keepdims(shape, data) -> None:  # noqa: ANN001
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdims = data.draw(st.booleans())
    x = np.random.default_rng(0).standard_normal(shape)
    g = tg.grad(lambda x: tnp.sum(tnp.mean(x, axis=axis, keepdims=keepdims) ** 2))(x)
    m = np.mean(x, axis=axis, keepdims=True)
    np.testing.assert_allclose(g, np.broadcast_to(2 * m / shape[axis], shape), rtol=1e-12)
