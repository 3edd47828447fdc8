"""``torch.optim.Optimizer``: parameter groups, per-parameter state, ``zero_grad``.

An update is arithmetic on the parameters' buffers with the grad mode off,
as PyTorch's ``step()`` is. The subclasses write it with the array module's
in-place ufuncs on the tensors' buffers (PyTorch's fused kernels play the
same part), in the order of operations of PyTorch's single-tensor code, and
bump each updated tensor's version counter once, so a graph that saved a
parameter before ``step()`` refuses to backward through it afterwards.
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.core.traced import value
from tapegrad.torch._graph import bump
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new
from tapegrad.torch.grad_mode import enable_grad, no_grad
from tapegrad.torch.nn.modules.module import _zero_grad

__all__ = ["Optimizer"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def buffer(t: Tensor) -> Any:
    """The writable array behind tensor ``t`` (copied in first if it is read-only)."""
    a = t._value
    if type(a) is not np.ndarray:
        a = value(a)
    if not getattr(a.flags, "writeable", True):
        t.data = _new(a.copy())
        a = value(t._value)
    return a


def grad_array(p: Tensor) -> Any:
    """The array of ``p.grad`` (a plain array even if the gradient has a graph)."""
    return value(p._grad._value)


def new_state(like: Any) -> Tensor:
    """A zero tensor shaped and typed as the array ``like`` (optimizer state)."""
    return _new(array_module(like).zeros_like(like))


def updated(*tensors: Tensor) -> None:
    """Record an in-place update of ``tensors``' buffers (bump their versions)."""
    bump(*tensors)


def _use_grad(step: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(step)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


class Optimizer:
    """Base class of the optimizers, as ``torch.optim.Optimizer``.

    Args:
        params: an iterable of tensors, or of dicts (parameter groups) each with
            a ``"params"`` entry and options overriding ``defaults``.
        defaults: the default options of every group.
    """

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {params.type()}")
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the rest from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        param_group = dict(param_group)
        param_group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to ``None`` (the default) or zeros."""
        for g in self.param_groups:
            for p in g["params"]:
                _zero_grad(p, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        raise NotImplementedError

    def _closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _params_with_grad(self, group: dict[str, Any]) -> Iterable[Tensor]:
        return [p for p in group["params"] if p._grad is not None]

    # --- state_dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: state}, "param_groups": [options with "params": [indices]]}``,
        parameters numbered in group order, as PyTorch packs them."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state saved by ``state_dict`` (tensors are copied
        and cast to their parameter's dtype; ``step`` keeps its own)."""
        state_dict = copy.deepcopy(state_dict)
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(self.param_groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {i: p for g_saved, g in zip(saved, self.param_groups)
                    for i, p in zip(g_saved["params"], g["params"])}
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index[i]
            cast = {}
            for k, v in s.items():
                if isinstance(v, Tensor) and k != "step":
                    v = _new(np.array(value(v._value), dtype=value(p._value).dtype))
                cast[k] = v
            self.state[p] = cast
        for g, g_saved in zip(self.param_groups, saved):
            g.update({k: v for k, v in g_saved.items() if k != "params"})

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def check_nonnegative(**values: float) -> None:
    """PyTorch's checks of hyperparameters that must be >= 0, with its messages
    (``lr`` is the "learning rate", ``eps`` the "epsilon value", any other
    ``name`` the "name value")."""
    for name, v in values.items():
        if not 0.0 <= v:
            what = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
            raise ValueError(f"Invalid {what}: {v}")


def check_unsupported(name: str, **flags: Any) -> None:
    """Refuse PyTorch options that have no meaning here (``differentiable``, ``fused`` ...)."""
    for k, v in flags.items():
        if v:
            raise NotImplementedError(f"tapegrad.torch.optim.{name}: {k}=True is not supported")
