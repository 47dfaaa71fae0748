"""Sobol' low-discrepancy sequences (``SobolEngineOps.cpp``): the direction numbers of each dimension from Joe and
Kuo's primitive polynomials and initial values (21201 dimensions, read from the table SciPy ships), Gray-code
drawing and fast-forwarding, and Owen-style linear matrix scrambling. Bits are kept as int64 (``MAXBIT`` = 30)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels._common import Array
from ember.c10 import dtype as dt

MAXBIT = 30
MAXDIM = 21201
_TABLE: list[Any] = []


def _direction_table() -> tuple[np.ndarray, np.ndarray]:
    """(poly, initial direction numbers) of Joe and Kuo's ``new-joe-kuo-6.21201``, from SciPy's copy."""
    if not _TABLE:
        import importlib.util
        import os
        spec = importlib.util.find_spec("scipy")
        path = None if spec is None or spec.origin is None else \
            os.path.join(os.path.dirname(spec.origin), "stats", "_sobol_direction_numbers.npz")
        if path is None or not os.path.exists(path):
            raise RuntimeError("SobolEngine needs the Joe-Kuo table of direction numbers, which ember reads from "
                               "SciPy: pip install scipy")
        with np.load(path) as data:
            _TABLE.append((data["poly"].astype(np.int64), data["vinit"].astype(np.int64)))
    poly, vinit = _TABLE[0]
    return poly, vinit


def _rightmost_zero(n: int) -> int:
    """The index of the lowest zero bit of ``n``: which direction number the Gray-code step flips."""
    return (~n & (n + 1)).bit_length() - 1


def _sobol_engine_initialize_state_(xp: Any, self: Array, dimension: Any) -> None:
    """Row d: the direction numbers v_{d,j} (j < MAXBIT) from the recurrence of dimension d's primitive polynomial,
    scaled to MAXBIT-bit integers; dimension 0 is van der Corput's (all ones)."""
    poly, vinit = _direction_table()
    ss = np.zeros((dimension, MAXBIT), np.int64)
    ss[0, :] = 1
    p = poly[1:dimension]
    degree = np.array([int(v).bit_length() - 1 for v in p], np.int64)
    for m in np.unique(degree):  # the dimensions of one degree together
        rows = 1 + np.nonzero(degree == m)[0]
        pm = poly[rows]
        block = np.zeros((rows.size, MAXBIT), np.int64)
        block[:, :m] = vinit[rows, :m]
        for j in range(m, MAXBIT):
            newv = block[:, j - m].copy()
            for k in range(m):
                take = ((pm >> (m - 1 - k)) & 1).astype(bool)
                newv[take] ^= block[take, j - k - 1] << (k + 1)
            block[:, j] = newv
        ss[rows] = block
    ss *= 1 << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)
    self[...] = xp.asarray(ss)


def _sobol_engine_scramble_(xp: Any, self: Array, ltm: Array, dimension: Any) -> None:
    """Multiply each dimension's direction numbers (as bit vectors) by its random lower-triangular bit matrix, with
    ones on the diagonal, over GF(2)."""
    host = np.asarray(ltm.get() if hasattr(ltm, "get") else ltm).astype(np.int64)
    host[..., np.arange(MAXBIT), np.arange(MAXBIT)] = 1
    rows = (host * (1 << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64))).sum(-1)  # each row as an integer
    ss = np.asarray(self.get() if hasattr(self, "get") else self)[:dimension]
    bits = np.arange(MAXBIT, dtype=np.int64)
    lsm = ((rows[:, :, None] >> bits) & 1).astype(np.float32)     # [d, p, k]: bit k of matrix row p
    v = ((ss[:, :, None] >> bits) & 1).astype(np.float32)          # [d, j, k]: bit k of v_{d,j}
    parity = (np.matmul(v, lsm.transpose(0, 2, 1)) % 2).astype(np.int64)  # [d, j, p], exact in float32
    ss = parity @ (1 << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64))
    self[:dimension] = xp.asarray(ss)


def _gray_steps(quasi: np.ndarray, n: int, sobolstate: np.ndarray, num_generated: int, out: Any = None) -> np.ndarray:
    w = quasi.copy()
    for i in range(n):
        w ^= sobolstate[:, _rightmost_zero(num_generated + i)]
        if out is not None:
            out[i] = w
    return w


def _sobol_engine_draw(xp: Any, quasi: Array, n: Any, sobolstate: Array, dimension: Any, num_generated: Any,
                       dtype: Any = None) -> Any:
    """The next ``n`` points (rows) and the new state: each step xors in the direction numbers of the lowest zero
    bit of the point's index (Gray-code order), then scales by 2^-MAXBIT in the result dtype."""
    npdt = (dtype or dt.float32).np
    host_q = np.asarray(quasi.get() if hasattr(quasi, "get") else quasi)
    host_s = np.asarray(sobolstate.get() if hasattr(sobolstate, "get") else sobolstate)
    ints = np.empty((n, dimension), np.int64)
    w = _gray_steps(host_q, n, host_s, num_generated, ints)
    result = ints.astype(npdt) * npdt.type(1.0 / (1 << MAXBIT))
    return xp.asarray(result), xp.asarray(w)


def _sobol_engine_ff_(xp: Any, self: Array, n: Any, sobolstate: Array, dimension: Any, num_generated: Any) -> None:
    """Skip ``n`` points: the state after them, without producing them."""
    host_q = np.asarray(self.get() if hasattr(self, "get") else self)
    host_s = np.asarray(sobolstate.get() if hasattr(sobolstate, "get") else sobolstate)
    self[...] = xp.asarray(_gray_steps(host_q, n, host_s, num_generated))
