"""``torch.nn.functional``'s resampling ops (re-exported by ``functional``):
``interpolate`` (modes nearest, nearest-exact, linear, bilinear, trilinear),
``pixel_shuffle``, ``pixel_unshuffle``, ``pad`` (constant, reflect,
replicate, circular), and the spatial transformer's ``affine_grid`` and
``grid_sample`` (2-d; bilinear or nearest; zeros or border padding).

Each is composed of differentiable ``take``/``reshape``/``transpose``/``pad``
steps along the spatial dimensions, recorded as one ``grad_fn`` named as
PyTorch's (``UpsampleBilinear2DBackward0``, ``PixelShuffleBackward0``,
``ConstantPadNdBackward0``, ``ReflectionPad2DBackward0``, ...). Source
indices and interpolation weights follow PyTorch's CPU kernels (an explicit
``scale_factor`` is used as given unless ``recompute_scale_factor=True``),
computed in the input's floating dtype.

Examples:
    >>> F.interpolate(torch.arange(4.0).reshape(1, 1, 4), size=6, mode="linear")
    tensor([[[0.0000, 0.5000, 1.1667, 1.8333, 2.5000, 3.0000]]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import tapegrad.numpy as tnp
from tapegrad.core.traced import value as _plain
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _result

__all__ = ["affine_grid", "grid_sample", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}
# grad_fn names by (mode, number of spatial dimensions)
_NODE = {("nearest", 1): "UpsampleNearest1DBackward0", ("nearest", 2): "UpsampleNearest2DBackward0",
         ("nearest", 3): "UpsampleNearest3DBackward0", ("nearest-exact", 1): "UpsampleNearestExact1DBackward0",
         ("nearest-exact", 2): "UpsampleNearestExact2DBackward0",
         ("nearest-exact", 3): "UpsampleNearestExact3DBackward0", ("linear", 1): "UpsampleLinear1DBackward0",
         ("bilinear", 2): "UpsampleBilinear2DBackward0", ("trilinear", 3): "UpsampleTrilinear3DBackward0",
         ("reflect", 1): "ReflectionPad1DBackward0", ("reflect", 2): "ReflectionPad2DBackward0",
         ("reflect", 3): "ReflectionPad3DBackward0", ("replicate", 1): "ReplicationPad1DBackward0",
         ("replicate", 2): "ReplicationPad2DBackward0", ("replicate", 3): "ReplicationPad3DBackward0",
         ("circular", 1): "CopySlices", ("circular", 2): "CopySlices", ("circular", 3): "CopySlices"}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")


def _spatial(arg: Any, k: int, name: str) -> list[Any]:
    if isinstance(arg, (list, tuple)):
        if len(arg) != k:
            raise ValueError(f"Input and {name} must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(arg)} and output size of {list(arg)}. Please "
                             f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                             f"(o1, o2, ...,oK) format.")
        return list(arg)
    return [arg] * k


def _source(dst: np.ndarray, n_in: int, n_out: int, scale: float | None, mode: str, align_corners: bool,
            dt: Any) -> np.ndarray:
    """PyTorch's source coordinate of each output index ``dst`` (in dtype ``dt``)."""
    if mode in ("nearest", "nearest-exact"):
        ratio = dt.type(1.0 / scale) if scale is not None and scale > 0 else dt.type(n_in / n_out)
        off = dt.type(0.5) if mode == "nearest-exact" else dt.type(0.0)
        return np.minimum(np.floor((dst.astype(dt) + off) * ratio).astype(np.int64), n_in - 1)
    if align_corners:
        ratio = dt.type((n_in - 1) / (n_out - 1)) if n_out > 1 else dt.type(0.0)
        return dst.astype(dt) * ratio
    ratio = dt.type(1.0 / scale) if scale is not None and scale > 0 else dt.type(n_in / n_out)
    return np.maximum(ratio * (dst.astype(dt) + dt.type(0.5)) - dt.type(0.5), dt.type(0.0))


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resample the spatial dimensions (all after the first two) of
    ``input`` to ``size``, or to ``floor(in * scale_factor)``, by ``mode``:
    "nearest" (PyTorch's legacy floor rule), "nearest-exact", or "linear" /
    "bilinear" / "trilinear" for 3-d / 4-d / 5-d input (``align_corners``:
    the corner pixels' centres line up). Returns the resampled tensor."""
    k = input.dim() - 2
    if mode not in _MODES:
        if mode in ("bicubic", "area"):
            raise NotImplementedError(f"tapegrad.torch: interpolate(mode={mode!r}) is not supported")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("tapegrad.torch: interpolate(antialias=True) is not supported")
    if mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if k < 1 or k > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _LINEAR and _LINEAR[mode] != k:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR[mode] + 2}D input")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        out_sizes = [int(s) for s in _spatial(size, k, "output size")]
        scales: list[float | None] = [None] * k
    elif scale_factor is not None:
        factors = [float(f) for f in _spatial(scale_factor, k, "scale_factor")]
        out_sizes = [math.floor(n * f) for n, f in zip(in_sizes, factors)]
        scales = [None] * k if recompute_scale_factor else list(factors)
    else:
        raise ValueError("either size or scale_factor should be defined")
    x = input._value
    dt = np.dtype(_plain(x).dtype)
    if dt.kind != "f":
        dt = np.dtype(np.float32)
    for d, (n_in, n_out, sc) in enumerate(zip(in_sizes, out_sizes, scales)):
        axis = 2 + d
        src = _source(np.arange(n_out), n_in, n_out, sc, mode, bool(align_corners), dt)
        if mode in ("nearest", "nearest-exact"):
            x = tnp.take(x, src, axis=axis)
            continue
        i0 = np.floor(src).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        l1 = (src - i0.astype(dt)).astype(dt)
        l0 = (dt.type(1.0) - l1).astype(dt)
        shape = [1] * input.dim()
        shape[axis] = n_out
        x = tnp.take(x, i0, axis=axis) * l0.reshape(shape) + tnp.take(x, i1, axis=axis) * l1.reshape(shape)
    return _result(x, _NODE[mode, k], (input,))


def _shuffle_checks(input: Tensor, factor: int, what: str, arg: str) -> None:
    if input.dim() < 3:
        raise RuntimeError(f"{what} expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{what} expects a positive {arg}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)`` (``r`` the
    ``upscale_factor``); returns the rearranged tensor."""
    r = upscale_factor
    _shuffle_checks(input, r, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = tnp.reshape(input._value, (*lead, c // (r * r), r, r, h, w))
    x = tnp.transpose(x, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return _result(tnp.reshape(x, (*lead, c // (r * r), h * r, w * r)), "PixelShuffleBackward0", (input,))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)`` (``r`` the
    ``downscale_factor``), the inverse of ``pixel_shuffle``."""
    r = downscale_factor
    _shuffle_checks(input, r, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = tnp.reshape(input._value, (*lead, c, h // r, r, w // r, r))
    x = tnp.transpose(x, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return _result(tnp.reshape(x, (*lead, c * r * r, h // r, w // r)), "PixelUnshuffleBackward0", (input,))


def _pad_index(n: int, left: int, right: int, mode: str) -> np.ndarray:
    i = np.arange(-left, n + right)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return np.mod(i, n)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2``
    dimensions: ``pad`` is ``(left, right)`` for the last dimension, then for
    the one before, ... ``mode``: "constant" (``value``, default 0),
    "reflect", "replicate" or "circular". Returns the padded tensor."""
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    x = input._value
    if mode == "constant":
        widths = [(0, 0)] * (input.dim() - k) + [(pad[2 * j], pad[2 * j + 1]) for j in reversed(range(k))]
        for d, (lo, hi) in enumerate(widths):
            if input.shape[d] + min(lo, 0) + min(hi, 0) < 0:  # PyTorch crops first (narrow)
                raise RuntimeError("narrow(): length must be non-negative.")
        if any(lo < 0 or hi < 0 for lo, hi in widths):
            x = x[tuple(slice(-lo if lo < 0 else None, hi if hi < 0 else None) for lo, hi in widths)]
        pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
        fill = 0.0 if value is None else value
        x = tnp.pad(x, pos, mode="constant", constant_values=np.asarray(fill).astype(np.dtype(_plain(x).dtype)))
        return _result(x, "ConstantPadNdBackward0", (input,))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise NotImplementedError(f'Padding mode "{mode}" doesn\'t take in value argument')
    nd = input.dim()
    if not ((k == 1 and nd in (2, 3)) or (k == 2 and nd in (3, 4)) or (k == 3 and nd in (4, 5))):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for j in range(k):
        axis = nd - 1 - j
        n = input.shape[axis]
        lo, hi = pad[2 * j], pad[2 * j + 1]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {axis} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        x = tnp.take(x, _pad_index(n, lo, hi, mode), axis=axis)
    return _result(x, _NODE[mode, k], (input,))


def _base_coords(n: int, align_corners: bool, dt: Any) -> np.ndarray:
    """The normalised ([-1, 1]) coordinates of ``n`` pixel centres (or corners)."""
    if n <= 1:
        return np.zeros(n, dt)
    if align_corners:
        return np.linspace(-1, 1, n).astype(dt)
    return ((np.arange(n) * 2 + 1) / n - 1).astype(dt)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The ``(N, H, W, 2)`` sampling grid of the affine maps ``theta``
    (``(N, 2, 3)``) for an output of ``size`` ``(N, C, H, W)``: each output
    pixel's normalised ``(x, y, 1)`` times ``theta`` transposed
    (``AffineGridGeneratorBackward0``). Returns the grid, for ``grid_sample``."""
    given = size
    size = [int(v) for v in size]
    if len(size) == 5:
        raise NotImplementedError("tapegrad.torch: affine_grid for 3-d transforms (a 5-d size) is not supported")
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {given}.")
    n, _, h, w = size
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {given}. Got "
                         f"{theta.shape}.")
    if theta.shape[0] != n:  # PyTorch's batched product of the base grid and theta says it
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, 3] but got: "
                           f"[{theta.shape[0]}, 3].")
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    dt = np.dtype(_plain(theta._value).dtype)
    ac = bool(align_corners)
    xs, ys = _base_coords(w, ac, dt), _base_coords(h, ac, dt)
    base = np.stack([np.broadcast_to(xs, (h, w)), np.broadcast_to(ys[:, None], (h, w)),
                     np.ones((h, w), dt)], axis=-1).reshape(1, h * w, 3)
    grid = tnp.matmul(base, tnp.swapaxes(theta._value, 1, 2))
    return _result(tnp.reshape(grid, (n, h, w, 2)), "AffineGridGeneratorBackward0", (theta,))


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (``(N, C, H, W)``) at the normalised ``(x, y)``
    locations of ``grid`` (``(N, Ho, Wo, 2)``, -1 and 1 the edges; with
    ``align_corners`` the corner pixels' centres): ``mode`` "bilinear" or
    "nearest"; outside, "zeros" or the "border" value. Differentiable in
    ``input`` and (bilinear) ``grid`` (``GridSampler2DBackward0``). Returns
    the ``(N, C, Ho, Wo)`` samples."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" or padding_mode == "reflection" or input.dim() == 5:
        raise NotImplementedError(f"tapegrad.torch: grid_sample(mode={mode!r}, padding_mode={padding_mode!r}) "
                                  f"on {input.dim()}-d input is not supported (4-d bilinear/nearest with zeros "
                                  "or border padding is)")
    if input.dim() != 4 or grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != 2:
        raise RuntimeError("grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    dt = np.dtype(_plain(input._value).dtype)
    g = grid._value
    ac = bool(align_corners)

    def unnormalize(coord: Any, size: int) -> Any:
        pix = (coord + 1) / 2 * (size - 1) if ac else ((coord + 1) * size - 1) / 2
        return tnp.clip(pix, 0, size - 1) if padding_mode == "border" else pix

    ix, iy = unnormalize(g[..., 0], w), unnormalize(g[..., 1], h)  # (N, Ho, Wo)
    flat = tnp.reshape(input._value, (n, c, h * w))

    def gather(xi: np.ndarray, yi: np.ndarray) -> tuple[Any, np.ndarray]:
        ok = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        idx = (np.clip(yi, 0, h - 1) * w + np.clip(xi, 0, w - 1)).reshape(n, 1, ho * wo)
        vals = tnp.take_along_axis(flat, np.broadcast_to(idx, (n, c, ho * wo)).copy(), axis=2)
        return tnp.reshape(vals, (n, c, ho, wo)), ok.reshape(n, 1, ho, wo).astype(dt)

    if mode == "nearest":
        xi = np.rint(_plain(ix)).astype(np.int64)
        yi = np.rint(_plain(iy)).astype(np.int64)
        vals, ok = gather(xi, yi)
        # the result depends on grid with a zero derivative, as PyTorch's (it requires grad with grid)
        flat_dep = tnp.reshape(ix + iy, (n, 1, ho, wo)) * 0
        return _result(vals * ok + flat_dep, "GridSampler2DBackward0", (input, grid))
    x0 = np.floor(_plain(ix)).astype(np.int64)
    y0 = np.floor(_plain(iy)).astype(np.int64)
    wx1 = tnp.reshape(ix - x0.astype(dt), (n, 1, ho, wo))
    wy1 = tnp.reshape(iy - y0.astype(dt), (n, 1, ho, wo))
    wx0, wy0 = 1 - wx1, 1 - wy1
    out = None
    for xi, yi, wgt in ((x0, y0, wx0 * wy0), (x0 + 1, y0, wx1 * wy0), (x0, y0 + 1, wx0 * wy1),
                        (x0 + 1, y0 + 1, wx1 * wy1)):
        vals, ok = gather(xi, yi)
        term = vals * (wgt * ok)
        out = term if out is None else out + term
    return _result(out, "GridSampler2DBackward0", (input, grid))
