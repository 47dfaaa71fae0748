"""The CPU's vector capability and the BLAS kernels that go with it (PyTorch's ``cpu_capability`` /
``ATEN_CPU_CAPABILITY``).

PyTorch picks its kernels from what the CPU supports (``torch.backends.cpu.get_cpu_capability()``) and lets
``ATEN_CPU_CAPABILITY=default|avx2|avx512`` lower that choice.  ember's heavy lifting is NumPy's OpenBLAS, which
picks its kernels when NumPy is first imported, and obeys ``OPENBLAS_CORETYPE`` if set.  An environment that
pins an AVX2-era core (``OPENBLAS_CORETYPE=Haswell`` -- this project's machines do) leaves an AVX-512 CPU's
wide kernels unused: measured here, float32 GEMM 512^3 ran 1.75x faster with OpenBLAS's SkylakeX kernels than
with its Haswell ones, a 64->64 3x3 convolution's GEMM 1.35x (``docs/performance.md``).

So, when ember is imported before NumPy, on an AVX-512 CPU whose OpenBLAS core is pinned to an older x86
core, :func:`select_blas_kernels` raises it to ``SkylakeX`` for this process only (the variable is put back
once NumPy is loaded, so child processes inherit the user's environment unchanged).  Setting
``ATEN_CPU_CAPABILITY`` to ``avx2`` or ``default`` -- PyTorch's own switch for the same decision -- keeps
the pinned core.  Imported after NumPy, ember leaves the kernels as they are.

OpenBLAS's worker threads also keep spinning after each parallel GEMM, for 2^28 cycles by default, waiting for
the next one. PyTorch's own loops run on the same OpenMP threads as its BLAS; ember's elementwise kernels run on
its intra-op pool (``ember/aten/parallel.py``), whose threads then share the cores with spinning BLAS threads: on
2 cores a 0.5 M-element compiled GELU after a GEMM took 1.6 ms instead of 1.0. So :func:`quiet_blas_threads` sets
``OPENBLAS_THREAD_TIMEOUT=16`` (2^16 cycles, some 20 us: back-to-back GEMMs still find their threads awake) for
the import when the user has not set it, and takes it out of the environment again afterwards. An OpenBLAS loaded before
ember (NumPy imported first) gets the same timeout afterwards (Note [OpenBLAS loaded before ember] in
``ember/aten/parallel.py``)."""
from __future__ import annotations

import os
import sys

from ember.c10.cpu_capability import (  # noqa: F401  (re-exported: the frontend's names)
    BLAS_THREAD_TIMEOUT, _cpu_flags, _hardware_capability, avx10_version, cpuid, get_cpu_capability, onednn_supports)

# OpenBLAS's x86 core names without AVX-512 (OPENBLAS_CORETYPE values, case-insensitive)
_OLDER_X86_CORES = frozenset(name.lower() for name in (
    "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington", "Nehalem",
    "Sandybridge", "Haswell", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Bobcat", "Bulldozer",
    "Piledriver", "Steamroller", "Excavator", "Zen"))
_saved = None                   # (had OPENBLAS_CORETYPE, its value) while ember's choice is in force
_timeout_set = False            # OPENBLAS_THREAD_TIMEOUT is ember's (for the import) and is to be removed
blas_note = "unchanged"         # what select_blas_kernels did, for docs/tests/learners


def select_blas_kernels() -> None:
    """Before NumPy loads: let OpenBLAS use the CPU's AVX-512 kernels if the environment pins an older core."""
    global _saved, blas_note
    if "numpy" in sys.modules:
        blas_note = "NumPy was imported before ember: OpenBLAS kept its kernels"
        return
    pinned = os.environ.get("OPENBLAS_CORETYPE")
    if pinned is None or pinned.strip().lower() not in _OLDER_X86_CORES:
        return
    if get_cpu_capability() != "AVX512":
        return
    _saved = pinned
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    blas_note = f"OPENBLAS_CORETYPE={pinned} raised to SkylakeX (AVX-512 CPU) for this process"


def quiet_blas_threads() -> None:
    """Before NumPy loads: shorten OpenBLAS's idle spinning unless the user chose a timeout."""
    global _timeout_set
    if "numpy" in sys.modules or "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_THREAD_TIMEOUT
    _timeout_set = True


def restore_environment() -> None:
    """After NumPy has loaded OpenBLAS: give the environment back its original values."""
    global _saved, _timeout_set
    if _saved is not None:
        os.environ["OPENBLAS_CORETYPE"] = _saved
        _saved = None
    if _timeout_set:
        del os.environ["OPENBLAS_THREAD_TIMEOUT"]
        _timeout_set = False


def load_numpy() -> None:
    """Import NumPy with OpenBLAS's kernels chosen as above (run by ``ember/_startup.py``)."""
    select_blas_kernels()
    quiet_blas_threads()
    try:
        import numpy  # noqa: F401
    finally:
        restore_environment()
