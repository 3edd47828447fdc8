"""Optimizers over pytrees of arrays: the functional counterpart of ``torch.optim``.

Each factory returns an ``Optimizer``, a pair of pure functions:

    opt = tg.optimizers.adam(1e-3)
    state = opt.init(params)                               # once
    params, state = opt.update(grads, state, params)       # every step

``params`` and ``grads`` are pytrees of the same structure (nested tuples,
lists, dicts, namedtuples; ``None`` leaves are kept as they are). The
formulas and defaults are PyTorch's (``torch.optim.SGD``, ``Adam``,
``RMSprop``), step for step. Nothing is modified in place: ``update``
returns new parameters and a new state, and is written with
``tapegrad.numpy`` operations only, so it can be differentiated (a gradient
through an update step with respect to the learning rate or the initial
parameters, for meta-learning) and traced.

The state is a namedtuple holding the step count (a 0-d integer array: the
number of updates done) and pytrees of arrays shaped like the parameters.
Float32 parameters give float32 state and float32 results; a Python float
parameter comes back as a float64 0-d array.

The learning rate is a number, an array (a traced one too), or a schedule:
a callable taking the step count (0 on the first update, as in optax) and
returning the learning rate of that update, e.g.
``lambda step: 0.1 * 0.5 ** (step // 100)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.pytree import TreeDef, tree_flatten, tree_unflatten

__all__ = ["AdamState", "Optimizer", "RMSpropState", "SGDState", "adam", "rmsprop", "sgd"]


class Optimizer(NamedTuple):
    """What an optimizer factory returns: two pure functions.

    Attributes:
        init: ``init(params) -> state``, the optimizer state for ``params``.
        update: ``update(grads, state, params) -> (new_params, new_state)``,
            one optimization step.
    """

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], tuple[Any, Any]]


class SGDState(NamedTuple):
    """State of ``sgd``: the step count and the momentum buffers (``None`` without momentum)."""

    step: Any
    momentum_buffer: Any


class AdamState(NamedTuple):
    """State of ``adam``: the step count and the first and second moment estimates."""

    step: Any
    exp_avg: Any
    exp_avg_sq: Any


class RMSpropState(NamedTuple):
    """State of ``rmsprop``: the step count, the running average of the squared gradient,
    the momentum buffers (``None`` without momentum) and the running average of the gradient
    (``None`` unless ``centered``)."""

    step: Any
    square_avg: Any
    momentum_buffer: Any
    grad_avg: Any


# --- shared helpers ----------------------------------------------------------------------------


class _Hole:
    def __repr__(self) -> str:
        return "*"


def _structure(treedef: TreeDef) -> str:
    """The tree's shape with each leaf written ``*``: ``{'b': *, 'w': (*, *)}``."""
    return repr(tree_unflatten(treedef, [_Hole()] * treedef.num_leaves))


def _params(name: str, params: Any) -> tuple[list[Any], TreeDef]:
    """The leaves of ``params`` as arrays (Python numbers become 0-d arrays), all real floating."""
    leaves, treedef = tree_flatten(params)
    out = []
    for i, p in enumerate(leaves):
        if not hasattr(p, "dtype"):
            p = tnp.asarray(p)
        if not np.issubdtype(p.dtype, np.floating):
            raise TypeError(
                f"tg.optimizers.{name}: parameters must be real floating-point arrays, but leaf {i} "
                f"of the parameters {_structure(treedef)} has dtype {np.dtype(p.dtype).name}")
        out.append(p)
    return out, treedef


def _grads(name: str, grads: Any, treedef: TreeDef, params: list[Any]) -> list[Any]:
    """The leaves of ``grads``, checked against the parameters' structure and shapes, in their dtypes."""
    leaves, gdef = tree_flatten(grads)
    if gdef != treedef:
        raise ValueError(
            f"tg.optimizers.{name}: the gradients and the parameters have different tree structures: "
            f"grads {_structure(gdef)} and params {_structure(treedef)}")
    out = []
    for i, (g, p) in enumerate(zip(leaves, params)):
        if not hasattr(g, "dtype"):
            g = tnp.asarray(g)
        if tuple(g.shape) != tuple(p.shape):
            raise ValueError(
                f"tg.optimizers.{name}: leaf {i} of the gradients has shape {tuple(g.shape)} but the "
                f"parameter has shape {tuple(p.shape)}")
        if g.dtype != p.dtype:
            g = g.astype(p.dtype)
        out.append(g)
    return out


