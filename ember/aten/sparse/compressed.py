"""SparseCsrCPU kernels: the compressed layouts CSR, CSC, BSR and BSC (mirrors
``native/sparse/SparseCsrTensor.cpp``, ``SparseCsrTensorMath.cpp`` and the conversions of ``TensorConversions.cpp``).

Note [Compressed layouts]
A compressed tensor of sizes ``[*batch, rows, cols, *dense]`` stores, for each batch, the positions of one
compressed dimension (rows for CSR / BSR, columns for CSC / BSC) as the offsets ``compressed[i]:compressed[i + 1]``
into ``plain`` (the other coordinate of each stored element, sorted and unique within the run) and ``values``. The
blocked layouts store ``blocksize`` blocks instead of elements: their coordinates count blocks, and each value is a
block. Every batch holds the same number of elements (PyTorch's rule). Conversions go through one place each: a
dense array to compressed parts (``_from_dense``), compressed parts to element coordinates (``_coordinates``), and
element coordinates to compressed parts (``_from_coordinates``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ember._generated import aten
from ember.aten.sparse.tensor import (BLOCKED_LAYOUTS, COMPRESSED_LAYOUTS, LAYOUT_NAMES, ROW_LAYOUTS,
                                      coalesced_parts, dense, dense_dim_of, is_sparse_layout, layout_of, new_compressed,
                                      new_coo, parts, require_cpu, to_dense_array)
from ember.c10.memory_format import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr

__all__ = ["value_positions", "sparse_compressed_tensor_unsafe", "sparse_compressed_tensor_with_size",
           "sparse_compressed_tensor_infer", "validate_sparse_compressed_tensor_args", "crow_indices_default",
           "col_indices_default", "ccol_indices_default", "row_indices_default", "values_compressed",
           "nnz_compressed", "sparse_dim_compressed", "dense_dim_compressed", "compressed_to_dense",
           "to_compressed", "compressed_to_sparse_layout", "to_sparse_csr",
           "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc", "clone_compressed", "alias_compressed",
           "to_copy_compressed", "transpose_compressed", "t_compressed", "zeros_like_compressed",
           "empty_like_compressed", "new_zeros_compressed", "select_compressed"]

_COMPRESSED_NAME = {sparse_csr: "crow", sparse_bsr: "crow", sparse_csc: "ccol", sparse_bsc: "ccol"}


def _is_row(layout: Any) -> bool:
    return layout in ROW_LAYOUTS


def _blocksize(t: Any) -> tuple[int, int]:
    p = parts(t)
    if p.layout in BLOCKED_LAYOUTS:
        nb = p.compressed.ndim - 1
        return int(p.values.shape[nb + 1]), int(p.values.shape[nb + 2])
    return 1, 1


def _batch_shape(t: Any) -> tuple[int, ...]:
    return tuple(parts(t).compressed.shape[:-1])


# -- construction -------------------------------------------------------------------------------------------------
def _check_compressed(compressed: Any, plain: Any, values: Any, size: Sequence[int], layout: Any,
                      check_invariants: bool) -> None:
    """PyTorch's ``_validate_sparse_compressed_tensor_args``: shapes always; with ``check_invariants`` also the
    offsets (start at 0, end at nnz, non-decreasing) and the plain indices (in range, sorted and unique per run)."""
    cname = _COMPRESSED_NAME[layout]
    pname = "col" if _is_row(layout) else "row"
    if compressed.dtype != plain.dtype:
        raise RuntimeError(f"{cname}_indices and {pname}_indices must have the same dtype, but got "
                           f"{_int_name(compressed)} and {_int_name(plain)}, respectively")
    if compressed.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"{cname}_indices and {pname}_indices dtype must be Int or Long, but got "
                           f"{_int_name(compressed)}")
    if compressed.ndim != plain.ndim:
        raise RuntimeError(f"{cname}_indices and {pname}_indices must have the same number of dimensions, but got "
                           f"{compressed.ndim} and {plain.ndim}, respectively")
    nb = compressed.ndim - 1
    blocked = layout in BLOCKED_LAYOUTS
    if len(size) < nb + 2:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities (="
                           f"{nb}, 2, {values.ndim - nb - 1 - (2 if blocked else 0)}) but got {len(size)}")
    if values.ndim < nb + 1 + (2 if blocked else 0):
        raise RuntimeError(f"values must have dimensionality > sum of batch and block dimensionalities (="
                           f"{nb} + {2 if blocked else 0}) but got {values.ndim}")
    dense_dims = values.ndim - nb - 1 - (2 if blocked else 0)
    if len(size) != nb + 2 + dense_dims:
        raise RuntimeError(f"tensor dimensionality must be sum of batch, base, and dense dimensionalities (="
                           f"{nb}, 2, {dense_dims}) but got {len(size)}")
    bh, bw = (values.shape[nb + 1], values.shape[nb + 2]) if blocked else (1, 1)
    rows, cols = size[nb], size[nb + 1]
    if blocked and (rows % bh or cols % bw):
        raise RuntimeError(f"tensor shape[{nb}] ({rows}) must be divisible with blocksize[0] ({bh}) as defined by "
                           f"values shape" if rows % bh else
                           f"tensor shape[{nb + 1}] ({cols}) must be divisible with blocksize[1] ({bw}) as defined "
                           f"by values shape")
    ncompressed = (rows // bh) if _is_row(layout) else (cols // bw)
    nplain = (cols // bw) if _is_row(layout) else (rows // bh)
    if compressed.shape[-1] != ncompressed + 1:
        raise RuntimeError(f"{cname}_indices.shape[-1] must be equal to the number of "
                           f"{'rows' if _is_row(layout) else 'columns'} + 1 (={ncompressed + 1}), but got "
                           f"{compressed.shape[-1]}")
    if tuple(compressed.shape[:-1]) != tuple(size[:nb]) or tuple(plain.shape[:-1]) != tuple(size[:nb]):
        raise RuntimeError(f"all batch dimensions of {cname}_indices, {pname}_indices and values must be the same")
    nnz = plain.shape[-1]
    if values.shape[nb] != nnz:
        raise RuntimeError(f"number of dimensions of {pname}_indices and values must be the same: values.shape"
                           f"[{nb}] ({values.shape[nb]}) must be nnz ({nnz})")
    if tuple(values.shape[nb + 1 + (2 if blocked else 0):]) != tuple(size[nb + 2:]):
        raise RuntimeError(f"dense dimensions of values {list(values.shape[nb + 1 + (2 if blocked else 0):])} do "
                           f"not match the tensor's {list(size[nb + 2:])}")
    if not check_invariants:
        return
    c = compressed.reshape(-1, compressed.shape[-1]).astype(np.int64)
    pl = plain.reshape(-1, nnz).astype(np.int64)
    if c.size and not np.all(c[:, 0] == 0):
        raise RuntimeError(f"`{cname}_indices[..., 0] == 0` is not satisfied.")
    if c.size and not np.all(c[:, -1] == nnz):
        raise RuntimeError(f"`{cname}_indices[..., -1] == nnz` is not satisfied.")
    steps = np.diff(c, axis=-1)
    if steps.size and not (np.all(steps >= 0) and np.all(steps <= nplain)):
        raise RuntimeError(f"`0 <= {cname}_indices[..., 1:] - {cname}_indices[..., :-1] <= "
                           f"{'ncols' if _is_row(layout) else 'nrows'}` is not satisfied.")
    if pl.size and not (np.all(pl >= 0) and np.all(pl < nplain)):
        raise RuntimeError(f"`0 <= {pname}_indices < {'ncols' if _is_row(layout) else 'nrows'}` is not satisfied.")
    for b in range(c.shape[0]):
        run = np.repeat(np.arange(ncompressed), np.diff(c[b]))
        same_run = run[1:] == run[:-1]
        if np.any(same_run & (pl[b, 1:] <= pl[b, :-1])):
            n = "nrows" if _is_row(layout) else "ncols"
            raise RuntimeError(f"`{pname}_indices[..., {cname}_indices[..., i - 1]:{cname}_indices[..., i]] for all "
                               f"i = 1, ..., {n} are sorted and distinct along the last dimension values` is not "
                               f"satisfied.")


def _int_name(a: Any) -> str:
    return {"int32": "Int", "int64": "Long"}.get(str(a.dtype), str(a.dtype))


def sparse_compressed_tensor_unsafe(compressed_indices: Any, plain_indices: Any, values: Any, size: Sequence[int],
                                    dtype: Any = None, layout: Any = None, device: Any = None,
                                    pin_memory: Any = None) -> Any:
    """A compressed tensor over the given tensors' memory (no copy), checked for shapes only."""
    if layout not in COMPRESSED_LAYOUTS:
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout but got "
                           f"{LAYOUT_NAMES.get(layout, layout)}")
    dev = device if device is not None else values._device
    require_cpu(dev, "sparse_compressed_tensor")
    vals = values._data if dtype is None or dtype.np == values._data.dtype else values._data.astype(dtype.np)
    size = tuple(int(s) for s in size)
    _check_compressed(compressed_indices._data, plain_indices._data, vals, size, layout, False)
    return new_compressed(layout, compressed_indices._data, plain_indices._data, vals, size, dev)


