"""Random tapegrad.numpy programs for the differential fuzzer (tests/test_differential_fuzz.py).

``make_program(seed)`` draws a short straight-line program of one array
input: elementwise functions, arithmetic with broadcast constants,
reductions (``axis``, ``keepdims``), products (``matmul``, ``tensordot``,
``inner``), shape changes (``reshape``, ``transpose``, ``expand_dims``,
``squeeze``, ``moveaxis``, ``broadcast_to``), indexing (slices, integer
arrays, masks, ``None``), ``sort``, ``cumsum``, ``cumprod``, ``concatenate``,
``stack``, ``where``, ``roll``, ``flip``... Shapes favour size-0 and size-1
axes; a quarter of the programs run in float32. Each step knows its output
shape, so every program is valid; its text (``Program.source``) is Python
that reproduces it.

``check_program(prog)`` runs the program under the transforms and their
compositions (grad, jvp, vjp, vmap, jit, hessian, jacfwd, jacrev,
jit(grad), vmap(grad), grad(grad)...) and compares them with each other,
with NumPy's values and with central finite differences. It returns the
list of disagreements (empty: the program passed).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp

Fn = Callable[[Any], Any]


@dataclass
class Program:
    seed: int
    shape: tuple[int, ...]
    dtype: np.dtype
    steps: list[tuple[str, Fn]] = field(default_factory=list)
    out_shape: tuple[int, ...] = ()
    weights: np.ndarray | None = None

    def vector(self, x: Any) -> Any:
        """The program: its output array."""
        for _, fn in self.steps:
            x = fn(x)
        return x

    def scalar(self, x: Any) -> Any:
        """``sum(program(x) * weights)``: a scalar function for grad and hessian."""
        return tnp.sum(self.vector(x) * self.weights)

    @property
    def source(self) -> str:
        lines = [f"# seed {self.seed}: x of shape {self.shape}, {self.dtype.name}"]
        lines += [f"x = {text}" for text, _ in self.steps]
        return "\n".join(lines)


# --- shapes ---------------------------------------------------------------------------------------
def _dim(rng: np.random.Generator) -> int:
    return int(rng.choice([0, 1, 1, 2, 2, 3, 3, 4], p=[0.12, 0.14, 0.14, 0.15, 0.15, 0.12, 0.1, 0.08]))


def _shape(rng: np.random.Generator, lo: int = 0, hi: int = 3) -> tuple[int, ...]:
    return tuple(_dim(rng) for _ in range(int(rng.integers(lo, hi + 1))))


def _const(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, lo: float = 0.5) -> np.ndarray:
    """A constant of ``shape``: values of magnitude in [lo, 1.5), random signs."""
    mag = rng.uniform(lo, 1.5, size=shape)
    return (mag * rng.choice([-1.0, 1.0], size=shape)).astype(dtype)


def _bcast_shape(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against ``shape``: a suffix of it, some sizes made 1."""
    k = int(rng.integers(0, len(shape) + 1))
    suffix = shape[len(shape) - k:]
    return tuple(1 if rng.random() < 0.3 else n for n in suffix)


def _axis(rng: np.random.Generator, nd: int) -> int:
    a = int(rng.integers(0, nd))
    return a - nd if rng.random() < 0.4 else a


def _fmt(c: np.ndarray) -> str:
    return f"const{c.shape}"


# --- the steps: each takes (rng, shape, dtype) and returns (text, fn, new shape) or None --------------
Step = tuple[str, Fn, tuple[int, ...]]

UNARY = {
    "tnp.sin(x)": tnp.sin, "tnp.cos(x)": tnp.cos, "tnp.tanh(x)": tnp.tanh, "-x": tnp.negative,
    "tnp.square(x)": tnp.square, "tnp.exp(tnp.tanh(x))": lambda x: tnp.exp(tnp.tanh(x)),
    "tnp.log1p(x * x)": lambda x: tnp.log1p(x * x), "tnp.sqrt(x * x + 1)": lambda x: tnp.sqrt(x * x + 1.0),
    "x * tnp.sin(x)": lambda x: x * tnp.sin(x), "x / (1 + x * x)": lambda x: x / (1.0 + x * x),
    "tnp.arctan(x)": tnp.arctan, "tnp.where(x > 0, x, 0.3 * x)": lambda x: tnp.where(x > 0, x, 0.3 * x),
    "0.5 * x + 0.25": lambda x: 0.5 * x + 0.25, "x ** 3": lambda x: x ** 3,
}