def _slots(name: str, slot: str, tree: Any, treedef: TreeDef) -> list[Any]:
    """The leaves of one part of the state, which ``init`` made for parameters of this structure."""
    leaves, sdef = tree_flatten(tree)
    if sdef != treedef:
        raise ValueError(
            f"tg.optimizers.{name}: the state's {slot} has the structure {_structure(sdef)} but the "
            f"parameters have {_structure(treedef)}; was the state made by init() for these parameters?")
    return leaves


def _check_state(name: str, state: Any, cls: type) -> None:
    if not isinstance(state, cls):
        raise TypeError(f"tg.optimizers.{name}: update expects the {cls.__name__} that init() returns, "
                        f"got {type(state).__name__}")


def _scalar(x: Any, dtype: Any) -> Any:
    """A hyperparameter as a factor that keeps ``dtype``.

    Python numbers stay as they are (NumPy treats them as weakly typed, so they
    never upcast float32); NumPy scalars, arrays and traced values are cast.
    """
    if type(x) is int or type(x) is float:  # not np.float64, a subclass of float
        return x
    if isinstance(x, np.generic):
        return x.astype(dtype)
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x.astype(dtype)[()]
    return tnp.asarray(x).astype(dtype)


def _lr(learning_rate: Any, step: Any) -> Any:
    return learning_rate(step) if callable(learning_rate) else learning_rate


def _lerp(a: Any, b: Any, w: Any) -> Any:
    """``a + w (b - a)``, evaluated as ``torch.lerp`` does (from the nearer end)."""
    if w < 0.5:
        return a + w * (b - a)
    return b - (b - a) * (1 - w)


def _step0() -> Any:
    return np.zeros((), dtype=np.int64)


def _next(step: Any) -> Any:
    return tnp.asarray(step + 1)


def _check(name: str, **values: Any) -> None:
    """PyTorch's range checks, on the hyperparameters given as plain numbers."""
    for what, (v, lo, hi) in values.items():
        if isinstance(v, (int, float)) and not (lo <= v and (hi is None or v < hi)):
            bound = f"in [{lo}, {hi})" if hi is not None else f">= {lo}"
            raise ValueError(f"tg.optimizers.{name}: invalid {what} {v!r} (must be {bound})")


def _zeros(leaves: list[Any]) -> list[Any]:
    return [tnp.zeros_like(p) for p in leaves]


# --- SGD ---------------------------------------------------------------------------------------


def sgd(learning_rate: Any, momentum: Any = 0.0, dampening: Any = 0.0, weight_decay: Any = 0.0,
        nesterov: bool = False) -> Optimizer:
    """Stochastic gradient descent with optional momentum, as ``torch.optim.SGD``.

    With ``g`` the gradient plus ``weight_decay * p``, the momentum buffer is
    ``b = g`` on the first step and ``b = momentum * b + (1 - dampening) * g``
    after; the step is ``p - learning_rate * d`` with ``d = g + momentum * b``
    (``nesterov``), ``d = b`` (momentum) or ``d = g`` (``momentum == 0``).

    Args:
        learning_rate: a number, an array, or a schedule ``step -> lr``
            (``step`` counts the updates done before this one).
        momentum: momentum factor.
        dampening: dampening of the momentum (not on the first step).
        weight_decay: L2 penalty, added to the gradient.
        nesterov: Nesterov momentum (needs ``momentum > 0``, ``dampening == 0``).

    Returns:
        An ``Optimizer``; its state is an ``SGDState``.

    Examples:
        >>> opt = tg.optimizers.sgd(0.1, momentum=0.9)
        >>> params = {"w": np.array([1.0, 2.0])}
        >>> state = opt.init(params)
        >>> grads = tg.grad(lambda p: tnp.sum(p["w"] ** 2))(params)
        >>> params, state = opt.update(grads, state, params)
        >>> params["w"]
        array([0.8, 1.6])
    """
    _check("sgd", learning_rate=(learning_rate, 0.0, None), momentum=(momentum, 0.0, None),
           weight_decay=(weight_decay, 0.0, None))
    if nesterov and (isinstance(momentum, (int, float)) and momentum <= 0
                     or isinstance(dampening, (int, float)) and dampening != 0):
        raise ValueError("tg.optimizers.sgd: Nesterov momentum requires a momentum and zero dampening")
    use_momentum = bool(momentum != 0)

    def init(params: Any) -> SGDState:
        leaves, treedef = _params("sgd", params)
        buf = tree_unflatten(treedef, _zeros(leaves)) if use_momentum else None
        return SGDState(_step0(), buf)

    def update(grads: Any, state: Any, params: Any) -> tuple[Any, SGDState]:
        _check_state("sgd", state, SGDState)
        ps, treedef = _params("sgd", params)
        gs = _grads("sgd", grads, treedef, ps)
        bufs = _slots("sgd", "momentum_buffer", state.momentum_buffer, treedef) if use_momentum else []
        lr = _lr(learning_rate, state.step)
        # the buffer starts at zero, so ``momentum * 0 + c * g`` with c = 1 on the first step is
        # PyTorch's ``b = g`` exactly; later c = 1 - dampening
        damp = None if isinstance(dampening, (int, float)) and dampening == 0 else (
            1.0 - dampening * tnp.minimum(state.step, 1))
        new_ps, new_bufs = [], []
        for i, (p, g) in enumerate(zip(ps, gs)):
            if weight_decay != 0:
                g = g + _scalar(weight_decay, p.dtype) * p
            if use_momentum:
                mu = _scalar(momentum, p.dtype)
                b = mu * bufs[i] + (g if damp is None else _scalar(damp, p.dtype) * g)
                new_bufs.append(b)
                g = g + mu * b if nesterov else b
            new_ps.append(p - _scalar(lr, p.dtype) * g)
        buf = tree_unflatten(treedef, new_bufs) if use_momentum else None
        return tree_unflatten(treedef, new_ps), SGDState(_next(state.step), buf)

    return Optimizer(init, update)


