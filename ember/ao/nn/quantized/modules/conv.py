"""Quantized ``Conv2d`` (mirrors ``torch/ao/nn/quantized/modules/conv.py``): a qint8 weight (per tensor or per
output channel), a float bias, the output's scale and zero point; runs ``_quantized_conv``."""
from __future__ import annotations

from typing import Any

import ember
from ember.ao.nn.quantized.modules.utils import (WeightedQuantizedModule, _observed_parts,
                                                 _scale_zero_point_from_state_dict, _scale_zero_point_to_state_dict)

__all__ = ["Conv2d"]


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)  # type: ignore[return-value]


class Conv2d(WeightedQuantizedModule):
    """A 2-D convolution over a quantized (quint8) input; the state_dict holds ``weight`` (qint8), ``bias``,
    ``scale`` and ``zero_point``, as PyTorch's."""

    _version = 2
    _FLOAT_MODULE: Any = None
    _RELU = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Currently only zero-padding is supported by quantized conv")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.transposed, self.output_padding = False, (0, 0)
        self.groups, self.padding_mode = groups, padding_mode
        qweight = ember._empty_affine_quantized([out_channels, in_channels // groups, *self.kernel_size], scale=1,
                                                zero_point=0, dtype=ember.qint8)
        self.set_weight_bias(qweight, ember.zeros(out_channels, dtype=ember.float) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}, scale={scale}, " \
            "zero_point={zero_point}"
        if self.padding != (0, 0):
            s += ", padding={padding}"
        if self.dilation != (1, 1):
            s += ", dilation={dilation}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias() is None:
            s += ", bias=False"
        return s.format(**self.__dict__)

    def set_weight_bias(self, w: Any, b: Any) -> None:
        self._weight, self._bias = w, None if b is None else b.detach()

    def _weight_bias(self) -> tuple[Any, Any]:
        return self._weight, self._bias

    def weight(self) -> Any:
        return self._weight

    def bias(self) -> Any:
        return self._bias

    def forward(self, input: Any) -> Any:  # noqa: A002
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return ember._quantized_conv(input, self._weight, self._bias, list(self.stride), list(self.padding),
                                     list(self.dilation), self.groups, self.scale, self.zero_point, self._RELU)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w, b = self._weight_bias()
        destination[prefix + "weight"] = w
        destination[prefix + "bias"] = b
        _scale_zero_point_to_state_dict(self, destination, prefix)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        _scale_zero_point_from_state_dict(self, state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        """The quantized layer of an observed float ``nn.Conv2d`` (or a fused ``ConvReLU2d``; batch norm folded in
        by ``fuse_modules`` first)."""
        mod, qweight, activation_post_process = _observed_parts(cls, mod, use_precomputed_fake_quant)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                    mod.groups, mod.bias is not None, mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zp)
        return qconv


def _set_float_modules() -> None:
    from ember import nn
    Conv2d._FLOAT_MODULE = nn.Conv2d


_set_float_modules()
