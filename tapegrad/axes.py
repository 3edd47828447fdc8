"""Axis arguments as NumPy reads them (negative axes, None, tuples), in one place."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["normalize_axes", "normalize_axis"]


def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` as a non-negative index into ``ndim`` axes (NumPy's AxisError when out of range)."""
    if not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None for every axis, an int, or a tuple or list of them) as a
    tuple of non-negative indices into ``ndim`` axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(normalize_axis(a, ndim) for a in axis)
    return (normalize_axis(axis, ndim),)
