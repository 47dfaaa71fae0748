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
the pinned core.  Imported after NumPy, ember changes nothing."""
from __future__ import annotations

import os
import platform
import sys

# OpenBLAS's x86 core names without AVX-512 (OPENBLAS_CORETYPE values, case-insensitive)
_OLDER_X86_CORES = frozenset(name.lower() for name in (
    "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn", "Dunnington", "Nehalem",
    "Sandybridge", "Haswell", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Bobcat", "Bulldozer",
    "Piledriver", "Steamroller", "Excavator", "Zen"))
_AVX512_FLAGS = frozenset(("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"))
_ORDER = ("DEFAULT", "AVX2", "AVX512")
_saved = None                   # (had OPENBLAS_CORETYPE, its value) while ember's choice is in force
blas_note = "unchanged"         # what select_blas_kernels did, for docs/tests/learners


def _cpu_flags() -> frozenset:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return frozenset()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _hardware_capability() -> str:
    flags = _cpu_flags()
    if _AVX512_FLAGS <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"


def get_cpu_capability() -> str:
    """``torch.backends.cpu.get_cpu_capability()``: "AVX512", "AVX2" or "DEFAULT" (x86), lowered by
    ``ATEN_CPU_CAPABILITY`` as in PyTorch."""
    hw = _hardware_capability()
    asked = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().upper()
    if asked in _ORDER and _ORDER.index(asked) < _ORDER.index(hw):
        return asked
    return hw


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


def restore_environment() -> None:
    """After NumPy has loaded OpenBLAS: give the environment back its original value."""
    global _saved
    if _saved is not None:
        os.environ["OPENBLAS_CORETYPE"] = _saved
        _saved = None


def load_numpy() -> None:
    """Import NumPy with OpenBLAS's kernels chosen as above (run by ``ember/_startup.py``)."""
    select_blas_kernels()
    try:
        import numpy  # noqa: F401
    finally:
        restore_environment()
