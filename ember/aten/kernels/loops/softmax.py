"""softmax / log_softmax over rows and their gradients (caller: ``kernels/softmax.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F0, _F1, _driver, _expf, _from_order_key, _kernel, _order_key, chunk

# ------------------------------------------------------------------------------ row kernels
# Each takes a C-contiguous float32 (R, n) array and the rows r0..r1-1 to do, so that ranges of rows run on the
# intra-op threads side by side. They compute in float32 vectors as PyTorch's kernels do; NaN and inf need no
# test of their own: a NaN, a +inf, or a row of -inf makes exp's argument NaN somewhere, and the row's sum carries
# it to every element, so the row is NaN throughout, as PyTorch's x - max makes it.

@_kernel
def softmax_rows(x: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """softmax (or log_softmax) of each row: m = max, e = exp(x - m), out = e / sum(e) (or x - m - log(sum(e))).
    The max is taken on ``_order_key``s, an integer max that vectorizes."""
    n = x.shape[1]
    for r in range(r0, r1):
        xr = x[r]
        orow = out[r]
        k = _order_key(xr[0])
        for j in range(n):
            k = max(k, _order_key(xr[j]))
        m = _from_order_key(k)
        s = _F0
        if log:
            for j in range(n):
                s += _expf(xr[j] - m)
            shift = m + np.log(s)
            for j in range(n):
                orow[j] = xr[j] - shift
        else:
            for j in range(n):
                e = _expf(xr[j] - m)
                orow[j] = e
                s += e
            inv = _F1 / s
            for j in range(n):
                orow[j] = orow[j] * inv


@_kernel
def softmax_backward_rows(g: Any, y: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """PyTorch's _softmax_backward_data per row, out = y (g - sum(g y)); or _log_softmax_backward_data,
    out = g - exp(y) sum(g)."""
    n = g.shape[1]
    for r in range(r0, r1):
        gr = g[r]
        yr = y[r]
        orow = out[r]
        s = _F0
        if log:
            for j in range(n):
                s += gr[j]
            for j in range(n):
                orow[j] = gr[j] - _expf(yr[j]) * s
        else:
            for j in range(n):
                s += gr[j] * yr[j]
            for j in range(n):
                orow[j] = yr[j] * (gr[j] - s)


@compiled.parallel_of(softmax_rows)
@_driver
def _softmax_rows_parallel(x: Any, out: Any, log: bool, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        softmax_rows(x, out, log, b, e)


@compiled.parallel_of(softmax_backward_rows)
@_driver
def _softmax_backward_rows_parallel(g: Any, y: Any, out: Any, log: bool, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        softmax_backward_rows(g, y, out, log, b, e)


# ------------------------------------------------------------------------------ runners
def softmax(x: Any, log: bool) -> Any:
    """softmax (``log``: log_softmax) along the last dim of a 2-d float32 array, into a new C-contiguous one."""
    kernel = softmax_rows
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    compiled.split(kernel, x.shape[0], compiled.row_grain(x.shape[1]), x, out, log)
    return out


def softmax_backward(g: Any, y: Any, log: bool) -> Any:
    """_softmax_backward_data (``log``: _log_softmax_backward_data) along the last dim of 2-d float32 arrays."""
    kernel = softmax_backward_rows
    g, y = np.ascontiguousarray(g), np.ascontiguousarray(y)
    out = np.empty(g.shape, np.float32)
    compiled.split(kernel, g.shape[0], compiled.row_grain(g.shape[1]), g, y, out, log)
    return out
