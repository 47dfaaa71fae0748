"""The ops that make quantized tensors (``native/quantized/QTensor.cpp``, ``TensorFactories.cpp``): quantizing
float tensors per tensor (with given or dynamically chosen parameters) or per channel, wrapping integer tensors as
quantized ones, empty quantized tensors, and ``dequantize`` of a float tensor (a float32 copy).

CompositeExplicitAutograd kernels over the arrays: they build the quantized array (Note [Where a quantized tensor
keeps its quantizer] in ember/aten/quantized/quantizer.py) and wrap it with the QuantizedCPU key set.
"""
from __future__ import annotations

from typing import Any

import math

import numpy as np

from ember.aten.quantized import quantizer as Qz
from ember.aten.wrap import new_tensor
from ember.c10 import dtype as dt
from ember.c10.device import CPU, canonical
from ember.c10.dispatch_key import KS_QUANTIZED_CPU

__all__ = ["quantize_per_tensor", "quantize_per_tensor_tensor_qparams", "quantize_per_tensor_tensors",
           "quantize_per_tensor_dynamic", "quantize_per_channel", "dequantize_cpu_or_cuda", "dequantize_tensors",
           "make_per_tensor_quantized_tensor", "make_per_channel_quantized_tensor", "empty_affine_quantized",
           "empty_per_channel_affine_quantized", "choose_qparams"]


def _c_order(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else a.copy(order="C")


def wrap_quantized(arr: np.ndarray, device: Any = CPU) -> Any:
    """A quantized tensor over the quantized array ``arr``."""
    return new_tensor(arr, KS_QUANTIZED_CPU, device)


def _check_device(t: Any, what: str) -> None:
    if t._device.type != "cpu":
        raise NotImplementedError(f"{what}: quantized tensors live on the CPU in ember (QuantizedCPU); "
                                  f"got a tensor on {t._device}")


def _check_float_input(self: Any) -> None:
    if self.dtype is not dt.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {dt.scalar_type_name(self.dtype)}")


def _check_qdtype(dtype: Any) -> None:
    if dtype not in dt.QUANTIZED_DTYPES:
        raise RuntimeError(f"ScalarType {dt.scalar_type_name(dtype)} is not supported in new_qtensor.")


def _per_tensor(self: Any, scale: float, zero_point: int, dtype: Any) -> Any:
    _check_device(self, "quantize_per_tensor")
    _check_qdtype(dtype)
    _check_float_input(self)
    Qz.check_zero_point(dtype, zero_point, "quantize_tensor_per_tensor_affine")
    ints = Qz.quantize_values(_c_order(self._data), scale, zero_point, dtype)
    return wrap_quantized(Qz.as_quantized(ints, Qz.PerTensorAffineQuantizer(dtype, scale, zero_point)))


def quantize_per_tensor(self: Any, scale: float, zero_point: int, dtype: Any) -> Any:
    """``q = clamp(round(x / scale) + zero_point)`` in ``dtype`` (Note [Quantization arithmetic])."""
    return _per_tensor(self, float(scale), int(zero_point), dtype)


def _one(t: Any) -> Any:
    return t._data.reshape(-1)[0]


def quantize_per_tensor_tensor_qparams(self: Any, scale: Any, zero_point: Any, dtype: Any) -> Any:
    # PyTorch reads the scale as a float (a double of float precision) and the zero point as an integer
    return _per_tensor(self, float(np.float32(_one(scale))), int(_one(zero_point)), dtype)


def quantize_per_tensor_tensors(tensors: Any, scales: Any, zero_points: Any, dtype: Any) -> Any:
    s, z = scales._data.reshape(-1), zero_points._data.reshape(-1)
    return [_per_tensor(t, float(np.float32(s[i])), int(z[i]), dtype) for i, t in enumerate(tensors)]


def choose_qparams(x_min: float, x_max: float, qmin: int, qmax: int, preserve_sparsity: bool = False,
                   reduce_range: bool = False) -> tuple[float, int]:
    """(scale, zero_point) covering [x_min, x_max] and 0 (``quant_utils::ChooseQuantizationParams``)."""
    if not x_min <= x_max:
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal to max")
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    lo, hi = float(np.float32(min(x_min, 0.0))), float(np.float32(max(x_max, 0.0)))
    if lo < 0 < hi and preserve_sparsity:
        symmetric_qmin = int(-((qmax - qmin) / 2 + 1))
        symmetric_qmax = int((qmax - qmin) / 2)
        max_scale = max(abs(lo / symmetric_qmin), abs(hi / symmetric_qmax))
        lo, hi = max_scale * symmetric_qmin, max_scale * symmetric_qmax
    scale = (hi - lo) / (qmax - qmin)
    with np.errstate(divide="ignore", over="ignore"):
        if np.float32(scale) == 0 or math.isinf(np.float32(1.0) / np.float32(scale)):
            scale = 0.1
    small = float(np.float32(6.1e-5))
    if scale < small:
        org = float(np.float32(scale))
        scale = small
        if lo == 0.0:
            hi = small * (qmax - qmin)
        elif hi == 0.0:
            lo = -small * (qmax - qmin)
        else:
            amplifier = float(np.float32(small / org))
            lo, hi = float(np.float32(lo * amplifier)), float(np.float32(hi * amplifier))
    zp_from_min = qmin - lo / scale
    zp_from_max = qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if lo < 0 < hi and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))
    return scale, zp


