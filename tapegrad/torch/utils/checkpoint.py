"""``torch.utils.checkpoint``: ``checkpoint`` and ``checkpoint_sequential``.

``use_reentrant=True`` is PyTorch's reentrant form: the function runs without
recording, and its ``backward`` (node ``CheckpointFunctionBackward``) runs it
again with recording and back-propagates through that, so the activations
inside are not kept between forward and backward. ``use_reentrant=False``
runs the function with recording: its graph, ``grad_fn`` names and
gradients are PyTorch's, but the activations are kept (the memory saving of
PyTorch's saved-tensor hooks is not reproduced).

    y = checkpoint(block, x, use_reentrant=False)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from tapegrad.torch._missing import missing_names

__all__ = ["checkpoint", "checkpoint_sequential"]

_EXPLICIT = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
             "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False "
             "is recommended, but if you need to preserve the current default behavior, you can pass "
             "use_reentrant=True. Refer to docs for more details on the differences between the two variants.")


def _function_class() -> Any:
    import tapegrad.torch as torch
    from tapegrad.torch.autograd import Function

    class CheckpointFunction(Function):
        @staticmethod
        def forward(ctx: Any, run_function: Callable[..., Any], *args: Any) -> Any:
            ctx.run_function = run_function
            ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
            ctx.inputs = list(args)
            ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
            with torch.no_grad():
                return run_function(*args)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            inputs = list(ctx.inputs)
            for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
                inputs[i] = t.detach().requires_grad_(t.requires_grad)
            with torch.enable_grad():
                outputs = ctx.run_function(*inputs)
            if isinstance(outputs, torch.Tensor):
                outputs = (outputs,)
            pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
            if not pairs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
            return (None, *[a.grad if isinstance(a, torch.Tensor) else None for a in inputs])

    return CheckpointFunction


_CLASS: list[Any] = []


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, determinism_check: str = "default", debug: bool = False,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, its activations recomputed during
    backward (``use_reentrant=True``) or recorded as usual
    (``use_reentrant=False``); see the module's docstring. Returns what
    ``function`` returns. Without ``use_reentrant`` it warns (as PyTorch
    does) and uses the reentrant form. ``preserve_rng_state`` is not
    reproduced: a function that draws random numbers draws again on
    recomputation."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT, UserWarning, stacklevel=2)
        use_reentrant = True
    if not use_reentrant:
        return function(*args, **kwargs)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not _CLASS:
        _CLASS.append(_function_class())
    return _CLASS[0].apply(function, *args)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Any:
    """Run the modules of ``functions`` (an ``nn.Sequential`` or a list) in
    ``segments`` chunks, each chunk but the last under ``checkpoint``;
    returns the last module's output."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT, UserWarning, stacklevel=2)
        use_reentrant = True
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(fns) // segments

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = fns[j](x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)  # noqa: A001
    return run(end + 1, len(fns) - 1)(input)


__getattr__ = missing_names(__name__, "torch.utils.checkpoint")
