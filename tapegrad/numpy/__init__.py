"""tapegrad.numpy: NumPy's API, differentiable.

Same names, signatures and results as NumPy. Called on plain arrays these
functions return plain arrays (at close to NumPy's cost); called on traced
values they record on the tape. Names tapegrad does not define fall through
to NumPy (constants, dtypes, non-differentiable helpers).

``tapegrad.numpy.primitives`` holds the primitives NumPy has no name for
(``where_mask``, ``index_set``, fused ``mean`` and ``linear``...), for code
that records operations itself, such as the PyTorch facade.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as _np

from tapegrad.core.engine_ops import broadcast_to
from tapegrad.core.traced import NUMPY_DISPATCH as _DISPATCH
from tapegrad.numpy import derived as _d
from tapegrad.numpy import fft, linalg, primitives  # tnp.fft, tnp.linalg, tnp.primitives
from tapegrad.numpy import methods as _methods
from tapegrad.numpy._define import NUMPY_NAMES as _NUMPY_NAMES
from tapegrad.numpy.derived import (
    angle,
    array,
    array_split,
    asarray,
    astype,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    average,
    column_stack,
    concatenate,
    cross,
    diag,
    dot,
    dstack,
    einsum,
    expand_dims,
    full,
    full_like,
    hstack,
    inner,
    kron,
    linspace,
    logsumexp,
    matmul,
    mean,
    moveaxis,
    outer,
    ravel,
    repeat,
    reshape,
    select,
    sort,
    split,
    squeeze,
    stack,
    std,
    swapaxes,
    take,
    take_along_axis,
    tensordot,
    tile,
    trace,
    transpose,
    var,
    vdot,
    vstack,
    where,
)
from tapegrad.numpy.elementwise import (
    absolute,
    clip,
    conjugate,
    copy,
    deg2rad,
    divide,
    rad2deg,
    remainder,
)
from tapegrad.numpy.nondiff import nondiff as _nondiff
from tapegrad.numpy.reductions import amax, amin, cumprod, cumsum, prod, sum
from tapegrad.numpy.shape_extra import (
    append,
    c_,
    diff,
    dsplit,
    fabs,
    fliplr,
    flipud,
    gradient,
    hsplit,
    nan_to_num,
    pad,
    partition,
    r_,
    real_if_close,
    rollaxis,
    rot90,
    vsplit,
)
from tapegrad.numpy.shapes import diagonal, flip, roll, tril, triu
from tapegrad.numpy.updates import at

if TYPE_CHECKING:  # the names globals().update(_NUMPY_NAMES) adds below, as type checkers see them
    from tapegrad.numpy.elementwise import (
        add,
        arccos,
        arccosh,
        arcsin,
        arcsinh,
        arctan,
        arctan2,
        arctanh,
        cbrt,
        cos,
        cosh,
        exp,
        exp2,
        expm1,
        fmax,
        fmin,
        fmod,
        heaviside,
        hypot,
        imag,
        log,
        log1p,
        log2,
        log10,
        logaddexp,
        logaddexp2,
        maximum,
        minimum,
        multiply,
        negative,
        positive,
        power,
        real,
        reciprocal,
        sin,
        sinc,
        sinh,
        sqrt,
        square,
        subtract,
        tan,
        tanh,
    )

# the elementwise primitives (each made by elementwise(np.name, ...) in elementwise.py) and the
# functions with no gradient, under their NumPy names
globals().update(_NUMPY_NAMES)
globals().update(_nondiff)

abs = absolute  # noqa: A001
conj = conjugate
true_divide = divide
mod = remainder
max = amax  # noqa: A001
min = amin  # noqa: A001
degrees = rad2deg
radians = deg2rad
zeros = _np.zeros
ones = _np.ones
empty = _np.empty
eye = _np.eye
identity = _np.identity
arange = _np.arange
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None

# what `from tapegrad.numpy import *` and type checkers (mypy --strict) see; tests/test_packaging.py
# keeps it in step with the names above. The non-differentiable functions of wrap.nondiff join at the end
__all__ = [
    "fft", "linalg", "primitives", "abs", "absolute", "add", "amax", "amin", "angle", "append",
    "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "array",
    "array_split", "asarray", "astype", "at", "atleast_1d", "atleast_2d", "atleast_3d", "average",
    "broadcast_to", "c_", "cbrt", "clip", "column_stack", "concatenate", "conj", "conjugate",
    "copy", "cos", "cosh", "cross", "cumprod", "cumsum", "deg2rad", "degrees", "diag", "diagonal",
    "diff", "divide", "dot", "dsplit", "dstack", "e", "einsum", "empty", "exp", "exp2",
    "expand_dims", "expm1", "eye", "fabs", "flip", "fliplr", "flipud", "fmax", "fmin", "fmod",
    "full", "full_like", "gradient", "hsplit", "hstack", "hypot", "identity", "imag", "inf",
    "inner", "kron", "linspace", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
    "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "moveaxis",
    "multiply", "nan", "nan_to_num", "negative", "newaxis", "ones", "outer", "pad", "partition",
    "pi", "positive", "power", "prod", "r_", "rad2deg", "radians", "ravel", "real", "real_if_close",
    "reciprocal", "remainder", "repeat", "reshape", "roll", "rollaxis", "rot90", "select", "sin",
    "sinc", "sinh", "sort", "split", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum",
    "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace", "transpose",
    "tril", "triu", "true_divide", "var", "vdot", "vsplit", "vstack", "where", "zeros"
]
__all__ += sorted(_nondiff)
__all__ += [_n for _n in _NUMPY_NAMES if _n not in __all__]  # (an elementwise primitive added since)

_methods.install()


def _register() -> None:
    names = [n for n in globals() if not n.startswith("_")]
    for n in names:
        np_fn = getattr(_np, n, None)
        if np_fn is not None and callable(np_fn) and not isinstance(np_fn, type):
            _DISPATCH[np_fn] = globals()[n]
    _DISPATCH[_np.where] = where


_register()

for _sub, _np_sub in ((linalg, _np.linalg), (fft, _np.fft)):  # np.linalg.inv(traced) and friends
    for _name in _sub.__all__:
        if callable(getattr(_np_sub, _name, None)):
            _DISPATCH[getattr(_np_sub, _name)] = getattr(_sub, _name)


def __getattr__(name: str) -> Any:
    fn = _NUMPY_NAMES.get(name)  # an elementwise primitive made since this module was imported
    if fn is not None:
        return fn
    # everything else (dtypes, constants, helpers) is NumPy's own
    return getattr(_np, name)

