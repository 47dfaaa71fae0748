"""``nn.Fold`` / ``nn.Unfold`` (``torch/nn/modules/fold.py``)."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module


if TYPE_CHECKING:
    from ember._tensor import Tensor


class Fold(Module):
    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size: Any, kernel_size: Any, dilation: int = 1, padding: int = 0,
                 stride: int = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size: Any, dilation: int = 1, padding: int = 0, stride: int = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
