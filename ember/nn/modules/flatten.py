"""``nn.Flatten`` / ``nn.Unflatten`` (``torch/nn/modules/flatten.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn.modules.module import Module


if TYPE_CHECKING:
    from ember._tensor import Tensor


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim: Any, unflattened_size: Any) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
