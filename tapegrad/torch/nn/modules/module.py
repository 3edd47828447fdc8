"""``torch.nn.Module``: the base class of all layers, and its helpers.

A module holds parameters, buffers and submodules in three ordered dicts,
filled by attribute assignment (``self.fc = nn.Linear(...)``) as in PyTorch,
so ``named_parameters()``, ``state_dict()`` and ``repr`` list them in the
order they were assigned. ``forward`` is written with tensor methods and
``nn.functional``: modules hold no gradient logic.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tapegrad.torch import _dtype as D
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _new
from tapegrad.torch.grad_mode import is_grad_enabled as _grad_enabled
from tapegrad.torch.grad_mode import no_grad
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["Module"]


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    t = type(obj)
    return t.__qualname__ if t.__module__ in ("builtins", "__main__") else f"{t.__module__}.{t.__qualname__}"


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    if not TYPE_CHECKING:  # type: ignore[misc]  # mypy would read this alias as a NamedTuple field
        __str__ = __repr__


def _swap_data(t: Tensor, new: Tensor) -> None:
    """Give ``t`` the data of ``new`` (another dtype or device), keeping the object."""
    rg = t.requires_grad
    if rg:
        t.requires_grad_(False)
    t.data = new
    if rg:
        t.requires_grad_(True)


def _check_not_meta(module: Module, meta: dict[str, Any]) -> None:
    for k, t in meta.items():
        if module._parameters.get(k) is t or module._buffers.get(k) is t:
            raise RuntimeError(
                f"tapegrad.torch: {type(module).__name__}'s '{k}' was moved to 'meta' and has no data "
                "(tapegrad.torch has no meta device); call the module through "
                "torch.func.functional_call, giving it its parameters and buffers")


class Module:
    """Base class of all layers and models, as ``torch.nn.Module``.

    Subclasses call ``super().__init__()``, assign parameters and submodules
    as attributes, and define ``forward``; calling the module calls ``forward``.

    Examples:
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> [name for name, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", OrderedDict())
        sa(self, "_buffers", OrderedDict())
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        meta = self.__dict__.get("_meta_placeholders")
        if meta is not None:
            _check_not_meta(self, meta)
        if "_forward_hooks" not in self.__dict__:
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    # --- hooks ------------------------------------------------------------------------------
    def _hook_dicts(self) -> tuple[dict[int, Any], dict[int, Any], dict[int, Any]]:
        """The forward-pre, forward and full backward hooks, by handle id (made on first use)."""
        d = self.__dict__
        if "_forward_hooks" not in d:
            for name in ("_forward_pre_hooks", "_backward_hooks", "_forward_hooks"):
                object.__setattr__(self, name, OrderedDict())
        return d["_forward_pre_hooks"], d["_forward_hooks"], d["_backward_hooks"]

    def _call_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        pre, post, backward = self._hook_dicts()
        for hook in list(pre.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        bw = None
        if backward and _grad_enabled():
            from tapegrad.torch.utils.hooks import BackwardHook
            bw = BackwardHook(self, list(backward.values()))
            args = bw.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        for hook in list(post.values()):
            res = hook(self, args, result)
            if res is not None:
                result = res
        if bw is not None:
            result = bw.setup_output_hook(result)
        return result

    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> Any:
        """Call ``hook(module, args)`` before each ``forward``; a returned value
        (a tuple, or one value) replaces the positional arguments. Returns a
        ``RemovableHandle``."""
        from tapegrad.torch.utils.hooks import RemovableHandle
        store = self._hook_dicts()[0]
        handle = RemovableHandle(store)
        store[handle.id] = hook
        return handle

    def register_forward_hook(self, hook: Callable[..., Any]) -> Any:
        """Call ``hook(module, args, output)`` after each ``forward``; a returned
        value replaces the output. Returns a ``RemovableHandle``."""
        from tapegrad.torch.utils.hooks import RemovableHandle
        store = self._hook_dicts()[1]
        handle = RemovableHandle(store)
        store[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> Any:
        """Call ``hook(module, grad_input, grad_output)`` once the gradients with
        respect to the module's tensor inputs are computed (``grad_input`` entries
        are None for inputs that do not require grad); a returned tuple replaces
        ``grad_input``. Returns a ``RemovableHandle``."""
        from tapegrad.torch.utils.hooks import RemovableHandle
        store = self._hook_dicts()[2]
        handle = RemovableHandle(store)
        store[handle.id] = hook
        if prepend:
            store.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    # --- registration ------------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add ``param`` (a ``Parameter`` or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (it goes in ``state_dict``
        unless ``persistent=False``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule under ``name`` (also: ``self.name = module``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the other stores (a re-assignment keeps its place in ``keep``)."""
        self.__dict__.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                self.__dict__[store].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            s = self.__dict__[store]
            if name in s:
                del s[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # --- traversal ---------------------------------------------------------------------------
    def _named_members(self, get: Callable[[Module], Iterable[tuple[str, Any]]], prefix: str = "",
                       recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get(mod):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs, this module's first, then each child's in
        assignment order (``"0.weight"``, ``"fc.bias"`` ...); shared ones once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters, in the order of ``named_parameters``."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for each direct submodule (each module once)."""
        memo: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for this module (name ``prefix``, ``""`` by default)
        and every descendant, depth first."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def get_submodule(self, target: str) -> Module:
        mod = self
        for item in target.split(".") if target else ():
            if item not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = mod._modules[item]  # type: ignore[assignment]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return mod._parameters[name]  # type: ignore[return-value]

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and on ``self``; returns ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # --- modes and gradients -----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``.training``) here and in every submodule; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None`` (the default), or to zeros."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # --- state -------------------------------------------------------------------------------
    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by dotted name. The tensors are
        detached but share memory with the module's (``keep_vars=True``: the
        parameters themselves)."""
        if args:  # the positional (destination, prefix, keep_vars) form
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict`` into this module (in
        place, under ``no_grad``). With ``strict``, missing or unexpected keys
        raise; shape mismatches always do. Returns the missing and unexpected keys."""
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        errors: list[str] = []
        own = self.state_dict(keep_vars=True)
        unexpected = [k for k in state_dict if k not in own]
        with no_grad():
            for key, target in own.items():
                if key not in state_dict:
                    missing.append(key)
                    continue
                src = state_dict[key]
                if not isinstance(src, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(src)}")
                    continue
                if tuple(src.shape) != tuple(target.shape):
                    errors.append(f"size mismatch for {key}: copying a param with shape {src.shape} from "
                                  f"checkpoint, the shape in current model is {target.shape}.")
                    continue
                if assign:
                    mod_path, _, name = key.rpartition(".")
                    mod = self.get_submodule(mod_path)
                    if name in mod._parameters and not isinstance(src, Parameter):
                        src = Parameter(src, requires_grad=target.requires_grad)
                    setattr(mod, name, src)
                else:
                    target.copy_(src)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # --- dtype and device ----------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        for m in self.children():
            m._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    _swap_data(p, new)
                g = p._grad
                if g is not None:
                    new_g = fn(g)
                    if new_g is not g:
                        _swap_data(g, new_g)
            for k, b in self._buffers.items():
                if b is not None:
                    self._buffers[k] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast the parameters and buffers (floating ones only change dtype)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                device = a

        if device is not None and str(device).partition(":")[0] == "meta":
            return self._to_meta(dtype)

        def convert(t: Tensor) -> Tensor:
            out = t
            if device is not None:
                out = out.to(device)
            if dtype is not None and (out.is_floating_point() or out.is_complex()):
                out = out.to(dtype)
            return out

        return self._apply(convert)

    def _to_meta(self, dtype: Any) -> Module:
        """``to('meta')``: tapegrad.torch has no meta device; the parameters
        and buffers keep their shapes and dtypes (and Parameter objects) but
        lose their data (zero-stride placeholders), and the module refuses to
        run until ``torch.func.functional_call`` gives it real tensors."""

        def placeholder(t: Tensor) -> Tensor:
            cast = dtype is not None and (t.is_floating_point() or t.is_complex())
            dt = D.to_np(dtype if cast else t.dtype)
            return _new(np.broadcast_to(np.zeros((), dt), tuple(t.shape)))

        for m in self.modules():
            self_meta: dict[str, Any] = {}
            with no_grad():
                for k, p in m._parameters.items():
                    if p is not None:
                        _swap_data(p, placeholder(p))
                        p._grad = None
                        self_meta[k] = p
                for k, b in m._buffers.items():
                    if b is not None:
                        m._buffers[k] = self_meta[k] = placeholder(b)
            m.__dict__["_meta_placeholders"] = self_meta
        return self

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: Any = None) -> Module:
        return self._apply(lambda t: t.cuda())

    def type(self, dst_type: Any) -> Module:
        return self._apply(lambda t: t.type(dst_type))

    # --- printing ------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override it)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"


def _zero_grad(p: Tensor, set_to_none: bool) -> None:
    g = p._grad
    if g is None:
        return
    if set_to_none:
        p._grad = None
        return
    if g.grad_fn is not None:
        g.detach_()
    else:
        g.requires_grad_(False)
    g.zero_()
