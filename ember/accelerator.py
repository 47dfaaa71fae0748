"""``ember.accelerator`` (``torch/accelerator``): the device-agnostic view of the current accelerator, which in
ember is CUDA through CuPy when a GPU is present, and none otherwise."""
from __future__ import annotations

from typing import Any

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available() -> bool:
    from ember import cuda
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Any:
    """``ember.device('cuda')`` when a GPU is usable, else None."""
    import ember
    return ember.device("cuda") if is_available() else None


def device_count() -> int:
    from ember import cuda
    return cuda.device_count() if is_available() else 0


def current_device_index() -> int:
    from ember import cuda
    return cuda.current_device() if is_available() else -1


def set_device_index(device: Any) -> None:
    if not is_available():
        raise RuntimeError("No accelerator is available")


def synchronize(device: Any = None) -> None:
    from ember import cuda
    if is_available():
        cuda.synchronize(device)
