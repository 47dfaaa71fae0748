"""``ember.utils.dlpack`` (``torch/utils/dlpack.py``): tensors exchanged with other libraries through DLPack
capsules, sharing memory."""
from __future__ import annotations

from typing import Any

from ember._creation import from_dlpack

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Any) -> Any:
    """A DLPack capsule of ``tensor``'s memory (consumed once by the receiving library)."""
    return tensor.__dlpack__()
