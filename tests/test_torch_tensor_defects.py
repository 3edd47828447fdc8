"""Facade defects fixed together: ``out=`` on creation functions, ``.grad``
assignment checks, basic-indexing node names, and PyTorch's class reprs.

Each test asserts exact values and messages without PyTorch; the ``*_torch``
tests compare against real PyTorch where it is installed."""

from __future__ import annotations

import copy
import pickle
import re
import warnings
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch

NO_AD = ("aten::{}(): functions with out=... arguments don't support automatic differentiation, "
         "but one of the arguments requires grad.")

# (call, name, expected values) for a float32 ``out`` of the right size
CALLS: list[tuple[Any, str, list[Any]]] = [
    (lambda c, **k: torch.ones(2, out=c, **k), "ones", [1.0, 1.0]),
    (lambda c, **k: torch.zeros(2, out=c, **k), "zeros", [0.0, 0.0]),
    (lambda c, **k: torch.full((2,), 3.5, out=c, **k), "full", [3.5, 3.5]),
    (lambda c, **k: torch.arange(2.0, out=c, **k), "arange", [0.0, 1.0]),
    (lambda c, **k: torch.linspace(0, 1, 2, out=c, **k), "linspace", [0.0, 1.0]),
    (lambda c, **k: torch.eye(2, out=c, **k), "eye", [[1.0, 0.0], [0.0, 1.0]]),
]


def _calls_all() -> list[Any]:
    return [
        lambda c, **k: torch.ones(2, out=c, **k), lambda c, **k: torch.zeros(2, out=c, **k),
        lambda c, **k: torch.empty(2, out=c, **k), lambda c, **k: torch.rand(2, out=c, **k),
        lambda c, **k: torch.randn(2, out=c, **k), lambda c, **k: torch.full((2,), 1.0, out=c, **k),
        lambda c, **k: torch.arange(2, out=c, **k), lambda c, **k: torch.linspace(0, 1, 2, out=c, **k),
        lambda c, **k: torch.eye(2, out=c, **k), lambda c, **k: torch.randint(0, 3, (2,), out=c, **k),
        lambda c, **k: torch.randperm(2, out=c, **k),
    ]


# --- 1. out= on creation functions -------------------------------------------------------------------


@pytest.mark.parametrize("call,name,expected", CALLS, ids=[c[1] for c in CALLS])
def test_out_is_written_and_returned(call: Any, name: str, expected: list[Any]) -> None:
    c = torch.zeros(2)
    r = call(c)
    assert r is c
    assert c.tolist() == expected
    assert c.dtype == torch.float32
    assert c._version == 1


@pytest.mark.parametrize("make", _calls_all())
def test_out_of_every_creation_function_is_returned(make: Any) -> None:
    c = torch.zeros(2)
    assert make(c) is c


