"""grad_fn's _saved_* attributes as PyTorch 2.13 lists and gives them, and
torchviz drawing the facade's graphs as it draws PyTorch's."""

from __future__ import annotations

import importlib
import re
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as tt

U64 = 2**64


def _show(v: Any) -> Any:
    if hasattr(v, "shape") and not isinstance(v, np.ndarray):
        return ("tensor", tuple(v.shape))
    return v


def _programs(torch: Any) -> dict[str, Any]:
    x = torch.tensor(np.linspace(0.1, 1.2, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    w = torch.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2), requires_grad=True)
    b = torch.tensor([0.5, -0.5], requires_grad=True)
    F = torch.nn.functional
    return {
        "add": lambda: x + x, "sub": lambda: x - 2 * x, "mul": lambda: x * x, "div": lambda: x / (x + 3),
        "mul_scalar": lambda: x * 2, "mm": lambda: x @ w, "tanh": lambda: x.tanh(), "sigmoid": lambda: x.sigmoid(),
        "exp": lambda: x.exp(), "log": lambda: x.log(), "sin": lambda: x.sin(), "relu": lambda: x.relu(),
        "sqrt": lambda: x.sqrt(), "pow": lambda: x ** 2, "pow_tensor": lambda: x ** x, "sum": lambda: x.sum(),
        "sum_dim": lambda: x.sum(-1), "sum_keepdim": lambda: x.sum((0, 1), keepdim=True), "mean": lambda: x.mean(),
        "mean_dim": lambda: x.mean(0), "t": lambda: x.t(), "view": lambda: x.view(12),
        "transpose": lambda: x.transpose(-1, 0), "permute": lambda: x.permute(1, 0),
        "unsqueeze": lambda: x.unsqueeze(0), "squeeze": lambda: x[:1].squeeze(0),
        "softmax": lambda: x.softmax(1), "log_softmax": lambda: x.log_softmax(-1),
        "cat": lambda: torch.cat([x, x], -1), "stack": lambda: torch.stack([x, x]),
        "linear": lambda: F.linear(x, w.t().contiguous(), b), "addmm": lambda: torch.addmm(b, x, w),
        "linear_const_input": lambda: F.linear(x.detach(), w.t().contiguous(), b),
        "mse": lambda: F.mse_loss(x, x.detach() * 2),
        "bce_logits": lambda: F.binary_cross_entropy_with_logits(x @ w, torch.ones(3, 2)),
        "vec_mat": lambda: torch.ones(3) @ x,
    }


def _saved(grad_fn: Any) -> dict[str, Any]:
    return {a: _show(getattr(grad_fn, a)) for a in dir(grad_fn) if a.startswith("_saved_")}


