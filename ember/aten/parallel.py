"""Intra-op parallelism (``aten/src/ATen/Parallel.h``, ``ParallelOpenMP.cpp``).

``ember.set_num_threads(n)`` / ``ember.get_num_threads()`` are PyTorch's: the number of threads one operator
may use.  It governs both places ember computes in parallel: BLAS (OpenBLAS's thread count, set through its
C API in the loaded NumPy) and :func:`parallel_for`, which splits ``[begin, end)`` into at most that many
ranges of at least ``grain_size`` elements and runs them on a thread pool -- NumPy releases the GIL inside
its loops, so expensive elementwise kernels (erf, exp, tanh, ...) and the optimizers' flat update run on
every core.  The default is what PyTorch takes: ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` if set, else
the machine's core count.  Interop threads (``set_num_interop_threads``) are accepted with PyTorch's rules;
ember runs operators one at a time, so it does not use them."""
from __future__ import annotations

from typing import Any

import ctypes
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

GRAIN_SIZE = 32768                 # at::internal::GRAIN_SIZE: elements below which a loop stays serial
_num_threads = None
_interop = None
_interop_fixed = False
_pool = None
_pool_size = 0
_region = threading.local()       # set inside parallel_for's ranges: nested calls run serially


def _forget_pool() -> None:
    global _pool, _pool_size
    _pool, _pool_size = None, 0    # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _physical_cores(cpus: Any) -> int:
    """Distinct (physical id, core id) among ``cpus`` in /proc/cpuinfo (PyTorch counts physical cores);
    0 if unknown."""
    cores, proc, phys = set(), None, "0"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "processor":
                    proc, phys = int(val), "0"
                elif key == "physical id":
                    phys = val
                elif key == "core id" and (cpus is None or proc in cpus):
                    cores.add((phys, val))
    except (OSError, ValueError):
        return 0
    return len(cores)


def _default_threads() -> int:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        cpus = None
    logical = len(cpus) if cpus else (os.cpu_count() or 1)
    return max(1, min(logical, _physical_cores(cpus) or logical))


def get_num_threads() -> int:
    """``torch.get_num_threads()``."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
    return _num_threads


def set_num_threads(n: Any) -> None:
    """``torch.set_num_threads(n)``: threads for intra-op parallelism, BLAS included."""
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _num_threads = n
    _set_blas_threads(n)


def get_num_interop_threads() -> int:
    """``torch.get_num_interop_threads()``."""
    return _interop if _interop is not None else get_num_threads()


def set_num_interop_threads(n: Any) -> None:
    """``torch.set_num_interop_threads(n)``: allowed once, before parallel work, as in PyTorch."""
    global _interop, _interop_fixed
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _interop_fixed:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop, _interop_fixed = n, True


def executor() -> ThreadPoolExecutor:
    """The intra-op thread pool (``get_num_threads()`` workers), for kernels that schedule their own jobs."""
    global _pool, _pool_size, _interop_fixed
    n = get_num_threads()
    if _pool is None or _pool_size != n:
        if _pool is not None:
            _pool.shutdown(wait=False)
        _pool, _pool_size = ThreadPoolExecutor(max_workers=n, thread_name_prefix="ember-intraop"), n
        _interop_fixed = True
    return _pool


def parallel_for(begin: int, end: int, grain_size: int, f: Any) -> None:
    """``at::parallel_for``: calls ``f(b, e)`` over consecutive ranges covering ``[begin, end)``, in parallel
    when there is more than one thread and more than ``grain_size`` elements.  The first exception raised by
    any range is re-raised after all ranges have finished."""
    n = end - begin
    if n <= 0:
        return
    threads = min(get_num_threads(), max(1, n // max(grain_size, 1)))
    if threads <= 1 or in_parallel_region():
        f(begin, end)
        return
    step = -(-n // threads)
    ranges = [(b, min(b + step, end)) for b in range(begin, end, step)]
    futures = [executor().submit(_in_region, f, b, e) for b, e in ranges[1:]]
    first = None
    try:
        _in_region(f, *ranges[0])
    except BaseException as exc:   # noqa: BLE001 - re-raised below, after the other ranges finish
        first = exc
    for fut in futures:
        try:
            fut.result()
        except BaseException as exc:   # noqa: BLE001
            first = first or exc
    if first is not None:
        raise first


def in_parallel_region() -> bool:
    """``at::in_parallel_region()``: True inside a range run by :func:`parallel_for`."""
    return getattr(_region, "active", False)


def _in_region(f: Any, b: Any, e: Any) -> Any:
    _region.active = True
    try:
        return f(b, e)
    finally:
        _region.active = False


def _set_blas_threads(n: int) -> bool:
    """OpenBLAS's thread count through its C API in the library NumPy loaded (Linux); False if not found."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return False
    done = False
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_", "_64"):
                fn = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
                if fn is not None:
                    fn.argtypes = (ctypes.c_int,)
                    fn(n)
                    done = True
                    break
            if done:
                break
    return done
