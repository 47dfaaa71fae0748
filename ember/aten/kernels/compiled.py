"""Fused kernels compiled by numba: where one NumPy kernel would make many passes over memory.

The loops live in ``_numba_kernels.py``; this module loads them on first use (importing numba costs 0.4 s, so
``import ember`` does not), runs them over the intra-op threads and says whether they can be used. numba
compiles each loop once per machine and keeps the machine code in ``__pycache__`` beside the source
(``cache=True``), so only the first call after installing ember pays the compilation (about a second per
kernel); later processes load it in milliseconds.

A kernel's caller keeps its NumPy formulation as the fallback and as the definition the compiled loop must
agree with: ``ember.aten.kernels.compiled.set_enabled(False)`` (or ``EMBER_COMPILED_KERNELS=0`` in the
environment) switches every caller back to it, which the tests use to check the two against each other.
Without numba installed the fallback is used everywhere.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from ember.aten import parallel

_enabled = os.environ.get("EMBER_COMPILED_KERNELS", "1") != "0"
_module: Any = None          # _numba_kernels once imported; False if numba is missing


def set_enabled(enabled: bool) -> None:
    """Use the compiled kernels (True, the default) or the NumPy ones."""
    global _enabled
    _enabled = bool(enabled)


def is_enabled() -> bool:
    """Whether calls use the compiled kernels (enabled and numba importable)."""
    return _enabled and _load() is not False


def _load() -> Any:
    global _module
    if _module is None:
        try:
            _module = importlib.import_module("ember.aten.kernels._numba_kernels")
        except ImportError:
            _module = False
    return _module


def usable(xp: Any, *arrays: Any) -> bool:
    """Whether a float32 kernel applies: enabled, NumPy arrays (CuPy's have their own fused kernels), float32."""
    return _enabled and xp is np and all(a.dtype == np.float32 for a in arrays) and _load() is not False


def elementwise(name: str, *inputs: Any) -> Any:
    """``name``'s compiled loop over same-shaped float32 ``inputs`` (any layout) into a new C-contiguous float32
    array of their shape, split into ranges over the intra-op threads (PyTorch's grain size)."""
    kernel = getattr(_load(), name)
    shape = inputs[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    out = np.empty(flat[0].shape, np.float32)

    def run(b: int, e: int) -> None:
        kernel(*[a[b:e] for a in flat], out[b:e])

    parallel.parallel_for(0, out.size, parallel.GRAIN_SIZE, run)
    return out.reshape(shape)
