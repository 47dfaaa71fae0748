"""Complex numbers from their parts (``aten/src/ATen/native/TensorFactories.cpp``: ``complex`` and ``polar``).

The views between complex tensors and their real pairs (``view_as_real``, ``view_as_complex``) are view
kernels, in ``views.py``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels._common import Array, elementwise, type_name

__all__ = ["complex", "polar"]


def _check_parts(a: Array, b: Array) -> None:
    """Both parts of a complex number are of one floating type (``complex_check_dtype``)."""
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {type_name(a.dtype)} "
                           f"and {type_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {type_name(a.dtype)} but got scalar type "
                           f"{type_name(b.dtype)} for second argument")


def _complex_of(dt: Any) -> Any:
    if dt == np.float64:
        return np.dtype(np.complex128)
    if dt == np.float32:
        return np.dtype(np.complex64)
    raise RuntimeError(f"\"complex_cpu\" not implemented for '{type_name(dt)}'")


@elementwise
def complex(xp: Any, real: Array, imag: Array) -> Any:  # noqa: A001 - PyTorch's name
    _check_parts(real, imag)
    shape = np.broadcast_shapes(real.shape, imag.shape)
    out = xp.empty(shape, _complex_of(real.dtype))
    out.real = real
    out.imag = imag
    return out


@elementwise
def polar(xp: Any, abs: Array, angle: Array) -> Any:  # noqa: A002 - PyTorch's argument names
    _check_parts(abs, angle)
    shape = np.broadcast_shapes(abs.shape, angle.shape)
    out = xp.empty(shape, _complex_of(abs.dtype))
    out.real = abs * xp.cos(angle)
    out.imag = abs * xp.sin(angle)
    return out
