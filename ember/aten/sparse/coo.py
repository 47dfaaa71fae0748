"""SparseCPU kernels of the COO layout (mirrors ``native/sparse/SparseTensor.cpp``, ``SparseTensorMath.cpp``):
making COO tensors, reading their parts, coalescing, converting to and from strided tensors, and the shape
operations (``permute``, ``unsqueeze``, ``index_select``, ``narrow_copy``, ``cat``, ``sum``).

Like the composites, each kernel takes the operator's arguments (tensors, not arrays) in schema order."""
from __future__ import annotations

from typing import Any, Sequence

import warnings

import numpy as np

from ember._generated import aten
from ember.aten.sparse.compressed import to_compressed
from ember.aten.math_bits import values_of
from ember.c10 import dtype as dt
from ember.c10.device import CPU
from ember.aten.sparse.tensor import (LAYOUT_NAMES, _shell, coalesced_parts, dense, dense_dim_of,
                                      is_sparse_layout, layout_of, linear_index, new_coo, nnz_of, parts, require_cpu,
                                      sparse_dim_of, to_dense_array)
from ember.c10.memory_format import sparse_coo

__all__ = ["sparse_coo_tensor_with_dims_and_tensors", "sparse_coo_tensor_size", "sparse_coo_tensor_unsafe",
           "sparse_coo_tensor_indices", "sparse_coo_tensor_indices_size", "validate_sparse_coo_tensor_args",
           "sparse_dim_sparse", "sparse_dim_strided", "dense_dim_sparse", "dense_dim_strided", "nnz_sparse",
           "is_coalesced_sparse", "is_coalesced_default", "coalesced_sparse_", "indices_sparse", "values_sparse",
           "indices_default", "values_default", "coalesce", "coalesce_sparse_cpu", "sparse_to_dense", "to_dense",
           "dense_to_sparse", "sparse_coo_to_sparse", "to_sparse", "dense_to_sparse_layout",
           "sparse_coo_to_sparse_layout", "to_sparse_sparse_dim", "clone_sparse", "alias_sparse", "to_copy_sparse",
           "permute_sparse_coo", "unsqueeze_sparse", "index_select_sparse_cpu", "narrow_copy_sparse", "cat_sparse",
           "stack_sparse", "transpose_sparse", "t_sparse", "sum_sparse", "zero_sparse_", "copy_sparse_",
           "empty_like_sparse", "zeros_like_sparse", "new_zeros_sparse", "select_sparse",
           "check_sparse_coo_invariants", "sparse_size_checked"]

_WARNED_INVARIANTS = [False]


def _warn_invariants_once() -> None:
    """PyTorch warns once per process that invariant checks are off when a constructor is not told either way."""
    if not _WARNED_INVARIANTS[0]:
        _WARNED_INVARIANTS[0] = True
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur "
                      "when operating on a sparse tensor which violates the invariants, but checks incur performance "
                      "overhead. To silence this warning, explicitly opt in or out. See "
                      "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.", UserWarning,
                      stacklevel=4)


class InvariantChecks:
    """``torch.sparse.check_sparse_tensor_invariants``'s global flag (off, as in PyTorch) and whether it was ever
    set (PyTorch warns only while nobody chose)."""
    enabled = False
    chosen = False


def should_check(check_invariants: Any) -> bool:
    if check_invariants is None:
        if not InvariantChecks.chosen:
            _warn_invariants_once()
        return InvariantChecks.enabled
    return bool(check_invariants)


def _expect_layout(t: Any, what: str) -> None:
    if layout_of(t) is not sparse_coo:
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {LAYOUT_NAMES[layout_of(t)]}")


def sparse_size_checked(size: Sequence[int]) -> tuple[int, ...]:
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise RuntimeError("numel: integer multiplication overflow")
    return size


def check_sparse_coo_invariants(indices: Any, values: Any, size: Sequence[int], is_coalesced: Any) -> None:
    """``_validate_sparse_coo_tensor_args``: indices within ``size``, non-negative, and coalesced when said to be."""
    sd = indices.shape[0]
    if indices.shape[1]:
        low, high = indices.min(axis=1), indices.max(axis=1)
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {int(low[d])} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {int(high[d])}")
    if is_coalesced and indices.shape[1] > 1:
        lin = linear_index(indices, size[:sd])
        if not bool(np.all(lin[1:] > lin[:-1])):
            raise RuntimeError("cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor")


