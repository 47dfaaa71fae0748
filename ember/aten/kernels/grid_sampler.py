"""Kernels of grid_sampler_2d / 3d and their backward (``aten/src/ATen/native/GridSampler.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, asdtype, compute_dtype, meta_array, meta_kernel, type_name
from ember.c10.dtype import BF16_NP

__all__ = ["grid_sampler_2d", "grid_sampler_3d", "grid_sampler_2d_backward", "grid_sampler_3d_backward",
           "affine_grid_generator"]

# ------------------------------------------------------------------------------ grid_sampler
# ``GridSampler.cpp`` / ``GridSamplerUtils.h``: each output position samples the input at the grid's normalised
# coordinates (x for W first), unnormalised to pixel positions, then clipped or reflected by the padding mode
# (PyTorch's compute_source_index, with the derivative it tracks for the grid's gradient); bilinear / trilinear
# weights over the 2^nd corners (out-of-range corners read 0) or the nearest pixel (round half to even).
_GRID_BILINEAR, _GRID_NEAREST, _GRID_BICUBIC = 0, 1, 2
_PAD_ZEROS, _PAD_BORDER, _PAD_REFLECTION = 0, 1, 2


def _reflect_with_grad(xp: Any, c: Any, twice_low: Any, twice_high: Any) -> Any:
    if twice_low == twice_high:
        return xp.zeros_like(c), xp.zeros_like(c)
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    c = c - lo
    sign = compiled.where(xp, c < 0, -1.0, 1.0)
    c = xp.abs(c)
    extra = xp.fmod(c, span)
    flips = xp.floor(c / span)
    even = xp.fmod(flips, 2) == 0
    return compiled.where(xp, even, extra + lo, span - extra + lo), compiled.where(xp, even, sign, -sign)


def _clip_with_grad(xp: Any, c: Any, size: Any) -> Any:
    inside = (c > 0) & (c < size - 1)
    return xp.clip(c, 0, size - 1), compiled.where(xp, inside, 1.0, 0.0)


def _source_index(xp: Any, coord: Any, size: Any, padding_mode: Any, align_corners: Any) -> Any:
    """PyTorch's grid_sampler_compute_source_index (and its derivative with respect to the grid coordinate)."""
    with np.errstate(all="ignore"):
        if align_corners:
            c, mult = (coord + 1) / 2 * (size - 1), (size - 1) / 2
        else:
            c, mult = ((coord + 1) * size - 1) / 2, size / 2
        mult = xp.full(c.shape, mult, c.dtype)
        if padding_mode == _PAD_BORDER:
            c, g = _clip_with_grad(xp, c, size)
            mult = mult * g
        elif padding_mode == _PAD_REFLECTION:
            c, g = _reflect_with_grad(xp, c, 0, 2 * (size - 1)) if align_corners else \
                _reflect_with_grad(xp, c, -1, 2 * size - 1)
            c, g2 = _clip_with_grad(xp, c, size)
            mult = mult * g * g2
        bad = ~xp.isfinite(c) | (c > 2 ** 31 - 2) | (c < -2 ** 31)   # safe_downgrade_to_int_range
        return compiled.where(xp, bad, -100.0, c), mult


