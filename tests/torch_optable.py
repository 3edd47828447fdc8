"""The facade's op table: one row per differentiable facade op.

Each row is ``fn(torch, *xs)``, written once against a module ``torch``: the
tests call it with ``tapegrad.torch`` (the values, derivatives and graph
under test) and, when it is installed, with real PyTorch (the reference).
A row names the op it covers (``Tensor`` method ``sin``, ``torch.cat``,
``F.gelu`` for ``torch.nn.functional``, an operator ``__add__``), samplers
of float64 inputs (domains keep away from kinks, poles and ties), the
``grad_fn`` name PyTorch 2.x gives the result (read off real PyTorch once and
written here, so the table works without it), and whether the op is
differentiated twice (``order``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from optable import P, R, U


class Row(NamedTuple):
    name: str  # unique id: "<op>" or "<op>/<variant>"
    fn: Callable[..., Any]  # fn(torch, *tensors) -> tensor
    args: tuple[Callable[[np.random.Generator], np.ndarray], ...]
    grad_fn: str  # PyTorch's name of the result's grad_fn
    order: int = 2  # 2: twice differentiable (checked at order 2)

    @property
    def op(self) -> str:
        return self.name.split("/")[0]


def row(name: str, fn: Callable[..., Any], args: Any, grad_fn: str, order: int = 2) -> Row:
    return Row(name, fn, args if isinstance(args, tuple) else (args,), grad_fn, order)


def B(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """In (0.1, 0.9): probabilities, logit's domain."""
    return R(*shape, lo=0.1, hi=0.9)


