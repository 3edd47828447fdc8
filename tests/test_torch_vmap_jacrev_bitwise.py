"""torch.func.vmap(jacrev(f)) over a batch equals jacrev of the function summed
over the batch, bit for bit in float32, as in PyTorch's Jacobians tutorial
(which asserts it with torch.allclose's default tolerances)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad.torch as tt


def _inputs(L: Any) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(0)
    weight = L.tensor(rng.standard_normal((33, 31)).astype(np.float32))
    bias = L.tensor(rng.standard_normal(33).astype(np.float32))
    x = L.tensor(rng.standard_normal((64, 31)).astype(np.float32))
    return weight, bias, x


FUNCS = {
    "linear_tanh": lambda L, w, b, x: L.nn.functional.linear(x, w, b).tanh(),  # the tutorial's predict
    "linear": lambda L, w, b, x: L.nn.functional.linear(x, w, b),
    "matmul_sin": lambda L, w, b, x: (x @ w.t() + b).sin(),
    "two_layers": lambda L, w, b, x: L.nn.functional.linear(L.nn.functional.linear(x, w, b).tanh(), w.t()[:5], b[:5]),
}


def _jacobians(L: Any, f: Any) -> tuple[np.ndarray, np.ndarray]:
    weight, bias, x = _inputs(L)

    def predict(weight: Any, bias: Any, x: Any) -> Any:
        return f(L, weight, bias, x)

    batched = L.func.vmap(L.func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, x)

    def summed(weight: Any, bias: Any, x: Any) -> Any:
        return predict(weight, bias, x).sum(0)

    whole = L.func.jacrev(summed, argnums=2)(weight, bias, x).movedim(1, 0)
    return batched.detach().numpy(), whole.detach().numpy()


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_vmap_of_jacrev_is_jacrev_of_the_sum_bit_for_bit(name: str) -> None:
    a, b = _jacobians(tt, FUNCS[name])
    assert a.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def test_torch_agrees_and_the_facade_matches_it() -> None:
    torch = pytest.importorskip("torch")
    a, b = _jacobians(torch, FUNCS["linear_tanh"])
    np.testing.assert_array_equal(a, b)  # PyTorch's own property
    mine, _ = _jacobians(tt, FUNCS["linear_tanh"])
    np.testing.assert_allclose(mine, a, rtol=1e-5, atol=1e-6)