def _check_shapes(indices: Any, values: Any, size: Sequence[int]) -> None:
    sd, dd = (indices.shape[0] if indices.ndim else 0), max(values.ndim - 1, 0)
    if len(size) != sd + dd:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {dd}")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    nnz_v = values.shape[0] if values.ndim else 1
    if indices.shape[1] != nnz_v:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {indices.shape[1]}, "
                           f"nnz from values: {nnz_v}")
    if values.ndim and tuple(values.shape[1:]) != tuple(size[sd:]):
        raise RuntimeError(f"values has incorrect size, expected {[values.shape[0], *size[sd:]]}, got "
                           f"{list(values.shape)}")


# -- construction -------------------------------------------------------------------------------------------------
def sparse_coo_tensor_with_dims_and_tensors(sparse_dim: int, dense_dim: int, size: Sequence[int], indices: Any,
                                            values: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                                            pin_memory: Any = False, is_coalesced: Any = None) -> Any:
    """A COO tensor over ``indices`` and ``values`` (their memory, not a copy, as in PyTorch)."""
    dev = device if device is not None else values._device
    require_cpu(dev, "sparse_coo_tensor")
    size = sparse_size_checked(size)
    idx, vals = indices._data, values._data
    if idx.dtype != np.int64:
        raise RuntimeError("indices must be an int64 tensor")
    if dtype is not None and dtype.np != vals.dtype:
        vals = vals.astype(dtype.np)
    if vals.ndim == 0:
        vals = vals.reshape(1)
    _check_shapes(idx, vals, size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but "
                           f"got {len(size)}")
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] <= 1
    return new_coo(idx, vals, size, coalesced, dev)


def sparse_coo_tensor_unsafe(indices: Any, values: Any, size: Sequence[int], dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: Any = None, is_coalesced: Any = None) -> Any:
    return aten._sparse_coo_tensor_with_dims_and_tensors(indices.shape[0], max(values.dim() - 1, 0), tuple(size),
                                                         indices, values, dtype=dtype, layout=layout, device=device,
                                                         is_coalesced=is_coalesced)


def validate_sparse_coo_tensor_args(indices: Any, values: Any, size: Sequence[int], is_coalesced: Any = None,
                                    check_pinning: Any = None) -> None:
    size = sparse_size_checked(size)
    _check_shapes(indices._data, values._data.reshape(1) if values.dim() == 0 else values._data, size)
    check_sparse_coo_invariants(indices._data, values._data, size, is_coalesced)


def _inferred_size(indices: Any, values: Any) -> list[int]:
    idx = indices._data
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sparse_sizes = (idx.max(axis=1) + 1).tolist() if idx.shape[1] else [0] * idx.shape[0]
    return [int(s) for s in sparse_sizes] + list(values.shape[1:])


def sparse_coo_tensor_indices(indices: Any, values: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                              pin_memory: Any = None, is_coalesced: Any = None) -> Any:
    return sparse_coo_tensor_indices_size(indices, values, _inferred_size(indices, values), dtype, layout, device,
                                          pin_memory, is_coalesced)


def sparse_coo_tensor_indices_size(indices: Any, values: Any, size: Sequence[int], dtype: Any = None,
                                   layout: Any = None, device: Any = None, pin_memory: Any = None,
                                   is_coalesced: Any = None, check_invariants: Any = None) -> Any:
    if should_check(check_invariants):
        validate_sparse_coo_tensor_args(indices, values, size, is_coalesced)
    return sparse_coo_tensor_unsafe(indices, values, size, dtype, layout, device, pin_memory, is_coalesced)


def sparse_coo_tensor_size(size: Sequence[int], dtype: Any = None, layout: Any = None, device: Any = None,
                           pin_memory: Any = False) -> Any:
    """An empty (nnz 0) COO tensor of ``size``, every dim sparse."""
    size = sparse_size_checked(size)
    np_dtype = (dtype if dtype is not None else dt.get_default_dtype()).np
    dev = device if device is not None else CPU
    require_cpu(dev, "sparse_coo_tensor")
    return new_coo(np.zeros((len(size), 0), np.int64), np.zeros((0,), np_dtype), size, True, dev)


# -- parts ----------------------------------------------------------------------------------------------------------
def sparse_dim_sparse(self: Any) -> int:
    return sparse_dim_of(self)


