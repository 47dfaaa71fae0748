"""Dynamically quantized ``Linear`` (mirrors ``torch/ao/nn/quantized/dynamic/modules/linear.py``): int8 weights;
each call quantizes its float input with parameters chosen from the input's own range and returns float."""
from __future__ import annotations

from typing import Any

import ember
import ember.ao.nn.quantized as nnq
from ember.ao.nn.quantized.modules.utils import _quantize_weight

__all__ = ["Linear"]


class Linear(nnq.Linear):
    """``y = x A^T + b`` with a qint8 ``A`` and float ``x`` / ``y``: the product is an exact int8 GEMM (Note
    [Exact integer GEMM]) over the input quantized on the fly (7-bit range, fbgemm's ``reduce_range``)."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype: Any = ember.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4

    def forward(self, x: Any) -> Any:
        w, b = self._weight_bias()
        if self._packed_params.dtype is ember.qint8:
            y = ember._quantized_linear_dynamic(x.float(), w, b, not (self.version is None or self.version < 4))
        elif self._packed_params.dtype is ember.float16:
            y = ember.nn.functional.linear(x.float(), w.half().float(), b)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        return y.to(x.dtype)

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        s = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype is ember.qint8:
            s += f", qscheme={self.weight().qscheme()}"
        return s

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        from ember import nn
        from ember.ao.nn.intrinsic import LinearReLU
        from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
        float_modules = [nn.Linear, NonDynamicallyQuantizableLinear, LinearReLU]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 f"{[m.__name__ for m in float_modules]}, got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if type(mod) is LinearReLU:
            mod = mod[0]
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ember.ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (ember.qint8, ember.float16):
            raise AssertionError("The only supported dtypes for dynamic quantized linear are qint8 and float16, got: "
                                 f"{dtype}")
        weight_observer(mod.weight)
        qweight = _quantize_weight(mod.weight.float(), weight_observer) if dtype is ember.qint8 else mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear
