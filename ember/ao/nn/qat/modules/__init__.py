"""Quantization-aware training modules (mirrors ``torch/ao/nn/qat/modules``): float layers whose weights pass
through a fake quantizer (``weight_fake_quant``) on the way to the product, so training sees int8 rounding."""
from __future__ import annotations

from typing import Any

from ember import nn
from ember.nn import functional as F

__all__ = ["Linear", "Conv2d"]


def _check(cls: Any, mod: Any) -> None:
    if type(mod) is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}, got "
                             f"{type(mod).__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError("Input float module must have a valid qconfig")


class Linear(nn.Linear):
    """``nn.Linear`` with a fake-quantized weight."""

    _FLOAT_MODULE: Any = nn.Linear

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs={"device": device, "dtype": dtype})

    def forward(self, input: Any) -> Any:  # noqa: A002
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        _check(cls, mod)
        if isinstance(mod, nn.Sequential):     # a fused LinearReLU
            mod = mod[0]
        qat = cls(mod.in_features, mod.out_features, bias=mod.bias is not None, qconfig=mod.qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self) -> Any:
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` with a fake-quantized weight."""

    _FLOAT_MODULE: Any = nn.Conv2d

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 qconfig: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs={"device": device, "dtype": dtype})

    def forward(self, input: Any) -> Any:  # noqa: A002
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        _check(cls, mod)
        if isinstance(mod, nn.Sequential):     # a fused ConvReLU2d
            mod = mod[0]
        qat = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride, padding=mod.padding,
                  dilation=mod.dilation, groups=mod.groups, bias=mod.bias is not None, padding_mode=mod.padding_mode,
                  qconfig=mod.qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat
