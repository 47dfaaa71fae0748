"""``ember.cuda``: the GPU backend through CuPy.  Every query answers "no GPU" when CuPy or a device is
missing, as ``torch.cuda`` does on a CPU-only machine."""
from __future__ import annotations

import functools
from typing import Any

from ember.c10.exceptions import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError is torch.OutOfMemoryError


@functools.lru_cache(maxsize=1)
def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "not available"
        return None
    return None


def is_available() -> bool:
    return _cupy() is not None


def device_count() -> int:
    cp = _cupy()
    return cp.cuda.runtime.getDeviceCount() if cp else 0


def current_device() -> int:
    _lazy_init()
    return _cupy().cuda.runtime.getDevice()


def _lazy_init():
    if not is_available():
        raise AssertionError("Torch not compiled with CUDA enabled")


def _index(device: Any) -> int:
    """The device index of ``device`` (an int, a ``cuda:N`` string or device, or None for the current one)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from ember.c10.device import canonical
    d = canonical(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


def get_device_properties(device: Any = None) -> Any:
    """The device's name, compute capability, memory and multiprocessor count (``cudaGetDeviceProperties``)."""
    _lazy_init()
    i = _index(device)
    if not 0 <= i < device_count():
        raise AssertionError("Invalid device id")
    p = _cupy().cuda.runtime.getDeviceProperties(i)
    from types import SimpleNamespace
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return SimpleNamespace(name=name, major=int(p["major"]), minor=int(p["minor"]),
                           total_memory=int(p["totalGlobalMem"]), multi_processor_count=int(p["multiProcessorCount"]))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors now: what CuPy's memory pool has handed out."""
    _lazy_init()
    return int(_cupy().get_default_memory_pool().used_bytes())


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator (CuPy's memory pool) holds from the driver, used or cached."""
    _lazy_init()
    return int(_cupy().get_default_memory_pool().total_bytes())


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as the driver reports them."""
    _lazy_init()
    free, total = _cupy().cuda.runtime.memGetInfo()
    return int(free), int(total)


def manual_seed(seed: int) -> None:
    cp = _cupy()
    if cp:
        cp.random.seed(int(seed))


manual_seed_all = manual_seed


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available()


def synchronize(device=None) -> None:
    cp = _cupy()
    if cp:
        cp.cuda.Device().synchronize()


def empty_cache() -> None:
    cp = _cupy()
    if cp:
        cp.get_default_memory_pool().free_all_blocks()


# the legacy CUDA tensor type classes (torch.cuda.FloatTensor, ...: ember/_tensor_types.py)
def _install_tensor_types() -> None:
    from ember._tensor_types import CUDA_TYPES
    globals().update(CUDA_TYPES)


_install_tensor_types()


# -- streams, events and graphs (``torch/cuda/streams.py``, ``graphs.py``): CuPy's streams and events on a GPU;
# without one, constructing them raises as PyTorch's CPU-only build does. CUDA graph capture is not supported.
class Stream:
    """A CUDA stream (``cupy.cuda.Stream``)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        _lazy_init()
        self._cp = _cupy().cuda.Stream(non_blocking=True)
        self.device = device

    def synchronize(self) -> None:
        self._cp.synchronize()

    def query(self) -> bool:
        return bool(self._cp.done)

    def wait_stream(self, stream: Stream) -> None:
        self._cp.wait_event(stream._cp.record())

    def wait_event(self, event: Event) -> None:
        self._cp.wait_event(event._cp)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event


class Event:
    """A CUDA event (``cupy.cuda.Event``)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        _lazy_init()
        self._cp = _cupy().cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self._cp.record(stream._cp if stream is not None else None)

    def synchronize(self) -> None:
        self._cp.synchronize()

    def query(self) -> bool:
        return bool(self._cp.done)

    def wait(self, stream: Stream | None = None) -> None:
        (stream._cp if stream is not None else _cupy().cuda.get_current_stream()).wait_event(self._cp)

    def elapsed_time(self, end_event: Event) -> float:
        return float(_cupy().cuda.get_elapsed_time(self._cp, end_event._cp))


class CUDAGraph:
    """``torch.cuda.CUDAGraph``: capture is not supported by ember (kernels are launched from Python)."""

    def __init__(self, keep_graph: bool = False) -> None:
        _lazy_init()
        raise RuntimeError("CUDA graph capture is not supported by ember")


class graph:  # noqa: N801 - PyTorch's name
    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None, **kwargs: Any) -> None:
        _lazy_init()
        raise RuntimeError("CUDA graph capture is not supported by ember")


def is_current_stream_capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph: never in ember."""
    return False


def current_stream(device: Any = None) -> Stream:
    _lazy_init()
    s = Stream.__new__(Stream)
    s._cp, s.device = _cupy().cuda.get_current_stream(), device
    return s


default_stream = current_stream


class StreamContext:
    """Make ``stream`` current inside the block (nothing to do for None, as in PyTorch)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> None:
        if self.stream is not None:
            self.stream._cp.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None:
            self.stream._cp.__exit__(*exc)


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)
