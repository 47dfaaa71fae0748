"""Argument helpers of the layers (mirrors ``torch/nn/modules/utils.py``)."""
from __future__ import annotations

from typing import Any


def _ntuple(v: Any, n: Any) -> Any:
    """``v`` as an n-tuple: sequences as given, a single value repeated."""
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n