def quantize_per_tensor_dynamic(self: Any, dtype: Any, reduce_range: bool) -> Any:
    """Quantize with the scale and zero point that cover ``self``'s range (and 0)."""
    if dtype not in (dt.qint8, dt.quint8, dt.float16):
        raise RuntimeError(f"dtype {dt.scalar_type_name(dtype)}not supported")
    if dtype is dt.float16:
        from ember._generated import aten
        return aten._to_copy(self, dtype=dt.float16)
    _check_float_input(self)
    a = self._data
    lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    qmin, qmax = (-128, 127) if dtype is dt.qint8 else (0, 255)
    scale, zp = choose_qparams(lo, hi, qmin, qmax, reduce_range=reduce_range)
    return _per_tensor(self, scale, zp, dtype)


def _per_channel_params(self: Any, scales: Any, zero_points: Any, axis: int) -> tuple[np.ndarray, np.ndarray, int]:
    if scales.dim() != 1:
        raise RuntimeError("scale tensor must be 1-D")
    if zero_points.dim() != 1:
        raise RuntimeError("zero_points tensor must be 1-D")
    if scales.numel() != zero_points.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    nd = self.dim()
    if not 0 <= axis < nd:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}Expected: "
                           f"[0, {nd})")
    if self.shape[axis] != scales.numel():
        raise RuntimeError("length of scales must equal to channel")
    return scales._data.astype(np.float64), zero_points._data.astype(np.int64), axis


def quantize_per_channel(self: Any, scales: Any, zero_points: Any, axis: int, dtype: Any) -> Any:
    """One scale / zero point per slice along ``axis``."""
    _check_device(self, "quantize_per_channel")
    _check_qdtype(dtype)
    _check_float_input(self)
    s, z, axis = _per_channel_params(self, scales, zero_points, axis)
    lo, hi = Qz.qrange(dtype)
    for v in z:
        if v > hi or v < lo:
            raise RuntimeError("quantize_tensor_per_channel_affine zero_point " + str(int(v)) +
                               (" is above upper bound." if v > hi else " is below lower bound."))
    shape = Qz.channel_shape(self.dim(), axis)
    ints = Qz.quantize_values(_c_order(self._data), s.reshape(shape), z.reshape(shape), dtype,
                              per_channel=True)
    return wrap_quantized(Qz.as_quantized(ints, Qz.PerChannelAffineQuantizer(dtype, s, z, axis)))


def dequantize_cpu_or_cuda(self: Any) -> Any:
    """``dequantize`` of a float tensor: a float32 copy."""
    from ember._generated import aten
    return aten._to_copy(self, dtype=dt.float32)


def dequantize_tensors(tensors: Any) -> Any:
    from ember._generated import aten
    return [aten.dequantize_self(t) for t in tensors]


