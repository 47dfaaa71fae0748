"""``nn.PixelShuffle`` / ``nn.PixelUnshuffle`` (``torch/nn/modules/pixelshuffle.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module


if TYPE_CHECKING:
    from ember._tensor import Tensor


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
