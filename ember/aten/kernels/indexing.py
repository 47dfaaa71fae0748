"""Indexing and shape-building kernels (``aten/src/ATen/native/TensorAdvancedIndexing.cpp``, ``TensorShape.cpp``)."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import builtins

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import meta_shape, result_np_dtype, shape_str, type_name, wrap_dim
from ember.c10.exceptions import warn_user
from ember.c10.tensor_impl import contiguous_strides


def _check_index_dtype(idx: Any, name: Any = 'index') -> Any:
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")


# ------------------------------------------------------------------------------ advanced indexing
def _expand_bool_indices(xp: Any, self: Array, indices: Array) -> Any:
    """Boolean masks become the integer indices of their True entries (one per masked dim)."""
    out: list[Any] = []
    dim = 0
    for idx in indices:
        if idx is None:
            out.append(None)
            dim += 1
            continue
        if idx.dtype == np.bool_ or idx.dtype == np.uint8:
            if idx.ndim == 0:  # the indexing frontend put a dimension of size 1 here for it (x[True] is x[None])
                idx = idx.reshape(1)
            for j, (ms, ss) in enumerate(zip(idx.shape, self.shape[dim:dim + idx.ndim])):
                if ms != ss:
                    raise IndexError(f"The shape of the mask {shape_str(idx.shape)} at index {j} does not match "
                                     f"the shape of the indexed tensor {shape_str(self.shape)} at index {dim + j}")
            nz = xp.nonzero(idx)
            out.extend(nz)
            dim += idx.ndim
        else:
            if idx.dtype.kind not in "iu":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(idx)
            dim += 1
    return out


def _normalize(xp: Any, self: Array, indices: Array) -> Any:
    indices = _expand_bool_indices(xp, self, indices)
    if len(indices) > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {len(indices)})")
    return tuple(_FULL if idx is None else (idx if idx.dtype == np.int64 else idx.astype(np.int64))
                 for idx in indices)


_FULL = slice(None)


def _index_error(e: Any, self: Array, key: Array) -> Any:
    """NumPy's out-of-bounds message in PyTorch's words (NumPy already checked the bounds)."""
    msg = str(e)
    if "out of bounds" in msg:
        for d, idx in enumerate(key):
            if isinstance(idx, slice) or not idx.size:
                continue
            n = self.shape[d]
            hi, lo = int(idx.max()), int(idx.min())
            if hi >= n or lo < -n:
                raise IndexError(f"index {hi if hi >= n else lo} is out of bounds for dimension {d} with size "
                                 f"{n}") from None
    raise IndexError(msg.replace("arrays", "tensors")) from None


def index(xp: Any, self: Array, indices: Array) -> Any:
    key = _normalize(xp, self, indices)
    try:
        return self[key]  # advanced indexing copies
    except IndexError as e:
        _index_error(e, self, key)
    except ValueError:
        shapes = [k.shape for k in key if not isinstance(k, slice)]
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " +
                         ", ".join(shape_str(s) for s in shapes)) from None


def index_put(xp: Any, self: Array, indices: Array, values: Array, accumulate: Any = False) -> Any:
    if values.dtype != self.dtype:
        # PyTorch's one exception: a single boolean mask and one value, which it runs as masked_fill_
        defined = [i for i in indices if i is not None]
        masked_fill = (not accumulate and values.size == 1 and len(defined) == 1
                       and defined[0].dtype == np.bool_)
        if not masked_fill:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{type_name(self.dtype)} for the destination and {type_name(values.dtype)} for the "
                               "source.")
    key = _normalize(xp, self, indices)
    out = self.copy()
    try:
        target_shape = out[key].shape
    except IndexError as e:
        _index_error(e, self, key)
    try:
        vals = xp.broadcast_to(values.astype(self.dtype, copy=False), target_shape)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {shape_str(values.shape)} cannot be broadcast "
                           f"to indexing result of shape {shape_str(out[key].shape)}") from None
    if accumulate:
        xp.add.at(out, key, vals)
    else:
        out[key] = vals
    return out


def index_select(xp: Any, self: Array, dim: Any, index: Array) -> Any:
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    _check_index_dtype(index, "index_select")
    d = wrap_dim(dim, self.ndim) if self.ndim else 0
    n = self.shape[d] if self.ndim else 1
    if index.size and (int(index.min()) < -n or int(index.max()) >= n):
        raise IndexError("index out of range in self")
    if self.ndim == 0:
        return self.reshape(1)[index.reshape(-1)].reshape(index.shape)
    return xp.take(self, index.reshape(-1), axis=d)


def _check_scatter_gather_index(index: Array, d: int, n: int) -> None:
    """PyTorch's check in its gather / scatter kernels: every index in [0, n) -- a negative one is out of bounds too
    (NumPy would count it from the end: a silent wrong answer) -- naming the first bad one in order."""
    bad = _first_outside(index, 0, n)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")


def _first_outside(index: Array, low: int, n: int) -> int | None:
    """The first index in order outside [low, n), or None."""
    if index.size and (int(index.min()) < low or int(index.max()) >= n):
        flat = index.reshape(-1)
        return int(flat[(flat < low) | (flat >= n)][0])
    return None


def gather(xp: Any, self: Array, dim: Any, index: Array, sparse_grad: Any = False) -> Any:
    if index.dtype != np.int64:
        raise RuntimeError("gather(): Expected dtype int64 for index")
    d = wrap_dim(dim, self.ndim) if self.ndim else 0
    if index.ndim != self.ndim and not (self.ndim == 0 and index.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i in range(index.ndim):
        if i != d and index.shape[i] > self.shape[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {shape_str(index.shape)} to "
                               f"be smaller than self {shape_str(self.shape)} apart from dimension {d}")
    n = self.shape[d] if self.ndim else 1
    _check_scatter_gather_index(index, d, n)
    if self.ndim == 0:
        return self.reshape(1)[index].reshape(index.shape)
    src = self[tuple(slice(0, s) if i != d else slice(None) for i, s in enumerate(index.shape))]
    return xp.take_along_axis(src, index, axis=d)


def _scatter_core(xp: Any, self: Array, dim: Any, index: Array, src: Array, reduce: Any = None,
                  include_self: Any = True) -> Any:
    if index.dtype != np.int64:
        raise RuntimeError("scatter(): Expected dtype int64 for index")
    d = wrap_dim(dim, self.ndim) if self.ndim else 0
    out = self.copy()
    if index.size == 0:
        return out
    n = self.shape[d] if self.ndim else 1
    _check_scatter_gather_index(index, d, n)
    grids = list(xp.ix_(*(xp.arange(n) for n in index.shape)))   # np.indices(sparse=True), which CuPy lacks
    grids[d] = index
    key = tuple(grids)
    if isinstance(src, (int, float, bool, complex)):
        vals = xp.full(index.shape, src, self.dtype)
    else:
        vals = src[tuple(slice(0, s) for s in index.shape)].astype(self.dtype, copy=False)
    if reduce is None:
        out[key] = vals
    elif reduce in ("add", "sum"):
        if not include_self:
            out[key] = 0
        if d == out.ndim - 1 and index.shape[:-1] == out.shape[:-1] \
                and compiled.usable(xp, out, dtypes=(np.float32, np.float64)):
            # along the last dim (max pooling's backward): a compiled loop instead of ufunc.at
            loops.indexing.scatter_add_rows(out.reshape(-1, out.shape[-1]), index.reshape(-1, index.shape[-1]),
                                      vals.reshape(-1, index.shape[-1]))
        else:
            xp.add.at(out, key, vals)
    elif reduce in ("multiply", "prod"):
        if not include_self:
            out[key] = 1
        _multiply_at(xp, out, key, vals)
    elif reduce == "amax":
        if not include_self:
            out[key] = vals
        xp.maximum.at(out, key, vals)
    elif reduce == "amin":
        if not include_self:
            out[key] = vals
        xp.minimum.at(out, key, vals)
    elif reduce == "mean":
        cnt = xp.zeros(out.shape, np.int64) + (1 if include_self else 0)
        if not include_self:
            out[key] = 0
        acc = out.astype(np.float64)
        xp.add.at(acc, key, vals)
        xp.add.at(cnt, key, 1)
        res = acc / xp.maximum(cnt, 1)
        out = (xp.floor(res) if out.dtype.kind in "iu" else res).astype(out.dtype)
    else:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    return out


def scatter(xp: Any, self: Array, dim: Any, index: Array, src: Array) -> Any:
    return _scatter_core(xp, self, dim, index, src)


def scatter_value(xp: Any, self: Array, dim: Any, index: Array, value: Array) -> Any:
    return _scatter_core(xp, self, dim, index, value)


def scatter_reduce_legacy(xp: Any, self: Array, dim: Any, index: Array, src: Array, reduce: Any) -> Any:
    return _scatter_core(xp, self, dim, index, src, reduce)


def scatter_add(xp: Any, self: Array, dim: Any, index: Array, src: Array) -> Any:
    return _scatter_core(xp, self, dim, index, src, "sum")


def scatter_reduce(xp: Any, self: Array, dim: Any, index: Array, src: Array, reduce: Any,
                   include_self: Any = True) -> Any:
    return _scatter_core(xp, self, dim, index, src, reduce, include_self)


def _multiply_at(xp: Any, out: Array, key: Any, vals: Array) -> None:
    """``multiply.at(out, key, vals)``: the product over repeated indices in their order, which CuPy's ufuncs lack
    (its ``at`` takes add / maximum / minimum). There, in rounds: round r multiplies every target by its r-th
    value, each target once, so a fancy-indexed product is exact and the order per target is kept."""
    if xp is np:
        np.multiply.at(out, key, vals)
        return
    flat = out.reshape(-1)                               # ``out`` is the kernel's own contiguous copy
    lin = xp.zeros(vals.shape, np.int64)
    for k, st in zip(key, contiguous_strides(out.shape)):
        lin = lin + k * st
    lin, v = lin.reshape(-1), vals.reshape(-1)
    order = xp.argsort(lin, kind="stable")
    lin, v = lin[order], v[order]
    rank = xp.arange(lin.size) - xp.searchsorted(lin, lin)   # the value's place among its target's values
    for r in range(int(rank.max()) + 1 if lin.size else 0):
        sel = rank == r
        flat[lin[sel]] *= v[sel]


def index_reduce(xp: Any, self: Array, dim: Any, index: Array, source: Array, reduce: Any,
                 include_self: Any = True) -> Any:
    """``self`` with ``source``'s slices along ``dim`` folded into the slices ``index`` names by ``reduce`` (prod,
    mean, amax, amin): scatter_reduce with the index spread over each slice."""
    _warn_index_reduce_beta()
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = wrap_dim(dim, self.ndim) if self.ndim else 0
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{type_name(index.dtype)} and size: {shape_str(index.shape)}")
    if index.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {type_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({type_name(self.dtype)}) and source ({type_name(source.dtype)}) "
                           "must have the same scalar type")
    n_src = source.shape[d] if source.ndim else 1
    if index.size != n_src:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.size}) should be equal to source.size(dim): "
                           f"({n_src}), for dim: {d}")
    if source.ndim != self.ndim or any(a != b for i, (a, b) in enumerate(zip(self.shape, source.shape)) if i != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                           f"self.shape = {shape_str(self.shape)} source.shape = {shape_str(source.shape)}")
    n = self.shape[d] if self.ndim else 1
    if index.size and (int(index.min()) < 0 or int(index.max()) >= n):
        raise IndexError("index out of range in self")
    if self.ndim == 0:
        return _scatter_core(xp, self, 0, index.reshape(()).astype(np.int64), source, reduce, include_self)
    shape = [1] * self.ndim
    shape[d] = -1
    full = xp.broadcast_to(index.astype(np.int64).reshape(shape), source.shape)
    return _scatter_core(xp, self, d, full, source, reduce, include_self)


_INDEX_REDUCE_WARNED: list[bool] = []


def _warn_index_reduce_beta() -> None:
    if not _INDEX_REDUCE_WARNED:
        _INDEX_REDUCE_WARNED.append(True)
        warn_user("index_reduce() is in beta and the API may change at any time.")


def put(xp: Any, self: Array, index: Array, source: Array, accumulate: Any = False) -> Any:
    """``self`` seen as 1-D with ``source``'s elements written (added, when ``accumulate``) at ``index``."""
    if index.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {type_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{type_name(self.dtype)} and source.dtype = {type_name(source.dtype)}")
    if index.size != source.size:
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.size}, index.numel() = {index.size}")
    n = self.size
    if index.size and (int(index.min()) < -n or int(index.max()) >= n):
        bad = int(index.max()) if int(index.max()) >= n else int(index.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    out = xp.ascontiguousarray(self).copy()
    flat = out.reshape(-1)
    idx, src = index.reshape(-1), source.reshape(-1)
    if accumulate:
        xp.add.at(flat, idx, src)
    else:
        flat[idx] = src
    return out


def nonzero_static(xp: Any, self: Array, size: Any, fill_value: Any = -1) -> Any:
    """``nonzero``'s rows, cut or padded with ``fill_value`` to exactly ``size`` rows."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = nonzero(xp, self)
    out = xp.full((size, nz.shape[1]), fill_value, np.int64)
    k = builtins.min(size, nz.shape[0])
    out[:k] = nz[:k]
    return out


def fill_scalar(xp: Any, self: Array, value: Any) -> Any:
    """``torch.fill``: a tensor like ``self`` holding ``value`` everywhere."""
    return xp.full(self.shape, value, self.dtype)


def fill_tensor(xp: Any, self: Array, value: Array) -> Any:
    if value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           "dimensions.")
    return xp.full(self.shape, value[()], self.dtype)


def _index_along(xp: Any, self: Array, dim: Any, index: Array, name: Any) -> Any:
    """The dim of an ``index_*`` op, after PyTorch's checks of its index vector. Out-of-range indices are refused
    as each of PyTorch's CPU kernels refuses them, naming the first bad one in order: ``index_fill`` accepts
    negative indices down to -size, ``index_add`` and ``index_copy`` none."""
    d = wrap_dim(dim, self.ndim) if self.ndim else 0
    if index.ndim > 1:
        raise IndexError(f"{name}_(): Index is supposed to be a vector")
    n = self.shape[d] if self.ndim else 1
    bad = _first_outside(index, -n if name == "index_fill" else 0, n)
    if bad is not None:
        where = f"index {bad} is out of bounds for dimension {d} with size {n}"
        if name == "index_copy":
            raise IndexError(f"index_copy_(): {where}")
        if name == "index_add":
            if self.ndim <= 1:
                raise IndexError("index out of range in self")
            raise RuntimeError(where)
        raise IndexError(where)
    return d


def index_add(xp: Any, self: Array, dim: Any, index: Array, source: Array, alpha: Any = 1) -> Any:
    d = _index_along(xp, self, dim, index, "index_add")
    out = self.copy()
    key = [slice(None)] * self.ndim
    key[d] = index
    src = xp.asarray(source).astype(self.dtype, copy=False)
    if alpha != 1:
        src = src * alpha
    if d == 0 and out.size and index.size and index.ndim == 1 and src.shape[:1] == index.shape \
            and compiled.usable(xp, out, dtypes=(np.float32, np.float64)):
        # rows in order (embedding's backward): a compiled loop instead of ufunc.at
        row = out.size // out.shape[0]
        loops.indexing.index_add_rows(out.reshape(out.shape[0], row), index.astype(np.int64, copy=False),
                                xp.broadcast_to(src, (index.shape[0],) + out.shape[1:]).reshape(index.shape[0], row))
    else:
        xp.add.at(out, tuple(key), src)
    return out


def index_copy(xp: Any, self: Array, dim: Any, index: Array, source: Array) -> Any:
    d = _index_along(xp, self, dim, index, "index_copy")
    out = self.copy()
    key = [slice(None)] * self.ndim
    key[d] = index
    out[tuple(key)] = source
    return out


def index_fill(xp: Any, self: Array, dim: Any, index: Array, value: Array) -> Any:
    d = _index_along(xp, self, dim, index, "index_fill")
    out = self.copy()
    key = [slice(None)] * self.ndim
    key[d] = index
    if hasattr(value, "ndim"):
        value = value[()]
    out[tuple(key)] = value
    return out


def masked_select(xp: Any, self: Array, mask: Array) -> Any:
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = np.broadcast_shapes(self.shape, mask.shape)
    return xp.broadcast_to(self, shape)[xp.broadcast_to(mask, shape)].copy()


def masked_scatter(xp: Any, self: Array, mask: Array, source: Array) -> Any:
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype " +
                           type_name(mask.dtype))
    out = self.copy()
    m = xp.broadcast_to(mask, self.shape)
    k = int(m.sum())
    if source.size < k:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    out[m] = source.reshape(-1)[:k]
    return out


def nonzero(xp: Any, self: Array) -> Any:
    return xp.stack(xp.nonzero(self), axis=-1).astype(np.int64) if self.ndim else \
        xp.zeros((1 if bool(self) else 0, 0), np.int64)


def argwhere(xp: Any, self: Array) -> Any:
    return nonzero(xp, self)


def take(xp: Any, self: Array, index: Array) -> Any:
    n = self.size
    if index.size and (int(index.min()) < -n or int(index.max()) >= n):
        bad = int(index.max()) if int(index.max()) >= n else int(index.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return self.reshape(-1)[index]


# ------------------------------------------------------------------------------ joining and shaping
def cat(xp: Any, tensors: Any, dim: Any = 0) -> Any:
    if len(tensors) == 0:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    real = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    if not real:
        npdt = result_np_dtype(*tensors) if len(tensors) > 1 else tensors[0].dtype
        return xp.empty((0,), npdt)
    ref = real[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ref.ndim)
    for i, t in enumerate(tensors):
        if t.ndim == 1 and t.shape[0] == 0:
            continue
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for j in range(ref.ndim):
            if j != d and t.shape[j] != ref.shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[j]} but got size {t.shape[j]} for tensor number {i} in the list.")
    npdt = result_np_dtype(*tensors) if len(tensors) > 1 else ref.dtype
    return xp.concatenate([t.astype(npdt, copy=False) for t in real], axis=d)


def stack(xp: Any, tensors: Any, dim: Any = 0) -> Any:
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shape_str(tensors[0].shape)} "
                               f"at entry 0 and {shape_str(t.shape)} at entry {i}")
    d = wrap_dim(dim, tensors[0].ndim + 1)
    npdt = result_np_dtype(*tensors) if len(tensors) > 1 else tensors[0].dtype
    return xp.stack([t.astype(npdt, copy=False) for t in tensors], axis=d)


def tril(xp: Any, self: Array, diagonal: Any = 0) -> Any:
    if self.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return xp.tril(self, diagonal)


def triu(xp: Any, self: Array, diagonal: Any = 0) -> Any:
    if self.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return xp.triu(self, diagonal)


def flip(xp: Any, self: Array, dims: Any) -> Any:
    from ember.aten.kernels._common import wrap_dims
    d = wrap_dims(dims, self.ndim)
    return xp.ascontiguousarray(xp.flip(self, d)) if d else self.copy()


def roll(xp: Any, self: Array, shifts: Any, dims: Any = ()) -> Any:
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"`shifts` required to be of size 1 when `dims` is not given, got {len(shifts)}")
        return xp.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return xp.roll(self, tuple(shifts), tuple(wrap_dim(d, self.ndim) for d in dims))


def rot90(xp: Any, self: Array, k: Any = 1, dims: Any = (0, 1)) -> Any:
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
    return xp.ascontiguousarray(xp.rot90(self, k, axes=tuple(wrap_dim(d, self.ndim) for d in dims)))


def repeat(xp: Any, self: Array, repeats: Any) -> Any:
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    x = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
    return xp.tile(x, tuple(repeats))


def repeat_interleave_self(xp: Any, repeats: Any, output_size: Any = None) -> Any:
    return xp.repeat(xp.arange(repeats.shape[0], dtype=np.int64), repeats)


def diag_embed(xp: Any, self: Array, offset: Any = 0, dim1: Any = -2, dim2: Any = -1) -> Any:
    n = self.shape[-1] + abs(offset)
    out = xp.zeros(self.shape[:-1] + (n, n), self.dtype)
    i = xp.arange(self.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = self
    nd = out.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    return xp.moveaxis(out, (nd - 2, nd - 1), (d1, d2))


def searchsorted(xp: Any, sorted_sequence: Array, self: Array, out_int32: Any = False, right: Any = False,
                 side: Any = None, sorter: Any = None) -> Any:
    sd = "right" if (right or side == "right") else "left"
    if side is not None and right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                           "while right was True")
    out_dt = np.int32 if out_int32 else np.int64
    scalar = not hasattr(self, "ndim")
    vals = xp.asarray(self)
    if sorted_sequence.ndim == 1:
        r = xp.searchsorted(sorted_sequence, vals, side=sd, sorter=sorter)
    else:
        if sorted_sequence.shape[:-1] != vals.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {shape_str(sorted_sequence.shape)} and input value tensor "
                               f"{shape_str(vals.shape)}")
        flat_s = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
        flat_v = vals.reshape(-1, vals.shape[-1])
        r = xp.stack([xp.searchsorted(flat_s[i], flat_v[i], side=sd) for i in range(flat_s.shape[0])])
        r = r.reshape(vals.shape)
    return xp.asarray(r).astype(out_dt) if not scalar else xp.asarray(r, dtype=out_dt)


def bucketize(xp: Any, self: Array, boundaries: Array, out_int32: Any = False, right: Any = False) -> Any:
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(xp, boundaries, self, out_int32, right)


def _isin_shape(elements: Any, test_elements: Any, assume_unique: Any = False, invert: Any = False) -> Any:
    return getattr(elements, "shape", ()), np.dtype(np.bool_)


@meta_shape(_isin_shape)
def isin(xp: Any, elements: Any, test_elements: Any, assume_unique: Any = False, invert: Any = False) -> Any:
    """Whether each of ``elements`` is among ``test_elements`` (values compared after promotion, as PyTorch does
    in ``TensorCompare.cpp``); either side may be a Python scalar."""
    for a in (elements, test_elements):
        kind = np.asarray(a).dtype.kind if not hasattr(a, "dtype") else a.dtype.kind
        if kind in "bc":
            raise RuntimeError("Unsupported input type encountered for isin(): "
                               f"{type_name(np.asarray(a).dtype if not hasattr(a, 'dtype') else a.dtype)}")
    e = elements if hasattr(elements, "dtype") else xp.asarray(elements)
    t = test_elements if hasattr(test_elements, "dtype") else xp.asarray([test_elements])
    return xp.asarray(xp.isin(e, t, invert=bool(invert)))
