"""Anomaly detection: ``torch.autograd.detect_anomaly`` and ``set_detect_anomaly``.

While it is on (a process-wide switch, as PyTorch's):

- every entry recorded on the facade tape keeps the traceback of the
  forward call that made it (``on_record``, in a weak dictionary keyed
  by the entry: it goes with the graph, and holds no reference back to it);
  an entry recorded by a backward pass (``create_graph=True``) also keeps
  the name and traceback of the node whose backward made it;
- ``backward`` walks the graph one entry at a time (``anomaly_backprop``,
  which the facade's backward walk calls instead of the plain one); when an
  entry's backward fails, a ``UserWarning`` "Error detected in <node>.
  Traceback of forward call that caused the error: ..." is emitted and the
  error re-raised; with ``check_nan``, a node that returns NaN raises
  PyTorch's ``Function '<node>' returned nan values in its <k>th output.``
  (``k``: the node's output, i.e. the input of the forward op, in PyTorch's
  order).

While it is off, nothing of this runs: the facade's walk reads one flag per
backward call and recording is untouched.

How recording is observed: every entry of the facade tape is built by its
``record`` (``tapegrad.torch._graph.FacadeTape.record``), which calls each
of the observers in ``tapegrad.torch._graph.observers`` with the new entry:
while anomaly mode is on, ``on_record`` is one of them (beside, say,
``saved_tensors_hooks``'; ``_graph.add_observer`` / ``remove_observer``).
The checked walk is ``_backward.use_walk(anomaly_backprop)``.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tapegrad.core import tape as _tape
from tapegrad.core.traced import value
from tapegrad.torch import _backward, _graph
from tapegrad.torch._graph import FacadeEntry, core_name

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "on_record",
           "set_anomaly_enabled", "set_detect_anomaly"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_state = {"enabled": False, "check_nan": True}

# entry -> (forward traceback, parent): ``parent`` is None or ``(name, traceback, parent)``
# of the node whose backward recorded the entry (create_graph)
_traces: weakref.WeakKeyDictionary[Any, tuple[traceback.StackSummary, Any]] = weakref.WeakKeyDictionary()


class _Running(threading.local):
    def __init__(self) -> None:
        self.nodes: list[tuple[str, Any]] = []  # (name, trace) of the entries whose backward is running


_running = _Running()


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return _state["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly detection (if on) checks backward results for NaN."""
    return _state["check_nan"]


# --- recording -------------------------------------------------------------------------------


def _forward_stack() -> traceback.StackSummary:
    """The stack of the calling user code, outermost first, without the
    frames inside tapegrad at its top (lines are read when it is printed)."""
    f: Any = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        f = f.f_back
    summary = traceback.StackSummary.extract(traceback.walk_stack(f), lookup_lines=False)
    summary.reverse()
    return summary


def on_record(entry: Any) -> None:
    """Keep the forward traceback of facade-tape ``entry`` (just recorded)."""
    running = _running.nodes
    parent = running[-1] if running else None
    _traces[entry] = (_forward_stack(), parent)


_lock = threading.Lock()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Switch anomaly detection on or off for the whole process (as
    ``torch.set_anomaly_enabled``)."""
    with _lock:
        _state["enabled"] = bool(enabled)
        _state["check_nan"] = bool(check_nan)
        if enabled:
            _graph.add_observer(on_record)
            _backward.use_walk(anomaly_backprop)
            _graph.version_error_hook[0] = _warn_version_error
        else:
            _graph.remove_observer(on_record)
            _backward.use_walk(None)
            _graph.version_error_hook[0] = None


# --- the checked backward walk ----------------------------------------------------------------


def node_name(entry: Any) -> str:
    """The PyTorch name of the node of tape entry ``entry`` (no view is made)."""
    if type(entry) is FacadeEntry:
        shared = getattr(entry, "shared", None)
        if shared is not None:
            return shared[0].name()  # type: ignore[no-any-return]
        if entry.name is not None:
            return entry.name
    return core_name(entry.prim)


def _output_index(entry: Any, j: int) -> int:
    """The output of ``entry``'s node (PyTorch's numbering: its forward
    op's inputs) that the rule of parent ``j`` computes."""
    parents = getattr(entry, "input_parents", None)
    if parents:
        for k, p in enumerate(parents):
            if p == j or (type(p) is tuple and p[1] == j):
                return k
    return j