def sparse_dim_strided(self: Any) -> int:
    return 0


def dense_dim_sparse(self: Any) -> int:
    return dense_dim_of(self)


def dense_dim_strided(self: Any) -> int:
    return int(self.dim())


def nnz_sparse(self: Any) -> int:
    return nnz_of(self)


def is_coalesced_sparse(self: Any) -> bool:
    return parts(self).coalesced


def is_coalesced_default(self: Any) -> bool:
    _expect_layout(self, "is_coalesced")
    return False


def coalesced_sparse_(self: Any, coalesced: bool) -> Any:
    parts(self).coalesced = bool(coalesced)
    return self


def indices_sparse(self: Any) -> Any:
    """``_indices()``: the indices as they are held (an alias)."""
    return dense(parts(self).indices, self._device)


def values_sparse(self: Any) -> Any:
    """``_values()``: the values as they are held (an alias)."""
    return dense(parts(self).values, self._device)


def indices_default(self: Any) -> Any:
    _expect_layout(self, "indices")
    if not parts(self).coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return indices_sparse(self)


def values_default(self: Any) -> Any:
    _expect_layout(self, "values")
    if not parts(self).coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return values_sparse(self)


def coalesce(self: Any) -> Any:
    """The tensor itself when coalesced, else ``_coalesce``: sorted unique indices, repeated ones summed."""
    _expect_layout(self, "coalesce")
    if parts(self).coalesced:
        return self
    return aten._coalesce(self)


def coalesce_sparse_cpu(self: Any) -> Any:
    idx, vals = coalesced_parts(self)
    if idx is parts(self).indices:
        idx, vals = idx.copy(), vals.copy()
    return new_coo(idx, vals, self._data.shape, True, self._device)


# -- conversions ------------------------------------------------------------------------------------------------------
def sparse_to_dense(self: Any, dtype: Any = None, masked_grad: Any = None) -> Any:
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_to_dense")
    return dense(to_dense_array(self), self._device)


def to_dense(self: Any, dtype: Any = None, masked_grad: Any = None) -> Any:
    """``Tensor.to_dense``: a strided tensor is its own dense form."""
    if not is_sparse_layout(self):
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        return self
    return aten._to_dense(self, dtype, masked_grad)


def _dense_to_coo(arr: Any, sparse_dim: int, device: Any) -> Any:
    if arr.ndim == 0:       # a 0-dim tensor: one element at no coordinates
        return new_coo(np.zeros((0, 1), np.int64), arr.reshape(1).copy(), (), True, device)
    lead = arr.shape[:sparse_dim]
    if arr.ndim > sparse_dim:
        nonzero = np.any(arr.reshape(lead + (-1,)) != 0, axis=-1)
    else:
        nonzero = arr != 0
    idx = np.array(np.nonzero(nonzero), dtype=np.int64).reshape(sparse_dim, -1)
    vals = np.ascontiguousarray(arr[tuple(idx)]) if sparse_dim else arr.reshape((1,) + arr.shape).copy()
    return new_coo(idx, vals, arr.shape, True, device)


def dense_to_sparse(self: Any, sparse_dim: Any = None) -> Any:
    """A strided tensor as COO over its first ``sparse_dim`` dims (all by default), keeping the rows with any
    non-zero; coalesced."""
    n = self.dim()
    sd = n if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= n:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{n}] range, but {sd} is given")
    if sd == 0 and n > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    require_cpu(self._device, "to_sparse")
    return _dense_to_coo(np.asarray(values_of(self)._data), sd, self._device)


def sparse_coo_to_sparse(self: Any, sparse_dim: Any = None) -> Any:
    if sparse_dim is not None and int(sparse_dim) != sparse_dim_of(self):
        raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self.sparse_dim() "
                           "is not supported")
    return alias_sparse(self)


def to_sparse_sparse_dim(self: Any, sparse_dim: int) -> Any:
    return aten._to_sparse_sparse_dim(self, sparse_dim)


def to_sparse(self: Any, layout: Any = None, blocksize: Any = None, dense_dim: Any = None) -> Any:
    return aten._to_sparse(self, layout=layout, blocksize=blocksize, dense_dim=dense_dim)


