"""``vmap`` over the op table (tests/optable.py): every op batches with its own rule.

For every case, with a batch of 3 examples:

- ``vmap(f)`` equals stacking ``f`` over the examples, for ``in_axes`` 0, 1
  (the batch at axis 1 of every argument of rank >= 1) and a None/0 mix (the
  first argument shared by every example);
- ``vmap(grad(f))`` equals the loop of per-example gradients and
  ``grad(sum of vmap(f))`` the stacked (or, for a shared argument, summed)
  per-example gradients, with ``f``'s output summed (its real part) to a scalar;
- nothing falls back to the loop over the batch (``batching.loop_rule``): a
  primitive of tapegrad that loops fails the test, whatever its values.

A second table, ``INDEX_OPS``, does the same for indices computed per example
(integer arrays, labels, masks), which the op table has none of. The last
tests check that every primitive of tapegrad.numpy has a batching rule.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from optable import OPS, Case, R, case

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.scipy.special  # noqa: F401  (its primitives are tapegrad's own: see BUILT_IN)
from tapegrad import batching
from tapegrad.core.primitive import REGISTRY, Primitive
from tapegrad.numpy import elementwise, indexing, products, reductions, shapes

SIZE = 3
RTOL, ATOL = 1e-7, 1e-9


# --- the primitives that must batch with their own rule ------------------------------------------


def _numpy_primitives() -> set[Primitive]:
    """The primitives tapegrad.numpy defines itself (its family modules: elementwise.py,
    reductions.py, shapes.py, indexing.py, products.py) and the engine's own
    (tapegrad/core/engine_ops.py): those of linalg, fft and scipy.special come with their modules."""
    core = importlib.import_module("tapegrad.core.engine_ops")
    found = set()
    for mod in (elementwise, reductions, shapes, indexing, products, core):
        for obj in vars(mod).values():
            prim = getattr(obj, "primitive", None)
            if isinstance(prim, Primitive):
                found.add(prim)
    return found


NUMPY_PRIMITIVES = _numpy_primitives()
BUILT_IN = set(REGISTRY)  # tapegrad's own primitives (a test's own, made later, are not)

# Primitives of tapegrad that may loop over the batch, each with why. None do: a new
# entry needs a reason no one call can batch (the indexing rules' own per-example loop, for a
# 0-d boolean index or a mask batched on two vmap levels at once, is checked in its own test).
LOOP_ALLOWED: dict[str, str] = {}


class Loops:
    """The functions mapped by a loop over the batch (``batching.loop_rule``) while a test runs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def ours(self) -> set[str]:
        """The looped ones that must not loop: tapegrad's own primitives (tapegrad.numpy's,
        linalg's, fft's, scipy.special's) and functions with no gradient (``argmax``,
        comparisons...), bar ``LOOP_ALLOWED``; a user's primitive with no rule may."""
        return {n for n, p in self.seen if (p is None or p in BUILT_IN) and n not in LOOP_ALLOWED}

    def assert_none(self) -> None:
        assert not self.ours(), f"mapped by a loop over the batch, not by a batching rule: {sorted(self.ours())}"


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> Loops:
    """Counts the loops over the batch (``loop_rule`` is looked up at each call, so the
    patched one sees every fallback)."""
    rec = Loops()
    loop = batching.loop_rule

    def counting(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        rec.seen.append((getattr(fn, "__name__", repr(fn)), getattr(fn, "primitive", None)))
        return loop(fn, *args, **kwargs)

    monkeypatch.setattr(batching, "loop_rule", counting)
    return rec


# --- known failures outside the batching rules ----------------------------------------------------
# Each entry: a case (or "case/test") and the defect, outside the batching rules.
# strict: once it is fixed the test passes, and the entry must go.
KNOWN: dict[str, str] = {
    # (JAX refuses boolean-mask indexing under vmap altogether)
    **{f"{n}/vgrad/axis0": ("a per-example boolean mask selecting a different number of entries per "
                            "example: the cotangent of the assigned value needs g[mask], which has no "
                            "common shape across the batch")
       for n in ("setitem_mask_value", "setitem_mask_after_slice")},
}


def _known(name: str, test: str, variant: str) -> list[Any]:
    reason = KNOWN.get(f"{name}/{test}/{variant}") or KNOWN.get(f"{name}/{test}") or KNOWN.get(name)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


# --- batches of examples ---------------------------------------------------------------------------


def _examples(c: Case) -> list[list[np.ndarray]]:
    """SIZE examples of the case's arguments (the same shapes, independent draws). Where the
    result's shape depends on the values (a boolean mask), the examples are one draw scaled
    by positive factors, so that each selects the same entries."""
    rng = np.random.default_rng(1234)
    ex = [[np.asarray(make(rng)) for make in c.args] for _ in range(SIZE)]
    shapes = {np.shape(_call(c, np, e)) for e in ex}
    if len(shapes) > 1:
        ex = [[a * (1.0 + 0.25 * i) for a in ex[0]] for i in range(SIZE)]
    return ex


def _call(c: Case, m: Any, args: list[Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return c.fn(m, *args)


def _layout(c: Case, ex: list[list[np.ndarray]], variant: str) -> tuple[list[Any], tuple[Any, ...], list[list[Any]]]:
    """The batched arguments, their ``in_axes`` and each example's arguments for ``variant``:
    "axis0", "axis1" (the batch at axis 1 of arguments of rank >= 1), "shared0" (the first
    argument the same in every example, the rest on axis 0) or "shared_floats" (every
    floating argument shared: only the indices differ per example)."""
    n = len(c.args)
    per = [list(e) for e in ex]
    if variant in ("shared0", "shared_floats"):
        shared = {0} if variant == "shared0" else {i for i, a in enumerate(ex[0]) if a.dtype.kind in "fc"}
        for e in per:
            for i in shared:
                e[i] = ex[0][i]
        axes: tuple[Any, ...] = tuple(None if i in shared else 0 for i in range(n))
    elif variant == "axis1":
        axes = tuple(1 if np.ndim(a) >= 1 else 0 for a in ex[0])
    else:
        axes = (0,) * n
    batched = [per[0][i] if ax is None else np.stack([e[i] for e in per], axis=ax) for i, ax in enumerate(axes)]
    return batched, axes, per


def _variants(c: Case) -> list[str]:
    out = ["axis0"]
    if any(np.ndim(make(np.random.default_rng(0))) >= 1 for make in c.args):
        out.append("axis1")
    if len(c.args) >= 2:
        out.append("shared0")
    return out


def _params(table: list[Case], test: str) -> list[Any]:
    """One test per case and variant; the gradient tests skip "axis1" (where the batch
    sits is vmap's business, not the rules': axis 0 and a shared argument cover them)."""
    return [pytest.param(c, v, id=f"{c.name}-{v}", marks=_known(c.name, test, v))
            for c in table for v in _variants(c) if test == "values" or v != "axis1"]


def _loss(c: Case) -> Callable[..., Any]:
    """The scalar the gradient tests differentiate: the sum of the real part of the output."""
    return lambda *a: tnp.sum(tnp.real(c.fn(tnp, *a)))


def _diff_args(c: Case) -> tuple[int, ...]:
    """The arguments the gradients are taken with respect to (the floating ones)."""
    make = [m(np.random.default_rng(0)) for m in c.args]
    return tuple(i for i, a in enumerate(make) if np.asarray(a).dtype.kind in "fc")


def _close(got: Any, want: Any, what: str) -> None:
    assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)}, expected {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


# --- the op table -----------------------------------------------------------------------------------


def _check_values(c: Case, variant: str, trace_shared: bool = False) -> None:
    """``trace_shared``: the shared arguments enter as traced values of a vjp (a plain
    NumPy array indexed by a batched index is NumPy's own indexing, which cannot see it)."""
    ex = _examples(c)
    batched, axes, per = _layout(c, ex, variant)
    want = np.stack([np.asarray(_call(c, np, e)) for e in per])
    f = tg.vmap(lambda *a: c.fn(tnp, *a), in_axes=axes)
    shared = [i for i, ax in enumerate(axes) if ax is None] if trace_shared else []

    def g(*s: Any) -> Any:
        args = list(batched)
        for i, v in zip(shared, s):
            args[i] = v
        return f(*args)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.vjp(g, *[batched[i] for i in shared])[0] if shared else g()
    assert type(got) is np.ndarray, f"vmap returned {type(got).__name__}"
    _close(got, want, f"vmap(in_axes={axes})")


def _check_vmap_of_grad(c: Case, variant: str) -> None:
    nums = _diff_args(c)
    batched, axes, per = _layout(c, _examples(c), variant)
    grad = tg.grad(_loss(c), argnums=nums)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.vmap(grad, in_axes=axes)(*batched)
        loop = [grad(*e) for e in per]
    for k, i in enumerate(nums):
        _close(got[k], np.stack([g[k] for g in loop]), f"vmap(grad) argument {i}")


def _check_grad_of_vmap(c: Case, variant: str) -> None:
    nums = _diff_args(c)
    batched, axes, per = _layout(c, _examples(c), variant)
    loss = _loss(c)
    grad = tg.grad(loss, argnums=nums)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.grad(lambda *a: tnp.sum(tg.vmap(loss, in_axes=axes)(*a)), argnums=nums)(*batched)
        loop = [grad(*e) for e in per]
    for k, i in enumerate(nums):
        each = [g[k] for g in loop]
        want = sum(each) if axes[i] is None else np.stack(each, axis=axes[i])
        _close(got[k], want, f"grad(vmap) argument {i}")


@pytest.mark.parametrize(("c", "variant"), _params(OPS, "values"))
def test_vmap_equals_the_stacked_loop(c: Case, variant: str, loops: Loops) -> None:
    _check_values(c, variant)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _params(OPS, "vgrad"))
def test_vmap_of_grad_equals_the_loop_of_grads(c: Case, variant: str, loops: Loops) -> None:
    _check_vmap_of_grad(c, variant)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _params(OPS, "gradv"))
