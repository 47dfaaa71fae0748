"""Arithmetic on large float32 arrays: add, sub, mul, div of two same-shaped arrays or of an array and a number,
exp and sigmoid, one pass each, split over the intra-op threads by the loops' parallel drivers (callers:
``kernels/binary.py``, ``kernels/unary.py``).

NumPy's own loops are as fast on one core; what they lack is the second core. An array that does not fit one
core's L2 cache (262144 float32 values for two operands and a result: 3 MB) is read from the shared cache at its
bandwidth, about 25 GB/s here, while split in two it stays in the two cores' caches: ``a + b`` on 262144 values
takes 124 us in NumPy, 28 us here, 32 us in PyTorch. Smaller arrays stay with NumPy (a range per thread must pay
for the launch, ``compiled.split``'s grain).

No fast math: add, sub, mul and div round once, as NumPy's and PyTorch's do, so the results are theirs bit for
bit; exp is ``_expf`` (within 1 ulp), sigmoid PyTorch's 1 / (1 + e^-x) on it."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F1, _driver, _exact, _exact_driver, _expf, _kernel, chunk

ADD, SUB, MUL, DIV, RSUB, RDIV = range(6)   # RSUB / RDIV: the number on the left (``2 - x``, ``2 / x``)


@_exact
def binary(x: Any, y: Any, op: int, out: Any, b: int, e: int) -> None:
    """out = x (op) y over the range [b, e) of flat same-sized arrays."""
    x, y, out = x[b:e], y[b:e], out[b:e]
    if op == ADD:
        for i in range(x.size):
            out[i] = x[i] + y[i]
    elif op == SUB:
        for i in range(x.size):
            out[i] = x[i] - y[i]
    elif op == MUL:
        for i in range(x.size):
            out[i] = x[i] * y[i]
    else:
        for i in range(x.size):
            out[i] = x[i] / y[i]


@_exact
def binary_number(x: Any, s: Any, op: int, out: Any, b: int, e: int) -> None:
    """out = x (op) s over the range [b, e) of a flat array, s a float32 number."""
    x, out = x[b:e], out[b:e]
    if op == ADD:
        for i in range(x.size):
            out[i] = x[i] + s
    elif op == SUB:
        for i in range(x.size):
            out[i] = x[i] - s
    elif op == MUL:
        for i in range(x.size):
            out[i] = x[i] * s
    elif op == DIV:
        for i in range(x.size):
            out[i] = x[i] / s
    elif op == RSUB:
        for i in range(x.size):
            out[i] = s - x[i]
    else:
        for i in range(x.size):
            out[i] = s / x[i]


@_kernel
def exp(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = _expf(x[i])


@_kernel
def sigmoid(x: Any, out: Any, b: int, e: int) -> None:
    """1 / (1 + e^-x), PyTorch's float32 formula (0 below -88.7, where e^-x overflows)."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = _F1 / (_F1 + _expf(-x[i]))


@compiled.parallel_of(binary)
@_exact_driver
def _binary_parallel(x: Any, y: Any, op: int, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        binary(x, y, op, out, b, e)


@compiled.parallel_of(binary_number)
@_exact_driver
def _binary_number_parallel(x: Any, s: Any, op: int, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        binary_number(x, s, op, out, b, e)


@compiled.parallel_of(exp)
@_driver
def _exp_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        exp(x, out, b, e)


@compiled.parallel_of(sigmoid)
@_driver
def _sigmoid_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        sigmoid(x, out, b, e)


# ------------------------------------------------------------------------------ runners
def arithmetic(op: int, a: Any, b: Any) -> Any:
    """a (op) b for C-contiguous float32 arrays of one shape, or a float32 array ``a`` and a number ``b`` (then
    op may be RSUB or RDIV), into a new float32 array."""
    out = np.empty(a.shape, np.float32)
    flat = a.reshape(-1)
    if isinstance(b, np.ndarray):
        compiled.split(binary, flat.size, parallel.GRAIN_SIZE, flat, b.reshape(-1), op, out.reshape(-1))
    else:
        compiled.split(binary_number, flat.size, parallel.GRAIN_SIZE, flat, np.float32(b), op, out.reshape(-1))
    return out
