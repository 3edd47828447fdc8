"""Facade breadth: missing names, ``out=``, bitwise ops, ``unique``, ``linalg``,
in-place math, ``accelerator``, forward AD, saved-tensor hooks and ``_saved_*``.

Programs run under real PyTorch (when importable) and ``tapegrad.torch``, and
their printed outputs must agree; the torch-free tests check behaviour alone.
"""

from __future__ import annotations

import contextlib
import io
import textwrap

import numpy as np
import pytest

import tapegrad.torch as tt

try:
    import torch as real_torch
except ImportError:  # pragma: no cover
    real_torch = None

needs_torch = pytest.mark.skipif(real_torch is None, reason="PyTorch not installed")


def _run(src: str, module: object) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(src), {"torch": module, "np": np})  # noqa: S102
    return buf.getvalue()


def _same(src: str) -> str:
    """Run ``src`` under both; their printed outputs must agree."""
    mine = _run(src, tt)
    if real_torch is not None:
        assert mine == _run(src, real_torch)
    return mine


# --- 1. missing names -------------------------------------------------------------------------------


def test_missing_torch_name_says_not_provided() -> None:
    assert not hasattr(tt, "no_such_function")
    with pytest.raises(AttributeError, match=r"tapegrad.torch does not provide torch.no_such_function"):
        tt.no_such_function  # noqa: B018


def test_missing_tensor_method_says_not_provided() -> None:
    t = tt.tensor([1.0])
    assert not hasattr(t, "no_such_method")
    with pytest.raises(AttributeError, match=r"does not provide Tensor.no_such_method"):
        t.no_such_method()
    with pytest.raises(AttributeError, match=r"^'Tensor' object has no attribute '_private'$"):
        t._private  # noqa: B018


# --- 2. breadth ---------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_out_argument() -> None:
    out = _same("""
        a = torch.tensor([3., 1., 3., 2.], requires_grad=True)
        r = torch.empty(4)
        try:
            torch.add(a, a, out=r)
        except RuntimeError as e:
            print(e)
        r2 = torch.add(a.detach(), 1, out=r)
        print(r, r2 is r, r._version > 0)
        m = torch.zeros(2, 2)
        torch.matmul(torch.ones(2, 3), torch.ones(3, 2), out=m)
        torch.mul(m, 2, out=m)
        print(m)
        torch.exp(torch.zeros(2), out=m)
        print(m)
        try:
            torch.add(a.detach(), 1, out=torch.empty(4, dtype=torch.long))
        except RuntimeError as e:
            print(e)
        with torch.no_grad():
            torch.pow(a, 2, out=r)
        print(r)
    """)
    assert "functions with out=... arguments don't support automatic differentiation" in out


def test_bitwise_and_comparison_functions() -> None:
    _same("""
        i = torch.tensor([1, 2, 3])
        b = torch.tensor([True, False, True])
        print(torch.bitwise_and(i, 6), torch.bitwise_or(i, 1), torch.bitwise_xor(i, i), torch.bitwise_not(i))
        print(i & 2, i | 4, i ^ 1, ~i, b & ~b, b | False, b ^ True, ~b, torch.bitwise_not(b))
        print(torch.logical_xor(b, torch.tensor([True, True, False])))
        for f in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
            print(f(i, 2), f(i, torch.tensor([3, 2, 1])))
    """)


def test_unique() -> None:
    _same("""
        a = torch.tensor([3., 1., 3., 2.], requires_grad=True)
        print(torch.unique(a))
        x = torch.tensor([[3, 1, 3], [2, 1, 1]])
        print(torch.unique(x), torch.unique(x, sorted=False))
        print(torch.unique(x, return_inverse=True))
        print(torch.unique(x, return_counts=True))
        print(torch.unique(x, return_inverse=True, return_counts=True))
        print(x.unique(return_counts=True))
        print(torch.unique(torch.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True))
    """)