def test_grad_of_vmap_equals_the_summed_loop(c: Case, variant: str, loops: Loops) -> None:
    _check_grad_of_vmap(c, variant)
    loops.assert_none()


# --- indices computed per example ---------------------------------------------------------------------


def I(*shape: int, lo: int = 0, hi: int = 4) -> Callable[[np.random.Generator], np.ndarray]:  # noqa: E743, N802
    """Integer indices in [lo, hi) (negative ones count from the end)."""
    return lambda rng: rng.integers(lo, hi, size=shape)


def _set(m: Any, x: Any, key: Any, v: Any) -> Any:
    y = x * 1.0
    y[key] = v
    return y


def _label_nll(m: Any, logits: Any, y: Any) -> Any:
    logp = logits - m.log(m.sum(m.exp(logits), axis=-1, keepdims=True))
    return -logp[y]


def _embed(m: Any, table: Any, tokens: Any, w: Any) -> Any:
    return m.tanh(table[tokens] @ w)


INDEX_OPS: list[Case] = [
    case("gather_rows", lambda m, x, i: x[i], R(4, 5), I(2, 3)),
    case("gather_label", _label_nll, R(6), I(lo=0, hi=6)),
    case("gather_rows_neg", lambda m, x, i: x[i] * 2, R(4, 5), I(3, lo=-4, hi=4)),
    case("gather_axis1", lambda m, x, j: x[:, j], R(4, 5), I(3)),
    case("gather_axis1_of_3", lambda m, x, j: x[1:3, j], R(4, 5, 6), I(2, 2)),
    case("gather_newaxis", lambda m, x, j: x[None, :, j], R(4, 5), I(3)),
    case("gather_ellipsis", lambda m, x, k: x[..., k], R(2, 3, 5), I()),
    case("gather_scalar_index", lambda m, x, k: x[k], R(4, 5), I()),
    case("gather_two_separated", lambda m, x, i, j: x[i, :, j], R(4, 5, 6), I(2, 3), I(3)),
    case("gather_int_then_array", lambda m, x, j: x[0, :, j], R(4, 5, 6), I(3)),
    case("gather_array_then_int", lambda m, x, j: x[:, j, 2], R(4, 5, 6), I(2)),
    case("gather_same_index_twice", lambda m, x, k: x[k, 1:, k], R(4, 5, 4), I()),
    case("gather_plain_and_batched", lambda m, x, j: x[np.array([0, 3, 3]), j], R(4, 5), I(3)),
    case("gather_repeats_grad", lambda m, x, i: m.sum(x[i] ** 2, axis=0), R(4, 2), I(6)),
    case("embedding", _embed, R(6, 3), I(4, lo=0, hi=6), R(3, 2)),
    case("take_along_axis_per_example", lambda m, x, i: m.take_along_axis(x, i % 4, axis=1), R(3, 4), I(3, 2)),
    case("setitem_int", lambda m, x, i, v: _set(m, x, i, v), R(4, 5), I(), R(5)),
    case("setitem_axis1", lambda m, x, j, v: _set(m, x, (slice(None), j), v), R(4, 5), I(2), R(4, 1)),
    case("setitem_separated", lambda m, x, i, v: _set(m, x, (i, slice(None), 1), v), R(4, 3, 5), I(2), R(3)),
    case("setitem_plain_index", lambda m, x, v: _set(m, x, (slice(None), [0, 2], 1), v), R(4, 3, 5), R(2)),
    case("setitem_plain_separated", lambda m, x, v: _set(m, x, ([0, 2], slice(None), [1, 3]), v), R(4, 3, 5), R(2, 1)),
    case("setitem_mask", lambda m, x: _set(m, x, x > 0.5, 0.0), R(3, 4)),
    case("setitem_mask_value", lambda m, x, v: _set(m, x, x[:, 0] > 0, v), R(4, 3), R(3)),
    case("setitem_mask_after_slice", lambda m, x, v: _set(m, x, (slice(None), x[0] < 0), v), R(3, 4), R()),
    case("gather_mask", lambda m, x: x[x > 0] * 2, R(3, 4)),  # (examples selecting alike: see _examples)
    case("gather_mask_none", lambda m, x: x[x > 10.0] + m.sum(x), R(3, 4)),
]




