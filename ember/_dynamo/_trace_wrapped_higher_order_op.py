"""``torch._dynamo._trace_wrapped_higher_order_op``: ``TransformGetItemToIndex``, which PyTorch enters around
``vmap``-ed mask functions so that indexing with a 0-dim tensor stays a tensor op in the traced graph. ember's
capture records indexing with a 0-dim tensor as the tensor op it already is (``aten.index``), so the context
changes nothing."""
from __future__ import annotations

from typing import Any

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    def __enter__(self) -> TransformGetItemToIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
