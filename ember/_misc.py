"""Helpers of ``torch/__init__.py``: ``typename``, ``is_storage``, ``is_inference``, ``from_file``, the deprecated
``set_default_tensor_type``, ``set_flush_denormal``, build facts (``has_lapack``, ...), device modules, the
device-generic ``Stream`` / ``Event`` and the exception classes of the accelerator runtime."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember._tensor import Tensor
from ember.c10 import dtype as _dt
from ember.c10.exceptions import AcceleratorError, OutOfMemoryError, warn_user  # noqa: F401
from ember.storage import is_storage  # noqa: F401

__all__ = ["typename", "is_storage", "is_inference", "from_file", "set_default_tensor_type", "set_flush_denormal",
           "get_device_module", "Stream", "Event", "OutOfMemoryError", "AcceleratorError", "has_lapack", "has_mkl",
           "has_openmp", "has_spectral"]

# what this build has, as PyTorch reports it: LAPACK (NumPy's), spectral ops (pocketfft), OpenMP-style intra-op
# threads (ember's pool); not Intel's MKL
has_lapack = True
has_spectral = True
has_openmp = True
has_mkl = False


def typename(obj: Any, /) -> str:
    """The type of ``obj`` as a string: ``'torch.FloatTensor'`` for a tensor, ``module.QualName`` otherwise."""
    if isinstance(obj, Tensor):
        return str(obj.type())
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return str(qualname)
    return f"{module}.{qualname}"


def is_inference(input: Tensor) -> bool:  # noqa: A002
    return input.is_inference()


def set_default_tensor_type(t: Any, /) -> None:
    """The deprecated way to set the default floating dtype (and device) by a legacy tensor type."""
    import ember
    warn_user("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
              "and torch.set_default_device() as alternatives.")
    if isinstance(t, str):
        cuda = t.startswith("torch.cuda.")
        cls = getattr(ember.cuda if cuda else ember, t.split(".")[-1], None)
        if cls is None or not hasattr(cls, "dtype"):
            raise TypeError(f"invalid type: '{t}'")
        t = cls
    dtype = getattr(t, "dtype", None)
    if dtype is None or not isinstance(dtype, _dt.dtype):
        raise TypeError(f"invalid type: '{t}'")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dt.set_default_dtype(dtype)
    ember.set_default_device("cuda" if getattr(t, "is_cuda", False) else None)


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero: returns False, as PyTorch does where it cannot (NumPy's kernels do not
    expose the CPU's FTZ / DAZ bits)."""
    return False


def get_device_module(device: Any = None) -> Any:
    """The module of a device type (``ember.cuda``, ``ember.cpu``, ...); the current accelerator's by default."""
    import ember
    if device is None:
        name = "cuda" if ember.cuda.is_available() else "cpu"
    elif isinstance(device, ember.device):
        name = device.type
    elif isinstance(device, str):
        name = ember.device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    module = getattr(ember, name, None)
    if module is None or not hasattr(module, "is_available"):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as 'torch.{name}'.")
    return module


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A CPU tensor of ``size`` elements over the memory-mapped file: written back to it when ``shared`` (the file
    is created or grown as needed), copy-on-write otherwise (the file must be long enough)."""
    import os

    import ember
    dt = _dt.get_default_dtype() if dtype is None else dtype
    if device is not None and ember.device(device).type != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped from a file")
    nbytes = size * dt.itemsize
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(nbytes)
        data = np.memmap(filename, dtype=dt.np, mode="r+", shape=(size,)) if size else np.empty(0, dt.np)
    else:
        have = os.path.getsize(filename)
        if have < nbytes:
            raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory (12)")
        data = np.memmap(filename, dtype=dt.np, mode="c", shape=(size,)) if size else np.empty(0, dt.np)
    t = ember.from_numpy(data)
    return t.requires_grad_() if requires_grad else t


class Stream:
    """A device-generic stream (``torch.Stream``): CuPy's on CUDA; on the CPU, where work runs in order as issued,
    the one stream 0."""

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        import ember
        self.device = ember.device("cpu" if device is None else device)
        self._cuda = ember.cuda.Stream(device=self.device, priority=priority) if self.device.type == "cuda" else None

    @property
    def device_type(self) -> int:
        return 1 if self.device.type == "cuda" else 0

    @property
    def device_index(self) -> int:
        return -1 if self.device.index is None else int(self.device.index)

    @property
    def stream_id(self) -> int:
        return 0 if self._cuda is None else int(self._cuda._cp.ptr)

    def query(self) -> bool:
        return True if self._cuda is None else bool(self._cuda.query())

    def synchronize(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait_stream(self, stream: Stream) -> None:
        if self._cuda is not None and stream._cuda is not None:
            self._cuda.wait_stream(stream._cuda)

    def wait_event(self, event: Event) -> None:
        event.wait(self)

    def record_event(self, event: Event | None = None) -> Event:
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def is_capturing(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"torch.Stream device_type={self.device.type}, device_index={self.device_index}, " \
               f"stream_id={self.stream_id}"


class Event:
    """A device-generic event (``torch.Event``): CuPy's on CUDA; the CPU backend has no events and says so."""

    def __init__(self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        import ember
        self.device = ember.device("cpu" if device is None else device)
        self._cuda = ember.cuda.Event(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess) \
            if self.device.type == "cuda" else None

    def _need_backend(self) -> Any:
        if self._cuda is None:
            raise RuntimeError(f"{self.device.type} backend doesn't support events.")
        return self._cuda

    @property
    def event_id(self) -> int:
        return 0

    def record(self, stream: Stream | None = None) -> None:
        self._need_backend().record(None if stream is None else stream._cuda)

    def query(self) -> bool:
        return True if self._cuda is None else bool(self._cuda.query())

    def synchronize(self) -> None:
        self._need_backend().synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        self._need_backend().wait(None if stream is None else stream._cuda)

    def elapsed_time(self, end_event: Event) -> float:
        return float(self._need_backend().elapsed_time(end_event._need_backend()))

    def __repr__(self) -> str:
        return f"torch.Event device_type={self.device.type}, device_index=-1, event_flag=0, event_id=0"

