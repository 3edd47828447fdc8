"""The seed tutorials' programs, run with ``import tapegrad.torch as torch``.

Each program is the code of a tutorial in /work/shared/seeds/ (typos such as
``reuqires_grad`` fixed; prints of REPL-only expressions made explicit); the
expected text is what PyTorch 2.13 prints, object addresses normalised. The
random programs (002, 003) print only what does not depend on the random stream.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

import tapegrad.torch as torch

SEEDS = {
    # 000: Elliot Waite's autograd walk-through (a*b, MulBackward, next_functions, _version, unbind)
    "s000": (
        "a = torch.tensor(2.0)\nb = torch.tensor(3.0)\nprint(a.grad, a.grad_fn, a.is_leaf, a.requires_grad)\nc = a * b\nprint(c, c.grad, c.grad_fn, c.is_leaf, c.requires_grad)\na = torch.tensor(2.0, requires_grad=True)\nc = a * b\nprint(c, c.grad_fn, c.is_leaf, c.requires_grad)\nprint(c.grad_fn.next_functions)\nprint(c.grad_fn.next_functions[0][0].variable is a)\nc.backward()\nprint(a.grad, b.grad)\na = torch.tensor(2.0, requires_grad=True)\nb = torch.tensor(3.0, requires_grad=True)\nc = a * b\nd = torch.tensor(4.0, requires_grad=True)\ne = c * d\nprint(e.grad_fn.next_functions)\nprint(c._version)\ne.backward()\nprint(a.grad, b.grad, d.grad)\na = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nb, c, d = a\nprint(b, c, d)\nprint(b.grad_fn.next_functions)\ne = b * c * d\nprint(e.grad_fn.next_functions)\nprint(e.grad_fn.next_functions[0][0].next_functions)\ne.backward()\nprint(a.grad)\na = torch.tensor(2.0)\nb = torch.tensor(3.0)\nc = torch.tensor(4.0, requires_grad=True)\nd = torch.tensor(5.0)\ne = (a * b + c) * d\nprint(e, e.grad_fn.next_functions)\ne.backward()\nprint(a.grad, c.grad)\n",
        "None None True False\ntensor(6.) None None True False\ntensor(6., grad_fn=<MulBackward0>) <MulBackward0 object at 0x...> False True\n((<AccumulateGrad object at 0x...>, 0), (None, 0))\nTrue\ntensor(3.) None\n((<MulBackward0 object at 0x...>, 0), (<AccumulateGrad object at 0x...>, 0))\n0\ntensor(12.) tensor(8.) tensor(6.)\ntensor(1., grad_fn=<UnbindBackward0>) tensor(2., grad_fn=<UnbindBackward0>) tensor(3., grad_fn=<UnbindBackward0>)\n((<AccumulateGrad object at 0x...>, 0),)\n((<MulBackward0 object at 0x...>, 0), (<UnbindBackward0 object at 0x...>, 2))\n((<UnbindBackward0 object at 0x...>, 0), (<UnbindBackward0 object at 0x...>, 1))\ntensor([6., 3., 2.])\ntensor(50., grad_fn=<MulBackward0>) ((<AddBackward0 object at 0x...>, 0), (None, 0))\nNone tensor(5.)\n",
    ),
    # 001: autograd tutorial (backward of non-scalars, Dive-into-DL section 2.3)
    "s001": (
        'x = torch.tensor([0.0, 2.0, 8.0], requires_grad = True)\ny = torch.tensor([5.0 , 1.0 , 7.0], requires_grad = True)\nz = x * y\ntry:\n    z.backward()\nexcept RuntimeError as e:\n    print("RuntimeError:", e)\nz.backward(torch.FloatTensor([1.0, 1.0, 1.0]))\nprint(x.grad, y.grad)\nx = torch.ones(2,2,requires_grad=True)\nprint(x)\nprint(x.grad_fn)\ny = x+2\nprint(y)\nprint(y.grad_fn.name())\nprint(x.is_leaf,y.is_leaf)\nz = y*y*3\nout = z.mean()\nprint(z)\nprint(out)\na = torch.randn(2,2)\na = ((a*3)/(a-1))\nprint(a.requires_grad)\na.requires_grad_(True)\nprint(a.requires_grad)\nb = (a*a).sum()\nprint(b.grad_fn.name())\nout.backward()\nprint(x.grad)\nout2 = x.sum()\nout2.backward()\nprint(x.grad)\nout3 = x.sum()\nx.grad.data.zero_()\nout3.backward()\nprint(x.grad)\nx = torch.tensor([1.0,2.0,3.0,4.0],requires_grad=True)\ny = 2 * x\nz = y.view(2,2)\nprint(z)\nv = torch.tensor([[1.0,0.1],[0.01,0.001]],dtype=torch.float)\nz.backward(v)\nprint(x.grad)\nx = torch.tensor(1.0,requires_grad=True)\ny1 = x ** 2\nwith torch.no_grad():\n    y2 = x ** 3\ny3 = y1+y2\nprint(x.requires_grad)\nprint(y1,y1.requires_grad)\nprint(y2,y2.requires_grad)\nprint(y3,y3.requires_grad)\ny3.backward()\nprint(x.grad)\ntry:\n    y2.backward()\nexcept RuntimeError as e:\n    print("RuntimeError:", e)\nx = torch.ones(1,requires_grad=True)\nprint(x.data)\nprint(x.data.requires_grad)\ny = 2*x\nx.data *= 100\ny.backward()\nprint(x)\nprint(x.grad)\n',
        "RuntimeError: grad can be implicitly created only for scalar outputs\ntensor([5., 1., 7.]) tensor([0., 2., 8.])\ntensor([[1., 1.],\n        [1., 1.]], requires_grad=True)\nNone\ntensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)\nAddBackward0\nTrue False\ntensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)\ntensor(27., grad_fn=<MeanBackward0>)\nFalse\nTrue\nSumBackward0\ntensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\ntensor([[5.5000, 5.5000],\n        [5.5000, 5.5000]])\ntensor([[1., 1.],\n        [1., 1.]])\ntensor([[2., 4.],\n        [6., 8.]], grad_fn=<ViewBackward0>)\ntensor([2.0000, 0.2000, 0.0200, 0.0020])\nTrue\ntensor(1., grad_fn=<PowBackward0>) True\ntensor(1.) False\ntensor(2., grad_fn=<AddBackward0>) True\ntensor(2.)\nRuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\ntensor([1.])\nFalse\ntensor([100.], requires_grad=True)\ntensor([2.])\n",
    ),
    # 002: torch.autograd basics, y = x**2 exp(x) against the hand derivative
    "s002": (
        "a = t.randn(3, 4, requires_grad=True)\na = t.randn(3, 4).requires_grad_()\na = t.randn(3, 4)\na.requires_grad=True\nb = t.zeros(3, 4).requires_grad_()\nc = a.add(b)\nd = c.sum()\nd.backward()\nprint(d.requires_grad)\nprint(a.requires_grad, b.requires_grad, c.requires_grad)\nprint(a.is_leaf, b.is_leaf, c.is_leaf)\nprint(c.grad is None)\ndef f(x):\n    y = x ** 2 * t.exp(x)\n    return y\ndef gradf(x):\n    dx = 2 * x * t.exp(x) + x ** 2 * t.exp(x)\n    return dx\nx = t.randn(3, 4, requires_grad=True)\ny = f(x)\ny.backward(t.ones(y.size()))\nprint(x.grad.shape, gradf(x).shape, t.allclose(x.grad, gradf(x)))\nprint(gradf(x).grad_fn)\n",
        "True\nTrue True True\nTrue True False\nTrue\ntorch.Size([3, 4]) torch.Size([3, 4]) True\n<AddBackward0 object at 0x...>\n",
    ),
    # 003: grad_fn / next_functions / retain_graph / dynamic graphs / no_grad
    "s003": (
        "x = t.ones(1)\nb = t.rand(1, requires_grad=True)\nw = t.rand(1, requires_grad=True)\ny = w * x\nz = y + b\nprint(x.requires_grad, b.requires_grad, w.requires_grad)\nprint(z.grad_fn)\nprint(z.grad_fn.next_functions)\nprint(z.grad_fn.next_functions[0][0] == y.grad_fn)\nprint(y.grad_fn.next_functions)\nprint(w.grad_fn, x.grad_fn)\nz.backward(retain_graph=True)\nprint(w.grad)\nz.backward()\nprint(w.grad)\ndef abs(x):\n    if x.data[0] > 0:\n        return x\n    else:\n        return -x\nx = t.ones(1, requires_grad=True)\ny = abs(x)\ny.backward()\nprint(x.grad)\nx = -1 * t.ones(1)\nx = x.requires_grad_()\ny = abs(x)\ny.backward()\nprint(x.grad)\nwith t.no_grad():\n    x = t.ones(1)\n    w = t.rand(1, requires_grad=True)\n    y = x * w\n    print(x.requires_grad, w.requires_grad, y.requires_grad)\nt.set_grad_enabled(False)\ny = x * w\nprint(y.requires_grad)\nt.set_grad_enabled(True)\nprint((x * w).requires_grad)\n",
        "False True True\n<AddBackward0 object at 0x...>\n((<MulBackward0 object at 0x...>, 0), (<AccumulateGrad object at 0x...>, 0))\nTrue\n((<AccumulateGrad object at 0x...>, 0), (None, 0))\nNone None\ntensor([1.])\ntensor([2.])\ntensor([1.])\ntensor([-1.])\nFalse True False\nFalse\nTrue\n",
    ),
    # 004: w*x+b regression step, the non-leaf .grad warning, sum() over a tensor
    "s004": (
        'x = torch.tensor([1.,2.])\ny = torch.tensor([5.,7.])\nw = torch.tensor(1.0,requires_grad = True)\nb = torch.tensor(0.0,requires_grad = True)\nprint((x.grad, x.grad_fn, x.is_leaf, y.grad, y.grad_fn, y.is_leaf))\nprint((w.grad, w.grad_fn, w.is_leaf, b.grad, b.grad_fn, b.is_leaf))\nwx = w*x\nwx_b = wx+b\nloss = (wx_b -y)\nloss2 = loss**2\nloss2_sum = sum(loss2)\nprint((wx.is_leaf, wx_b.is_leaf, loss.is_leaf, loss2.is_leaf, loss2_sum.is_leaf))\nimport warnings\nwith warnings.catch_warnings(record=True) as caught:\n    warnings.simplefilter("always")\n    print((wx.grad, wx_b.grad, loss.grad, loss2.grad, loss2_sum.grad))\nprint(len(caught), caught[0].category.__name__, str(caught[0].message).split(" (Triggered")[0])\nprint((wx.grad_fn, wx_b.grad_fn, loss.grad_fn, loss2.grad_fn, loss2_sum.grad_fn))\nloss2_sum.backward()\nwith warnings.catch_warnings():\n    warnings.simplefilter("ignore")\n    print((wx.grad, wx_b.grad, loss.grad, loss2.grad, loss2_sum.grad))\nprint((w.grad, b.grad, x.grad, y.grad))\n',
        "(None, None, True, None, None, True)\n(None, None, True, None, None, True)\n(False, False, False, False, False)\n(None, None, None, None, None)\n5 UserWarning The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.\n(<MulBackward0 object at 0x...>, <AddBackward0 object at 0x...>, <SubBackward0 object at 0x...>, <PowBackward0 object at 0x...>, <AddBackward0 object at 0x...>)\n(None, None, None, None, None)\n(tensor(-28.), tensor(-18.), None, None)\n",
    ),
}


@pytest.mark.filterwarnings("ignore:The .grad attribute:UserWarning")
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_transcript(name: str) -> None:
    src, want = SEEDS[name]
    torch.manual_seed(0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(src, {"torch": torch, "t": torch})
    assert re.sub(r"0x[0-9a-f]+", "0x...", buf.getvalue()) == want
