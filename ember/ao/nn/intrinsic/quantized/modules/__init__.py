"""Quantized fused modules (mirrors ``torch/ao/nn/intrinsic/quantized/modules``): Linear and Conv2d whose kernel
applies the ReLU before requantizing."""
from __future__ import annotations

from typing import Any

import ember.ao.nn.quantized as nnq
from ember.ao.nn.intrinsic.modules.fused import ConvReLU2d as _FloatConvReLU2d
from ember.ao.nn.intrinsic.modules.fused import LinearReLU as _FloatLinearReLU

__all__ = ["LinearReLU", "ConvReLU2d"]


class LinearReLU(nnq.Linear):
    """``relu(linear(x))`` on quantized tensors, in one kernel."""

    _FLOAT_MODULE = _FloatLinearReLU
    _RELU = True

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        return super().from_float(mod, use_precomputed_fake_quant)


class ConvReLU2d(nnq.Conv2d):
    """``relu(conv2d(x))`` on quantized tensors, in one kernel."""

    _FLOAT_MODULE = _FloatConvReLU2d
    _RELU = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        return super().from_float(mod, use_precomputed_fake_quant)
