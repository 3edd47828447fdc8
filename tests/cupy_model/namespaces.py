"""The model's modules: ``cupy``, ``cupy.linalg``, ``cupy.fft``, ``cupy.random``,
``cupy.cuda``, ``cupyx``, ``cupyx.scipy.special``, ``cupyx.scipy.linalg``, ``cupyx.scipy.signal``.

Which names exist: NumPy's public functions less ``MISSING`` (names NumPy 2.4
has and CuPy 13 lacks: the "Comparison Table" of docs.cupy.dev and dpnp's
NumPy 2.4.1 / CuPy 13.6.0 table; NumPy 2's array-API aliases came to CuPy
later); ``cupy.linalg`` is the list in ``cupy/linalg/__init__.py``; signatures
narrower than NumPy's are in ``SIGNATURES`` (from CuPy's function
definitions: ``cupy/_sorting/sort.py``, ``cupy/_indexing/indexing.py``,
``cupy/linalg/_decomposition.py``, ``cupy/fft/_fft.py``,
``cupy/_math/sumprod.py``, ``cupy/_statistics/*.py``).
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

import numpy as np
import scipy.special as sps

from cupy_model import core
from cupy_model.core import (
    NAMESPACE,
    TRANSFERS,
    DLPackCapsule,
    ndarray,
    ufunc,
    unsupported,
    unwrap,
    wrap,
)

# NumPy 2.4 names CuPy 13 does not have
MISSING = {
    # NumPy 2's array-API aliases and new functions
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "pow", "bitwise_left_shift",
    "bitwise_right_shift", "bitwise_invert", "bitwise_count", "concat", "permute_dims", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "cumulative_sum", "cumulative_prod", "astype",
    "matvec", "vecmat", "vecdot", "matrix_transpose", "isdtype", "unstack", "trapezoid",
    # never in CuPy
    "apply_over_axes", "asmatrix", "bmat", "busday_count", "busday_offset", "is_busday",
    "datetime_as_string", "datetime_data", "fromregex", "genfromtxt", "loadtxt", "savetxt",
    "einsum_path", "nested_iters", "setbufsize", "getbufsize", "seterrcall", "geterrcall",
    "frompyfunc", "vectorize", "piecewise", "memmap", "printoptions", "set_printoptions",
    "get_printoptions", "info", "source", "lookfor", "array_api", "ma", "rec", "char", "strings",
}

# names whose results stay Python objects (dtypes, shapes, flags)
PYTHON_RESULTS = {"result_type", "ndim", "shape", "size", "isscalar", "can_cast", "iscomplexobj",
                  "isrealobj", "may_share_memory", "shares_memory", "issubdtype", "broadcast_shapes",
                  "promote_types", "min_scalar_type", "common_type", "get_array_module", "iterable"}

# CuPy's parameter lists where they are narrower than NumPy's (a NumPy-only keyword is a TypeError)
SIGNATURES: dict[str, tuple[str, ...]] = {
    "take": ("a", "indices", "axis", "out"),
    "sort": ("a", "axis", "kind"),
    "argsort": ("a", "axis", "kind"),
    "sum": ("a", "axis", "dtype", "out", "keepdims"),
    "prod": ("a", "axis", "dtype", "out", "keepdims"),
    "mean": ("a", "axis", "dtype", "out", "keepdims"),
    "var": ("a", "axis", "dtype", "out", "ddof", "keepdims"),
    "std": ("a", "axis", "dtype", "out", "ddof", "keepdims"),
    "max": ("a", "axis", "out", "keepdims", "initial"),
    "min": ("a", "axis", "out", "keepdims", "initial"),
    "amax": ("a", "axis", "out", "keepdims", "initial"),
    "amin": ("a", "axis", "out", "keepdims", "initial"),
    "cumsum": ("a", "axis", "dtype", "out"),
    "cumprod": ("a", "axis", "dtype", "out"),
    "linalg.cholesky": ("a",),
    "linalg.svd": ("a", "full_matrices", "compute_uv"),
    "linalg.qr": ("a", "mode"),
    "linalg.eigh": ("a", "UPLO"),
    "linalg.eigvalsh": ("a", "UPLO"),
    "linalg.norm": ("x", "ord", "axis", "keepdims"),
    "linalg.pinv": ("a", "rcond"),
    "linalg.matrix_rank": ("M", "tol"),
    # cupyx/scipy/linalg/_solve_triangular.py: one matrix, one right-hand side block (no stacks)
    "scipy.linalg.solve_triangular": ("a", "b", "trans", "lower", "unit_diagonal", "overwrite_b", "check_finite"),
    "scipy.signal.convolve": ("in1", "in2", "mode", "method"),
    **{f"fft.{n}": ("a", "n", "axis", "norm") for n in
       ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{f"fft.{n}": ("a", "s", "axes", "norm") for n in
       ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")},
}

LINALG = ["matrix_power", "cross", "matmul", "tensordot", "cholesky", "qr", "svd", "eigh", "eig",
          "eigvalsh", "eigvals", "norm", "cond", "det", "matrix_rank", "slogdet", "solve", "tensorsolve",
          "lstsq", "inv", "pinv", "tensorinv"]
FFT = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
       "irfftn", "hfft", "ihfft", "fftshift", "ifftshift"]
# cupyx.scipy.special: the names cupyx/scipy/special/__init__.py imports in CuPy 13 (no jv/jn,
# iv, ive, kv: CuPy's Bessel functions are the orders 0 and 1, and yn)
SPECIAL = ["i0", "i0e", "i1", "i1e", "j0", "j1", "k0", "k0e", "k1", "k1e", "y0", "y1", "yn", "spherical_yn",
           "wright_bessel", "bdtr", "bdtrc", "bdtri", "btdtr", "btdtri", "fdtr", "fdtrc", "fdtri", "gdtr",
           "gdtrc", "nbdtr", "nbdtrc", "nbdtri", "pdtr", "pdtrc", "pdtri", "chdtr", "chdtrc", "chdtri", "ndtr",
           "log_ndtr", "ndtri", "logit", "expit", "log_expit", "boxcox", "boxcox1p", "inv_boxcox",
           "inv_boxcox1p", "entr", "huber", "kl_div", "pseudo_huber", "rel_entr", "gamma", "gammaln",
           "loggamma", "gammasgn", "gammainc", "gammaincinv", "gammaincc", "gammainccinv", "beta", "betaln",
           "betainc", "betaincinv", "psi", "rgamma", "polygamma", "multigammaln", "digamma", "poch", "erf",
           "erfc", "erfcx", "erfinv", "erfcinv", "lpmv", "sph_harm", "binom", "exp1", "expi", "expn",
           "softmax", "log_softmax", "zeta", "zetac", "lambertw", "cbrt", "exp10", "exp2", "radian", "cosdg",
           "sindg", "tandg", "cotdg", "log1p", "expm1", "exprel", "cosm1", "round", "xlogy", "xlog1py",
           "logsumexp", "sinc", "ellipk", "ellipkm1", "ellipj", "ellipkinc", "ellipeinc"]


# cupyx.scipy.linalg: the names cupyx/scipy/linalg/__init__.py imports in CuPy 13 (solve_triangular,
# lu, expm, the special matrices; no solve_banded, solve_sylvester, sqrtm, cholesky)
SCIPY_LINALG = ["solve_triangular", "lu", "lu_factor", "lu_solve", "expm", "khatri_rao", "bandwidth", "block_diag",
                "circulant", "companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion", "hadamard",
                "hankel", "helmert", "hilbert", "kron", "leslie", "toeplitz", "tri", "tril", "triu"]
# cupyx.scipy.signal's convolutions (cupyx/scipy/signal/_signaltools.py: convolve(in1, in2, mode, method),
# correlate, fftconvolve, oaconvolve, convolve2d, correlate2d, choose_conv_method)
SCIPY_SIGNAL = ["convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d",
                "choose_conv_method"]


def function(npf: Any, name: str, key: str | None = None) -> Any:
    """The CuPy function ``name``: NumPy's ``npf`` on device memory, with CuPy's signature."""
    params = SIGNATURES.get(key or name)
    keep_python = name in PYTHON_RESULTS

    def f(*args: Any, **kwargs: Any) -> Any:
        if params is not None:
            if len(args) > len(params):
                raise TypeError(f"{name}() takes at most {len(params)} positional arguments "
                                f"({len(args)} given)")
            for k in kwargs:
                if k not in params or params.index(k) < len(args):
                    raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
        if keep_python:
            return npf(*[a.dtype if type(a) is ndarray and name == "result_type" else
                         (a._a if type(a) is ndarray else a) for a in args], **kwargs)
        return wrap(npf(*unwrap(args), **unwrap(kwargs)))
    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = "cupy"
    return f


def module(name: str, attrs: dict[str, Any]) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    m.__file__ = __file__
    return m


# --- creation and transfer ------------------------------------------------------------------------

def asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> ndarray:
    """``cupy.asarray``: a device array as it is (or cast); host data copied to the device."""
    if type(a) is ndarray:
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    if isinstance(a, (list, tuple)) and any(type(v) is ndarray for v in a):
        return NAMESPACE["stack"]([asarray(v, dtype) for v in a])
    TRANSFERS.h2d += 1
    return ndarray._of(np.array(a, dtype=dtype, order=order or "K"))


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, *, blocking: bool = False) -> ndarray:
    """``cupy.array``: a copy on the device."""
    if type(obj) is ndarray:
        return ndarray._of(np.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    TRANSFERS.h2d += 1
    return ndarray._of(np.array(obj, dtype=dtype, order=order, ndmin=ndmin))


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *, blocking: bool = True) -> Any:
    """``cupy.asnumpy``: a host copy of a device array (a host array as it is)."""
    if type(a) is ndarray:
        return a.get(order=order, out=out, _what="asnumpy")
    return np.asarray(a, order=order)


def get_array_module(*args: Any) -> types.ModuleType:
    """``cupy.get_array_module``."""
    return sys.modules["cupy"] if any(type(a) is ndarray for a in args) else np


def from_dlpack(x: Any, *, device: Any = None, copy: Any = None) -> ndarray:
    """``cupy.from_dlpack``: a device tensor, sharing its memory."""
    if isinstance(x, DLPackCapsule):
        return ndarray._of(x.a)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"object of type {type(x)} does not support the DLPack protocol")
    kind, _ = x.__dlpack_device__()
    if kind not in (2, 3, 13):  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
        raise RuntimeError("CuPy (model) imports DLPack tensors on a CUDA device only "
                           f"(device type {kind})")
    cap = x.__dlpack__()
    if not isinstance(cap, DLPackCapsule):
        raise TypeError("the model reads its own DLPack capsules only")
    return ndarray._of(cap.a)


def _creation(npf: Any, name: str) -> Any:
    def f(*args: Any, **kwargs: Any) -> ndarray:
        return wrap(npf(*unwrap(args), **unwrap(kwargs)))
    f.__name__ = name
    return f


def _pad(npf: Any) -> Any:
    """``cupy.pad`` (``cupy/_padding/pad.py``): NumPy's modes less ``median`` (commented out there)."""
    f = function(npf, "pad")

    def pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
        if mode == "median":
            raise ValueError("mode 'median' is not supported")
        return f(array, pad_width, mode, **kwargs)
    pad.__module__ = "cupy"
    return pad


