"""Kernels of native_dropout (``aten/src/ATen/native/Dropout.cpp``)."""
from __future__ import annotations

from typing import Any

from ember.aten.kernels._common import Array, meta_kernel
from ember.aten.kernels.random import bernoulli_p

__all__ = ["native_dropout"]

# ------------------------------------------------------------------------------ dropout (Dropout.cpp)
def _native_dropout_meta(xp: Any, input: Array, p: Any, train: Any) -> Any:  # noqa: A002
    return xp.empty(input.shape, input.dtype), xp.empty(input.shape, bool)


@meta_kernel(_native_dropout_meta)
def native_dropout(xp: Any, input: Array, p: Any, train: Any) -> Any:  # noqa: A002
    """(output, mask): in training ``mask ~ bernoulli(1 - p)`` (a bool tensor) and ``output = input * mask / (1 - p)``
    (0 for ``p == 1``); otherwise a copy of the input and an all-True mask."""
    if input.size == 0:
        return input.copy(), xp.empty(input.shape, input.dtype)
    if train is None or train:
        p1m = 1.0 - p
        scale = 0.0 if p1m == 0 else 1.0 / p1m
        mask = bernoulli_p(xp, xp.empty(input.shape, bool), p1m)
        return (input * mask * input.dtype.type(scale)).astype(input.dtype, copy=False), mask
    return input.copy(), xp.ones(input.shape, bool)