def validate_sparse_compressed_tensor_args(compressed_indices: Any, plain_indices: Any, values: Any,
                                           size: Sequence[int], layout: Any) -> None:
    _check_compressed(compressed_indices._data, plain_indices._data, values._data, tuple(size), layout, True)


def _inferred_size(compressed: Any, plain: Any, values: Any, layout: Any) -> list[int]:
    nb = compressed.ndim - 1
    blocked = layout in BLOCKED_LAYOUTS
    bh, bw = (values.shape[nb + 1], values.shape[nb + 2]) if blocked else (1, 1)
    ncompressed = compressed.shape[-1] - 1
    nplain = int(plain.max()) + 1 if plain.size else 0
    rows, cols = (ncompressed * bh, nplain * bw) if _is_row(layout) else (nplain * bh, ncompressed * bw)
    return list(compressed.shape[:-1]) + [rows, cols] + list(values.shape[nb + 1 + (2 if blocked else 0):])


def sparse_compressed_tensor_with_size(compressed_indices: Any, plain_indices: Any, values: Any,
                                       size: Sequence[int], dtype: Any = None, layout: Any = None,
                                       device: Any = None, pin_memory: Any = None) -> Any:
    validate_sparse_compressed_tensor_args(compressed_indices, plain_indices, values, size, layout)
    return aten._sparse_compressed_tensor_unsafe(compressed_indices, plain_indices, values, tuple(size), dtype=dtype,
                                                 layout=layout, device=device)


