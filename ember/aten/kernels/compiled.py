"""Whether the compiled loops (``ember/aten/kernels/loops``, Note [Compiled loops]) can be used, and the helpers
their runners share to split a loop over the intra-op threads.

A kernel with a compiled loop asks ``usable(xp, *arrays)`` -- enabled, NumPy arrays (CuPy's have their own fused
kernels), the dtypes the loop is written for, numba importable -- and otherwise runs its NumPy formulation, which
stays the definition the loop must agree with: ``ember.aten.kernels.compiled.set_enabled(False)`` (or
``EMBER_COMPILED_KERNELS=0`` in the environment) switches every caller back to it, which the tests use to check
the two against each other. Without numba installed the NumPy kernels are used everywhere.

Note [Splitting a loop over threads]
``split(kernel, work, grain, *args)`` runs ``kernel(*args, b, e)`` over ranges [b, e) of ``work`` items on the
intra-op threads. Handing a range to a pooled Python thread costs a thread wake-up, 60-90 us on a 2-core VM (a
lock ping-pong between two threads measures the same), which is more than the whole of most kernels at the
workloads' shapes. So a family module gives its hot loops a parallel driver, registered with ``parallel_of``:
a function compiled by numba with ``parallel=True`` whose ``prange`` over the ranges runs on numba's threading
layer, whose OpenMP or TBB workers wait for work spinning briefly before they sleep, so a launch costs about a
microsecond. Three cases keep the Python pool instead: a machine where numba has only its ``workqueue`` layer
(which refuses launches from two threads at once), a child process forked after numba's OpenMP started (GNU
OpenMP aborts there), and a loop without a driver. ``ember.aten.parallel.run_split`` makes the choice (and loads
numba's layer with a short spin: Note [Two thread pools] there).
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable

import numpy as np

from ember.aten import parallel

_enabled = os.environ.get("EMBER_COMPILED_KERNELS", "1") != "0"
_available: bool | None = None      # whether numba is installed (asked once)


def set_enabled(enabled: bool) -> None:
    """Use the compiled kernels (True, the default) or the NumPy ones."""
    global _enabled
    _enabled = bool(enabled)


def is_enabled() -> bool:
    """Whether calls use the compiled kernels (enabled and numba installed)."""
    return _enabled and _numba_available()


def _numba_available() -> bool:
    global _available
    if _available is None:
        _available = importlib.util.find_spec("numba") is not None
    return _available


def usable(xp: Any, *arrays: Any, dtypes: tuple[Any, ...] = (np.float32,)) -> bool:
    """Whether a compiled loop applies: enabled, NumPy arrays, each of one of ``dtypes`` (float32 unless the loop
    is written for more), numba installed."""
    return _enabled and xp is np and all(a.dtype in dtypes for a in arrays) and _numba_available()


def elementwise(kernel: Callable[..., None], *inputs: Any, scalars: tuple[Any, ...] = ()) -> Any:
    """The compiled loop ``kernel(*flat_inputs, *scalars, out, b, e)`` over same-shaped float32 ``inputs`` (any
    layout), into a new C-contiguous float32 array of their shape, split into ranges over the intra-op threads
    (PyTorch's grain size)."""
    shape = inputs[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    out = np.empty(flat[0].shape, np.float32)
    split(kernel, out.size, parallel.GRAIN_SIZE, *flat, *scalars, out)
    return out.reshape(shape)


def split(kernel: Callable[..., None], work: int, grain: int, *args: Any) -> None:
    """``kernel(*args, b, e)`` over ranges [b, e) of ``work`` items, at least ``grain`` each, on the intra-op
    threads (the row and channel loops take their range last): Note [Splitting a loop over threads]."""
    driver = _drivers.get(kernel)
    parallel.run_split(work, grain, lambda b, e: kernel(*args, b, e),
                       None if driver is None else lambda chunks: driver(*args, work, chunks))


_drivers: dict[Any, Any] = {}


def parallel_of(kernel: Any) -> Callable[[Any], Any]:
    """Registers the decorated function as ``kernel``'s parallel driver: called as ``driver(*args, work, chunks)``,
    it runs ``kernel(*args, b, e)`` over ``chunks`` ranges of ``work`` (``loops._common.chunk``) in a ``prange``."""
    def register(driver: Any) -> Any:
        _drivers[kernel] = driver
        return driver
    return register


# The size from which float32 arithmetic and exp / sigmoid run their compiled loop (``loops.pointwise``): two of
# PyTorch's grain size, below which nothing would split and NumPy's own loop is as fast (binary.py, unary.py).
SPLIT_MIN = 2 * parallel.GRAIN_SIZE


def row_grain(n: int) -> int:
    """Rows per range for a row loop over rows of n elements: PyTorch's grain size in elements."""
    return max(1, parallel.GRAIN_SIZE // max(n, 1))