def _scatter(ufname: str) -> Any:
    def f(a: ndarray, slices: Any, value: Any) -> None:
        if type(a) is not ndarray:
            raise unsupported(a)
        if not (type(value) is ndarray or isinstance(value, core.SCALARS)):
            raise unsupported(value)
        getattr(np, ufname).at(a._a, core.index_key(slices), unwrap(value))
    f.__name__ = f"scatter_{ufname[:3]}"
    return f


# --- random ---------------------------------------------------------------------------------------

class RandomState:
    """``cupy.random.RandomState``: NumPy's streams (CuPy's own generator differs), device results."""

    def __init__(self, seed: Any = None) -> None:
        self._rs = np.random.RandomState(seed)

    def seed(self, seed: Any = None) -> None:
        self._rs.seed(seed)

    def _draw(self, name: str, *args: Any, dtype: Any = None, **kwargs: Any) -> ndarray:
        r = getattr(self._rs, name)(*unwrap(args), **unwrap(kwargs))
        r = np.asarray(r)
        return ndarray._of(r.astype(dtype) if dtype is not None else r)

    def rand(self, *size: int, dtype: Any = float) -> ndarray:
        return self._draw("random_sample", size or None, dtype=dtype)

    def randn(self, *size: int, dtype: Any = float) -> ndarray:
        return self._draw("standard_normal", size or None, dtype=dtype)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in _RANDOM_DRAWS:
            raise AttributeError(name)
        return lambda *a, **k: self._draw(name, *a, **k)


