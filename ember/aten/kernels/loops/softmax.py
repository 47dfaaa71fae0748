"""softmax / log_softmax over rows and their gradients (caller: ``kernels/softmax.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _exp_le1, _kernel

# ------------------------------------------------------------------------------ row kernels
# Each takes a C-contiguous float32 (R, n) array and the rows r0..r1-1 to do, so that ranges of rows run on the
# intra-op threads side by side; sums are float64.

@_kernel
def softmax_rows(x: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """softmax (or log_softmax) of each row: m = max, e = exp(x - m), out = e / sum(e) (or x - m - log(sum(e))).
    A row whose maximum is not finite (a NaN, +inf, or -inf throughout) is NaN throughout, as PyTorch's
    x - max makes it. exp runs on arguments <= 0 there, the domain of ``_exp_le1``."""
    n = x.shape[1]
    for r in range(r0, r1):
        m = -np.inf
        for j in range(n):
            v = x[r, j]
            m = v if (v > m or v != v) else m
        if not (m > -np.inf and m < np.inf):
            for j in range(n):
                out[r, j] = np.nan
            continue
        m64 = np.float64(m)
        s = 0.0
        if log:
            for j in range(n):
                s += _exp_le1(np.float64(x[r, j]) - m64)
            shift = m64 + np.log(s)
            for j in range(n):
                out[r, j] = np.float64(x[r, j]) - shift
        else:
            for j in range(n):
                e = _exp_le1(np.float64(x[r, j]) - m64)
                out[r, j] = e
                s += e
            inv = 1.0 / s
            for j in range(n):
                out[r, j] = np.float64(out[r, j]) * inv


@_kernel
def softmax_backward_rows(g: Any, y: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """PyTorch's _softmax_backward_data per row, out = y (g - sum(g y)); or _log_softmax_backward_data,
    out = g - exp(y) sum(g). exp(y) goes through ``_exp_le1`` when the row's y are <= 1 (log-probabilities
    are <= 0), through libm's exp otherwise (a caller's arbitrary ``output``, NaN)."""
    n = g.shape[1]
    for r in range(r0, r1):
        s = 0.0
        if log:
            top = -np.inf
            for j in range(n):
                s += np.float64(g[r, j])
                v = y[r, j]
                top = v if (v > top or v != v) else top
            if top <= 1.0:
                for j in range(n):
                    out[r, j] = np.float64(g[r, j]) - _exp_le1(np.float64(y[r, j])) * s
            else:
                for j in range(n):
                    out[r, j] = np.float64(g[r, j]) - np.exp(np.float64(y[r, j])) * s
        else:
            for j in range(n):
                s += np.float64(g[r, j]) * np.float64(y[r, j])
            for j in range(n):
                out[r, j] = np.float64(y[r, j]) * (np.float64(g[r, j]) - s)


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
