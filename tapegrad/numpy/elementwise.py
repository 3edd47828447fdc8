"""Elementwise primitives of tapegrad.numpy, each with its rules in one definition.

``name = elementwise(np.name, vjp_maker, ...)`` (see ``_define.elementwise``)
makes the primitive, its VJP rules (one maker per argument), its JVP rules
(the same makers: the Jacobian is diagonal), its broadcasting batching rule,
NumPy's dispatch to it and its name in ``tapegrad.numpy``. A rule is staged,
``lambda ans, *args: lambda g: ...``: the outer call runs when the op is
recorded (what it closes over is what the tape keeps), the inner one in the
backward pass. Rules are written with tapegrad's own functions, so a
backward pass recorded on an outer tape differentiates again; ``g`` may
carry leading batch axes, and the engine sums a cotangent in the broadcast
shape back to its argument's shape and casts it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapegrad.backend import array_module
from tapegrad.batching import defbatch, elementwise_rule
from tapegrad.core.engine_ops import cast_to
from tapegrad.core.primitive import defjvp
from tapegrad.core.tape import consumable
from tapegrad.core.traced import Traced, concrete, value
from tapegrad.numpy._define import elementwise, same

Vjp = Callable[[Any], Any]


# --- helpers of the rules --------------------------------------------------------------------
def _select(g: Any, m: Any) -> Any:
    """``g * m`` for a mask ``m`` (0, 1, or 0.5 on ties), but exactly +0 where
    ``m`` is 0: not -0 for a negative ``g``, nor NaN for an infinite one (as
    JAX's select and PyTorch's masked_fill give)."""
    if m.dtype == bool:
        return where3(m, g, 0.0)
    return where3(m != 0, g * m, 0.0)


def _at_zero(x: Any) -> Any:
    """The boolean mask ``x == 0`` (a NumPy array when ``x`` is concrete)."""
    v = concrete(x)
    return value(x) == 0 if v is None else np.asarray(v == 0)


def _balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """1 where x is the winner, 0.5 on ties (as JAX splits them), else 0; in
    the result's dtype (a float64 mask would promote float32 cotangents)."""
    xp = array_module(z)
    if xp is not np or concrete(x) is None or concrete(z) is None or concrete(y) is None:  # (no NumPy array of them; on CuPy, no host sync)
        x, z, y = value(x), value(z), value(y)
        win = x == z
        dtype = np.result_type(z)
        out = where3(win, xp.ones((), dtype), xp.zeros((), dtype))
        return where3(win & (y == z), xp.asarray(0.5, dtype), out)
    x, z, y = value(x), value(z), value(y)
    win = x == z
    out = np.asarray(win, dtype=np.result_type(z))
    tie = win & (y == z)
    if tie.any():
        out = np.array(out)  # writeable, even where win broadcast
        out[np.broadcast_to(tie, out.shape)] = 0.5
    return out


def _sign_or_phase(x: Any) -> Any:
    """d|x|/dx: sign(x) for real x, conj(x)/|x| for complex (JAX's complex
    convention), 0 at 0 (as PyTorch and HIPS autograd; JAX takes 1 there)."""
    v = value(x)
    if np.iscomplexobj(v):
        a = absolute(x)
        return conjugate(x) / where3(value(a) == 0, 1.0, a) * (np.abs(v) != 0)
    return np.sign(v)


def _tanh_vjp(g: Any, ans: Any) -> Any:
    """g * (1 - ans**2). On plain arrays in one buffer: ``ans``'s own, when
    the walk frees it after this anyway (a backward pass through wide tanh
    layers is where peak memory is set), else a new one."""
    if type(g) is np.ndarray and type(ans) is np.ndarray and g.shape == ans.shape:
        out = ans if consumable(ans) and ans.dtype == np.result_type(g, ans) else None
        out = np.multiply(ans, ans, out=out)
        np.subtract(1, out, out=out)
        return np.multiply(g, out, out=out)
    return g * (1 - square(ans))  # square: one edge to ans where ans * ans has two


