"""The facade's op table: one row per ``Tensor`` op.

A row names the method (and its aliases), the function that implements it (a
primitive wrapped by ``unary``, or a bespoke method of one of the op
modules), PyTorch's node name for a plain call, its in-place twin ``name_``
(and the node name that records), and which names have a ``torch.name``
function form. The methods the rows make that no op module defines are the
class ``RowOps`` (``ROW_METHODS``), which ``Tensor`` inherits with the op
modules' classes (``_tensor.py``); the rows are also the one source of the
function forms (``FUNCTIONS``) and of the prim-to-node names
``_graph.core_name`` uses. ``add_row`` adds a row from another module at run
time (the extension API: that method is set on the class then).

Import direction: ``_promote`` < ``_tensor_base`` < ``_arith`` < ``_inplace`` <
``_math`` < ``_reductions`` < ``_indexing`` < ``_shape`` < ``_ops`` <
``_tensor`` (each imports only modules to its left).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.scipy import special as tsp
from tapegrad.torch import _graph
from tapegrad.torch._arith import ArithOps as A
from tapegrad.torch._arith import scalar_first
from tapegrad.torch._convert import ConvertOps
from tapegrad.torch._creation import tensor
from tapegrad.torch._indexing import IndexingOps as X
from tapegrad.torch._inplace import InplaceOps as I
from tapegrad.torch._math import MathOps as M
from tapegrad.torch._random import RandomOps as RND
from tapegrad.torch._reductions import ReductionOps as R
from tapegrad.torch._shape import ShapeOps as S
from tapegrad.torch._tensor_base import (
    OpsBase,
    Tensor,
    TensorBase,
    _new,
    _unary_method,
    tensor_class,
)


@dataclass(frozen=True)
class Op:
    """One facade op: see the module docstring."""

    name: str
    impl: Callable[..., Any]
    node: str | None  # the grad_fn of a plain call on a float tensor that requires grad; None: none
    aliases: tuple[str, ...] = ()
    inplace: Callable[..., Any] | None = None  # the twin ``name_``
    inplace_node: str | None = None
    twin_aliases: tuple[str, ...] = ()  # aliases of the twin (``clip_``)
    functions: tuple[str, ...] = ()  # the names (this and aliases) with a ``torch.name`` form
    prim: str | None = None  # the primitive's name when one primitive makes the node
    saves: str = ""  # what PyTorch's backward of ``node`` saves (see ``_graph.register_saves``)
    variants: tuple[str, ...] = ()  # the other node names the op makes (overloads: ``x - 1`` vs ``1 - x``...)

    @property
    def twin(self) -> str | None:
        return self.name + "_" if self.inplace is not None else None


def _functions(name: str, function: bool | str) -> tuple[str, ...]:
    if function is True:
        return (name,)
    return tuple(function.split()) if function else ()


def _unary_twin(name: str, node: str, saves_output: bool) -> Callable[[Tensor], Tensor]:
    """The in-place twin of unary op ``name``: the op on the value, written
    back as node ``node`` (its result saved when PyTorch's backward reads it)."""

    def twin(self: Tensor) -> Tensor:
        def op(a: Any) -> Any:
            return getattr(_new(a), name)()._value

        return self._inplace(node, op, saves_output=saves_output)

    twin.__name__ = name + "_"
    twin.__qualname__ = f"Tensor.{name}_"
    return twin


def unary(name: str, fn: Any, node: str, *, aliases: tuple[str, ...] = (), inplace: bool = True,
          saves_output: bool | None = None, function: bool | str = True, saves: str = "",
          twin_node: str | None = None) -> Op:
    """An elementwise op of one primitive function ``fn``; the twin (with
    ``inplace``) records ``node`` too, its result saved when ``saves_output``
    (PyTorch's backward of ``exp_`` reads the result, that of ``log_`` the input)."""
    if saves_output is None:
        saves_output = saves == "out"
    twin_node = twin_node or node
    twin = _unary_twin(name, twin_node, saves_output) if inplace else None
    return Op(name, _unary_method(fn, node), node, aliases, twin,
              twin_node if inplace else None, (), _functions(name, function), fn.primitive.name, saves)


class _Twin:
    """``op(..., inplace=TWIN)``: the twin is the op on the value, written back (see ``_unary_twin``)."""


TWIN: Any = _Twin()


def op(name: str, impl: Callable[..., Any], node: str | None, *, aliases: tuple[str, ...] = (),
       inplace: Callable[..., Any] | None = None, inplace_node: str | None = None,
       twin_aliases: tuple[str, ...] = (), function: bool | str = True, prim: str | None = None,
       saves: str = "", variants: str = "") -> Op:
    """An op with bespoke logic ``impl`` (a method of an op module); ``variants``:
    the other node names it makes, space-separated. The twin ``inplace``
    (``TWIN``: the op written back, see ``_unary_twin``) records ``node``
    unless ``inplace_node`` names another."""
    if inplace is not None:
        inplace_node = inplace_node or node
        if inplace is TWIN:
            assert node is not None
            inplace = _unary_twin(name, node, "out" in saves.split())
    return Op(name, impl, node, aliases, inplace, inplace_node, twin_aliases, _functions(name, function), prim,
              saves, tuple(variants.split()))


def inplace_only(name: str, impl: Callable[..., Any], node: str, variants: str = "") -> Op:
    """An in-place op with no out-of-place form (``zero_``, ``fill_``...)."""
    return Op(name, impl, node, variants=tuple(variants.split()))


TABLE: tuple[Op, ...] = (
    # --- arithmetic (the operators are ArithOps' dunders) ---
    op("add", A.add, "AddBackward0", inplace=I.add_, prim="add"),
    op("sub", A.sub, "SubBackward0", aliases=("subtract",), inplace=I.sub_,
       function="sub subtract", prim="subtract"),
    op("mul", A.mul, "MulBackward0", aliases=("multiply",), inplace=I.mul_,
       function="mul multiply", prim="multiply", saves="0<1 1<0"),
    op("div", A.div, "DivBackward0", aliases=("divide", "true_divide"), inplace=I.div_,
       function="div divide true_divide", prim="divide", saves="0<1 1"),
    op("pow", A.pow, "PowBackward0", inplace=I.pow_, saves="0"),
    op("neg", A.neg, "NegBackward0", aliases=("negative",), inplace=I.neg_,
       function="neg negative", prim="negative"),
    op("matmul", A.matmul, "MmBackward0", saves="0<1 1<0", variants="SqueezeBackward4"),
    op("mm", A.mm, "MmBackward0", prim="matmul", saves="0<1 1<0"),
    op("mv", A.mv, "MvBackward0", saves="0<1 1<0"),
    op("dot", A.dot, "DotBackward0", saves="0<1 1<0"),
    op("outer", A.outer, "MulBackward0", aliases=("ger",), function="outer", saves="0<1 1<0"),
    op("bmm", A.bmm, "BmmBackward0", saves="0<1 1<0"),
    op("addmm", A.addmm, "AddmmBackward0", saves="1<2 2<1"),
    op("addcmul", A.addcmul, "AddcmulBackward0", inplace=I.addcmul_, saves="1<2 2<1"),
    op("addcdiv", A.addcdiv, "AddcdivBackward0", inplace=I.addcdiv_, saves="1<2 2"),
    op("lerp", A.lerp, "LerpBackward0", inplace=I.lerp_),
    # --- comparisons and tests (no grad_fn) ---
    op("eq", A.eq, None),
    op("ne", A.ne, None),
    op("lt", A.lt, None),
    op("le", A.le, None),
    op("gt", A.gt, None),
    op("ge", A.ge, None),
    op("equal", A.equal, None),
    op("allclose", A.allclose, None),
    op("isclose", A.isclose, None),
    op("isnan", A.isnan, None),
    op("isinf", A.isinf, None),
    op("isfinite", A.isfinite, None),
    op("logical_not", A.logical_not, None),
    op("logical_and", A.logical_and, None),
    op("logical_or", A.logical_or, None),
    op("logical_xor", A.logical_xor, None),
    op("bitwise_and", A.__and__, None),
    op("bitwise_or", A.__or__, None),
    op("bitwise_xor", A.__xor__, None),
    op("bitwise_not", A.__invert__, None),
    # --- elementwise math: one primitive each ---
    unary("exp", tnp.exp, "ExpBackward0", saves="out"),
    unary("exp2", tnp.exp2, "Exp2Backward0", saves="out"),
    unary("expm1", tnp.expm1, "Expm1Backward0", saves="out"),
    unary("log", tnp.log, "LogBackward0", saves="0"),
    unary("log2", tnp.log2, "Log2Backward0", saves="0"),
    unary("log10", tnp.log10, "Log10Backward0", saves="0"),
    unary("log1p", tnp.log1p, "Log1PBackward0", saves="0"),
    unary("sqrt", tnp.sqrt, "SqrtBackward0", saves="out"),
    unary("sin", tnp.sin, "SinBackward0", saves="0"),
    unary("cos", tnp.cos, "CosBackward0", saves="0"),
    unary("tan", tnp.tan, "TanBackward0", saves="out"),
    unary("asin", tnp.arcsin, "AsinBackward0", aliases=("arcsin",), function="asin", saves="0"),
    unary("acos", tnp.arccos, "AcosBackward0", aliases=("arccos",), function="acos", saves="0"),
    unary("atan", tnp.arctan, "AtanBackward0", aliases=("arctan",), function="atan", saves="0"),
    unary("sinh", tnp.sinh, "SinhBackward0", saves="0"),
    unary("cosh", tnp.cosh, "CoshBackward0", saves="0"),
    unary("tanh", tnp.tanh, "TanhBackward0", saves="out"),
    unary("asinh", tnp.arcsinh, "AsinhBackward0", saves="0", twin_node="AsinhBackward1"),
    unary("acosh", tnp.arccosh, "AcoshBackward0", saves="0", twin_node="AcoshBackward1"),
    unary("atanh", tnp.arctanh, "AtanhBackward0", saves="0", twin_node="AtanhBackward1"),
    unary("sigmoid", tsp.expit, "SigmoidBackward0", saves="out"),
    unary("reciprocal", tnp.reciprocal, "ReciprocalBackward0", saves="out"),
    unary("erf", tsp.erf, "ErfBackward0", saves="0"),
    unary("sinc", tnp.sinc, "SincBackward0", saves="0"),
    # --- elementwise math: bespoke ---
    op("rsqrt", M.rsqrt, "RsqrtBackward0", inplace=TWIN, saves="out"),
    op("square", M.square, "PowBackward0", inplace=TWIN, saves="0"),
    op("relu", M.relu, "ReluBackward0", inplace=TWIN, saves="out"),
    op("abs", M.abs, "AbsBackward0", aliases=("absolute",), inplace=TWIN, function="abs absolute", prim="absolute", saves="0"),
    op("sign", M.sign, "SignBackward0", inplace=TWIN),
    op("sgn", M.sgn, "SgnBackward0", saves="0 out"),
    op("floor", M.floor, "FloorBackward0", inplace=TWIN),
    op("ceil", M.ceil, "CeilBackward0", inplace=TWIN),
    op("round", M.round, "RoundBackward0", inplace=TWIN, variants="RoundBackward1"),
    op("trunc", M.trunc, "TruncBackward0", inplace=TWIN),
    op("frac", M.frac, "FracBackward0", inplace=TWIN),
    op("clamp", M.clamp, "ClampBackward1", aliases=("clip",), inplace=I.clamp_,
       twin_aliases=("clip_",), function="clamp clip", prim="clip", saves="0"),
    op("clamp_min", M.clamp_min, "ClampMinBackward0", inplace=I.clamp_min_,
       saves="0"),
    op("clamp_max", M.clamp_max, "ClampMaxBackward0", saves="0"),
    op("maximum", M.maximum, "MaximumBackward0", saves="0 1"),
    op("minimum", M.minimum, "MinimumBackward0", saves="0 1"),
    op("atan2", M.atan2, "Atan2Backward0", aliases=("arctan2",), function="atan2", saves="0 1"),
    op("where", M.where, "WhereBackward0", function=False),
    op("masked_fill", M.masked_fill, "MaskedFillBackward0", inplace=I.masked_fill_),
    op("softmax", M.softmax, "SoftmaxBackward0", saves="out"),
    op("log_softmax", M.log_softmax, "LogSoftmaxBackward0", saves="out"),
    op("logsumexp", M.logsumexp, "LogsumexpBackward0", prim="logsumexp", saves="0 out"),
    op("remainder", M.remainder, "RemainderBackward1", saves="0<1 1<1", variants="RemainderBackward0"),
    op("fmod", M.fmod, "FmodBackward1", saves="0<1 1<1"),
    op("hypot", M.hypot, "HypotBackward0", saves="0<0 1<1 out"),
    op("logaddexp", M.logaddexp, "LogaddexpBackward0", saves="0 1"),
    op("logit", M.logit, "LogitBackward0", saves="0"),
    op("nan_to_num", M.nan_to_num, "NanToNumBackward0", saves="0"),
    op("xlogy", M.xlogy, "XlogyBackward0", saves="0 1"),
    # --- reductions ---
    op("sum", R.sum, "SumBackward0", variants="SumBackward1"),
    op("nansum", R.nansum, "NansumBackward0", saves="0"),
    op("mean", R.mean, "MeanBackward0", variants="MeanBackward1"),
    op("prod", R.prod, "ProdBackward0", saves="0 out"),
    op("max", R.max, "MaxBackward1", function=False, prim="max", saves="0 out"),  # torch.max / torch.min: __init__.py
    op("min", R.min, "MinBackward1", function=False, prim="min", saves="0 out"),
    op("amax", R.amax, "AmaxBackward0", saves="0 out"),
    op("amin", R.amin, "AminBackward0", saves="0 out"),
    op("argmax", R.argmax, None),
    op("argmin", R.argmin, None),
    op("argsort", R.argsort, None),
    op("unique", R.unique, "Unique2Backward0", variants="UniqueDimBackward0"),
    op("sort", R.sort, "SortBackward0"),
    op("topk", R.topk, "TopkBackward0"),
    op("var", R.var, "VarBackward0", saves="0"),
    op("std", R.std, "StdBackward0", saves="0 out"),
    op("norm", R.norm, "LinalgVectorNormBackward0", saves="0 out"),
    op("all", R.all, None),
    op("any", R.any, None),
    op("count_nonzero", R.count_nonzero, None),
    op("bincount", R.bincount, None),
    op("cumsum", R.cumsum, "CumsumBackward0"),
    op("cumprod", R.cumprod, "CumprodBackward0", saves="0 out"),
    op("trace", R.trace, "TraceBackward0"),
    op("diag", R.diag, "DiagonalBackward0_copy", variants="DiagEmbedBackward0"),
    op("diagonal", R.diagonal, "DiagonalBackward0"),
    op("triu", R.triu, "TriuBackward0"),
    op("tril", R.tril, "TrilBackward0"),
    op("aminmax", R.aminmax, "AminmaxBackward0", saves="0 out"),
    op("logcumsumexp", R.logcumsumexp, "LogcumsumexpBackward0", saves="0 out"),
    # --- indexing ops ---
    op("index_select", X.index_select, "IndexSelectBackward0"),
    op("gather", X.gather, "GatherBackward0", saves="0"),
    op("nonzero", X.nonzero, None),
    op("take", X.take, "TakeBackward0", saves="0"),
    op("masked_select", X.masked_select, "MaskedSelectBackward0", saves="0"),
    op("scatter", X.scatter, "ScatterBackward0", inplace=I.scatter_,
       variants="ScatterBackward1"),
    op("scatter_add", X.scatter_add, "ScatterAddBackward0", inplace=I.scatter_add_),
    op("index_add", X.index_add, "IndexAddBackward0", inplace=I.index_add_,
       saves="1<1"),
    op("index_fill", X.index_fill, "IndexFillBackward0", inplace=I.index_fill_,
       variants="IndexFillBackward1"),
    # --- shape ---
    op("view", S.view, "ViewBackward0", function=False, prim="reshape"),
    op("reshape", S.reshape, "ViewBackward0", variants="ReshapeAliasBackward0"),
    op("view_as", S.view_as, "ViewBackward0", function=False),
    op("reshape_as", S.reshape_as, "ViewBackward0", function=False),
    op("flatten", S.flatten, "ViewBackward0"),
    op("unflatten", S.unflatten, "ViewBackward0"),
    op("ravel", S.ravel, "ViewBackward0", function=False),
    op("t", S.t, "TBackward0", inplace=I.t_, inplace_node="TBackward1"),
    op("transpose", S.transpose, "TransposeBackward0", aliases=("swapaxes", "swapdims"), function="transpose swapaxes"),
    op("permute", S.permute, "PermuteBackward0", prim="transpose"),
    op("movedim", S.movedim, "PermuteBackward0", aliases=("moveaxis",), function="movedim moveaxis"),
    op("squeeze", S.squeeze, "SqueezeBackward0", inplace=I.squeeze_, inplace_node="SqueezeBackward3",
       variants="SqueezeBackward1 SqueezeBackward2 SqueezeBackward4 SqueezeBackward5"),
    op("unsqueeze", S.unsqueeze, "UnsqueezeBackward0", inplace=I.unsqueeze_, inplace_node="UnsqueezeBackward1"),
    op("expand", S.expand, "ExpandBackward0", function=False),
    op("expand_as", S.expand_as, "ExpandBackward0", function=False),
    op("broadcast_to", S.broadcast_to, "ExpandBackward0", function=False, prim="broadcast_to"),
    op("repeat", S.repeat, "RepeatBackward0", function=False),
    op("flip", S.flip, "FlipBackward0"),
    op("fliplr", S.fliplr, "FlipBackward0"),
    op("flipud", S.flipud, "FlipBackward0"),
    op("rot90", S.rot90, "Rot90Backward0"),
    op("roll", S.roll, "RollBackward0"),
    op("unbind", S.unbind, "UnbindBackward0"),
    op("split", S.split, "SplitBackward0", variants="SplitWithSizesBackward0"),
    op("chunk", S.chunk, "SplitBackward0"),
    op("narrow", S.narrow, "SliceBackward0"),
    op("select", S.select, "SelectBackward0"),
    op("kron", S.kron, "UnsafeViewBackward0"),
    op("cross", S.cross, "LinalgCrossBackward0", saves="0<1 1<0"),
    op("repeat_interleave", S.repeat_interleave, "ViewBackward0"),
    op("tile", S.tile, "RepeatBackward0"),
    op("diff", S.diff, "SubBackward0"),
    # --- class-body methods with a function form ---
    op("clone", ConvertOps.clone, "CloneBackward0", prim="copy"),
    op("detach", TensorBase.detach, None),
    # --- in place only ---
    inplace_only("zero_", I.zero_, "ZeroBackward0"),
    inplace_only("fill_", I.fill_, "FillBackward2", variants="FillBackward3"),
    inplace_only("copy_", I.copy_, "CopyBackwards"),
    inplace_only("normal_", I.normal_, "NormalBackward0"),
    inplace_only("uniform_", I.uniform_, "UniformBackward0"),
    # --- sampling ---
    op("bernoulli", RND.bernoulli, "BernoulliBackward0"),
    inplace_only("bernoulli_", RND.bernoulli_, "BernoulliBackward2", variants="BernoulliBackward1"),
    op("multinomial", RND.multinomial, None),
)

# What PyTorch's backward saves (see ``_graph.register_saves``) for the nodes
# no row makes: other overloads, ``nn.functional``, in-place forms. Read off
# PyTorch 2.x (modify each input, or the output, in place and call backward).
# The node names made by code with no row of its own (indexing, creation
# functions, conversions, nn.functional, the graph's own nodes). With the rows'
# names and variants and SAVES, every node name the facade makes is declared
# in this module (tests/test_torch_op_table.py checks the package for others).
OTHER_NODES = frozenset({
    "AliasBackward0", "IndexBackward0", "IndexPutBackward0",  # indexing, x[...] = v
    "CatBackward0", "StackBackward0",  # torch.cat / torch.stack
    "ToCopyBackward0", "RealBackward0", "ImagBackward0",  # .to(), .real, .imag
    "RsubBackward1",  # 1 - x
    "DivBackward1",  # F.cross_entropy's mean over probability targets
    "AsStridedBackward0", "SumToSizeBackward0",  # a view read again after its base changed; broadcasting
    "LinalgInvExBackward0", "LinalgDetBackward0", "LinalgSlogdetBackward0", "LinalgSolveExBackward0",  # linalg.py
    "LinalgCholeskyExBackward0", "LinalgQrBackward0", "LinalgEighBackward0", "LinalgSvdBackward0",
    "EmbeddingBackward0",  # F.embedding (nn/functional_extra.py; F.embedding_bag's node: SAVES)
    "UpsampleNearest1DBackward0", "UpsampleNearest2DBackward0", "UpsampleNearest3DBackward0",  # F.interpolate
    "UpsampleNearestExact1DBackward0", "UpsampleNearestExact2DBackward0", "UpsampleNearestExact3DBackward0",
    "UpsampleLinear1DBackward0", "UpsampleBilinear2DBackward0", "UpsampleTrilinear3DBackward0",
    "PixelShuffleBackward0", "PixelUnshuffleBackward0",  # F.pixel_shuffle / pixel_unshuffle
    "ConstantPadNdBackward0",  # F.pad (reflect, replicate: SAVES; circular: CopySlices)
    "AffineGridGeneratorBackward0",  # F.affine_grid (F.grid_sample's node: SAVES) (nn/functional_resample.py)
    "NormalBackward1", "NormalBackward2", "NormalBackward3", "PoissonBackward0",  # torch.normal, poisson (_random.py)
})


SAVES: dict[str, str] = {
    "ClampBackward0": "0 1 2", "PowBackward1": "0 1 out", "PowBackward2": "0 out", "ProdBackward1": "0 out",
    "XlogyBackward1": "0", "XlogyBackward2": "0", "LerpBackward1": "0<2 1<2 2",
    "BinaryCrossEntropyBackward0": "0 1", "BinaryCrossEntropyWithLogitsBackward0": "0 1", "EluBackward0": "0",
    "EluBackward1": "out", "GeluBackward0": "0", "HardtanhBackward0": "0", "HuberLossBackward0": "0 1",
    "LeakyReluBackward0": "0", "LeakyReluBackward1": "out", "MishBackward0": "0", "MseLossBackward0": "0 1",
    "NativeBatchNormBackward0": "0 1", "NativeGroupNormBackward0": "0 1", "NativeLayerNormBackward0": "0 1 2", "NllLossBackward0": "0", "SiluBackward0": "0",
    "SmoothL1LossBackward0": "0 1", "SoftplusBackward0": "0",
    "ConvolutionBackward0": "0 1", "MaxPool2DWithIndicesBackward0": "0", "AvgPool2DBackward0": "0",
    "AdaptiveAvgPool2DBackward0": "0",  # (nn.functional_conv)
    "EmbeddingBagBackward0": "0<1 1", "GridSampler2DBackward0": "0 1",  # (nn.functional_extra, _resample)
    "ReflectionPad1DBackward0": "0", "ReflectionPad2DBackward0": "0", "ReflectionPad3DBackward0": "0",
    "ReplicationPad1DBackward0": "0", "ReplicationPad2DBackward0": "0", "ReplicationPad3DBackward0": "0",
}

# The op-family classes ``Tensor`` derives from (``_tensor.py``), in order of
# precedence, before ``RowOps`` (first) and ``TensorBase`` (last).
FAMILIES: tuple[type, ...] = (ConvertOps, S, X, R, M, I, A, RND)
_NOT_METHODS = frozenset({"__module__", "__doc__", "__dict__", "__weakref__", "__qualname__", "__hash__",
                          "__annotations__", "__firstlineno__", "__static_attributes__", "__orig_bases__"})


def _row_names(row: Op) -> dict[str, Callable[..., Any]]:
    """The methods ``row`` gives ``Tensor``: name -> function."""
    out = dict.fromkeys((row.name, *row.aliases), row.impl)
    if row.inplace is not None:
        out.update(dict.fromkeys((row.name + "_", *row.twin_aliases), row.inplace))
    return out


def _check_families() -> None:
    """Each public method of an op-family class is a row's (the table lists every op)."""
    names: set[str] = set()
    for row in TABLE:
        names.update(_row_names(row))
    for family in FAMILIES[1:]:
        for name in vars(family):
            if not name.startswith("_") and name not in names:
                raise RuntimeError(f"tapegrad.torch: {family.__name__}.{name} has no row in the op table")


def _row_methods() -> dict[str, Callable[..., Any]]:
    """The methods the rows make that no op-family class holds under that
    name (the unary ops, the aliases, the twins made by ``TWIN``): name -> function."""
    out: dict[str, Callable[..., Any]] = {}
    for row in TABLE:
        for name, fn in _row_names(row).items():
            if not any(vars(f).get(name) is fn for f in (*FAMILIES, TensorBase)):
                out[name] = fn
    return out


def _register(row: Op) -> dict[str, Callable[..., Any]]:
    """Register ``row``'s node names with ``_graph``; return its function forms, name -> function."""
    if row.prim is not None and row.node is not None:
        _graph.register_core_name(row.prim, row.node)
    if row.saves and row.node is not None:
        _graph.register_saves(row.node, row.saves)
    methods = _row_names(row)
    return {name: _function_form(name, methods[name]) for name in row.functions}


# PyTorch's function forms of in-place methods (``torch.sin_(x)`` is ``x.sin_()``): the
# ones torch 2.13 has whose method the facade has
INPLACE_FUNCTIONS = tuple("""abs_ acos_ acosh_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_min_ clip_
cos_ cosh_ detach_ erf_ exp2_ exp_ expm1_ fill_ floor_ frac_ log10_ log1p_ log2_ log_ neg_ reciprocal_
relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ zero_""".split())


def _named_method(name: str) -> Callable[..., Any]:
    """The method ``name`` of whatever tensor it is called on (``Tensor`` is made after this module)."""
    return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)