def _grid_corners(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    """Yields, per corner: (flat indices into each (N, C) plane, in-range mask, weight, [d weight / d coord_i]),
    plus the per-dim derivative multipliers of the source index."""
    nd = input.ndim - 2
    n = input.shape[0]
    sizes = input.shape[2:]
    ct = compute_dtype(input.dtype)
    src, mults = [], []
    for i in range(nd):
        s, m = _source_index(xp, grid[..., nd - 1 - i].reshape(n, -1).astype(ct), sizes[i], padding_mode,
                             align_corners)
        src.append(s)
        mults.append(m)
    strides = [int(np.prod(sizes[i + 1:])) for i in range(nd)]
    corners = []
    if mode == _GRID_NEAREST:
        idx = [xp.rint(s) for s in src]
        corners.append((idx, xp.ones_like(src[0]), [xp.zeros_like(src[0])] * nd))
    else:
        lows = [xp.floor(s) for s in src]
        fr = [s - lo for s, lo in zip(src, lows)]
        for corner in range(2 ** nd):
            bits = [(corner >> (nd - 1 - i)) & 1 for i in range(nd)]
            ws = [fr[i] if b else 1 - fr[i] for i, b in enumerate(bits)]
            w = ws[0]
            for x in ws[1:]:
                w = w * x
            dws = []
            for i, b in enumerate(bits):
                d = xp.ones_like(src[0]) if b else -xp.ones_like(src[0])
                for j in range(nd):
                    if j != i:
                        d = d * ws[j]
                dws.append(d)
            corners.append(([lo + b for lo, b in zip(lows, bits)], w, dws))
    out = []
    for idx, w, dws in corners:
        mask = None
        lin = 0
        for i, v in enumerate(idx):
            ok = (v >= 0) & (v <= sizes[i] - 1)
            mask = ok if mask is None else mask & ok
            lin = lin + xp.clip(v, 0, sizes[i] - 1).astype(np.int64) * strides[i]
        out.append((lin, mask, w, dws))
    return out, mults


def _grid_checks(input: Array, grid: Array, mode: Any, nd: Any) -> Any:
    if mode == _GRID_BICUBIC:
        raise NotImplementedError("grid_sample(mode='bicubic') is not implemented in ember yet")
    if not (input.dtype.kind == "f" or input.dtype == BF16_NP):
        raise NotImplementedError(f"\"grid_sampler_{nd}d_cpu\" not implemented for '{type_name(input.dtype)}'")


def _grid_sampler(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    nd = input.ndim - 2
    _grid_checks(input, grid, mode, nd)
    n, c = input.shape[:2]
    ct = compute_dtype(input.dtype)
    flat = asdtype(xp, input, ct).reshape(n, c, -1)
    out = 0
    corners, _ = _grid_corners(xp, input, grid, mode, padding_mode, align_corners)
    for lin, mask, w, _dws in corners:
        vals = xp.take_along_axis(flat, xp.broadcast_to(lin[:, None, :], (n, c, lin.shape[1])), axis=2)
        out = out + vals * compiled.where(xp, mask, w, 0)[:, None, :]
    out = xp.broadcast_to(out, (n, c, int(np.prod(grid.shape[1:-1]))))
    return xp.ascontiguousarray(out.reshape((n, c) + grid.shape[1:-1])).astype(input.dtype, copy=False)


def _grid_sampler_backward(xp: Any, grad_output: Array, input: Array, grid: Array, mode: Any, padding_mode: Any,
                           align_corners: Any, output_mask: Any) -> Any:
    nd = input.ndim - 2
    _grid_checks(input, grid, mode, nd)
    n, c = input.shape[:2]
    ct = compute_dtype(input.dtype)
    flat = asdtype(xp, input, ct).reshape(n, c, -1)
    g = asdtype(xp, grad_output, ct).reshape(n, c, -1)
    plane = flat.shape[2]
    corners, mults = _grid_corners(xp, input, grid, mode, padding_mode, align_corners)
    gin: Any = xp.zeros(n * c * plane, ct) if output_mask[0] else None
    gsrc = [0] * nd
    base = (xp.arange(n * c) * plane).reshape(n, c, 1)
    for lin, mask, w, dws in corners:
        if output_mask[0]:
            contrib = g * compiled.where(xp, mask, w, 0)[:, None, :]
            where = (base + lin[:, None, :]).reshape(-1)
            if xp is np:
                gin += np.bincount(where, weights=contrib.reshape(-1), minlength=gin.size).astype(ct, copy=False)
            else:
                xp.add.at(gin, where, contrib.reshape(-1))
        if output_mask[1] and mode != _GRID_NEAREST:
            vals = xp.take_along_axis(flat, xp.broadcast_to(lin[:, None, :], (n, c, lin.shape[1])), axis=2)
            gv = (compiled.where(xp, mask[:, None, :], vals, 0) * g).sum(axis=1)
            for i in range(nd):
                gsrc[i] = gsrc[i] + gv * dws[i]
    grad_input = gin.reshape(input.shape).astype(input.dtype, copy=False) if output_mask[0] else \
        xp.empty((0,), input.dtype)
    if output_mask[1]:
        gg = xp.zeros(grid.shape, ct)
        for i in range(nd):
            gg[..., nd - 1 - i] = (gsrc[i] * mults[i]).reshape(grid.shape[:-1]) if mode != _GRID_NEAREST else 0
        grad_grid = gg.astype(grid.dtype, copy=False)
    else:
        grad_grid = xp.empty((0,), grid.dtype)
    return grad_input, grad_grid


def _grid_meta(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    _grid_checks(input, grid, mode, input.ndim - 2)
    return meta_array(input.dtype, input.shape[:2] + grid.shape[1:-1])


def _grid_backward_meta(xp: Any, grad_output: Array, input: Array, grid: Array, mode: Any, padding_mode: Any,
                        align_corners: Any, output_mask: Any) -> Any:
    return (meta_array(input.dtype, input.shape if output_mask[0] else (0,)),
            meta_array(grid.dtype, grid.shape if output_mask[1] else (0,)))


@meta_kernel(_grid_meta)
def grid_sampler_2d(xp: Any, input: Array, grid: Array, interpolation_mode: Any, padding_mode: Any,  # noqa: A002
                    align_corners: Any) -> Any:
    return _grid_sampler(xp, input, grid, interpolation_mode, padding_mode, align_corners)


@meta_kernel(_grid_meta)
def grid_sampler_3d(xp: Any, input: Array, grid: Array, interpolation_mode: Any, padding_mode: Any,  # noqa: A002
                    align_corners: Any) -> Any:
    return _grid_sampler(xp, input, grid, interpolation_mode, padding_mode, align_corners)


@meta_kernel(_grid_backward_meta)
def grid_sampler_2d_backward(xp: Any, grad_output: Array, input: Array, grid: Array, interpolation_mode: Any,  # noqa
                             padding_mode: Any, align_corners: Any, output_mask: Any) -> Any:
    return _grid_sampler_backward(xp, grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
                                  output_mask)


@meta_kernel(_grid_backward_meta)
def grid_sampler_3d_backward(xp: Any, grad_output: Array, input: Array, grid: Array, interpolation_mode: Any,  # noqa
                             padding_mode: Any, align_corners: Any, output_mask: Any) -> Any:
    return _grid_sampler_backward(xp, grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
                                  output_mask)


# ``AffineGridGenerator.cpp``: the base grid of normalised output coordinates [x, y, (z,) 1] times theta^T.
def affine_base(size: Any, align_corners: Any, dtype: Any) -> Any:
    spatial = tuple(size[2:])
    axes = []
    for n in spatial:
        v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        axes.append(v if align_corners or n <= 1 else v * (n - 1) / n)
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [mesh[i] for i in reversed(range(len(spatial)))] + [np.ones_like(mesh[0])]
    return np.stack(coords, -1).reshape(-1, len(spatial) + 1).astype(dtype), spatial


def affine_grid_generator(xp: Any, theta: Array, size: Any, align_corners: Any) -> Any:
    cdt = compute_dtype(theta.dtype)             # half precision: a float32 product, rounded once
    base, spatial = affine_base(size, align_corners, cdt)
    out = xp.matmul(xp.asarray(base)[None], xp.swapaxes(theta, 1, 2).astype(cdt, copy=False))
    return xp.ascontiguousarray(out.reshape((size[0],) + spatial + (len(spatial),)).astype(theta.dtype, copy=False))
