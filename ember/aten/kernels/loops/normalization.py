"""Batch norm over channels (sums in float64) and layer norm over rows (float32 vectors, as PyTorch's), forward and
backward (callers: ``kernels/normalization.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F0, _F1, _driver, _kernel, chunk

# ------------------------------------------------------------------------------ batch norm over channels
# x (N, C, S) C-contiguous, passed flat (first, then its sizes): channel c is N runs of S values. Each loop takes its
# channel range last; sums are float64.

@_kernel
def _batch_norm_stats(x: Any, N: int, C: int, S: int, mean: Any, var: Any, c0: int, c1: int) -> None:
    """Per channel: the mean and the biased variance over its N S values, in two passes (mean, then the squared
    deviations from it)."""
    uS = np.uint64(S)
    count = N * S
    for c in range(c0, c1):
        s = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                s += x[base + i]
        m = s / count
        q = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                d = x[base + i] - m
                q += d * d
        mean[c] = m
        var[c] = q / count


@_kernel
def _batch_norm_apply(x: Any, N: int, C: int, S: int, alpha: Any, beta: Any, out: Any, c0: int, c1: int) -> None:
    """out = x alpha[c] + beta[c]."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        a, b = np.float64(alpha[c]), np.float64(beta[c])
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                out[base + i] = x[base + i] * a + b


@_kernel
def _batch_norm_backward_sums(g: Any, N: int, C: int, S: int, x: Any, mean: Any, sum_g: Any, dot: Any, c0: int,
                             c1: int) -> None:
    """Per channel: sum(g) and sum(g (x - mean)), one pass."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        m = np.float64(mean[c])
        s = 0.0
        d = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                gv = np.float64(g[base + i])
                s += gv
                d += gv * (x[base + i] - m)
        sum_g[c] = s
        dot[c] = d


@_kernel
def _batch_norm_backward_input(g: Any, N: int, C: int, S: int, x: Any, mean: Any, k1: Any, k2: Any, k3: Any,
                              out: Any, c0: int, c1: int) -> None:
    """out = g k1[c] + (x - mean[c]) k2[c] + k3[c]."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        m, a, b, e = np.float64(mean[c]), np.float64(k1[c]), np.float64(k2[c]), np.float64(k3[c])
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                out[base + i] = g[base + i] * a + (x[base + i] - m) * b + e


