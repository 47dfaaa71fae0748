"""Quantized activations (mirrors ``torch/ao/nn/quantized/modules/activation.py``). ``nn.ReLU`` itself runs on
quantized tensors (``relu``'s QuantizedCPU kernel), so quantized models keep it."""
from __future__ import annotations

from typing import Any

import ember
from ember import nn

__all__ = ["ReLU6"]


class ReLU6(nn.ReLU):
    """``min(max(x, 0), 6)`` on a quantized tensor, in its own scale and zero point."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace)

    def forward(self, input: Any) -> Any:  # noqa: A002
        return ember.nn.functional.hardtanh(input, 0.0, 6.0)

    def _get_name(self) -> str:
        return "QuantizedReLU6"

    @staticmethod
    def from_float(mod: Any, use_precomputed_fake_quant: bool = False) -> ReLU6:
        return ReLU6(mod.inplace)