def _vjp_power_base(x: Any, y: Any) -> Vjp:
    """d(x**y)/dx = y x**(y-1) (0 where y == 0). A constant exponent, the
    common case (x ** 2), costs one power and one product."""
    if type(y) in (int, float) or (isinstance(y, np.generic) and np.ndim(y) == 0):
        if y == 0:
            return lambda g: g * 0
        if y == 2:
            return lambda g: g * (2 * x)
        return lambda g: g * (y * power(x, y - 1))
    return lambda g: g * (y * power(x, where3(value(y) == 0, 1, y - 1)))


def _vjp_sinc(ans: Any, x: Any) -> Vjp:
    zero = value(x) == 0
    safe = where3(zero, 1.0, x)
    return lambda g: g * where3(zero, 0.0, (cos(np.pi * safe) - ans) / safe)


def _jvp_absolute(ans: Any, x: Any) -> Vjp:
    if np.iscomplexobj(value(x)):
        return lambda t: real(conjugate(x) * t) / where3(value(ans) == 0, 1.0, ans)
    return lambda t: t * np.sign(value(x))


# --- one argument ----------------------------------------------------------------------------
# (primitives a rule calls before, or inside, its own definition: declared for type checkers)
cos: Callable[..., Any]
cosh: Callable[..., Any]
conjugate: Callable[..., Any]
real: Callable[..., Any]
imag: Callable[..., Any]
astype_float: Callable[..., Any]
negative   = elementwise(np.negative,   lambda ans, x: lambda g: -g)
positive   = elementwise(np.positive,   lambda ans, x: same)
absolute   = elementwise(np.absolute,   lambda ans, x: lambda g: g * _sign_or_phase(x), jvps=(_jvp_absolute,))
sqrt       = elementwise(np.sqrt,       lambda ans, x: lambda g: g * 0.5 / ans)
cbrt       = elementwise(np.cbrt,       lambda ans, x: lambda g: g / (3 * ans * ans))
square     = elementwise(np.square,     lambda ans, x: lambda g: g * 2 * x)
exp        = elementwise(np.exp,        lambda ans, x: lambda g: g * ans)
exp2       = elementwise(np.exp2,       lambda ans, x: lambda g: g * ans * np.log(2))
expm1      = elementwise(np.expm1,      lambda ans, x: lambda g: g * exp(x))  # (not ans + 1: no digits left for x << 0)
log        = elementwise(np.log,        lambda ans, x: lambda g: g / x)
log2       = elementwise(np.log2,       lambda ans, x: lambda g: g / (x * np.log(2)))
log10      = elementwise(np.log10,      lambda ans, x: lambda g: g / (x * np.log(10)))
log1p      = elementwise(np.log1p,      lambda ans, x: lambda g: g / (x + 1))
sin        = elementwise(np.sin,        lambda ans, x: lambda g: g * cos(x))
cos        = elementwise(np.cos,        lambda ans, x: lambda g: -g * sin(x))
tan        = elementwise(np.tan,        lambda ans, x: lambda g: g * (1 + ans * ans))
arcsin     = elementwise(np.arcsin,     lambda ans, x: lambda g: g / sqrt((1 - x) * (1 + x)))  # (no cancellation near |x| = 1)
arccos     = elementwise(np.arccos,     lambda ans, x: lambda g: -g / sqrt((1 - x) * (1 + x)))
arctan     = elementwise(np.arctan,     lambda ans, x: lambda g: g / (1 + x * x))
sinh       = elementwise(np.sinh,       lambda ans, x: lambda g: g * cosh(x))
cosh       = elementwise(np.cosh,       lambda ans, x: lambda g: g * sinh(x))
tanh       = elementwise(np.tanh,       lambda ans, x: lambda g: _tanh_vjp(g, ans))
arcsinh    = elementwise(np.arcsinh,    lambda ans, x: lambda g: g / sqrt(x * x + 1))
arccosh    = elementwise(np.arccosh,    lambda ans, x: lambda g: g / sqrt((x - 1) * (x + 1)))
arctanh    = elementwise(np.arctanh,    lambda ans, x: lambda g: g / ((1 - x) * (1 + x)))
reciprocal = elementwise(np.reciprocal, lambda ans, x: lambda g: -g * ans * ans)
deg2rad    = elementwise(np.deg2rad,    lambda ans, x: lambda g: g * (np.pi / 180))
rad2deg    = elementwise(np.rad2deg,    lambda ans, x: lambda g: g * (180 / np.pi))
conjugate  = elementwise(np.conjugate,  lambda ans, x: lambda g: conjugate(g))
real       = elementwise(np.real,       lambda ans, x: same, jvps=(lambda ans, x: lambda t: real(t),))
imag       = elementwise(np.imag,       lambda ans, x: (lambda g: g * -1j) if np.iscomplexobj(value(x)) else (lambda g: g * 0),
                         jvps=(lambda ans, x: lambda t: imag(t),))
