"""``QConfig`` (mirrors ``torch/ao/quantization/qconfig.py``): which observer (or fake-quantize) classes a layer's
activations and weights get, and the defaults per backend."""
from __future__ import annotations

from typing import Any

from collections import namedtuple

import ember
from ember.nn.modules.module import Module
from ember.ao.quantization.fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize,
                                                 default_fake_quant, default_fused_per_channel_wt_fake_quant,
                                                 default_fused_wt_fake_quant,
                                                 default_per_channel_weight_fake_quant, default_weight_fake_quant)
from ember.ao.quantization.observer import (HistogramObserver, MovingAverageMinMaxObserver, PlaceholderObserver,
                                            default_dynamic_quant_observer, default_float_qparams_observer,
                                            default_observer, default_per_channel_weight_observer,
                                            default_placeholder_observer, default_weight_observer)

__all__ = ["QConfig", "default_qconfig", "default_per_channel_qconfig", "default_dynamic_qconfig",
           "float16_dynamic_qconfig", "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig",
           "default_qat_qconfig", "get_default_qconfig", "get_default_qat_qconfig", "qconfig_equals"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to quantize a layer: observer *classes* (or ``with_args`` constructors) for its activations and its
    weights; ``prepare`` makes an instance per layer."""

    __slots__ = ()

    def __new__(cls, activation: Any, weight: Any) -> QConfig:
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. Use "
                             "MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=ember.float16, is_dynamic=True),
                                  weight=PlaceholderObserver.with_args(dtype=ember.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {_BACKENDS}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """Post-training static quantization's defaults: a histogram observer on activations (7-bit range on x86 /
    fbgemm, whose kernels accumulate in 16 bits) and symmetric int8 weights (per channel except on qnnpack)."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not supported. Version number "
                             "must be 0")
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False), weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=backend in ("x86", "fbgemm")),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """Quantization-aware training's defaults: moving-average fake quantization (fused with the observer when
    ``version`` is 1, the default)."""
    _check_backend(backend)
    reduce = backend in ("x86", "fbgemm")
    if version == 0:
        act = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                     **({"reduce_range": reduce} if backend != "onednn" else {}))
        weight = default_weight_fake_quant if backend == "qnnpack" else default_per_channel_weight_fake_quant
        return QConfig(activation=act, weight=weight)
    if version == 1:
        act = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                                      quant_max=255,
                                                      **({"reduce_range": reduce} if backend != "onednn" else {}))
        weight = default_fused_wt_fake_quant if backend == "qnnpack" else default_fused_per_channel_wt_fake_quant
        return QConfig(activation=act, weight=weight)
    raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not supported. Version number "
                         "must be 0 or 1")


def _partial_equals(a: Any, b: Any) -> bool:
    pa, pb = getattr(a, "p", a), getattr(b, "p", b)
    return (getattr(pa, "func", pa) == getattr(pb, "func", pb) and getattr(pa, "keywords", None) ==
            getattr(pb, "keywords", None))


def qconfig_equals(q1: Any, q2: Any) -> bool:
    if q1 is None or q2 is None:
        return q1 == q2
    return _partial_equals(q1.activation, q2.activation) and _partial_equals(q1.weight, q2.weight)

