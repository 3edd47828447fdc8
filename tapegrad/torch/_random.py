"""Sampling with tensor parameters: ``torch.normal``, ``torch.poisson``,
``torch.bernoulli`` / ``Tensor.bernoulli(_)`` and ``torch.multinomial``.

Each draws from ``generator`` (a ``torch.Generator``) or the default one, so a
seed repeats a run (NumPy's stream, not PyTorch's). As in PyTorch, a sample
is not differentiable in its parameters: where a parameter requires grad
the result has PyTorch's node (``NormalBackward1/2/3``, ``PoissonBackward0``,
``BernoulliBackward0``) and passes an exact zero gradient back to it.
Errors are PyTorch's.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.traced import value
from tapegrad.torch import _dtype as D
from tapegrad.torch._creation import Generator, _finish, _normal, _rng, tensor
from tapegrad.torch._prims import stepped
from tapegrad.torch._tensor_base import OpsBase as _Base
from tapegrad.torch._tensor_base import Tensor, TensorBase, _new, _result

__all__ = ["normal", "poisson"]

_NORMAL_SIGNATURES = (
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, Tensor out = None, "
    "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
    "bool pin_memory = False, bool requires_grad = False)\n"
)


def _zero_grad_to(sample: Any, params: tuple[TensorBase, ...], name: str) -> Tensor:
    """Tensor of array ``sample`` whose node ``name`` passes zero gradient to ``params``."""
    shape = np.shape(sample)
    xs = [tnp.broadcast_to(p._value, shape) for p in params]
    return _result(stepped(xs[0] if len(xs) == 1 else tnp.add(*xs), sample), name, params)


def _out(result: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return result
    from tapegrad.torch.grad_mode import no_grad

    with no_grad():
        out.copy_(result)
    return out


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           out: Tensor | None = None, dtype: Any = None, layout: Any = None, device: Any = None,
           pin_memory: builtins.bool = False, requires_grad: builtins.bool = False) -> Tensor:
    """Normal samples of mean ``mean`` and standard deviation ``std``, tensors
    (broadcast together) or numbers; with two numbers, of shape ``size``."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mt or st):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            f"({type(mean).__name__}, {type(std).__name__}), but expected one of:\n"
                            + _NORMAL_SIGNATURES)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        dt = D.to_np(dtype if dtype is not None else D.get_default_dtype())
        return _out(_finish(mean + std * _normal(shape, dt, generator), None, device, requires_grad), out)
    if not st and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    ins = tuple(t for t in (mean, std) if isinstance(t, Tensor))
    if st and bool((value(std._value) < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    mv, sv = (value(t._value) if isinstance(t, Tensor) else t for t in (mean, std))
    dt = np.result_type(*(value(t._value) for t in ins))
    shape = np.broadcast_shapes(*(np.shape(value(t._value)) for t in ins))
    z = _normal(shape, dt, generator)
    name = "NormalBackward3" if mt and st else "NormalBackward1" if mt else "NormalBackward2"
    return _out(_zero_grad_to((mv + sv * z).astype(dt, copy=False), ins, name), out)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """Poisson counts of rates ``input`` (its dtype; ``PoissonBackward0``: zero gradient)."""
    lam = value(input._value)
    if bool((lam < 0).any()) or not bool(np.isfinite(lam).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _zero_grad_to(_rng(generator).poisson(lam).astype(lam.dtype), (input,), "PoissonBackward0")


def _check_p(p: Any) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


class RandomOps(_Base):
    """The sampling methods this module adds to ``Tensor`` (``Tensor`` inherits them: see ``_tensor.py``)."""

    def bernoulli(self, p: Any = None, *, generator: Generator | None = None) -> Tensor:
        """0/1 draws with probabilities ``self`` (or the number ``p``), in ``self``'s dtype."""
        a = value(self._value)
        rng = _rng(generator)
        if p is not None:
            _check_p(p)
            return _new((rng.random(a.shape) < p).astype(a.dtype))
        if bool(((a < 0) | (a > 1)).any()) or bool(np.isnan(a).any()):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        return _zero_grad_to((rng.random(a.shape) < a).astype(a.dtype), (self,), "BernoulliBackward0")

    def bernoulli_(self, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
        """Fill ``self`` with 0/1 draws of probability ``p`` (a number or a tensor)."""
        rng = _rng(generator)
        if isinstance(p, Tensor):
            pv = value(p._value)
            return self._redraw("BernoulliBackward1", lambda shape: rng.random(shape) < pv)
        _check_p(p)
        return self._redraw("BernoulliBackward2", lambda shape: rng.random(shape) < p)

    def multinomial(self, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Generator | None = None) -> Tensor:
        """Indices drawn from the categorical distribution(s) of weights ``self``
        (one row, or one per row of a matrix); without ``replacement`` each index
        at most once (int64)."""
        a = value(self._value)
        if a.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if a.dtype.kind != "f":
            raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                               f"{self._legacy_dtype_name()[:-6]}")
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        n = a.shape[-1]
        if not replacement and num_samples > n:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        if not bool(np.isfinite(a).all()) or bool((a < 0).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        w = np.atleast_2d(a).astype(np.float64)
        total = w.sum(-1, keepdims=True)
        if bool((total <= 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rng = _rng(generator)
        if replacement:  # inverse CDF, row by row
            cdf = np.cumsum(w / total, -1)
            u = rng.random((w.shape[0], num_samples))
            idx = np.stack([np.minimum(np.searchsorted(c, r, side="right"), n - 1) for c, r in zip(cdf, u)])
        else:  # exponential race: the smallest E_i / w_i come first (weight 0 never before others)
            with np.errstate(divide="ignore"):
                keys = rng.exponential(size=w.shape) / w
            idx = np.argsort(keys, axis=-1, kind="stable")[:, :num_samples]
        idx = idx.astype(np.int64)
        return tensor(idx[0] if a.ndim == 1 else idx)
