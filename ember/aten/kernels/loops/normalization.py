"""Batch norm over channels and layer norm over rows, forward and backward, sums in float64
(callers: ``kernels/normalization.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _kernel

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


# ------------------------------------------------------------------------------ layer norm over rows
# C-contiguous float32 (R, n) arrays and the rows r0..r1-1 to do (as softmax's row loops); sums are float64.

@_kernel
def layer_norm_rows(x: Any, w: Any, b: Any, eps: float, out: Any, mean: Any, rstd: Any, r0: int, r1: int) -> None:
    """Layer norm of each row: mean, biased variance of x - mean (two passes, float64), rstd = 1/sqrt(var + eps),
    out = (x - mean) rstd w + b (``w`` / ``b`` of length n; ones / zeros stand in for absent ones)."""
    n = x.shape[1]
    for r in range(r0, r1):
        s = 0.0
        for j in range(n):
            s += np.float64(x[r, j])
        mu = s / n
        q = 0.0
        for j in range(n):
            d = np.float64(x[r, j]) - mu
            q += d * d
        rs = 1.0 / np.sqrt(q / n + eps)
        for j in range(n):
            out[r, j] = (np.float64(x[r, j]) - mu) * rs * np.float64(w[j]) + np.float64(b[j])
        mean[r] = mu
        rstd[r] = rs


@_kernel
def layer_norm_backward_rows(g: Any, x: Any, mean: Any, rstd: Any, w: Any, gx: Any, gw: Any, gb: Any, r0: int,
                             r1: int) -> None:
    """native_layer_norm_backward over rows: with xhat = (x - mean) rstd and gg = g w, gx = rstd (gg - mean(gg)
    - xhat mean(gg xhat)); the rows' g xhat and g are added into the float64 accumulators gw / gb (this range's
    own: the caller sums them)."""
    n = x.shape[1]
    for r in range(r0, r1):
        mu = np.float64(mean[r])
        rs = np.float64(rstd[r])
        c0 = 0.0
        c1 = 0.0
        for j in range(n):
            xh = (np.float64(x[r, j]) - mu) * rs
            gj = np.float64(g[r, j])
            gg = gj * np.float64(w[j])
            c0 += gg
            c1 += gg * xh
            gw[j] += gj * xh
            gb[j] += gj
        c0 /= n
        c1 /= n
        for j in range(n):
            xh = (np.float64(x[r, j]) - mu) * rs
            gx[r, j] = rs * (np.float64(g[r, j]) * np.float64(w[j]) - c0 - xh * c1)


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


def layer_norm_backward(g: Any, x: Any, mean: Any, rstd: Any, weight: Any) -> tuple[Any, Any, Any]:
    """native_layer_norm_backward over the rows of 2-d float32 arrays: the input gradient (float32) and the
    float64 sums over rows of grad * xhat and of grad (each range of rows accumulates its own, then they are
    added in range order)."""
    kernel = layer_norm_backward_rows
    g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
    R, n = x.shape
    mean, rstd = np.ascontiguousarray(mean).reshape(R), np.ascontiguousarray(rstd).reshape(R)
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    gx = np.empty(x.shape, np.float32)
    partial: dict[int, tuple[Any, Any]] = {}

    def run(lo: int, hi: int) -> None:
        acc = partial[lo] = (np.zeros(n), np.zeros(n))
        kernel(g, x, mean, rstd, w, gx, acc[0], acc[1], lo, hi)

    parallel.parallel_for(0, R, compiled.row_grain(n), run)
    gw, gb = np.zeros(n), np.zeros(n)
    for lo in sorted(partial):
        gw += partial[lo][0]
        gb += partial[lo][1]
    return gx, gw, gb
