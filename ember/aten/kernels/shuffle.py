"""Kernels of pixel shuffle / unshuffle and channel shuffle
(``aten/src/ATen/native/{PixelShuffle,ChanelShuffle}.cpp``)."""
from __future__ import annotations

from typing import Any

from ember.aten.kernels._common import Array

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]

# ------------------------------------------------------------------------------ pixel shuffle (PixelShuffle.cpp)
def pixel_shuffle(xp: Any, self: Array, upscale_factor: Any) -> Any:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    if self.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = self.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = self.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = xp.transpose(x, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return xp.ascontiguousarray(x).reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(xp: Any, self: Array, downscale_factor: Any) -> Any:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    if self.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = self.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    n = len(lead)
    x = self.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = xp.transpose(x, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return xp.ascontiguousarray(x).reshape(tuple(lead) + (c * r * r, h // r, w // r))




# ------------------------------------------------------------------------------ channel shuffle (ChanelShuffle.cpp)
def _channel_shuffle_checks(self: Array, groups: Any) -> Any:
    if self.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if self.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {self.shape[1]} channels and "
                           f"{groups} groups.")


def channel_shuffle(xp: Any, self: Array, groups: Any) -> Any:
    """(N, g * k, *) -> channels read as a (g, k) grid and written transposed, (k, g)."""
    _channel_shuffle_checks(self, groups)
    n, c = self.shape[:2]
    x = self.reshape((n, groups, c // groups) + self.shape[2:])
    return xp.ascontiguousarray(xp.swapaxes(x, 1, 2)).reshape(self.shape)
