"""QuantizedCPU kernels: reading a quantized tensor (``int_repr``, ``dequantize``, its quantization parameters)
and the shape operations that work on the integers as they are (views, ``clone``, ``copy_``, ``equal``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.dispatcher import Dispatcher
from ember.aten.quantized import quantizer as Qz
from ember.aten.wrap import new_tensor
from ember.c10.dispatch_key import KS_CPU, DispatchKey

__all__ = ["int_repr_quantized_cpu", "dequantize_quantized", "q_scale_quant", "q_zero_point_quant",
           "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis", "qscheme_quant",
           "equal_quantized_cpu", "quantized_copy_", "fill_quantized_", "dequantize_tensors_quantized_cpu"]


def _expect(self: Any, per_tensor: bool) -> Any:
    qz = Qz.quantizer_of(self._data)
    if per_tensor and not isinstance(qz, Qz.PerTensorAffineQuantizer):
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  (Could this "
                           "error message be improved?  If so, please report an enhancement request to PyTorch.)")
    if not per_tensor and not isinstance(qz, Qz.PerChannelAffineQuantizer):
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                           "kPerChannelAffineFloatQParams to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")
    return qz


def int_repr_quantized_cpu(self: Any) -> Any:
    """The integers of ``self`` as a plain tensor (uint8 for quint8, int8 for qint8, int32 for qint32), a copy."""
    return new_tensor(np.array(Qz.int_repr(self._data), copy=True, order="K"), KS_CPU, self._device)


def dequantize_quantized(self: Any) -> Any:
    """The real values ``(q - zero_point) * scale`` as float32."""
    return new_tensor(Qz.dequantize_array(self._data), KS_CPU, self._device)


def dequantize_tensors_quantized_cpu(tensors: Any) -> Any:
    return [dequantize_quantized(t) if t.is_quantized else t.float() for t in tensors]


def q_scale_quant(self: Any) -> float:
    return float(_expect(self, True).scale)


def q_zero_point_quant(self: Any) -> int:
    return int(_expect(self, True).zero_point)


def q_per_channel_scales(self: Any) -> Any:
    return new_tensor(_expect(self, False).scales.copy(), KS_CPU, self._device)


def q_per_channel_zero_points(self: Any) -> Any:
    return new_tensor(_expect(self, False).zero_points.copy(), KS_CPU, self._device)


def q_per_channel_axis(self: Any) -> int:
    return int(_expect(self, False).axis)


def qscheme_quant(self: Any) -> Any:
    return Qz.quantizer_of(self._data).qscheme


def equal_quantized_cpu(self: Any, other: Any) -> bool:
    """The same quantizer and the same integers (False when one of them is not quantized)."""
    if not (self.is_quantized and other.is_quantized):
        return False
    a, b = self._data, other._data
    return (a.shape == b.shape and Qz.quantizer_of(a) == Qz.quantizer_of(b)
            and bool(np.array_equal(Qz.int_repr(a), Qz.int_repr(b))))


def quantized_copy_(self: Any, src: Any, non_blocking: bool = False) -> Any:
    """Into a quantized tensor: a float tensor is quantized with ``self``'s parameters; a quantized one of the same
    dtype gives its integers and its quantizer."""
    if not self.is_quantized:
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
                           "dequantize to get a float Tensor from a quantized Tensor")
    ints = Qz.int_repr(self._data)
    mine = Qz.quantizer_of(self._data)
    if src.is_quantized:
        if src.dtype is not self.dtype:
            raise RuntimeError("Expected self.scalar_type() == src.scalar_type() to be true, but got false.  (Could "
                               "this error message be improved?  If so, please report an enhancement request to "
                               "PyTorch.)")
        ints[...] = np.broadcast_to(Qz.int_repr(src._data), ints.shape)
        self._data = Qz.as_quantized(ints, Qz.quantizer_of(src._data))
    else:
        if not isinstance(mine, Qz.PerTensorAffineQuantizer):
            raise RuntimeError("Quantized copy only works with kPerTensorAffine and Float Tensor")
        if src.dtype.name != "float32":
            raise RuntimeError("Quantized copy only works with kPerTensorAffine and Float Tensor")
        x = np.broadcast_to(src._data, ints.shape).astype(np.float32)
        ints[...] = Qz.quantize_values(x, mine.scale, mine.zero_point, mine.qdtype)
    self._vc.version += 1
    return self


# -- shape operations on the integers as they are: the CPU kernels, keeping the quantized key set

def fill_quantized_(self: Any, value: Any) -> Any:
    """``fill_`` of a quantized tensor: the value, as a float tensor of self's shape, copied in (quantized with
    self's parameters), as PyTorch's fill_quantized_."""
    if hasattr(value, "dim"):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        value = value.item()
    full = new_tensor(np.full(Qz.int_repr(self._data).shape, value, np.float32), KS_CPU, self.device)
    return quantized_copy_(self, full)

def _strided_per_channel(self: Any) -> None:
    if isinstance(Qz.quantizer_of(self._data), Qz.PerChannelAffineQuantizer):
        raise RuntimeError("Setting strides is possible only on uniformly quantized tensor")


def _on_integers(op: Any, refuse_per_channel: bool) -> Any:
    cpu = op.kernels[DispatchKey.CPU]

    def kernel(ks: int, self: Any, *args: Any) -> Any:
        if refuse_per_channel:
            _strided_per_channel(self)
        out = cpu(KS_CPU, self, *args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for t in outs:
            t._ks = self._ks      # a view keeps the base's keys already; a copy gets them here
        return out

    kernel.__qualname__ = f"quantized_cpu[{op.qualified_name}]"
    return kernel


# views and copies that move integers without reading them (PyTorch registers these for QuantizedCPU); the second
# list changes strides, which PyTorch allows only for per-tensor quantization
_LAYOUT_OPS = ("view", "_unsafe_view", "_reshape_alias", "alias", "slice.Tensor", "unsqueeze", "squeeze",
               "squeeze.dim", "squeeze.dims", "clone", "detach", "unfold", "split.Tensor", "split_with_sizes",
               "unbind.int", "chunk", "narrow")
_STRIDED_OPS = ("transpose.int", "permute", "t", "select.int", "expand", "as_strided", "movedim.int", "contiguous",
                "_contiguous_copy")


def register_layout_kernels() -> None:
    """Called once the CPU kernels are registered (ember/aten/backends.py's ``register_kernels``)."""
    for names, refuse in ((_LAYOUT_OPS, False), (_STRIDED_OPS, True)):
        for name in names:
            op = Dispatcher.ops.get("aten::" + name)
            if op is not None and DispatchKey.CPU in op.kernels:
                op.register(DispatchKey.QuantizedCPU, _on_integers(op, refuse))
