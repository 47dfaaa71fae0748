"""Converting convolution weights to a memory format (``torch/nn/utils/memory_format.py``)."""
from __future__ import annotations

from typing import Any

import ember

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Any, memory_format: Any, types: tuple[type, ...]) -> Any:
    if isinstance(module, types):
        w = module.weight.detach().clone().contiguous(memory_format=memory_format)
        module.weight.data = w
    for child in module.children():
        _convert(child, memory_format, types)
    return module


def convert_conv2d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """Lay the weights of every Conv2d / ConvTranspose2d in ``module`` out in ``memory_format``."""
    return _convert(module, memory_format, (ember.nn.Conv2d, ember.nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Any, memory_format: Any) -> Any:
    """Lay the weights of every Conv3d / ConvTranspose3d in ``module`` out in ``memory_format``."""
    return _convert(module, memory_format, (ember.nn.Conv3d, ember.nn.ConvTranspose3d))