def step_unary(rng, shape, dtype):
    name = str(rng.choice(sorted(UNARY)))
    return name, UNARY[name], shape


BINARY = {"add": tnp.add, "subtract": tnp.subtract, "multiply": tnp.multiply, "divide": tnp.divide,
          "maximum": tnp.maximum, "hypot": tnp.hypot}


def step_binary(rng, shape, dtype):
    name = str(rng.choice(sorted(BINARY)))
    c = _const(rng, _bcast_shape(rng, shape), dtype)
    out = np.broadcast_shapes(shape, c.shape)
    fn = BINARY[name]
    if rng.random() < 0.5 or name in ("divide", "hypot"):
        return f"tnp.{name}(x, {_fmt(c)})", (lambda x: fn(x, c)), out
    return f"tnp.{name}({_fmt(c)}, x)", (lambda x: fn(c, x)), out


def _reduce_axes(rng, shape):
    nd = len(shape)
    if nd == 0 or rng.random() < 0.25:
        return None, ()
    if nd >= 2 and rng.random() < 0.25:
        axes = tuple(sorted(rng.choice(nd, size=2, replace=False).tolist()))
        return axes, axes
    a = _axis(rng, nd)
    return a, (a % nd,)


def step_reduce(rng, shape, dtype):
    name = str(rng.choice(["sum", "mean", "max", "min", "prod", "logsumexp", "var"]))
    axis, axes = _reduce_axes(rng, shape)
    red = tuple(range(len(shape))) if axis is None else axes
    n = math.prod(shape[i] for i in red)
    if name in ("mean", "max", "min", "logsumexp", "var") and n == 0:
        name = "sum"  # (NumPy: no identity, or a NaN with a warning)
    if name == "prod" and n > 6:
        name = "sum"
    if name == "var" and n < 2:
        name = "mean" if n else "sum"
    keep = bool(rng.random() < 0.4)
    out = tuple(1 if i in red else s for i, s in enumerate(shape)) if keep else tuple(
        s for i, s in enumerate(shape) if i not in red)
    fn = getattr(tnp, name)
    return f"tnp.{name}(x, axis={axis}, keepdims={keep})", (lambda x: fn(x, axis=axis, keepdims=keep)), out


def step_matmul(rng, shape, dtype):
    if not shape:
        return None
    k = _dim(rng)
    if len(shape) >= 2 and rng.random() < 0.3:  # C @ x
        c = _const(rng, (k, shape[-2]), dtype)
        return f"tnp.matmul({_fmt(c)}, x)", (lambda x: tnp.matmul(c, x)), shape[:-2] + (k, shape[-1])
    if rng.random() < 0.25:  # x @ vector
        c = _const(rng, (shape[-1],), dtype)
        return f"x @ {_fmt(c)}", (lambda x: x @ c), shape[:-1]
    c = _const(rng, (shape[-1], k), dtype)
    return f"x @ {_fmt(c)}", (lambda x: x @ c), shape[:-1] + (k,)


def step_contract(rng, shape, dtype):
    if not shape:
        return None
    k = _dim(rng)
    if rng.random() < 0.5:
        c = _const(rng, (k, shape[-1]), dtype)
        return f"tnp.inner(x, {_fmt(c)})", (lambda x: tnp.inner(x, c)), shape[:-1] + (k,)
    a = _axis(rng, len(shape))
    c = _const(rng, (shape[a], k), dtype)
    out = tuple(s for i, s in enumerate(shape) if i != a % len(shape)) + (k,)
    return (f"tnp.tensordot(x, {_fmt(c)}, axes=([{a}], [0]))",
            (lambda x: tnp.tensordot(x, c, axes=([a], [0]))), out)


