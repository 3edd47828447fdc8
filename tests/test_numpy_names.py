"""Issue 14's NumPy names: what the op table does not check (index tricks with
slices and directives, integer inputs, non-finite values, errors)."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

X = np.arange(1.0, 4.0)


def test_r_and_c_on_plain_values_are_numpy_s() -> None:
    np.testing.assert_array_equal(tnp.r_[0:3, [5, 6], 7], np.r_[0:3, [5, 6], 7])
    np.testing.assert_array_equal(tnp.c_[np.ones(2), np.zeros(2)], np.c_[np.ones(2), np.zeros(2)])
    assert tnp.r_[0:3].dtype == np.r_[0:3].dtype


def test_r_with_traced_values_slices_and_scalars() -> None:
    def f(x: object) -> object:
        return tnp.r_[0:3, x, 5, -1:1:5j]

    np.testing.assert_allclose(tg.value(tg.jit(f)(X)), np.r_[0:3, X, 5, -1:1:5j])
    np.testing.assert_allclose(tg.grad(lambda x: tnp.sum(f(x) ** 2))(X), 2 * X)


def test_r_and_c_directives_match_numpy() -> None:
    y = np.arange(6.0).reshape(3, 2)
    for spec in ("0,2", "1,2,0", "-1,3,1", "0,2,-1"):
        want = np.r_[spec, X, X]
        got = tg.vmap(lambda x, s=spec: tnp.r_[s, x, x])(X[None])[0]
        np.testing.assert_array_equal(tg.value(got), want)
    got = tg.grad(lambda x: tnp.sum(tnp.c_[x, y, 1:4]))(X)
    np.testing.assert_array_equal(got, np.ones(3))
    np.testing.assert_array_equal(tg.value(tnp.c_[tnp.array(X), y]), np.c_[X, y])


def test_r_integer_array_with_traced_float() -> None:
    out = tg.grad(lambda x: tnp.sum(tnp.r_[np.array([1, 2]), x]))(X)
    np.testing.assert_array_equal(out, np.ones(3))


def test_r_matrix_directive_on_traced_values_is_refused() -> None:
    with pytest.raises(NotImplementedError):
        tg.grad(lambda x: tnp.sum(tnp.r_["r", x, x]))(X)


def test_integer_inputs_take_numpy_s_path() -> None:
    a = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(tnp.diff(a, 2), np.diff(a, 2))
    np.testing.assert_array_equal(tnp.gradient(a)[0], np.gradient(a)[0])
    np.testing.assert_array_equal(tnp.pad(a, 2, mode="median"), np.pad(a, 2, mode="median"))
    np.testing.assert_array_equal(tnp.pad(a, 2, mode="linear_ramp", end_values=9), np.pad(a, 2, mode="linear_ramp", end_values=9))
    np.testing.assert_array_equal(tnp.partition(a, 1), np.partition(a, 1))
    np.testing.assert_array_equal(tnp.append(a, [1, 2]), np.append(a, [1, 2]))
    np.testing.assert_array_equal(tnp.rot90(a, 3), np.rot90(a, 3))
    assert tnp.fabs(np.array([-1, 2])).dtype == np.float64


def test_gradient_of_traced_integer_spacing_and_float32() -> None:
    f = np.linspace(0.0, 1.0, 6, dtype=np.float32) ** 2
    got = tg.value(tnp.gradient(tnp.array(f), 0.5))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.gradient(f, 0.5), rtol=1e-6)


def test_nan_to_num_non_finite() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 2.0])
    v, g = tg.value_and_grad(lambda x: tnp.sum(tnp.nan_to_num(x, nan=1.0, neginf=-3.0) * 0.5))(x)
    assert v == np.sum(np.nan_to_num(x, nan=1.0, neginf=-3.0) * 0.5)
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.5])
    z = np.array([complex(np.nan, np.inf), 1 + 2j])
    np.testing.assert_array_equal(tg.value(tnp.nan_to_num(tnp.array(z))), np.nan_to_num(z))


def test_real_if_close() -> None:
    z = X + 1e-18j
    got = tnp.real_if_close(tnp.array(z))
    assert tg.value(got).dtype == np.float64
    np.testing.assert_array_equal(tg.value(got), np.real_if_close(z))
    far = X + 1e-3j
    assert tg.value(tnp.real_if_close(tnp.array(far))).dtype == np.complex128


def test_fabs_refuses_complex() -> None:
    with pytest.raises(TypeError):
        tnp.fabs(tnp.array(X + 1j))


@pytest.mark.parametrize(("fn", "arg"), [
    (lambda x: tnp.vsplit(x, 3), X),
    (lambda x: tnp.dsplit(x, 3), np.ones((3, 3))),
    (lambda x: tnp.hsplit(x, 1), np.float64(1.0)),
    (lambda x: tnp.fliplr(x), X),
    (lambda x: tnp.flipud(x), np.float64(1.0)),
    (lambda x: tnp.rot90(x, axes=(0, 0)), np.ones((2, 2))),
    (lambda x: tnp.split(x, 2), X),
    (lambda x: tnp.diff(x, -1), X),
    (lambda x: tnp.gradient(x, edge_order=2), X[:2]),
    (lambda x: tnp.pad(x, -1, mode="edge"), X),
    (lambda x: tnp.pad(x, 1, mode="edge", end_values=2), X),
    (lambda x: tnp.pad(x, 1, mode="maximum", stat_length=0), X),
    (lambda x: tnp.einsum(x, [0, 60]), np.ones((3, 3))),
])
def test_errors_as_numpy(fn: object, arg: np.ndarray) -> None:
    with pytest.raises(Exception) as want:
        fn(np.asarray(arg))  # type: ignore[operator]
    with pytest.raises(type(want.value)):
        fn(tnp.array(arg) * 1.0 if np.ndim(arg) else tnp.array(arg))  # type: ignore[operator]


def test_every_pad_mode_has_a_vjp_even_called_directly() -> None:
    from tapegrad.numpy import wrap

    for mode in ("edge", "reflect", "symmetric", "wrap"):
        g = tg.grad(lambda x, mode=mode: tnp.sum(wrap.pad(x, (2, 4), mode=mode) ** 2))(X)
        eps, fd = 1e-6, []
        for i in range(3):
            e = np.zeros(3)
            e[i] = eps
            fd.append((np.sum(np.pad(X + e, (2, 4), mode=mode) ** 2) - np.sum(np.pad(X - e, (2, 4), mode=mode) ** 2)) / (2 * eps))
        np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_pad_example_from_the_issue() -> None:
    g = tg.grad(lambda x: tnp.sum(tnp.pad(x, 1, mode="edge")))(np.ones((2, 2)))
    np.testing.assert_array_equal(g, np.full((2, 2), 4.0))  # each entry: itself, two edges, one corner


def test_lists_holding_traced_values() -> None:
    for fn in (lambda x: tnp.mean([x, x + 2]), lambda x: tnp.linalg.norm([x, x + 2]),
               lambda x: tnp.std([x, x * 2]), lambda x: tnp.average([x, x + 2], weights=[1.0, 3.0], axis=0).sum(),
               lambda x: tnp.trace([x, x, x]), lambda x: tnp.sort([x[1], x[0]])[0],
               lambda x: tnp.tile([x[0], 1.0], 2).sum(), lambda x: tnp.diff([x[0], x[2], 5.0]).sum()):
        want = fn(X)
        v, g = tg.value_and_grad(fn)(X)
        np.testing.assert_allclose(v, want)
        assert np.all(np.isfinite(g))


def test_einsum_interleaved_matches_numpy() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    for ops in ((a, [0, 1], b, [1, 2]), (a, [0, 1], b, [1, 2], [2, 0]), (a, [Ellipsis, 1], [Ellipsis]), (a, [0, 1], [])):
        want = np.einsum(*ops)
        got = tnp.einsum(*[tnp.array(o) if isinstance(o, np.ndarray) else o for o in ops])
        np.testing.assert_allclose(tg.value(got), want)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_out_of_range_modes_differentiate_as_numpy_indexes(mode):
    # the gradient goes to the positions NumPy's mode reads, under every transform
    i = np.array([0, 5, -1, -4])
    wts = np.array([1.0, 2.0, 3.0, 4.0])
    x = np.arange(3.0)

    def f(x):
        return tnp.sum(tnp.take(x, i, mode=mode) * wts)

    want = np.zeros(3)
    np.add.at(want, np.take(np.arange(3), i, mode=mode), wts)
    np.testing.assert_array_equal(tnp.take(x, i, mode=mode), np.take(x, i, mode=mode))
    np.testing.assert_allclose(tg.grad(f)(x), want)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), want)
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(np.stack([x, x])), np.stack([want, want]))


def test_take_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="mode must be"):
        tg.grad(lambda x: tnp.sum(tnp.take(x, [0], mode="nearest")))(np.arange(3.0))
