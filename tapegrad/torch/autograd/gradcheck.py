"""``torch.autograd.gradcheck``: analytical vs finite-difference Jacobians."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.torch._tensor import Tensor, _new
from tapegrad.torch.autograd._engine import grad
from tapegrad.torch.autograd.functional import jacobian
from tapegrad.torch.grad_mode import no_grad
from tapegrad.tracer import value


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` when the Jacobians differ."""


def _outputs(func: Callable[..., Any], ins: tuple[Any, ...]) -> tuple[Any, ...]:
    out = func(*ins)
    return out if isinstance(out, tuple) else (out,)


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **kw: Any) -> bool:
    """Compare the Jacobian from backward with central differences.

    Inputs that require grad are perturbed one entry at a time (use float64).
    Returns True, or raises :class:`GradcheckError` (False with
    ``raise_exception=False``) naming the output and input that differ.
    """
    ins = inputs if isinstance(inputs, tuple) else (inputs,)
    diff = [i for i, x in enumerate(ins) if isinstance(x, Tensor) and x.requires_grad]
    outs = _outputs(func, ins)
    for oi, o in enumerate(outs):
        for ii in diff:
            def f_i(xi: Any, ii: int = ii, oi: int = oi) -> Any:
                args = list(ins)
                args[ii] = xi
                return _outputs(func, tuple(args))[oi]

            analytical = value(jacobian(f_i, ins[ii])._value).reshape(o.numel(), -1)
            x = value(ins[ii]._value)
            numerical = np.zeros((x.size, o.numel()), dtype=x.dtype)
            flat = x.reshape(-1)
            with no_grad():
                for j in range(x.size):
                    old = flat[j].copy()
                    flat[j] = old + eps
                    hi = np.array(value(f_i(_new(x))._value), dtype=np.float64).reshape(-1)
                    flat[j] = old - eps
                    lo = np.array(value(f_i(_new(x))._value), dtype=np.float64).reshape(-1)
                    flat[j] = old
                    numerical[j] = (hi - lo) / (2 * eps)
            num = numerical.T
            if not np.allclose(analytical, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {oi} with respect to input {ii},\n"
                    f"numerical:{_new(np.asarray(num.T))!r}\nanalytical:{_new(np.asarray(analytical.T))!r}\n"
                )
    return True


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, **kw: Any) -> bool:
    """gradcheck of the vjp of ``func`` (second derivatives)."""
    ins = inputs if isinstance(inputs, tuple) else (inputs,)
    outs = _outputs(func, ins)
    rng = np.random.default_rng(0)
    gos = grad_outputs or tuple(_new(rng.standard_normal(o.shape).astype(o._value.dtype)) for o in outs)
    diff = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]

    def vjp_func(*xs: Any) -> Any:
        os_ = _outputs(func, xs)
        dx = [x for x in xs if isinstance(x, Tensor) and x.requires_grad]
        return grad(os_, dx, gos, create_graph=True, allow_unused=True)

    del diff
    return gradcheck(vjp_func, ins, **kw)