def _index_variants(c: Case) -> list[str]:
    floats = [m(np.random.default_rng(0)).dtype.kind in "fc" for m in c.args]
    return ["axis0"] + ["shared0"] * (len(c.args) >= 2) + ["shared_floats"] * (not all(floats) and sum(floats) > 1)


def _index_params(test: str) -> list[Any]:
    return [pytest.param(c, v, id=f"{c.name}-{v}", marks=_known(c.name, test, v))
            for c in INDEX_OPS for v in _index_variants(c)]


@pytest.mark.parametrize(("c", "variant"), _index_params("values"))
def test_vmap_of_indexing_equals_the_loop(c: Case, variant: str, loops: Loops) -> None:
    _check_values(c, variant, trace_shared=True)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _index_params("vgrad"))
def test_vmap_of_grad_of_indexing(c: Case, variant: str, loops: Loops) -> None:
    _check_vmap_of_grad(c, variant)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _index_params("gradv"))
def test_grad_of_vmap_of_indexing(c: Case, variant: str, loops: Loops) -> None:
    _check_grad_of_vmap(c, variant)
    loops.assert_none()


# --- more shapes of the same primitives ---------------------------------------------------------------

_A = {1: (4,), 2: (3, 4), 3: (2, 3, 4)}  # matmul operands of each rank
_B = {1: (4,), 2: (4, 3), 3: (2, 4, 3)}

