"""``torch.quasirandom``: ``SobolEngine``, Sobol' low-discrepancy sequences in up to 21201 dimensions (Joe and
Kuo's direction numbers), optionally scrambled (random linear matrix scrambling and a digital shift drawn from a
generator seeded with ``seed``). Points come in Gray-code order, the first being the origin (or the shift)."""
from __future__ import annotations

from typing import Any

import ember
from ember._generated import functions as _F

__all__ = ["SobolEngine"]


class SobolEngine:
    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.sobolstate = ember.zeros(dimension, self.MAXBIT, dtype=ember.long)
        _F._sobol_engine_initialize_state_(self.sobolstate, self.dimension)
        if not self.scramble:
            self.shift = ember.zeros(self.dimension, dtype=ember.long)
        else:
            self._scramble()
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def draw(self, n: int = 1, out: Any = None, dtype: Any = None) -> Any:
        """The next ``n`` points, an (n, dimension) tensor in [0, 1)."""
        if dtype is None:
            dtype = ember.get_default_dtype()
        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                result, self.quasi = _F._sobol_engine_draw(self.quasi, n - 1, self.sobolstate, self.dimension,
                                                           self.num_generated, dtype=dtype)
                result = ember.cat((self._first_point.to(dtype), result), dim=-2)
        else:
            result, self.quasi = _F._sobol_engine_draw(self.quasi, n, self.sobolstate, self.dimension,
                                                       self.num_generated - 1, dtype=dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Any = None, dtype: Any = None) -> Any:
        """The next 2**m points, keeping the total a power of two (the sequence's balance properties)."""
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip ``n`` points."""
        if self.num_generated == 0:
            _F._sobol_engine_ff_(self.quasi, n - 1, self.sobolstate, self.dimension, self.num_generated)
        else:
            _F._sobol_engine_ff_(self.quasi, n, self.sobolstate, self.dimension, self.num_generated - 1)
        self.num_generated += n
        return self

    def _scramble(self) -> None:
        g = None
        if self.seed is not None:
            g = ember.Generator()
            g.manual_seed(self.seed)
        shift_ints = ember.randint(2, (self.dimension, self.MAXBIT), generator=g)
        self.shift = ember.mv(shift_ints, ember.pow(2, ember.arange(0, self.MAXBIT)))
        ltm = ember.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=g).tril()
        _F._sobol_engine_scramble_(self.sobolstate, ltm, self.dimension)

    def __repr__(self) -> str:
        fmt = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt += ["scramble=True"]
        if self.seed is not None:
            fmt += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt) + ")"
