"""What the CPU can do: its feature flags, CPUID, and the vector capability PyTorch picks its kernels by
(``torch.backends.cpu.get_cpu_capability()`` / ``ATEN_CPU_CAPABILITY``).

c10 holds this because both the operator library (kernels whose rounding follows the capability PyTorch would
run, such as ``linspace``'s) and the frontend (``ember.backends.cpu``, the BLAS choice at import in
``ember/_cpu_capability.py``) ask it. It reads only /proc/cpuinfo and the CPUID instruction, and imports
nothing heavy, so it can run before NumPy is loaded."""
from __future__ import annotations

import os
import platform
import sys
from typing import Any

_AVX512_FLAGS = frozenset(("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"))
_ORDER = ("DEFAULT", "AVX2", "AVX512")
BLAS_THREAD_TIMEOUT = "16"      # log2 of the cycles idle OpenBLAS threads spin before they sleep (_cpu_capability.py)


def _cpu_flags() -> frozenset[str]:
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
_cpuid_fn: Any = None             # (its page, the callable), or False where it cannot run


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
