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


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


def _pad_class(name: Any, base: Any, n: Any) -> Any:
    return type(name, (base,), {"_n": n, "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", _ConstantPadNd, 1)
ConstantPad2d = _pad_class("ConstantPad2d", _ConstantPadNd, 2)
ConstantPad3d = _pad_class("ConstantPad3d", _ConstantPadNd, 3)
ReflectionPad1d = _pad_class("ReflectionPad1d", _ReflectionPadNd, 1)
ReflectionPad2d = _pad_class("ReflectionPad2d", _ReflectionPadNd, 2)
ReflectionPad3d = _pad_class("ReflectionPad3d", _ReflectionPadNd, 3)
ReplicationPad1d = _pad_class("ReplicationPad1d", _ReplicationPadNd, 1)
ReplicationPad2d = _pad_class("ReplicationPad2d", _ReplicationPadNd, 2)
ReplicationPad3d = _pad_class("ReplicationPad3d", _ReplicationPadNd, 3)
CircularPad1d = _pad_class("CircularPad1d", _CircularPadNd, 1)
CircularPad2d = _pad_class("CircularPad2d", _CircularPadNd, 2)
CircularPad3d = _pad_class("CircularPad3d", _CircularPadNd, 3)


def _zero_pad_class(name: Any, constant: Any) -> Any:
    """``ZeroPad<n>d`` is ``ConstantPad<n>d`` with 0 (a subclass of it, as in PyTorch)."""
    def __init__(self: Any, padding: Any) -> None:
        constant.__init__(self, padding, 0.0)

    def extra_repr(self: Any) -> str:
        return f"{self.padding}"
    return type(name, (constant,), {"__init__": __init__, "extra_repr": extra_repr, "__module__": __name__})


ZeroPad1d = _zero_pad_class("ZeroPad1d", ConstantPad1d)
ZeroPad2d = _zero_pad_class("ZeroPad2d", ConstantPad2d)
ZeroPad3d = _zero_pad_class("ZeroPad3d", ConstantPad3d)
