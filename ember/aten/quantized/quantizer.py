"""Quantizers (mirrors ``aten/src/ATen/quantized/Quantizer.h`` / ``.cpp`` and the CPU quantize / dequantize kernels
of ``native/quantized/AffineQuantizer.cpp``): how a quantized tensor's integers map to reals, and the array math of
quantizing and dequantizing.

Note [Where a quantized tensor keeps its quantizer]
PyTorch's ``QTensorImpl`` holds a ``Quantizer`` beside the storage. ember's tensor is its array, so the quantizer
rides in the array's structured dtype (Note [Quantized dtypes] in ember/c10/dtype.py) as dtype *metadata*: NumPy
hands a dtype's metadata on through every view, reshape, transpose, copy and ``empty_like``, so a view of a
quantized tensor, its clone and its ``.data`` / ``detach()`` keep its scale and zero point with no code of their
own, as PyTorch's views share the quantizer.

Note [Quantization arithmetic]
``q = clamp(round(x / scale) + zero_point, qmin, qmax)``, ``x' = (q - zero_point) * scale``, with PyTorch's x86
(fbgemm) roundings, checked bit for bit: per-tensor 8-bit quantization computes ``x * (1 / scale) + zero_point`` in
float32 as one fused multiply-add, then rounds half to even (NaN becomes qmax); qint32 and per-channel quantization
round the product and the sum to float32 one after the other (NaN becomes qmin for qint32, 0 for 8-bit types).
Dequantizing computes ``q - zero_point`` in int32 and multiplies it by the scale as a float (per tensor) or a
double (per channel). The scale is kept as a double, as PyTorch does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.c10 import dtype as dt
from ember.c10.qscheme import per_channel_affine, per_tensor_affine

_UNDERLYING: dict[str, np.dtype[Any]] = {"qint8": np.dtype(np.int8), "quint8": np.dtype(np.uint8),
                                          "qint32": np.dtype(np.int32)}
_BY_SCALAR_TYPE = {"int8": "qint8", "uint8": "quint8", "int32": "qint32"}


class PerTensorAffineQuantizer:
    qscheme = per_tensor_affine

    def __init__(self, qdtype: Any, scale: float, zero_point: int) -> None:
        self.qdtype, self.scale, self.zero_point = qdtype, float(scale), int(zero_point)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PerTensorAffineQuantizer) and other.qdtype is self.qdtype
                and other.scale == self.scale and other.zero_point == self.zero_point)

    __hash__ = None  # type: ignore[assignment]


class PerChannelAffineQuantizer:
    qscheme = per_channel_affine

    def __init__(self, qdtype: Any, scales: np.ndarray, zero_points: np.ndarray, axis: int) -> None:
        self.qdtype, self.axis = qdtype, int(axis)
        self.scales = np.ascontiguousarray(scales, dtype=np.float64)
        self.zero_points = np.ascontiguousarray(zero_points, dtype=np.int64)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PerChannelAffineQuantizer) and other.qdtype is self.qdtype
                and other.axis == self.axis and np.array_equal(other.scales, self.scales)
                and np.array_equal(other.zero_points, self.zero_points))

    __hash__ = None  # type: ignore[assignment]


Quantizer = Any   # one of the two classes above


def is_quantized_array(a: Any) -> bool:
    d = a.dtype
    return d.names is not None and d.metadata is not None and "quantizer" in d.metadata


def quantizer_of(a: Any) -> Quantizer:
    return a.dtype.metadata["quantizer"]


def underlying(qdtype: Any) -> np.dtype[Any]:
    return _UNDERLYING[qdtype.name]


def qdtype_of_underlying(npdt: Any) -> Any:
    """qint8 / quint8 / qint32 for int8 / uint8 / int32 (``_make_per_tensor_quantized_tensor``)."""
    name = _BY_SCALAR_TYPE.get(np.dtype(npdt).name)
    if name is None:
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like torch.quint8")
    return getattr(dt, name)


def qrange(qdtype: Any) -> tuple[int, int]:
    info = np.iinfo(underlying(qdtype))
    return int(info.min), int(info.max)


def as_quantized(ints: np.ndarray, quantizer: Quantizer) -> np.ndarray:
    """The integer array ``ints`` seen as a quantized array (no copy): its dtype carries ``quantizer``."""
    qd = quantizer.qdtype
    d = np.dtype([(qd.name, underlying(qd))], metadata={"quantizer": quantizer})
    return ints.view(d)


def int_repr(a: np.ndarray) -> np.ndarray:
    """The integers of a quantized array, as a view."""
    return a.view(underlying(quantizer_of(a).qdtype))


def check_zero_point(qdtype: Any, zero_point: int, fn: str) -> None:
    lo, hi = qrange(qdtype)
    if zero_point > hi:
        raise RuntimeError(f"{fn} zero_point {zero_point} is above upper bound.")
    if zero_point < lo:
        raise RuntimeError(f"{fn} zero_point {zero_point} is below lower bound.")


def quantize_values(x: np.ndarray, scale: Any, zero_point: Any, qdtype: Any, per_channel: bool = False) -> np.ndarray:
    """Note [Quantization arithmetic]: float32 ``x`` to the integers of ``qdtype`` (``scale`` / ``zero_point``
    broadcast against ``x``)."""
    lo, hi = qrange(qdtype)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / np.asarray(scale, dtype=np.float64).astype(np.float32)
        zp = np.asarray(zero_point, dtype=np.int64)
        if qdtype.name == "qint32" or per_channel:     # the product and the sum rounded to float32 one by one
            v = np.asarray(x * inv, dtype=np.float32)  # (an array also for a 0-d x, whose product is a scalar)
            v += zp.astype(np.float32)
            nan = lo if qdtype.name == "qint32" else 0
        else:    # one rounding: the float64 product of two float32 is exact, the sum rounds once to float32
            w = x.astype(np.float64)
            w *= inv.astype(np.float64)
            w += zp
            v = w.astype(np.float32)
            nan = hi
        np.rint(v, out=v)
        if np.isnan(v).any():
            v[np.isnan(v)] = nan
        if qdtype.name == "qint32":     # float32 cannot hold the int32 bounds: clip where they are exact
            return np.asarray(np.clip(v.astype(np.float64), lo, hi), dtype=underlying(qdtype))
        np.clip(v, lo, hi, out=v)
        return np.asarray(v, dtype=underlying(qdtype))


def dequantize_values(q: np.ndarray, scale: Any, zero_point: Any, per_channel: bool = False) -> np.ndarray:
    """``(q - zero_point) * scale`` as float32: the difference in int32 (wrapping, as PyTorch's does), the product
    in float32 with the float scale per tensor, in double with the double scales per channel."""
    with np.errstate(over="ignore"):
        diff = (q.astype(np.int32) - np.asarray(zero_point).astype(np.int32)).astype(np.float32)
    if per_channel:
        return (diff * np.asarray(scale, dtype=np.float64)).astype(np.float32)
    return diff * np.float32(scale)


def channel_shape(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(-1 if i == axis else 1 for i in range(ndim))


def dequantize_array(a: np.ndarray) -> np.ndarray:
    """The float32 values of a quantized array."""
    qz = quantizer_of(a)
    ints = int_repr(a)
    if isinstance(qz, PerTensorAffineQuantizer):
        return dequantize_values(ints, qz.scale, qz.zero_point)
    shape = channel_shape(ints.ndim, qz.axis)
    return dequantize_values(ints, qz.scales.reshape(shape), qz.zero_points.reshape(shape), per_channel=True)
