"""``ember.cuda``: the GPU backend through CuPy.  Every query answers "no GPU" when CuPy or a device is
missing, as ``torch.cuda`` does on a CPU-only machine."""
from __future__ import annotations

import functools


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
