"""``Flatten``, ``Unflatten``, padding layers, ``PixelShuffle``, distances, ``ChannelShuffle``
(``torch/nn/modules/{flatten,padding,pixelshuffle,distance,channelshuffle}.py``)."""
from __future__ import annotations

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _PadNd(Module):
    _mode = "constant"
    _n = 2

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n)

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _pad_class(name, base, mode, n):
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
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


ZeroPad1d = _pad_class("ZeroPad1d", _ZeroPadNd, "constant", 1)
ZeroPad2d = _pad_class("ZeroPad2d", _ZeroPadNd, "constant", 2)
ZeroPad3d = _pad_class("ZeroPad3d", _ZeroPadNd, "constant", 3)


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
