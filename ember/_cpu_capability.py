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
the pinned core.  Imported after NumPy, ember changes nothing.

OpenBLAS's worker threads also keep spinning after each parallel GEMM, for 2^28 cycles by default, waiting for
the next one. PyTorch's own loops run on the same OpenMP threads as its BLAS; ember's elementwise kernels run on
its intra-op pool (``ember/aten/parallel.py``), whose threads then share the cores with spinning BLAS threads: on
2 cores a 0.5 M-element compiled GELU after a GEMM took 1.6 ms instead of 1.0. So :func:`quiet_blas_threads` sets
``OPENBLAS_THREAD_TIMEOUT=16`` (2^16 cycles, some 20 us: back-to-back GEMMs still find their threads awake) for
the import when the user has not set it, and takes it out of the environment again afterwards."""
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
_timeout_set = False            # OPENBLAS_THREAD_TIMEOUT is ember's (for the import) and is to be removed
BLAS_THREAD_TIMEOUT = "16"      # log2 of the cycles OpenBLAS's idle threads spin before they sleep
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


_CPUID_CODE = bytes.fromhex(   # cpuid(leaf=edi, subleaf=esi, out=rdx): eax, ebx, ecx, edx -> out[0..3] (SysV ABI)
    "53" "89f8" "89f1" "4989d0" "0fa2" "418900" "41895804" "41894808" "4189500c" "5b" "c3")
_cpuid_fn = None


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int] | None:
    """The CPUID instruction's (eax, ebx, ecx, edx) for ``leaf`` / ``subleaf`` on x86-64 Linux, or None where it
    cannot be run. The kernel's flags in /proc/cpuinfo leave out some features PyTorch reports (through the cpuinfo
    library, which asks CPUID): AVX10 is one. The instruction runs from a small executable page."""
    global _cpuid_fn
    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform != "linux":
        return None
    import ctypes
    import mmap
    if _cpuid_fn is None:
        try:
            page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            page.write(_CPUID_CODE)
            addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
            fn = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(addr)
            _cpuid_fn = (page, fn)
        except (OSError, ValueError, TypeError):
            _cpuid_fn = False
    if not _cpuid_fn:
        return None
    out = (ctypes.c_uint32 * 4)()
    _cpuid_fn[1](leaf, subleaf, out)
    return out[0], out[1], out[2], out[3]


def avx10_version() -> int:
    """The AVX10 version the CPU supports (0: none), as the cpuinfo library reads it: CPUID leaf 7 subleaf 1
    EDX bit 19, then leaf 0x24's EBX low byte; only where the OS enables AVX-512 state."""
    if "avx512f" not in _cpu_flags():
        return 0
    top = cpuid(0)
    if top is None or top[0] < 7:
        return 0
    sub1 = cpuid(7, 1)
    if sub1 is None or not sub1[3] & (1 << 19):
        return 0
    if top[0] < 0x24:
        return 1
    leaf24 = cpuid(0x24, 0)
    return max(1, leaf24[1] & 0xFF) if leaf24 else 1


def onednn_supports(dtype_name: str) -> bool:
    """Whether PyTorch's oneDNN kernels compute in ``dtype_name`` ("bfloat16" / "float16") on this CPU (ideep's
    ``has_bf16_type_support`` / ``has_fp16_type_support``: AVX-512 core or AVX-NE-CONVERT for bfloat16,
    AVX512-FP16 or AVX-NE-CONVERT for float16). Where they do, PyTorch runs some operators through oneDNN in that
    dtype (an LSTM under autocast) where elsewhere its native kernels keep float32."""
    flags = _cpu_flags()
    if dtype_name == "bfloat16":
        return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags or "avx_ne_convert" in flags
    if dtype_name == "float16":
        return "avx512_fp16" in flags or "avx_ne_convert" in flags or "amx_fp16" in flags
    return False


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