MORE_OPS: list[Case] = [
    *[case(f"matmul_{p}d_{q}d", lambda m, a, b: m.matmul(a, b), R(*_A[p]), R(*_B[q])) for p in _A for q in _B],
    case("dot_3d_1d", lambda m, a, b: m.dot(a, b), R(2, 3, 4), R(4)),
    case("outer_2d", lambda m, a, b: m.outer(a, b), R(2, 2), R(3)),
    case("kron_1d_2d", lambda m, a, b: m.kron(a, b), R(3), R(2, 2)),
    case("tensordot_0", lambda m, a, b: m.tensordot(a, b, 0), R(2), R(3)),
    case("einsum_ellipsis_broadcast", lambda m, a, b: m.einsum("...ij,jk->...ik", a, b), R(2, 3, 4), R(4, 2)),
    case("einsum_implicit_repeated", lambda m, a, b: m.einsum("ij,ji", a, b), R(3, 4), R(4, 3)),
    case("einsum_outer_implicit", lambda m, a, b: m.einsum("i,j", a, b), R(3), R(2)),
    case("reshape_minus_one", lambda m, x: m.reshape(x, (-1, 2)), R(3, 4)),
    case("reshape_to_scalar", lambda m, x: m.reshape(x, ()), R(1, 1)),
    case("stack_last_axis", lambda m, x, y: m.stack([x, y, x], axis=-1), R(3, 2), R(3, 2)),
    case("concatenate_axis0", lambda m, x, y: m.concatenate([x, y]), R(2, 3), R(1, 3)),
    case("where_scalar_branch", lambda m, x, y: m.where(y > 0, x, 0.0), R(3, 4), R(4)),
    case("where_batched_condition_only", lambda m, x, y: m.where(x > y, 1.0, y), R(4), R(3, 4)),
    case("sum_keepdims_tuple_neg", lambda m, x: m.sum(x, axis=(-1, 0), keepdims=True), R(2, 3, 4)),
    case("mean_all_keepdims", lambda m, x: m.mean(x, keepdims=True), R(3, 4)),
    case("max_neg_axis", lambda m, x: m.max(x, axis=-2), R(2, 3, 4)),
    case("logsumexp_tuple", lambda m, x: m.log(m.sum(m.exp(x), axis=(0, 2))) if m is np else m.logsumexp(x, axis=(0, 2)), R(2, 3, 4)),
    case("cumsum_flat_3d", lambda m, x: m.cumsum(x), R(2, 3, 2)),
    case("flip_tuple_axes", lambda m, x: m.flip(x, (0, -1)), R(2, 3, 4)),
    case("roll_tuple", lambda m, x: m.roll(x, (1, -2), axis=(0, 2)), R(2, 3, 4)),
    case("pad_constant_values", lambda m, x: m.pad(x, ((0, 1), (2, 0)), constant_values=((1.0, 2.0), (3.0, 4.0))), R(3, 4)),
    case("pad_int_width", lambda m, x: m.pad(x, 1), R(2, 3)),
    case("pad_edge", lambda m, x: m.pad(x, (1, 2), mode="edge") if m is np else m.pad(x, (1, 2), mode="edge") * 1.0, R(3)),
    case("triu_1d", lambda m, x: m.triu(x, -1), R(4)),
    case("tril_3d", lambda m, x: m.tril(x, 1), R(2, 3, 4)),
    case("diagonal_neg_axes", lambda m, x: m.diagonal(x, -1, -1, 0), R(3, 2, 4)),
    case("diag_1d_neg_k", lambda m, x: m.diag(x, -2), R(3)),
    case("trace_offset", lambda m, x: m.trace(x, 1, 1, 2), R(2, 3, 3)),
    case("setitem_slice_scalar", lambda m, x: _set(m, x, (slice(None), 0), 7.0), R(3, 4)),
    case("setitem_slice_value", lambda m, x, v: _set(m, x, (Ellipsis, slice(1, 3)), v), R(3, 4), R(2)),
    case("setitem_value_extra_ones", lambda m, x, v: _set(m, x, 0, v), R(3, 4), R(1, 4)),
    case("index_add_nbatch", lambda m, g: _scatter(m, g), R(2, 3)),
]



