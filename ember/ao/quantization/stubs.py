"""Quantization stubs (mirrors ``torch/ao/quantization/stubs.py``): placeholders in a float model that ``convert``
turns into ``Quantize`` / ``DeQuantize``."""
from __future__ import annotations

from typing import Any

from ember.nn.modules.module import Module

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(Module):
    """Where float activations become quantized: observed after ``prepare``, ``nnq.Quantize`` after ``convert``."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Any) -> Any:
        return x


class DeQuantStub(Module):
    """Where quantized activations become float again (``nnq.DeQuantize`` after ``convert``)."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Any) -> Any:
        return x


class QuantWrapper(Module):
    """``module`` between a QuantStub and a DeQuantStub."""

    def __init__(self, module: Module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X: Any) -> Any:
        return self.dequant(self.module(self.quant(X)))
