"""``torch.utils.benchmark``: ``Timer`` and its ``Measurement`` (a working subset).

``Timer(stmt, setup, globals=..., label=...)`` runs a Python statement as
``timeit.Timer`` does; ``timeit(n)`` times ``n`` runs in one block,
``blocked_autorange()`` picks a block size whose timer overhead is
negligible and times blocks until ``min_run_time`` seconds have passed. Both
return a ``Measurement`` with ``times`` (seconds per run, one per block),
``mean``, ``median``, ``iqr`` and PyTorch's repr::

    t = benchmark.Timer("x.sin()", globals={"x": x}, label="sin")
    print(t.blocked_autorange(min_run_time=0.2))

``torch`` is in the statement's globals unless ``globals`` gives it (as in
PyTorch, it is this facade). Not provided: C++ statements, ``Compare``,
``collect_callgrind``, ``adaptive_autorange``, ``num_threads`` (recorded, not
applied: NumPy's threads are not the facade's to set).
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
import timeit as _timeit
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Measurement", "TaskSpec", "Timer"]

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a ``Timer`` runs and how it is labelled (everything but ``globals``)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (with its sub-label), else the statement."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as the repr shows it ("" for none)."""
        if self.setup in ("pass", ""):
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, the head of a ``Measurement``'s repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


def _select_unit(t: float) -> tuple[str, float]:
    """The unit that puts ``t`` seconds in [1, 1000) and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -3, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


@dataclasses.dataclass(repr=False)
class Measurement:
    """The result of a ``Timer`` run: ``raw_times`` (seconds per block of
    ``number_per_run`` runs) and the statistics of the per-run ``times``."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in ("stmt", "setup", "global_setup", "label", "sub_label", "description", "num_threads"):
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(sorted(self.times), dtype=np.float64), q))

    @property
    def median(self) -> float:
        """The median of ``times``."""
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        """The mean of ``times``."""
        return float(np.mean(np.asarray(self.times, dtype=np.float64)))

    @property
    def iqr(self) -> float:
        """The interquartile range of ``times``."""
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def title(self) -> str:
        """The task's title (label or statement)."""
        return self.task_spec.title

    @property
    def env(self) -> str:
        """The task's environment name."""
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether the IQR is below ``threshold`` times the median."""
        return self.iqr / self.median < threshold

    @property
    def _warnings(self) -> tuple[str, ...]:
        if not self.raw_times or self.meets_confidence(_IQR_WARN_THRESHOLD):
            return ()
        msg = ("This suggests significant environmental influence."
               if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD) else "This could indicate system fluctuation.")
        return (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                f"of the median measurement.\n           {msg}",)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread of ``times`` is wide enough for the repr to warn."""
        return bool(self._warnings)

    def __repr__(self) -> str:
        n = len(self.raw_times)
        median = self.median
        unit, scale = _select_unit(median)
        threads = self.task_spec.num_threads
        lines = [object.__repr__(self),
                 self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}"]
        if n >= 4:
            p25, p75 = self._quantile(0.25), self._quantile(0.75)
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()


class Timer:
    """Times a Python statement (PyTorch's ``torch.utils.benchmark.Timer``).

    Examples:
        >>> t = Timer("x + y", globals={"x": x, "y": y}, label="add")
        >>> m = t.timeit(100)
        >>> m.mean  # seconds per run
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = _timeit.default_timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: str = "python") -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if str(language).lower() not in ("python", "py", "language.python"):
            raise NotImplementedError("tapegrad.torch.utils.benchmark.Timer runs Python statements only")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply "
                             "be moved to `setup`.")
        self._globals = dict(globals or {})
        if "torch" not in self._globals:
            import tapegrad.torch
            self._globals["torch"] = tapegrad.torch
        stmt, setup = _dedent(stmt), _dedent(setup)
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _run(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run the statement ``number`` times in one block (after a short warm-up)."""
        self._run(max(number // 100, 2))
        return Measurement(number_per_run=number, raw_times=[self._run(number)], task_spec=self._task_spec)

    def _block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._run(0) for _ in range(5)]))
        number = 1
        while True:
            took = self._run(number)
            if (overhead / took <= 1e-4 and took >= min_run_time / 1000) or took > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Time blocks of runs, the block size chosen so that the timer's
        overhead is negligible, until ``min_run_time`` seconds are spent."""
        number = self._block_size(min_run_time)
        times: list[float] = []
        total = 0.0
        while total < min_run_time:
            spent = self._run(number)
            times.append(spent)
            total += spent
            if callback is not None:
                callback(number, spent)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)


def _dedent(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()