_RANDOM_DRAWS = {"random_sample", "random", "standard_normal", "normal", "uniform", "randint", "permutation",
                 "choice", "binomial", "exponential", "gamma", "beta", "poisson", "multinomial",
                 "standard_gamma", "laplace", "logistic", "lognormal", "geometric", "gumbel", "chisquare",
                 "dirichlet", "standard_exponential", "standard_cauchy", "standard_t", "multivariate_normal"}


class Generator:
    """``cupy.random.Generator`` (``default_rng``): NumPy's PCG64 stream, device results."""

    def __init__(self, seed: Any = None) -> None:
        self._g = np.random.default_rng(seed)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        f = getattr(self._g, name)

        def draw(*a: Any, dtype: Any = None, **k: Any) -> ndarray:
            if dtype is not None and name in ("integers",):
                k["dtype"] = dtype
                dtype = None
            r = np.asarray(f(*unwrap(a), **unwrap(k)))
            return ndarray._of(r.astype(dtype) if dtype is not None else r)
        return draw


_GLOBAL_RS = RandomState()


def _random_module() -> types.ModuleType:
    attrs: dict[str, Any] = {"RandomState": RandomState, "Generator": Generator,
                             "default_rng": lambda seed=None: Generator(seed),
                             "seed": lambda seed=None: _GLOBAL_RS.seed(seed),
                             "get_random_state": lambda: _GLOBAL_RS,
                             "rand": lambda *s, dtype=float: _GLOBAL_RS.rand(*s, dtype=dtype),
                             "randn": lambda *s, dtype=float: _GLOBAL_RS.randn(*s, dtype=dtype)}
    for n in _RANDOM_DRAWS:
        attrs[n] = (lambda n: lambda *a, **k: getattr(_GLOBAL_RS, n)(*a, **k))(n)
    return module("cupy.random", attrs)


