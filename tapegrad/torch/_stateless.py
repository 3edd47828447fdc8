"""``torch.func.functional_call`` and ``stack_module_state``: modules as functions of their tensors.

``functional_call`` puts the given tensors in place of a module's parameters
and buffers, by name, for one call (as ``torch.nn.utils.stateless`` does);
``stack_module_state`` stacks the tensors of same-class modules for ``vmap``
over an ensemble; ``make_functional`` and ``make_functional_with_buffers``
(functorch's older spelling) return a module copy as a function of its tensors.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from tapegrad.torch import _creation
from tapegrad.torch._tensor import Tensor

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "functional_call", "make_functional",
           "make_functional_with_buffers", "stack_module_state"]


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced by the given
    tensors (by name: ``"weight"``, ``"0.bias"``, ...), restoring them after.

    ``parameter_and_buffer_dicts`` is a dict or a tuple/list of dicts (their
    keys must not repeat); names it does not give keep the module's own
    tensors (``strict=True``: every parameter and buffer must be given, and
    no other name). With ``tie_weights``, a tensor given for one of the names
    of a tied parameter replaces it under all of them. ``args`` is one
    argument or a tuple of them.

    Examples:
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> functional_call(model, params, (x,))
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        given = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        given = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, given, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def _all_names(module: Any) -> dict[str, Any]:
    """Every parameter and buffer by each of its names (tied ones under several)."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(named: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` plus, for a name of a tied tensor, the same value under its
    other names (PyTorch's ``_untie_named_tensors_map``)."""
    by_tensor: dict[int, set[str]] = {}
    for k, v in named.items():
        by_tensor.setdefault(id(v), set()).add(k)
    tied = {k: ks for ks in by_tensor.values() if len(ks) > 1 for k in ks}
    out = dict(given)
    for k in given:
        if k not in tied:
            continue
        if len({id(given[t]) for t in tied[k] if t in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[k])}, which are tied. "
                             "Consider using tie_weights=False")
        for t in tied[k]:
            out[t] = given[k]
    return out


@contextlib.contextmanager
def _reparametrize(module: Any, given: dict[str, Any], tie_weights: bool, strict: bool) -> Any:
    named = _all_names(module)
    if tie_weights:
        given = _untie(named, given)
    if strict:
        missing = sorted(set(named) - set(given))
        unexpected = sorted(set(given) - set(named))
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(msgs))
    undo: list[tuple[Any, str, str | None, Any]] = []
    try:
        for k, v in given.items():
            owner, _, attr = k.rpartition(".")
            undo.append(_swap(_submodule(module, owner), attr, v))
        yield
    finally:
        for mod, attr, store, old in reversed(undo):
            if store is None:
                mod.__dict__.pop(attr, None)
            elif store == "__dict__":
                mod.__dict__[attr] = old
            else:
                mod.__dict__[store][attr] = old


def _submodule(module: Any, path: str) -> Any:
    mod = module
    for item in path.split(".") if path else ():
        sub = mod.__dict__["_modules"].get(item)
        if sub is None:
            raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
        mod = sub
    return mod


def _swap(mod: Any, attr: str, v: Any) -> tuple[Any, str, str | None, Any]:
    """Put ``v`` in place of ``mod``'s parameter or buffer ``attr`` (any
    tensor, not only a Parameter: the forward reads it by name); return how
    to undo it."""
    for store in ("_parameters", "_buffers"):
        d = mod.__dict__[store]
        if attr in d:
            old = d[attr]
            d[attr] = v
            return mod, attr, store, old
    if attr in mod.__dict__:
        old = mod.__dict__[attr]
        mod.__dict__[attr] = v
        return mod, attr, "__dict__", old
    mod.__dict__[attr] = v
    return mod, attr, None, None


def stack_module_state(models: Any) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: each parameter and buffer of the (same-class)
    ``models`` stacked along a new first dimension, for ``vmap`` over an
    ensemble with ``functional_call``. Stacked parameters are new leaves
    that require grad (as PyTorch makes them).

    Examples:
        >>> params, buffers = stack_module_state([nn.Linear(3, 2) for _ in range(5)])
        >>> params["weight"].shape
        torch.Size([5, 2, 3])
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors: list[Tensor], name: str) -> Tensor:
    needs = [t.requires_grad for t in tensors]
    if any(needs) and not all(needs):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out: Tensor = _creation.stack(tensors)
    if all(needs):
        out = out.detach().requires_grad_()
    return out


