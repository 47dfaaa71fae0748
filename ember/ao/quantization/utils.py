"""Helpers of ``torch.ao.quantization`` (mirrors ``torch/ao/quantization/utils.py``): quantization ranges and checks
on observed statistics."""
from __future__ import annotations

from typing import Any

import warnings

import ember

__all__ = ["is_per_tensor", "is_per_channel", "check_min_max_valid", "calculate_qmin_qmax", "validate_qmin_qmax"]


def is_per_tensor(qscheme: Any) -> bool:
    return qscheme is ember.per_tensor_affine or qscheme is ember.per_tensor_symmetric


def is_per_channel(qscheme: Any) -> bool:
    return qscheme in (ember.per_channel_affine, ember.per_channel_affine_float_qparams, ember.per_channel_symmetric)


def _is_float_qparams(qscheme: Any) -> bool:
    return qscheme is ember.per_channel_affine_float_qparams


def check_min_max_valid(min_val: Any, max_val: Any) -> bool:
    """False (with PyTorch's warning) before any observation; an error when a minimum exceeds its maximum."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default values.", stacklevel=2)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                          stacklevel=2)
            return False
        if float(min_val) > float(max_val):
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif bool((min_val > max_val).any()):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


def calculate_qmin_qmax(quant_min: Any, quant_max: Any, has_customized_qrange: bool, dtype: Any,
                        reduce_range: bool) -> tuple[int, int]:
    """The integer range an observer maps to: the user's, or the dtype's (halved by ``reduce_range``)."""
    if has_customized_qrange:
        lo, hi = (0, 2 ** 32 - 1) if dtype in (ember.qint32, ember.int32) else (0, 255)
        if quant_min is not None and quant_max is not None:
            lo, hi = quant_min, quant_max
        n = hi - lo + 1
        if dtype in (ember.qint8, ember.int8) and not 0 < n <= 256:
            raise AssertionError("quantization range should be positive and not exceed the maximum bit range (=256).")
        if dtype in (ember.qint32, ember.int32) and not 0 < n <= 2 ** 32:
            raise AssertionError("quantization range should be positive and not exceed the maximum bit range "
                                 "(=4294967296).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (ember.qint8, ember.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (ember.quint8, ember.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (ember.qint32, ember.int32):
        return -1 * 2 ** 31, 2 ** 31 - 1
    if dtype is ember.uint16:
        return 0, 2 ** 16 - 1
    if dtype is ember.int16:
        return -2 ** 15, 2 ** 15 - 1
    return 0, 15


def validate_qmin_qmax(quant_min: int, quant_max: int) -> None:
    if not quant_min <= 0 <= quant_max:
        raise AssertionError("Used-specified quantization range must include 0.")
    if quant_min >= quant_max:
        raise AssertionError("qmin must be strictly less than qmax for user-specified quantization range.")
