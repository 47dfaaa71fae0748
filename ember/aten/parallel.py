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
import importlib
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ember.c10.cpu_capability import BLAS_THREAD_TIMEOUT

GRAIN_SIZE = 32768                 # at::internal::GRAIN_SIZE: elements below which a loop stays serial
_num_threads = None
_interop = None
_interop_fixed = False
_pool = None
_pool_size = 0
_region = threading.local()       # set inside parallel_for's ranges: nested calls run serially
_layer: bool | None = None        # whether numba's threading layer can run parallel drivers (asked once)
_numba_threads = threading.local()  # .n: the thread count this thread last gave numba (numba keeps one per thread)


def _forget_pool() -> None:
    global _pool, _pool_size, _layer
    _pool, _pool_size = None, 0    # a forked child has none of the parent's threads
    _layer = False                 # and must not start numba's GNU OpenMP workers (it aborts): run_split


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
    _forget_load()


def _forget_load() -> None:
    """Start counting other processes' threads afresh (Note [Threads under load]): the user set a new count."""
    global _effective, _blas_before, _next_sample
    _effective = _blas_before = None
    _others.clear()
    _next_sample = 0.0


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
    count = min(threads(), max(1, n // max(grain_size, 1)))
    if count <= 1 or in_parallel_region():
        f(begin, end)
        return
    step = -(-n // count)
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
    """OpenBLAS's thread count through its C API in the libraries NumPy (and SciPy) loaded; False if none found."""
    libs = _openblas_libraries(rescan=True)     # SciPy's may have been loaded since
    for lib in libs:
        lib.set_threads(n)
    return bool(libs)


class OpenBLAS:
    """One OpenBLAS library loaded in this process, reached through its C API: the addresses of its CBLAS
    ``sgemm`` / ``dgemm`` (for compiled loops to call: ``kernels/loops/gemm.py``), the width of its integers
    (``int64`` where it was built with 64-bit indices, as NumPy's wheels are), its thread count."""

    def __init__(self, path: str, lib: Any, prefix: str, suffix: str) -> None:
        self.path = path
        self._set = _c_function(lib, f"{prefix}openblas_set_num_threads{suffix}", None, ctypes.c_int)
        self._get = _c_function(lib, f"{prefix}openblas_get_num_threads{suffix}", ctypes.c_int)
        config = _c_function(lib, f"{prefix}openblas_get_config{suffix}", ctypes.c_char_p)
        text = (config() or b"") if config is not None else b""
        self.int64 = suffix in ("64_", "_64") or b"USE64BITINT" in text
        self.gemm = {name: _address(lib, f"{prefix}cblas_{name}gemm{suffix}") for name in ("s", "d")}
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = 1
        self.quieted = _quiet_idle_workers(lib, prefix, suffix)

    def set_threads(self, n: int) -> None:
        """The library's thread count (kept for after a ``single_threaded`` context, if one is open)."""
        with self._lock:
            if self._depth:
                self._saved = n
            elif self._set is not None:
                self._set(n)

    def single_threaded(self) -> "_SingleThreaded":
        """A context in which this library's calls run on their calling thread (its workers are not woken): for
        GEMMs that ember's own threads run side by side. Nested and concurrent uses count; the last to leave
        gives back the count found by the first to enter."""
        return _SingleThreaded(self)


class _SingleThreaded:
    def __init__(self, blas: OpenBLAS) -> None:
        self.blas = blas

    def __enter__(self) -> None:
        b = self.blas
        with b._lock:
            if b._depth == 0 and b._get is not None and b._set is not None:
                b._saved = b._get()
                b._set(1)
            b._depth += 1

    def __exit__(self, *exc: Any) -> None:
        b = self.blas
        with b._lock:
            b._depth -= 1
            if b._depth == 0 and b._get is not None and b._set is not None:
                b._set(b._saved)


# Note [OpenBLAS loaded before ember]
# OpenBLAS reads OPENBLAS_THREAD_TIMEOUT once, when it loads; ember sets it while NumPy loads (docs/performance.md,
# section 6: after a threaded GEMM the library's workers otherwise spin 2^28 cycles, some 0.1 s, and on 2 cores take
# the second core from the kernels that follow). A library loaded before ember -- a script's ``import numpy`` first,
# as most begin -- or after it (SciPy's own OpenBLAS) read no timeout: measured on the 2-core EPYC, the GPT's
# attention backward (16 x 4 x 64 x 32) right after a 1024x128 @ 128x384 GEMM took 5.8-7.4 ms in such a process
# against 2.0-2.2 in one that imported ember first. Such a library -- a pthreads build whose
# ``openblas_thread_timeout()`` is 0, with no OPENBLAS_THREAD_TIMEOUT of the user's in the environment -- is made
# to read the environment again with ember's timeout in it (``openblas_read_env``), and its workers are stopped
# (``blas_thread_shutdown_``, what OpenBLAS itself runs before a fork); its next threaded call starts them again,
# spinning briefly (the same attention backward: 2.2 ms; a 512^3 GEMM keeps its two threads and its speed). This
# happens once per library, when ember first finds it: at ``import ember``, or when ``set_num_threads`` finds a
# library loaded since; like a fork, it assumes no other thread is inside that library at that moment.
def _quiet_idle_workers(lib: Any, prefix: str, suffix: str) -> bool:
    """Give a library that read no thread timeout ember's (Note [OpenBLAS loaded before ember]); True if done."""
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return False
    timeout = _c_function(lib, "openblas_thread_timeout", ctypes.c_int)
    read_env = _c_function(lib, "openblas_read_env", None)
    shutdown = _c_function(lib, "blas_thread_shutdown_", ctypes.c_int)
    parallel = _c_function(lib, f"{prefix}openblas_get_parallel{suffix}", ctypes.c_int)
    if None in (timeout, read_env, shutdown, parallel) or parallel() != 1 or timeout() != 0:
        return False
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_THREAD_TIMEOUT
    try:
        read_env()
    finally:
        del os.environ["OPENBLAS_THREAD_TIMEOUT"]
    shutdown()
    return True


def quiet_blas_workers() -> None:
    """Find the OpenBLAS libraries loaded so far; those that read no thread timeout get ember's (run by
    ``import ember``: Note [OpenBLAS loaded before ember])."""
    _openblas_libraries(rescan=True)


def _c_function(lib: Any, name: str, restype: Any, *argtypes: Any) -> Any:
    fn = getattr(lib, name, None)
    if fn is not None:
        fn.restype, fn.argtypes = restype, argtypes
    return fn


def _address(lib: Any, name: str) -> int:
    fn = getattr(lib, name, None)
    return 0 if fn is None else ctypes.cast(fn, ctypes.c_void_p).value or 0


_openblas: list[OpenBLAS] | None = None


def _openblas_libraries(rescan: bool = False) -> list[OpenBLAS]:
    """The OpenBLAS libraries mapped into this process (Linux: ``/proc/self/maps``), NumPy's first; the symbol
    names of the scipy-openblas wheels (``scipy_`` prefix, ``64_`` suffix) and of plain builds are recognized.
    Found once; ``rescan`` adds the ones loaded since."""
    global _openblas
    if _openblas is not None and not rescan:
        return _openblas
    known = {lib.path: lib for lib in _openblas or ()}
    found: list[OpenBLAS] = []
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
        except OSError:
            paths = set()
        for path in sorted(paths, key=lambda p: "numpy" not in p):
            if path in known:
                found.append(known[path])
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix, suffix in (("", ""), ("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "_64")):
                if getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None) is not None:
                    found.append(OpenBLAS(path, lib, prefix, suffix))
                    break
    _openblas = found
    return found


def numpy_openblas() -> OpenBLAS | None:
    """The OpenBLAS NumPy computes its products with, if it is one ember can call (None on other BLAS builds)."""
    libs = _openblas_libraries()
    return libs[0] if libs and "numpy" in libs[0].path else None


# ------------------------------------------------------------------------------ numba's threading layer
def ranges(work: int, grain: int) -> int:
    """How many ranges ``run_split`` makes of ``work`` items with at least ``grain`` each (1: it runs serially)."""
    if in_parallel_region():
        return 1
    return max(1, min(threads(), work // max(1, grain)))


# Note [Threads under load]
# A parallel region is as slow as its slowest thread: when other processes keep the cores busy, a worker waits for
# a time slice, and every region of a step waits with it (OpenBLAS's threaded GEMMs, whose workers also spin for
# their next job, most of all). Measured on 2 cores beside 2 busy processes (a Python spin loop each), the suite's
# steps with 2 threads against 1: LSTM 184 against 58 ms (quiet: 28), MLP 20.1 against 9.0 (quiet: 5.4). So, as
# OpenMP's OMP_DYNAMIC does, ember counts the cores other processes leave: every 0.1 s at most, from the runnable
# threads of the whole machine (``/proc/loadavg``) less this process's own (``/proc/self/task/*/stat``), the
# smallest count of the last three samples (a process that runs for an instant changes nothing). Parallel regions
# and OpenBLAS then use at most that many threads, one at least; ``get_num_threads()`` keeps the user's number.
# A loop that load leaves with one range still runs inside its parallel driver (``run_split``), so results keep
# their bits. ``EMBER_DYNAMIC_THREADS=0`` turns this off. Elsewhere than Linux nothing is counted.
_dynamic = os.environ.get("EMBER_DYNAMIC_THREADS", "1") != "0"
_SAMPLE_PERIOD = 0.1
_next_sample = 0.0
_others: list[int] = []            # the last samples: runnable threads of other processes
_effective: int | None = None      # the thread count regions use now, where load lowered it (None: the user's)
_blas_before: int | None = None    # OpenBLAS's count before load lowered it


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _runnable_others() -> int | None:
    """Threads of other processes runnable right now (running or waiting for a core); None where unknown."""
    try:
        with open("/proc/loadavg", "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
        own = 0
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue          # a thread that ended meanwhile
            state = stat.rindex(b")") + 2       # the field after the (command name)
            own += stat[state:state + 1] == b"R"
        return max(0, running - own)
    except (OSError, ValueError, IndexError):
        return None


def threads() -> int:
    """The threads a parallel region uses now: ``get_num_threads()``, or fewer while other processes' runnable
    threads leave fewer cores free (Note [Threads under load])."""
    n = get_num_threads()
    if n == 1 or not _dynamic:
        return n
    global _next_sample
    now = time.monotonic()
    if now >= _next_sample:
        _next_sample = now + _SAMPLE_PERIOD
        _sample(n)
    return n if _effective is None else min(n, _effective)


def _sample(n: int) -> None:
    global _effective, _blas_before
    others = _runnable_others()
    if others is None:
        return
    _others.append(others)
    del _others[:-3]
    free = max(1, _cores() - min(_others))
    effective = None if free >= n else free
    if effective == _effective:
        return
    _effective = effective
    blas = numpy_openblas()
    if blas is None or blas._get is None:
        return
    if effective is not None:
        if _blas_before is None:
            _blas_before = blas._get()
        blas.set_threads(min(effective, _blas_before))
    elif _blas_before is not None:
        blas.set_threads(_blas_before)
        _blas_before = None


def run_split(work: int, grain: int, serial: Any, driver: Any) -> None:
    """``serial(b, e)`` over ranges of ``work`` items (at least ``grain`` each): on the calling thread when one
    range is all there is, else through ``driver(chunks)`` -- a numba function whose ``prange`` runs the ranges
    on numba's threading layer (Note [Splitting a loop over threads] in ``kernels/compiled.py``) -- where that
    layer can run, else on the pooled Python threads (``parallel_for``)."""
    if work < 2 * grain:         # one range on any thread count: no clock, no thread-local (a small tensor's call)
        if work > 0:
            serial(0, work)
        return
    chunks = ranges(work, grain)
    if chunks <= 1:
        if work <= 0:
            return
        # Where only other processes' load took the threads away, the driver runs its one range: the loop as
        # compiled inside the driver can round a row's sum differently from the loop compiled alone (LLVM
        # vectorizes each for its own context), and load must not change the bits (Note [Threads under load])
        if _effective is None or driver is None or not _would_split(work, grain) or not numba_layer_usable():
            serial(0, work)
            return
    if driver is not None and numba_layer_usable():
        if getattr(_numba_threads, "n", 0) != chunks:
            numba: Any = importlib.import_module("numba")
            numba.set_num_threads(min(chunks, numba.config.NUMBA_NUM_THREADS))
            _numba_threads.n = chunks
        driver(chunks)
        return
    parallel_for(0, work, max(1, grain), serial)


def _would_split(work: int, grain: int) -> bool:
    """Whether ``work`` would split on the user's thread count."""
    return not in_parallel_region() and min(get_num_threads(), work // max(1, grain)) > 1


def numba_layer_usable() -> bool:
    """Whether numba's OpenMP or TBB layer is there (its ``workqueue`` refuses launches from two threads at once)
    and this process may start it (not a child forked from one that did); loads it the first time."""
    global _layer
    if _layer is None:
        numba: Any = importlib.import_module("numba")
        _layer = False
        if numba.config.THREADING_LAYER == "workqueue":
            return False
        for name in ("tbbpool", "omppool"):     # numba's order of preference
            try:
                with _short_spin():
                    importlib.import_module(f"numba.np.ufunc.{name}")
            except ImportError:
                continue
            _layer = True
            break
    return _layer


# Note [Two thread pools]
# GNU OpenMP's workers spin 300000 rounds (milliseconds) for the next region before they sleep, and OpenBLAS's
# workers spin after each GEMM: on 2 cores a region that starts while the other pool spins waits for a core
# (a column copy after a GEMM: 0.3 ms alone, 7.8 ms right after it), and a GEMM after a region the same. With
# 10000 rounds numba's workers stay awake across the ops of one step (softmax forward + backward, 64x64x64: 254 us
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
