"""``torch.cpu``: the CPU as a device module, with the accelerator-style API PyTorch gives it (one device, streams
and events that order nothing, since CPU work is synchronous)."""
from __future__ import annotations

from typing import Any

__all__ = ["is_available", "is_initialized", "device_count", "current_device", "set_device", "synchronize",
           "current_stream", "stream", "Stream", "StreamContext", "Event", "get_capabilities"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device: Any) -> None:
    """A no-op: there is one CPU device."""


def synchronize(device: Any = None) -> None:
    """Wait for the CPU's work: it is done already."""


# PyTorch's capability names -> the /proc/cpuinfo flag that says so
_FLAG_OF = {"sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4_1": "sse4_1", "sse4_2": "sse4_2",
            "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "fma3": "fma", "fma4": "fma4", "f16c": "f16c",
            "popcnt": "popcnt", "lzcnt": "abm", "bmi": "bmi1", "bmi2": "bmi2", "aes": "aes", "sha": "sha_ni",
            "clflush": "clflush", "clflushopt": "clflushopt", "clwb": "clwb", "avx_vnni": "avx_vnni",
            "avx_vnni_int8": "avx_vnni_int8", "avx_vnni_int16": "avx_vnni_int16", "avx_ne_convert": "avx_ne_convert",
            "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq", "avx512_bw": "avx512bw",
            "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma", "avx512_vbmi": "avx512vbmi",
            "avx512_vbmi2": "avx512_vbmi2", "avx512_vnni": "avx512_vnni", "avx512_bitalg": "avx512_bitalg",
            "avx512_vpopcntdq": "avx512_vpopcntdq", "avx512_bf16": "avx512_bf16", "avx512_fp16": "avx512_fp16",
            "avx512_4vnniw": "avx512_4vnniw", "avx512_4fmaps": "avx512_4fmaps",
            "avx512_vp2intersect": "avx512_vp2intersect", "amx_bf16": "amx_bf16", "amx_tile": "amx_tile",
            "amx_int8": "amx_int8", "amx_fp16": "amx_fp16", "avx10_1": "avx10_1", "avx10_2": "avx10_2"}


def _cache_size(level: int, kind: str) -> int:
    import glob
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(f"{d}/level") as f, open(f"{d}/type") as g, open(f"{d}/size") as h:
                if int(f.read()) == level and g.read().strip() in kind:
                    text = h.read().strip().upper()
                    mult = {"K": 1024, "M": 1024 ** 2}.get(text[-1:], 1)
                    return int(text.rstrip("KM")) * mult
        except (OSError, ValueError):
            continue
    return 0


def get_capabilities() -> dict[str, Any]:
    """What this CPU supports, as PyTorch reports it: one entry per instruction-set extension (from the kernel's
    CPU flags), the architecture, the model name, core and socket counts and the L1d / L2 cache sizes."""
    import os
    import platform
    from ember.c10.cpu_capability import _cpu_flags
    from ember.c10.cpu_capability import avx10_version
    flags = _cpu_flags()
    caps: dict[str, Any] = {name: flag in flags for name, flag in _FLAG_OF.items()}
    avx10 = avx10_version()      # not among the kernel's flags; CPUID says
    caps["avx10_1"] = caps["avx10_1"] or avx10 >= 1
    caps["avx10_2"] = caps["avx10_2"] or avx10 >= 2
    name, sockets, cores = "", set(), set()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            phys = ""
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "model name" and not name:
                    name = val
                elif key == "physical id":
                    phys = val
                    sockets.add(val)
                elif key == "core id":
                    cores.add((phys, val))
    except OSError:
        pass
    logical = os.cpu_count() or 1
    caps.update(architecture=platform.machine(), cpu_name=" ".join(name.split()[:2]) if name else platform.processor(),
                num_logical_cores=logical, num_physical_cores=len(cores) or logical, num_sockets=len(sockets) or 1,
                l1d_cache_size=_cache_size(1, "Data"), l2_cache_size=_cache_size(2, "Unified Data"))
    return caps


class Stream:
    """A CPU stream: work on the CPU runs in order as issued, so waiting and querying are immediate."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> Event:
        return event if event is not None else Event()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass


class Event:
    """A CPU event: recorded and completed at once."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing

    def query(self) -> bool:
        return True

    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass


_DEFAULT_STREAM = Stream()
_current_stream = _DEFAULT_STREAM


def current_stream(device: Any = None) -> Stream:
    return _current_stream


class StreamContext:
    """Makes ``stream`` the current CPU stream inside the ``with`` block."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev_stream = _DEFAULT_STREAM

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream, _current_stream = _current_stream, self.stream

    def __exit__(self, *exc: Any) -> None:
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
