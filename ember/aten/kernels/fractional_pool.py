"""Fractional max pooling (``aten/src/ATen/native/FractionalMaxPool2d.cpp``, ``FractionalMaxPool3d.cpp``;
Graham, "Fractional Max-Pooling"): windows of a fixed size whose start positions follow a pseudo-random
sequence, one per (batch, channel) plane, drawn from ``random_samples`` (uniforms in [0, 1), one per spatial
dim: W then H in 2-D, T, H, W in 3-D).

The start of output ``i`` along a dim is ``int((i + u) * a) - int(u * a)`` with ``a = (in - pool) / (out - 1)``,
in the input's float type; the last output starts at ``in - pool``. Each output is its window's maximum (the
first one in row-major order; a NaN wins, the last NaN when several) and the flat index of that element in its
plane.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, compute_dtype

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]


def _intervals(xp: Any, samples: Array, in_size: int, out_size: int, pool: int) -> Any:
    """Window starts, ``samples.shape + (out_size,)`` (int64)."""
    starts = xp.zeros(samples.shape + (out_size,), np.int64)
    if out_size > 1:
        dt = samples.dtype
        alpha = dt.type(in_size - pool) / dt.type(out_size - 1)
        i = xp.arange(out_size, dtype=dt)
        u = samples[..., None]
        starts = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out_size > 0:
        starts[..., out_size - 1] = in_size - pool
    return starts


def _check(name: str, nd: int, self: Array, kernel_size: Any, output_size: Any, random_samples: Array) -> None:
    if len(kernel_size) != nd:
        raise RuntimeError(f"{name}: kernel_size must either be a single int, or a tuple of {nd} ints")
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must either be a single int, or a tuple of {nd} ints")
    if self.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {self.shape}")
    dims = ("time", "height", "width")[3 - nd:]
    for d, (k, o, i) in enumerate(zip(kernel_size, output_size, self.shape[-nd:])):
        # PyTorch's 3-D check is strict (a window may not end on the input's last element), its 2-D one is not
        if o + k - 1 > i or (nd == 3 and o + k - 1 == i):
            where = f"{name}_out()" if nd == 3 else f"{name}()"
            raise RuntimeError(f"{where}: pool {dims[d]} {k} too large relative to input {dims[d]} {i}")
    if random_samples.shape[-1] != nd:
        raise RuntimeError(f"{name}: expected the last dimension of random_samples to be {nd}")


def _pool(xp: Any, self: Array, kernel_size: Any, output_size: Any, random_samples: Array, nd: int) -> Any:
    batched = self.ndim == nd + 2
    x = self if batched else self[None]
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    cdt = compute_dtype(x.dtype)
    u = random_samples.astype(cdt, copy=False).reshape(n, c, nd)
    # the samples are stored W, H (2-D) and T, H, W (3-D): map each to its dim
    order = (1, 0) if nd == 2 else (0, 1, 2)
    flat = 0
    strides = [int(np.prod(spatial[d + 1:])) for d in range(nd)]
    for d in range(nd):
        starts = _intervals(xp, u[..., order[d]], spatial[d], output_size[d], kernel_size[d])  # (n, c, out_d)
        pos = starts[..., :, None] + xp.arange(kernel_size[d])  # (n, c, out_d, k_d)
        # place this dim's (out, k) axes among the others: (n, c, o_0, .., o_{nd-1}, k_0, .., k_{nd-1})
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d] = output_size[d]
        shape[2 + nd + d] = kernel_size[d]
        flat = flat + (pos * strides[d]).reshape(shape)
    flat = xp.broadcast_to(flat, (n, c) + tuple(output_size) + tuple(kernel_size))
    window = int(np.prod(kernel_size))
    idx = flat.reshape(n, c, -1, window)
    vals = xp.take_along_axis(x.reshape(n, c, -1), idx.reshape(n, c, -1), axis=2).reshape(idx.shape)
    nan = xp.isnan(vals) if vals.dtype.kind == "f" else xp.zeros(vals.shape, bool)
    best = xp.argmax(vals, axis=-1)
    last_nan = window - 1 - xp.argmax(nan[..., ::-1], axis=-1)
    best = compiled.where(xp, nan.any(axis=-1), last_nan, best)
    index = xp.take_along_axis(idx, best[..., None], axis=-1)[..., 0].reshape((n, c) + tuple(output_size))
    out = xp.take_along_axis(vals, best[..., None], axis=-1)[..., 0].reshape((n, c) + tuple(output_size))
    if not batched:
        out, index = out[0], index[0]
    return out.astype(self.dtype, copy=False), index.astype(np.int64)


def fractional_max_pool2d(xp: Any, self: Array, kernel_size: Any, output_size: Any, random_samples: Array) -> Any:
    _check("fractional_max_pool2d", 2, self, kernel_size, output_size, random_samples)
    return _pool(xp, self, kernel_size, output_size, random_samples, 2)


def fractional_max_pool3d(xp: Any, self: Array, kernel_size: Any, output_size: Any, random_samples: Array) -> Any:
    _check("fractional_max_pool3d", 3, self, kernel_size, output_size, random_samples)
    return _pool(xp, self, kernel_size, output_size, random_samples, 3)
