"""What a sparse tensor holds (mirrors ``SparseTensorImpl.h`` and ``SparseCsrTensorImpl.h``), and the helpers every
sparse kernel uses to read and make one (Note [Sparse tensors] in ember/aten/sparse/__init__.py)."""
from __future__ import annotations

from typing import Any, Sequence

import warnings

import numpy as np

from ember.aten.wrap import new_tensor
from ember.c10.device import CPU
from ember.c10.dispatch_key import KS_CPU, KS_SPARSE_CPU, KS_SPARSE_CSR_CPU, SPARSE_MASK
from ember.c10.memory_format import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided

COMPRESSED_LAYOUTS = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
BLOCKED_LAYOUTS = (sparse_bsr, sparse_bsc)
ROW_LAYOUTS = (sparse_csr, sparse_bsr)      # compressed rows: crow_indices / col_indices
LAYOUT_NAMES = {sparse_coo: "Sparse", sparse_csr: "SparseCsr", sparse_csc: "SparseCsc", sparse_bsr: "SparseBsr",
                sparse_bsc: "SparseBsc", strided: "Strided"}


class SparseParts:
    """The arrays of a sparse tensor.

    COO: ``indices`` (int64, ``[sparse_dim, nnz]``), ``values`` (``[nnz, *dense_sizes]``), ``coalesced``.
    Compressed (CSR / CSC / BSR / BSC): ``compressed`` (``crow_indices`` / ``ccol_indices``, ``[*batch, n + 1]``),
    ``plain`` (``col_indices`` / ``row_indices``, ``[*batch, nnz]``), ``values`` (``[*batch, nnz, *block,
    *dense_sizes]``); ``indices`` is None."""

    __slots__ = ("layout", "indices", "values", "coalesced", "compressed", "plain")

    def __init__(self, layout: Any, values: Any, indices: Any = None, coalesced: bool = False,
                 compressed: Any = None, plain: Any = None) -> None:
        self.layout, self.values, self.indices, self.coalesced = layout, values, indices, coalesced
        self.compressed, self.plain = compressed, plain


_SHELLS: dict[Any, Any] = {}


def _shell(size: Sequence[int], np_dtype: Any) -> Any:
    """The array a sparse tensor's ``_data`` holds: its sizes and dtype over one element, every stride 0 (PyTorch's
    sparse tensors report strides of 0), never read."""
    buf = _SHELLS.get(np_dtype)
    if buf is None:
        buf = _SHELLS[np_dtype] = np.zeros(1, np_dtype)
    return np.lib.stride_tricks.as_strided(buf, tuple(size), (0,) * len(size), writeable=False)


def is_sparse_layout(t: Any) -> bool:
    """Whether ``t`` has any sparse layout (``Tensor.is_sparse`` is COO only)."""
    return bool(t._ks & SPARSE_MASK)


def parts(t: Any) -> SparseParts:
    sp: SparseParts = t.__dict__["_sp"]
    return sp


def alias_parts(dst: Any, src: Any) -> None:
    """``dst`` holds the arrays ``src`` holds (``Tensor.data``: a shallow copy, as PyTorch's)."""
    p = parts(src)
    dst._sp = SparseParts(p.layout, p.values, p.indices, p.coalesced, p.compressed, p.plain)


def new_coo(indices: Any, values: Any, size: Sequence[int], coalesced: bool, device: Any = CPU) -> Any:
    """A COO tensor over the arrays ``indices`` (int64 ``[sparse_dim, nnz]``) and ``values``: held, not copied."""
    t = new_tensor(_shell(size, values.dtype), KS_SPARSE_CPU, device)
    t._sp = SparseParts(sparse_coo, values, indices=indices, coalesced=bool(coalesced))
    return t


_WARNED_BETA = [False]


def new_compressed(layout: Any, compressed: Any, plain: Any, values: Any, size: Sequence[int],
                   device: Any = CPU) -> Any:
    if not _WARNED_BETA[0]:     # PyTorch's once-per-process warning at the first compressed tensor (the part
        _WARNED_BETA[0] = True  # that sends users to PyTorch's issue tracker left out)
        warnings.warn("Sparse CSR tensor support is in beta state.", UserWarning, stacklevel=2)
    t = new_tensor(_shell(size, values.dtype), KS_SPARSE_CSR_CPU, device)
    t._sp = SparseParts(layout, values, compressed=compressed, plain=plain)
    return t


def dense(arr: Any, device: Any = CPU) -> Any:
    """A strided tensor over the array ``arr``."""
    return new_tensor(arr, KS_CPU, device)


def layout_of(t: Any) -> Any:
    return t.__dict__["_sp"].layout if t._ks & SPARSE_MASK else strided


def sparse_dim_of(t: Any) -> int:
    p = parts(t)
    return int(p.indices.shape[0]) if p.indices is not None else 2


def dense_dim_of(t: Any) -> int:
    p = parts(t)
    if p.indices is not None:
        return int(p.values.ndim) - 1
    return int(p.values.ndim - p.compressed.ndim) - (2 if p.layout in BLOCKED_LAYOUTS else 0)


def nnz_of(t: Any) -> int:
    p = parts(t)
    return int(p.indices.shape[1] if p.indices is not None else p.plain.shape[-1])


def linear_index(indices: Any, sizes: Sequence[int]) -> Any:
    """Each column of ``indices`` as one row-major number over ``sizes`` (what coalescing sorts by)."""
    lin = np.zeros(indices.shape[1], np.int64)
    for d, n in enumerate(sizes):
        lin = lin * n + indices[d]
    return lin


def coalesce_arrays(indices: Any, values: Any, sizes: Sequence[int]) -> tuple[Any, Any]:
    """Sorted, unique indices and the sums of the values at repeated ones (``coalesce``'s arrays)."""
    nnz = indices.shape[1]
    if nnz == 0:
        return indices.copy(), values.copy()
    lin = linear_index(indices, sizes)
    order = np.argsort(lin, kind="stable")
    lin = lin[order]
    starts = np.flatnonzero(np.concatenate(([True], lin[1:] != lin[:-1])))
    new_indices = np.ascontiguousarray(indices[:, order[starts]])
    if len(starts) == nnz:
        return new_indices, np.ascontiguousarray(values[order])
    summed = np.add.reduceat(values[order], starts, axis=0)
    return new_indices, np.ascontiguousarray(summed.astype(values.dtype, copy=False))


def coalesced_parts(t: Any) -> tuple[Any, Any]:
    """The indices and values of the COO tensor ``t`` coalesced (its own arrays when it is)."""
    p = parts(t)
    if p.coalesced:
        return p.indices, p.values
    return coalesce_arrays(p.indices, p.values, t._data.shape[:p.indices.shape[0]])


def to_dense_array(t: Any) -> Any:
    """The values of the COO tensor ``t`` laid out densely (repeated indices summed)."""
    p = parts(t)
    out = np.zeros(t._data.shape, t._data.dtype)
    idx = tuple(p.indices)
    if p.coalesced:
        out[idx] = p.values
    else:
        np.add.at(out, idx, p.values)
    return out


def require_cpu(device: Any, what: str) -> None:
    if device.type != "cpu":
        raise NotImplementedError(f"{what}: sparse tensors live on the CPU in ember (SparseCPU, SparseCsrCPU); "
                                  f"got the device {device}")