def dense_to_sparse_layout(self: Any, layout: Any = None, blocksize: Any = None, dense_dim: Any = None) -> Any:
    """``to_sparse(layout=...)`` of a strided tensor."""
    if layout is None or layout is sparse_coo:
        if blocksize is not None:
            raise RuntimeError("to_sparse for Strided to Sparse conversion does not use specified blocksize")
        return dense_to_sparse(self, self.dim() - (dense_dim or 0))
    return to_compressed(self, layout, blocksize, dense_dim)


def sparse_coo_to_sparse_layout(self: Any, layout: Any = None, blocksize: Any = None, dense_dim: Any = None) -> Any:
    if layout is None or layout is sparse_coo:
        if dense_dim is not None and dense_dim != dense_dim_of(self):
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with dense_dim argument != "
                               "self.dense_dim() is not supported")
        return alias_sparse(self)
    return to_compressed(self, layout, blocksize, dense_dim)


# -- copies and shapes ---------------------------------------------------------------------------------------------
_FORMAT_NAMES = {"contiguous_format": "Contiguous", "channels_last": "ChannelsLast",
                 "channels_last_3d": "ChannelsLast3d"}     # c10's MemoryFormat names, as PyTorch's errors print them


def clone_sparse(self: Any, memory_format: Any = None) -> Any:
    p = parts(self)
    if memory_format is not None and getattr(memory_format, "name", "") != "preserve_format":
        raise RuntimeError(f"unsupported memory format option {_FORMAT_NAMES.get(memory_format.name, '')}")
    return new_coo(p.indices.copy(), p.values.copy(), self._data.shape, p.coalesced, self._device)


def alias_sparse(self: Any) -> Any:
    """``detach`` / ``alias``: a new tensor over the same indices and values."""
    p = parts(self)
    return new_coo(p.indices, p.values, self._data.shape, p.coalesced, self._device)


def to_copy_sparse(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
                   non_blocking: bool = False, memory_format: Any = None) -> Any:
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"to(options) doesn't support converting to a different layout, but got "
                           f"self.layout being {LAYOUT_NAMES[sparse_coo]} and options.layout set as "
                           f"{LAYOUT_NAMES.get(layout, layout)}")
    if device is not None:
        require_cpu(device, "to")
    p = parts(self)
    vals = p.values.astype(dtype.np) if dtype is not None else p.values.copy()
    return new_coo(p.indices.copy(), vals, self._data.shape, p.coalesced, self._device)


def zero_sparse_(self: Any) -> Any:
    """``zero_``: no stored elements left (nnz 0), as PyTorch's ``sparse_resize_and_clear_``."""
    p = parts(self)
    p.indices = np.zeros((p.indices.shape[0], 0), np.int64)
    p.values = np.zeros((0,) + p.values.shape[1:], p.values.dtype)
    p.coalesced = True
    self._bump_version()
    return self


def copy_sparse_(self: Any, src: Any, non_blocking: bool = False) -> Any:
    if not is_sparse_layout(src) or not is_sparse_layout(self):
        raise RuntimeError("copy_() between dense and sparse Tensors is not implemented! Found self type = "
                           f"{_type_name(self)} and src type = {_type_name(src)}")
    sp, dp = parts(src), parts(self)
    dp.indices, dp.values, dp.coalesced = sp.indices.copy(), sp.values.astype(self._data.dtype), sp.coalesced
    self._data = _shell(src._data.shape, self._data.dtype)
    self._bump_version()
    return self


def _type_name(t: Any) -> str:
    kind = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "bool": "Bool",
            "float16": "Half", "bfloat16": "BFloat16"}.get(str(t._data.dtype), str(t._data.dtype))
    return f"{'Sparse' if is_sparse_layout(t) else ''}CPU{kind}Type"


def empty_like_sparse(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
                      memory_format: Any = None) -> Any:
    p = parts(self)
    np_dtype = dtype.np if dtype is not None else p.values.dtype
    return new_coo(np.zeros((p.indices.shape[0], 0), np.int64), np.zeros((0,) + p.values.shape[1:], np_dtype),
                   self._data.shape, True, self._device)


zeros_like_sparse = empty_like_sparse


def new_zeros_sparse(self: Any, size: Sequence[int], dtype: Any = None, layout: Any = None, device: Any = None,
                     pin_memory: Any = None) -> Any:
    """``new_zeros`` of a COO tensor: an empty COO tensor of ``size`` (every dim sparse), as PyTorch's."""
    return sparse_coo_tensor_size(size, dtype=dtype if dtype is not None else self.dtype,
                                  device=device if device is not None else self._device)