def _has_nan(c: Any) -> bool:
    v = value(c)
    dtype = getattr(v, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return False
    if isinstance(v, (np.ndarray, np.generic)):
        return bool(np.isnan(v).any())
    return bool(type(v).__module__.startswith("cupy") and v.__array_namespace__().isnan(v).any())


def _checked(rule: Callable[[Any], Any], name: str, k: int) -> Callable[[Any], Any]:
    def check(g: Any) -> Any:
        c = rule(g)
        if _has_nan(c):
            raise RuntimeError(f"Function '{name}' returned nan values in its {k}th output.")
        return c

    return check


def _user_stacklevel() -> int:
    """The ``stacklevel`` of ``_warn``'s warnings that names the user's line
    (the innermost frame outside tapegrad) that ran the backward pass."""
    f: Any = sys._getframe(2)
    level = 2
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        f = f.f_back
        level += 1
    return level if f is not None else 2


def _warn(name: str, trace: Any) -> None:
    """PyTorch's warnings for an error in the backward of node ``name``."""
    level = _user_stacklevel()
    if trace is None:
        warnings.warn(f"Error detected in {name}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.", stacklevel=level)
        return
    stack, parent = trace
    warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the error:\n"
                  f"{''.join(stack.format())}", stacklevel=level)
    while parent is not None:
        pname, ptrace = parent
        if ptrace is None:
            break
        pstack, parent = ptrace
        warnings.warn(f"\n\nPrevious calculation was induced by {pname}. Traceback of forward call that "
                      f"induced the previous calculation:\n{''.join(pstack.format())}", stacklevel=level)


def _warn_version_error(entry: Any) -> None:
    """The warning for ``entry``, whose backward found a saved value changed in place."""
    _warn(node_name(entry), _traces.get(entry))


def anomaly_backprop(entries: Iterable[Any], ct: dict[int, Any], retain: bool,
                     hooks: dict[int, list[Callable[[Any], Any]]] | None = None) -> dict[int, Any]:
    """``tapegrad.core.tape.backprop``, one entry at a time, with anomaly
    mode's checks: NaN results (with ``check_nan``) and the forward
    traceback of the node whose backward fails."""
    with _tape.tracing:  # (one span for the walk, not one per entry: see tapegrad._gc)
        return _checked_walk(entries, ct, retain, hooks)


def _checked_walk(entries: Iterable[Any], ct: dict[int, Any], retain: bool,
                  hooks: dict[int, list[Callable[[Any], Any]]] | None) -> dict[int, Any]:
    check_nan = _state["check_nan"]
    running = _running.nodes
    for e in entries:
        if e.index not in ct:
            continue
        name = node_name(e)
        trace = _traces.get(e)
        rules = e.vjps
        if check_nan and rules is not None:
            if type(rules) is tuple:
                e.vjps = tuple(_checked(r, name, _output_index(e, j)) for j, r in enumerate(rules))
            else:
                e.vjps = _checked(rules, name, _output_index(e, 0))
        wrapped = e.vjps
        running.append((name, trace))
        try:
            _tape.backprop((e,), ct, retain, hooks)
        except Exception:
            _warn(name, trace)
            raise
        finally:
            running.pop()
            if wrapped is not rules and e.vjps is wrapped:  # kept (retain_graph): the entry's own rules back
                e.vjps = rules
    return ct


# --- the switches -----------------------------------------------------------------------------


class detect_anomaly:  # noqa: N801
    """Context manager that turns anomaly detection on (see the module's doc).

    Examples:
        >>> with torch.autograd.detect_anomaly():
        ...     y = x ** 0.5             # x holds a negative number
        ...     y.sum().backward()
        RuntimeError: Function 'PowBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:  # noqa: N801
    """Set anomaly detection on or off: at once, and, used as a context
    manager, back to what it was on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
