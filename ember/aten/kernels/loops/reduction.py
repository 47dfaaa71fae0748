"""Sums of float32 values or their squares over trailing dims (``sum``, ``mean``, the 2-norm: a row's, or the whole
array's), one pass split over
the intra-op threads, and cumulative sums along any dim (callers: ``kernels/reduction.py``).

Note [Row sums]
NumPy's float32 ``add.reduce`` takes 145-170 us on 2^19 values here (2-core AMD EPYC, AVX2), the rows of a
1024 x 512 array or all of them, on one core; PyTorch's sum takes 32-41 us on two. These loops add a row in
float32 vectors (fast math's reassociation gives LLVM eight lanes and four accumulators), in blocks of
``BLOCK`` values whose sums are added in float64, so a long row keeps the accuracy of a pairwise sum: the error
grows with the block, not with the row. A whole array or a row too long to split by rows is cut into blocks of
``BLOCK`` (fixed, never by the thread count), summed side by side on the threads and added in order: the same bits on
any number of threads."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F0, _driver, _kernel, chunk

BLOCK = 4096


@_kernel
def row_sums(x: Any, squares: bool, out: Any, r0: int, r1: int) -> None:
    """out[r] = the sum of row r of the 2-d ``x`` (of its squares with ``squares``), for r in [r0, r1): float32
    blocks of ``BLOCK``, their sums in float64."""
    n = x.shape[1]
    for r in range(r0, r1):
        xr = x[r]
        total = 0.0
        for b0 in range(0, n, BLOCK):
            s = _F0
            if squares:
                for j in range(b0, min(n, b0 + BLOCK)):
                    s += xr[j] * xr[j]
            else:
                for j in range(b0, min(n, b0 + BLOCK)):
                    s += xr[j]
            total += np.float64(s)
        out[r] = total


@_kernel
def cumulative_sums(x: Any, out: Any, o0: int, o1: int) -> None:
    """out[o, k] = x[o, 0] + ... + x[o, k] for o in [o0, o1) of (outer, n, inner) arrays, added in float64 and each
    rounded once, as PyTorch's CPU cumsum accumulates (its ``acc_type``); vectorized over ``inner``."""
    n, inner = x.shape[1], x.shape[2]
    if inner == 1:                      # along the last dim: one running sum in a register
        for o in range(o0, o1):
            xo, oo = x[o, :, 0], out[o, :, 0]
            s = 0.0
            for k in range(n):
                s += xo[k]
                oo[k] = s
        return
    acc = np.empty(inner, np.float64)
    for o in range(o0, o1):
        acc[:] = 0.0
        for k in range(n):
            xk, ok = x[o, k], out[o, k]
            for j in range(inner):
                acc[j] += xk[j]
                ok[j] = acc[j]


@compiled.parallel_of(cumulative_sums)
@_driver
def _cumulative_sums_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        o0, o1 = chunk(work, chunks, c)
        cumulative_sums(x, out, o0, o1)


@compiled.parallel_of(row_sums)
@_driver
def _row_sums_parallel(x: Any, squares: bool, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        r0, r1 = chunk(work, chunks, c)
        row_sums(x, squares, out, r0, r1)


def trailing_sums(x: Any, rows: int, squares: bool = False) -> Any:
    """The float64 sums (of squares, with ``squares``) of the ``rows`` rows of the C-contiguous float32 array ``x``
    seen as (rows, x.size // rows): each row's blocks summed (Note [Row sums]), a row too long to split the rows
    over the threads cut into blocks first."""
    n = x.size // rows if rows else 0
    flat = x.reshape(rows, n)
    grain = max(1, compiled.CHEAP_GRAIN // max(n, 1))
    if rows >= 8 or n < 2 * BLOCK:
        out = np.empty(rows, np.float64)
        compiled.split(row_sums, rows, grain, flat, squares, out)
        return out
    # a few long rows: their blocks side by side, then each row's block sums added in order (a running sum, as
    # row_sums adds them: the same bits either way)
    nb = n // BLOCK
    blocks = flat[:, :nb * BLOCK].reshape(rows * nb, BLOCK)
    part = np.empty(rows * nb, np.float64)
    compiled.split(row_sums, rows * nb, max(1, compiled.CHEAP_GRAIN // BLOCK), blocks, squares, part)
    sums = part.reshape(rows, nb)
    if nb * BLOCK < n:
        tail = np.empty(rows, np.float64)
        row_sums(np.ascontiguousarray(flat[:, nb * BLOCK:]), squares, tail, 0, rows)
        sums = np.concatenate([sums, tail[:, None]], axis=1)
    return np.cumsum(sums, axis=1)[:, -1]


def cumsum(x: Any, dim: int) -> Any:
    """The cumulative sums of the float32 / float64 array ``x`` along ``dim``, in its dtype (float64 accumulators:
    PyTorch's values bit for bit)."""
    x = np.ascontiguousarray(x)
    n = x.shape[dim]
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    out = np.empty(x.shape, x.dtype)
    compiled.split(cumulative_sums, outer, compiled.row_grain(n * inner), x.reshape(outer, n, inner),
                   out.reshape(outer, n, inner))
    return out
