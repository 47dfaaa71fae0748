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
from ember.aten.kernels import loops

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


# Elements per range for the loops that cost about one pass over memory (selects, clamps, casts, sums: 10 us for
# 2^16 float32 values on one core). numba's workers waking next to OpenBLAS's on 2 cores cost 150-370 us when a
# region follows a GEMM (relu of 128 x 512 after a 128x512x512 GEMM: 10 us serial, 13 us split alone, +240-320 us
# split after the GEMM, measured; Note [Two thread pools] in parallel.py), the work of about 2^20 such elements.
CHEAP_GRAIN = 1 << 20


def elementwise(kernel: Callable[..., None], *inputs: Any, scalars: tuple[Any, ...] = (),
                grain: int = parallel.GRAIN_SIZE) -> Any:
    """The compiled loop ``kernel(*flat_inputs, *scalars, out, b, e)`` over same-shaped float32 ``inputs`` (any
    layout), into a new C-contiguous float32 array of their shape, split into ranges of at least ``grain`` over the
    intra-op threads (PyTorch's grain size, or ``CHEAP_GRAIN`` for a loop of a memory pass's cost)."""
    shape = inputs[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
    out = np.empty(flat[0].shape, np.float32)
    split(kernel, out.size, grain, *flat, *scalars, out)
    return out.reshape(shape)


def split(kernel: Callable[..., None], work: int, grain: int, *args: Any) -> None:
    """``kernel(*args, b, e)`` over ranges [b, e) of ``work`` items, at least ``grain`` each, on the intra-op
    threads (the row and channel loops take their range last): Note [Splitting a loop over threads]."""
    if work < 2 * grain:        # one range on any thread count: the loop itself, without the split's machinery
        if work > 0:
            kernel(*args, 0, work)
        return
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


# From this many elements relu, clamp, hardtanh and ``where`` run the compiled select loops (Note [Selects] in
# ``loops/pointwise.py``): below it a call into a loop (8 us) costs more than NumPy's pass.
SELECT_MIN = parallel.GRAIN_SIZE // 2
_SELECT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_NUMBERS = (bool, int, float)


def where(xp: Any, condition: Any, x: Any, y: Any) -> Any:
    """``xp.where(condition, x, y)`` -- through ``loops.pointwise.selected`` where that applies: NumPy arrays, a
    C-contiguous boolean condition of at least ``SELECT_MIN`` elements, a float32 or float64 result (NumPy's
    promotion), and x and y each a number or a C-contiguous array of the condition's shape and the result's dtype.
    NumPy's ``where`` branches on every element: 2.2 ms on 2^19 random float32 values, the loop 70 us."""
    if (xp is np and type(condition) is np.ndarray and condition.size >= SELECT_MIN and condition.dtype == np.bool_
            and condition.flags.c_contiguous and is_enabled()):
        dtype = np.result_type(x, y)
        if dtype in _SELECT_DTYPES:
            a, b = _selectable(x, condition.shape, dtype), _selectable(y, condition.shape, dtype)
            if a is not None and b is not None:
                return loops.pointwise.selected(condition, a, b, dtype)
    return xp.where(condition, x, y)


def _selectable(a: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """``a`` as the select loops take it (a number, or an array of ``shape`` and ``dtype``), or None."""
    if type(a) is np.ndarray:
        if a.ndim == 0:
            return a[()]
        return a if a.shape == shape and a.dtype == dtype and a.flags.c_contiguous else None
    if type(a) in _NUMBERS or (isinstance(a, np.generic) and a.dtype.kind in "biuf"):
        return a
    return None


def clamped(xp: Any, x: Any, lo: Any, hi: Any) -> Any:
    """min(max(x, lo), hi) in PyTorch's order (Note [Selects]) through ``loops.pointwise.clamped`` where that
    applies -- a C-contiguous float32 or float64 NumPy array of at least ``SELECT_MIN`` elements, bounds real
    numbers (None for none) that are not NaN -- else None."""
    if (xp is not np or type(x) is not np.ndarray or x.size < SELECT_MIN or x.dtype not in _SELECT_DTYPES
            or not x.flags.c_contiguous or not is_enabled()):
        return None
    lo = -np.inf if lo is None else lo
    hi = np.inf if hi is None else hi
    if type(lo) not in _NUMBERS or type(hi) not in _NUMBERS or lo != lo or hi != hi:
        return None
    return loops.pointwise.clamped(x, lo, hi)


def row_grain(n: int) -> int:
    """Rows per range for a row loop over rows of n elements: PyTorch's grain size in elements."""
    return max(1, parallel.GRAIN_SIZE // max(n, 1))