# --- cuda -----------------------------------------------------------------------------------------

class Stream:
    """``cupy.cuda.Stream``: the model runs everything at once."""

    null: Stream

    def synchronize(self) -> None:
        return None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


Stream.null = Stream()


class CUDARuntimeError(RuntimeError):
    """``cupy.cuda.runtime.CUDARuntimeError``."""


def _cuda_module() -> types.ModuleType:
    runtime = module("cupy.cuda.runtime", {"getDeviceCount": lambda: 1, "getDevice": lambda: 0,
                                           "CUDARuntimeError": CUDARuntimeError, "is_hip": False,
                                           "runtimeGetVersion": lambda: 12000})
    return module("cupy.cuda", {"Device": core.Device, "Stream": Stream, "runtime": runtime,
                                "get_current_stream": lambda: Stream.null, "is_available": lambda: True})


# --- building ---------------------------------------------------------------------------------------

def _special_function(name: str) -> Any:
    spf = getattr(sps, name)
    if isinstance(spf, np.ufunc):
        return ufunc(spf)
    return function(spf, name)


def build() -> dict[str, types.ModuleType]:
    """Every model module by its import name."""
    ns: dict[str, Any] = {}
    for name in dir(np):
        if name.startswith("_") or name in MISSING:
            continue
        obj = getattr(np, name)
        if isinstance(obj, np.ufunc):
            ns[name] = ufunc(obj)
        elif isinstance(obj, type) or isinstance(obj, (int, float, np.dtype)) or obj is None:
            ns[name] = obj  # dtypes, scalar types, constants (CuPy re-exports NumPy's)
        elif callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj)
                                or type(obj).__name__ == "_ArrayFunctionDispatcher"):
            ns[name] = function(obj, name)
    ns.update(ndarray=ndarray, ufunc=ufunc, asarray=asarray, asanyarray=asarray, array=array,
              asnumpy=asnumpy, get_array_module=get_array_module, from_dlpack=from_dlpack,
              fromDlpack=from_dlpack, is_available=lambda: True, __version__="13.6.0+cpu-model",
              _scatter_add=_scatter("add"))
    for name in ("zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace", "logspace",
                 "tri", "indices"):
        ns[name] = _creation(getattr(np, name), name)
    ns["pad"] = _pad(np.pad)
    linalg = {n: function(getattr(np.linalg, n), n, f"linalg.{n}") for n in LINALG}
    linalg["LinAlgError"] = np.linalg.LinAlgError
    fft = {n: function(getattr(np.fft, n), n, f"fft.{n}") for n in FFT}
    fft["fftfreq"] = _creation(np.fft.fftfreq, "fftfreq")
    fft["rfftfreq"] = _creation(np.fft.rfftfreq, "rfftfreq")
    ns["__modules__"] = {"linalg": linalg, "fft": fft}
    NAMESPACE.clear()
    NAMESPACE.update(ns)
    cupy = module("cupy", {k: v for k, v in ns.items() if k not in ("__modules__", "_scatter_add")})
    cupy.__path__ = []  # a package: import cupy.linalg works
    mods = {"cupy": cupy, "cupy.linalg": module("cupy.linalg", linalg), "cupy.fft": module("cupy.fft", fft),
            "cupy.random": _random_module(), "cupy.cuda": _cuda_module()}
    mods["cupy.cuda.runtime"] = mods["cupy.cuda"].runtime
    # cupy/lib/stride_tricks.py: as_strided, sliding_window_view (views of device memory)
    tricks = module("cupy.lib.stride_tricks", {
        n: function(getattr(np.lib.stride_tricks, n), n) for n in ("as_strided", "sliding_window_view")})
    mods["cupy.lib"] = module("cupy.lib", {"stride_tricks": tricks})
    mods["cupy.lib"].__path__ = []
    mods["cupy.lib.stride_tricks"] = tricks
    special = module("cupyx.scipy.special", {n: _special_function(n) for n in SPECIAL if hasattr(sps, n)})
    NAMESPACE["__special__"] = special.__dict__  # (ufuncs of scipy.special on device arrays: core.pyx)
    import scipy.linalg as spl
    import scipy.signal as sps_signal
    slinalg = module("cupyx.scipy.linalg", {n: function(getattr(spl, n), n, f"scipy.linalg.{n}")
                                            for n in SCIPY_LINALG if hasattr(spl, n)})
    ssignal = module("cupyx.scipy.signal", {n: function(getattr(sps_signal, n), n, f"scipy.signal.{n}")
                                            for n in SCIPY_SIGNAL})
    scipy = module("cupyx.scipy", {"special": special, "linalg": slinalg, "signal": ssignal})
    scipy.__path__ = []
    cupyx = module("cupyx", {"scatter_add": _scatter("add"), "scatter_max": _scatter("maximum"),
                             "scatter_min": _scatter("minimum"), "allow_synchronize": core.allow_synchronize,
                             "DeviceSynchronized": core.DeviceSynchronized, "scipy": scipy})
    cupyx.__path__ = []
    mods.update({"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special,
                 "cupyx.scipy.linalg": slinalg, "cupyx.scipy.signal": ssignal})
    for full, m in mods.items():
        if "." in full:
            parent, _, leaf = full.rpartition(".")
            setattr(mods[parent], leaf, m)
    return mods
