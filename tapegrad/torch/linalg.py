"""``torch.linalg`` (and ``torch.svd``) on ``tapegrad.numpy.linalg``.

Each function is one node named as PyTorch names it (``LinalgInvExBackward0``,
``LinalgSvdBackward0``...); the multi-output ones return PyTorch's named
tuples (``torch.return_types.linalg_svd(U=..., S=..., Vh=...)``).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import tapegrad.numpy as tnp
from tapegrad.torch._creation import tensor
from tapegrad.torch._missing import missing_names
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _multi, _result

__all__ = ["cholesky", "det", "eigh", "inv", "matrix_norm", "norm", "qr", "slogdet", "solve", "svd", "svdvals",
           "vector_norm"]


class _ReturnType(tuple):
    """A PyTorch named result: fields by name and index, PyTorch's repr."""

    _name = ""
    _fields: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:
        if name in self._fields:
            return self[self._fields.index(name)]
        raise AttributeError(f"'torch.return_types.{self._name}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self, strict=True))
        return f"torch.return_types.{self._name}(\n{body})"


def _returns(name: str, *fields: str) -> type[_ReturnType]:
    return type(name, (_ReturnType,), {"_name": name, "_fields": fields, "__slots__": ()})


SvdResult = _returns("linalg_svd", "U", "S", "Vh")
TorchSvdResult = _returns("svd", "U", "S", "V")
EighResult = _returns("linalg_eigh", "eigenvalues", "eigenvectors")
QrResult = _returns("linalg_qr", "Q", "R")
SlogdetResult = _returns("linalg_slogdet", "sign", "logabsdet")


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x)


def inv(A: Any) -> Tensor:  # noqa: N803  (PyTorch's names)
    A = _t(A)  # noqa: N806
    return _result(tnp.linalg.inv(A._value), "LinalgInvExBackward0", (A,))


def det(A: Any) -> Tensor:  # noqa: N803
    A = _t(A)  # noqa: N806
    return _result(tnp.linalg.det(A._value), "LinalgDetBackward0", (A,))


def slogdet(A: Any) -> Any:  # noqa: N803
    A = _t(A)  # noqa: N806
    sign, logabsdet = tnp.linalg.slogdet(A._value)
    return SlogdetResult(_multi((sign, logabsdet), "LinalgSlogdetBackward0", (A,)))


def solve(A: Any, B: Any, *, left: builtins.bool = True) -> Tensor:  # noqa: N803
    A, B = _t(A), _t(B)  # noqa: N806
    if not left:
        raise NotImplementedError("tapegrad.torch: linalg.solve(left=False) is not provided (yet)")
    return _result(tnp.linalg.solve(A._value, B._value), "LinalgSolveExBackward0", (A, B))


def cholesky(A: Any, *, upper: builtins.bool = False) -> Tensor:  # noqa: N803
    A = _t(A)  # noqa: N806
    return _result(tnp.linalg.cholesky(A._value, upper=upper), "LinalgCholeskyExBackward0", (A,))


def qr(A: Any, mode: str = "reduced") -> Any:  # noqa: N803
    A = _t(A)  # noqa: N806
    q, r = tnp.linalg.qr(A._value, mode=mode)
    return QrResult(_multi((q, r), "LinalgQrBackward0", (A,)))


def eigh(A: Any, UPLO: str = "L") -> Any:  # noqa: N803
    A = _t(A)  # noqa: N806
    w, v = tnp.linalg.eigh(A._value, UPLO=UPLO)
    return EighResult(_multi((w, v), "LinalgEighBackward0", (A,)))


def eigvalsh(A: Any, UPLO: str = "L") -> Tensor:  # noqa: N803
    return eigh(A, UPLO)[0]  # type: ignore[no-any-return]


def svd(A: Any, full_matrices: builtins.bool = True) -> Any:  # noqa: N803
    A = _t(A)  # noqa: N806
    u, s, vh = tnp.linalg.svd(A._value, full_matrices=full_matrices)
    return SvdResult(_multi((u, s, vh), "LinalgSvdBackward0", (A,)))


def svdvals(A: Any) -> Tensor:  # noqa: N803
    return svd(A, full_matrices=False)[1]  # type: ignore[no-any-return]


def torch_svd(input: Any, some: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:  # noqa: A002
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``), reduced unless ``some=False``."""
    u, s, vh = svd(input, full_matrices=not some)
    return TorchSvdResult((u, s, vh.transpose(-2, -1)))


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:  # noqa: A002
    return _t(x).norm(ord, dim, keepdim)  # type: ignore[no-any-return]


def matrix_norm(A: Any, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),  # noqa: A002, N803
                keepdim: builtins.bool = False) -> Tensor:
    A = _t(A)  # noqa: N806
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A if tuple(dim) in ((-2, -1), (A.ndim - 2, A.ndim - 1)) else A.movedim(dim, (-2, -1)))
        r = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        return r.unsqueeze(-1).unsqueeze(-1) if keepdim else r  # type: ignore[no-any-return]
    return _result(tnp.linalg.norm(A._value, ord=ord, axis=tuple(dim), keepdims=keepdim),
                   "AmaxBackward0" if ord in (1, math.inf) else "AminBackward0", (A,))


def norm(A: Any, ord: Any = None, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:  # noqa: A002, N803
    """The vector 2-norm of the flattened input (``ord=None``), else the
    matrix norm of a 2-D input (or over a pair of ``dim``), else a vector norm."""
    A = _t(A)  # noqa: N806
    if ord is None:
        return vector_norm(A, 2, dim, keepdim)
    matrix = (dim is None and A.ndim == 2) or (isinstance(dim, (tuple, list)) and len(dim) == 2)
    if matrix or isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else tuple(dim), keepdim)
    return vector_norm(A, ord, dim, keepdim)

__getattr__ = missing_names(__name__, "torch.linalg")
