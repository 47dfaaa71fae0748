"""The parts of a complex tensor (``aten/src/ATen/native/UnaryOps.cpp``): ``real`` and ``imag`` are views of
``view_as_real``, so their gradients flow through ``SelectBackward0`` and ``ViewAsRealBackward0`` as in PyTorch."""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.c10.dtype import bool_

__all__ = ["real", "imag", "isreal"]


def real(self: Any) -> Any:
    if not self.is_complex():
        return self
    return aten.select_int(aten.view_as_real(self), -1, 0)


def imag(self: Any) -> Any:
    if not self.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return aten.select_int(aten.view_as_real(self), -1, 1)


def isreal(self: Any) -> Any:
    if not self.is_complex():
        return aten.ones_like(self, dtype=bool_)
    return aten.eq_Scalar(imag(self), 0)