# (``g`` first: ``-1j * np.float64(2.0)`` is a Python complex, which has no shape)
sinc       = elementwise(np.sinc, _vjp_sinc)

# --- two arguments (broadcasting: the engine unbroadcasts) ------------------------------------
add        = elementwise(np.add,        lambda ans, x, y: same,
                                        lambda ans, x, y: same)
subtract   = elementwise(np.subtract,   lambda ans, x, y: same,
                                        lambda ans, x, y: lambda g: -g)
multiply   = elementwise(np.multiply,   lambda ans, x, y: lambda g: g * y,
                                        lambda ans, x, y: lambda g: g * x)
divide     = elementwise(np.divide,     lambda ans, x, y: lambda g: g / y,
                                        lambda ans, x, y: lambda g: -g * ans / y)
power      = elementwise(np.power,      lambda ans, x, y: _vjp_power_base(x, y),
                                        lambda ans, x, y: lambda g: g * (log(where3(value(x) == 0, 1, x)) * ans))
arctan2    = elementwise(np.arctan2,    lambda ans, y, x: lambda g: g * x / (x * x + y * y),
                                        lambda ans, y, x: lambda g: -g * y / (x * x + y * y))
maximum    = elementwise(np.maximum,    lambda ans, x, y: lambda g: _select(g, _balanced_eq(x, ans, y)),
                                        lambda ans, x, y: lambda g: _select(g, _balanced_eq(y, ans, x)))
minimum    = elementwise(np.minimum,    lambda ans, x, y: lambda g: _select(g, _balanced_eq(x, ans, y)),
                                        lambda ans, x, y: lambda g: _select(g, _balanced_eq(y, ans, x)))
fmax       = elementwise(np.fmax,       lambda ans, x, y: lambda g: _select(g, _balanced_eq(x, ans, y)),
                                        lambda ans, x, y: lambda g: _select(g, _balanced_eq(y, ans, x)))
fmin       = elementwise(np.fmin,       lambda ans, x, y: lambda g: _select(g, _balanced_eq(x, ans, y)),
                                        lambda ans, x, y: lambda g: _select(g, _balanced_eq(y, ans, x)))
hypot      = elementwise(np.hypot,      lambda ans, x, y: lambda g: g * x / ans,
                                        lambda ans, x, y: lambda g: g * y / ans)
logaddexp  = elementwise(np.logaddexp,  lambda ans, x, y: lambda g: g * exp(x - ans),
                                        lambda ans, x, y: lambda g: g * exp(y - ans))
logaddexp2 = elementwise(np.logaddexp2, lambda ans, x, y: lambda g: g * exp2(x - ans),
                                        lambda ans, x, y: lambda g: g * exp2(y - ans))
remainder  = elementwise(np.remainder,  lambda ans, x, y: same,
                                        lambda ans, x, y: lambda g: -g * np.floor_divide(value(x), value(y)))
fmod       = elementwise(np.fmod,       lambda ans, x, y: same,
                                        lambda ans, x, y: lambda g: -g * np.trunc(value(x) / value(y)))