def test_out_resized_without_warning() -> None:
    for c in (torch.zeros(3), torch.zeros(0), torch.zeros(2, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = torch.ones(2, out=c)
        assert r is c and c.shape == torch.Size([2]) and c.tolist() == [1.0, 1.0]
    c = torch.zeros(2)
    assert torch.ones(2, 3, out=c) is c and c.tolist() == [[1.0] * 3] * 2
    assert torch.eye(2, 3, out=c) is c and c.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert torch.ones((), out=c) is c and c.shape == torch.Size([]) and c.item() == 1.0


def test_out_arange_warns_on_other_number_of_elements() -> None:
    c = torch.zeros(2, 3)
    msg = ("The number of elements in the out tensor of shape [2, 3] is 6 which does not match the computed "
           "number of elements 4. Note that this may occur as a result of rounding error. The out tensor will "
           "be resized to a tensor of shape (4,).")
    with pytest.warns(UserWarning, match=re.escape(msg)):
        r = torch.arange(0, 1, 0.25, out=c)
    assert r is c and c.tolist() == [0.0, 0.25, 0.5, 0.75]
    for c in (torch.zeros(0), torch.zeros(4)):  # empty, or the right number: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.arange(0, 1, 0.25, out=c)
        assert c.tolist() == [0.0, 0.25, 0.5, 0.75]


def test_out_arange_linspace_keep_shape_of_same_number_of_elements() -> None:
    c = torch.zeros(2, 1)
    torch.arange(2, out=c)
    assert c.shape == torch.Size([2, 1]) and c.tolist() == [[0.0], [1.0]]
    c = torch.zeros(2, 1)
    torch.linspace(0, 1, 2, out=c)
    assert c.shape == torch.Size([2, 1])
    c = torch.zeros(2, 1)
    torch.ones(2, out=c)
    assert c.shape == torch.Size([2])


def test_out_dtype_wins() -> None:
    c = torch.zeros(2, dtype=torch.int64)
    assert torch.ones(2, out=c) is c and c.dtype == torch.int64 and c.tolist() == [1, 1]
    assert torch.full((2,), 3.5, out=c).tolist() == [3, 3]
    assert torch.linspace(0, 1, 5, out=c).tolist() == [0, 0, 0, 0, 1]
    with pytest.warns(UserWarning, match="computed number of elements 4"):
        assert torch.arange(0, 4, 1.5, out=c).tolist() == [0, 1, 2, 3]  # (arguments truncated; resized)
    assert torch.ones(2, out=c, dtype=torch.int64).tolist() == [1, 1]  # the same dtype: fine
    d = torch.zeros(2, dtype=torch.float64)
    assert torch.randint(0, 5, (2,), out=d).dtype == torch.float64
    with pytest.warns(UserWarning, match=re.escape("out tensor of shape [2] is 2")):
        assert torch.arange(3, out=d).tolist() == [0.0, 1.0, 2.0] and d.dtype == torch.float64
    b = torch.zeros(2, dtype=torch.bool)
    assert torch.ones(2, out=b).tolist() == [True, True]


def test_out_dtype_conflict() -> None:
    c = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=re.escape("dtype Float does not match dtype of out parameter (Long)")):
        torch.ones(2, out=c, dtype=torch.float32)
    c = torch.zeros(2)
    with pytest.raises(RuntimeError, match=re.escape("dtype Double does not match dtype of out parameter (Float)")):
        torch.arange(2, out=c, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=re.escape("dtype Int does not match dtype of out parameter (Float)")):
        torch.full((2,), 1, out=c, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=re.escape("device type cuda does not match device type of out "
                                                     "parameter (cpu)")):
        torch.ones(2, out=c, device="cuda")
    with pytest.raises(TypeError, match=re.escape("ones(): argument 'out' must be Tensor, not int")):
        torch.ones(2, out=3)
    assert torch.ones(2, out=c, device="cpu") is c


def test_out_kernel_dtype_errors() -> None:
    c = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match=re.escape("\"check_uniform_bounds\" not implemented for 'Long'")):
        torch.rand(2, out=c)
    with pytest.raises(NotImplementedError, match=re.escape("\"normal_kernel_cpu\" not implemented for 'Long'")):
        torch.randn(2, out=c)
    b = torch.zeros(2, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match=re.escape("\"arange_cpu\" not implemented for 'Bool'")):
        torch.arange(2, out=b)
    with pytest.raises(NotImplementedError, match=re.escape("\"randperm\" not implemented for 'Bool'")):
        torch.randperm(2, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        torch.randint(3, (2,), out=b)
    with pytest.raises(ValueError, match="step must be nonzero"):
        torch.arange(0, 1, 0.5, dtype=torch.int64)


def test_out_requires_grad_errors() -> None:
    for name, make in (("ones", lambda c: torch.ones(2, out=c)), ("zeros", lambda c: torch.zeros(2, out=c)),
                       ("rand", lambda c: torch.rand(2, out=c)), ("full", lambda c: torch.full((2,), 1.0, out=c)),
                       ("arange", lambda c: torch.arange(2.0, out=c)),
                       ("linspace", lambda c: torch.linspace(0, 1, 2, out=c)), ("eye", lambda c: torch.eye(2, out=c)),
                       ("randint", lambda c: torch.randint(0, 3, (2,), out=c)),
                       ("randperm", lambda c: torch.randperm(2, out=c))):
        c = torch.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=re.escape(NO_AD.format(name))):
            make(c)
        assert c.tolist() == [0.0, 0.0] and c.requires_grad
    for make in (lambda c: torch.empty(2, out=c), lambda c: torch.randn(2, out=c)):
        c = torch.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
            make(c)
        with torch.no_grad(), pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
            make(c)