# --- Adam --------------------------------------------------------------------------------------


def adam(learning_rate: Any = 1e-3, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
         weight_decay: Any = 0.0) -> Optimizer:
    """Adam, as ``torch.optim.Adam`` (``betas=(b1, b2)``, no AMSGrad).

    With ``g`` the gradient plus ``weight_decay * p`` (L2, not AdamW's
    decoupled decay) and ``t`` the step number (1 on the first update):

        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        p = p - lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)

    ``eps`` is added after the square root of the bias-corrected second
    moment, as PyTorch does.

    Args:
        learning_rate: a number, an array, or a schedule ``step -> lr``
            (``step`` counts the updates done before this one).
        b1: decay of the first moment estimate.
        b2: decay of the second moment estimate.
        eps: added to the denominator.
        weight_decay: L2 penalty, added to the gradient.

    Returns:
        An ``Optimizer``; its state is an ``AdamState``.

    Examples:
        >>> opt = tg.optimizers.adam(0.1)
        >>> params = (np.array([1.0, -2.0], dtype=np.float32), None)
        >>> state = opt.init(params)
        >>> grads = tg.grad(lambda p: tnp.sum(p[0] ** 2))(params)
        >>> params, state = opt.update(grads, state, params)
        >>> params[1] is None, np.round(params[0], 4)  # float32 stays float32
        (True, array([ 0.9, -1.9], dtype=float32))
    """
    _check("adam", learning_rate=(learning_rate, 0.0, None), eps=(eps, 0.0, None),
           b1=(b1, 0.0, 1.0), b2=(b2, 0.0, 1.0), weight_decay=(weight_decay, 0.0, None))

    def init(params: Any) -> AdamState:
        leaves, treedef = _params("adam", params)
        return AdamState(_step0(), tree_unflatten(treedef, _zeros(leaves)),
                         tree_unflatten(treedef, _zeros(leaves)))

    def update(grads: Any, state: Any, params: Any) -> tuple[Any, AdamState]:
        _check_state("adam", state, AdamState)
        ps, treedef = _params("adam", params)
        gs = _grads("adam", grads, treedef, ps)
        ms = _slots("adam", "exp_avg", state.exp_avg, treedef)
        vs = _slots("adam", "exp_avg_sq", state.exp_avg_sq, treedef)
        lr = _lr(learning_rate, state.step)
        t = _next(state.step)
        step_size = lr / (1 - b1 ** t)
        bc2_sqrt = tnp.sqrt(1 - b2 ** t)
        new_ps, new_ms, new_vs = [], [], []
        for p, g, m, v in zip(ps, gs, ms, vs):
            dt = p.dtype
            if weight_decay != 0:
                g = g + _scalar(weight_decay, dt) * p
            m = _lerp(m, g, 1 - _scalar(b1, dt))
            v = _scalar(b2, dt) * v + (1 - _scalar(b2, dt)) * (g * g)
            denom = tnp.sqrt(v) / _scalar(bc2_sqrt, dt) + _scalar(eps, dt)
            new_ps.append(p - _scalar(step_size, dt) * (m / denom))
            new_ms.append(m)
            new_vs.append(v)
        return tree_unflatten(treedef, new_ps), AdamState(
            t, tree_unflatten(treedef, new_ms), tree_unflatten(treedef, new_vs))

    return Optimizer(init, update)


