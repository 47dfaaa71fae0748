"""Shared pieces of the quantized modules (mirrors ``torch/ao/nn/quantized/modules/utils.py``)."""
from __future__ import annotations

from typing import Any

import ember
from ember.nn.modules.module import Module

__all__ = ["WeightedQuantizedModule"]


class WeightedQuantizedModule(Module):
    """A quantized module with weights, made from an observed float module by ``from_float``."""

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        raise NotImplementedError

    @classmethod
    def from_reference(cls, ref_module: Any, output_scale: float, output_zero_point: int) -> Any:
        raise NotImplementedError


def _quantize_weight(float_wt: Any, observer: Any) -> Any:
    """The float weight quantized (qint8) with the parameters its observer chose, per tensor or per channel."""
    wt_scale, wt_zp = observer.calculate_qparams()
    if observer.qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine):
        return ember.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), ember.qint8)
    if observer.qscheme in (ember.per_channel_symmetric, ember.per_channel_affine):
        return ember.quantize_per_channel(float_wt, wt_scale.to(ember.double), wt_zp.to(ember.int64),
                                          observer.ch_axis, ember.qint8)
    raise ValueError(f"Unsupported qscheme: {observer.qscheme}")


def _hide_packed_params_repr(self: Any, packed_params_cls: type) -> str:
    """``Module.__repr__`` without the packed-parameters child (PyTorch shows the layer, not its storage)."""
    extra = self.extra_repr()
    lines = [] if not extra else extra.split("\n")
    children = []
    for key, module in self._modules.items():
        if isinstance(module, packed_params_cls):
            continue
        mod_str = repr(module).replace("\n", "\n  ")
        children.append(f"({key}): {mod_str}")
    body = lines + children
    main = self._get_name() + "("
    if body:
        main += ("\n  " + "\n  ".join(body) + "\n") if len(lines) > 1 or children else body[0]
    return main + ")"


def _observed_parts(cls: Any, mod: Any, use_precomputed_fake_quant: bool) -> tuple[Any, Any, Any]:
    """(the float layer, its quantized weight, its output observer) of an observed module -- a float layer after
    ``prepare`` (a fused one's first part), or a QAT layer (a Conv+BN one with its batch norm folded in now)."""
    if hasattr(mod, "weight_fake_quant"):
        from ember.ao.nn.intrinsic.qat import ConvBn2d
        if isinstance(mod, ConvBn2d):
            from ember.nn.utils.fusion import fuse_conv_bn_weights
            mod.weight, mod.bias = fuse_conv_bn_weights(mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var,
                                                        mod.bn.eps, mod.bn.weight, mod.bn.bias)
        weight_post_process = mod.weight_fake_quant
        activation_post_process = mod.activation_post_process
    else:
        _check_from_float(cls, mod)
        activation_post_process = mod.activation_post_process
        from ember.ao.nn.intrinsic import _FusedModule
        if isinstance(mod, _FusedModule):
            mod = mod[0]
        weight_post_process = mod.qconfig.weight()
    if not use_precomputed_fake_quant:
        weight_post_process(mod.weight)
    if weight_post_process.dtype is not ember.qint8:
        raise AssertionError(f"Weight observer must have dtype torch.qint8, got {weight_post_process.dtype}")
    return mod, _quantize_weight(mod.weight.float(), weight_post_process), activation_post_process


def _scale_zero_point_to_state_dict(self: Any, destination: Any, prefix: str) -> None:
    destination[prefix + "scale"] = ember.tensor(self.scale)
    destination[prefix + "zero_point"] = ember.tensor(self.zero_point)


def _scale_zero_point_from_state_dict(self: Any, state_dict: Any, prefix: str) -> None:
    self.scale = float(state_dict.pop(prefix + "scale"))
    self.zero_point = int(state_dict.pop(prefix + "zero_point"))


def _check_from_float(cls: Any, mod: Any) -> None:
    types = cls._FLOAT_MODULE if isinstance(cls._FLOAT_MODULE, (tuple, list)) else (cls._FLOAT_MODULE,)
    if type(mod) not in types:
        names = ", ".join(t.__name__ for t in types)
        raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names}, but got: {type(mod)}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
