"""``nn.ChannelShuffle`` (``torch/nn/modules/channelshuffle.py``)."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn.modules.module import Module


class ChannelShuffle(Module):
    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