# --- RMSprop -----------------------------------------------------------------------------------


def rmsprop(learning_rate: Any = 1e-2, alpha: Any = 0.99, eps: Any = 1e-8, momentum: Any = 0.0,
            centered: bool = False, weight_decay: Any = 0.0) -> Optimizer:
    """RMSprop, as ``torch.optim.RMSprop``.

    With ``g`` the gradient plus ``weight_decay * p``:

        v = alpha * v + (1 - alpha) * g**2
        a = alpha * a + (1 - alpha) * g                  # centered only
        d = sqrt(v - a**2) + eps   (centered)   or   sqrt(v) + eps
        b = momentum * b + g / d;  p = p - lr * b        # momentum > 0
        p = p - lr * g / d                               # otherwise

    ``eps`` is added after the square root (TensorFlow adds it inside).

    Args:
        learning_rate: a number, an array, or a schedule ``step -> lr``
            (``step`` counts the updates done before this one).
        alpha: smoothing constant of the running averages.
        eps: added to the denominator.
        momentum: momentum factor.
        centered: normalize by an estimate of the gradient's variance
            instead of its second moment.
        weight_decay: L2 penalty, added to the gradient.

    Returns:
        An ``Optimizer``; its state is an ``RMSpropState``.

    Examples:
        >>> opt = tg.optimizers.rmsprop(0.01)
        >>> params = [np.array([3.0]), 1.0]
        >>> state = opt.init(params)
        >>> params, state = opt.update([np.array([2.0]), 0.5], state, params)
        >>> [np.round(p, 4) for p in params]
        [array([2.9]), np.float64(0.9)]
    """
    _check("rmsprop", learning_rate=(learning_rate, 0.0, None), eps=(eps, 0.0, None),
           momentum=(momentum, 0.0, None), alpha=(alpha, 0.0, None),
           weight_decay=(weight_decay, 0.0, None))
    use_momentum = bool(momentum > 0)

    def init(params: Any) -> RMSpropState:
        leaves, treedef = _params("rmsprop", params)

        def zeros() -> Any:
            return tree_unflatten(treedef, _zeros(leaves))

        return RMSpropState(_step0(), zeros(), zeros() if use_momentum else None,
                            zeros() if centered else None)

    def update(grads: Any, state: Any, params: Any) -> tuple[Any, RMSpropState]:
        _check_state("rmsprop", state, RMSpropState)
        ps, treedef = _params("rmsprop", params)
        gs = _grads("rmsprop", grads, treedef, ps)
        vs = _slots("rmsprop", "square_avg", state.square_avg, treedef)
        bs = _slots("rmsprop", "momentum_buffer", state.momentum_buffer, treedef) if use_momentum else []
        avs = _slots("rmsprop", "grad_avg", state.grad_avg, treedef) if centered else []
        lr = _lr(learning_rate, state.step)
        new_ps: list[Any] = []
        new_vs: list[Any] = []
        new_bs: list[Any] = []
        new_avs: list[Any] = []
        for i, (p, g, v) in enumerate(zip(ps, gs, vs)):
            dt = p.dtype
            if weight_decay != 0:
                g = g + _scalar(weight_decay, dt) * p
            v = _scalar(alpha, dt) * v + (1 - _scalar(alpha, dt)) * (g * g)
            new_vs.append(v)
            if centered:
                a = _lerp(avs[i], g, 1 - _scalar(alpha, dt))
                new_avs.append(a)
                denom = tnp.sqrt(v - a * a) + _scalar(eps, dt)
            else:
                denom = tnp.sqrt(v) + _scalar(eps, dt)
            if use_momentum:
                b = _scalar(momentum, dt) * bs[i] + g / denom
                new_bs.append(b)
                new_ps.append(p - _scalar(lr, dt) * b)
            else:
                new_ps.append(p - _scalar(lr, dt) * (g / denom))
        return tree_unflatten(treedef, new_ps), RMSpropState(
            _next(state.step), tree_unflatten(treedef, new_vs),
            tree_unflatten(treedef, new_bs) if use_momentum else None,
            tree_unflatten(treedef, new_avs) if centered else None)

    return Optimizer(init, update)