def test_out_requires_grad_flag() -> None:
    c = torch.zeros(2, requires_grad=True)
    with torch.no_grad():
        r = torch.ones(2, out=c)
    assert r is c and c.tolist() == [1.0, 1.0] and not c.requires_grad and c.is_leaf
    c = torch.zeros(2)
    assert torch.zeros(2, out=c, requires_grad=True) is c
    assert c.requires_grad and c.is_leaf
    (c * 3).sum().backward()
    assert c.grad.tolist() == [3.0, 3.0]
    c = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        torch.ones(2, out=c, requires_grad=True)


def test_out_view_writes_through_to_base() -> None:
    base = torch.zeros(4)
    v = base[1:3]
    assert torch.ones(2, out=v) is v
    assert base.tolist() == [0.0, 1.0, 1.0, 0.0]
    assert base._version == 1 and v._version == 1


def test_out_empty_of_same_shape_untouched() -> None:
    c = torch.tensor([5.0, 6.0])
    assert torch.empty(2, out=c) is c
    assert c.tolist() == [5.0, 6.0] and c._version == 0
    assert torch.empty(2, 3, out=c).shape == torch.Size([2, 3])


def test_out_matches_torch() -> None:
    real = pytest.importorskip("torch")

    def run(mod: Any, call: str, mk: str) -> Any:
        c = eval(mk, {"torch": mod})
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = eval(call, {"torch": mod, "c": c})
        except Exception as e:  # noqa: BLE001  (the error itself is compared)
            return type(e).__name__, str(e)
        msgs = [str(x.message).split(" (Triggered internally")[0] for x in w]
        vals = c.tolist() if "rand" not in call and "empty" not in call else None
        return r is c, vals, list(c.shape), str(c.dtype), c.requires_grad, c._version, msgs

    calls = ["torch.ones(2, out=c)", "torch.zeros(2, out=c)", "torch.empty(2, out=c)", "torch.rand(2, out=c)",
             "torch.randn(2, out=c)", "torch.full((2,), 3.5, out=c)", "torch.arange(2., out=c)",
             "torch.arange(0, 4, 1.5, out=c)", "torch.linspace(0, 1, 5, out=c)", "torch.eye(2, 3, out=c)",
             "torch.randint(0, 3, (2,), out=c)", "torch.randperm(2, out=c)",
             "torch.ones(2, out=c, dtype=torch.float64)", "torch.ones(2, out=c, requires_grad=True)"]
    makes = ["torch.zeros(3)", "torch.zeros(2)", "torch.zeros(0)", "torch.zeros(2, 1)",
             "torch.zeros(3, requires_grad=True)", "torch.zeros(3, dtype=torch.int64)",
             "torch.zeros(2, dtype=torch.bool)", "torch.zeros(3)[:2]"]
    for call in calls:
        for mk in makes:
            assert run(torch, call, mk) == run(real, call, mk), (call, mk)


# --- 2. assigning .grad ----------------------------------------------------------------------------------


def test_grad_assignment_type() -> None:
    t = torch.zeros(2, requires_grad=True)
    for g, name in ((0.0, "float"), (1, "int"), ([1.0, 2.0], "list"), (np.zeros(2), "numpy.ndarray"),
                    (np.float64(1), "numpy.float64"), (torch.nn.Linear(2, 2), "Linear")):
        with pytest.raises(TypeError, match=re.escape(
                f"assigned grad expected to be a Tensor or None but got grad of type {name}") + "$"):
            t.grad = g
    assert t.grad is None
    (t * 2).sum().backward()  # not broken by the refused assignment
    assert t.grad.tolist() == [2.0, 2.0]


def test_grad_assignment_size_and_dtype() -> None:
    t = torch.zeros(2, requires_grad=True)
    for g, size in ((torch.zeros(3), "[3]"), (torch.zeros(1, 2), "[1, 2]"), (torch.zeros(()), "[]")):
        with pytest.raises(RuntimeError, match=re.escape(
                f"attempting to assign a gradient of size '{size}' to a tensor of size '[2]'. Please ensure "
                "that the gradient and the tensor are the same size") + "$"):
            t.grad = g
    dtype_msg = ("attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient "
                 "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                 "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with "
                 "caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that "
                 "assume they match.")
    for dt, cpp in ((torch.float64, "double"), (torch.int64, "long int"), (torch.float16, "c10::Half"),
                    (torch.complex64, "c10::complex<float>"), (torch.bool, "bool")):
        with pytest.raises(RuntimeError, match=re.escape(dtype_msg.format(cpp, "Float")) + "$"):
            t.grad = torch.zeros(2, dtype=dt)
    with pytest.raises(RuntimeError, match=re.escape(dtype_msg.format("double", "Float"))):
        t.grad = torch.zeros(3, dtype=torch.float64)  # dtype is checked before size
    d = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=re.escape(dtype_msg.format("float", "Double"))):
        d.grad = torch.zeros(2)
    assert t.grad is None


