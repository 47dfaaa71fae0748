"""Quantized matrix products and convolutions (``native/quantized/cpu/qlinear.cpp``, ``qlinear_dynamic.cpp``,
``qconv.cpp``; fbgemm's requantization).

Note [Exact integer GEMM]
A quantized linear layer multiplies 8-bit integers and accumulates in int32: ``acc = sum_k (x_k - x_zp) * (w_k -
w_zp)``. NumPy's integer matmul is exact but has no BLAS, so ember runs float32 BLAS on the centred integers where
float32 is exact: each product is an integer below ``max|x| * max|w|`` and every partial sum of ``k`` of them stays
an integer below ``2**24`` as long as ``k * max|x| * max|w| < 2**24`` -- so the reduction is split into chunks of
that many columns, each a float32 GEMM, and the chunks are added in int64. The result is the int32 accumulator,
bit for bit, at float32 BLAS speed (one chunk for layers narrower than ~500 inputs at full 8-bit range, a few
otherwise). The output is then ``acc * x_scale * w_scale + bias``, requantized with the output's parameters (static
quantization) or returned as float (dynamic quantization).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import conv_algos
from ember.aten.quantized import quantizer as Qz
from ember.c10 import dtype as dt

_EXACT = 2 ** 24


def centred(a: np.ndarray) -> tuple[np.ndarray, int]:
    """The integers of a quantized array minus their zero point(s), as float32 (exact: |v| <= 2**8 for 8-bit types),
    and the largest magnitude they can reach."""
    qz = Qz.quantizer_of(a)
    ints = Qz.int_repr(a)
    if isinstance(qz, Qz.PerTensorAffineQuantizer):
        zp = np.float32(qz.zero_point)
        lo, hi = Qz.qrange(qz.qdtype)
        bound = max(abs(lo - qz.zero_point), abs(hi - qz.zero_point))
    else:
        shape = Qz.channel_shape(ints.ndim, qz.axis)
        zp = qz.zero_points.reshape(shape).astype(np.float32)
        lo, hi = Qz.qrange(qz.qdtype)
        bound = int(max(np.abs(lo - qz.zero_points).max(initial=0), np.abs(hi - qz.zero_points).max(initial=0)))
    return ints.astype(np.float32) - zp, bound


def int_matmul(a: np.ndarray, b: np.ndarray, bound: int) -> np.ndarray:
    """``a @ b`` exactly (Note [Exact integer GEMM]) for float32 arrays of integers whose products are at most
    ``bound`` in magnitude; float64 result holding integers."""
    k = a.shape[-1]
    step = max(1, (_EXACT - 1) // max(bound, 1))
    if k <= step:
        return np.asarray(np.matmul(a, b), dtype=np.float64)
    out = np.zeros(a.shape[:-1] + b.shape[-1:], np.float64)
    for s in range(0, k, step):
        out += np.matmul(a[..., s:s + step], b[s:s + step])
    return out


def _scales(w: np.ndarray, n_out: int) -> np.ndarray:
    """The weight scale per output channel (per-tensor weights: one, repeated)."""
    qz = Qz.quantizer_of(w)
    if isinstance(qz, Qz.PerTensorAffineQuantizer):
        return np.full(n_out, qz.scale, np.float64)
    if qz.axis != 0:
        raise RuntimeError("quantized linear / conv: per-channel weights must be quantized along axis 0")
    return np.asarray(qz.scales, dtype=np.float32).astype(np.float64)


def linear_accumulate(xc: np.ndarray, xbound: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the int32 accumulator of ``x @ w.T`` as float64, the weight scales per output feature)."""
    wc, wbound = centred(w)
    acc = int_matmul(xc.reshape(-1, xc.shape[-1]), wc.T, xbound * wbound).reshape(xc.shape[:-1] + (w.shape[0],))
    return acc, _scales(w, w.shape[0])


def requantize(y: np.ndarray, scale: float, zero_point: int, qdtype: Any) -> np.ndarray:
    """Float results to the output's quantized array."""
    ints = Qz.quantize_values(y.astype(np.float32), scale, zero_point, qdtype)
    return Qz.as_quantized(ints, Qz.PerTensorAffineQuantizer(qdtype, scale, zero_point))


