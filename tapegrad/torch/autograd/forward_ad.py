"""``torch.autograd.forward_ad``: dual tensors (``dual_level``, ``make_dual``, ``unpack_dual``).

tapegrad's forward mode (``tapegrad.jvp``) runs a *function* on a
forward trace; an eager ``with dual_level():`` block is no function, and the
forward trace is not part of tapegrad's public API. So the facade computes
the tangents from its own tape, as ``torch.autograd.functional.jvp`` does
(the Jacobian-vector product as the derivative of a vector-Jacobian product):
``make_dual(p, t)`` gives a leaf that requires grad, ops record on the facade
tape as usual, and ``unpack_dual(y).tangent`` is ``d/du <J^T u, t>``, summed
over the level's duals ``y`` depends on. A custom ``autograd.Function`` with a
``jvp`` staticmethod gives its outputs' tangents itself (see
``tangent_of`` / ``set_tangent``).

Differences from PyTorch: a dual tensor (and what is computed from it)
requires grad, so its repr shows a ``grad_fn``; its tangent is computed when
``unpack_dual`` asks for it, by two reverse passes.
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from typing import Any

from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.autograd._engine import grad
from tapegrad.torch.grad_mode import enable_grad

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

# the open levels; each maps the id of each dual tensor made on it to (weak reference to it, its tangent)
_levels: list[dict[int, tuple[weakref.ReferenceType[Tensor], Tensor]]] = []


def _duals() -> dict[Tensor, Tensor]:
    """The live duals of the current level and their tangents (by identity)."""
    level = _levels[-1]
    out = {}
    for k, (ref, tangent) in list(level.items()):
        t = ref()
        if t is None:
            del level[k]
        else:
            out[k] = (t, tangent)
    return out  # type: ignore[return-value]


def enter_dual_level() -> int:
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append({})
    return len(_levels) - 1


def exit_dual_level(*, level: int | None = None) -> None:
    if not _levels:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created.")
    _levels.pop()


class dual_level:  # noqa: N801  (PyTorch's name)
    """Context manager of a forward AD level: the duals made in it lose their tangents on exit."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A tensor with ``tensor``'s value that carries ``tangent`` (same shape) on the current level."""
    if not _levels:
        raise RuntimeError("To create a dual Tensor, you need to be in a forward AD level. "
                           "Please use `with fwAD.dual_level():` before calling make_dual.")
    if not isinstance(tangent, Tensor) or not isinstance(tensor, Tensor):
        raise TypeError("make_dual(): expected Tensor arguments")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                           f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
                           f"while the given forward gradient is of size {list(tangent.shape)}.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    dual = tensor.detach().requires_grad_(True)
    set_tangent(dual, tangent)
    return dual


def set_tangent(t: Tensor, tangent: Tensor) -> None:
    """Give ``t`` (a new leaf that requires grad) its tangent on the current level."""
    _levels[-1][id(t)] = (weakref.ref(t), tangent)


def tangent_of(t: Any) -> Any:
    """The tangent of ``t`` on the current level (None: it depends on no dual)."""
    if not _levels or not isinstance(t, Tensor):
        return None
    duals = _duals()
    own = duals.get(id(t))  # type: ignore[call-overload]
    if own is not None:
        return own[1]
    if not t.requires_grad or not (t.is_floating_point() or t.is_complex()):
        return None
    pairs_all: list[tuple[Tensor, Tensor]] = list(duals.values())  # type: ignore[arg-type]
    ins = [d for d, _ in pairs_all]
    if not ins:
        return None
    with enable_grad():
        u = t.detach() * 0
        u.requires_grad_(True)
        gs = grad(t, ins, u, retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, v) for g, (_, v) in zip(gs, pairs_all, strict=True) if g is not None]
        if not pairs:
            return None
        inner = sum(((g * v.detach()).sum() for g, v in pairs[1:]), (pairs[0][0] * pairs[0][1].detach()).sum())
        if not inner.requires_grad:
            return t.detach() * 0
        (jv,) = grad(inner, [u], retain_graph=True, allow_unused=True)
    return jv if jv is not None else t.detach() * 0


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: the tangent None outside a level or for a tensor that depends on no dual."""
    if not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(tensor.detach(), tangent)

__getattr__ = missing_names(__name__, "torch.autograd.forward_ad")