def test_inplace_math_and_shape() -> None:
    _same("""
        a = torch.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True)
        for name in ["sin_", "cos_", "tan_", "exp_", "log_", "sqrt_", "tanh_", "sigmoid_", "log1p_", "expm1_",
                     "reciprocal_", "rsqrt_", "floor_", "ceil_", "round_", "trunc_", "frac_", "sign_", "abs_",
                     "neg_", "square_", "asinh_", "atan_", "erf_", "log2_", "exp2_"]:
            y = a * 1
            r = getattr(y, name)()
            print(name, r is y, y, y._version)
        b = a * 1
        b.unsqueeze_(0)
        print(b, b.shape)
        b.squeeze_()
        print(b)
        c = (a * 1).view(2, 2)
        c.t_()
        print(c)
        d = (a * 1).view(1, 4)
        d.squeeze_(0)
        print(d)
        d.unsqueeze_(1).squeeze_((1,))
        print(d)
        (c * torch.tensor([[1., 2.], [3., 4.]])).sum().backward()
        print(a.grad)
        try:
            a.unsqueeze_(0)
        except RuntimeError as e:
            print(e)
        z = torch.zeros(3)
        z.sin_(); z.unsqueeze_(0)
        print(z, z._version)
    """)


def test_linalg_names() -> None:
    out = _same("""
        m = torch.tensor([[2., 1.], [1., 3.]], requires_grad=True)
        print(torch.linalg.inv(m), torch.linalg.det(m), torch.linalg.cholesky(m))
        print(torch.linalg.solve(m, torch.ones(2)))
        print(torch.linalg.norm(m), torch.linalg.matrix_norm(m), torch.linalg.vector_norm(m))
        print(torch.linalg.eigh(m).eigenvalues, torch.linalg.svd(m).S, torch.linalg.qr(m).R)
        print(torch.linalg.slogdet(m).logabsdet, torch.svd(m).V.grad_fn.name(), torch.svd(m).U.grad_fn.name())
        print(torch.linalg.matrix_norm(m, ord='nuc'), torch.linalg.vector_norm(m, ord=1))
        print(torch.linalg.vector_norm(m, ord=float('inf')), torch.linalg.norm(torch.tensor([3., 4.])))
        print(torch.linalg.svd(torch.eye(2)))
        print(torch.linalg.eigh(torch.eye(2)))
        print(torch.svd(torch.eye(2)))
        print(torch.linalg.slogdet(torch.eye(2)))
    """)
    assert "LinalgInvExBackward0" in out
    m = tt.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=tt.float64, requires_grad=True)
    tt.linalg.det(m).backward()
    np.testing.assert_allclose(m.grad.numpy(), [[3.0, -1.0], [-1.0, 2.0]])
    u, s, v = tt.svd(m)
    np.testing.assert_allclose((u @ tt.diag(s) @ v.t()).detach().numpy(), m.detach().numpy())


def test_accelerator_and_default_device() -> None:
    _same("""
        print(torch.accelerator.is_available() == torch.cuda.is_available())
        torch.set_default_device("cpu")
        print(torch.zeros(2).device, torch.get_default_device())
        torch.set_default_device(None)
    """)
    if not tt.cuda.is_available():
        assert tt.accelerator.current_accelerator() is None
        assert not tt.accelerator.is_available()


