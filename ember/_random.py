"""Global random state (``torch/random.py``): seeding and saving the default CPU generator."""
from __future__ import annotations

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