def select_sparse(self: Any, dim: int, index: int) -> Any:
    """``select`` (``t[i]``): the stored elements with that index along a sparse dim, without it; or each value's
    slice along a dense dim."""
    n = self.dim()
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    dim %= n
    size = self._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension "
                         f"{dim}")
    index %= size
    p = parts(self)
    sd = p.indices.shape[0]
    out_size = self._data.shape[:dim] + self._data.shape[dim + 1:]
    if dim >= sd:
        vals = np.ascontiguousarray(np.take(p.values, index, axis=dim - sd + 1))
        return new_coo(p.indices.copy(), vals, out_size, p.coalesced, self._device)
    keep = p.indices[dim] == index
    idx = np.ascontiguousarray(np.delete(p.indices[:, keep], dim, axis=0))
    return new_coo(idx, np.ascontiguousarray(p.values[keep]), out_size, p.coalesced, self._device)


def permute_sparse_coo(self: Any, dims: Sequence[int]) -> Any:
    """Permutes the sparse dims among themselves and the dense dims among themselves (PyTorch refuses mixing)."""
    n = self.dim()
    if len(dims) != n:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = [d % n if n else d for d in dims]
    if sorted(dims) != list(range(n)):
        raise RuntimeError("permute(sparse_coo): repeated dim in dims")
    p = parts(self)
    sd = p.indices.shape[0]
    if any(d < sd for d in dims[sd:]):
        raise RuntimeError("permute(sparse_coo): transpositions between sparse and dense dimensions are not "
                           "allowed. Only transpositions within sparse and dense dimensions are supported.")
    idx = np.ascontiguousarray(p.indices[dims[:sd]])
    vals = p.values
    dense_order = [0] + [d - sd + 1 for d in dims[sd:]]
    if dense_order != sorted(dense_order):
        vals = np.ascontiguousarray(vals.transpose(dense_order))
    size = tuple(self._data.shape[d] for d in dims)
    keeps_order = dims[:sd] == list(range(sd))
    return new_coo(idx, vals, size, p.coalesced and keeps_order, self._device)


def transpose_sparse(self: Any, dim0: int, dim1: int) -> Any:
    n = self.dim()
    dims = list(range(n))
    if n:
        d0, d1 = dim0 % n, dim1 % n
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute_sparse_coo(self, dims)


def t_sparse(self: Any) -> Any:
    n = self.dim()
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {n} sparse and "
                           f"{dense_dim_of(self)} dense dimensions")
    return transpose_sparse(self, 0, 1) if n == 2 else alias_sparse(self)


def unsqueeze_sparse(self: Any, dim: int) -> Any:
    n = self.dim()
    if not -n - 1 <= dim <= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n - 1}, {n}], but got {dim})")
    dim = dim + n + 1 if dim < 0 else dim
    p = parts(self)
    sd = p.indices.shape[0]
    size = self._data.shape[:dim] + (1,) + self._data.shape[dim:]
    if dim <= sd:
        idx = np.insert(p.indices, dim, 0, axis=0)
        return new_coo(idx, p.values, size, p.coalesced, self._device)
    vals = np.expand_dims(p.values, dim - sd + 1)
    return new_coo(p.indices, vals, size, p.coalesced, self._device)


def index_select_sparse_cpu(self: Any, dim: int, index: Any) -> Any:
    n = self.dim()
    dim = dim % n if n else 0
    p = parts(self)
    sd = p.indices.shape[0]
    ix = np.asarray(index._data).reshape(-1).astype(np.int64)
    size = list(self._data.shape)
    if ix.size and (ix.min() < -size[dim] or ix.max() >= size[dim]):
        bad = int(ix[(ix < -size[dim]) | (ix >= size[dim])][0])
        raise IndexError(f"index_select(): index contains {bad} that is out of range for tensor of size "
                         f"{list(size)} at dimension {dim}")
    ix = np.where(ix < 0, ix + size[dim], ix)
    size[dim] = ix.size
    if dim >= sd:
        vals = np.ascontiguousarray(np.take(p.values, ix, axis=dim - sd + 1))
        return new_coo(p.indices.copy(), vals, size, p.coalesced, self._device)
    # every (stored element, position in the index) pair whose coordinate matches, in the stored order
    match = p.indices[dim][:, None] == ix[None, :]
    rows, cols = np.nonzero(match)
    idx = p.indices[:, rows].copy()
    idx[dim] = cols
    return new_coo(idx, np.ascontiguousarray(p.values[rows]), size, False, self._device)


