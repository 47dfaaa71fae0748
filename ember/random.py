"""Global random state (``torch/random.py``): seeding and saving the default CPU generator, and ``fork_rng``."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ember._creation import from_numpy
from ember.c10.generator import Generator, default_generator


def _get_state(self):
    """``Generator.get_state()``: the state as a uint8 tensor in PyTorch's 5056-byte layout (the binding's part;
    the generator itself, in c10, holds bytes)."""
    return from_numpy(np.frombuffer(self.get_state_bytes(), dtype=np.uint8).copy())


Generator.get_state = _get_state


def manual_seed(seed):
    """Seed the default generator (and CUDA's when present); returns it."""
    seed = int(seed)
    from ember import cuda
    if cuda.is_available():
        cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor, in PyTorch's layout."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Random draws inside the block do not change the generator state seen after it: the CPU generator's state is
    restored on exit. (ember's CUDA draws come from CuPy's generator, which has no saved state to fork yet.)"""
    if not enabled:
        yield
        return
    cpu_state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(cpu_state)


def thread_safe_generator() -> Any:
    """The generator a DataLoader thread worker owns, for transforms that draw random numbers there; None in the
    main process and in process workers (the default generator is then used, and each process has its own)."""
    from ember.utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", "process") == "thread" and \
            getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None
