"""The CPU random generator: PyTorch's mt19937 engine (mirrors ``ATen/CPUGeneratorImpl.cpp``).

The engine is the standard 32-bit Mersenne Twister seeded with ``init_genrand(seed & 0xffffffff)``;
NumPy's ``MT19937`` bit generator runs the same recurrence, so ember sets its state and draws raw
32-bit words from it in bulk.  ``random64`` joins two draws, the first as the high word, as PyTorch
does.  The Box-Muller caches for single samples (``next_double_normal_sample``) are kept too, and
``get_state_bytes`` / ``set_state`` use PyTorch's 5056-byte layout so states move between the two.
"""
from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ember.c10.device import device as _device

_N = 624
_STATE_FMT = "<QiiQ624Qdddi4xf?3x"  # CPUGeneratorImplState: legacy pod + float normal cache
STATE_SIZE = struct.calcsize(_STATE_FMT)  # 5056


def _init_genrand(seed: int) -> np.ndarray:
    mt = [0] * _N
    mt[0] = seed & 0xFFFFFFFF
    for i in range(1, _N):
        prev = mt[i - 1]
        mt[i] = (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
    return np.array(mt, dtype=np.uint32)


class Generator:
    """``ember.Generator(device='cpu')``: an independent random stream."""
    __module__ = "ember._C"      # where it is public (Note [Printed module name])

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device(device)
        self._initial_seed: int = 0
        self._drawn = False
        self.next_double_normal_sample: float | None = None
        self.next_float_normal_sample: float | None = None
        self._bg = np.random.MT19937()
        self.manual_seed(67280421310721)  # PyTorch's default_rng_seed_val

    # -- seeding -------------------------------------------------------------------------------
    def manual_seed(self, seed: Any) -> Generator:
        seed = int(seed)
        if seed < 0:
            if seed < -(1 << 63):
                raise RuntimeError(f"Overflow when unpacking long long: {seed}")
            seed &= (1 << 64) - 1
        elif seed >= 1 << 64:
            raise RuntimeError("Overflow when unpacking long")
        self._initial_seed = seed
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": _init_genrand(seed), "pos": _N}}
        self._drawn = False
        self.next_double_normal_sample = None
        self.next_float_normal_sample = None
        return self

    def seed(self) -> int:
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._initial_seed

    # -- raw draws ----------------------------------------------------------------------------
    def random(self, n: int) -> Any:
        """``n`` 32-bit words as uint64."""
        self._drawn = True
        return self._bg.random_raw(n)

    def random64(self, n: int) -> Any:
        r = self._bg.random_raw(2 * n)
        self._drawn = True
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def engine_state(self) -> tuple[Any, int]:
        """The engine's 624 words (a uint32 array of one's own) and its position, for a kernel that draws from
        the engine directly; :meth:`set_engine_state` hands the advanced state back."""
        st = self._bg.state["state"]
        return np.array(st["key"], dtype=np.uint32), int(st["pos"])

    def set_engine_state(self, key: Any, pos: int) -> None:
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._drawn = True

    # -- state in PyTorch's layout -------------------------------------------------------------
    def get_state_bytes(self) -> bytes:
        """The state in PyTorch's layout; ``Generator.get_state()`` (ember/random.py) hands it out as a
        uint8 tensor, as PyTorch's binding (``torch/csrc/Generator.cpp``) wraps ``GeneratorImpl::get_state``."""
        st = self._bg.state["state"]
        pos = int(st["pos"])
        left, nxt = (1, _N if self._drawn else 0) if pos >= _N else (_N + 1 - pos, pos)
        d = self.next_double_normal_sample
        f = self.next_float_normal_sample
        raw = struct.pack(_STATE_FMT, self._initial_seed, left, 1, nxt, *[int(x) for x in st["key"]],
                          0.0, 0.0 if d is None else d, 0.0, 0 if d is None else 1,
                          0.0 if f is None else f, f is not None)
        return raw

    def set_state(self, new_state: Any) -> Generator:
        data = bytes(new_state.numpy().astype(np.uint8).tobytes()) if hasattr(new_state, "numpy") \
            else bytes(new_state)
        if len(data) != STATE_SIZE:
            raise RuntimeError("Expected either a THGeneratorState of size 5048 or a CPUGeneratorImplState of "
                               f"size 5056 but found the input RNG state size to be {len(data)}")
        vals = struct.unpack(_STATE_FMT, data)
        seed, left, _seeded, nxt = vals[:4]
        key = np.array(vals[4:4 + _N], dtype=np.uint64).astype(np.uint32)
        _nx, ny, _rho, nvalid, fval, fvalid = vals[4 + _N:]
        pos = _N if left == 1 else nxt
        self._initial_seed = seed
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._drawn = nxt != 0
        self.next_double_normal_sample = ny if nvalid else None
        self.next_float_normal_sample = fval if fvalid else None
        return self

    def __repr__(self) -> str:
        return f"<ember._C.Generator object at {hex(id(self))}>"


default_generator = Generator()
