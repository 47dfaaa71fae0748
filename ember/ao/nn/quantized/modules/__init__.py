"""Quantized modules (mirrors ``torch/ao/nn/quantized/modules/__init__.py``): ``Quantize`` / ``DeQuantize`` and the
layers ``convert`` puts in place of observed float ones."""
from __future__ import annotations

from typing import Any

import ember
from ember.ao.nn.quantized.modules.activation import ReLU6
from ember.ao.nn.quantized.modules.conv import Conv2d
from ember.ao.nn.quantized.modules.functional_modules import FloatFunctional, FXFloatFunctional, QFunctional
from ember.ao.nn.quantized.modules.linear import Linear
from ember.nn.modules.module import Module

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv2d", "ReLU6", "FloatFunctional", "FXFloatFunctional",
           "QFunctional"]


class Quantize(Module):
    """Quantize a float input with fixed ``scale`` / ``zero_point`` (what ``QuantStub`` becomes)."""

    def __init__(self, scale: float, zero_point: int, dtype: Any, factory_kwargs: Any = None) -> None:
        super().__init__()
        self.register_buffer("scale", ember.tensor([scale]))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.long))
        self.dtype = dtype

    def forward(self, X: Any) -> Any:
        return ember.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod: Any, use_precomputed_fake_quant: bool = False) -> Quantize:
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError("Module must have activation_post_process")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(float(scale), int(zero_point), mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(Module):
    """Dequantize a quantized input to float32 (what ``DeQuantStub`` becomes)."""

    def forward(self, Xq: Any) -> Any:
        return Xq.dequantize()

    @staticmethod
    def from_float(mod: Any, use_precomputed_fake_quant: bool = False) -> DeQuantize:
        return DeQuantize()