heaviside  = elementwise(np.heaviside,  lambda ans, x1, x2: lambda g: _select(g, np.zeros(np.shape(value(x1)), bool)),
                                        lambda ans, x1, x2: lambda g: _select(g, _at_zero(x1)))  # (x2: the value at 0)


# --- three arguments -------------------------------------------------------------------------
def _clip_masks(x: Any, lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    x, lo, hi = value(x), value(lo), value(hi)
    below = x < lo if lo is not None else False
    above = x > hi if hi is not None else False
    return ~(below | above), below, above


# the primitive: bounds by position, ``clip(a, lo, hi)`` (``clip`` below is NumPy's front-end)
clip_bounds = elementwise(
    np.clip,
    lambda ans, x, lo=None, hi=None, **kw: lambda g: _select(g, _clip_masks(x, lo, hi)[0]),
    lambda ans, x, lo=None, hi=None, **kw: lambda g: _select(g, _clip_masks(x, lo, hi)[1]),
    lambda ans, x, lo=None, hi=None, **kw: lambda g: _select(g, _clip_masks(x, lo, hi)[2]),
    name="clip", numpy=False)
_UNSET: Any = object()


def clip(a: Any, a_min: Any = _UNSET, a_max: Any = _UNSET, out: Any = None, **kwargs: Any) -> Any:
    """``np.clip(a, a_min, a_max)``, the bounds given by position or by keyword
    (``a_min=``/``a_max=``, or NumPy 2's ``min=``/``max=``): one ``clip`` entry
    whose bounds are positional arguments, so traced bounds get gradients too."""
    for key, pos in (("min", a_min), ("max", a_max)):
        if key in kwargs:
            if pos is not _UNSET:
                raise TypeError(f"clip: pass either a_{key} or {key}, not both")
            if key == "min":
                a_min = kwargs.pop(key)
            else:
                a_max = kwargs.pop(key)
    lo = None if a_min is _UNSET else a_min
    hi = None if a_max is _UNSET else a_max
    if out is not None:
        if type(a) is Traced or type(lo) is Traced or type(hi) is Traced:
            raise TypeError("tapegrad: numpy.clip with out= writes into a plain array and would "
                            "drop the gradient; call it without out=")
        return np.clip(a, lo, hi, out=out, **kwargs)
    return clip_bounds(a, lo, hi, **kwargs)


clip.primitive = clip_bounds.primitive  # type: ignore[attr-defined]  # (rules are defined on either)

where3: Callable[..., Any] = elementwise(np.where, None,
                                     lambda ans, c, x, y: lambda g: where3(c, g, 0.0),
                                     lambda ans, c, x, y: lambda g: where3(c, 0.0, g), numpy=False)
where3.__doc__ = """``np.where(mask, x, y)``: ``x`` where ``mask`` holds, else ``y`` (broadcast).

The three-argument ``where`` as one primitive (NumPy's own function on plain
arrays, no Python front-end). ``mask`` is a constant: a boolean array or
scalar that gets no gradient (take ``value()`` of a traced condition first;
``tapegrad.numpy.where`` does). Its rules route the cotangent to ``x`` where
``mask`` holds and to ``y`` elsewhere, exactly +0 on the other side."""


# --- copies and casts ------------------------------------------------------------------------
def _copy(x: Any) -> Any:
    return x.copy()


copy = elementwise(_copy, lambda ans, x: same, name="copy")


def _astype(x: Any, dtype: Any) -> Any:
    return x.astype(dtype)


astype_float = elementwise(_astype, lambda ans, x, dtype: same, name="astype",
                           jvps=(lambda ans, x, dtype: lambda t: astype_float(t, dtype),))
# the engine's cast (tapegrad.core.primitive: its VJP is there): its JVP and batching rules
defjvp(cast_to, lambda ans, x, dtype: lambda t: cast_to(t, dtype))
defbatch(cast_to, elementwise_rule(cast_to))