@compiled.parallel_of(_batch_norm_stats)
@_driver
def _batch_norm_stats_parallel(x: Any, N: int, C: int, S: int, mean: Any, var: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        c0, c1 = chunk(work, chunks, c)
        _batch_norm_stats(x, N, C, S, mean, var, c0, c1)


@compiled.parallel_of(_batch_norm_apply)
@_driver
def _batch_norm_apply_parallel(x: Any, N: int, C: int, S: int, alpha: Any, beta: Any, out: Any, work: int,
                               chunks: int) -> None:
    for c in prange(chunks):
        c0, c1 = chunk(work, chunks, c)
        _batch_norm_apply(x, N, C, S, alpha, beta, out, c0, c1)


@compiled.parallel_of(_batch_norm_backward_sums)
@_driver
def _batch_norm_backward_sums_parallel(g: Any, N: int, C: int, S: int, x: Any, mean: Any, sum_g: Any, dot: Any,
                                       work: int, chunks: int) -> None:
    for c in prange(chunks):
        c0, c1 = chunk(work, chunks, c)
        _batch_norm_backward_sums(g, N, C, S, x, mean, sum_g, dot, c0, c1)


@compiled.parallel_of(_batch_norm_backward_input)
@_driver
def _batch_norm_backward_input_parallel(g: Any, N: int, C: int, S: int, x: Any, mean: Any, k1: Any, k2: Any, k3: Any,
                                        out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        c0, c1 = chunk(work, chunks, c)
        _batch_norm_backward_input(g, N, C, S, x, mean, k1, k2, k3, out, c0, c1)


# ------------------------------------------------------------------------------ layer norm over rows
# C-contiguous float32 (R, n) arrays and the rows r0..r1-1 to do (as softmax's row loops).

@_kernel
def layer_norm_rows(x: Any, w: Any, b: Any, eps: float, out: Any, mean: Any, rstd: Any, r0: int, r1: int) -> None:
    """Layer norm of each row in float32 vectors, as PyTorch's kernel: mean, biased variance of x - mean (two
    passes), rstd = 1/sqrt(var + eps), out = (x - mean) rstd w + b (``w`` / ``b`` of length n; ones / zeros stand
    in for absent ones)."""
    n = x.shape[1]
    inv_n = np.float32(1.0 / n)
    e32 = np.float32(eps)
    for r in range(r0, r1):
        xr = x[r]
        orow = out[r]
        s = _F0
        for j in range(n):
            s += xr[j]
        mu = s * inv_n
        q = _F0
        for j in range(n):
            d = xr[j] - mu
            q += d * d
        rs = _F1 / np.sqrt(q * inv_n + e32)
        for j in range(n):
            orow[j] = (xr[j] - mu) * rs * w[j] + b[j]
        mean[r] = mu
        rstd[r] = rs


@_kernel
def layer_norm_backward_chunks(g: Any, x: Any, mean: Any, rstd: Any, w: Any, gx: Any, acc: Any, chunks: int, c0: int,
                               c1: int) -> None:
    """native_layer_norm_backward over the rows of chunks c0..c1-1 of ``chunks`` (``chunk``): with
    xhat = (x - mean) rstd and gg = g w, gx = rstd (gg - mean(gg) - xhat mean(gg xhat)); a chunk's rows add
    g xhat and g into its own float32 accumulators acc[c, 0] and acc[c, 1] (the caller sums the chunks in order,
    so the result does not depend on which thread ran which)."""
    R, n = x.shape
    inv_n = np.float32(1.0 / n)
    for c in range(c0, c1):
        r0, r1 = chunk(R, chunks, c)
        gw = acc[c, 0]
        gb = acc[c, 1]
        for r in range(r0, r1):
            gr = g[r]
            xr = x[r]
            gxr = gx[r]
            mu = mean[r]
            rs = rstd[r]
            s0 = _F0
            s1 = _F0
            for j in range(n):
                xh = (xr[j] - mu) * rs
                gg = gr[j] * w[j]
                s0 += gg
                s1 += gg * xh
                gw[j] += gr[j] * xh
                gb[j] += gr[j]
            s0 *= inv_n
            s1 *= inv_n
            for j in range(n):
                xh = (xr[j] - mu) * rs
                gxr[j] = rs * (gr[j] * w[j] - s0 - xh * s1)


@_kernel
def group_norm_rows(x: Any, w: Any, b: Any, eps: float, G: int, out: Any, mean: Any, rstd: Any, r0: int,
                    r1: int) -> None:
    """Group norm of rows r0..r1-1 of ``x`` (N * G, C / G, HxW): each row's mean and biased variance of x - mean
    (two passes, float32 vectors), rstd = 1/sqrt(var + eps), then each channel c of the row as PyTorch's kernel
    applies it: x scale + shift with scale = rstd w[c], shift = b[c] - mean scale (``w`` / ``b`` of length C)."""
    cg, S = x.shape[1], x.shape[2]
    inv_n = np.float32(1.0 / (cg * S))
    e32 = np.float32(eps)
    for r in range(r0, r1):
        xr = x[r]
        s = _F0
        for c in range(cg):
            for j in range(S):
                s += xr[c, j]
        mu = s * inv_n
        q = _F0
        for c in range(cg):
            for j in range(S):
                d = xr[c, j] - mu
                q += d * d
        rs = _F1 / np.sqrt(q * inv_n + e32)
        ch0 = (r % G) * cg
        for c in range(cg):
            scale = rs * w[ch0 + c]
            shift = b[ch0 + c] - mu * scale
            orow = out[r, c]
            xc = xr[c]
            for j in range(S):
                orow[j] = xc[j] * scale + shift
        mean[r] = mu
        rstd[r] = rs


@compiled.parallel_of(group_norm_rows)
@_driver
def _group_norm_rows_parallel(x: Any, w: Any, b: Any, eps: float, G: int, out: Any, mean: Any, rstd: Any, work: int,
                              chunks: int) -> None:
    for c in prange(chunks):
        r0, r1 = chunk(work, chunks, c)
        group_norm_rows(x, w, b, eps, G, out, mean, rstd, r0, r1)


@compiled.parallel_of(layer_norm_rows)
@_driver
def _layer_norm_rows_parallel(x: Any, w: Any, b: Any, eps: float, out: Any, mean: Any, rstd: Any, work: int,
                              chunks: int) -> None:
    for c in prange(chunks):
        r0, r1 = chunk(work, chunks, c)
        layer_norm_rows(x, w, b, eps, out, mean, rstd, r0, r1)


@compiled.parallel_of(layer_norm_backward_chunks)
@_driver
def _layer_norm_backward_chunks_parallel(g: Any, x: Any, mean: Any, rstd: Any, w: Any, gx: Any, acc: Any,
                                         n_chunks: int, work: int, chunks: int) -> None:
    for c in prange(chunks):
        c0, c1 = chunk(work, chunks, c)
        layer_norm_backward_chunks(g, x, mean, rstd, w, gx, acc, n_chunks, c0, c1)


# ------------------------------------------------------------------------------ runners
def _channel_split(kernel: Any, x: Any, *args: Any) -> None:
    """``kernel`` over the channels of a C-contiguous (N, C, ...) array, split over the intra-op threads."""
    N, C = x.shape[:2]
    S = x.size // max(N * C, 1)
    compiled.split(kernel, C, compiled.row_grain(N * S), x.reshape(-1), N, C, S, *args)


def batch_norm_stats(x: Any) -> tuple[Any, Any]:
    """Per-channel mean and biased variance (float64) of a C-contiguous float32 (N, C, ...) array."""
    C = x.shape[1]
    mean, var = np.empty(C), np.empty(C)
    _channel_split(_batch_norm_stats, x, mean, var)
    return mean, var


def batch_norm_apply(x: Any, alpha: Any, beta: Any) -> Any:
    """x alpha[c] + beta[c] into a new array of x's shape and dtype (x C-contiguous float32)."""
    out = np.empty(x.shape, x.dtype)
    _channel_split(_batch_norm_apply, x, alpha, beta, out.reshape(-1))
    return out


def batch_norm_backward_sums(g: Any, x: Any, mean: Any) -> tuple[Any, Any]:
    """Per channel sum(g) and sum(g (x - mean)) (float64) of C-contiguous float32 (N, C, ...) arrays."""
    C = x.shape[1]
    sum_g, dot = np.empty(C), np.empty(C)
    _channel_split(_batch_norm_backward_sums, g, x.reshape(-1), mean, sum_g, dot)
    return sum_g, dot


def batch_norm_backward_input(g: Any, x: Any, mean: Any, k1: Any, k2: Any, k3: Any) -> Any:
    """g k1[c] + (x - mean[c]) k2[c] + k3[c] into a new array of x's shape and dtype."""
    out = np.empty(x.shape, x.dtype)
    _channel_split(_batch_norm_backward_input, g, x.reshape(-1), mean, k1, k2, k3, out.reshape(-1))
    return out


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    """Layer norm of the rows of a 2-d float32 array (``weight`` / ``bias`` float32 of the row length, or None):
    the output and each row's mean and rstd (float32)."""
    kernel = layer_norm_rows
    x = np.ascontiguousarray(x)
    R, n = x.shape
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    b = np.zeros(n, np.float32) if bias is None else np.ascontiguousarray(bias).reshape(n)
    out = np.empty(x.shape, np.float32)
    mean, rstd = np.empty(R, np.float32), np.empty(R, np.float32)
    compiled.split(kernel, R, compiled.row_grain(n), x, w, b, float(eps), out, mean, rstd)
    return out, mean, rstd


def group_norm(x: Any, weight: Any, bias: Any, N: int, C: int, G: int, eps: float) -> tuple[Any, Any, Any]:
    """Group norm of float32 ``x`` (N, C, ...) in G groups (``weight`` / ``bias`` float32 of length C, or None): the
    output in x's shape and each (sample, group)'s mean and rstd, (N, G) float32."""
    x = np.ascontiguousarray(x)
    rows = x.reshape(N * G, C // G, -1)
    w = np.ones(C, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(C)
    b = np.zeros(C, np.float32) if bias is None else np.ascontiguousarray(bias).reshape(C)
    out = np.empty(x.shape, np.float32)
    mean, rstd = np.empty(N * G, np.float32), np.empty(N * G, np.float32)
    compiled.split(group_norm_rows, N * G, compiled.row_grain(rows.shape[1] * rows.shape[2]), rows, w, b, float(eps),
                   G, out.reshape(rows.shape), mean, rstd)
    return out, mean.reshape(N, G), rstd.reshape(N, G)


def layer_norm_backward(g: Any, x: Any, mean: Any, rstd: Any, weight: Any) -> tuple[Any, Any, Any]:
    """native_layer_norm_backward over the rows of 2-d float32 arrays: the input gradient (float32) and the
    sums over rows of grad * xhat and of grad (float32 per range of rows, then the ranges added in order)."""
    g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
    R, n = x.shape
    mean, rstd = np.ascontiguousarray(mean).reshape(R), np.ascontiguousarray(rstd).reshape(R)
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    gx = np.empty(x.shape, np.float32)
    chunks = parallel.ranges(R, compiled.row_grain(n))
    acc = np.zeros((chunks, 2, n), np.float32)
    compiled.split(layer_norm_backward_chunks, chunks, 1, g, x, mean, rstd, w, gx, acc, chunks)
    sums = acc.sum(axis=0, dtype=np.float64)
    return gx, sums[0], sums[1]