def make_per_tensor_quantized_tensor(self: Any, scale: float, zero_point: int) -> Any:
    """The integers of ``self`` (int8 / uint8 / int32) as a quantized tensor with these parameters (a copy)."""
    _check_device(self, "_make_per_tensor_quantized_tensor")
    qd = Qz.qdtype_of_underlying(self._data.dtype)
    ints = np.array(self._data, copy=True, order="K")
    return wrap_quantized(Qz.as_quantized(ints, Qz.PerTensorAffineQuantizer(qd, float(scale), int(zero_point))))


def make_per_channel_quantized_tensor(self: Any, scale: Any, zero_point: Any, axis: int) -> Any:
    _check_device(self, "_make_per_channel_quantized_tensor")
    qd = Qz.qdtype_of_underlying(self._data.dtype)
    s, z, axis = _per_channel_params(self, scale, zero_point, axis)
    ints = np.array(self._data, copy=True, order="K")
    return wrap_quantized(Qz.as_quantized(ints, Qz.PerChannelAffineQuantizer(qd, s, z, axis)))


def _empty(size: Any, dtype: Any, device: Any) -> np.ndarray:
    if device is not None and canonical(device).type != "cpu":
        raise NotImplementedError("quantized tensors live on the CPU in ember (QuantizedCPU)")
    qd = dt.quint8 if dtype is None else dtype
    _check_qdtype(qd)
    return np.zeros(tuple(int(s) for s in size), Qz.underlying(qd))


def empty_affine_quantized(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                           pin_memory: Any = None, scale: float = 1, zero_point: int = 0,
                           memory_format: Any = None) -> Any:
    """A quantized tensor of ``size`` (its integers zero: ember's empty memory is deterministic)."""
    qd = dt.quint8 if dtype is None else dtype
    ints = _empty(size, dtype, device)
    return wrap_quantized(Qz.as_quantized(ints, Qz.PerTensorAffineQuantizer(qd, float(scale), int(zero_point))))


def empty_per_channel_affine_quantized(size: Any, scales: Any, zero_points: Any, axis: int, dtype: Any = None,
                                       layout: Any = None, device: Any = None, pin_memory: Any = None,
                                       memory_format: Any = None) -> Any:
    qd = dt.quint8 if dtype is None else dtype
    ints = _empty(size, dtype, device)
    quantizer = Qz.PerChannelAffineQuantizer(qd, scales._data, zero_points._data, int(axis))
    return wrap_quantized(Qz.as_quantized(ints, quantizer))


# -- fake quantization (the kernels are in ember/aten/kernels/fake_quantize.py)
def fake_quantize_per_tensor_affine(self: Any, scale: float, zero_point: int, quant_min: int, quant_max: int) -> Any:
    """``(clamp(round(x / scale) + zero_point) - zero_point) * scale``: quantize and dequantize in float, with a
    straight-through gradient inside the range."""
    from ember._generated import aten
    return aten.fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max)[0]


def fake_quantize_per_tensor_affine_tensor_qparams(self: Any, scale: Any, zero_point: Any, quant_min: int,
                                                   quant_max: int) -> Any:
    from ember._generated import aten
    enabled = aten.ones((1,), dtype=dt.int64, device=self.device)
    return aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(self, scale, zero_point, enabled,
                                                                          quant_min, quant_max)[0]


def fake_quantize_per_tensor_affine_cachemask_backward(grad: Any, mask: Any) -> Any:
    return grad * mask


def fake_quantize_per_channel_affine(self: Any, scale: Any, zero_point: Any, axis: int, quant_min: int,
                                     quant_max: int) -> Any:
    from ember._generated import aten
    return aten.fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis, quant_min, quant_max)[0]


def fake_quantize_per_channel_affine_cachemask_backward(grad: Any, mask: Any) -> Any:
    return grad * mask


__all__ += ["fake_quantize_per_tensor_affine", "fake_quantize_per_tensor_affine_tensor_qparams",
            "fake_quantize_per_tensor_affine_cachemask_backward", "fake_quantize_per_channel_affine",
            "fake_quantize_per_channel_affine_cachemask_backward"]
