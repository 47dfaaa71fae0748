"""Quantized matrix products and convolutions (``native/quantized/cpu/qlinear.cpp``, ``qlinear_dynamic.cpp``,
``qconv.cpp``; fbgemm's requantization).

Note [Exact integer GEMM]
A quantized linear layer multiplies 8-bit integers and accumulates in int32: ``acc = sum_k (x_k - x_zp) * (w_k -
w_zp)``. NumPy's integer matmul is exact but has no BLAS, so ember runs float32 BLAS on the centred integers where
float32 is exact: every partial sum, in whatever order BLAS adds, is an integer no larger than the sum of the
magnitudes of its products, ``min(sum_k |x_ik| * max|w|, max|x| * sum_k |w_kj|)``; while that stays below 2**24
one float32 GEMM gives the int32 accumulator bit for bit. Otherwise the reduction is split into chunks of
``2**24 / (max|x| * max|w|)`` columns, each an exact float32 GEMM, added in float64. Each weight is centred, converted
and measured once and cached by its version (PyTorch prepacks weights for fbgemm the same way). The output stage is
fbgemm's: ``acc * (x_scale * w_scale) + bias`` in float32, requantized with the output's parameters (static
quantization) or returned (dynamic quantization).

Note [int8 micro-kernel]
Dynamic quantization (``quantize_dynamic``, fbgemm's default ``reduce_range``) quantizes activations to 7 bits, and
there ember multiplies the bytes themselves, as fbgemm does: an AVX2 micro-kernel written in LLVM IR (the "int8
GEMM" section of ``ember/aten/kernels/loops/quantized.py``) takes the uint8 activations and int8 weights, padded to
whole tiles, and gives the exact int32 sums, which the zero points' sums turn into the centred accumulator above;
the output stage is the same. It runs twice as fast as the float32 GEMM on the same shapes (bench.quantization).
On hosts without AVX2, with compiled kernels off, with 8-bit activations (their pairwise sums could saturate the
kernel's int16 step) or with reductions long enough to overflow int32, the float32 path serves, with the same
results bit for bit.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember.aten.kernels import compiled, conv_algos, loops
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


def int_matmul(a: np.ndarray, b: np.ndarray, a_max: int, b_max: int, b_l1: int,
               a_l1: float | None = None) -> np.ndarray:
    """``a @ b`` exactly (Note [Exact integer GEMM]) for float32 arrays of integers (``a_max`` / ``b_max`` their
    largest magnitudes, ``b_l1`` the largest column sum of ``|b|``, ``a_l1`` the largest row sum of ``|a|`` when the
    caller has it): one float32 GEMM when no partial sum can reach 2**24 -- a partial sum of row i and column j is
    at most ``min(sum|a_i| * b_max, a_max * sum|b_j|)``, and at most ``k * a_max * b_max`` -- else chunks of the
    reduction short enough to be exact, added in float64."""
    k = a.shape[-1]
    if k * a_max * b_max < _EXACT or a_max * b_l1 < _EXACT:
        return np.asarray(np.matmul(a, b))
    if a_l1 is None:
        a_l1 = float(np.abs(a).sum(axis=-1).max(initial=0))
    if a_l1 * b_max < _EXACT:
        return np.asarray(np.matmul(a, b))
    step = max(1, (_EXACT - 1) // max(a_max * b_max, 1))
    out = np.zeros(a.shape[:-1] + b.shape[-1:], np.float64)
    for s in range(0, k, step):
        out += np.matmul(a[..., s:s + step], b[s:s + step])
    return out


def _scales(w: np.ndarray, n_out: int) -> np.ndarray:
    """The weight scale per output channel, as the float the kernels multiply by (per tensor: one, repeated)."""
    qz = Qz.quantizer_of(w)
    if isinstance(qz, Qz.PerTensorAffineQuantizer):
        return np.full(n_out, qz.scale, np.float32)
    if qz.axis != 0:
        raise RuntimeError("quantized linear / conv: per-channel weights must be quantized along axis 0")
    return np.asarray(qz.scales, dtype=np.float32)


class Packed(NamedTuple):
    """A quantized weight prepared for the GEMMs (what PyTorch's prepacking does for fbgemm)."""
    centred: np.ndarray        # its integers minus their zero points, as float32
    max_abs: int               # the largest magnitude among them
    max_l1: int                # the largest sum of magnitudes of an output channel
    scales: np.ndarray         # the scale per output channel (float32)
    zero_points: np.ndarray    # the zero point per output channel (int64)
    lazy: dict[str, Any]       # forms made on first use (``weight_int8``)


def packed(weight: Any) -> Packed:
    """The weight's :class:`Packed` form, computed once per weight tensor and version."""
    cache = weight.__dict__.get("_int_gemm_pack")
    if cache is not None and cache[0] == weight._vc.version and cache[1] is weight._data:
        return cache[2]   # type: ignore[no-any-return]
    a = weight._data
    qz = Qz.quantizer_of(a)
    if qz.qdtype.name != "qint8":
        raise RuntimeError("quantized linear / conv: the weight must be qint8")
    wc, _ = centred(a)
    mags = np.abs(wc.reshape(a.shape[0], -1))
    zps = (np.full(a.shape[0], qz.zero_point, np.int64) if isinstance(qz, Qz.PerTensorAffineQuantizer)
           else np.asarray(qz.zero_points, np.int64).reshape(a.shape[0]))
    pack = Packed(wc, int(mags.max(initial=0)), int(mags.sum(axis=1).max(initial=0)), _scales(a, a.shape[0]), zps, {})
    weight.__dict__["_int_gemm_pack"] = (weight._vc.version, weight._data, pack)
    return pack


def _bound(xc: np.ndarray) -> int:
    return int(np.abs(xc).max(initial=0))


def requantize(y: np.ndarray, scale: float, zero_point: int, qdtype: Any) -> np.ndarray:
    """Float results to the output's quantized array."""
    ints = Qz.quantize_values(y.astype(np.float32), scale, zero_point, qdtype)
    return Qz.as_quantized(ints, Qz.PerTensorAffineQuantizer(qdtype, scale, zero_point))


def _check_linear(x: np.ndarray, wc: np.ndarray, name: str) -> None:
    if x.shape[-1] != wc.shape[1]:
        raise RuntimeError(f"{name}: mat1 and mat2 shapes cannot be multiplied ({int(np.prod(x.shape[:-1]))}x"
                           f"{x.shape[-1]} and {wc.shape[1]}x{wc.shape[0]})")


def _affine(acc: np.ndarray, x_scale: float, w_scales: np.ndarray, bias: np.ndarray | None,
            channel_axis: int) -> np.ndarray:
    """``acc * (x_scale * w_scale) + bias`` in float32, as fbgemm's output stage computes it (in place when ``acc``
    is a float32 array of the caller's own)."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    y = acc.astype(np.float32, copy=False)
    y *= (np.float32(x_scale) * w_scales).reshape(shape)
    if bias is not None:
        y += bias.astype(np.float32, copy=False).reshape(shape)
    return y


def quantized_linear(x: np.ndarray, pack: Packed, bias: np.ndarray | None, out_scale: float, out_zero_point: int,
                     relu: bool) -> np.ndarray:
    """Static quantized ``linear`` (quint8 input, packed qint8 weight, float bias): the output quantized with
    ``out_scale`` / ``out_zero_point`` (after a ReLU for LinearReLU)."""
    wc, w_max, w_l1, ws = pack.centred, pack.max_abs, pack.max_l1, pack.scales
    _check_linear(x, wc, "quantized::linear")
    xq = Qz.quantizer_of(x)
    if not isinstance(xq, Qz.PerTensorAffineQuantizer) or xq.qdtype.name != "quint8":
        raise RuntimeError("quantized::linear (fbgemm): expected a per-tensor quint8 input")
    xc, _ = centred(x)
    x2 = xc.reshape(-1, xc.shape[-1])
    acc = int_matmul(x2, wc.T, _bound(x2), w_max, w_l1).reshape(xc.shape[:-1] + (wc.shape[0],))
    y = _affine(acc, xq.scale, ws, bias, -1)
    if relu:
        np.maximum(y, 0.0, out=y)
    return requantize(y, out_scale, out_zero_point, xq.qdtype)


def quantized_linear_dynamic(x: np.ndarray, pack: Packed, bias: np.ndarray | None, reduce_range: bool) -> np.ndarray:
    """Dynamic quantized ``linear``: the float input quantized to quint8 with parameters chosen from its own range
    (7 bits with ``reduce_range``, fbgemm's default), the product accumulated exactly, the result float32."""
    from ember.aten.composite.quantize import choose_qparams
    wc, w_max, w_l1, ws = pack.centred, pack.max_abs, pack.max_l1, pack.scales
    _check_linear(x, wc, "quantized::linear_dynamic")
    xf = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, x.shape[-1])
    lo, hi = (float(xf.min()), float(xf.max())) if xf.size else (0.0, 0.0)
    scale, zp = choose_qparams(lo, hi, 0, 255, reduce_range=reduce_range)
    qlo, qhi = Qz.qrange(dt.quint8)
    if reduce_range:
        qhi //= 2
    k = xf.shape[1]
    if reduce_range and 0 < k and xf.shape[0] and k * qhi * 256 < 2 ** 31 and compiled.is_enabled() and \
            loops.quantized.int8_gemm_usable():
        return _int8_linear_dynamic(xf, weight_int8(pack), scale, zp, qlo, qhi, ws, bias).reshape(
            x.shape[:-1] + (wc.shape[0],))
    a_l1: float | None = None
    if compiled.usable(np, xf):
        xc, l1 = loops.quantized.quantize_rows_centred(xf, _inverse(scale), zp, qlo, qhi)
        a_l1 = float(l1.max(initial=0))
    else:
        xc = Qz.quantize_values(xf, scale, zp, dt.quint8).astype(np.float32)
        xc -= np.float32(zp)
    acc = int_matmul(xc, wc.T, max(zp - qlo, qhi - zp), w_max, w_l1, a_l1)
    return _affine(acc, scale, ws, bias, -1).reshape(x.shape[:-1] + (wc.shape[0],))


def _inverse(scale: float) -> float:
    """1 / scale as the quantizer computes it: in float32 (Note [Quantization arithmetic])."""
    return float(np.float32(1.0) / np.float32(scale))


def weight_int8(pack: Packed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The int8 micro-kernel's form of a packed weight: its integers as int8 (N', K'), rows padded to whole tiles
    and to a multiple of 32 bytes; their row sums and zero points (int32, N'); made once per pack."""
    if "int8" not in pack.lazy:
        n = pack.centred.shape[0]
        ints = pack.centred.reshape(n, -1) + pack.zero_points[:, None].astype(np.float32)
        k = ints.shape[1]
        _, nr = loops.quantized.int8_tile()
        w = np.zeros((-(-n // nr) * nr, max(32, -(-k // 32) * 32)), np.int8)
        w[:n, :k] = ints
        sums = w.sum(axis=1, dtype=np.int32)
        zps = np.zeros(w.shape[0], np.int32)
        zps[:n] = pack.zero_points
        pack.lazy["int8"] = (w, sums, zps)
    return pack.lazy["int8"]  # type: ignore[no-any-return]


def _int8_linear_dynamic(xf: np.ndarray, w8: Any, scale: float, zp: int, qlo: int, qhi: int, ws: np.ndarray,
                         bias: np.ndarray | None) -> np.ndarray:
    """Note [int8 micro-kernel]: a dynamic linear layer with 7-bit activations on the AVX2 int8 GEMM, which gives
    the exact int32 accumulator of the float32 path, and the same output stage."""
    w, w_sums, w_zps = w8
    m, k = xf.shape
    mr, _ = loops.quantized.int8_tile()
    a, a_sums = loops.quantized.quantize_rows_u8(xf, _inverse(scale), zp, qlo, qhi,
                                          -(-m // mr) * mr, w.shape[1])
    n = ws.shape[0]
    col_offsets = (k * zp * w_zps - zp * w_sums).astype(np.int32)
    scales = np.zeros(w.shape[0], np.float32)
    scales[:n] = np.float32(scale) * ws
    b = np.zeros(w.shape[0], np.float32)
    if bias is not None:
        b[:n] = bias.astype(np.float32, copy=False).reshape(n)
    return loops.quantized.int8_linear(a, a_sums, w, col_offsets, w_zps, scales, b, m, n)  # type: ignore[no-any-return]


def quantized_conv(x: np.ndarray, pack: Packed, bias: np.ndarray | None, stride: Any, padding: Any, dilation: Any,
                   groups: int, out_scale: float, out_zero_point: int, relu: bool) -> np.ndarray:
    """Static quantized convolution (N, C, *spatial) with an im2col GEMM on the centred integers (exact: float32
    when the reduction is short enough, float64 otherwise)."""
    xq = Qz.quantizer_of(x)
    if not isinstance(xq, Qz.PerTensorAffineQuantizer) or xq.qdtype.name != "quint8":
        raise RuntimeError("quantized::conv2d (fbgemm): expected a per-tensor quint8 input")
    wc, w_l1, ws = pack.centred, pack.max_l1, pack.scales
    xc, _ = centred(x)
    work = np.float32 if _bound(xc) * w_l1 < _EXACT else np.float64    # a window's sum is at most max|x| * l1(w)
    acc = conv_algos._fwd_gemm(np, xc.astype(work, copy=False), wc.astype(work, copy=False), tuple(stride),
                               tuple(padding), tuple(dilation), groups)
    y = _affine(acc, xq.scale, ws, bias, 1)
    if relu:
        np.maximum(y, 0.0, out=y)
    return requantize(np.ascontiguousarray(y), out_scale, out_zero_point, xq.qdtype)
