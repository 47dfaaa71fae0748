"""Max pooling with indices over the planes of a 3-d window (a 2-d pool is depth 1), and its backward (caller:
``kernels/pooling.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _driver, _kernel, chunk


@_kernel
def max_pool3d(x: Any, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int, pd: int, ph: int, pw: int, dd: int,
               dh: int, dw: int, out: Any, idx: Any, p0: int, p1: int) -> None:
    """Max pooling of planes p0..p1-1 of x (P, D, H, W) into out / idx (P, OD, OH, OW), idx flat over (D, H, W).
    PyTorch's CPU rule: the first in-bounds element of the window starts as the index with value -inf; an element
    replaces the maximum when it is greater or NaN (so the last NaN of a window wins, and an all -inf window
    answers its first element). Windows are clipped to the input (padding never wins)."""
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    OD, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    for p in range(p0, p1):
        for od in range(OD):
            z0 = od * sd - pd
            for oh in range(OH):
                y0 = oh * sh - ph
                for ow in range(OW):
                    x0 = ow * sw - pw
                    best = -np.inf
                    at = -1
                    for a in range(kd):
                        z = z0 + a * dd
                        if z < 0 or z >= D:
                            continue
                        for b in range(kh):
                            y = y0 + b * dh
                            if y < 0 or y >= H:
                                continue
                            for c in range(kw):
                                xx = x0 + c * dw
                                if xx < 0 or xx >= W:
                                    continue
                                v = x[p, z, y, xx]
                                i = (z * H + y) * W + xx
                                if at < 0:
                                    at = i
                                if v > best or v != v:
                                    best = v
                                    at = i
                    out[p, od, oh, ow] = best
                    idx[p, od, oh, ow] = at


@_kernel
def max_pool2d_inside(x: Any, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, out: Any, idx: Any, p0: int,
                      p1: int) -> None:
    """``max_pool3d``'s 2-d pool where every window lies inside the plane (no padding reached): no bounds checks,
    the window's first element as the start (the same rule: it is the index of a window of -inf, and a NaN there
    stays unless a later NaN replaces it), and a 2 x 2 window of stride 2 -- the common pool -- unrolled."""
    W = x.shape[2]
    OH, OW = out.shape[1], out.shape[2]
    two = kh == 2 and kw == 2 and dh == 1 and dw == 1
    for p in range(p0, p1):
        for oh in range(OH):
            y0 = oh * sh
            for ow in range(OW):
                x0 = ow * sw
                best = x[p, y0, x0]
                at = y0 * W + x0
                if two:
                    v = x[p, y0, x0 + 1]
                    if v > best or v != v:
                        best = v
                        at = y0 * W + x0 + 1
                    v = x[p, y0 + 1, x0]
                    if v > best or v != v:
                        best = v
                        at = (y0 + 1) * W + x0
                    v = x[p, y0 + 1, x0 + 1]
                    if v > best or v != v:
                        best = v
                        at = (y0 + 1) * W + x0 + 1
                else:
                    for b in range(kh):
                        y = y0 + b * dh
                        for c in range(kw):
                            v = x[p, y, x0 + c * dw]
                            if v > best or v != v:
                                best = v
                                at = y * W + x0 + c * dw
                out[p, oh, ow] = best
                idx[p, oh, ow] = at


@compiled.parallel_of(max_pool2d_inside)
@_driver
def _max_pool2d_inside_parallel(x: Any, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, out: Any, idx: Any,
                                work: int, chunks: int) -> None:
    for c in prange(chunks):
        p0, p1 = chunk(work, chunks, c)
        max_pool2d_inside(x, kh, kw, sh, sw, dh, dw, out, idx, p0, p1)


@compiled.parallel_of(max_pool3d)
@_driver
def _max_pool3d_parallel(x: Any, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int, pd: int, ph: int, pw: int,
                         dd: int, dh: int, dw: int, out: Any, idx: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        p0, p1 = chunk(work, chunks, c)
        max_pool3d(x, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, out, idx, p0, p1)


@_kernel
def _max_pool_backward(g: Any, idx: Any, n_out: int, n_in: int, gx: Any, bad: Any, p0: int, p1: int) -> None:
    """gx[p, idx[p, k]] += g[p, k] over the planes p0..p1-1 (each zeroed first): the output gradient back to the
    elements the pool took, -1 adding nothing; bad[p] = the first index outside [0, n_in) of plane p, else -1."""
    for p in range(p0, p1):
        src = np.uint64(p * n_out)
        dst = np.uint64(p * n_in)
        for i in range(np.uint64(n_in)):
            gx[dst + i] = 0
        bad[p] = -1
        for k in range(np.uint64(n_out)):
            j = idx[src + k]
            if 0 <= j < n_in:
                gx[dst + np.uint64(j)] += g[src + k]
            elif j != -1 and bad[p] == -1:
                bad[p] = j


@compiled.parallel_of(_max_pool_backward)
@_driver
def _max_pool_backward_parallel(g: Any, idx: Any, n_out: int, n_in: int, gx: Any, bad: Any, work: int,
                                chunks: int) -> None:
    for c in prange(chunks):
        p0, p1 = chunk(work, chunks, c)
        _max_pool_backward(g, idx, n_out, n_in, gx, bad, p0, p1)


# ------------------------------------------------------------------------------ runners
def max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, out_size: Any) -> tuple[Any, Any]:
    """Max pooling of the planes of x (P, D, H, W) with 3-d window parameters (a 2-d pool passes depth 1):
    values of x's dtype and int64 indices flat over each plane, shaped (P,) + out_size, planes split over the
    intra-op threads."""
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0],) + tuple(out_size), x.dtype)
    idx = np.empty(out.shape, np.int64)
    window = int(np.prod(kernel_size)) * int(np.prod(out_size))
    grain = max(1, parallel.GRAIN_SIZE // max(window, 1))
    if kernel_size[0] == 1 and x.shape[1] == 1 and not any(padding) and all(
            (o - 1) * s + d * (k - 1) < n for o, s, d, k, n in zip(out_size[1:], stride[1:], dilation[1:],
                                                                   kernel_size[1:], x.shape[2:])):
        compiled.split(max_pool2d_inside, x.shape[0], grain, x.reshape(x.shape[0], x.shape[2], x.shape[3]),
                       *kernel_size[1:], *stride[1:], *dilation[1:], out.reshape(out.shape[0], *out.shape[2:]),
                       idx.reshape(idx.shape[0], *idx.shape[2:]))
        return out, idx
    args = tuple(kernel_size) + tuple(stride) + tuple(padding) + tuple(dilation)
    compiled.split(max_pool3d, x.shape[0], grain, x, *args, out, idx)
    return out, idx


def max_pool_backward(g: Any, idx: Any, n_in: int) -> tuple[Any, Any]:
    """The input gradient (P, n_in) of a max pool from its output gradient g (P, n_out), float32 / float64, and
    int64 indices flat over each plane; with the out-of-range indices found (the first of each plane that has one),
    planes split over the intra-op threads."""
    g = np.ascontiguousarray(g)
    idx = np.ascontiguousarray(idx)
    planes, n_out = g.shape
    gx = np.empty((planes, n_in), g.dtype)
    bad = np.empty(planes, np.int64)
    compiled.split(_max_pool_backward, planes, compiled.row_grain(n_in + n_out), g.reshape(-1), idx.reshape(-1),
                   n_out, n_in, gx.reshape(-1), bad)
    return gx, bad[bad != -1]