def test_out_resize_warns() -> None:
    r = tt.zeros(2, 2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        tt.exp(tt.zeros(3), out=r)
    assert r.shape == (3,)


# --- 3. forward AD --------------------------------------------------------------------------------

_FORWARD_AD = """
    fwAD = torch.autograd.forward_ad
    primal = torch.tensor([[1., 2.], [3., 4.]])
    tangent = torch.tensor([[0.5, 1.], [-1., 2.]])

    def fn(x, y):
        return x ** 2 + y ** 2

    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        print(fwAD.unpack_dual(dual_input).tangent is tangent)
        dual_input_alt = fwAD.make_dual(primal, tangent.T)
        print(fwAD.unpack_dual(dual_input_alt).tangent is tangent)
        plain_tensor = torch.tensor([[1., 1.], [2., 2.]])
        dual_output = fn(dual_input, plain_tensor)
        print(fwAD.unpack_dual(dual_output).tangent)
        print(fwAD.unpack_dual(dual_output).primal)
        print(fwAD.unpack_dual(plain_tensor).tangent)
        y = (dual_input.sin() * dual_input_alt).sum(0)
        print(fwAD.unpack_dual(y).tangent)
        print(fwAD.unpack_dual(y).tangent)
        print(type(fwAD.unpack_dual(y)).__name__, fwAD.unpack_dual(y)._fields)
    print(fwAD.unpack_dual(dual_output).tangent)

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            result = torch.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result * 2
            ctx.result = None
            return gO

        @staticmethod
        def backward(ctx, g):
            return g

    x = torch.tensor([0., 1.])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, torch.tensor([1., 0.5]))
        out = Fn.apply(d)
        print(fwAD.unpack_dual(out).tangent)
        print(fwAD.unpack_dual(out * 3).tangent)
    try:
        fwAD.make_dual(x, x)
    except RuntimeError as e:
        print("error outside a level")
"""


def test_forward_ad_as_pytorch() -> None:
    out = _same(_FORWARD_AD)
    assert "error outside a level" in out


def test_forward_ad_matches_tg_jvp() -> None:
    import tapegrad as tg
    import tapegrad.numpy as tnp

    fwad = tt.autograd.forward_ad
    rng = np.random.default_rng(0)
    a, v = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    _, want = tg.jvp(lambda m: tnp.tanh(m @ m).sum(axis=1), (a,), (v,))
    with fwad.dual_level():
        d = fwad.make_dual(tt.tensor(a), tt.tensor(v))
        got = fwad.unpack_dual(tt.tanh(d @ d).sum(1)).tangent
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    assert fwad.unpack_dual(got).tangent is None


def test_forward_ad_errors() -> None:
    fwad = tt.autograd.forward_ad
    with fwad.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwad.make_dual(tt.zeros(2), tt.zeros(3))
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwad.enter_dual_level()


# --- 4. saved tensors: grad_fn._saved_*, saved_tensors_hooks -----------------------------------------

_SAVED = """
    a = torch.tensor([1., 2., 3.], requires_grad=True)
    b = torch.ones(3, requires_grad=True) * 2
    y = a * b
    print(y.grad_fn._saved_self is a, y.grad_fn._saved_other.equal(b), y.grad_fn._saved_other)
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    p = x.pow(2)
    print(x.equal(p.grad_fn._saved_self), x is p.grad_fn._saved_self, p.grad_fn._saved_exponent)
    e = x.exp()
    print(e.equal(e.grad_fn._saved_result), e is e.grad_fn._saved_result, e.grad_fn._saved_result)
    print(x.sin().grad_fn._saved_self is x, (x * 3).sin().grad_fn._saved_self)
    m = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    mm = (m * 1).mm(m)
    print(mm.grad_fn._saved_mat2 is m, mm.grad_fn._saved_self)
    e.sum().backward()
    try:
        e.grad_fn._saved_result
    except RuntimeError as err:
        print(str(err)[:60])

    def pack_hook(x):
        print("Packing", x)
        return x

    def unpack_hook(x):
        print("Unpacking", x)
        return x

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    y.sum().backward()
    print(a.grad)
    x = torch.tensor([1., 2.], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = x.pow(2)
        w = y.exp()
    w.sum().backward()
    with torch.autograd.graph.save_on_cpu():
        q = (x * x).sum()
    q.backward()
    print(x.grad)
"""


def test_saved_tensors_as_pytorch() -> None:
    out = _same(_SAVED)
    assert out.count("Packing") == 4 and out.count("Unpacking") == 4


def test_saved_tensors_hooks_pack_at_record_unpack_at_backward() -> None:
    log: list[str] = []
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with tt.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or ("box", t),
                                               lambda p: log.append("unpack") or p[1]):
        y = x.sin()
        assert log == ["pack"] or log == []  # (packed once the op's node is named: at the latest on exit)
    assert log == ["pack"]
    y.sum().backward()
    assert log == ["pack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), np.cos([1.0, 2.0]), rtol=1e-6)
    assert isinstance(tt.autograd.graph.Node, type)


def test_missing_saved_attribute() -> None:
    y = tt.tensor([1.0], requires_grad=True).sin()
    with pytest.raises(AttributeError):
        y.grad_fn._saved_nothing  # noqa: B018
    with pytest.raises(AttributeError):
        y.grad_fn.no_such  # noqa: B018