def step_shape(rng, shape, dtype):
    nd = len(shape)
    kind = str(rng.choice(["ravel", "expand", "squeeze", "transpose", "moveaxis", "merge", "broadcast",
                           "reshape-1"]))
    if kind == "ravel" or (kind in ("transpose", "moveaxis", "merge") and nd < 2):
        return "tnp.ravel(x)", tnp.ravel, (math.prod(shape),)
    if kind == "expand" or (kind == "squeeze" and 1 not in shape):
        if nd >= 4:
            return None
        a = int(rng.integers(-nd - 1, nd + 1))
        out = list(shape)
        out.insert(a % (nd + 1), 1)
        return f"tnp.expand_dims(x, {a})", (lambda x: tnp.expand_dims(x, a)), tuple(out)
    if kind == "squeeze":
        a = int(rng.choice([i for i, s in enumerate(shape) if s == 1]))
        return f"tnp.squeeze(x, axis={a})", (lambda x: tnp.squeeze(x, axis=a)), shape[:a] + shape[a + 1:]
    if kind == "transpose":
        perm = tuple(int(p) for p in rng.permutation(nd))
        return f"tnp.transpose(x, {perm})", (lambda x: tnp.transpose(x, perm)), tuple(shape[p] for p in perm)
    if kind == "moveaxis":
        s, d = int(rng.integers(0, nd)), int(rng.integers(0, nd))
        out = list(shape)
        out.insert(d, out.pop(s))
        return f"tnp.moveaxis(x, {s}, {d})", (lambda x: tnp.moveaxis(x, s, d)), tuple(out)
    if kind == "merge":
        out = shape[:-2] + (shape[-2] * shape[-1],)
        return f"x.reshape({out})", (lambda x: x.reshape(out)), out
    if kind == "broadcast":
        if nd >= 4:
            return None
        k = int(rng.choice([0, 1, 2, 3]))
        out = (k,) + shape
        return f"tnp.broadcast_to(x, {out})", (lambda x: tnp.broadcast_to(x, out)), out
    if math.prod(shape) == 0 and nd:  # (-1 is ambiguous for an empty array: NumPy refuses it too)
        return "tnp.ravel(x)", tnp.ravel, (0,)
    out = (-1, shape[-1]) if nd and shape[-1] else (-1,)
    real = (math.prod(shape) // shape[-1], shape[-1]) if len(out) == 2 else (math.prod(shape),)
    return f"tnp.reshape(x, {out})", (lambda x: tnp.reshape(x, out)), real


def step_index(rng, shape, dtype):
    nd = len(shape)
    if nd == 0:
        return "x[None]", (lambda x: x[None]), (1,)
    kind = str(rng.choice(["rev", "tail", "ints", "mask", "newaxis", "ellipsis", "step"]))
    n = shape[0]
    if kind == "rev":
        return "x[::-1]", (lambda x: x[::-1]), shape
    if kind == "tail":
        return "x[1:]", (lambda x: x[1:]), (max(n - 1, 0),) + shape[1:]
    if kind == "ints" and n > 0:
        idx = rng.integers(-n, n, size=int(rng.integers(0, 4)))
        return f"x[{idx.tolist()}]", (lambda x: x[idx]), (len(idx),) + shape[1:]
    if kind == "mask":
        m = rng.random(shape) < 0.5
        return "x[mask]", (lambda x: x[m]), (int(m.sum()),)
    if kind == "newaxis" and nd < 4:
        return "x[:, None]", (lambda x: x[:, None]), shape[:1] + (1,) + shape[1:]
    if kind == "ellipsis" and shape[-1] > 0:
        j = int(rng.integers(-shape[-1], shape[-1]))
        return f"x[..., {j}]", (lambda x: x[..., j]), shape[:-1]
    return "x[::2]", (lambda x: x[::2]), ((n + 1) // 2,) + shape[1:]


def step_scan(rng, shape, dtype):
    if not shape:
        return None
    a = _axis(rng, len(shape))
    name = str(rng.choice(["sort", "cumsum", "cumprod", "flip", "roll"]))
    if name == "cumprod" and shape[a] > 5:
        name = "cumsum"
    fn = {"sort": lambda x: tnp.sort(x, axis=a), "cumsum": lambda x: tnp.cumsum(x, axis=a),
          "cumprod": lambda x: tnp.cumprod(x, axis=a), "flip": lambda x: tnp.flip(x, axis=a),
          "roll": lambda x: tnp.roll(x, 1, axis=a)}[name]
    text = f"tnp.roll(x, 1, axis={a})" if name == "roll" else f"tnp.{name}(x, axis={a})"
    return text, fn, shape


def step_join(rng, shape, dtype):
    if not shape or rng.random() < 0.3:
        a = int(rng.integers(-len(shape) - 1, len(shape) + 1)) if len(shape) < 4 else 0
        if len(shape) >= 4:
            return None
        out = list(shape)
        out.insert(a % (len(shape) + 1), 2)
        return (f"tnp.stack([x, tnp.sin(x)], axis={a})", (lambda x: tnp.stack([x, tnp.sin(x)], axis=a)),
                tuple(out))
    a = _axis(rng, len(shape))
    out = list(shape)
    out[a] *= 2
    return (f"tnp.concatenate([x, x * x], axis={a})", (lambda x: tnp.concatenate([x, x * x], axis=a)),
            tuple(out))


def step_misc(rng, shape, dtype):
    nd = len(shape)
    kind = str(rng.choice(["clip", "pad", "diff", "repeat", "tile", "einsum", "std"]))
    if kind == "clip" or nd == 0:
        return "tnp.clip(x, -0.8, 0.9)", (lambda x: tnp.clip(x, -0.8, 0.9)), shape
    a = _axis(rng, nd)
    if kind == "pad":
        out = tuple(s + 3 if i == a % nd else s for i, s in enumerate(shape))
        width = [(1, 2) if i == a % nd else (0, 0) for i in range(nd)]
        mode = str(rng.choice(["constant", "edge", "reflect"])) if shape[a] > 1 else "constant"
        return f"tnp.pad(x, {width}, mode={mode!r})", (lambda x: tnp.pad(x, width, mode=mode)), out
    if kind == "diff":
        out = tuple(max(s - 1, 0) if i == a % nd else s for i, s in enumerate(shape))
        return f"tnp.diff(x, axis={a})", (lambda x: tnp.diff(x, axis=a)), out
    if kind == "repeat":
        out = tuple(s * 2 if i == a % nd else s for i, s in enumerate(shape))
        return f"tnp.repeat(x, 2, axis={a})", (lambda x: tnp.repeat(x, 2, axis=a)), out
    if kind == "tile":
        return "tnp.tile(x, 2)", (lambda x: tnp.tile(x, 2)), shape[:-1] + (shape[-1] * 2,)
    if kind == "einsum":
        letters = "abcd"[:nd]
        spec = f"{letters}->{letters[::-1]}" if nd < 2 or shape[0] != shape[1] else f"aa{letters[2:]}->a{letters[2:]}"
        out = tuple(shape[::-1]) if "->" in spec and not spec.startswith("aa") else (shape[0],) + shape[2:]
        return f"tnp.einsum({spec!r}, x)", (lambda x: tnp.einsum(spec, x)), out
    if shape[a] < 2:
        return "tnp.clip(x, -0.8, 0.9)", (lambda x: tnp.clip(x, -0.8, 0.9)), shape
    out = tuple(s for i, s in enumerate(shape) if i != a % nd)
    return f"tnp.std(x, axis={a})", (lambda x: tnp.std(x, axis=a)), out


STEPS = [(step_misc, 2), (step_unary, 3), (step_binary, 3), (step_reduce, 2), (step_matmul, 2), (step_contract, 1),
         (step_shape, 2), (step_index, 2), (step_scan, 2), (step_join, 1)]


def make_program(seed: int) -> Program:
    """A random program (the same for the same seed)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(np.float32 if rng.random() < 0.25 else np.float64)
    shape = _shape(rng, 0, 3)
    prog = Program(seed, shape, dtype)
    cur = shape
    fns, weights = [f for f, _ in STEPS], np.array([w for _, w in STEPS], float)
    for _ in range(int(rng.integers(1, 6))):
        for _attempt in range(5):
            got = fns[int(rng.choice(len(fns), p=weights / weights.sum()))](rng, cur, dtype)
            if got is not None and math.prod(got[2]) <= 60 and len(got[2]) <= 4:
                break
        else:
            continue
        text, fn, cur = got
        prog.steps.append((text, fn))
    prog.out_shape = tuple(cur)
    prog.weights = _const(rng, prog.out_shape, dtype, lo=0.2)
    return prog


# --- checking ----------------------------------------------------------------------------------
class Disagreement(AssertionError):
    pass


def _close(what: str, got: Any, want: Any, rtol: float, atol: float) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise Disagreement(f"{what}: shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        err = np.max(np.abs(got - want)) if got.size else 0.0
        raise Disagreement(f"{what}: max abs error {err:.3g} (rtol {rtol}, atol {atol})")


def _fd_grad(f: Fn, x: np.ndarray, eps: float) -> np.ndarray:
    g = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


def inputs(prog: Program) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(prog.seed + 10**6)
    x = _const(rng, prog.shape, prog.dtype, lo=0.3)
    batch = int(rng.choice([0, 1, 2, 3], p=[0.1, 0.2, 0.35, 0.35]))
    xs = _const(rng, (batch,) + prog.shape, prog.dtype, lo=0.3)
    return x, xs


def check_program(prog: Program, extras: bool = True) -> list[str]:
    """Run ``prog`` under the transforms; return what disagrees (one line each)."""
    x, xs = inputs(prog)
    f32 = prog.dtype == np.float32
    rt = 2e-3 if f32 else 1e-6  # (transform vs transform: the same arithmetic, reordered)
    problems: list[str] = []

    def check(name: str, fn: Callable[[], None]) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                fn()
        except Disagreement as e:
            problems.append(f"{name}: {e}")
        except Exception as e:  # noqa: BLE001 (a transform that raises is a finding too)
            problems.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")

    f, g = prog.scalar, prog.vector
    x64 = x.astype(np.float64)
    val = np.asarray(g(x))
    scale = 1.0 + float(np.max(np.abs(val))) if val.size else 1.0

    def values() -> None:
        if val.shape != prog.out_shape:
            raise Disagreement(f"output shape {val.shape}, expected {prog.out_shape}")
        if val.dtype != prog.dtype and val.size:
            raise Disagreement(f"output dtype {val.dtype}, expected {prog.dtype}")
        with tg.Tape() as tape:
            traced = g(tape.watch(x))
        _close("traced value vs NumPy", tg.value(traced), val, 1e-5 if f32 else 1e-12, 0)

    check("value", values)
    grad = None

    def grad_fd() -> None:
        nonlocal grad
        grad = tg.grad(f)(x)
        if grad.dtype != prog.dtype:
            raise Disagreement(f"gradient dtype {grad.dtype}, expected {prog.dtype}")
        if x.size > 40:
            return
        fd = _fd_grad(lambda u: tnp.sum(g(u.astype(prog.dtype) if not f32 else u) * prog.weights), x64,
                      1e-6) if not f32 else None
        if f32:  # the float32 gradient vs the float64 one of the same program
            want = tg.grad(lambda u: tnp.sum(g(u) * prog.weights.astype(np.float64)))(x64)
            gs = 1.0 + float(np.max(np.abs(want))) if want.size else 1.0
            _close("grad (float32) vs grad (float64)", grad, want, 1e-2, 1e-3 * gs * scale)
        else:
            gs = 1.0 + float(np.max(np.abs(fd))) if fd.size else 1.0
            _close("grad vs finite differences", grad, fd, 1e-4, 1e-6 * gs)

    check("grad", grad_fd)
    if grad is None:
        return problems
    gs = 1.0 + float(np.max(np.abs(grad))) if grad.size else 1.0
    v = _const(np.random.default_rng(prog.seed + 7), prog.shape, prog.dtype, lo=0.1)
    u = _const(np.random.default_rng(prog.seed + 8), prog.out_shape, prog.dtype, lo=0.1)

    def jvp_vjp() -> None:
        y, t = tg.jvp(f, (x,), (v,))
        _close("jvp value", y, f(x), rt, rt * scale)
        _close("jvp vs grad . v", t, np.sum(grad.astype(np.float64) * v), rt * 10, rt * gs * max(1, x.size))
        yv, t_vec = tg.jvp(g, (x,), (v,))
        _close("jvp value (vector)", yv, val, 1e-5 if f32 else 1e-12, 0)
        _, vjp_fn = tg.vjp(g, x)
        (ct,) = vjp_fn(u)
        if ct.shape != prog.shape:
            raise Disagreement(f"vjp cotangent shape {ct.shape}, expected {prog.shape}")
        lhs = float(np.sum(np.asarray(ct, np.float64) * v))
        rhs = float(np.sum(np.asarray(t_vec, np.float64) * u))
        _close("<vjp(u), v> vs <u, jvp(v)>", lhs, rhs, rt * 10, rt * gs * scale * max(1, x.size))

    check("jvp/vjp", jvp_vjp)

    def jit_checks() -> None:
        _close("jit(f)", tg.jit(g)(x), val, rt, rt * scale)
        _close("jit(grad(f))", tg.jit(tg.grad(f))(x), grad, rt, rt * gs)

    check("jit", jit_checks)

    def vmap_checks() -> None:
        got = tg.vmap(g)(xs)
        want = np.stack([np.asarray(g(r)) for r in xs]) if len(xs) else np.zeros((0,) + prog.out_shape)
        _close("vmap(f) vs a loop", got, want, rt, rt * scale)
        got = tg.vmap(tg.grad(f))(xs)
        want = np.stack([tg.grad(f)(r) for r in xs]) if len(xs) else np.zeros(xs.shape)
        _close("vmap(grad(f)) vs a loop", got, want, rt, rt * gs)

    check("vmap", vmap_checks)
    if not extras:
        return problems
    kind = prog.seed % 4

    if kind == 0 and x.size <= 8:
        def hessians() -> None:
            h = tg.hessian(f)(x)
            n = x.size
            hm = np.asarray(h, np.float64).reshape(n, n)
            hs = 1.0 + float(np.max(np.abs(hm))) if hm.size else 1.0
            _close("hessian symmetric", hm, hm.T, rt * 10, rt * hs)
            _close("hessian vs jacfwd(grad)", tg.jacfwd(tg.grad(f))(x), h, rt * 10, rt * hs)
            if not f32:
                fd = np.stack([_fd_grad(lambda q, i=i: tg.grad(f)(q).ravel()[i], x, 1e-5).ravel()
                               for i in range(n)]) if n else np.zeros((0, 0))
                _close("hessian vs finite differences of grad", hm, fd, 1e-3, 1e-5 * hs)
            _close("jit(hessian)", tg.jit(tg.hessian(f))(x), h, rt * 10, rt * hs)

        check("hessian", hessians)
    elif kind == 1:
        def second() -> None:
            h = lambda s: f(x * s)  # noqa: E731
            d2 = tg.grad(tg.grad(h))(np.asarray(1.0, prog.dtype))
            if not f32:
                eps = 1e-5
                fd = (float(tg.grad(h)(1.0 + eps)) - float(tg.grad(h)(1.0 - eps))) / (2 * eps)
                _close("grad(grad) vs finite differences", d2, fd, 1e-4, 1e-5 * gs * max(1.0, abs(fd)))
            _close("vmap(grad(grad))", tg.vmap(tg.grad(tg.grad(h)))(np.ones(2, prog.dtype)),
                   np.full(2, d2), rt, rt * (1 + abs(float(d2))))

        check("grad(grad)", second)
    elif kind == 2:
        def jacobians() -> None:
            if x.size > 12 or val.size > 12:
                return
            jr, jf = tg.jacrev(g)(x), tg.jacfwd(g)(x)
            _close("jacrev vs jacfwd", jr, jf, rt * 10, rt * gs * scale)
            _close("vmap(jvp) vs jacfwd", tg.vmap(lambda t: tg.jvp(g, (x,), (t,))[1])(
                np.eye(max(x.size, 1), dtype=prog.dtype)[: x.size].reshape((x.size,) + prog.shape)),
                np.moveaxis(np.asarray(jf).reshape(prog.out_shape + (x.size,)), -1, 0), rt * 10, rt * gs * scale)

        check("jacobians", jacobians)
    else:
        def compiled() -> None:
            want = tg.vmap(tg.grad(f))(xs)
            _close("jit(vmap(grad(f)))", tg.jit(tg.vmap(tg.grad(f)))(xs), want, rt, rt * gs)
            _close("vmap(jit(grad(f)))", tg.vmap(tg.jit(tg.grad(f)))(xs), want, rt, rt * gs)

        check("jit/vmap", compiled)
    return problems
