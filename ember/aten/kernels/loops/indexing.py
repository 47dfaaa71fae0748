"""Row-wise scatter_add / index_add in order, PyTorch's accumulation order (caller: ``kernels/indexing.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels.loops._common import _kernel

@_kernel
def _scatter_add_rows(out: Any, idx: Any, src: Any) -> None:
    """out[r, idx[r, j]] += src[r, j] for every row r, in order (max pooling's backward: indices flat over
    each plane)."""
    for r in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            out[r, idx[r, j]] += src[r, j]


@_kernel
def _index_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[index[i], :] += src[i, :] for every i, in order (``index_add`` along dim 0 of 2-d row blocks:
    embedding's backward)."""
    for i in range(index.shape[0]):
        row = index[i]
        for j in range(src.shape[1]):
            out[row, j] += src[i, j]


# ------------------------------------------------------------------------------ runners
def scatter_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[r, index[r, j]] += src[r, j] in place, row by row in order (``out`` C-contiguous 2-d, ``index``
    int64 in range, ``src`` of out's dtype)."""
    _scatter_add_rows(out, np.ascontiguousarray(index), np.ascontiguousarray(src))


def index_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[index[i]] += src[i] in place, in order (``out`` C-contiguous 2-d, ``index`` int64 1-d in range, ``src``
    of out's dtype)."""
    _index_add_rows(out, np.ascontiguousarray(index), np.ascontiguousarray(src))
