"""QuantizedCPU kernels of the layers a quantized network runs (``native/quantized/cpu``): linear and convolution
(Note [Exact integer GEMM] in gemm.py), ReLU / hardtanh on the integers, quantized addition, max and adaptive
average pooling, and concatenation."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels import pooling as Kpool
from ember.aten.quantized import gemm
from ember.aten.quantized import quantizer as Qz
from ember.aten.wrap import new_tensor
from ember.c10.dispatch_key import KS_CPU, KS_QUANTIZED_CPU

__all__ = ["quantized_linear", "quantized_linear_dynamic", "quantized_rnn_layer_dynamic",
           "quantized_conv", "relu_quantized_cpu",
           "relu_quantized_cpu_", "hardtanh_quantized_cpu", "quantized_add", "quantized_max_pool2d_with_indices",
           "adaptive_avg_pool2d_quantized_cpu", "cat_quantized_cpu"]


def _q(arr: np.ndarray, like: Any) -> Any:
    return new_tensor(arr, KS_QUANTIZED_CPU, like._device)


def _opt(t: Any) -> np.ndarray | None:
    return None if t is None else t._data


def quantized_linear(input: Any, weight: Any, bias: Any, output_scale: float, output_zero_point: int,  # noqa: A002
                     relu: bool = False) -> Any:
    return _q(gemm.quantized_linear(input._data, gemm.packed(weight), _opt(bias), float(output_scale),
                                    int(output_zero_point), relu), input)


def quantized_linear_dynamic(input: Any, weight: Any, bias: Any, reduce_range: bool = True) -> Any:  # noqa: A002
    if input.is_quantized:
        raise RuntimeError("quantized::linear_dynamic: the input must be a float tensor")
    return new_tensor(gemm.quantized_linear_dynamic(input._data, gemm.packed(weight), _opt(bias), reduce_range),
                      KS_CPU, input._device)


def quantized_rnn_layer_dynamic(input: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,  # noqa: A002
                                mode: str, reverse: bool, reduce_range: bool = True) -> Any:
    """One layer and direction of a dynamically quantized LSTM / GRU over a (T, B, F) sequence: the inputs of all
    steps projected at once (one set of input parameters, as PyTorch's CPU layers do), the hidden state quantized
    at every step, the gates in float32 (the float kernels' sigmoid and tanh). Returns (output, h_n, c_n); c_n is
    empty for a GRU."""
    from ember.aten.kernels.unary import _sigmoid
    if input.is_quantized:
        raise RuntimeError("quantized dynamic RNN: the input must be a float tensor")
    pack_hh = gemm.packed(w_hh)
    steps, batch = input.shape[0], input.shape[1]
    gi_all = gemm.quantized_linear_dynamic(input._data, gemm.packed(w_ih), _opt(b_ih), reduce_range)
    h = np.array(h0._data, dtype=np.float32)
    c = None if c0 is None else np.array(c0._data, dtype=np.float32)
    hidden = h.shape[-1]
    out = np.empty((steps, batch, hidden), np.float32)
    cell = (loops.rnn.lstm_cell if mode == "LSTM" else loops.rnn.gru_cell) if compiled.usable(np, h, gi_all) else None
    ws = np.empty((batch, (5 if mode == "LSTM" else 4) * hidden), np.float32) if cell is not None else None
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        gh = gemm.quantized_linear_dynamic(h, pack_hh, _opt(b_hh), reduce_range)
        gi = gi_all[t]
        if cell is not None:              # the step's pointwise work in one pass, as the float layers do
            hn = np.empty_like(h)
            cell(gi, gh, c if mode == "LSTM" else h, ws, hn)
            h = hn
        elif mode == "LSTM":
            g = gi + gh
            c = _sigmoid(np, g[:, hidden:2 * hidden]) * c + _sigmoid(np, g[:, :hidden]) * np.tanh(g[:, 2 * hidden:
                                                                                                   3 * hidden])
            h = _sigmoid(np, g[:, 3 * hidden:]) * np.tanh(c)
        else:
            r = _sigmoid(np, gi[:, :hidden] + gh[:, :hidden])
            z = _sigmoid(np, gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
            n = np.tanh(gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
            h = (h - n) * z + n
        out[t] = h
    cn = np.empty((0,), np.float32) if c is None else c
    return (new_tensor(out, KS_CPU, input._device), new_tensor(np.ascontiguousarray(h), KS_CPU, input._device),
            new_tensor(cn, KS_CPU, input._device))


def quantized_conv(input: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,  # noqa: A002
                   groups: int, output_scale: float, output_zero_point: int, relu: bool = False) -> Any:
    return _q(gemm.quantized_conv(input._data, gemm.packed(weight), _opt(bias), stride, padding, dilation, groups,
                                  float(output_scale), int(output_zero_point), relu), input)


def _per_tensor(self: Any, what: str) -> Any:
    qz = Qz.quantizer_of(self._data)
    if not isinstance(qz, Qz.PerTensorAffineQuantizer):
        raise RuntimeError(f"{what}: only per-tensor quantized tensors are supported")
    return qz


def relu_quantized_cpu(self: Any) -> Any:
    """``max(q, zero_point)`` on the integers: the same scale and zero point."""
    qz = Qz.quantizer_of(self._data)
    ints = Qz.int_repr(self._data)
    zp = qz.zero_point if isinstance(qz, Qz.PerTensorAffineQuantizer) else \
        qz.zero_points.reshape(Qz.channel_shape(ints.ndim, qz.axis))
    return _q(Qz.as_quantized(np.maximum(ints, zp).astype(ints.dtype), qz), self)


def relu_quantized_cpu_(self: Any) -> Any:
    ints = Qz.int_repr(self._data)
    ints[...] = Qz.int_repr(relu_quantized_cpu(self)._data)
    self._vc.version += 1
    return self


def hardtanh_quantized_cpu(self: Any, min_val: Any = -1, max_val: Any = 1) -> Any:
    """Clamp in the real domain, on the integers (ReLU6 is ``hardtanh(x, 0, 6)``)."""
    qz = _per_tensor(self, "quantized hardtanh")
    lo, hi = Qz.qrange(qz.qdtype)
    qlo, qhi = Qz.quantize_values(np.array([min_val, max_val], dtype=np.float32), qz.scale, qz.zero_point, qz.qdtype)
    ints = Qz.int_repr(self._data)
    return _q(Qz.as_quantized(np.clip(ints, max(lo, qlo), min(hi, qhi)).astype(ints.dtype), qz), self)


def quantized_add(self: Any, other: Any, scale: float, zero_point: int, relu: bool = False) -> Any:
    """``quantized::add``: the real sum (after a ReLU for ``add_relu``) quantized with ``scale`` / ``zero_point``."""
    qz = _per_tensor(self, "quantized::add")
    a = Qz.dequantize_array(self._data).astype(np.float64)
    b = Qz.dequantize_array(other._data).astype(np.float64) if other.is_quantized else other._data
    y = a + b
    if relu:
        y = np.maximum(y, 0.0)
    return _q(gemm.requantize(y, float(scale), int(zero_point), qz.qdtype), self)


def quantized_max_pool2d_with_indices(self: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                                      dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """The maximum of the integers (quantization is monotonic): the same scale and zero point."""
    qz = Qz.quantizer_of(self._data)
    vals, idx = Kpool.max_pool2d_with_indices(np, Qz.int_repr(self._data), kernel_size, stride, padding, dilation,
                                            ceil_mode)
    return _q(Qz.as_quantized(np.ascontiguousarray(vals), qz), self), new_tensor(idx, KS_CPU, self._device)


def adaptive_avg_pool2d_quantized_cpu(self: Any, output_size: Any) -> Any:
    """The average of the integers, rounded half to even, in the input's parameters."""
    qz = _per_tensor(self, "quantized adaptive_avg_pool2d")
    ints = Qz.int_repr(self._data)
    mean = Kpool._adaptive_avg_pool2d(np, ints.astype(np.float64), output_size)
    lo, hi = Qz.qrange(qz.qdtype)
    out = np.clip(np.rint(mean), lo, hi).astype(ints.dtype)
    return _q(Qz.as_quantized(np.ascontiguousarray(out), qz), self)


def cat_quantized_cpu(tensors: Any, dim: int = 0) -> Any:
    """Concatenation in the first tensor's parameters (the others requantized to them, as PyTorch does)."""
    first = tensors[0]
    qz = _per_tensor(first, "quantized cat")
    parts = []
    for t in tensors:
        if not t.is_quantized:
            raise RuntimeError("quantized cat: all inputs must be quantized")
        if Qz.quantizer_of(t._data) == qz:
            parts.append(Qz.int_repr(t._data))
        else:
            parts.append(Qz.quantize_values(Qz.dequantize_array(t._data), qz.scale, qz.zero_point, qz.qdtype))
    return _q(Qz.as_quantized(np.ascontiguousarray(np.concatenate(parts, axis=dim)), qz), first)
