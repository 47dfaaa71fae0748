"""Fused float modules (mirrors ``torch/ao/nn/intrinsic/modules/fused.py``): sequences ``fuse_modules`` builds
(Conv + BatchNorm + ReLU, Linear + ReLU, ...) so that ``convert`` can replace each by one quantized kernel."""
from __future__ import annotations

from typing import Any

from ember import nn

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "ConvBn1d", "ConvBn2d", "ConvBn3d",
           "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "BNReLU2d", "BNReLU3d", "LinearBn1d", "_FusedModule"]


class _FusedModule(nn.Sequential):
    pass


def _fused(name: str, types: tuple[str, ...]) -> type:
    def __init__(self: Any, *mods: Any) -> None:
        if len(mods) != len(types) or any(type(m).__name__ != t for m, t in zip(mods, types)):
            got = ", ".join(type(m).__name__ for m in mods)
            raise AssertionError(f"Incorrect types for input modules{got}")
        _FusedModule.__init__(self, *mods)

    cls = type(name, (_FusedModule,), {"__init__": __init__, "__doc__": f"{' + '.join(types)}, fused by "
                                                                         f"``fuse_modules``."})
    cls.__module__ = __name__
    return cls


ConvReLU1d = _fused("ConvReLU1d", ("Conv1d", "ReLU"))
ConvReLU2d = _fused("ConvReLU2d", ("Conv2d", "ReLU"))
ConvReLU3d = _fused("ConvReLU3d", ("Conv3d", "ReLU"))
LinearReLU = _fused("LinearReLU", ("Linear", "ReLU"))
ConvBn1d = _fused("ConvBn1d", ("Conv1d", "BatchNorm1d"))
ConvBn2d = _fused("ConvBn2d", ("Conv2d", "BatchNorm2d"))
ConvBn3d = _fused("ConvBn3d", ("Conv3d", "BatchNorm3d"))
ConvBnReLU1d = _fused("ConvBnReLU1d", ("Conv1d", "BatchNorm1d", "ReLU"))
ConvBnReLU2d = _fused("ConvBnReLU2d", ("Conv2d", "BatchNorm2d", "ReLU"))
ConvBnReLU3d = _fused("ConvBnReLU3d", ("Conv3d", "BatchNorm3d", "ReLU"))
BNReLU2d = _fused("BNReLU2d", ("BatchNorm2d", "ReLU"))
BNReLU3d = _fused("BNReLU3d", ("BatchNorm3d", "ReLU"))
LinearBn1d = _fused("LinearBn1d", ("Linear", "BatchNorm1d"))
