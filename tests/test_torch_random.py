"""tapegrad.torch sampling with tensor parameters: normal, poisson, bernoulli,
multinomial, and the random in-place ops; their nodes, zero gradients,
distributions and errors (PyTorch's, checked against PyTorch when installed)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch


def _names(t: Any) -> str:
    return type(t.grad_fn).__name__ if t.grad_fn is not None else "None"


def test_nodes_pass_zero_gradient() -> None:
    m = torch.zeros(3, requires_grad=True)
    s = torch.ones(2, 1, requires_grad=True)
    cases = [(torch.normal(m, s), "NormalBackward3"), (torch.normal(m, 2.0), "NormalBackward1"),
             (torch.normal(0.0, s), "NormalBackward2"), (torch.poisson(m + 1), "PoissonBackward0"),
             (torch.bernoulli(torch.sigmoid(m)), "BernoulliBackward0")]
    for r, name in cases:
        assert _names(r) == name
        m.grad = s.grad = None
        (r * 3).sum().backward()
        for p in (m, s):
            assert p.grad is None or (p.grad.numpy() == 0).all()
    assert torch.normal(m, s).shape == (2, 3)
    assert torch.normal(0.0, 1.0, (2,)).grad_fn is None and torch.multinomial(torch.sigmoid(m), 2).grad_fn is None


@pytest.mark.parametrize("op", ["normal_", "uniform_", "bernoulli_"])
def test_random_inplace_ops_cut_the_gradient(op: str) -> None:
    """Redrawn values do not depend on the old ones: zero gradient (it used to flow through)."""
    x = torch.zeros(3, requires_grad=True)
    y = x.clone()
    getattr(y, op)()
    assert _names(y) == {"normal_": "NormalBackward0", "uniform_": "UniformBackward0",
                         "bernoulli_": "BernoulliBackward2"}[op]
    (y * 2).sum().backward()
    assert (x.grad.numpy() == 0).all()


def test_distributions() -> None:
    torch.manual_seed(0)
    z = torch.normal(torch.full((200, 100), 2.0), torch.full((200, 100), 3.0))
    assert abs(float(z.mean()) - 2) < 0.1 and abs(float(z.std()) - 3) < 0.1
    assert torch.normal(2.0, 3.0, size=(2, 3)).dtype == torch.float32
    assert torch.normal(torch.zeros(2, dtype=torch.float64), 1.0).dtype == torch.float64
    b = torch.bernoulli(torch.full((20000,), 0.3))
    assert set(np.unique(b.numpy())) == {0.0, 1.0} and abs(float(b.mean()) - 0.3) < 0.02
    assert abs(float(torch.bernoulli(torch.zeros(20000), p=0.7).mean()) - 0.7) < 0.02
    assert abs(float(torch.poisson(torch.full((20000,), 4.0)).mean()) - 4) < 0.1
    w = torch.tensor([0.1, 0.2, 0.7])
    c = torch.multinomial(w, 30000, replacement=True).numpy()
    assert c.dtype == np.int64
    np.testing.assert_allclose(np.bincount(c, minlength=3) / c.size, [0.1, 0.2, 0.7], atol=0.015)
    rows = torch.multinomial(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 1)
    assert rows.tolist() == [[1], [0]]
    perm = torch.multinomial(torch.tensor([0.0, 0.8, 0.2]), 3)
    assert sorted(perm.tolist()) == [0, 1, 2] and perm.tolist()[-1] == 0  # (weight 0 comes last)
    firsts = [torch.multinomial(torch.tensor([1.0, 3.0]), 2).tolist()[0] for _ in range(2000)]
    assert abs(np.mean(firsts) - 0.75) < 0.04  # without replacement: P(first = 1) = 3/4
    mask = torch.zeros(4)
    mask.bernoulli_(torch.tensor([0.0, 1.0, 0.0, 1.0]))
    assert mask.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_generator_repeats_draws() -> None:
    g = torch.Generator().manual_seed(3)
    draws = [torch.multinomial(torch.ones(10), 5, generator=g), torch.normal(torch.zeros(4), 1.0, generator=g),
             torch.bernoulli(torch.full((6,), 0.5), generator=g), torch.poisson(torch.ones(5), generator=g)]
    g.manual_seed(3)
    again = [torch.multinomial(torch.ones(10), 5, generator=g), torch.normal(torch.zeros(4), 1.0, generator=g),
             torch.bernoulli(torch.full((6,), 0.5), generator=g), torch.poisson(torch.ones(5), generator=g)]
    for a, b in zip(draws, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


ERRORS: list[tuple[str, Any]] = [
    ("normal expects all elements of std >= 0.0", lambda t: t.normal(t.zeros(2), t.tensor([1.0, -1.0]))),
    ("normal expects std >= 0.0, but found std -1", lambda t: t.normal(t.zeros(2), -1.0)),
    ("normal() received an invalid combination of arguments - got (float, float)", lambda t: t.normal(0.0, 1.0)),
    ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.", lambda t: t.bernoulli(t.tensor([1.5]))),
    ("bernoulli_ expects p to be in [0, 1], but got p=1.5", lambda t: t.bernoulli(t.ones(2), 1.5)),
    ("prob_dist must be 1 or 2 dim", lambda t: t.multinomial(t.ones(2, 2, 2), 1)),
    ("cannot sample n_sample <= 0 samples", lambda t: t.multinomial(t.ones(3), 0)),
    ("multinomial only supports floating-point dtypes for input, got: Long",
     lambda t: t.multinomial(t.tensor([1, 2]), 1)),
    ("cannot sample n_sample > prob_dist.size(-1) samples without replacement",
     lambda t: t.multinomial(t.tensor([0.2, 0.8]), 3)),
    ("probability tensor contains either `inf`, `nan` or element < 0",
     lambda t: t.multinomial(t.tensor([-0.2, 0.8]), 1)),
    ("invalid multinomial distribution (sum of probabilities <= 0)", lambda t: t.multinomial(t.zeros(2), 1)),
]


@pytest.mark.parametrize("message, call", ERRORS, ids=[m[:30] for m, _ in ERRORS])
def test_errors(message: str, call: Any) -> None:
    with pytest.raises((RuntimeError, TypeError), match=re.escape(message)):
        call(torch)


@pytest.mark.parametrize("message, call", ERRORS, ids=[m[:30] for m, _ in ERRORS])
def test_errors_are_pytorchs(message: str, call: Any) -> None:
    real = pytest.importorskip("torch")
    with pytest.raises((RuntimeError, TypeError), match=re.escape(message)):
        call(real)


def test_nodes_are_pytorchs() -> None:
    real = pytest.importorskip("torch")
    for t in (torch, real):
        m = t.zeros(3, requires_grad=True)
        got = [_names(t.normal(m, m + 1)), _names(t.normal(m, 1.0)), _names(t.normal(0.0, m + 1)),
               _names(t.poisson(m + 1)), _names(t.bernoulli(m + 0.5)), _names(m.clone().bernoulli_(0.5)),
               _names(m.clone().bernoulli_(t.full((3,), 0.5)))]
        if t is torch:
            ours = got
    assert ours == got