def test_grad_assignment_accepted() -> None:
    t = torch.zeros(2, requires_grad=True)
    g = torch.ones(2)
    t.grad = g
    assert t.grad is g
    (t * 3).sum().backward()
    assert t.grad.tolist() == [4.0, 4.0]
    t.grad = None
    assert t.grad is None
    n = torch.zeros(2, dtype=torch.int64)
    n.grad = torch.zeros(2, dtype=torch.int64)  # an integer tensor may hold an integer grad
    y = t * 2
    y.grad = torch.zeros(2)  # a non-leaf too
    assert y.grad.tolist() == [0.0, 0.0]


def test_grad_assignment_matches_torch() -> None:
    real = pytest.importorskip("torch")

    def err(mod: Any, tdt: str, g: str) -> Any:
        t = mod.zeros(2, dtype=eval(tdt, {"torch": mod}), requires_grad=tdt != "torch.int64")
        try:
            t.grad = eval(g, {"torch": mod, "np": np})
        except Exception as e:  # noqa: BLE001  (the error itself is compared)
            return type(e).__name__, str(e)
        return None

    for tdt in ("torch.float32", "torch.float64", "torch.int64"):
        for g in ("0.", "[1.]", "np.zeros(2)", "torch.zeros(3)", "torch.zeros(2, dtype=torch.float64)",
                  "torch.zeros(2, dtype=torch.int32)", "torch.zeros(2, dtype=torch.complex128)",
                  "torch.zeros(2, dtype=torch.int8)", "torch.zeros(2, dtype=torch.uint8)",
                  "torch.zeros(2, dtype=torch.int16)", "torch.zeros(3, dtype=torch.int64)", "torch.zeros(2)"):
            assert err(torch, tdt, g) == err(real, tdt, g), (tdt, g)


# --- 3. node names of basic indexing ---------------------------------------------------------------------


def _chain(fn: Any) -> list[str]:
    names = []
    while fn is not None:
        names.append(fn.name())
        nf = fn.next_functions
        fn = nf[0][0] if nf else None
    return names


ACC = "torch::autograd::AccumulateGrad"
INDEX_CASES = [
    ("[:2]", ["SliceBackward0"]), ("[:]", ["SliceBackward0"]), ("[0:100]", ["SliceBackward0"]),
    ("[0]", ["SelectBackward0"]), ("[1:]", ["SliceBackward0"]), ("[:, 1]", ["SelectBackward0"]),
    ("[None]", ["UnsqueezeBackward0"]), ("[...]", ["AliasBackward0"]), ("[::2]", ["SliceBackward0"]),
    ("[:, :]", ["AliasBackward0"]), ("[0, 1]", ["SelectBackward0", "SelectBackward0"]),
    ("[-1, -2:]", ["SliceBackward0", "SelectBackward0"]), ("[1][:]", ["SliceBackward0", "SelectBackward0"]),
    ("[torch.tensor(1)]", ["SelectBackward0"]), ("[:, torch.tensor(2)]", ["SelectBackward0"]),
]