def _register_all() -> dict[str, Callable[..., Any]]:
    """Register every row's node names (and ``SAVES``) with ``_graph``; return the function forms."""
    _check_families()
    for node, spec in SAVES.items():
        _graph.register_saves(node, spec)
    forms: dict[str, Callable[..., Any]] = {}
    for row in TABLE:
        forms.update(_register(row))
    for name in INPLACE_FUNCTIONS:
        forms[name] = _function_form(name, _named_method(name))
    return forms


def add_row(row: Op) -> dict[str, Callable[..., Any]]:
    """Add one op to the facade after import: a row made by ``unary`` or
    ``op``, as the rows of ``TABLE`` are (a primitive defined in another
    module: see docs/extending.md). This is the extension API: its method,
    aliases and twin are set on ``Tensor`` at run time (so, unlike the
    table's, a type checker does not see them); returns its ``torch.name``
    forms, name -> function, for the caller to export. Refuses a name
    ``Tensor`` already has."""
    cls = tensor_class()
    methods = _row_names(row)
    for name in methods:
        if hasattr(cls, name):
            raise ValueError(f"tapegrad.torch: Tensor.{name} exists already")
    for name, fn in methods.items():
        setattr(cls, name, fn)
    return _register(row)


_SCALAR_TYPE = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "uint8": "Byte",
                "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}


