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


def _check_from_float(cls: Any, mod: Any) -> None:
    types = cls._FLOAT_MODULE if isinstance(cls._FLOAT_MODULE, (tuple, list)) else (cls._FLOAT_MODULE,)
    if type(mod) not in types:
        names = ", ".join(t.__name__ for t in types)
        raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names}, but got: {type(mod)}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
