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
OpenMP aborts there), and a loop without a driver.
"""
from __future__ import annotations

import importlib.util
import os
import threading
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


def chunks(work: int, grain: int) -> int:
    """How many ranges ``split`` makes of ``work`` items with at least ``grain`` each (1 when it runs serially),
    for a loop that keeps one accumulator per range."""
    if parallel.in_parallel_region():
        return 1
    return max(1, min(parallel.get_num_threads(), work // max(1, grain)))


def split(kernel: Callable[..., None], work: int, grain: int, *args: Any) -> None:
    """``kernel(*args, b, e)`` over ranges [b, e) of ``work`` items, at least ``grain`` each, on the intra-op
    threads (the row and channel loops take their range last): Note [Splitting a loop over threads]."""
    chunks = min(parallel.get_num_threads(), work // max(1, grain))
    if chunks <= 1 or parallel.in_parallel_region():
        if work > 0:
            kernel(*args, 0, work)
        return
    driver = _drivers.get(kernel)
    if driver is not None and _layer_usable():
        _set_numba_threads(chunks)
        driver(*args, work, chunks)
        return
    parallel.parallel_for(0, work, max(1, grain), lambda b, e: kernel(*args, b, e))


_drivers: dict[Any, Any] = {}
_layer: bool | None = None          # whether numba's threading layer can run the drivers (asked once)
_numba_threads = threading.local()  # .n: the thread count this thread last gave numba (numba keeps one per thread)


def parallel_of(kernel: Any) -> Callable[[Any], Any]:
    """Registers the decorated function as ``kernel``'s parallel driver: called as ``driver(*args, work, chunks)``,
    it runs ``kernel(*args, b, e)`` over ``chunks`` ranges of ``work`` (``loops._common.chunk``) in a ``prange``."""
    def register(driver: Any) -> Any:
        _drivers[kernel] = driver
        return driver
    return register


def _layer_usable() -> bool:
    global _layer
    if _layer is None:
        numba: Any = importlib.import_module("numba")
        _layer = False
        if numba.config.THREADING_LAYER == "workqueue":
            return False
        for name in ("tbbpool", "omppool"):     # numba's order of preference; ``workqueue`` is left out
            try:
                with _short_spin():
                    importlib.import_module(f"numba.np.ufunc.{name}")
            except ImportError:
                continue
            _layer = True
            break
    return _layer


# GNU OpenMP's workers spin 300000 rounds (milliseconds) for the next region before they sleep, and OpenBLAS's
# workers spin after each GEMM: on 2 cores a region that starts while the other pool spins waits for a core
# (a column copy after a GEMM: 0.3 ms alone, 7.8 ms right after it), and a GEMM after a region the same. With
# 10000 rounds ember's workers stay awake across the ops of one step (softmax forward + backward, 64x64x64: 254 us
# at 300000, 242 at 10000, 388 at 1000) and leave the cores to BLAS soon after (the MLP step: 9.6 ms at 300000,
# 4.5 at 10000; the GPT step 81 -> 74 ms) -- and to other processes, which a spinning pool slows under load.
_GOMP_SPINCOUNT = "10000"


class _short_spin:
    """While numba's threading layer loads (and GNU OpenMP reads its environment, once), GOMP_SPINCOUNT is
    ``_GOMP_SPINCOUNT`` unless the user set it or OMP_WAIT_POLICY; the environment is restored after, so child
    processes and other libraries see the user's."""

    def __enter__(self) -> None:
        self.set = "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
        if self.set:
            os.environ["GOMP_SPINCOUNT"] = _GOMP_SPINCOUNT

    def __exit__(self, *exc: Any) -> None:
        if self.set:
            os.environ.pop("GOMP_SPINCOUNT", None)


def _set_numba_threads(n: int) -> None:
    if getattr(_numba_threads, "n", 0) != n:
        numba: Any = importlib.import_module("numba")
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        _numba_threads.n = n


def _forked() -> None:
    global _layer
    _layer = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def row_grain(n: int) -> int:
    """Rows per range for a row loop over rows of n elements: PyTorch's grain size in elements."""
    return max(1, parallel.GRAIN_SIZE // max(n, 1))
