"""``parameters_to_vector`` / ``vector_to_parameters`` (mirrors ``torch/nn/utils/convert_parameters.py``)."""
from __future__ import annotations

from typing import Any

import ember


def parameters_to_vector(parameters: Any) -> Any:
    return ember.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec: Any, parameters: Any) -> None:
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