def _scatter(m: Any, g: Any) -> Any:
    """``index_add`` with a batch axis of its own (nbatch=1), as backward passes call it."""
    if m is np:
        out = np.zeros((2, 4))
        np.add.at(out, (slice(None), np.array([0, 3, 0])), g)
        return out
    from tapegrad.numpy import primitives as tp

    return tp.scatter_add(g, tp.NormalizedIndex((np.array([0, 3, 0]),), 1), (4,), 1)


@pytest.mark.parametrize(("c", "variant"), _params(MORE_OPS, "values"))
def test_more_shapes_values(c: Case, variant: str, loops: Loops) -> None:
    _check_values(c, variant, trace_shared=True)  # (a plain array written through: NumPy's own)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _params(MORE_OPS, "vgrad"))
def test_more_shapes_vmap_of_grad(c: Case, variant: str, loops: Loops) -> None:
    _check_vmap_of_grad(c, variant)
    loops.assert_none()


@pytest.mark.parametrize(("c", "variant"), _params(MORE_OPS, "gradv"))
def test_more_shapes_grad_of_vmap(c: Case, variant: str, loops: Loops) -> None:
    _check_grad_of_vmap(c, variant)
    loops.assert_none()


# --- the indexing rules' edges ------------------------------------------------------------------------


def test_a_mask_selecting_a_different_count_per_example_is_an_error() -> None:
    x = np.array([[1.0, -1.0, 2.0], [1.0, -1.0, -3.0]])
    with pytest.raises(ValueError, match="different number of entries in each example"):
        tg.vmap(lambda r: r[r > 0])(x)
    # ... while writing through it is fine: the result has the example's shape
    np.testing.assert_array_equal(tg.vmap(lambda r: _set(tnp, r, r > 0, 0.0))(x), np.where(x > 0, 0.0, x))


def test_a_0d_boolean_index_per_example_loops(loops: Loops) -> None:
    # (a result with a new axis of length 1 or 0: only a loop can tell, and the lengths must agree)
    x = np.arange(6.0).reshape(3, 2)
    got = tg.vmap(lambda r, c: r[c])(x, np.array([True, True, True]))
    np.testing.assert_array_equal(got, x[:, None, :])
    assert [n for n, _ in loops.seen] == ["getitem"]


