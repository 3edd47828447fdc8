"""The library on CuPy arrays: transforms, optimizers, the facade on ``device="cuda"``,
host transfers, mixing devices. Runs on real CuPy with a CUDA device, else on the
CPU model of CuPy (the ``cp`` fixture, tests/cupy_model)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from cupy_model import TRANSFERS, is_model

import tapegrad as tg
import tapegrad.numpy as tnp


@contextlib.contextmanager
def no_transfers(cp: Any) -> Iterator[None]:
    """Within: a device-to-host transfer raises (``cupyx.allow_synchronize(False)``, which the
    model implements and real CuPy checks with its sync detector)."""
    import cupyx

    with cupyx.allow_synchronize(False):
        yield


def _loss(w: Any, x: Any) -> Any:
    h = tnp.tanh(x @ w)
    return tnp.sum(h**2) + tnp.mean(tnp.exp(-h))


def _host(cp: Any, x: Any) -> np.ndarray:
    assert type(x) is cp.ndarray, type(x)
    return cp.asnumpy(x)


# --- the model's own rules -------------------------------------------------------------------------

def test_the_model_refuses_what_cupy_refuses(cp: Any) -> None:
    x = cp.asarray([1.0, 2.0])
    assert type(x).__module__ == "cupy"
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        x + np.ones(2)
    assert type(np.sum(x)) is cp.ndarray and np.sum(x).shape == ()  # reductions: 0-d device arrays
    assert type(np.sin(x) * np.float64(2.0) + 1) is cp.ndarray  # Python and NumPy scalars accepted
    with pytest.raises(TypeError):
        np.add.at(x, [0], 1.0)  # (a list operand: refused, as every non-array operand)
    np.add.at(x, cp.asarray([0]), 1.0)  # CuPy's ufunc.at (add, subtract, maximum, minimum, bitwise) ...
    assert cp.asnumpy(x).tolist() == [2.0, 2.0]
    with pytest.raises(NotImplementedError):
        np.multiply.at(x, cp.asarray([0]), 2.0)  # ... and no other


def test_the_model_counts_transfers(cp: Any) -> None:
    if not is_model(cp):
        pytest.skip("the counter is the model's")
    x = cp.asarray([1.0, 2.0])
    TRANSFERS.reset()
    s = x.sum()
    assert TRANSFERS.d2h == 0
    float(s)
    cp.asnumpy(x)
    assert TRANSFERS.d2h == 2


# --- transforms ------------------------------------------------------------------------------------

def test_grad_jit_vmap_match_the_cpu(cp: Any) -> None:
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    wd, xd = cp.asarray(w), cp.asarray(x)
    g = tg.grad(_loss)
    np.testing.assert_allclose(_host(cp, g(wd, xd)), g(w, x), rtol=1e-10)
    np.testing.assert_allclose(_host(cp, tg.jit(g)(wd, xd)), g(w, x), rtol=1e-10)
    ws = np.stack([w, 2 * w])
    np.testing.assert_allclose(_host(cp, tg.vmap(g, in_axes=(0, None))(cp.asarray(ws), xd)),
                               tg.vmap(g, in_axes=(0, None))(ws, x), rtol=1e-10)


def test_hessian_hvp_jacobians(cp: Any) -> None:
    x = np.array([0.3, -1.2, 0.7])
    f = lambda x: tnp.sum(tnp.sin(x) * x**2)  # noqa: E731
    xd = cp.asarray(x)
    np.testing.assert_allclose(_host(cp, tg.hessian(f)(xd)), tg.hessian(f)(x), rtol=1e-10)
    np.testing.assert_allclose(_host(cp, tg.hvp(f, (xd,), (xd,))[1]), tg.hvp(f, (x,), (x,))[1], rtol=1e-10)
    np.testing.assert_allclose(_host(cp, tg.jacfwd(tnp.sin)(xd)), tg.jacfwd(tnp.sin)(x), rtol=1e-12)
    np.testing.assert_allclose(_host(cp, tg.jacrev(tnp.sin)(xd)), tg.jacrev(tnp.sin)(x), rtol=1e-12)


def test_custom_rules_and_checkpoint(cp: Any) -> None:
    @tg.custom_vjp
    def f(x: Any) -> Any:
        return tnp.sin(x)

    f.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (g * tnp.cos(x),))

    @tg.custom_jvp
    def h(x: Any) -> Any:
        return tnp.exp(x)

    h.defjvp(lambda primals, tangents: (tnp.exp(primals[0]), tnp.exp(primals[0]) * tangents[0]))
    x = np.array([0.2, 0.5])
    xd = cp.asarray(x)
    for fn in (f, h, tg.checkpoint(lambda x: tnp.tanh(x) * x)):
        s = lambda x, fn=fn: tnp.sum(fn(x))  # noqa: E731
        np.testing.assert_allclose(_host(cp, tg.grad(s)(xd)), tg.grad(s)(x), rtol=1e-12)


@pytest.mark.parametrize("make", ["sgd", "adam", "rmsprop"])
def test_optimizers_under_jit(cp: Any, make: str) -> None:
    opt = getattr(tg.optimizers, make)(0.05)
    rng = np.random.default_rng(1)
    w0, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))

    def run(w: Any, x: Any) -> Any:
        state = opt.init(w)

        @tg.jit
        def step(w: Any, state: Any, x: Any) -> Any:
            loss, g = tg.value_and_grad(_loss)(w, x)
            w, state = opt.update(g, state, w)
            return w, state, loss

        for _ in range(3):
            w, state, loss = step(w, state, x)
        return w, loss

    w_cpu, loss_cpu = run(w0, x)
    w_dev, loss_dev = run(cp.asarray(w0), cp.asarray(x))
    np.testing.assert_allclose(_host(cp, w_dev), w_cpu, rtol=1e-10)
    np.testing.assert_allclose(float(loss_dev), loss_cpu, rtol=1e-10)


def test_a_training_step_transfers_only_the_loss(cp: Any) -> None:
    """functional and jit: the step runs with transfers forbidden; reading the loss is one."""
    opt = tg.optimizers.adam(0.01)
    rng = np.random.default_rng(2)
    w, x = cp.asarray(rng.standard_normal((4, 3))), cp.asarray(rng.standard_normal((5, 4)))
    state = opt.init(w)

    def step(w: Any, state: Any) -> Any:
        loss, g = tg.value_and_grad(_loss)(w, x)
        w, state = opt.update(g, state, w)
        return w, state, loss

    for fn in (step, tg.jit(step)):
        fn(w, state)  # (jit: the first call traces)
        with no_transfers(cp):
            w, state, loss = fn(w, state)
        if is_model(cp):
            TRANSFERS.reset()
            float(loss)
            assert TRANSFERS.d2h == 1


# --- mixing devices, no CuPy ---------------------------------------------------------------------

def test_mixing_devices_names_both(cp: Any) -> None:
    from tapegrad.backend import array_module

    with pytest.raises(ValueError, match="cpu.*cuda|cuda.*cpu"):
        array_module(np.ones(2), cp.ones(2))
    with pytest.raises(ValueError, match="on one device, but found arrays on cuda and cpu"):
        tnp.add(cp.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="on one device, but found arrays on cuda and cpu"):
        tg.grad(lambda x: tnp.sum(x * np.ones(2)))(cp.ones(2))


def test_device_cuda_without_cupy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import tapegrad.torch as torch

    for k in [k for k in sys.modules if k.split(".")[0] in ("cupy", "cupyx")]:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy: ModuleNotFoundError
    with pytest.raises(ImportError, match=r'pip install "tapegrad\[cuda\]"'):
        torch.ones(2, device="cuda")


# --- the facade ------------------------------------------------------------------------------------

def test_facade_mixing_devices_is_pytorchs_error(cp: Any) -> None:
    import tapegrad.torch as torch

    msg = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    with pytest.raises(RuntimeError, match=msg):
        torch.ones(2, device="cuda") + torch.ones(2)
    with pytest.raises(RuntimeError, match=msg):
        torch.ones(2) * torch.ones(2).cuda()


def _train(torch: Any, device: str, steps: int = 3) -> tuple[list[float], Any]:
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 6, 3), nn.LayerNorm(3)).to(device)
    rnn = nn.GRU(3, 5, batch_first=True).to(device)
    params = list(model.parameters()) + list(rnn.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    x = torch.randn(8, 2, 6).to(device)
    y = torch.randn(8, 4, 5).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        h = model(x)
        out, _ = rnn(h[:, None, :].expand(8, 4, 3))
        loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, params


def test_facade_training_on_cuda_matches_cpu(cp: Any) -> None:
    import tapegrad.torch as torch

    cpu_losses, cpu_params = _train(torch, "cpu")
    dev_losses, dev_params = _train(torch, "cuda")
    assert all(p.device.type == "cuda" and p.grad.device.type == "cuda" for p in dev_params)
    np.testing.assert_allclose([float(v) for v in dev_losses], [float(v) for v in cpu_losses], rtol=1e-5)
    for p, q in zip(dev_params, cpu_params):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_facade_training_step_transfers_nothing(cp: Any) -> None:
    import tapegrad.torch as torch

    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 4).cuda(), torch.randn(16, 2).to("cuda")
    for _ in range(2):
        with no_transfers(cp):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
        if is_model(cp):
            TRANSFERS.reset()
            loss.item()
            assert TRANSFERS.d2h == 1


@pytest.mark.parametrize("optim", ["SGD", "Adam"])
def test_facade_classification_on_cuda_matches_cpu_and_transfers_only_the_loss(cp: Any, optim: str) -> None:
    """Linear + CrossEntropyLoss + SGD/Adam: the same losses and weights as on the CPU; each
    step runs with transfers forbidden, and ``loss.item()`` is its one transfer."""
    import tapegrad.torch as torch

    nn = torch.nn

    def train(device: str) -> tuple[list[float], list[Any]]:
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 4)).to(device)
        opt = getattr(torch.optim, optim)(model.parameters(), lr=0.1)
        x, y = torch.randn(12, 5).to(device), torch.randint(0, 4, (12,)).to(device)
        lossf, losses = nn.CrossEntropyLoss(), []
        for _ in range(3):
            with no_transfers(cp) if device == "cuda" else contextlib.nullcontext():
                opt.zero_grad()
                loss = lossf(model(x), y)
                loss.backward()
                opt.step()
            TRANSFERS.reset()
            losses.append(loss.item())
            if device == "cuda" and is_model(cp):
                assert TRANSFERS.d2h == 1
        return losses, list(model.parameters())

    cpu_losses, cpu_params = train("cpu")
    dev_losses, dev_params = train("cuda")
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-5)
    for p, q in zip(dev_params, cpu_params):
        assert p.device.type == "cuda"
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_facade_device_moves(cp: Any) -> None:
    import tapegrad.torch as torch

    w = torch.tensor([0.5, -1.0], requires_grad=True, device="cuda")
    x = torch.tensor([2.0, 3.0]).cuda()
    (w * x).sum().backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_allclose(w.grad.cpu().numpy(), [2.0, 3.0])
    assert w.to("cuda") is w
    assert x.to("cpu").device.type == "cpu"


def test_dlpack_round_trip(cp: Any) -> None:
    import tapegrad.torch as torch

    a = cp.asarray([1.0, 2.0, 3.0])
    t = torch.from_dlpack(a)
    assert t.device.type == "cuda"
    b = cp.from_dlpack(t)
    b[0] = 7.0
    assert float(a[0]) == 7.0  # shared memory, no copy


# --- the distributed path's host staging (no MPI: the packing and staging functions) ---------------

def test_distributed_staging_of_device_leaves(cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Device leaves are packed into one device buffer per dtype, copied to the host for an MPI
    that is not CUDA-aware (one transfer per buffer), copied back and unpacked onto the device."""
    from tapegrad import distributed as dist

    monkeypatch.setenv("TAPEGRAD_MPI_CUDA_AWARE", "0")
    monkeypatch.setattr(dist._S, "cuda_aware", None)
    leaves = [cp.asarray([[1.0, 2.0], [3.0, 4.0]]), cp.asarray([5.0]), cp.asarray([1, 2], dtype=np.int32)]
    packed = dist._Packed(leaves, "all_reduce")
    assert [k for k, _ in packed.groups] == [(True, "<f8"), (True, "<i4")]
    out: list[Any] = [None] * len(leaves)
    for key, idx in packed.groups:
        buf = packed.pack(key, idx)
        assert type(buf) is cp.ndarray
        TRANSFERS.reset()
        sent = dist._to_mpi(buf, gpu=True)  # (what MPI would read: a host copy)
        assert type(sent) is np.ndarray
        if is_model(cp):
            assert TRANSFERS.d2h == 1
        dist._from_mpi(buf, sent * 2)  # (MPI's sum over two equal ranks; the mean of the floats)
        packed.unpack(key, idx, buf, out, divide=2 if key[1] == "<f8" else 1)
    for got, want in zip(out, leaves):
        assert type(got) is cp.ndarray and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want) * (1 if want.dtype.kind == "f" else 2))
    monkeypatch.setattr(dist._S, "cuda_aware", True)
    buf = packed.pack(*packed.groups[0])
    assert dist._to_mpi(buf, gpu=True) is buf  # CUDA-aware MPI reads device memory itself


