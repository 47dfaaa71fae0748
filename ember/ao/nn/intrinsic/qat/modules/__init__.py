"""Fused modules for quantization-aware training (mirrors ``torch/ao/nn/intrinsic/qat/modules``): Linear+ReLU and
Conv+ReLU with fake-quantized weights, and Conv+BatchNorm(+ReLU), which trains the batch norm while quantizing the
weight as it will be folded (``weight * gamma / running_std``), then undoes the scale before the batch norm."""
from __future__ import annotations

from typing import Any

import math

import ember
from ember import nn
from ember.nn import functional as F
import ember.ao.nn.intrinsic as nni
import ember.ao.nn.qat as nnqat

__all__ = ["LinearReLU", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d", "update_bn_stats", "freeze_bn_stats"]


class LinearReLU(nnqat.Linear, nni._FusedModule):
    _FLOAT_MODULE = nni.LinearReLU

    def forward(self, input: Any) -> Any:  # noqa: A002
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self) -> Any:
        return nni.LinearReLU(super().to_float(), nn.ReLU())


class ConvReLU2d(nnqat.Conv2d, nni._FusedModule):
    _FLOAT_MODULE = nni.ConvReLU2d

    def forward(self, input: Any) -> Any:  # noqa: A002
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


class ConvBn2d(nn.Conv2d, nni._FusedModule):
    """Conv2d + BatchNorm2d for QAT (PyTorch's approximate path): ``bn(conv(x, fq(w * s)) / s + b)`` with
    ``s = gamma / sqrt(running_var + eps)``."""

    _FLOAT_MODULE: Any = nni.ConvBn2d
    _RELU = False
    _version = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: Any = None, padding_mode: str = "zeros", eps: float = 1e-05,
                 momentum: float = 0.1, freeze_bn: bool = False, qconfig: Any = None) -> None:
        nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, False,
                           padding_mode)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = nn.BatchNorm2d(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = self.qconfig.weight()
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self) -> None:
        self.bn.reset_running_stats()

    def reset_bn_parameters(self) -> None:
        self.bn.reset_running_stats()
        nn.init.uniform_(self.bn.weight)
        nn.init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward(self, input: Any) -> Any:  # noqa: A002
        running_std = ember.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape([-1, 1, 1, 1]))
        zero_bias = ember.zeros(self.out_channels, dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape([1, -1, 1, 1])
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape([1, -1, 1, 1])
        return self.bn(conv_orig)

    def forward(self, input: Any) -> Any:  # noqa: A002
        out = self._forward(input)
        return F.relu(out) if self._RELU else out

    def train(self, mode: bool = True) -> ConvBn2d:
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have qconfig defined")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                  conv.groups, conv.bias is not None, conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight = conv.weight
        qat.bias = conv.bias
        qat.bn.weight = bn.weight
        qat.bn.bias = bn.bias
        qat.bn.running_mean = bn.running_mean
        qat.bn.running_var = bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat


class ConvBnReLU2d(ConvBn2d):
    _FLOAT_MODULE = nni.ConvBnReLU2d
    _RELU = True


def update_bn_stats(mod: Any) -> None:
    """For ``model.apply``: let the fused batch norms update their running statistics."""
    if isinstance(mod, ConvBn2d):
        mod.update_bn_stats()


def freeze_bn_stats(mod: Any) -> None:
    """For ``model.apply``: freeze the fused batch norms' statistics (late in QAT)."""
    if isinstance(mod, ConvBn2d):
        mod.freeze_bn_stats()
