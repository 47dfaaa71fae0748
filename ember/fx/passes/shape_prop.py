"""``torch.fx.passes.shape_prop``: run a GraphModule on example inputs and record each node's result shape,
dtype, strides and memory format in ``node.meta['tensor_meta']`` (and the result's type in
``node.meta['type']``)."""
from __future__ import annotations

from typing import Any, NamedTuple

import ember
from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: Any) -> TensorMetadata:
    memory_format = None
    for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format, False,
                          {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*example_inputs)``: the outputs, with every node's metadata recorded."""

    def run_node(self, n: Node) -> Any:
        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e
        found = [False]

        def extract(obj: Any) -> Any:
            if isinstance(obj, ember.Tensor):
                found[0] = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found[0]:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        return super().run(*args)