def _check_linear(x: np.ndarray, w: np.ndarray, name: str) -> None:
    if x.shape[-1] != w.shape[1]:
        raise RuntimeError(f"{name}: input size {x.shape[-1]} does not match the weight's {w.shape[1]} in features "
                           f"(mat1 and mat2 shapes cannot be multiplied ({int(np.prod(x.shape[:-1]))}x{x.shape[-1]} "
                           f"and {w.shape[1]}x{w.shape[0]}))")
    if Qz.quantizer_of(w).qdtype.name != "qint8":
        raise RuntimeError(f"{name}: the weight must be qint8")


def quantized_linear(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out_scale: float, out_zero_point: int,
                     relu: bool) -> np.ndarray:
    """Static quantized ``linear`` (quint8 input, qint8 weight, float bias): the output quantized with
    ``out_scale`` / ``out_zero_point`` (after a ReLU for LinearReLU)."""
    _check_linear(x, w, "quantized::linear")
    xq = Qz.quantizer_of(x)
    if not isinstance(xq, Qz.PerTensorAffineQuantizer) or xq.qdtype.name != "quint8":
        raise RuntimeError("quantized::linear (fbgemm): expected a per-tensor quint8 input")
    xc, xbound = centred(x)
    acc, ws = linear_accumulate(xc, xbound, w)
    y = acc * (np.float64(np.float32(xq.scale)) * ws)
    if bias is not None:
        y += bias.astype(np.float64)
    if relu:
        y = np.maximum(y, 0.0)
    return requantize(y, out_scale, out_zero_point, xq.qdtype)


def quantized_linear_dynamic(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, reduce_range: bool) -> np.ndarray:
    """Dynamic quantized ``linear``: the float input quantized to quint8 with parameters chosen from its own range
    (7 bits with ``reduce_range``, fbgemm's default), the product accumulated exactly, the result float32."""
    from ember.aten.composite.quantize import choose_qparams
    _check_linear(x, w, "quantized::linear_dynamic")
    xf = np.ascontiguousarray(x, dtype=np.float32)
    lo, hi = (float(xf.min()), float(xf.max())) if xf.size else (0.0, 0.0)
    scale, zp = choose_qparams(lo, hi, 0, 255, reduce_range=reduce_range)
    q = Qz.quantize_values(xf, scale, zp, dt.quint8)
    xc = q.astype(np.float32) - np.float32(zp)
    qmin, qmax = (0, 127) if reduce_range else (0, 255)
    acc, ws = linear_accumulate(xc, max(abs(qmin - zp), abs(qmax - zp)), w)
    y = acc * (np.float64(np.float32(scale)) * ws)
    if bias is not None:
        y += bias.astype(np.float64)
    return y.astype(np.float32)


def quantized_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride: Any, padding: Any, dilation: Any,
                   groups: int, out_scale: float, out_zero_point: int, relu: bool) -> np.ndarray:
    """Static quantized convolution (N, C, *spatial) with an im2col GEMM on the centred integers (exact: float32
    when the reduction is short enough, float64 otherwise)."""
    xq = Qz.quantizer_of(x)
    if not isinstance(xq, Qz.PerTensorAffineQuantizer) or xq.qdtype.name != "quint8":
        raise RuntimeError("quantized::conv2d (fbgemm): expected a per-tensor quint8 input")
    if Qz.quantizer_of(w).qdtype.name != "qint8":
        raise RuntimeError("quantized::conv2d: the weight must be qint8")
    xc, xbound = centred(x)
    wc, wbound = centred(w)
    k = int(np.prod(w.shape[1:]))
    work = np.float32 if k * xbound * wbound < _EXACT else np.float64
    acc = conv_algos._fwd_gemm(np, xc.astype(work), wc.astype(work), tuple(stride), tuple(padding), tuple(dilation),
                               groups).astype(np.float64)
    ws = _scales(w, w.shape[0]).reshape((1, -1) + (1,) * (acc.ndim - 2))
    y = acc * (np.float64(np.float32(xq.scale)) * ws)
    if bias is not None:
        y += bias.astype(np.float64).reshape((1, -1) + (1,) * (acc.ndim - 2))
    if relu:
        y = np.maximum(y, 0.0)
    return requantize(np.ascontiguousarray(y), out_scale, out_zero_point, xq.qdtype)
