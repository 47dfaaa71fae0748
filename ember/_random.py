"""Global random state (``torch/random.py``): seeding and saving the default CPU generator."""
from __future__ import annotations

from ember.c10.generator import default_generator


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
