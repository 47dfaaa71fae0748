"""How CPU tensor memory is obtained (the role of ``c10/core/CPUAllocator.cpp`` / ``alloc_cpu.cpp``).

A CPU tensor's memory is a NumPy array, allocated by NumPy through the C library's ``malloc``.  Eager
training allocates and frees the same large temporaries at every step, so the cost of a *fresh* allocation
matters: glibc serves blocks above its mmap threshold (128 KiB at first, adapting up to 32 MiB) with a new
mapping and hands freed memory at the top of the heap back to the kernel, and every page of a new mapping
faults in on first touch.  On this project's (virtualised) machines that made a fresh 8 MB array cost
~2 ms to fill against ~0.4 ms for one whose memory is reused -- GELU's erf, with a dozen temporaries of the
activation's size, ran 4x slower than its arithmetic (``docs/performance.md``).

PyTorch's CPU performance guide recommends swapping in jemalloc or TCMalloc for this reason; ember does
the same with glibc's own knobs when it is imported: blocks up to 32 MiB come from the heap
(``M_MMAP_THRESHOLD``), and up to ``TRIM_THRESHOLD`` of freed memory stays in the process for reuse
(``M_TRIM_THRESHOLD``).  Larger blocks still get their own mapping (NumPy asks for transparent huge pages
for those); convolution keeps its large columns matrix in a reused workspace instead
(``aten/kernels/conv_algos.py``).  ``EMBER_CPU_ALLOCATOR=system`` leaves malloc untouched; other C
libraries are left alone."""
from __future__ import annotations

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 << 20       # glibc's largest allowed value
TRIM_THRESHOLD = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
configured = None               # "glibc" once tuned, "system" if left alone


def configure() -> str:
    """Tune glibc's malloc for reuse of large temporaries (once per process); returns what was done."""
    global configured
    if configured is not None:
        return configured
    configured = "system"
    if os.environ.get("EMBER_CPU_ALLOCATOR", "").strip().lower() == "system" or not sys.platform.startswith("linux"):
        return configured
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()              # absent on musl and other C libraries
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return configured
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1:
        configured = "glibc"
    return configured
