"""``nn.ChannelShuffle`` (``torch/nn/modules/channelshuffle.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module


if TYPE_CHECKING:
    from ember._tensor import Tensor


class ChannelShuffle(Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