# recorded from torch 2.13 (checked again against torch when it is importable)
EXPECTED: dict[str, tuple[str, dict[str, Any]]] = {
    "add": ("AddBackward0", {"_saved_alpha": 1}),
    "sub": ("SubBackward0", {"_saved_alpha": 1}),
    "mul": ("MulBackward0", {"_saved_other": ("tensor", (3, 4)), "_saved_self": ("tensor", (3, 4))}),
    "div": ("DivBackward0", {"_saved_other": ("tensor", (3, 4)), "_saved_self": ("tensor", (3, 4))}),
    "mul_scalar": ("MulBackward0", {"_saved_other": ("tensor", ()), "_saved_self": None}),
    "mm": ("MmBackward0", {"_saved_mat2": ("tensor", (4, 2)), "_saved_mat2_sym_sizes": (4, 2),
                           "_saved_mat2_sym_strides": (2, 1), "_saved_self": ("tensor", (3, 4)),
                           "_saved_self_sym_sizes": (3, 4), "_saved_self_sym_strides": (4, 1)}),
    "tanh": ("TanhBackward0", {"_saved_result": ("tensor", (3, 4))}),
    "sigmoid": ("SigmoidBackward0", {"_saved_result": ("tensor", (3, 4))}),
    "exp": ("ExpBackward0", {"_saved_result": ("tensor", (3, 4))}),
    "log": ("LogBackward0", {"_saved_self": ("tensor", (3, 4))}),
    "sin": ("SinBackward0", {"_saved_self": ("tensor", (3, 4))}),
    "relu": ("ReluBackward0", {"_saved_result": ("tensor", (3, 4))}),
    "sqrt": ("SqrtBackward0", {"_saved_result": ("tensor", (3, 4))}),
    "pow": ("PowBackward0", {"_saved_exponent": 2, "_saved_self": ("tensor", (3, 4))}),
    "pow_tensor": ("PowBackward1", {"_saved_exponent": ("tensor", (3, 4)), "_saved_result": ("tensor", (3, 4)),
                                    "_saved_self": ("tensor", (3, 4))}),
    "sum": ("SumBackward0", {"_saved_self_sym_sizes": (3, 4)}),
    "sum_dim": ("SumBackward1", {"_saved_dim": (U64 - 1,), "_saved_keepdim": False, "_saved_self_sym_sizes": (3, 4)}),
    "sum_keepdim": ("SumBackward1", {"_saved_dim": (0, 1), "_saved_keepdim": True, "_saved_self_sym_sizes": (3, 4)}),
    "mean": ("MeanBackward0", {"_saved_self_sym_numel": 12, "_saved_self_sym_sizes": (3, 4)}),
    "mean_dim": ("MeanBackward1", {"_saved_dim": (0,), "_saved_keepdim": False, "_saved_self_sym_numel": 12,
                                   "_saved_self_sym_sizes": (3, 4)}),
    "t": ("TBackward0", {}),
    "view": ("ViewBackward0", {"_saved_self_sym_sizes": (3, 4)}),
    "transpose": ("TransposeBackward0", {"_saved_dim0": U64 - 1, "_saved_dim1": 0}),
    "permute": ("PermuteBackward0", {"_saved_dims": (1, 0)}),
    "unsqueeze": ("UnsqueezeBackward0", {"_saved_dim": 0}),
    "squeeze": ("SqueezeBackward1", {"_saved_dim": 0, "_saved_self_sym_sizes": (1, 4)}),
    "softmax": ("SoftmaxBackward0", {"_saved_dim": 1, "_saved_result": ("tensor", (3, 4))}),
    "log_softmax": ("LogSoftmaxBackward0", {"_saved_dim": U64 - 1, "_saved_result": ("tensor", (3, 4))}),
    "cat": ("CatBackward0", {"_saved_dim": U64 - 1}),
    "stack": ("StackBackward0", {"_saved_dim": 0}),
    "linear": ("AddmmBackward0", {"_saved_alpha": 1, "_saved_beta": 1, "_saved_mat1": ("tensor", (3, 4)),
                                  "_saved_mat1_sym_sizes": (3, 4), "_saved_mat1_sym_strides": (4, 1),
                                  "_saved_mat2": ("tensor", (4, 2)), "_saved_mat2_sym_sizes": (4, 2),
                                  "_saved_mat2_sym_strides": (1, 4)}),
    "addmm": ("AddmmBackward0", {"_saved_alpha": 1, "_saved_beta": 1, "_saved_mat1": ("tensor", (3, 4)),
                                 "_saved_mat1_sym_sizes": (3, 4), "_saved_mat1_sym_strides": (4, 1),
                                 "_saved_mat2": ("tensor", (4, 2)), "_saved_mat2_sym_sizes": (4, 2),
                                 "_saved_mat2_sym_strides": (2, 1)}),
    "linear_const_input": ("AddmmBackward0", {"_saved_alpha": 1, "_saved_beta": 1, "_saved_mat1": ("tensor", (3, 4)),
                                              "_saved_mat1_sym_sizes": (3, 4), "_saved_mat1_sym_strides": (),
                                              "_saved_mat2": None, "_saved_mat2_sym_sizes": (4, 2),
                                              "_saved_mat2_sym_strides": (1, 4)}),
    "mse": ("MseLossBackward0", {"_saved_reduction": 1, "_saved_self": ("tensor", (3, 4)),
                                 "_saved_target": ("tensor", (3, 4))}),
    "bce_logits": ("BinaryCrossEntropyWithLogitsBackward0", {
        "_saved_pos_weight": None, "_saved_reduction": 1, "_saved_self": ("tensor", (3, 2)),
        "_saved_target": ("tensor", (3, 2)), "_saved_weight": None}),
    "vec_mat": ("SqueezeBackward4", {"_saved_dim": 0, "_saved_self_sym_sizes": (1, 4)}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_saved_attributes_as_pytorch_lists_them(name: str) -> None:
    y = _programs(tt)[name]()
    node, attrs = EXPECTED[name]
    assert y.grad_fn.name() == node
    assert _saved(y.grad_fn) == attrs


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_saved_attributes_are_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    y = _programs(torch)[name]()
    assert (y.grad_fn.name(), _saved(y.grad_fn)) == EXPECTED[name]


def test_saved_tensors_are_the_values_and_the_same_object_when_saved_twice() -> None:
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y * y
    assert z.grad_fn._saved_self is z.grad_fn._saved_other  # one value saved twice: one tensor, as PyTorch
    np.testing.assert_array_equal(z.grad_fn._saved_self.detach().numpy(), [3.0, 6.0])
    assert (x * x).grad_fn._saved_self is x  # a leaf: the leaf itself
    r = x.exp()
    np.testing.assert_allclose(r.grad_fn._saved_result.detach().numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    assert (x * 2).grad_fn._saved_other.item() == 2


# --- torchviz -------------------------------------------------------------------------------------


def _torchviz_dot(torch_module: ModuleType) -> ModuleType:
    """torchviz's ``dot`` module imported with ``torch`` bound to ``torch_module``
    (as a program run on the facade imports it), leaving ``sys.modules`` as it was."""
    pytest.importorskip("torchviz")
    pytest.importorskip("graphviz")
    saved = {k: v for k, v in sys.modules.items() if k in ("torch", "torch.autograd") or k.startswith("torchviz")}
    for k in [k for k in sys.modules if k.startswith("torchviz")]:
        del sys.modules[k]
    try:
        sys.modules["torch"] = torch_module
        sys.modules["torch.autograd"] = torch_module.autograd
        return importlib.import_module("torchviz.dot")
    finally:
        for k in [k for k in sys.modules if k.startswith("torchviz") or k in ("torch", "torch.autograd")]:
            del sys.modules[k]
        sys.modules.update(saved)


def _normalised(src: str) -> str:
    """The dot source with each object id replaced by its order of appearance."""
    ids: dict[str, int] = {}
    return re.sub(r"\b\d{6,}\b", lambda m: f"N{ids.setdefault(m.group(0), len(ids))}", src)


def _seed_program(torch: Any, which: str) -> tuple[Any, dict[str, Any]]:
    rng = np.random.default_rng(0)

    def arr(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    if which == "mlp":  # a model, its parameters named, a squared-error loss
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.tensor(arr(*p.shape)))
        loss = ((model(torch.tensor(arr(5, 3))) - torch.tensor(arr(5, 1))) ** 2).mean()
        return loss, dict(model.named_parameters())
    if which == "autograd_tutorial":  # PyTorch's "Automatic differentiation" tutorial
        w = torch.tensor(arr(5, 3), requires_grad=True)
        b = torch.tensor(arr(3), requires_grad=True)
        z = torch.matmul(torch.ones(5), w) + b
        return torch.nn.functional.binary_cross_entropy_with_logits(z, torch.zeros(3)), {"w": w, "b": b}
    if which == "blitz":  # the 60-minute blitz's y = x + 2; z = y * y * 3
        x = torch.ones(2, 2, requires_grad=True)
        y = x + 2
        return (y * y * 3).mean(), {"x": x}
    x = torch.tensor(arr(4, 3), requires_grad=True)
    w = torch.tensor(arr(3, 2), requires_grad=True)
    h = (x @ w).sigmoid()
    return (h.exp() + h.log().sum(1, keepdim=True) / 2).sum(), {"x": x, "w": w}


@pytest.mark.filterwarnings("ignore:distutils Version classes are deprecated:DeprecationWarning")
@pytest.mark.parametrize("which", ["mlp", "autograd_tutorial", "blitz", "sigmoid"])
def test_torchviz_draws_the_facades_graph_as_torchs(which: str) -> None:
    torch = pytest.importorskip("torch")
    sources = []
    for lib in (torch, tt):
        dot = _torchviz_dot(lib)
        y, params = _seed_program(lib, which)
        sources.append(_normalised(dot.make_dot(y, params=params, show_attrs=True, show_saved=True).source))
    assert sources[1] == sources[0]
    assert "[saved tensor]" in sources[1] and "AccumulateGrad" in sources[1]
