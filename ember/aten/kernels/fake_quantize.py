"""Fake quantization (``native/quantized/FakeQuantPerTensorAffine.cpp``, ``FakeQuantPerChannelAffine.cpp``): the
float values a tensor would have after quantizing and dequantizing, and the mask of the elements that stayed inside
``[quant_min, quant_max]`` (the straight-through estimator passes the gradient there, and zero elsewhere).

PyTorch's CPU kernels compute ``q = rint(x * (1 / scale)) + zero_point`` (the product in float32, the zero point
added after rounding -- unlike real quantization, Note [Quantization arithmetic]), then
``(clamp(q, quant_min, quant_max) - zero_point) * scale``; checked bit for bit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, type_name

__all__ = ["fake_quantize_per_tensor_affine_cachemask", "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
           "fake_quantize_per_channel_affine_cachemask"]


def _check(self: Array, quant_min: int, quant_max: int) -> None:
    if self.dtype not in (np.float32, np.float64) and self.dtype.itemsize != 2:
        raise RuntimeError(f"\"fake_quantize_tensor_cachemask_kernel_type_handling\" not implemented for "
                           f"'{type_name(self.dtype)}'")
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _fake(xp: Any, self: Array, scale: Any, zero_point: Any, quant_min: int, quant_max: int,
          per_channel: bool = False) -> tuple[Any, Any]:
    cdt = np.float32 if self.dtype != np.float64 else np.float64
    x = self.astype(cdt, copy=False)
    s = xp.asarray(scale).astype(np.float32)
    inv = (np.float32(1.0) / s).astype(np.float32)
    z = xp.asarray(zero_point).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = xp.rint((x * inv).astype(cdt))
        if per_channel:       # PyTorch's per-channel kernel casts to int64 first: inf and NaN become its minimum
            r = compiled.where(xp, xp.isfinite(r) & (xp.abs(r) < 2.0 ** 63), r, -(2.0 ** 63))
        q = r + z
        mask = (q >= quant_min) & (q <= quant_max)
        out = ((xp.clip(q, quant_min, quant_max) - z).astype(cdt) * s.astype(cdt)).astype(self.dtype)
    return out, mask


def fake_quantize_per_tensor_affine_cachemask(xp: Any, self: Array, scale: float, zero_point: int, quant_min: int,
                                              quant_max: int) -> Any:
    _check(self, quant_min, quant_max)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return _fake(xp, self, np.float32(scale), zero_point, quant_min, quant_max)


def _fake_quantize_per_tensor_affine_cachemask_tensor_qparams(xp: Any, self: Array, scale: Array, zero_point: Array,
                                                               fake_quant_enabled: Array, quant_min: int,
                                                               quant_max: int) -> Any:
    _check(self, quant_min, quant_max)
    if not int(fake_quant_enabled.reshape(-1)[0]):
        return self.copy(), xp.ones(self.shape, bool)
    return _fake(xp, self, scale.reshape(-1)[0], int(zero_point.reshape(-1)[0]), quant_min, quant_max)


def fake_quantize_per_channel_affine_cachemask(xp: Any, self: Array, scale: Array, zero_point: Array, axis: int,
                                               quant_min: int, quant_max: int) -> Any:
    _check(self, quant_min, quant_max)
    if scale.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.size != zero_point.size:
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if not 0 <= axis < max(self.ndim, 1):
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scale.size != self.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    if zero_point.size and (int(zero_point.min()) < quant_min or int(zero_point.max()) > quant_max):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    shape = tuple(-1 if i == axis else 1 for i in range(self.ndim))
    return _fake(xp, self, scale.reshape(shape), zero_point.reshape(shape), quant_min, quant_max, per_channel=True)