@pytest.mark.parametrize("key,names", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
def test_basic_index_node_names(key: str, names: list[str]) -> None:
    w = torch.zeros(2, 3, requires_grad=True)
    r = eval("w" + key, {"w": w, "torch": torch})
    assert _chain(r.grad_fn) == names + [ACC]
    n = w * 2
    r = eval("n" + key, {"n": n, "torch": torch})
    assert _chain(r.grad_fn) == names + ["MulBackward0", ACC]


def test_lone_slice_repr_and_gradient() -> None:
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(w[:2]) == "tensor([1., 2.], grad_fn=<SliceBackward0>)"
    assert repr(w[:]) == "tensor([1., 2.], grad_fn=<SliceBackward0>)"
    assert w[:].grad_fn.next_functions[0][0].variable is w
    (w[:] * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    x = torch.zeros(2, 2)
    v = x[torch.tensor(1)]  # a 0-dim integer index selects a view
    v.fill_(5.0)
    assert x.tolist() == [[0.0, 0.0], [5.0, 5.0]]


def test_basic_index_matches_torch() -> None:
    real = pytest.importorskip("torch")
    keys = ["[:2]", "[:]", "[0]", "[1:]", "[:, 1]", "[None]", "[...]", "[::2]", "[0, 1]", "[..., 1]", "[None, 0]",
            "[0, None]", "[:, :]", "[:, None]", "[:2, :3]", "[-1, -2:]", "[0][1]", "[..., None]", "[:, 1:3]",
            "[1:, ...]", "[0:3]", "[0:100]", "[:, ::1]", "[()]", "[(slice(None),)]", "[0:3, 1]", "[:3:1]",
            "[1][:]", "[1:][:]", "[torch.tensor(1)]", "[1:2][0]"]

    def names(mod: Any, key: str) -> Any:
        w = mod.zeros(3, 4, requires_grad=True)
        return [(_chain(eval(s + key, {"w": w, "n": w * 2, "torch": mod}).grad_fn)) for s in ("w", "n")]

    for key in keys:
        assert names(torch, key) == names(real, key), key


# --- 4. class reprs -----------------------------------------------------------------------------------


def test_class_reprs() -> None:
    assert repr(type(torch.zeros(1))) == "<class 'torch.Tensor'>"
    assert repr(torch.Tensor) == "<class 'torch.Tensor'>"
    assert str(type(torch.nn.Parameter(torch.zeros(1)))) == "<class 'torch.nn.parameter.Parameter'>"
    assert repr(torch.Size) == "<class 'torch.Size'>" and repr(type(torch.zeros(1).shape)) == "<class 'torch.Size'>"
    assert repr(torch.dtype) == "<class 'torch.dtype'>" and repr(type(torch.float32)) == "<class 'torch.dtype'>"
    assert repr(torch.device) == "<class 'torch.device'>"
    assert torch.Tensor.__name__ == "Tensor"

    class Mine(torch.Tensor):
        pass

    assert repr(Mine) == f"<class '{__name__}.test_class_reprs.<locals>.Mine'>"


def test_pickle_and_copy_still_work() -> None:
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert type(u) is torch.Tensor and u.tolist() == [1.0, 2.0] and u.requires_grad and u is not t
    assert copy.copy(torch.ones(2)).tolist() == [1.0, 1.0]
    p = torch.nn.Parameter(torch.ones(2))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is torch.nn.Parameter and repr(type(q)) == "<class 'torch.nn.parameter.Parameter'>"
    assert type(copy.deepcopy(p)) is torch.nn.Parameter
    assert pickle.loads(pickle.dumps(torch.Tensor)) is torch.Tensor  # the class pickles where it lives
    assert pickle.loads(pickle.dumps(torch.Size([2, 3]))) == torch.Size([2, 3])
    for dt in (torch.float64, torch.float32, torch.int64, torch.bool, torch.complex64, torch.uint8):
        assert pickle.loads(pickle.dumps(dt)) is dt and copy.deepcopy(dt) is dt


def test_class_reprs_match_torch() -> None:
    real = pytest.importorskip("torch")
    for expr in ("type(torch.zeros(1))", "torch.Tensor", "type(torch.nn.Parameter(torch.zeros(1)))", "torch.Size",
                 "torch.dtype", "torch.device", "type(torch.float32)", "type(torch.zeros(2).shape)"):
        assert repr(eval(expr, {"torch": torch})) == repr(eval(expr, {"torch": real})), expr


def test_indexing_every_axis_of_plain_data_is_a_view() -> None:
    """``x[1]`` of a 1-d tensor (and ``z[1, 2]``) is a 0-d view, as in
    PyTorch: an in-place op on it changes ``x`` (NumPy's scalar was a copy)."""
    x = torch.tensor([1.0, 2.0, 3.0])
    x[1].fill_(5.0)
    assert x.tolist() == [1.0, 5.0, 3.0]
    z = torch.zeros(2, 3)
    z[1, 2].add_(7.0)
    assert z.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 7.0]]
    assert z[1, 2].shape == torch.Size([]) and z[1, 2]._version == z._version