# --- tapegrad.scipy.linalg and .signal: cupyx.scipy where CuPy has the function ------------------

def test_scipy_linalg_and_signal_on_device_use_cupyx(cp: Any) -> None:
    """solve_triangular and convolve run through cupyx.scipy on device arrays (values and
    gradients equal the CPU's); functions cupyx.scipy lacks raise an error naming them."""
    import tapegrad.scipy.linalg as tsl
    import tapegrad.scipy.signal as tss

    rng = np.random.default_rng(4)
    a = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    k = rng.standard_normal(4)
    progs = {
        "solve_triangular": (lambda a, b: tnp.sum(tsl.solve_triangular(a, b) ** 2), (a, b)),
        "solve_triangular_lower_trans": (
            lambda a, b: tnp.sum(tsl.solve_triangular(a.T, b, lower=True, trans=1) ** 2), (a, b)),
        "convolve": (lambda x, k: tnp.sum(tss.convolve(x, k, mode="same") ** 2), (b[:, 0], k)),
    }
    for name, (f, args) in progs.items():
        dargs = [cp.asarray(v) for v in args]
        want = tg.grad(f, argnums=(0, 1))(*args)
        got = tg.grad(f, argnums=(0, 1))(*dargs)
        for g, h in zip(got, want):
            np.testing.assert_allclose(_host(cp, g), h, rtol=1e-10, err_msg=name)
        np.testing.assert_allclose(float(f(*dargs)), f(*args), rtol=1e-12, err_msg=name)
    with pytest.raises(TypeError, match="cupyx.scipy.linalg.sqrtm"):
        tsl.sqrtm(cp.asarray(a @ a.T))
    with pytest.raises(TypeError, match="cupyx.scipy.linalg.solve_banded"):
        tsl.solve_banded((1, 1), cp.asarray(rng.standard_normal((3, 3))), cp.asarray(b))


@pytest.mark.parametrize("name", ["jn", "iv", "ive"])
def test_bessel_functions_cupy_lacks_raise_naming_them(cp: Any, name: str) -> None:
    # cupyx.scipy.special has no jv/jn, iv or ive (CuPy 13): a clear error, not a host round trip
    import tapegrad.scipy.special as tss

    if getattr(__import__("cupyx.scipy.special").scipy.special, name, None) is not None:
        pytest.skip(f"this CuPy has cupyx.scipy.special.{name}")
    with pytest.raises(TypeError, match=rf"cupyx\.scipy\.special\.{name}\b.*cupy\.asnumpy"):
        getattr(tss, name)(1.5, cp.asarray([0.5, 2.0]))
