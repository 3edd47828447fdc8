"""The CuPy backend: the same results on the GPU as on the CPU.

Every test here is marked ``gpu``; the ``cp`` fixture (tests/conftest.py) runs it
on real CuPy with a CUDA device, else on the CPU model of CuPy (tests/cupy_model).
"""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

pytestmark = pytest.mark.gpu


def _loss(w, x):  # noqa: ANN001, ANN202
    h = tnp.tanh(x @ w)
    return tnp.sum(h**2) + tnp.mean(tnp.exp(-h))


def test_grad_matches_cpu(cp) -> None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    g_cpu = tg.grad(_loss)(w, x)
    g_gpu = tg.grad(_loss)(cp.asarray(w), cp.asarray(x))
    assert type(g_gpu).__module__.startswith("cupy")
    np.testing.assert_allclose(cp.asnumpy(g_gpu), g_cpu, rtol=1e-10)


def test_every_transform_on_gpu(cp) -> None:  # noqa: ANN001
    rng = np.random.default_rng(1)
    x = rng.standard_normal(3)
    f = lambda x: tnp.sum(tnp.sin(x) * x**2)  # noqa: E731
    xg = cp.asarray(x)
    np.testing.assert_allclose(cp.asnumpy(tg.hessian(f)(xg)), tg.hessian(f)(x), rtol=1e-10)
    np.testing.assert_allclose(cp.asnumpy(tg.jacfwd(tnp.sin)(xg)), tg.jacfwd(tnp.sin)(x), rtol=1e-12)
    np.testing.assert_allclose(cp.asnumpy(tg.jvp(f, (xg,), (xg,))[1]), tg.jvp(f, (x,), (x,))[1], rtol=1e-12)
    np.testing.assert_allclose(cp.asnumpy(tg.grad(tg.grad(lambda s: tnp.tanh(s)))(cp.asarray(0.3))),
                               tg.grad(tg.grad(tnp.tanh))(0.3), rtol=1e-12)


def test_mixing_devices_names_both(cp) -> None:  # noqa: ANN001
    from tapegrad.backend import array_module

    with pytest.raises(ValueError, match="cpu.*cuda|cuda.*cpu"):
        array_module(np.ones(2), cp.ones(2))


def test_facade_on_cuda(cp) -> None:  # noqa: ANN001
    import tapegrad.torch as torch

    w = torch.tensor([0.5, -1.0], requires_grad=True, device="cuda")
    x = torch.tensor([2.0, 3.0]).cuda()
    y = (w * x).sum()
    y.backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_allclose(w.grad.cpu().numpy(), [2.0, 3.0])
    assert w.to("cuda") is w