def test_indices_batched_on_two_nested_levels() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 5, 4))
    i = rng.integers(0, 5, size=(3, 2, 6))
    j = rng.integers(0, 5, size=(3, 6))
    want_both = np.stack([np.stack([x[a, b][i[a, b]] for b in range(2)]) for a in range(3)])
    np.testing.assert_array_equal(tg.vmap(tg.vmap(lambda r, k: r[k]))(x, i), want_both)
    # the index on the outer level only, the indexed array on both
    want_outer = np.stack([np.stack([x[a, b][j[a]] for b in range(2)]) for a in range(3)])
    np.testing.assert_array_equal(tg.vmap(lambda r, k: tg.vmap(lambda rr: rr[k])(r))(x, j), want_outer)
    # the index on the inner level, the array on the outer one only
    want_inner = np.stack([np.stack([x[a, 0][i[a, b]] for b in range(2)]) for a in range(3)])
    np.testing.assert_array_equal(tg.vmap(lambda r, k: tg.vmap(lambda kk: r[0][kk])(k))(x, i), want_inner)
    g = tg.grad(lambda x: tnp.sum(tnp.sin(tg.vmap(tg.vmap(lambda r, k: r[k]))(x, i))))(x)
    want_g = np.zeros_like(x)
    for a in range(3):
        for b in range(2):
            np.add.at(want_g[a, b], i[a, b], np.cos(x[a, b][i[a, b]]))
    np.testing.assert_allclose(g, want_g, rtol=1e-12)


def test_per_example_gradients_of_an_embedding_lookup() -> None:
    """``vmap(grad(loss), in_axes=(None, 0))``: the table is a parameter (not batched), the
    tokens differ per example: each example's gradient has the table's shape."""
    rng = np.random.default_rng(1)
    table = rng.standard_normal((7, 3))
    tokens = rng.integers(0, 7, size=(4, 5))
    loss = lambda t, tok: tnp.sum(tnp.tanh(t[tok]) ** 2)  # noqa: E731
    got = tg.vmap(tg.grad(loss), in_axes=(None, 0))(table, tokens)
    want = np.stack([tg.grad(loss)(table, tok) for tok in tokens])
    assert got.shape == (4, 7, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- every primitive has a rule ---------------------------------------------------------------------

# Primitives of tapegrad.numpy with no batching rule (mapped by a loop), each with why: none.
NO_RULE_ALLOWED: dict[str, str] = {}


def test_every_numpy_primitive_has_a_batching_rule() -> None:
    missing = sorted(p.name for p in NUMPY_PRIMITIVES if batching.BATCH_RULES.get(p) is None and p.name not in NO_RULE_ALLOWED)
    assert not missing, f"primitives of tapegrad.numpy without a batching rule: {missing}"
    assert NUMPY_PRIMITIVES <= set(REGISTRY)
    names = {p.name for p in NUMPY_PRIMITIVES}  # (the scan found them: the families' and the engine's)
    assert {"add", "getitem", "setitem", "index_add", "einsum", "cast", "sum_to", "broadcast_to"} <= names


def test_every_primitive_of_tapegrad_has_a_batching_rule() -> None:
    # in a fresh interpreter: this one's registry also holds the primitives tests make
    code = ("import tapegrad.numpy, tapegrad.scipy.special, tapegrad.torch\n"
            "from tapegrad.core.primitive import REGISTRY\n"
            "from tapegrad.batching import BATCH_RULES\n"
            "print(sorted(p.name for p in REGISTRY if BATCH_RULES.get(p) is None))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr
    # odeint's adaptive solve maps by a loop (each example solved to its own tolerance, as a
    # separate call would be; a joint solve would step the whole batch together); so does
    # tg.fixed_point's iteration (each example converges on its own)
    assert out.stdout.strip() == "['fixed_point', 'odeint']", \
        f"primitives without a batching rule: {out.stdout}"


def test_the_loop_counter_sees_a_primitive_with_no_rule(loops: Loops) -> None:
    f = tg.primitive(lambda x: np.cumsum(x[::-1]))
    tg.defvjp(f, lambda ans, x: lambda g: g)
    np.testing.assert_array_equal(tg.vmap(f)(np.eye(3)), np.cumsum(np.eye(3)[:, ::-1], axis=1))
    assert [n for n, _ in loops.seen] == ["<lambda>"]
    assert not loops.ours()  # (a user's primitive: the loop is its documented fallback)
