"""Which float module becomes which observed / quantized one (mirrors
``torch/ao/quantization/quantization_mappings.py``)."""
from __future__ import annotations

from typing import Any

import copy

from ember import nn
import ember.ao.nn.intrinsic as nni
import ember.ao.nn.intrinsic.qat as nniqat
import ember.ao.nn.intrinsic.quantized as nniq
import ember.ao.nn.qat as nnqat
import ember.ao.nn.quantized as nnq
import ember.ao.nn.quantized.dynamic as nnqd
from ember.ao.quantization.stubs import DeQuantStub, QuantStub
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear

__all__ = ["DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS",
           "get_default_static_quant_module_mappings", "get_default_dynamic_quant_module_mappings",
           "get_default_qat_module_mappings", "get_default_qconfig_propagation_list", "no_observer_set"]

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS: dict[Any, Any] = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Conv2d: nnq.Conv2d,
    NonDynamicallyQuantizableLinear: nnq.Linear,
    nn.Linear: nnq.Linear,
    nn.ReLU6: nnq.ReLU6,
    nnq.FloatFunctional: nnq.QFunctional,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.LinearReLU: nniq.LinearReLU,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear,
    nnqat.Conv2d: nnq.Conv2d,
}

DEFAULT_QAT_MODULE_MAPPINGS: dict[Any, Any] = {
    nn.Conv2d: nnqat.Conv2d,
    nn.Linear: nnqat.Linear,
    NonDynamicallyQuantizableLinear: nnqat.Linear,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.LinearReLU: nniqat.LinearReLU,
}

DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS: dict[Any, Any] = {
    nn.Linear: nnqd.Linear,
    NonDynamicallyQuantizableLinear: nnqd.Linear,
    nn.LSTM: nnqd.LSTM,
    nn.GRU: nnqd.GRU,
    nni.LinearReLU: nnqd.Linear,
}

_INCLUDE_QCONFIG_PROPAGATE_LIST: set[Any] = {nn.Sequential}


def no_observer_set() -> set[Any]:
    return set()


def get_default_static_quant_module_mappings() -> dict[Any, Any]:
    return copy.copy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_default_qat_module_mappings() -> dict[Any, Any]:
    return copy.copy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings() -> dict[Any, Any]:
    return copy.copy(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list() -> set[Any]:
    """The module types that get a qconfig (and observers) by default: those some mapping converts."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | _INCLUDE_QCONFIG_PROPAGATE_LIST)
