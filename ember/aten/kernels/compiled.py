"""Fused kernels compiled by numba: where one NumPy kernel would make many passes over memory.

The loops live in ``_numba_kernels.py``; this module loads them on first use (importing numba costs 0.4 s, so
``import ember`` does not), runs them over the intra-op threads and says whether they can be used. numba
compiles each loop once per machine and keeps the machine code in ``__pycache__`` beside the source
(``cache=True``), so only the first call after installing ember pays the compilation (about a second per
kernel); later processes load it in milliseconds.

A kernel's caller keeps its NumPy formulation as the fallback and as the definition the compiled loop must
agree with: ``ember.aten.kernels.compiled.set_enabled(False)`` (or ``EMBER_COMPILED_KERNELS=0`` in the
environment) switches every caller back to it, which the tests use to check the two against each other.
Without numba installed the fallback is used everywhere.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from ember.aten import parallel

_enabled = os.environ.get("EMBER_COMPILED_KERNELS", "1") != "0"
_module: Any = None          # _numba_kernels once imported; False if numba is missing


def set_enabled(enabled: bool) -> None:
    """Use the compiled kernels (True, the default) or the NumPy ones."""
    global _enabled
    _enabled = bool(enabled)


def is_enabled() -> bool:
    """Whether calls use the compiled kernels (enabled and numba importable)."""
    return _enabled and _load() is not False


def _load() -> Any:
    global _module
    if _module is None:
        try:
            _module = importlib.import_module("ember.aten.kernels._numba_kernels")
        except ImportError:
            _module = False
    return _module


def usable(xp: Any, *arrays: Any, dtypes: tuple[Any, ...] = (np.float32,)) -> bool:
    """Whether a compiled kernel applies: enabled, NumPy arrays (CuPy's have their own fused kernels), each of one
    of ``dtypes`` (float32 unless the kernel is written for more)."""
    return _enabled and xp is np and all(a.dtype in dtypes for a in arrays) and _load() is not False


def kernel(name: str) -> Any:
    """The compiled loop ``name`` itself, for callers that split the work themselves (the optimizers' chunks)."""
    return getattr(_load(), name)


def elementwise(name: str, *inputs: Any, scalars: tuple[Any, ...] = ()) -> Any:
    """``name``'s compiled loop over same-shaped float32 ``inputs`` (any layout), then the Python ``scalars``, into a
    new C-contiguous float32 array of their shape, split into ranges over the intra-op threads (PyTorch's grain
    size)."""
    kernel = getattr(_load(), name)
    shape = inputs[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    out = np.empty(flat[0].shape, np.float32)

    def run(b: int, e: int) -> None:
        kernel(*[a[b:e] for a in flat], *scalars, out[b:e])

    parallel.parallel_for(0, out.size, parallel.GRAIN_SIZE, run)
    return out.reshape(shape)


def max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, out_size: Any) -> tuple[Any, Any]:
    """Max pooling of the planes of x (P, D, H, W) with 3-d window parameters (a 2-d pool passes depth 1):
    values of x's dtype and int64 indices flat over each plane, shaped (P,) + out_size, planes split over the
    intra-op threads."""
    kernel = _load().max_pool3d
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0],) + tuple(out_size), x.dtype)
    idx = np.empty(out.shape, np.int64)
    args = tuple(kernel_size) + tuple(stride) + tuple(padding) + tuple(dilation)
    window = int(np.prod(kernel_size)) * int(np.prod(out_size))

    def run(b: int, e: int) -> None:
        kernel(x[b:e], *args, out[b:e], idx[b:e])

    parallel.parallel_for(0, x.shape[0], max(1, parallel.GRAIN_SIZE // max(window, 1)), run)
    return out, idx


def scatter_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[r, index[r, j]] += src[r, j] in place, row by row in order (``out`` C-contiguous 2-d, ``index``
    int64 in range, ``src`` of out's dtype)."""
    _load().scatter_add_rows(out, np.ascontiguousarray(index), np.ascontiguousarray(src))


def index_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[index[i]] += src[i] in place, in order (``out`` C-contiguous 2-d, ``index`` int64 1-d in range, ``src``
    of out's dtype)."""
    _load().index_add_rows(out, np.ascontiguousarray(index), np.ascontiguousarray(src))


def _split(kernel: Any, work: int, grain: int, *args: Any) -> None:
    """``kernel(*args, b, e)`` over ranges [b, e) of ``work`` items, at least ``grain`` each, on the intra-op
    threads (every compiled loop below takes its range last)."""
    parallel.parallel_for(0, work, max(1, grain), lambda b, e: kernel(*args, b, e))


def _conv_geometry(x_shape: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any) -> tuple[Any, ...]:
    """A 1-, 2- or 3-d convolution's (N, C, D, H, W) shape and its 3-d window arguments (leading spatial dims of
    size 1 with a window of 1)."""
    lead = 3 - len(ksize)
    shape = tuple(x_shape[:2]) + (1,) * lead + tuple(x_shape[2:])
    args = ((1,) * lead + tuple(ksize) + (1,) * lead + tuple(stride) + (0,) * lead + tuple(padding) +
            (1,) * lead + tuple(dilation) + (1,) * lead + tuple(out_sp))
    return shape, args


def im2col(x: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any, cols: Any) -> Any:
    """Fills ``cols`` (C * prod(ksize), N * prod(out_sp)), C-contiguous, with the windows of x (N, C, *spatial),
    1 to 3 spatial dims, zero padding; (row, sample) runs split over the intra-op threads."""
    kernel = _load().im2col
    shape, args = _conv_geometry(x.shape, ksize, stride, padding, dilation, out_sp)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = cols.reshape(-1)
    work = cols.shape[0] * shape[0]
    _split(kernel, work, parallel.GRAIN_SIZE * work // max(cols.size, 1), flat, *shape, *args, out)
    return cols


def col2im(cols: Any, in_shape: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any) -> Any:
    """The input-shaped sum of the columns matrix ``cols`` (the adjoint of :func:`im2col`): a new array of
    ``in_shape`` and cols' dtype; (sample, channel) planes split over the intra-op threads."""
    kernel = _load().col2im
    shape, args = _conv_geometry(in_shape, ksize, stride, padding, dilation, out_sp)
    gx = np.empty(shape, cols.dtype)
    flat, out = np.ascontiguousarray(cols).reshape(-1), gx.reshape(-1)
    work = shape[0] * shape[1]
    _split(kernel, work, parallel.GRAIN_SIZE * work // max(cols.size, 1), flat, *shape, *args, out)
    return gx.reshape(tuple(in_shape))


def _channel_split(kernel: Any, x: Any, *args: Any) -> None:
    """``kernel`` over the channels of a C-contiguous (N, C, ...) array, split over the intra-op threads."""
    N, C = x.shape[:2]
    S = x.size // max(N * C, 1)
    _split(kernel, C, _row_grain(N * S), x.reshape(-1), N, C, S, *args)


def batch_norm_stats(x: Any) -> tuple[Any, Any]:
    """Per-channel mean and biased variance (float64) of a C-contiguous float32 (N, C, ...) array."""
    C = x.shape[1]
    mean, var = np.empty(C), np.empty(C)
    _channel_split(_load().batch_norm_stats, x, mean, var)
    return mean, var


def batch_norm_apply(x: Any, alpha: Any, beta: Any) -> Any:
    """x alpha[c] + beta[c] into a new array of x's shape and dtype (x C-contiguous float32)."""
    out = np.empty(x.shape, x.dtype)
    _channel_split(_load().batch_norm_apply, x, alpha, beta, out.reshape(-1))
    return out


def batch_norm_backward_sums(g: Any, x: Any, mean: Any) -> tuple[Any, Any]:
    """Per channel sum(g) and sum(g (x - mean)) (float64) of C-contiguous float32 (N, C, ...) arrays."""
    C = x.shape[1]
    sum_g, dot = np.empty(C), np.empty(C)
    _channel_split(_load().batch_norm_backward_sums, g, x.reshape(-1), mean, sum_g, dot)
    return sum_g, dot


def batch_norm_backward_input(g: Any, x: Any, mean: Any, k1: Any, k2: Any, k3: Any) -> Any:
    """g k1[c] + (x - mean[c]) k2[c] + k3[c] into a new array of x's shape and dtype."""
    out = np.empty(x.shape, x.dtype)
    _channel_split(_load().batch_norm_backward_input, g, x.reshape(-1), mean, k1, k2, k3, out.reshape(-1))
    return out


def winograd_input(x: Any, pad: int, th: int, tw: int, V: Any) -> Any:
    """Fills ``V`` (16, C, N th tw) with the Winograd F(2x2, 3x3) transforms of x's (N, C, H, W) 4x4 tiles at
    (2 ty - pad, 2 tx - pad); channels split over the intra-op threads."""
    N, C, H, W = x.shape
    flat = np.ascontiguousarray(x).reshape(-1)
    _split(_load().winograd_input, C, _row_grain(16 * N * th * tw), flat, N, C, H, W, pad, th, tw, V.reshape(-1))
    return V


def winograd_output(M: Any, y: Any, th: int, tw: int) -> Any:
    """Fills ``y`` (N, O, H, W), C-contiguous, from the tile products M (16, O, N th tw); channels split over the
    intra-op threads."""
    N, O, H, W = y.shape
    _split(_load().winograd_output, O, _row_grain(16 * N * th * tw), np.ascontiguousarray(M).reshape(-1), N, O, H,
           W, th, tw, y.reshape(-1))
    return y


def winograd_grad_output(g: Any, th: int, tw: int, Gt: Any) -> Any:
    """Fills ``Gt`` (16, O, N th tw) with the transforms of g's (N, O, H, W) 2x2 tiles; channels split over the
    intra-op threads."""
    N, O, H, W = g.shape
    flat = np.ascontiguousarray(g).reshape(-1)
    _split(_load().winograd_grad_output, O, _row_grain(16 * N * th * tw), flat, N, O, H, W, th, tw,
           Gt.reshape(-1))
    return Gt


def _row_grain(n: int) -> int:
    """Rows per range for a row kernel over rows of n elements: PyTorch's grain size in elements."""
    return max(1, parallel.GRAIN_SIZE // max(n, 1))


def box_muller16_f32(blocks: Any) -> Any:
    """PyTorch's float32 Box-Muller over (B, 16) uniforms, into a new (B, 16) float32 array (rows split over the
    intra-op threads)."""
    blocks = np.ascontiguousarray(blocks)
    out = np.empty(blocks.shape, np.float32)
    _split(_load().box_muller16_f32, blocks.shape[0], _row_grain(16), blocks, out)
    return out


def scale_shift_f32(x: Any, std: float, mean: float) -> Any:
    """``x * std + mean`` rounded once to float32, over a 1-d float32 array, into a new one."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    _split(_load().scale_shift_f32, x.size, parallel.GRAIN_SIZE, x, float(std), float(mean), out)
    return out


def softmax(x: Any, log: bool) -> Any:
    """softmax (``log``: log_softmax) along the last dim of a 2-d float32 array, into a new C-contiguous one."""
    kernel = _load().softmax_rows
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    _split(kernel, x.shape[0], _row_grain(x.shape[1]), x, out, log)
    return out


def softmax_backward(g: Any, y: Any, log: bool) -> Any:
    """_softmax_backward_data (``log``: _log_softmax_backward_data) along the last dim of 2-d float32 arrays."""
    kernel = _load().softmax_backward_rows
    g, y = np.ascontiguousarray(g), np.ascontiguousarray(y)
    out = np.empty(g.shape, np.float32)
    _split(kernel, g.shape[0], _row_grain(g.shape[1]), g, y, out, log)
    return out


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    """Layer norm of the rows of a 2-d float32 array (``weight`` / ``bias`` float32 of the row length, or None):
    the output and each row's mean and rstd (float32)."""
    kernel = _load().layer_norm_rows
    x = np.ascontiguousarray(x)
    R, n = x.shape
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    b = np.zeros(n, np.float32) if bias is None else np.ascontiguousarray(bias).reshape(n)
    out = np.empty(x.shape, np.float32)
    mean, rstd = np.empty(R, np.float32), np.empty(R, np.float32)
    _split(kernel, R, _row_grain(n), x, w, b, float(eps), out, mean, rstd)
    return out, mean, rstd


def layer_norm_backward(g: Any, x: Any, mean: Any, rstd: Any, weight: Any) -> tuple[Any, Any, Any]:
    """native_layer_norm_backward over the rows of 2-d float32 arrays: the input gradient (float32) and the
    float64 sums over rows of grad * xhat and of grad (each range of rows accumulates its own, then they are
    added in range order)."""
    kernel = _load().layer_norm_backward_rows
    g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
    R, n = x.shape
    mean, rstd = np.ascontiguousarray(mean).reshape(R), np.ascontiguousarray(rstd).reshape(R)
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    gx = np.empty(x.shape, np.float32)
    partial: dict[int, tuple[Any, Any]] = {}

    def run(lo: int, hi: int) -> None:
        acc = partial[lo] = (np.zeros(n), np.zeros(n))
        kernel(g, x, mean, rstd, w, gx, acc[0], acc[1], lo, hi)

    parallel.parallel_for(0, R, _row_grain(n), run)
    gw, gb = np.zeros(n), np.zeros(n)
    for lo in sorted(partial):
        gw += partial[lo][0]
        gb += partial[lo][1]
    return gx, gw, gb


def attention_softmax(scores: Any, L: int, scale: float, causal: bool) -> Any:
    """In place over the float32 scores (R, S), rows (batch, head, query): the attention probabilities of
    ``scores * scale`` (keys after the query masked if ``causal``); returns each row's logsumexp (float32)."""
    kernel = _load().attention_softmax_rows
    lse = np.empty(scores.shape[0], np.float32)
    _split(kernel, scores.shape[0], _row_grain(scores.shape[1]), scores, L, float(scale), causal, lse)
    return lse


def attention_probs(scores: Any, L: int, scale: float, causal: bool, lse: Any) -> None:
    """In place over the float32 scores (R, S): exp(scores * scale - lse), 0 where causally masked."""
    kernel = _load().attention_probs_rows
    lse = np.ascontiguousarray(lse).reshape(-1)
    _split(kernel, scores.shape[0], _row_grain(scores.shape[1]), scores, L, float(scale), causal, lse)


def attention_score_grad(p: Any, dp: Any, d: Any, scale: float) -> None:
    """In place over dp (R, S), float32: p * (dp - d) * scale, ``d`` one value per row."""
    kernel = _load().attention_score_grad_rows
    d = np.ascontiguousarray(d).reshape(-1)
    _split(kernel, p.shape[0], _row_grain(p.shape[1]), p, dp, d, float(scale))


def quantize_rows_centred(x: Any, inv: float, zero_point: int, lo: int, hi: int) -> tuple[Any, Any]:
    """A 2-d float32 array quantized with ``1 / scale = inv`` and ``zero_point`` to [lo, hi], minus the zero point
    (float32, exact integers), and each row's sum of their magnitudes (float64), rows split over the intra-op
    threads."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    l1 = np.empty(x.shape[0], np.float64)
    _split(_load().quantize_rows_centred, x.shape[0], _row_grain(x.shape[1]), x, float(inv), int(zero_point),
           int(lo), int(hi), out, l1)
    return out, l1


_int8_gemm: bool | None = None     # whether the host runs the AVX2 int8 micro-kernel (decided once)


def int8_gemm_usable() -> bool:
    """Whether the int8 GEMM of dynamically quantized layers can run: compiled kernels enabled, an x86 host with
    AVX2, and numba compiling for the host (a generic target set by ``NUMBA_CPU_NAME`` lacks the instructions)."""
    global _int8_gemm
    if not _enabled or _load() is False:
        return False
    if _int8_gemm is None:
        import numba
        from llvmlite import binding  # type: ignore[import-untyped]
        features = binding.get_host_cpu_features()
        config = numba.config
        _int8_gemm = (getattr(config, "CPU_NAME", None) in (None, "host") and not getattr(config, "CPU_FEATURES", None)
                      and bool(features.get("avx2", False)))
    return _int8_gemm


def int8_tile() -> tuple[int, int]:
    """(rows of activations, rows of weights) of the int8 micro-kernel's tile: the padding its operands need."""
    return _load()._MR, _load()._NR


def quantize_rows_u8(x: Any, inv: float, zero_point: int, lo: int, hi: int, rows: int, cols: int) -> tuple[Any, Any]:
    """A 2-d float32 array quantized with ``1 / scale = inv`` and ``zero_point`` to [lo, hi] as uint8, padded with
    zeros to (rows, cols), and each row's sum of integers (int32), rows split over the intra-op threads."""
    x = np.ascontiguousarray(x)
    out = np.empty((rows, cols), np.uint8)
    out[x.shape[0]:] = 0
    sums = np.zeros(rows, np.int32)
    _split(_load().quantize_rows_u8, x.shape[0], _row_grain(x.shape[1]), x, float(inv), int(zero_point), int(lo),
           int(hi), out, sums)
    return out, sums


def int8_linear(a: Any, a_sums: Any, w: Any, col_offsets: Any, w_zps: Any, scales: Any, bias: Any, m: int,
                n: int) -> Any:
    """The float32 (m, n) output of a quantized linear layer from padded uint8 activations and int8 weights (see
    ``int8_linear_cols`` in _numba_kernels.py), blocks of output columns split over the intra-op threads."""
    mod = _load()
    y = np.empty((m, n), np.float32)
    blocks = w.shape[0] // mod._NR
    per_block = a.shape[0] * a.shape[1] * mod._NR          # multiply-adds of one block of columns
    _split(mod.int8_linear_cols, blocks, parallel.GRAIN_SIZE * 64 // max(per_block, 1), a, a_sums, w, col_offsets,
           w_zps, scales, bias, y)
    return y
