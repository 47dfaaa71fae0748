"""Functional modules (mirrors ``torch/ao/nn/quantized/modules/functional_modules.py``): ``FloatFunctional`` stands
for ``+`` / ``cat`` / ``mul`` in a float model so that ``prepare`` can observe their outputs; ``convert`` swaps it for
``QFunctional``, which adds quantized tensors into the observed output parameters."""
from __future__ import annotations

from typing import Any

import ember
from ember.ao.nn.quantized.modules.utils import _scale_zero_point_from_state_dict, _scale_zero_point_to_state_dict
from ember.nn.modules.module import Module

__all__ = ["FloatFunctional", "FXFloatFunctional", "QFunctional"]


class FloatFunctional(Module):
    """``add`` / ``add_scalar`` / ``mul`` / ``mul_scalar`` / ``cat`` / ``add_relu`` as a module (its
    ``activation_post_process`` observes the results)."""

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = ember.nn.Identity()

    def forward(self, x: Any) -> Any:
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying "
                           "operation")

    def add(self, x: Any, y: Any) -> Any:
        return self.activation_post_process(ember.add(x, y))

    def add_scalar(self, x: Any, y: float) -> Any:
        return ember.add(x, y)

    def mul(self, x: Any, y: Any) -> Any:
        return self.activation_post_process(ember.mul(x, y))

    def mul_scalar(self, x: Any, y: float) -> Any:
        return ember.mul(x, y)

    def cat(self, x: Any, dim: int = 0) -> Any:
        return self.activation_post_process(ember.cat(x, dim=dim))

    def add_relu(self, x: Any, y: Any) -> Any:
        return self.activation_post_process(ember.relu(ember.add(x, y)))


class FXFloatFunctional(FloatFunctional):
    def add(self, x: Any, y: Any) -> Any:
        return ember.add(x, y)

    def mul(self, x: Any, y: Any) -> Any:
        return ember.mul(x, y)

    def cat(self, x: Any, dim: int = 0) -> Any:
        return ember.cat(x, dim=dim)

    def add_relu(self, x: Any, y: Any) -> Any:
        return ember.relu(ember.add(x, y))


class QFunctional(Module):
    """The quantized counterpart of ``FloatFunctional``: results in ``scale`` / ``zero_point``."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = ember.nn.Identity()

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _scale_zero_point_to_state_dict(self, destination, prefix)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        _scale_zero_point_from_state_dict(self, state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x: Any) -> Any:
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the underlying operation")

    def add(self, x: Any, y: Any) -> Any:
        return self.activation_post_process(ember._quantized_add(x, y, self.scale, self.zero_point))

    def add_relu(self, x: Any, y: Any) -> Any:
        return self.activation_post_process(ember._quantized_add(x, y, self.scale, self.zero_point, True))

    def cat(self, x: Any, dim: int = 0) -> Any:
        parts = [ember.quantize_per_tensor(t.dequantize(), self.scale, self.zero_point, t.dtype) for t in x]
        return self.activation_post_process(ember.cat(parts, dim=dim))

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> QFunctional:
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of FloatFunctional")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = QFunctional()
        new_mod.scale = float(scale)
        new_mod.zero_point = int(zero_point)
        return new_mod
