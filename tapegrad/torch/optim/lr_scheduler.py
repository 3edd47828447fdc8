"""``torch.optim.lr_scheduler``: ``LambdaLR``, ``StepLR``, ``MultiStepLR``,
``ExponentialLR``, ``CosineAnnealingLR``, ``OneCycleLR`` and
``ReduceLROnPlateau`` (stepped with the monitored metric), with PyTorch's recursive forms
on ``step()`` and its closed forms on ``step(epoch)`` (so its values, float
for float).

    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    for epoch in range(100):
        train(...)          # opt.step() inside
        sched.step()
"""

from __future__ import annotations

import functools
import math
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from tapegrad.torch._missing import missing_names
from tapegrad.torch.optim.optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "MultiStepLR", "OneCycleLR",
           "ReduceLROnPlateau", "StepLR"]

_EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose.")


def _lrs(optimizer: Optimizer, key: str = "lr") -> list[Any]:
    return [group[key] for group in optimizer.param_groups]


class LRScheduler:
    """Base class of the schedulers, as ``torch.optim.lr_scheduler.LRScheduler``.

    Construction records each group's ``initial_lr`` (``base_lrs``) and takes
    the first step (epoch 0). ``step()`` advances ``last_epoch`` and sets
    every group's ``lr`` to ``get_lr``'s value; ``get_last_lr()`` returns
    the learning rates it set last.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.")
        self.base_lrs: list[Any] = _lrs(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates of the groups, as the last ``step()`` set them."""
        return self._last_lr

    def get_lr(self) -> list[Any]:
        raise NotImplementedError

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, "
                          "please use `get_last_lr()`.", UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or go to ``epoch``, with the closed form) and set the lrs."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before "
                    "`lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate schedule. "
                    "See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


def _track_step_called(opt: Optimizer) -> None:
    """Wrap ``opt.step`` once so that it records ``opt._opt_called`` (for the order warning)."""
    if hasattr(opt.step, "_wrapped_by_lr_sched"):
        return
    func = type(opt).step

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt._opt_called = True  # type: ignore[attr-defined]
        return func(opt, *args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    opt.step = wrapper  # type: ignore[method-assign]


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per group).

    Examples:
        >>> sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.95 ** epoch)
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base's, with the lambdas' ``__dict__`` (None for plain functions)."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if type(fn).__name__ == "function" else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs.

    Examples:
        >>> sched = torch.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch.

    Examples:
        >>> sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch.

    Examples:
        >>> sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_max`` epochs
    (PyTorch's recursive form, which keeps going past ``T_max``).

    Examples:
        >>> sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=50)
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


def _per_group(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    """``param`` once per parameter group (a list or tuple must have one entry per group)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: per batch, the lr rises from ``max_lr / div_factor``
    to ``max_lr`` over the first ``pct_start`` of ``total_steps`` (or
    ``epochs * steps_per_epoch``) and anneals to ``initial_lr /
    final_div_factor`` (``three_phase``: back down to the initial lr first),
    while the momentum (SGD's ``momentum``, Adam's ``beta1``) moves inversely
    between ``max_momentum`` and ``base_momentum``. Stepping past the last
    step raises ``ValueError``.

    Examples:
        >>> sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=10, steps_per_epoch=len(loader))
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        n = self.total_steps
        if three_phase:
            self._schedule_phases: list[dict[str, Any]] = [
                {"end_step": float(pct_start * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * n) - 2, "start_lr": "max_lr", "end_lr": "initial_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": n - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * n) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": n - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        self.anneal_strategy = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            tops = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for top, base, group in zip(tops, bases, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], m: float) -> None:
        if self.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[Any]:
        self._warn_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                               group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` (not below ``min_lr``) once the metric
    passed to ``step(metric)`` has not improved for more than ``patience``
    epochs; then wait ``cooldown`` epochs. Improvement: in ``mode`` "min"
    (or "max"), below (above) the best by ``threshold``, relative
    (``threshold_mode`` "rel") or absolute ("abs"). A change smaller than
    ``eps`` is skipped.

    Examples:
        >>> sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, "min", patience=5)
        >>> sched.step(val_loss)
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self._step_count = 1
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric; reduce the lrs after too many epochs without improvement."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for i, group in enumerate(self.optimizer.param_groups):
                old_lr = float(group["lr"])
                new_lr = max(old_lr * self.factor, self.min_lrs[i])
                if old_lr - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is still waiting after its last reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by the threshold."""
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)


__getattr__ = missing_names(__name__, "torch.optim.lr_scheduler")
