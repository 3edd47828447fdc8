"""``std`` where there is no spread (one element along the axis, or equal
values): its value is 0 and its gradient is 0, as PyTorch and HIPS autograd
give (not NaN: sqrt's infinite slope at 0 times var's zero one), at every
order and under every transform."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

CASES = [
    ("one element", np.array([3.0]), None),
    ("equal values", np.array([2.0, 2.0, 2.0]), None),
    ("a length-1 axis", np.array([[1.0], [2.0]]), 1),
    ("one spread row, one flat", np.array([[1.0, 3.0], [2.0, 2.0]]), 1),
]


@pytest.mark.parametrize(("what", "x", "axis"), CASES, ids=[c[0] for c in CASES])
def test_gradient_is_finite_and_zero_where_there_is_no_spread(what: str, x: np.ndarray, axis: int | None) -> None:
    f = lambda x: tnp.sum(tnp.std(x, axis=axis))  # noqa: E731
    with np.errstate(all="raise"):  # (no NaN made and hidden on the way)
        g = tg.grad(f)(x)
        h = tg.hessian(f)(x)
    want = np.zeros_like(x)
    if what == "one spread row, one flat":  # the spread row: (x - mean) / (n std)
        want[0] = [-0.5, 0.5]
    np.testing.assert_allclose(g, want, atol=1e-15)
    assert np.all(np.isfinite(h))
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), g, atol=1e-15)
    np.testing.assert_allclose(tg.jvp(f, (x,), (np.ones_like(x),))[1], np.sum(want), atol=1e-15)


def test_values_dtypes_and_vmap_are_numpys() -> None:
    x32 = np.array([[1.0, 1.0], [1.0, 3.0]], np.float32)
    got = tg.vmap(lambda r: tnp.std(r))(x32)
    np.testing.assert_array_equal(got, np.std(x32, axis=1))
    assert got.dtype == np.float32
    g = tg.vmap(tg.grad(lambda r: tnp.std(r)))(x32)
    np.testing.assert_allclose(g, [[0.0, 0.0], [-0.5, 0.5]], atol=1e-7)
    assert g.dtype == np.float32


def test_as_pytorch() -> None:
    torch = pytest.importorskip("torch")
    for _, x, axis in CASES:
        t = torch.tensor(x, requires_grad=True)
        (t.std(dim=axis, unbiased=False) if axis is not None else t.std(unbiased=False)).sum().backward()
        ours = tg.grad(lambda x, axis=axis: tnp.sum(tnp.std(x, axis=axis)))(x)
        np.testing.assert_allclose(ours, t.grad.numpy(), atol=1e-15)