def G1(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """Above 1.2: acosh's domain."""
    return R(*shape, lo=1.2, hi=3.0)


def _i(t: Any, data: Any) -> Any:
    return t.tensor(data, dtype=t.int64)


def _mask(t: Any) -> Any:
    return t.tensor([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


def _ip(method: str, *args: Any) -> Callable[..., Any]:
    """``method`` run in place on a non-leaf copy ``x * 1`` (tensors after x
    are passed on as the method's leading arguments)."""
    def fn(t: Any, x: Any, *ys: Any) -> Any:
        y = x * 1
        getattr(y, method)(*ys, *[a(t) if callable(a) else a for a in args])
        return y
    return fn


def _setitem(t: Any, x: Any, v: Any) -> Any:
    y = x * 1
    y[1:, 2] = v
    return y


def _iop(op: str) -> Callable[..., Any]:
    def fn(t: Any, x: Any, y: Any) -> Any:
        z = x * 1
        if op == "+":
            z += y
        elif op == "-":
            z -= y
        elif op == "*":
            z *= y
        elif op == "/":
            z /= y
        else:
            z **= y
        return z
    return fn


F_ = "nn.functional"


def _F(t: Any) -> Any:
    return t.nn.functional


ROWS: list[Row] = [
    # --- unary math -------------------------------------------------------------------------------
    row("abs", lambda t, x: x.abs(), R(3, 4), "AbsBackward0"),
    row("absolute", lambda t, x: x.absolute(), R(3, 4), "AbsBackward0"),
    row("neg", lambda t, x: x.neg(), R(3, 4), "NegBackward0"),
    row("negative", lambda t, x: x.negative(), R(3, 4), "NegBackward0"),
    row("exp", lambda t, x: x.exp(), R(3, 4), "ExpBackward0"),
    row("exp2", lambda t, x: x.exp2(), R(3, 4), "Exp2Backward0"),
    row("expm1", lambda t, x: x.expm1(), R(3, 4), "Expm1Backward0"),
    row("log", lambda t, x: x.log(), P(3, 4), "LogBackward0"),
    row("log2", lambda t, x: x.log2(), P(3, 4), "Log2Backward0"),
    row("log10", lambda t, x: x.log10(), P(3, 4), "Log10Backward0"),
    row("log1p", lambda t, x: x.log1p(), P(3, 4), "Log1PBackward0"),
    row("sqrt", lambda t, x: x.sqrt(), P(3, 4), "SqrtBackward0"),
    row("rsqrt", lambda t, x: x.rsqrt(), P(3, 4), "RsqrtBackward0"),
    row("square", lambda t, x: x.square(), R(3, 4), "PowBackward0"),
    row("reciprocal", lambda t, x: x.reciprocal(), R(3, 4), "ReciprocalBackward0"),
    row("sin", lambda t, x: x.sin(), R(3, 4), "SinBackward0"),
    row("cos", lambda t, x: x.cos(), R(3, 4), "CosBackward0"),
    row("tan", lambda t, x: x.tan(), U(3, 4), "TanBackward0"),
    row("asin", lambda t, x: x.asin(), U(3, 4), "AsinBackward0"),
    row("arcsin", lambda t, x: x.arcsin(), U(3, 4), "AsinBackward0"),
    row("acos", lambda t, x: x.acos(), U(3, 4), "AcosBackward0"),
    row("arccos", lambda t, x: x.arccos(), U(3, 4), "AcosBackward0"),
    row("atan", lambda t, x: x.atan(), R(3, 4), "AtanBackward0"),
    row("arctan", lambda t, x: x.arctan(), R(3, 4), "AtanBackward0"),
    row("sinh", lambda t, x: x.sinh(), R(3, 4), "SinhBackward0"),
    row("cosh", lambda t, x: x.cosh(), R(3, 4), "CoshBackward0"),
    row("tanh", lambda t, x: x.tanh(), R(3, 4), "TanhBackward0"),
    row("asinh", lambda t, x: x.asinh(), R(3, 4), "AsinhBackward0"),
    row("acosh", lambda t, x: x.acosh(), G1(3, 4), "AcoshBackward0"),
    row("atanh", lambda t, x: x.atanh(), U(3, 4), "AtanhBackward0"),
    row("sigmoid", lambda t, x: x.sigmoid(), R(3, 4), "SigmoidBackward0"),
    row("relu", lambda t, x: x.relu(), R(3, 4), "ReluBackward0"),
    row("erf", lambda t, x: x.erf(), R(3, 4), "ErfBackward0"),
    row("logit", lambda t, x: x.logit(), B(3, 4), "LogitBackward0"),
    row("logit/eps", lambda t, x: x.logit(eps=0.05), B(3, 4), "LogitBackward0"),
    row("sinc", lambda t, x: x.sinc(), R(3, 4), "SincBackward0"),
    row("sign", lambda t, x: x.sign(), R(3, 4), "SignBackward0"),
    row("sgn", lambda t, x: x.sgn(), R(3, 4), "SgnBackward0"),
    row("floor", lambda t, x: x.floor(), R(3, 4), "FloorBackward0"),
    row("ceil", lambda t, x: x.ceil(), R(3, 4), "CeilBackward0"),
    row("round", lambda t, x: x.round(), R(3, 4), "RoundBackward0"),
    row("round/decimals", lambda t, x: x.round(decimals=1), R(3, 4), "RoundBackward1"),
    row("trunc", lambda t, x: x.trunc(), R(3, 4), "TruncBackward0"),
    row("frac", lambda t, x: x.frac(), R(3, 4), "FracBackward0"),
    row("nan_to_num", lambda t, x: x.nan_to_num(), R(3, 4), "NanToNumBackward0"),
    row("clone", lambda t, x: x.clone(), R(3, 4), "CloneBackward0"),
    row("pow", lambda t, x: x.pow(3), R(3, 4), "PowBackward0"),
    row("pow/fractional", lambda t, x: x.pow(2.5), P(3, 4), "PowBackward0"),
    row("pow/tensor", lambda t, x, y: x.pow(y), (P(3, 4), R(4)), "PowBackward1"),
    row("torch.pow/scalar_base", lambda t, x: t.pow(1.7, x), R(3, 4), "PowBackward2"),
    # --- binary arithmetic, broadcasting --------------------------------------------------------
    row("add", lambda t, x, y: x.add(y), (R(3, 4), R(4)), "AddBackward0"),
    row("add/alpha", lambda t, x, y: x.add(y, alpha=-2.5), (R(3, 4), R(3, 1)), "AddBackward0"),
    row("add/scalar", lambda t, x: x.add(1.5), R(3, 4), "AddBackward0"),
    row("sub", lambda t, x, y: x.sub(y), (R(3, 4), R(4)), "SubBackward0"),
    row("sub/alpha", lambda t, x, y: x.sub(y, alpha=0.5), (R(3, 1), R(4)), "SubBackward0"),
    row("subtract", lambda t, x, y: x.subtract(y), (R(3, 4), R(4)), "SubBackward0"),
    row("mul", lambda t, x, y: x.mul(y), (R(3, 4), R(4)), "MulBackward0"),
    row("mul/scalar", lambda t, x: x.mul(-1.5), R(3, 4), "MulBackward0"),
    row("multiply", lambda t, x, y: x.multiply(y), (R(2, 3, 4), R(3, 1)), "MulBackward0"),
    row("div", lambda t, x, y: x.div(y), (R(3, 4), P(4)), "DivBackward0"),
    row("div/scalar", lambda t, x: x.div(2.5), R(3, 4), "DivBackward0"),
    row("divide", lambda t, x, y: x.divide(y), (R(3, 4), P(3, 1)), "DivBackward0"),
    row("true_divide", lambda t, x, y: x.true_divide(y), (R(3, 4), P(4)), "DivBackward0"),
    row("maximum", lambda t, x, y: x.maximum(y), (R(3, 4), R(3, 4)), "MaximumBackward0"),
    row("minimum", lambda t, x, y: x.minimum(y), (R(3, 4), R(3, 4)), "MinimumBackward0"),
    row("atan2", lambda t, x, y: x.atan2(y), (R(3, 4), P(4)), "Atan2Backward0"),
    row("arctan2", lambda t, x, y: x.arctan2(y), (R(3, 4), P(4)), "Atan2Backward0"),
    row("hypot", lambda t, x, y: x.hypot(y), (R(3, 4), R(4)), "HypotBackward0"),
    row("logaddexp", lambda t, x, y: x.logaddexp(y), (R(3, 4), R(4)), "LogaddexpBackward0"),
    row("xlogy", lambda t, x, y: x.xlogy(y), (R(3, 4), P(4)), "XlogyBackward0"),
    row("xlogy/scalar", lambda t, x: x.xlogy(2.0), R(3, 4), "XlogyBackward2"),
    row("remainder", lambda t, x, y: x.remainder(y), (R(3, 4), P(4)), "RemainderBackward1"),
    row("remainder/scalar", lambda t, x: x.remainder(0.7), R(3, 4), "RemainderBackward0"),
    row("fmod", lambda t, x, y: x.fmod(y), (R(3, 4), P(4)), "FmodBackward1"),
    row("fmod/scalar", lambda t, x: x.fmod(0.7), R(3, 4), "FmodBackward0"),
    row("lerp", lambda t, x, y: x.lerp(y, 0.3), (R(3, 4), R(4)), "LerpBackward0"),
    row("lerp/tensor_weight", lambda t, x, y, w: x.lerp(y, w), (R(3, 4), R(4), B(3, 4)), "LerpBackward1"),
    row("addcmul", lambda t, x, y, z: x.addcmul(y, z, value=0.5), (R(3, 4), R(4), R(3, 1)), "AddcmulBackward0"),
    row("addcdiv", lambda t, x, y, z: x.addcdiv(y, z, value=-0.5), (R(3, 4), R(4), P(3, 1)), "AddcdivBackward0"),
    row("where", lambda t, x, y: x.where(_mask(t), y), (R(3, 4), R(4)), "WhereBackward0"),
    row("torch.where", lambda t, x, y: t.where(_mask(t), x, y), (R(3, 4), R(3, 1)), "WhereBackward0"),
    row("masked_fill", lambda t, x: x.masked_fill(_mask(t), 0.5), R(3, 4), "MaskedFillBackward0"),
    row("clamp", lambda t, x: x.clamp(-0.5, 0.7), R(3, 4), "ClampBackward1"),
    row("clamp/min", lambda t, x: x.clamp(min=0.3), R(3, 4), "ClampBackward1"),
    row("clamp/tensors", lambda t, x, lo, hi: x.clamp(lo, hi), (R(3, 4), R(4, lo=-2, hi=-0.1), R(4, lo=0.1, hi=2)),
        "ClampBackward0"),
    row("clip", lambda t, x: x.clip(-0.5, 0.7), R(3, 4), "ClampBackward1"),
    row("torch.clamp", lambda t, x: t.clamp(x, max=0.4), R(3, 4), "ClampBackward1"),
    row("clamp_min", lambda t, x: x.clamp_min(0.3), R(3, 4), "ClampMinBackward0"),
    row("clamp_max", lambda t, x: x.clamp_max(0.3), R(3, 4), "ClampMaxBackward0"),
    # --- operators -------------------------------------------------------------------------------
    row("__add__", lambda t, x, y: x + y, (R(3, 4), R(4)), "AddBackward0"),
    row("__radd__", lambda t, x: 1.5 + x, R(3, 4), "AddBackward0"),
    row("__sub__", lambda t, x, y: x - y, (R(3, 4), R(3, 1)), "SubBackward0"),
    row("__rsub__", lambda t, x: 1.5 - x, R(3, 4), "RsubBackward1"),
    row("__mul__", lambda t, x, y: x * y, (R(3, 4), R(4)), "MulBackward0"),
    row("__rmul__", lambda t, x: 2.5 * x, R(3, 4), "MulBackward0"),
    row("__truediv__", lambda t, x, y: x / y, (R(3, 4), P(4)), "DivBackward0"),
    row("__rtruediv__", lambda t, x: 2.5 / x, R(3, 4), "MulBackward0"),
    row("__pow__", lambda t, x: x ** 2, R(3, 4), "PowBackward0"),
    row("__pow__/tensor", lambda t, x, y: x ** y, (P(3, 4), R(3, 4)), "PowBackward1"),
    row("__rpow__", lambda t, x: 2.0 ** x, R(3, 4), "PowBackward2"),
    row("__neg__", lambda t, x: -x, R(3, 4), "NegBackward0"),
    row("__abs__", lambda t, x: abs(x), R(3, 4), "AbsBackward0"),
    row("__matmul__", lambda t, x, y: x @ y, (R(3, 4), R(4, 2)), "MmBackward0"),
    row("__rmatmul__", lambda t, x: t.tensor(np.arange(6.0).reshape(2, 3)).__rmatmul__(x), R(4, 2),
        "MmBackward0"),
    row("__mod__", lambda t, x: x % 0.7, R(3, 4), "RemainderBackward0"),
    row("__mod__/tensor", lambda t, x, y: x % y, (R(3, 4), P(4)), "RemainderBackward1"),
    row("__iadd__", _iop("+"), (R(3, 4), R(4)), "AddBackward0"),
    row("__isub__", _iop("-"), (R(3, 4), R(4)), "SubBackward0"),
    row("__imul__", _iop("*"), (R(3, 4), R(4)), "MulBackward0"),
    row("__itruediv__", _iop("/"), (R(3, 4), P(4)), "DivBackward0"),
    row("__ipow__", _iop("**"), (P(3, 4), R(4)), "PowBackward1"),
    row("__setitem__", _setitem, (R(3, 4), R(2)), "CopySlices"),
    row("__getitem__/int", lambda t, x: x[1], R(3, 4), "SelectBackward0"),
    row("__getitem__/slice", lambda t, x: x[:, 1:3], R(3, 4), "SliceBackward0"),
    row("__getitem__/negative_step_free", lambda t, x: x[-2:, ::2], R(3, 4), "SliceBackward0"),
    row("__getitem__/list", lambda t, x: x[[0, 2, 2]], R(3, 4), "IndexBackward0"),
    row("__getitem__/tensor", lambda t, x: x[:, _i(t, [3, 0, 3])], R(3, 4), "IndexBackward0"),
    row("__getitem__/mask", lambda t, x: x[_mask(t)], R(3, 4), "IndexBackward0"),
    row("__getitem__/none", lambda t, x: x[None, 1], R(3, 4), "SelectBackward0"),
    row("__getitem__/ellipsis", lambda t, x: x[..., 2], R(2, 3, 4), "SelectBackward0"),
    # --- reductions (dim, keepdim, negative dims) ----------------------------------------------
    row("sum", lambda t, x: x.sum(), R(3, 4), "SumBackward0"),
    row("sum/dim", lambda t, x: x.sum(-1), R(3, 4), "SumBackward1"),
    row("sum/dims_keepdim", lambda t, x: x.sum((0, -1), keepdim=True), R(2, 3, 4), "SumBackward1"),
    row("torch.sum", lambda t, x: t.sum(x, dim=1), R(3, 4), "SumBackward1"),
    row("nansum", lambda t, x: x.nansum(), R(3, 4), "NansumBackward0"),
    row("nansum/dim", lambda t, x: x.nansum(dim=-2, keepdim=True), R(3, 4), "NansumBackward0"),
    row("mean", lambda t, x: x.mean(), R(3, 4), "MeanBackward0"),
    row("mean/dim", lambda t, x: x.mean(dim=-2), R(3, 4), "MeanBackward1"),
    row("mean/keepdim", lambda t, x: x.mean(1, keepdim=True), R(2, 3, 4), "MeanBackward1"),
    row("prod", lambda t, x: x.prod(), R(2, 3), "ProdBackward0"),
    row("prod/dim", lambda t, x: x.prod(-1, keepdim=True), R(3, 4), "ProdBackward1"),
    row("max", lambda t, x: x.max(), R(3, 4), "MaxBackward1"),
    row("max/dim", lambda t, x: x.max(-1).values, R(3, 4), "MaxBackward0"),
    row("max/keepdim", lambda t, x: x.max(0, keepdim=True)[0], R(3, 4), "MaxBackward0"),
    row("max/binary", lambda t, x, y: x.max(y), (R(3, 4), R(4)), "MaximumBackward0"),
    row("min", lambda t, x: x.min(), R(3, 4), "MinBackward1"),
    row("min/dim", lambda t, x: x.min(1).values, R(3, 4), "MinBackward0"),
    row("min/binary", lambda t, x, y: x.min(y), (R(3, 4), R(3, 4)), "MinimumBackward0"),
    row("amax", lambda t, x: x.amax(), R(3, 4), "AmaxBackward0"),
    row("amax/dim", lambda t, x: x.amax(-1, keepdim=True), R(3, 4), "AmaxBackward0"),
    row("amin", lambda t, x: x.amin((0, 1)), R(2, 3, 4), "AminBackward0"),
    row("aminmax", lambda t, x: x.aminmax(dim=-1).max, R(3, 4), "AminmaxBackward0"),
    row("aminmax/min", lambda t, x: x.aminmax().min, R(3, 4), "AminmaxBackward0"),
    row("std", lambda t, x: x.std(), R(3, 4), "StdBackward0"),
    row("std/dim", lambda t, x: x.std(-1, keepdim=True), R(3, 4), "StdBackward0"),
    row("std/correction", lambda t, x: x.std(0, correction=0), R(3, 4), "StdBackward0"),
    row("var", lambda t, x: x.var(), R(3, 4), "VarBackward0"),
    row("var/dim", lambda t, x: x.var(-2, unbiased=False), R(3, 4), "VarBackward0"),
    row("norm", lambda t, x: x.norm(), R(3, 4), "LinalgVectorNormBackward0"),
    row("norm/dim", lambda t, x: x.norm(dim=-1, keepdim=True), R(3, 4), "LinalgVectorNormBackward0"),
    row("norm/p1", lambda t, x: x.norm(p=1, dim=0), R(3, 4), "LinalgVectorNormBackward0"),
    row("norm/p3", lambda t, x: x.norm(p=3), R(3, 4), "LinalgVectorNormBackward0"),
    row("logsumexp", lambda t, x: x.logsumexp(-1), R(3, 4), "LogsumexpBackward0"),
    row("logsumexp/keepdim", lambda t, x: x.logsumexp((0, 1), keepdim=True), R(3, 4), "LogsumexpBackward0"),
    row("cumsum", lambda t, x: x.cumsum(-1), R(3, 4), "CumsumBackward0"),
    row("cumprod", lambda t, x: x.cumprod(0), R(3, 4), "CumprodBackward0"),
    row("logcumsumexp", lambda t, x: x.logcumsumexp(1), R(3, 4), "LogcumsumexpBackward0"),
    row("softmax", lambda t, x: x.softmax(-1), R(3, 4), "SoftmaxBackward0"),
    row("softmax/dim0", lambda t, x: x.softmax(0), R(3, 4), "SoftmaxBackward0"),
    row("log_softmax", lambda t, x: x.log_softmax(-1), R(3, 4), "LogSoftmaxBackward0"),
    row("torch.softmax", lambda t, x: t.softmax(x, 1), R(2, 3, 4), "SoftmaxBackward0"),
    row("sort", lambda t, x: x.sort(-1).values, R(3, 4), "SortBackward0"),
    row("sort/descending", lambda t, x: x.sort(0, descending=True)[0], R(3, 4), "SortBackward0"),
    row("topk", lambda t, x: x.topk(2).values, R(3, 4), "TopkBackward0"),
    row("topk/smallest", lambda t, x: x.topk(2, dim=0, largest=False)[0], R(3, 4), "TopkBackward0"),
    row("trace", lambda t, x: x.trace(), R(3, 4), "TraceBackward0"),
    row("diff", lambda t, x: x.diff(), R(3, 4), "SubBackward0"),
    row("diff/n2_dim0", lambda t, x: x.diff(n=2, dim=0), R(4, 3), "SubBackward0"),
    # --- shape and view ops ------------------------------------------------------------------
    row("view", lambda t, x: x.view(4, 3), R(3, 4), "ViewBackward0"),
    row("view/infer", lambda t, x: x.view(-1), R(3, 4), "ViewBackward0"),
    row("view_as", lambda t, x, y: x.view_as(y), (R(3, 4), R(2, 6)), "ViewBackward0"),
    row("reshape", lambda t, x: x.reshape(2, -1), R(3, 4), "ViewBackward0"),
    row("reshape/noncontiguous", lambda t, x: x.t().reshape(12), R(3, 4), "UnsafeViewBackward0"),
    row("reshape_as", lambda t, x, y: x.reshape_as(y), (R(3, 4), R(6, 2)), "ViewBackward0"),
    row("flatten", lambda t, x: x.flatten(), R(2, 3, 4), "ViewBackward0"),
    row("flatten/dims", lambda t, x: x.flatten(1), R(2, 3, 4), "ViewBackward0"),
    row("ravel", lambda t, x: x.ravel(), R(3, 4), "ViewBackward0"),
    row("unflatten", lambda t, x: x.unflatten(1, (2, 2)), R(3, 4), "ViewBackward0"),
    row("squeeze", lambda t, x: x.squeeze(), R(3, 1, 4), "SqueezeBackward0"),
    row("squeeze/dim", lambda t, x: x.squeeze(-2), R(3, 1, 4), "SqueezeBackward1"),
    row("unsqueeze", lambda t, x: x.unsqueeze(-1), R(3, 4), "UnsqueezeBackward0"),
    row("t", lambda t, x: x.t(), R(3, 4), "TBackward0"),
    row("transpose", lambda t, x: x.transpose(0, -1), R(2, 3, 4), "TransposeBackward0"),
    row("swapaxes", lambda t, x: x.swapaxes(0, 1), R(3, 4), "TransposeBackward0"),
    row("swapdims", lambda t, x: x.swapdims(1, 2), R(2, 3, 4), "TransposeBackward0"),
    row("permute", lambda t, x: x.permute(2, 0, 1), R(2, 3, 4), "PermuteBackward0"),
    row("movedim", lambda t, x: x.movedim(0, -1), R(2, 3, 4), "PermuteBackward0"),
    row("moveaxis", lambda t, x: x.moveaxis(-1, 0), R(2, 3, 4), "PermuteBackward0"),
    row("expand", lambda t, x: x.expand(2, 3, 4), R(3, 1), "ExpandBackward0"),
    row("expand_as", lambda t, x, y: x.expand_as(y), (R(4), R(3, 4)), "ExpandBackward0"),
    row("broadcast_to", lambda t, x: x.broadcast_to((2, 3, 4)), R(1, 4), "ExpandBackward0"),
    row("repeat", lambda t, x: x.repeat(2, 1, 3), R(3, 4), "RepeatBackward0"),
    row("tile", lambda t, x: x.tile(2), R(3, 4), "RepeatBackward0"),
    row("repeat_interleave", lambda t, x: x.repeat_interleave(2, dim=-1), R(3, 4), "ViewBackward0"),
    row("repeat_interleave/flat", lambda t, x: x.repeat_interleave(2), R(3, 4), "ViewBackward0"),
    row("flip", lambda t, x: x.flip(-1), R(3, 4), "FlipBackward0"),
    row("flip/dims", lambda t, x: x.flip((0, 1)), R(3, 4), "FlipBackward0"),
    row("roll", lambda t, x: x.roll(1, -1), R(3, 4), "RollBackward0"),
    row("flip/then-view", lambda t, x: t.flip(x, dims=[1]).view(-1), R(3, 4), "ViewBackward0"),
    row("fliplr", lambda t, x: t.fliplr(x), R(3, 4), "FlipBackward0"),
    row("flipud", lambda t, x: x.flipud(), R(3, 4), "FlipBackward0"),
    row("rot90", lambda t, x: t.rot90(x), R(3, 4), "Rot90Backward0"),
    row("rot90/k2", lambda t, x: x.rot90(2, [1, 0]), R(2, 3, 4), "Rot90Backward0"),
    row("rot90/k-1", lambda t, x: t.rot90(x, -1, (0, 2)), R(2, 3, 4), "Rot90Backward0"),
    row("rot90/k0", lambda t, x: t.rot90(x, 4), R(3, 4), "Rot90Backward0"),
    row("roll/flat", lambda t, x: x.roll(5), R(3, 4), "RollBackward0"),
    row("narrow", lambda t, x: x.narrow(-1, 1, 2), R(3, 4), "SliceBackward0"),
    row("select", lambda t, x: x.select(-1, 2), R(3, 4), "SelectBackward0"),
    row("chunk", lambda t, x: x.chunk(2, -1)[1], R(3, 4), "SplitBackward0"),
    row("split", lambda t, x: x.split(2)[1], R(3, 4), "SplitBackward0"),
    row("split/sizes", lambda t, x: x.split([1, 3], dim=1)[1], R(3, 4), "SplitWithSizesBackward0"),
    row("unbind", lambda t, x: x.unbind(-1)[2], R(3, 4), "UnbindBackward0"),
    row("diag", lambda t, x: x.diag(), R(3, 4), "DiagonalBackward0_copy"),
    row("diag/embed", lambda t, x: x.diag(1), R(3), "DiagEmbedBackward0"),
    row("diagonal", lambda t, x: x.diagonal(1), R(3, 4), "DiagonalBackward0"),
    row("triu", lambda t, x: x.triu(), R(3, 4), "TriuBackward0"),
    row("tril", lambda t, x: x.tril(-1), R(3, 4), "TrilBackward0"),
    row("torch.cat", lambda t, x, y: t.cat([x, y], -1), (R(3, 4), R(3, 2)), "CatBackward0"),
    row("torch.concat", lambda t, x, y: t.concat([x, y]), (R(3, 4), R(1, 4)), "CatBackward0"),
    row("torch.stack", lambda t, x, y: t.stack([x, y], -1), (R(3, 4), R(3, 4)), "StackBackward0"),
    row("torch.hstack", lambda t, x, y: t.hstack([x, y]), (R(3, 4), R(3, 2)), "CatBackward0"),
    row("torch.vstack", lambda t, x, y: t.vstack([x, y]), (R(3, 4), R(4)), "CatBackward0"),
    # --- indexing ----------------------------------------------------------------------------
    row("gather", lambda t, x: x.gather(1, _i(t, [[0, 3], [1, 1], [2, 0]])), R(3, 4), "GatherBackward0"),
    row("index_select", lambda t, x: x.index_select(-1, _i(t, [3, 0, 3])), R(3, 4), "IndexSelectBackward0"),
    row("take", lambda t, x: x.take(_i(t, [0, 11, 5, 5])), R(3, 4), "TakeBackward0"),
    row("masked_select", lambda t, x: x.masked_select(_mask(t)), R(3, 4), "MaskedSelectBackward0"),
    row("scatter", lambda t, x, s: x.scatter(0, _i(t, [[1, 0, 2, 1]]), s), (R(3, 4), R(1, 4)), "ScatterBackward0"),
    row("scatter/value", lambda t, x: x.scatter(1, _i(t, [[1], [0], [3]]), 0.5), R(3, 4), "ScatterBackward1"),
    row("scatter_add", lambda t, x, s: x.scatter_add(1, _i(t, [[3, 3], [0, 1], [2, 2]]), s), (R(3, 4), R(3, 2)),
        "ScatterAddBackward0"),
    row("index_add", lambda t, x, s: x.index_add(0, _i(t, [2, 2]), s, alpha=1.5), (R(3, 4), R(2, 4)),
        "IndexAddBackward0"),
    row("index_fill", lambda t, x: x.index_fill(1, _i(t, [0, 2]), -0.5), R(3, 4), "IndexFillBackward0"),
    # --- products ---------------------------------------------------------------------------
    row("matmul", lambda t, x, y: x.matmul(y), (R(3, 4), R(4, 2)), "MmBackward0"),
    row("matmul/mv", lambda t, x, y: x.matmul(y), (R(3, 4), R(4)), "MvBackward0"),
    row("matmul/dot", lambda t, x, y: x.matmul(y), (R(4), R(4)), "DotBackward0"),
    row("matmul/vm", lambda t, x, y: x.matmul(y), (R(3), R(3, 4)), "SqueezeBackward4"),
    row("matmul/batched", lambda t, x, y: x.matmul(y), (R(2, 3, 4), R(2, 4, 2)), "UnsafeViewBackward0"),
    row("matmul/broadcast", lambda t, x, y: x.matmul(y), (R(2, 3, 4), R(4, 2)), "UnsafeViewBackward0"),
    row("torch.matmul", lambda t, x, y: t.matmul(x, y), (R(3, 4), R(4, 2)), "MmBackward0"),
    row("mm", lambda t, x, y: x.mm(y), (R(3, 4), R(4, 2)), "MmBackward0"),
    row("mv", lambda t, x, y: x.mv(y), (R(3, 4), R(4)), "MvBackward0"),
    row("dot", lambda t, x, y: x.dot(y), (R(4), R(4)), "DotBackward0"),
    row("outer", lambda t, x, y: x.outer(y), (R(3), R(4)), "MulBackward0"),
    row("ger", lambda t, x, y: x.ger(y), (R(3), R(4)), "MulBackward0"),
    row("bmm", lambda t, x, y: x.bmm(y), (R(2, 3, 4), R(2, 4, 2)), "BmmBackward0"),
    row("addmm", lambda t, b, x, y: b.addmm(x, y, beta=0.5, alpha=2.0), (R(2), R(3, 4), R(4, 2)), "AddmmBackward0"),
    row("kron", lambda t, x, y: x.kron(y), (R(2, 2), R(2, 3)), "UnsafeViewBackward0"),
    row("cross", lambda t, x, y: x.cross(y, dim=-1), (R(2, 3), R(2, 3)), "LinalgCrossBackward0"),
    row("torch.einsum", lambda t, x, y: t.einsum("ij,jk->ik", x, y), (R(3, 4), R(4, 2)), "ViewBackward0"),
    # --- in-place twins, on a non-leaf copy ---------------------------------------------------
    row("abs_", _ip("abs_"), R(3, 4), "AbsBackward0"),
    row("add_", _ip("add_"), (R(3, 4), R(4)), "AddBackward0"),
    row("sub_", _ip("sub_"), (R(3, 4), R(4)), "SubBackward0"),
    row("mul_", _ip("mul_"), (R(3, 4), R(4)), "MulBackward0"),
    row("div_", _ip("div_"), (R(3, 4), P(4)), "DivBackward0"),
    row("pow_", _ip("pow_", 3), R(3, 4), "PowBackward0"),
    row("neg_", _ip("neg_"), R(3, 4), "NegBackward0"),
    row("exp_", _ip("exp_"), R(3, 4), "ExpBackward0"),
    row("log_", _ip("log_"), P(3, 4), "LogBackward0"),
    row("sqrt_", _ip("sqrt_"), P(3, 4), "SqrtBackward0"),
    row("sigmoid_", _ip("sigmoid_"), R(3, 4), "SigmoidBackward0"),
    row("tanh_", _ip("tanh_"), R(3, 4), "TanhBackward0"),
    row("relu_", _ip("relu_"), R(3, 4), "ReluBackward0"),
    row("clamp_", _ip("clamp_", -0.5, 0.5), R(3, 4), "ClampBackward1"),
    row("clip_", _ip("clip_", -0.5, 0.5), R(3, 4), "ClampBackward1"),
    row("clamp_min_", _ip("clamp_min_", 0.2), R(3, 4), "ClampMinBackward0"),
    row("addcmul_", _ip("addcmul_"), (R(3, 4), R(4), R(3, 1)), "AddcmulBackward0"),
    row("addcdiv_", _ip("addcdiv_"), (R(3, 4), R(4), P(3, 1)), "AddcdivBackward0"),
    row("lerp_", _ip("lerp_", 0.25), (R(3, 4), R(4)), "LerpBackward0"),
    row("lerp_/constant_end", _ip("lerp_", lambda t: t.tensor([0.5, -1.0, 2.0, 0.25], dtype=t.float64), 0.25),
        R(3, 4), "LerpBackward0"),
    row("masked_fill_", _ip("masked_fill_", _mask, 0.5), R(3, 4), "MaskedFillBackward0"),
    row("scatter_", lambda t, x, s: _ip("scatter_", 0, _i(t, [[1, 0, 2, 1]]), s)(t, x), (R(3, 4), R(1, 4)),
        "ScatterBackward0"),
    row("scatter_add_", lambda t, x, s: _ip("scatter_add_", 0, _i(t, [[2, 0, 2, 1]]), s)(t, x), (R(3, 4), R(1, 4)),
        "ScatterAddBackward0"),
    row("index_add_", lambda t, x, s: _ip("index_add_", 1, _i(t, [3, 3]), s)(t, x), (R(3, 4), R(3, 2)),
        "IndexAddBackward0"),
    row("index_fill_", _ip("index_fill_", 0, lambda t: _i(t, [1]), 2.0), R(3, 4), "IndexFillBackward0"),
    row("copy_", lambda t, x, y: _ip("copy_", y)(t, x), (R(3, 4), R(4)), "CopyBackwards"),
    # (the in-place twins of the elementwise ops, PyTorch's names: asinh_ ... are Backward1)
    row("sin_", _ip("sin_"), R(3, 4), "SinBackward0"),
    row("cos_", _ip("cos_"), R(3, 4), "CosBackward0"),
    row("tan_", _ip("tan_"), R(3, 4), "TanBackward0"),
    row("asin_", _ip("asin_"), B(3, 4), "AsinBackward0"),
    row("acos_", _ip("acos_"), B(3, 4), "AcosBackward0"),
    row("atan_", _ip("atan_"), R(3, 4), "AtanBackward0"),
    row("sinh_", _ip("sinh_"), R(3, 4), "SinhBackward0"),
    row("cosh_", _ip("cosh_"), R(3, 4), "CoshBackward0"),
    row("exp2_", _ip("exp2_"), R(3, 4), "Exp2Backward0"),
    row("expm1_", _ip("expm1_"), R(3, 4), "Expm1Backward0"),
    row("log2_", _ip("log2_"), P(3, 4), "Log2Backward0"),
    row("log10_", _ip("log10_"), P(3, 4), "Log10Backward0"),
    row("log1p_", _ip("log1p_"), P(3, 4), "Log1PBackward0"),
    row("reciprocal_", _ip("reciprocal_"), P(3, 4), "ReciprocalBackward0"),
    row("erf_", _ip("erf_"), R(3, 4), "ErfBackward0"),
    row("sinc_", _ip("sinc_"), R(3, 4), "SincBackward0"),
    row("rsqrt_", _ip("rsqrt_"), P(3, 4), "RsqrtBackward0"),
    row("square_", _ip("square_"), R(3, 4), "PowBackward0"),
    row("floor_", _ip("floor_"), R(3, 4), "FloorBackward0"),
    row("ceil_", _ip("ceil_"), R(3, 4), "CeilBackward0"),
    row("round_", _ip("round_"), R(3, 4), "RoundBackward0"),
    row("trunc_", _ip("trunc_"), R(3, 4), "TruncBackward0"),
    row("frac_", _ip("frac_"), R(3, 4), "FracBackward0"),
    row("sign_", _ip("sign_"), R(3, 4), "SignBackward0"),
    row("unsqueeze_", _ip("unsqueeze_", 1), R(3, 4), "UnsqueezeBackward1"),
    row("squeeze_", _ip("squeeze_"), R(3, 1, 4), "SqueezeBackward3"),
    row("squeeze_/dim", _ip("squeeze_", 1), R(3, 1, 4), "SqueezeBackward4"),
    row("t_", _ip("t_"), R(3, 4), "TBackward1"),
    row("fill_", _ip("fill_", 0.5), R(3, 4), "FillBackward2"),
    row("zero_", _ip("zero_"), R(3, 4), "ZeroBackward0"),
    # --- torch.nn.functional --------------------------------------------------------------------
    row("F.relu", lambda t, x: _F(t).relu(x), R(3, 4), "ReluBackward0"),
    row("F.sigmoid", lambda t, x: _F(t).sigmoid(x), R(3, 4), "SigmoidBackward0"),
    row("F.tanh", lambda t, x: _F(t).tanh(x), R(3, 4), "TanhBackward0"),
    row("torch.erf", lambda t, x: t.erf(x), R(3, 4), "ErfBackward0"),
    row("F.softmax", lambda t, x: _F(t).softmax(x, dim=-1), R(3, 4), "SoftmaxBackward0"),
    row("F.log_softmax", lambda t, x: _F(t).log_softmax(x, dim=0), R(3, 4), "LogSoftmaxBackward0"),
    row("F.gelu", lambda t, x: _F(t).gelu(x), R(3, 4), "GeluBackward0"),
    row("F.gelu/tanh", lambda t, x: _F(t).gelu(x, approximate="tanh"), R(3, 4), "GeluBackward0"),
    row("F.silu", lambda t, x: _F(t).silu(x), R(3, 4), "SiluBackward0"),
    row("F.softplus", lambda t, x: _F(t).softplus(x, beta=2.0), R(3, 4), "SoftplusBackward0"),
    row("F.mish", lambda t, x: _F(t).mish(x), R(3, 4), "MishBackward0"),
    row("F.elu", lambda t, x: _F(t).elu(x, alpha=0.5), R(3, 4), "EluBackward0"),
    row("F.leaky_relu", lambda t, x: _F(t).leaky_relu(x, 0.2), R(3, 4), "LeakyReluBackward0"),
    row("F.hardtanh", lambda t, x: _F(t).hardtanh(x, -0.5, 0.8), R(3, 4), "HardtanhBackward0"),
    row("F.linear", lambda t, x, w, b: _F(t).linear(x, w, b), (R(3, 4), R(2, 4), R(2)), "AddmmBackward0"),
    row("F.linear/nobias", lambda t, x, w: _F(t).linear(x, w), (R(2, 3, 4), R(2, 4)), "UnsafeViewBackward0"),
    row("F.mse_loss", lambda t, x, y: _F(t).mse_loss(x, y), (R(3, 4), R(3, 4)), "MseLossBackward0"),
    row("F.mse_loss/none", lambda t, x, y: _F(t).mse_loss(x, y, reduction="none"), (R(3, 4), R(3, 4)),
        "MseLossBackward0"),
    row("F.l1_loss", lambda t, x, y: _F(t).l1_loss(x, y, reduction="sum"), (R(3, 4), R(3, 4, lo=3, hi=4)),
        "SumBackward0"),
    row("F.smooth_l1_loss", lambda t, x, y: _F(t).smooth_l1_loss(x, y, beta=0.5), (R(3, 4), R(3, 4)),
        "SmoothL1LossBackward0", 1),
    row("F.huber_loss", lambda t, x, y: _F(t).huber_loss(x, y, delta=0.7), (R(3, 4), R(3, 4)),
        "HuberLossBackward0", 1),
    row("F.binary_cross_entropy", lambda t, p, y: _F(t).binary_cross_entropy(p, y), (B(3, 4), B(3, 4)),
        "BinaryCrossEntropyBackward0"),
    row("F.binary_cross_entropy_with_logits", lambda t, x, y: _F(t).binary_cross_entropy_with_logits(x, y),
        (R(3, 4), B(3, 4)), "BinaryCrossEntropyWithLogitsBackward0"),
    row("F.cross_entropy", lambda t, x: _F(t).cross_entropy(x, _i(t, [0, 3, 1])), R(3, 4), "NllLossBackward0"),
    row("F.cross_entropy/probs", lambda t, x, p: _F(t).cross_entropy(x, p.softmax(-1)), (R(3, 4), R(3, 4)),
        "DivBackward1"),
    row("F.nll_loss", lambda t, x: _F(t).nll_loss(x, _i(t, [0, 3, 1])), R(3, 4), "NllLossBackward0"),
    row("F.layer_norm", lambda t, x, w, b: _F(t).layer_norm(x, (4,), w, b), (R(3, 4), R(4), R(4)),
        "NativeLayerNormBackward0"),
    row("F.batch_norm", lambda t, x, w, b: _F(t).batch_norm(x, None, None, w, b, training=True),
        (R(4, 3), R(3), R(3)), "NativeBatchNormBackward0"),
    row("F.batch_norm/eval", lambda t, x, w, b: _F(t).batch_norm(
        x, t.full((3,), 0.5, dtype=t.float64), t.full((3,), 2.0, dtype=t.float64), w, b),
        (R(4, 3, 2), R(3), R(3)), "NativeBatchNormBackward0"),
    row("F.group_norm", lambda t, x, w, b: _F(t).group_norm(x, 2, w, b), (R(3, 4, 2), R(4), R(4)),
        "NativeGroupNormBackward0"),
    row("F.instance_norm", lambda t, x, w, b: _F(t).instance_norm(x, weight=w, bias=b), (R(2, 3, 4), R(3), R(3)),
        "ViewBackward0"),
    row("F.instance_norm/eval", lambda t, x, w, b: _F(t).instance_norm(
        x, t.full((3,), 0.5, dtype=t.float64), t.full((3,), 2.0, dtype=t.float64), w, b, use_input_stats=False),
        (R(2, 3, 4), R(3), R(3)), "ViewBackward0"),
    row("F.embedding", lambda t, w: _F(t).embedding(_i(t, [[0, 2], [1, 2]]), w), R(3, 4), "EmbeddingBackward0"),
    row("F.embedding_bag", lambda t, w: _F(t).embedding_bag(_i(t, [0, 2, 1, 2, 0]), w, _i(t, [0, 2, 2])),
        R(3, 4), "EmbeddingBagBackward0"),
    row("F.embedding_bag/sum_2d", lambda t, w: _F(t).embedding_bag(_i(t, [[0, 2], [1, 1]]), w, mode="sum",
                                                                    padding_idx=2), R(3, 4), "EmbeddingBagBackward0"),
    row("F.embedding_bag/max", lambda t, w: _F(t).embedding_bag(_i(t, [0, 2, 1, 2]), w, _i(t, [0, 1, 4]),
                                                                 mode="max", include_last_offset=True),
        R(3, 4), "EmbeddingBagBackward0"),
    row("F.embedding_bag/weighted", lambda t, w, p: _F(t).embedding_bag(_i(t, [0, 2, 1]), w, _i(t, [0, 1]),
                                                                         mode="sum", per_sample_weights=p),
        (R(3, 4), R(3)), "EmbeddingBagBackward0", order=1),  # PyTorch has no 2nd derivative for the weights
    row("F.interpolate", lambda t, x: _F(t).interpolate(x, scale_factor=2), R(1, 2, 2, 3), "UpsampleNearest2DBackward0"),
    row("F.interpolate/nearest_1d", lambda t, x: _F(t).interpolate(x, size=5), R(2, 1, 3), "UpsampleNearest1DBackward0"),
    row("F.interpolate/nearest_exact", lambda t, x: _F(t).interpolate(x, scale_factor=1.7, mode="nearest-exact"),
        R(1, 1, 3, 2), "UpsampleNearestExact2DBackward0"),
    row("F.interpolate/linear", lambda t, x: _F(t).interpolate(x, size=7, mode="linear"), R(2, 2, 4),
        "UpsampleLinear1DBackward0"),
    row("F.interpolate/bilinear", lambda t, x: _F(t).interpolate(x, size=(3, 5), mode="bilinear"), R(1, 2, 2, 3),
        "UpsampleBilinear2DBackward0"),
    row("F.interpolate/bilinear_corners", lambda t, x: _F(t).interpolate(x, scale_factor=(1.5, 0.5), mode="bilinear",
                                                                          align_corners=True), R(1, 1, 4, 4),
        "UpsampleBilinear2DBackward0"),
    row("F.interpolate/trilinear", lambda t, x: _F(t).interpolate(x, scale_factor=2, mode="trilinear"),
        R(1, 1, 2, 2, 2), "UpsampleTrilinear3DBackward0"),
    row("F.pixel_shuffle", lambda t, x: _F(t).pixel_shuffle(x, 2), R(2, 8, 2, 3), "PixelShuffleBackward0"),
    row("F.pixel_unshuffle", lambda t, x: _F(t).pixel_unshuffle(x, 2), R(3, 4, 2), "PixelUnshuffleBackward0"),
    row("F.affine_grid", lambda t, th: _F(t).affine_grid(th, (2, 1, 3, 4), align_corners=False), R(2, 2, 3),
        "AffineGridGeneratorBackward0"),
    row("F.affine_grid/corners", lambda t, th: _F(t).affine_grid(th, (1, 3, 1, 2), align_corners=True), R(1, 2, 3),
        "AffineGridGeneratorBackward0"),
    row("F.grid_sample", lambda t, x, g: _F(t).grid_sample(x, g * 1.2, align_corners=False), (R(2, 2, 3, 4), R(2, 3, 2, 2)),
        "GridSampler2DBackward0"),
    row("F.grid_sample/border_corners", lambda t, x, g: _F(t).grid_sample(x, g * 1.3, padding_mode="border",
                                                                           align_corners=True),
        (R(1, 2, 3, 3), R(1, 2, 4, 2)), "GridSampler2DBackward0"),
    row("F.grid_sample/nearest", lambda t, x: _F(t).grid_sample(
        x, t.tensor([[[[-0.9, 0.2], [0.3, -0.35]], [[1.2, 0.05], [0.6, 0.9]]]], dtype=t.float64), mode="nearest"),
        R(1, 2, 3, 4), "GridSampler2DBackward0"),
    row("F.pad", lambda t, x: _F(t).pad(x, (1, 2, 0, 1), value=0.5), R(2, 3, 4), "ConstantPadNdBackward0"),
    row("F.pad/crop", lambda t, x: _F(t).pad(x, (-1, 2, 1, -1)), R(2, 3, 4), "ConstantPadNdBackward0"),
    row("F.pad/reflect", lambda t, x: _F(t).pad(x, (2, 1, 1, 0), mode="reflect"), R(1, 3, 4), "ReflectionPad2DBackward0"),
    row("F.pad/replicate", lambda t, x: _F(t).pad(x, (2, 1), mode="replicate"), R(2, 3), "ReplicationPad1DBackward0"),
    row("F.scaled_dot_product_attention", lambda t, q, k, v: _F(t).scaled_dot_product_attention(q, k, v),
        (R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)), "UnsafeViewBackward0"),
    row("F.normalize", lambda t, x: _F(t).normalize(x, dim=-1), R(3, 4), "DivBackward0"),
    row("F.cosine_similarity", lambda t, x, y: _F(t).cosine_similarity(x, y), (R(3, 4), R(3, 4)),
        "SumBackward1"),
    row("F.dropout", lambda t, x: _F(t).dropout(x, 0.5, training=False) * 1, R(3, 4), "MulBackward0"),
    row("torch.broadcast_tensors", lambda t, x, y: t.broadcast_tensors(x, y)[0], (R(4), R(3, 1)),
        "ExpandBackward0"),
    # convolutions and poolings (nn.functional_conv)
    row("F.conv1d", lambda t, x, w, b: _F(t).conv1d(x, w, b, stride=2, padding=1), (R(2, 2, 7), R(3, 2, 3), R(3)),
        "ConvolutionBackward0"),
    row("F.conv2d", lambda t, x, w, b: _F(t).conv2d(x, w, b, padding=1), (R(2, 2, 5, 4), R(3, 2, 3, 2), R(3)),
        "ConvolutionBackward0"),
    row("F.conv2d/groups", lambda t, x, w: _F(t).conv2d(x, w, stride=(2, 1), dilation=(1, 2), groups=2),
        (R(1, 4, 6, 6), R(4, 2, 2, 2)), "ConvolutionBackward0"),
    row("F.conv_transpose1d", lambda t, x, w: _F(t).conv_transpose1d(x, w, stride=2, output_padding=1),
        (R(2, 2, 4), R(2, 3, 3)), "ConvolutionBackward0"),
    row("F.conv_transpose2d", lambda t, x, w, b: _F(t).conv_transpose2d(x, w, b, stride=2, padding=1, groups=2),
        (R(1, 4, 3, 3), R(4, 1, 3, 3), R(2)), "ConvolutionBackward0"),
    row("F.max_pool1d", lambda t, x: _F(t).max_pool1d(x, 3, 2, 1), R(2, 2, 7), "SqueezeBackward1"),
    row("F.max_pool2d", lambda t, x: _F(t).max_pool2d(x, 2, ceil_mode=True), R(2, 2, 5, 5),
        "MaxPool2DWithIndicesBackward0"),
    row("F.avg_pool2d", lambda t, x: _F(t).avg_pool2d(x, 3, 2, 1, count_include_pad=False), R(2, 2, 5, 5),
        "AvgPool2DBackward0"),
    row("F.adaptive_avg_pool2d", lambda t, x: _F(t).adaptive_avg_pool2d(x, (2, 3)), R(2, 2, 5, 7),
        "AdaptiveAvgPool2DBackward0"),
]

# Known facade bugs, by row and by test (``name``: the grad_fn name, with and
# without PyTorch; ``backward``/``double_backward``: finite differences through
# the facade's autograd; ``check_grads``: tg.check_grads; ``torch_values`` /
# ``torch_second``: values and gradients / Hessian-vector products against
# PyTorch). Those tests of those rows are strict xfails; the rest still run.
# ``chain``: the names of grad_fn.next_functions (ours | PyTorch's)
_CHAIN = {
    "matmul/batched": "one node over both leaves | UnsafeViewBackward0 <- BmmBackward0",
    "kron": "one node over both leaves | UnsafeViewBackward0 <- MulBackward0 (PyTorch's composite)",
    "torch.einsum": "one node over both leaves | ViewBackward0 <- PermuteBackward0 <- BmmBackward0 ...",
    "F.scaled_dot_product_attention": "batched matmul: one node over both inputs | UnsafeViewBackward0 <- "
                                      "BmmBackward0 (as matmul/batched)",
}
BUGS: dict[str, dict[str, str]] = {
}
for _name, _why in _CHAIN.items():
    BUGS.setdefault(_name, {})["chain"] = "next_functions differ from PyTorch's, ours | PyTorch's: " + _why
