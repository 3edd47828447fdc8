"""``repr`` of tensors, as PyTorch formats them (its ``_tensor_str`` rules).

Precision 4; scientific notation when the largest / smallest nonzero finite
magnitude exceed 1000, the largest exceeds 1e8 or the smallest is below 1e-4;
integer-valued floats print as ``2.``; columns aligned to the widest entry;
rows wrapped at 80 characters; ``...`` summaries beyond 1000 elements.
``torch.set_printoptions`` sets these module globals (``SCI_MODE`` forces
scientific notation on or off).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

PRECISION = 4
THRESHOLD: float = 1000  # (inf: never summarise)
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE: bool | None = None  # None: chosen per tensor by the magnitudes


class _Formatter:
    def __init__(self, a: np.ndarray) -> None:
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = a.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(_plain(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        absd = np.abs(vals).astype(np.float64)
        lo, hi = float(absd.min()), float(absd.max())
        if np.any(vals != np.ceil(vals)):
            self.int_mode = False
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        if SCI_MODE is not None:  # (before the widths, as PyTorch 2.x)
            self.sci_mode = SCI_MODE
        pyvals = vals.astype(np.float64).tolist()
        if self.sci_mode:
            w = max(len(f"{v:.{PRECISION}e}") for v in pyvals)
        elif self.int_mode:
            w = max(len(f"{v:.0f}") for v in pyvals) + 1
        else:
            w = max(len(f"{v:.{PRECISION}f}") for v in pyvals)
        self.max_width = max(self.max_width, w)

    def format(self, v: Any) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{PRECISION}f}"
        else:
            s = _plain(v)
        return (self.max_width - len(s)) * " " + s


def _plain(v: Any) -> str:
    return str(v)


def _complex_str(v: complex, f1: _Formatter, f2: _Formatter) -> str:
    re = f1.format(v.real)
    im = (f2.format(v.imag) + "j").lstrip()
    return re + im if im[0] in "+-" else re + "+" + im


def _vector(a: np.ndarray, indent: int, summarize: bool, f1: _Formatter, f2: _Formatter | None) -> str:
    width = f1.max_width + 2 + (f2.max_width + 1 if f2 is not None else 0)
    per_line = max(1, math.floor((LINEWIDTH - indent) / width))

    def fmt(v: Any) -> str:
        return _complex_str(v, f1, f2) if f2 is not None else f1.format(v)

    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = [fmt(v) for v in a[:EDGEITEMS].tolist()] + [" ..."] + [fmt(v) for v in a[-EDGEITEMS:].tolist()]
    else:
        data = [fmt(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, f1: _Formatter, f2: _Formatter | None) -> str:
    if a.ndim == 0:
        v = a.item()
        return _complex_str(v, f1, f2) if f2 is not None else f1.format(v)
    if a.ndim == 1:
        return _vector(a, indent, summarize, f1, f2)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = ([_nested(a[i], indent + 1, summarize, f1, f2) for i in range(EDGEITEMS)] + ["..."]
                + [_nested(a[i], indent + 1, summarize, f1, f2) for i in range(n - EDGEITEMS, n)])
    else:
        rows = [_nested(a[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _summarized(a: np.ndarray) -> np.ndarray:
    """The entries a summary shows (what the formatter sizes its columns on)."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]]) if a.shape[0] > 2 * EDGEITEMS else a
    if a.shape[0] > 2 * EDGEITEMS:
        parts = [a[i] for i in range(EDGEITEMS)] + [a[i] for i in range(len(a) - EDGEITEMS, len(a))]
    else:
        parts = list(a)
    return np.stack([_summarized(p) for p in parts])


def tensor_str(a: np.ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr (no prefix, no suffixes)."""
    if a.size == 0:
        return "[]"
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    summarize = a.size > THRESHOLD
    src = _summarized(a) if summarize else a
    if a.dtype.kind == "c":
        f1, f2 = _Formatter(src.real), _Formatter(src.imag)
        return _nested(a, indent, summarize, f1, f2)
    return _nested(a, indent, summarize, _Formatter(src), None)


def _add_suffixes(s: str, suffixes: list[str], indent: int) -> str:
    out = [s]
    last = len(s) - s.rfind("\n") + 1
    for suf in suffixes:
        if last + len(suf) + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + suf)
            last = indent + len(suf)
        else:
            out.append(", " + suf)
            last += len(suf) + 2
    out.append(")")
    return "".join(out)


def tensor_repr(a: np.ndarray, dtype_name: str, default_dtypes: tuple[str, ...], device: str | None,
                grad_fn_name: str | None, requires_grad: bool, prefix: str = "tensor(") -> str:
    """PyTorch's ``repr`` of a tensor holding ``a``."""
    indent = len(prefix)
    suffixes = []
    if device is not None:
        suffixes.append(f"device='{device}'")
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dtype_name != default_dtypes[0]:
            suffixes.append("dtype=torch." + dtype_name)
        body = "[]"
    else:
        if dtype_name not in default_dtypes:
            suffixes.append("dtype=torch." + dtype_name)
        body = tensor_str(a, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