def narrow_copy_sparse(self: Any, dim: int, start: int, length: int) -> Any:
    n = self.dim()
    dim = dim % n
    size = list(self._data.shape)
    start = start + size[dim] if start < 0 else start
    if not (0 <= start <= size[dim] and 0 <= length <= size[dim] - start):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size[dim]}).")
    p = parts(self)
    sd = p.indices.shape[0]
    size[dim] = length
    if dim >= sd:
        vals = np.take(p.values, np.arange(start, start + length), axis=dim - sd + 1)
        return new_coo(p.indices.copy(), vals, size, p.coalesced, self._device)
    keep = (p.indices[dim] >= start) & (p.indices[dim] < start + length)
    idx = p.indices[:, keep].copy()
    idx[dim] -= start
    return new_coo(idx, p.values[keep].copy(), size, p.coalesced, self._device)


def cat_sparse(tensors: Sequence[Any], dim: int = 0) -> Any:
    ts = list(tensors)
    for i, t in enumerate(ts):
        if layout_of(t) is not sparse_coo:
            raise RuntimeError(f"Expected all tensors to be sparse COO, but tensor {i} has the layout "
                               f"{LAYOUT_NAMES[layout_of(t)]}")
    first = ts[0]
    n = first.dim()
    dim = dim % n
    sd, dd = sparse_dim_of(first), dense_dim_of(first)
    for i, t in enumerate(ts):
        if sparse_dim_of(t) != sd or dense_dim_of(t) != dd:
            raise RuntimeError(f"concatenating sparse tensors, but they don't all have the same number of sparse "
                               f"and dense dimensions: tensor 0 has {sd} sparse and {dd} dense, tensor {i} has "
                               f"{sparse_dim_of(t)} sparse and {dense_dim_of(t)} dense")
        for d in range(n):
            if d != dim and t._data.shape[d] != first._data.shape[d]:
                raise RuntimeError(f"All tensors must have the same shape: {list(first.shape)} along all "
                                   f"dimensions except {dim}, but tensor at position {i} has size {list(t.shape)}")
    size = list(first._data.shape)
    size[dim] = sum(t._data.shape[dim] for t in ts)
    dtype = np.result_type(*[parts(t).values.dtype for t in ts])
    if dim < sd:
        idxs, offset = [], 0
        for t in ts:
            idx = parts(t).indices.copy()
            idx[dim] += offset
            offset += t._data.shape[dim]
            idxs.append(idx)
        return new_coo(np.concatenate(idxs, axis=1),
                       np.concatenate([parts(t).values.astype(dtype) for t in ts], axis=0), size, False,
                       first._device)
    # a dense dim: each tensor's values padded with zeros into its slice of the wider values
    vdim = dim - sd + 1
    idxs, vals, offset = [], [], 0
    for t in ts:
        p = parts(t)
        v = np.zeros((p.values.shape[0],) + tuple(size[sd:]), dtype)
        sl = [slice(None)] * v.ndim
        sl[vdim] = slice(offset, offset + t._data.shape[dim])
        v[tuple(sl)] = p.values
        offset += t._data.shape[dim]
        idxs.append(p.indices)
        vals.append(v)
    return new_coo(np.concatenate(idxs, axis=1), np.concatenate(vals, axis=0), size, False, first._device)


def stack_sparse(tensors: Sequence[Any], dim: int = 0) -> Any:
    ts = list(tensors)
    n = ts[0].dim() + 1
    dim = dim % n
    return cat_sparse([unsqueeze_sparse(t, dim) for t in ts], dim)


def sum_sparse(self: Any, dtype: Any = None) -> Any:
    """The sum of every element: of the stored values, in any sparse layout."""
    vals = parts(self).values
    if dtype is not None:
        total = vals.sum(dtype=dtype.np)
    else:
        total = vals.sum(dtype=np.int64 if vals.dtype.kind in "biu" else vals.dtype)
    return dense(np.asarray(total), self._device)