def write_out(name: str, out: Any, fn: Callable[..., Any], input: Any, args: tuple[Any, ...],  # noqa: A002
              kwargs: dict[str, Any]) -> Any:
    """``torch.name(input, *args, out=out)``: the result written into ``out``
    (resized when its shape differs, with PyTorch's warning), which is returned.
    As in PyTorch, no gradient: an error when an argument requires grad."""
    import warnings

    from tapegrad.torch.grad_mode import is_grad_enabled, no_grad

    if out is None:
        return fn(input, *args, **kwargs)
    if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in (input, *args, out)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    with no_grad():
        r = fn(input, *args, **kwargs)
    if isinstance(r, tuple):  # (values, indices) forms: out is a tuple of tensors
        for o, x in zip(out, r, strict=True):
            write_out(name, o, lambda t: t, x, (), {})
        return out
    rv = np.asarray(r._value)
    ov = out._value
    if not np.can_cast(rv.dtype, ov.dtype, "same_kind"):
        raise RuntimeError(f"result type {_SCALAR_TYPE.get(rv.dtype.name, rv.dtype.name)} can't be cast to the "
                           f"desired output type {_SCALAR_TYPE.get(ov.dtype.name, ov.dtype.name)}")
    if rv.shape == ov.shape:
        with no_grad():
            out.copy_(r)
        return out
    if ov.size:
        warnings.warn(f"An output with one or more elements was resized since it had shape {list(ov.shape)}, "
                      f"which does not match the required output shape {list(rv.shape)}. This behavior is "
                      "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                      "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                      "elements with t.resize_(0).", UserWarning, stacklevel=3)
    out._value = rv.astype(ov.dtype)
    _graph.bump(out)
    return out


