"""``torch.Generator``: seeding, state, and every ``generator=`` of the facade honoured
(reproducible per generator; the streams are NumPy's, not PyTorch's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
from tapegrad.torch import nn
from tapegrad.torch.utils.data import DataLoader, RandomSampler, TensorDataset, random_split


def _gen(seed: int) -> Any:
    return torch.Generator().manual_seed(seed)


DRAWS = {
    "rand": lambda g: torch.rand(2, 3, generator=g),
    "randn": lambda g: torch.randn(4, generator=g, dtype=torch.float64),
    "randint": lambda g: torch.randint(0, 100, (5,), generator=g),
    "randperm": lambda g: torch.randperm(9, generator=g),
    "rand_like": lambda g: torch.rand_like(torch.zeros(3), generator=g),
    "randn_like": lambda g: torch.randn_like(torch.zeros(3), generator=g),
    "randint_like": lambda g: torch.randint_like(torch.zeros(3), 10, generator=g),
    "normal_": lambda g: torch.empty(4).normal_(generator=g),
    "uniform_": lambda g: torch.empty(4).uniform_(-1, 1, generator=g),
    "init.kaiming_uniform_": lambda g: nn.init.kaiming_uniform_(torch.empty(3, 4), generator=g),
    "init.xavier_normal_": lambda g: nn.init.xavier_normal_(torch.empty(3, 4), generator=g),
    "init.orthogonal_": lambda g: nn.init.orthogonal_(torch.empty(3, 3), generator=g),
    "init.trunc_normal_": lambda g: nn.init.trunc_normal_(torch.empty(5), generator=g),
    "randn out=": lambda g: torch.randn(3, generator=g, out=torch.empty(3)),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_each_draw_follows_its_generator(name: str) -> None:
    draw = DRAWS[name]
    a = draw(_gen(7))
    torch.manual_seed(123)  # the default generator plays no part
    b = draw(_gen(7))
    assert torch.equal(a, b)
    assert not torch.equal(draw(_gen(7)), draw(_gen(8)))
    g = _gen(7)
    first, second = draw(g), draw(g)  # the generator advances
    assert torch.equal(first, a) and not torch.equal(first, second)


def test_default_generator_is_untouched_by_a_private_one() -> None:
    torch.manual_seed(0)
    want = torch.rand(3)
    torch.manual_seed(0)
    torch.rand(5, generator=_gen(1))
    assert torch.equal(torch.rand(3), want)


def test_seed_initial_seed_and_state() -> None:
    g = torch.Generator()
    assert g.initial_seed() == 67280421310721 and g.device == torch.device("cpu")
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.dim() == 1
    x = torch.randn(4, generator=g)
    g.set_state(state)
    assert torch.equal(torch.randn(4, generator=g), x)
    h = torch.Generator().set_state(state)
    assert h.initial_seed() == s and torch.equal(torch.randn(4, generator=h), x)
    assert torch.manual_seed(3) is torch.default_generator and torch.initial_seed() == 3
    saved = torch.get_rng_state()
    y = torch.rand(2)
    torch.set_rng_state(saved)
    assert torch.equal(torch.rand(2), y)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(torch.zeros(3))
    with pytest.raises(RuntimeError, match="not a state from Generator.get_state"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2**64)


def test_generator_is_never_ignored() -> None:
    with pytest.raises(TypeError, match="generator must be a tapegrad.torch.Generator, got int"):
        torch.randn(2, generator=5)
    with pytest.raises(TypeError, match="zeros\\(\\) got an unexpected keyword argument 'generator'"):
        torch.zeros(2, generator=_gen(0))
    with pytest.raises(TypeError, match="zeros_like\\(\\) got an unexpected keyword argument 'generator'"):
        torch.zeros_like(torch.ones(2), generator=_gen(0))


def test_data_loading_follows_the_generator() -> None:
    ds = TensorDataset(torch.arange(20))

    def epochs(seed: int) -> list[list[int]]:
        loader = DataLoader(ds, batch_size=6, shuffle=True, generator=_gen(seed))
        return [[int(i) for b in loader for i in b[0]] for _ in range(2)]

    a = epochs(1)
    torch.manual_seed(99)
    assert epochs(1) == a and a[0] != a[1] and epochs(2) != a
    assert sorted(a[0]) == list(range(20))
    sampler = list(RandomSampler(range(10), replacement=True, num_samples=6, generator=_gen(3)))
    assert sampler == list(RandomSampler(range(10), replacement=True, num_samples=6, generator=_gen(3)))
    split = [list(s.indices) for s in random_split(range(10), [0.7, 0.3], generator=_gen(4))]
    assert split == [list(s.indices) for s in random_split(range(10), [0.7, 0.3], generator=_gen(4))]
    assert sorted(split[0] + split[1]) == list(range(10)) and len(split[0]) == 7


def test_vmap_randomness_still_sees_the_default_generator() -> None:
    torch.manual_seed(0)
    out = torch.func.vmap(lambda x: x + torch.rand(()), randomness="different")(torch.zeros(4))
    assert len(set(np.round(out.numpy(), 6).tolist())) == 4
    with pytest.raises(RuntimeError):
        torch.func.vmap(lambda x: x + torch.rand(()))(torch.zeros(2))
