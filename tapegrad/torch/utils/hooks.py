"""``torch.utils.hooks``: ``RemovableHandle`` (what ``Module.register_*_hook``
returns) and ``BackwardHook``, which runs a module's full backward hooks.

``BackwardHook`` passes the module's tensor inputs and outputs through an
identity ``autograd.Function`` (``BackwardHookFunctionBackward``, as in
PyTorch): the outputs' node records the gradients with respect to the
outputs, the inputs' node calls each hook with
``(module, grad_input, grad_output)`` and lets it replace ``grad_input``
(zeros for a tensor input that needs no grad, as PyTorch's).
When no input requires grad, the hooks run at the outputs' node with
``grad_input`` all ``None``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from tapegrad.torch._missing import missing_names

__all__ = ["BackwardHook", "RemovableHandle"]


class RemovableHandle:
    """A registered hook's handle: ``remove()`` unregisters it (also as a
    context manager's exit)."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict[int, Any]) -> None:
        self.hooks_dict = hooks_dict
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        """Unregister the hook (no error if it is already gone)."""
        self.hooks_dict.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


_FUNCTION: list[Any] = []


def _identity_function() -> Any:
    """The identity ``autograd.Function`` whose backward calls back (made on first use)."""
    if not _FUNCTION:
        from tapegrad.torch.autograd import Function

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx: Any, callback: Callable[[tuple[Any, ...]], tuple[Any, ...]], *tensors: Any) -> Any:
                ctx.callback = callback
                outs = tuple(t.clone() for t in tensors)
                return outs if len(outs) > 1 else outs[0]

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                return (None, *ctx.callback(grads))

        _FUNCTION.append(BackwardHookFunction)
    return _FUNCTION[0]


class BackwardHook:
    """Runs ``hooks`` (full backward hooks of ``module``) for one call of it."""

    def __init__(self, module: Any, hooks: list[Callable[..., Any]]) -> None:
        self.module = module
        self.hooks = hooks
        self.n_inputs = 0
        self.grad_outputs: tuple[Any, ...] | None = None
        self.input_positions: list[int] = []

    def _run_hooks(self, grad_inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        for hook in self.hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None:
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, "
                                       f"but expected {len(grad_inputs)}")
                grad_inputs = res
        return grad_inputs

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with the tensors that require grad passed through the input node."""
        from tapegrad.torch._tensor import Tensor

        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(tensor_pos)
        self.input_positions = [k for k, i in enumerate(tensor_pos) if args[i].requires_grad]
        grad_pos = [i for i in tensor_pos if args[i].requires_grad]
        if not grad_pos:
            return args

        # PyTorch passes every tensor input through its node: one that needs no
        # grad gets a zero gradient there (grads are materialized)
        zeros = [args[i].detach().new_zeros(args[i].shape) for i in tensor_pos]

        def on_inputs(grads: tuple[Any, ...]) -> tuple[Any, ...]:
            full: list[Any] = list(zeros)
            for k, g in zip(self.input_positions, grads):
                full[k] = g
            new = self._run_hooks(tuple(full))
            return tuple(new[k] for k in self.input_positions)

        outs = _identity_function().apply(on_inputs, *(args[i] for i in grad_pos))
        outs = outs if isinstance(outs, tuple) else (outs,)
        new_args = list(args)
        for i, o in zip(grad_pos, outs):
            new_args[i] = o
        return tuple(new_args)

    def setup_output_hook(self, result: Any) -> Any:
        """``result`` (a tensor or a tuple) with its tensors that require grad
        passed through the output node."""
        from tapegrad.torch._tensor import Tensor

        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result) if isinstance(result, tuple) else None
        if outs is None:
            return result
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not pos:
            return result

        def on_outputs(grads: tuple[Any, ...]) -> tuple[Any, ...]:
            full: list[Any] = [None] * len(outs)
            for i, g in zip(pos, grads):
                full[i] = g
            self.grad_outputs = tuple(full)
            if not self.input_positions:
                self._run_hooks((None,) * self.n_inputs)
            return grads

        wrapped = _identity_function().apply(on_outputs, *(outs[i] for i in pos))
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        new = list(outs)
        for i, w in zip(pos, wrapped):
            new[i] = w
        return new[0] if single else tuple(new)


__getattr__ = missing_names(__name__, "torch.utils.hooks")