class FunctionalModule:
    """The function ``make_functional`` returns: ``fmodel(params, *args, **kwargs)``
    calls a copy of the module with ``params`` (in ``named_parameters()`` order)
    in place of its parameters. ``train()``/``eval()`` set the copy's mode.
    (functorch's is an ``nn.Module``; this one is not: it has no parameters.)"""

    def __init__(self, stateless_model: Any, param_names: tuple[str, ...]) -> None:
        self.stateless_model = stateless_model
        self.param_names = param_names

    def _call(self, tensors: Any, names: tuple[str, ...], args: Any, kwargs: Any) -> Any:
        tensors = tuple(tensors)
        if len(tensors) != len(names):
            raise ValueError(f"{type(self).__name__}: expected {len(names)} tensors, got {len(tensors)}")
        return functional_call(self.stateless_model, dict(zip(names, tensors)), tuple(args), kwargs)

    def __call__(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        """``stateless_model(*args, **kwargs)`` with ``params`` as its parameters."""
        return self._call(params, self.param_names, args, kwargs)

    def train(self, mode: bool = True) -> FunctionalModule:
        """Put the module copy in training mode (``mode=False``: evaluation); returns self."""
        self.stateless_model.train(mode)
        return self

    def eval(self) -> FunctionalModule:
        """Put the module copy in evaluation mode; returns self."""
        return self.train(False)

    @property
    def training(self) -> bool:
        """Whether the module copy is in training mode."""
        return bool(self.stateless_model.training)

    def __repr__(self) -> str:
        inner = repr(self.stateless_model).replace("\n", "\n  ")
        return f"{type(self).__name__}(\n  (stateless_model): {inner}\n)"


class FunctionalModuleWithBuffers(FunctionalModule):
    """The function ``make_functional_with_buffers`` returns:
    ``fmodel(params, buffers, *args, **kwargs)``."""

    def __init__(self, stateless_model: Any, param_names: tuple[str, ...], buffer_names: tuple[str, ...]) -> None:
        super().__init__(stateless_model, param_names)
        self.buffer_names = buffer_names

    def __call__(self, params: Any, buffers: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """``stateless_model(*args, **kwargs)`` with those parameters and buffers."""
        return self._call(tuple(params) + tuple(buffers), self.param_names + self.buffer_names, args, kwargs)


def _copied(model: Any, disable_autograd_tracking: bool) -> tuple[Any, tuple[str, ...], tuple[Any, ...]]:
    model_copy = copy.deepcopy(model)
    named = dict(model_copy.named_parameters())
    params = tuple(named.values())
    if disable_autograd_tracking:
        for p in params:
            p.requires_grad_(False)
    return model_copy, tuple(named), params


def make_functional(model: Any, disable_autograd_tracking: bool = False) -> tuple[FunctionalModule, tuple[Any, ...]]:
    """``(fmodel, params)``: ``fmodel(params, x)`` is ``model(x)`` with
    ``params`` as its parameters (functorch's ``make_functional``; PyTorch now
    spells it ``functional_call``). ``params`` are the parameters of a deep
    copy of ``model`` (leaves that require grad unless ``disable_autograd_tracking``).
    A model with buffers needs ``make_functional_with_buffers``.

    Examples:
        >>> fmodel, params = make_functional(nn.Linear(3, 3))
        >>> torch.func.grad(lambda p, x: fmodel(p, x).sum())(params, x)
    """
    if list(model.buffers()):
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    model_copy, names, params = _copied(model, disable_autograd_tracking)
    return FunctionalModule(model_copy, names), params


def make_functional_with_buffers(model: Any, disable_autograd_tracking: bool = False
                                 ) -> tuple[FunctionalModuleWithBuffers, tuple[Any, ...], tuple[Any, ...]]:
    """``(fmodel, params, buffers)``: ``fmodel(params, buffers, x)`` is
    ``model(x)`` with those parameters and buffers (functorch's
    ``make_functional_with_buffers``), taken from a deep copy of ``model``.

    Examples:
        >>> fmodel, params, buffers = make_functional_with_buffers(model)
        >>> fmodel(params, buffers, x)
    """
    model_copy, names, params = _copied(model, disable_autograd_tracking)
    named_buffers = dict(model_copy.named_buffers())
    return FunctionalModuleWithBuffers(model_copy, names, tuple(named_buffers)), params, tuple(named_buffers.values())
