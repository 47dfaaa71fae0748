"""Quantized ``Linear`` (mirrors ``torch/ao/nn/quantized/modules/linear.py``): a qint8 weight, a float bias, the
output's scale and zero point; runs ``_quantized_linear`` (Note [Exact integer GEMM])."""
from __future__ import annotations

from typing import Any

import ember
from ember.ao.nn.quantized.modules.utils import (WeightedQuantizedModule, _hide_packed_params_repr, _observed_parts,
                                                 _scale_zero_point_from_state_dict, _scale_zero_point_to_state_dict)
from ember.nn.modules.module import Module

__all__ = ["LinearPackedParams", "Linear"]


class LinearPackedParams(Module):
    """Holds the weight and bias (PyTorch packs them for fbgemm; ember keeps the quantized tensor). Its state_dict
    entries (``dtype``, ``_packed_params`` = (weight, bias)) are PyTorch's."""

    _version = 3

    def __init__(self, dtype: Any = ember.qint8) -> None:
        super().__init__()
        self.dtype = dtype
        if dtype is ember.qint8:
            wq = ember._empty_affine_quantized([1, 1], scale=1.0, zero_point=0, dtype=ember.qint8)
        elif dtype is ember.float16:
            wq = ember.zeros([1, 1], dtype=ember.float)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self.set_weight_bias(wq, None)

    def set_weight_bias(self, weight: Any, bias: Any) -> None:
        if self.dtype not in (ember.qint8, ember.float16):
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self._packed_params = (weight, None if bias is None else bias.detach())

    def _weight_bias(self) -> tuple[Any, Any]:
        return self._packed_params

    def forward(self, x: Any) -> Any:
        return x

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            self.dtype = ember.qint8
        else:
            self.dtype = state_dict.pop(prefix + "dtype")
        if version is None or version < 3:
            self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))
        if version == 3:
            weight, bias = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def __repr__(self) -> str:
        return repr(self._weight_bias())


class Linear(WeightedQuantizedModule):
    """``y = x A^T + b`` on quantized tensors: quint8 input and output (``scale``, ``zero_point``), qint8 weight.

    Example::

        >>> m = ember.ao.nn.quantized.Linear(20, 30)
        >>> x = ember.quantize_per_tensor(ember.randn(128, 20), 1.0, 0, ember.quint8)
        >>> m(x).size()
        ember.Size([128, 30])
    """

    _version = 3
    _FLOAT_MODULE: Any = None   # set below (nn.Linear and NonDynamicallyQuantizableLinear)
    _RELU = False

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype: Any = ember.qint8) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features, dtype=ember.float) if bias_ else None
        if dtype is ember.qint8:
            qweight = ember._empty_affine_quantized([out_features, in_features], scale=1, zero_point=0,
                                                    dtype=ember.qint8)
        elif dtype is ember.float16:
            qweight = ember.zeros([out_features, in_features], dtype=ember.float)
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={self.scale}, "
                f"zero_point={self.zero_point}, qscheme={self.weight().qscheme()}")

    def __repr__(self) -> str:
        return _hide_packed_params_repr(self, LinearPackedParams)

    def forward(self, x: Any) -> Any:
        w, b = self._weight_bias()
        return ember._quantized_linear(x, w, b, self.scale, self.zero_point, self._RELU)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _scale_zero_point_to_state_dict(self, destination, prefix)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        _scale_zero_point_from_state_dict(self, state_dict, prefix)
        version = local_metadata.get("version", None)
        if version is None or version == 1:
            weight = state_dict.pop(prefix + "weight")
            bias = state_dict.pop(prefix + "bias")
            state_dict.update({prefix + "_packed_params.weight": weight, prefix + "_packed_params.bias": bias})
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def _weight_bias(self) -> tuple[Any, Any]:
        return self._packed_params._weight_bias()

    def weight(self) -> Any:
        return self._weight_bias()[0]

    def bias(self) -> Any:
        return self._weight_bias()[1]

    def set_weight_bias(self, w: Any, b: Any) -> None:
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        """The quantized layer of an observed float ``nn.Linear`` (after ``prepare`` and calibration)."""
        mod, qweight, activation_post_process = _observed_parts(cls, mod, use_precomputed_fake_quant)
        act_scale, act_zp = activation_post_process.calculate_qparams()
        qlinear = cls(mod.in_features, mod.out_features, dtype=ember.qint8)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zp)
        return qlinear


def _set_float_modules() -> None:
    from ember import nn
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
    Linear._FLOAT_MODULE = (nn.Linear, NonDynamicallyQuantizableLinear)


_set_float_modules()