def _function_form(name: str, method: Callable[..., Any]) -> Callable[..., Any]:

    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if "out" in kwargs:
            return write_out(name, kwargs.pop("out"), fn, input, args, kwargs)
        if isinstance(input, (bool, int, float, complex)) and args and isinstance(args[0], Tensor):
            return scalar_first(name, input, args[0], *args[1:], **kwargs)
        if not isinstance(input, Tensor):
            input = tensor(input)  # noqa: A001
        return method(input, *args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)``: the same as ``input.{name}(...)``."
    return fn


def missing_attribute(self: Tensor, name: str) -> Any:
    """``Tensor.__getattr__`` (called only on a miss): a PyTorch method the
    facade lacks raises an ``AttributeError`` that says so."""
    if hasattr(type(self), name):  # a property that raised AttributeError: its own error
        return object.__getattribute__(self, name)
    if name.startswith("_"):
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")
    raise AttributeError(f"'Tensor' object has no attribute '{name}': "
                         f"tapegrad.torch does not provide Tensor.{name} (yet)")


FUNCTIONS = _register_all()
ROW_METHODS = _row_methods()
_ROW_DOC = ("The op table's family class: the methods its rows make that no op module's class holds "
            "(the unary ops, the aliases, the twins made by ``TWIN``).")

if TYPE_CHECKING:
    class RowOps(OpsBase):
        # ROW_METHODS, declared (tests/test_torch_op_table.py checks it is the same set)
        bitwise_and = A.__and__
        bitwise_or = A.__or__
        bitwise_xor = A.__xor__
        bitwise_not = A.__invert__
        def exp(self) -> Tensor: ...
        def exp_(self) -> Tensor: ...
        def exp2(self) -> Tensor: ...
        def exp2_(self) -> Tensor: ...
        def expm1(self) -> Tensor: ...
        def expm1_(self) -> Tensor: ...
        def log(self) -> Tensor: ...
        def log_(self) -> Tensor: ...
        def log2(self) -> Tensor: ...
        def log2_(self) -> Tensor: ...
        def log10(self) -> Tensor: ...
        def log10_(self) -> Tensor: ...
        def log1p(self) -> Tensor: ...
        def log1p_(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def sqrt_(self) -> Tensor: ...
        def sin(self) -> Tensor: ...
        def sin_(self) -> Tensor: ...
        def cos(self) -> Tensor: ...
        def cos_(self) -> Tensor: ...
        def tan(self) -> Tensor: ...
        def tan_(self) -> Tensor: ...
        def asin(self) -> Tensor: ...
        def arcsin(self) -> Tensor: ...
        def asin_(self) -> Tensor: ...
        def acos(self) -> Tensor: ...
        def arccos(self) -> Tensor: ...
        def acos_(self) -> Tensor: ...
        def atan(self) -> Tensor: ...
        def arctan(self) -> Tensor: ...
        def atan_(self) -> Tensor: ...
        def sinh(self) -> Tensor: ...
        def sinh_(self) -> Tensor: ...
        def cosh(self) -> Tensor: ...
        def cosh_(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def tanh_(self) -> Tensor: ...
        def asinh(self) -> Tensor: ...
        def asinh_(self) -> Tensor: ...
        def acosh(self) -> Tensor: ...
        def acosh_(self) -> Tensor: ...
        def atanh(self) -> Tensor: ...
        def atanh_(self) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def sigmoid_(self) -> Tensor: ...
        def reciprocal(self) -> Tensor: ...
        def reciprocal_(self) -> Tensor: ...
        def erf(self) -> Tensor: ...
        def erf_(self) -> Tensor: ...
        def sinc(self) -> Tensor: ...
        def sinc_(self) -> Tensor: ...
        def rsqrt_(self) -> Tensor: ...
        def square_(self) -> Tensor: ...
        def relu_(self) -> Tensor: ...
        def abs_(self) -> Tensor: ...
        def sign_(self) -> Tensor: ...
        def floor_(self) -> Tensor: ...
        def ceil_(self) -> Tensor: ...
        def round_(self) -> Tensor: ...
        def trunc_(self) -> Tensor: ...
        def frac_(self) -> Tensor: ...
else:
    RowOps = type("RowOps", (), {"__module__": __name__, "__qualname__": "RowOps", "__doc__": _ROW_DOC,
                                 **ROW_METHODS})