def sparse_compressed_tensor_infer(compressed_indices: Any, plain_indices: Any, values: Any, dtype: Any = None,
                                   layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    size = _inferred_size(compressed_indices._data, plain_indices._data, values._data, layout)
    return sparse_compressed_tensor_with_size(compressed_indices, plain_indices, values, size, dtype, layout, device)


def inferred_size(compressed_indices: Any, plain_indices: Any, values: Any, layout: Any) -> list[int]:
    return _inferred_size(compressed_indices._data, plain_indices._data, values._data, layout)


# -- parts ----------------------------------------------------------------------------------------------------------
def _expect(self: Any, what: str, row: bool) -> None:
    lay = layout_of(self)
    if lay not in COMPRESSED_LAYOUTS or _is_row(lay) != row:
        kind = "row" if row else "column"
        raise RuntimeError(f"{what} expected sparse {kind} compressed tensor layout but got {LAYOUT_NAMES[lay]}")


def crow_indices_default(self: Any) -> Any:
    _expect(self, "crow_indices", True)
    return dense(parts(self).compressed, self._device)


def col_indices_default(self: Any) -> Any:
    _expect(self, "col_indices", True)
    return dense(parts(self).plain, self._device)


def ccol_indices_default(self: Any) -> Any:
    _expect(self, "ccol_indices", False)
    return dense(parts(self).compressed, self._device)


def row_indices_default(self: Any) -> Any:
    _expect(self, "row_indices", False)
    return dense(parts(self).plain, self._device)


def values_compressed(self: Any) -> Any:
    return dense(parts(self).values, self._device)


def nnz_compressed(self: Any) -> int:
    return int(parts(self).plain.shape[-1])


def sparse_dim_compressed(self: Any) -> int:
    return 2


def dense_dim_compressed(self: Any) -> int:
    return dense_dim_of(self)


# -- conversions ---------------------------------------------------------------------------------------------------
def _coordinates(t: Any) -> tuple[Any, Any]:
    """Every stored element of ``t`` (each block expanded): its coordinates ``[batch dims + 2, n]`` and its values
    ``[n, *dense]`` (Note [Compressed layouts])."""
    p = parts(t)
    nb = p.compressed.ndim - 1
    bh, bw = _blocksize(t)
    blocked = p.layout in BLOCKED_LAYOUTS
    batches = int(np.prod(p.compressed.shape[:-1], dtype=np.int64))
    comp = p.compressed.reshape(batches, -1).astype(np.int64)
    plain = p.plain.reshape(batches, -1).astype(np.int64)
    nnz = plain.shape[1]
    vals = p.values.reshape((batches, nnz) + p.values.shape[nb + 1:])
    coords, out_vals = [], []
    for b in range(batches):
        run = np.repeat(np.arange(comp.shape[1] - 1), np.diff(comp[b]))
        r, c = (run, plain[b]) if _is_row(p.layout) else (plain[b], run)
        v = vals[b]
        if blocked:     # each block's (bh, bw) elements, row-major within the block
            i, j = np.meshgrid(np.arange(bh), np.arange(bw), indexing="ij")
            r = (r[:, None] * bh + i.reshape(-1)).reshape(-1)
            c = (c[:, None] * bw + j.reshape(-1)).reshape(-1)
            v = v.reshape((nnz * bh * bw,) + v.shape[3:])
        batch_idx = np.unravel_index(np.full(len(r), b), p.compressed.shape[:-1]) if nb else ()
        coords.append(np.vstack([*(np.asarray(x, np.int64) for x in batch_idx), r, c]))
        out_vals.append(v)
    if not coords:
        return np.zeros((nb + 2, 0), np.int64), np.zeros((0,) + p.values.shape[nb + 1 + (2 if blocked else 0):],
                                                         p.values.dtype)
    return np.concatenate(coords, axis=1), np.concatenate(out_vals, axis=0)


def value_positions(t: Any) -> Any:
    """The row-major position in the dense form of each element of a sparse tensor's values array (flattened, in
    its order): what ``gradcheck`` perturbs for a sparse input (Note [Compressed layouts] for the order)."""
    p = parts(t)
    if p.indices is not None:
        coords, dense_shape = p.indices, p.values.shape[1:]
    else:
        coords, vals = _coordinates(t)
        dense_shape = vals.shape[1:]
    n_dense = int(np.prod(dense_shape, dtype=np.int64))
    lead = np.ravel_multi_index(tuple(coords), t._data.shape[:coords.shape[0]]) if coords.shape[1] else \
        np.zeros(0, np.int64)
    return (lead[:, None] * n_dense + np.arange(n_dense)[None, :]).reshape(-1)


def compressed_to_dense(self: Any, dtype: Any = None, masked_grad: Any = None) -> Any:
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_csr_to_dense")
    coords, vals = _coordinates(self)
    out = np.zeros(self._data.shape, self._data.dtype)
    out[tuple(coords)] = vals
    return dense(out, self._device)


def _from_dense(arr: Any, layout: Any, blocksize: Any, dense_dim: int,
                index_dtype: Any = np.int64) -> tuple[Any, Any, Any]:
    """The compressed parts of the dense array ``arr`` (sizes ``[*batch, rows, cols, *dense]``)."""
    nb = arr.ndim - 2 - dense_dim
    rows, cols = arr.shape[nb], arr.shape[nb + 1]
    bh, bw = blocksize if layout in BLOCKED_LAYOUTS else (1, 1)
    dense_shape = arr.shape[nb + 2:]
    batch_shape = arr.shape[:nb]
    flat = arr.reshape((-1, rows // bh, bh, cols // bw, bw) + dense_shape)
    blocks = np.moveaxis(flat, 3, 2)              # [batches, row blocks, col blocks, bh, bw, *dense]
    nonzero = np.any(blocks.reshape(blocks.shape[:3] + (-1,)) != 0, axis=-1)
    comps, plains, vals = [], [], []
    for b in range(blocks.shape[0]):
        mask = nonzero[b] if _is_row(layout) else nonzero[b].T
        major, minor = np.nonzero(mask)
        counts = np.bincount(major, minlength=mask.shape[0])
        comps.append(np.concatenate([[0], np.cumsum(counts)]))
        plains.append(minor)
        r, c = (major, minor) if _is_row(layout) else (minor, major)
        v = blocks[b][r, c]
        vals.append(v if layout in BLOCKED_LAYOUTS else v.reshape((len(r),) + dense_shape))
    if len({len(p) for p in plains}) > 1:
        raise RuntimeError("Expect the same number of specified elements per batch.")
    comp = np.stack(comps).reshape(batch_shape + (-1,)).astype(index_dtype)
    plain = np.stack(plains).reshape(batch_shape + (-1,)).astype(index_dtype)
    values = np.stack(vals).reshape(batch_shape + vals[0].shape) if vals else np.zeros((0,), arr.dtype)
    return comp, plain, np.ascontiguousarray(values)


def _check_blocksize(layout: Any, blocksize: Any, shape: Sequence[int], nb: int, what: str) -> tuple[int, int]:
    if layout not in BLOCKED_LAYOUTS:
        if blocksize is not None:
            raise RuntimeError(f"{what}: blocksize is only used for the blocked layouts")
        return 1, 1
    if blocksize is None or len(blocksize) != 2:
        raise RuntimeError(f"to_sparse for Strided to {LAYOUT_NAMES[layout]} conversion requires blocksize to "
                           f"be specified")
    bh, bw = int(blocksize[0]), int(blocksize[1])
    if shape[nb] % bh or shape[nb + 1] % bw:
        name = LAYOUT_NAMES[layout].lower().replace("sparse", "sparse_")
        raise RuntimeError(f"dense_to_{name}: tensor sparse size ({shape[nb]},{shape[nb + 1]}) must be divisible "
                           f"by given blocksize ({bh},{bw})")
    return bh, bw


def _dense_to_compressed(self: Any, layout: Any, blocksize: Any, dense_dim: Any) -> Any:
    dd = 0 if dense_dim is None else int(dense_dim)
    name = LAYOUT_NAMES[layout].lower().replace("sparse", "sparse_")
    if not 0 <= dd <= self.dim() - 2:
        raise RuntimeError(f"dense_to_{name}: dense_dim argument must be in [0,{max(self.dim() - 2, 0)}] range, "
                           f"but {dd} is given")
    if self.dim() < 2:
        raise RuntimeError(f"to_{name}: expected at least 2 dimensions, got {self.dim()}")
    require_cpu(self._device, "to_sparse")
    nb = self.dim() - 2 - dd
    bs = _check_blocksize(layout, blocksize, tuple(self.shape), nb, "to_sparse")
    comp, plain, vals = _from_dense(np.asarray(self._data), layout, bs, dd)
    return new_compressed(layout, comp, plain, vals, tuple(self.shape), self._device)


def _from_coordinates(idx: Any, vals: Any, size: Sequence[int], layout: Any, index_dtype: Any,
                      row_major: bool = False) -> tuple[Any, Any, Any]:
    """Compressed parts of the 2-D element coordinates ``idx`` (unique) for CSR or CSC; ``row_major``: they are
    sorted row-major already (a coalesced COO tensor's, a CSR tensor's), so CSR needs no sort."""
    rows, cols = size[0], size[1]
    major, minor = (idx[0], idx[1]) if _is_row(layout) else (idx[1], idx[0])
    order = np.arange(len(major)) if row_major and _is_row(layout) else np.lexsort((minor, major))
    counts = np.bincount(major, minlength=rows if _is_row(layout) else cols)
    comp = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
    return comp, minor[order].astype(index_dtype), np.ascontiguousarray(vals[order])


def to_compressed(self: Any, layout: Any, blocksize: Any = None, dense_dim: Any = None) -> Any:
    """``self`` (strided, COO or compressed) in the compressed ``layout``."""
    src = layout_of(self)
    if not is_sparse_layout(self):
        return _dense_to_compressed(self, layout, blocksize, dense_dim)
    name = LAYOUT_NAMES[layout].lower().replace("sparse", "sparse_")
    if dense_dim is not None and dense_dim != dense_dim_of(self):
        raise RuntimeError(f"to_{name}: conversion from {LAYOUT_NAMES[src]} to {LAYOUT_NAMES[layout]} with "
                           f"dense_dim argument != self.dense_dim() is not supported")
    if src is layout:
        if layout in BLOCKED_LAYOUTS and blocksize is not None and tuple(blocksize) != _blocksize(self):
            raise RuntimeError(f"to_{name}: conversion from {LAYOUT_NAMES[src]} to {LAYOUT_NAMES[layout]} with "
                               f"blocksize changed from {_blocksize(self)} to {tuple(blocksize)} is not supported")
        return alias_compressed(self)
    if src in BLOCKED_LAYOUTS and layout not in BLOCKED_LAYOUTS:
        raise RuntimeError(f"sparse_compressed_to_{name}: expected SparseCsr or SparseCsc layout but got "
                           f"{LAYOUT_NAMES[src]}")
    if src in BLOCKED_LAYOUTS and layout in BLOCKED_LAYOUTS:
        bs = _blocksize(self)
        if blocksize is not None and tuple(blocksize) != bs:
            raise RuntimeError(f"to_{name}: conversion from {LAYOUT_NAMES[src]} to {LAYOUT_NAMES[layout]} with "
                               f"blocksize changed from {bs} to {tuple(blocksize)} is not supported")
        blocksize = bs
    if layout in BLOCKED_LAYOUTS or dense_dim_of(self) or (src is not sparse_coo and len(_batch_shape(self))) or \
            (src is sparse_coo and self.dim() - dense_dim_of(self) != 2):
        # blocks, hybrid and batched tensors: through the dense form (PyTorch's result, not its memory path)
        d = to_dense_array(self) if src is sparse_coo else compressed_to_dense(self)._data
        dd = dense_dim_of(self)
        nb = d.ndim - 2 - dd
        bs = _check_blocksize(layout, blocksize, d.shape, nb, f"to_{name}")
        comp, plain, vals = _from_dense(d, layout, bs, dd, _index_dtype(self))
        return new_compressed(layout, comp, plain, vals, d.shape, self._device)
    if src is sparse_coo:
        idx, vals = coalesced_parts(self)
    else:
        idx, vals = _coordinates(self)
    comp, plain, vals = _from_coordinates(idx, vals, self._data.shape, layout, _index_dtype(self),
                                          row_major=src is sparse_coo or _is_row(src))
    return new_compressed(layout, comp, plain, vals, self._data.shape, self._device)


def _index_dtype(t: Any) -> Any:
    p = parts(t)
    return p.compressed.dtype if p.compressed is not None else np.int64


def compressed_to_sparse_layout(self: Any, layout: Any = None, blocksize: Any = None, dense_dim: Any = None) -> Any:
    """``to_sparse(layout=...)`` of a compressed tensor: COO (the default) or another compressed layout."""
    if layout is None or layout is sparse_coo:
        if dense_dim is not None and dense_dim != dense_dim_of(self):
            raise RuntimeError("to_sparse: conversion to Sparse with dense_dim argument != self.dense_dim() is not "
                               "supported")
        coords, vals = _coordinates(self)
        return new_coo(np.ascontiguousarray(coords), vals, self._data.shape, False, self._device).coalesce()
    return to_compressed(self, layout, blocksize, dense_dim)


def to_sparse_csr(self: Any, dense_dim: Any = None) -> Any:
    return aten._to_sparse(self, layout=sparse_csr, dense_dim=dense_dim)


def to_sparse_csc(self: Any, dense_dim: Any = None) -> Any:
    return aten._to_sparse(self, layout=sparse_csc, dense_dim=dense_dim)


def to_sparse_bsr(self: Any, blocksize: Any, dense_dim: Any = None) -> Any:
    return aten._to_sparse(self, layout=sparse_bsr, blocksize=blocksize, dense_dim=dense_dim)


def to_sparse_bsc(self: Any, blocksize: Any, dense_dim: Any = None) -> Any:
    return aten._to_sparse(self, layout=sparse_bsc, blocksize=blocksize, dense_dim=dense_dim)


# -- copies and shapes ------------------------------------------------------------------------------------------------
def _like(self: Any, values: Any, compressed: Any = None, plain: Any = None, layout: Any = None,
          size: Any = None) -> Any:
    p = parts(self)
    return new_compressed(p.layout if layout is None else layout, p.compressed if compressed is None else compressed,
                          p.plain if plain is None else plain, values,
                          self._data.shape if size is None else size, self._device)


def clone_compressed(self: Any, memory_format: Any = None) -> Any:
    p = parts(self)
    return _like(self, p.values.copy(), p.compressed.copy(), p.plain.copy())


def alias_compressed(self: Any) -> Any:
    return _like(self, parts(self).values)


def zeros_like_compressed(self: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                          pin_memory: Any = None, memory_format: Any = None) -> Any:
    """No stored elements, the same layout, sizes and block size (PyTorch's ``zeros_like`` of a compressed tensor)."""
    p = parts(self)
    nb = p.compressed.ndim - 1
    vals_shape = p.compressed.shape[:-1] + (0,) + p.values.shape[nb + 1:]
    np_dtype = dtype.np if dtype is not None else p.values.dtype
    return _like(self, np.zeros(vals_shape, np_dtype), np.zeros(p.compressed.shape, p.compressed.dtype),
                 np.zeros(p.compressed.shape[:-1] + (0,), p.plain.dtype))


def new_zeros_compressed(self: Any, size: Sequence[int], dtype: Any = None, layout: Any = None, device: Any = None,
                         pin_memory: Any = None) -> Any:
    """``new_zeros`` of a CSR / CSC tensor: an empty tensor of ``size`` in its layout (leading dims are batches)."""
    p = parts(self)
    if p.layout in BLOCKED_LAYOUTS:
        raise RuntimeError(f"empty_sparse_compressed expected sparse compressed (non-block) tensor layout but got "
                           f"{LAYOUT_NAMES[p.layout]}")
    size = tuple(int(n) for n in size)
    if len(size) < 2:
        raise RuntimeError(f"Sparse {_name(p.layout)} tensors must have at least 2 dimensions, got {len(size)}")
    batch = size[:-2]
    n = size[-2] if _is_row(p.layout) else size[-1]
    np_dtype = dtype.np if dtype is not None else p.values.dtype
    return new_compressed(p.layout, np.zeros(batch + (n + 1,), p.compressed.dtype), np.zeros(batch + (0,),
                          p.plain.dtype), np.zeros(batch + (0,), np_dtype), size, self._device)


def _name(layout: Any) -> str:
    return str(layout.name[7:]).upper()


def select_compressed(self: Any, dim: int, index: int) -> Any:
    """``select`` (``t[i]``) of a compressed tensor: the COO tensor of what remains, as PyTorch gives (a blocked one
    refuses its first sparse dim, as PyTorch does)."""
    if parts(self).layout in BLOCKED_LAYOUTS and dim % self.dim() == len(_batch_shape(self)):
        raise RuntimeError("select(): no view exists for the given input, consider using torch.select_copy.")
    return aten.select_int(compressed_to_sparse_layout(self), dim, index)


def empty_like_compressed(self: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                          pin_memory: Any = None, memory_format: Any = None) -> Any:
    """The same pattern with zero values (PyTorch's ``empty_like`` keeps the indices)."""
    p = parts(self)
    np_dtype = dtype.np if dtype is not None else p.values.dtype
    return _like(self, np.zeros(p.values.shape, np_dtype), p.compressed.copy(), p.plain.copy())


def to_copy_compressed(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
                       non_blocking: bool = False, memory_format: Any = None) -> Any:
    p = parts(self)
    if layout is not None and layout is not p.layout:
        raise RuntimeError(f"to(options) doesn't support converting to a different layout, but got self.layout being "
                           f"{LAYOUT_NAMES[p.layout]} and options.layout set as {LAYOUT_NAMES.get(layout, layout)}")
    if device is not None:
        require_cpu(device, "to")
    vals = p.values.astype(dtype.np) if dtype is not None else p.values.copy()
    return _like(self, vals, p.compressed.copy(), p.plain.copy())


_TRANSPOSED = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc, sparse_bsc: sparse_bsr}


def transpose_compressed(self: Any, dim0: int, dim1: int) -> Any:
    """Swapping the two sparse dims: the same arrays read in the transposed layout (CSR <-> CSC, BSR <-> BSC, each
    block transposed)."""
    n = self.dim()
    d0, d1 = sorted((dim0 % n, dim1 % n))
    nb = len(_batch_shape(self))
    if d0 == d1:
        return alias_compressed(self)
    if (d0, d1) != (nb, nb + 1):
        raise RuntimeError(f"transpose(): only the two sparse dimensions of a sparse compressed tensor can be "
                           f"swapped (dims {nb} and {nb + 1}), got {dim0} and {dim1}")
    p = parts(self)
    size = list(self._data.shape)
    size[nb], size[nb + 1] = size[nb + 1], size[nb]
    vals = p.values
    if p.layout in BLOCKED_LAYOUTS:
        vals = np.ascontiguousarray(np.swapaxes(vals, nb + 1, nb + 2))
    return _like(self, vals, layout=_TRANSPOSED[p.layout], size=tuple(size))


def t_compressed(self: Any) -> Any:
    return transpose_compressed(self, 0, 1)
