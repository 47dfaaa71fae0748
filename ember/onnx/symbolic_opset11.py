"""``ember.onnx.symbolic_opset11``: the helpers symbolic functions call to emit common operators (``unsqueeze``,
``squeeze``, ``select``), written for the opset being exported (axes as an input from opset 13 on)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["unsqueeze", "squeeze", "select"]


def _axes(g: Any, op: str, x: str, dims: list[int]) -> str:
    if g.opset >= 13:
        return g.op(op, x, g.op("Constant", value_t=np.asarray(dims, np.int64)))
    return g.op(op, x, axes_i=dims)


def unsqueeze(g: Any, self: str, dim: int) -> str:
    return _axes(g, "Unsqueeze", self, [int(dim)])


def squeeze(g: Any, self: str, dim: Any = None) -> str:
    if dim is None:
        return g.op("Squeeze", self)
    return _axes(g, "Squeeze", self, [int(dim)])


def select(g: Any, self: str, dim: int, index: Any) -> str:
    if not isinstance(index, str):
        index = g.op("Constant", value_t=np.asarray(int(index), np.int64))
    return g.op("Gather", self, index, axis_i=int(dim))
