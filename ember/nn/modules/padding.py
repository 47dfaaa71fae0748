"""The padding layers (``torch/nn/modules/padding.py``): constant, zero, reflection, replication, circular."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple


if TYPE_CHECKING:
    from ember._tensor import Tensor


class _PadNd(Module):
    _mode = "constant"
    _n = 2

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(2 * self._n)(padding)

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Any:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _pad_class(name: Any, base: Any, mode: Any, n: Any) -> Any:
    return type(name, (base,), {"_mode": mode, "_n": n, "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", _ConstantPadNd, "constant", 1)
ConstantPad2d = _pad_class("ConstantPad2d", _ConstantPadNd, "constant", 2)
ConstantPad3d = _pad_class("ConstantPad3d", _ConstantPadNd, "constant", 3)
ReflectionPad1d = _pad_class("ReflectionPad1d", _PadNd, "reflect", 1)
ReflectionPad2d = _pad_class("ReflectionPad2d", _PadNd, "reflect", 2)
ReflectionPad3d = _pad_class("ReflectionPad3d", _PadNd, "reflect", 3)
ReplicationPad1d = _pad_class("ReplicationPad1d", _PadNd, "replicate", 1)
ReplicationPad2d = _pad_class("ReplicationPad2d", _PadNd, "replicate", 2)
ReplicationPad3d = _pad_class("ReplicationPad3d", _PadNd, "replicate", 3)
CircularPad1d = _pad_class("CircularPad1d", _PadNd, "circular", 1)
CircularPad2d = _pad_class("CircularPad2d", _PadNd, "circular", 2)
CircularPad3d = _pad_class("CircularPad3d", _PadNd, "circular", 3)


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


ZeroPad1d = _pad_class("ZeroPad1d", _ZeroPadNd, "constant", 1)
ZeroPad2d = _pad_class("ZeroPad2d", _ZeroPadNd, "constant", 2)
ZeroPad3d = _pad_class("ZeroPad3d", _ZeroPadNd, "constant", 3)
