"""c10's ``checked_convert``: a Python number as an element of a dtype, refused in PyTorch's words when it
overflows (``fill_``, ``full`` and index assignment convert their value this way)."""
from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from ember.c10 import dtype as dt


# the element types' names in c10's ``checked_convert`` messages (its dispatch macros' C++ types)
_CONVERT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                  "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "float16": "c10::Half",
                  "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
                  "complex64": "c10::complex<float>", "complex128": "c10::complex<double>", "bool": "bool"}


_LIMITS: dict[Any, tuple[str, Any, Any]] = {}


def _limits(npdt: Any) -> tuple[str, Any, Any]:
    """(kind, lowest, largest) accepted for a dtype: integers' range (an unsigned type takes negatives down to -max,
    which wrap); the largest finite value of a floating (or a complex's component) type."""
    got = _LIMITS.get(npdt)
    if got is None:
        kind = "f" if npdt == dt.bfloat16.np else npdt.kind
        if kind in "iu":
            info = np.iinfo(npdt)
            got = (kind, -int(info.max) if kind == "u" else int(info.min), int(info.max))
        elif kind in "fc":
            component = npdt if kind == "f" else np.dtype(f"f{npdt.itemsize // 2}")
            big = float(ml_dtypes.finfo(component).max)  # type: ignore[no-untyped-call]
            got = (kind, -big, big)
        else:
            got = (kind, None, None)
        _LIMITS[npdt] = got
    return got


def checked_convert(value: Any, npdt: Any, half_saturates: bool = False) -> Any:
    """A Python number as a value to store in an array of ``npdt``, refused as c10's ``checked_convert`` refuses it:
    "value cannot be converted to type int8_t without overflow" for an integer out of range (an unsigned type
    takes negatives down to -max, which wrap), a float out of an integer type's range or NaN / inf into one, a
    finite float past a floating type's largest value (``half_saturates``: float16 / bfloat16 take it as inf, as
    PyTorch's fill of a one-element tensor does), a complex with an imaginary part into a real type."""
    kind, lo, hi = _limits(npdt)
    if kind == "b" or lo is None:
        return value
    v = value
    if isinstance(v, complex):
        if kind != "c":
            if v.imag != 0:
                _overflow(npdt)
            v = v.real
        else:
            for part in (v.real, v.imag):
                if (part > hi or part < lo) and part - part == 0:
                    _overflow(npdt)
            return v
    if kind in "iu":
        if isinstance(v, float) and not v - v == 0:  # NaN / inf
            _overflow(npdt)
        if v > hi or v < lo:
            _overflow(npdt)
        v = int(v)
        return v + hi + 1 if v < 0 and kind == "u" else v
    if (v > hi or v < lo) and float(v) - float(v) == 0:
        if not (half_saturates and npdt.itemsize == 2):
            _overflow(npdt)
        return math.copysign(math.inf, v)
    return v


def _overflow(npdt: Any) -> None:
    raise RuntimeError(f"value cannot be converted to type {_CONVERT_NAMES.get(npdt.name, npdt.name)} without "
                       "overflow")
