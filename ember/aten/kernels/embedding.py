"""Kernels of embedding, embedding_bag, embedding_renorm_ (``aten/src/ATen/native/{Embedding,EmbeddingBag}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, asdtype, compute_dtype, meta_array, meta_kernel, type_name
from ember.c10.dtype import BF16_NP

__all__ = ["embedding", "_embedding_bag", "embedding_renorm_"]

# ------------------------------------------------------------------------------ embedding
def embedding(xp: Any, weight: Array, indices: Array, padding_idx: Any = -1, scale_grad_by_freq: Any = False,
              sparse: Any = False) -> Any:
    if indices.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {'torch.' + {'f': 'Float', 'b': 'Bool'}.get(indices.dtype.kind, '')}"
                           "Tensor instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight.shape[0]
    if indices.size and (int(indices.max()) >= n or int(indices.min()) < 0):
        raise IndexError("index out of range in self")
    return weight[indices]


# ------------------------------------------------------------------------------ embedding_bag
# ``EmbeddingBag.cpp``: bag b holds the indices from offsets[b] to the next offset (the last bag runs to the end of
# ``indices``, with ``include_last_offset`` too, as PyTorch's CPU kernel reads them); entries equal to padding_idx
# are left out. Returns (output, offset2bag, bag_size, max_indices) with PyTorch's contents: the bag of each
# index, the bag sizes (mean and max; zeros for sum) and the rows that gave each maximum (max; bag_size for mean,
# zeros for sum).
_EB_SUM, _EB_MEAN, _EB_MAX = 0, 1, 2


def _embedding_bag_checks(weight: Array, indices: Array, offsets: Array, mode: Any, per_sample_weights: Array,
                          include_last_offset: Any) -> Any:
    for a, name, pos in ((indices, "indices", 1), (offsets, "offsets", 2)):
        if a.dtype != np.int64 and a.dtype != np.int32:
            raise RuntimeError(f"Expected tensor for argument #{pos} '{name}' to have one of the following scalar "
                               f"types: "
                               f"Long, Int; but got torch.{type_name(a.dtype)}Tensor instead (while checking arguments "
                               "for embedding_bag)")
    if indices.dtype != offsets.dtype:
        raise RuntimeError(f"Expected tensor for argument #2 'offsets' to have the same type as tensor for argument #1 "
                           f"'indices'; but type torch.{type_name(offsets.dtype)}Tensor does not equal "
                           f"torch.{type_name(indices.dtype)}Tensor (while checking arguments for embedding_bag)")
    if not (weight.dtype.kind == "f" or weight.dtype == BF16_NP):
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, "
                           f"BFloat16, Float, Double; but got torch.{type_name(weight.dtype)}Tensor instead (while "
                           "checking arguments for embedding_bag)")
    if offsets.size:
        o0, on = int(offsets[0]), int(offsets[-1])
        if o0 != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {o0}")
        if on > indices.size:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {indices.size} but got "
                               f"offsets[-1] of {on}")
    if per_sample_weights is not None:
        if mode != _EB_SUM:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.dtype != weight.dtype:
            raise RuntimeError(f"embedding_bag: Expected per_sample_weights to have the same dtype as weight "
                               f"({type_name(weight.dtype)}), but got {type_name(per_sample_weights.dtype)}")
        if per_sample_weights.ndim != 1 or per_sample_weights.size != indices.size:
            raise RuntimeError("embedding_bag: Expected per_sample_weights to be 1-D with as many entries as indices")
    if include_last_offset and offsets.shape[0] < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")


def _embedding_bag_meta(xp: Any, weight: Array, indices: Array, offsets: Array, scale_grad_by_freq: Any = False,
                        mode: Any = 0, sparse: Any = False, per_sample_weights: Array = None,
                        include_last_offset: Any = False, padding_idx: Any = -1) -> Any:
    b = offsets.shape[0] - (1 if include_last_offset else 0)
    d = weight.shape[1]
    i64 = np.empty((), np.int64)
    return (meta_array(weight.dtype, (b, d)), np.broadcast_to(i64, (indices.size,)),
            np.broadcast_to(i64, (b,)), np.broadcast_to(i64, (b, d) if mode == _EB_MAX else (b,)))


@meta_kernel(_embedding_bag_meta)
def _embedding_bag(xp: Any, weight: Array, indices: Array, offsets: Array, scale_grad_by_freq: Any = False,
                   mode: Any = 0, sparse: Any = False, per_sample_weights: Array = None,
                   include_last_offset: Any = False, padding_idx: Any = -1) -> Any:
    _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights, include_last_offset)
    num, d = weight.shape
    idx = indices.astype(np.int64, copy=False).reshape(-1)
    n = idx.size
    bad = (idx < 0) | (idx >= num)
    if bool(bad.any()):
        k = int(xp.argmax(bad))
        raise RuntimeError(f"Index {k} of input takes value {int(idx[k])} which is not in the valid range [0, {num})")
    b = offsets.shape[0] - (1 if include_last_offset else 0)
    starts = offsets.astype(np.int64, copy=False)[:b]
    offset2bag = (xp.searchsorted(starts, xp.arange(n), side="right") - 1).astype(np.int64)
    keep = idx != padding_idx if padding_idx >= 0 else xp.ones(n, bool)
    ct = compute_dtype(weight.dtype)
    rows = asdtype(xp, weight, ct)[idx]
    if per_sample_weights is not None:
        rows = rows * asdtype(xp, per_sample_weights, ct)[:, None]
    live = xp.nonzero(keep)[0]
    bags, rows = offset2bag[live], rows[live]
    counts = _segment(xp, "add", xp.ones(bags.shape[0], np.int64), bags, b, 0)
    if mode == _EB_MAX:
        out = _segment(xp, "maximum", rows, bags, b, 0)
        # per column, the first entry of its bag that reaches the maximum (PyTorch's loop keeps the first)
        pos = compiled.where(xp, rows == out[bags], xp.arange(bags.shape[0])[:, None], n)
        first = _segment(xp, "minimum", pos, bags, b, n)
        max_indices = compiled.where(xp, first < n, idx[live][xp.minimum(first, max(bags.shape[0] - 1, 0))], 0) \
            if bags.shape[0] else xp.zeros((b, d), np.int64)
        return out.astype(weight.dtype), offset2bag, counts, max_indices.astype(np.int64)
    out = _segment(xp, "add", rows, bags, b, 0)
    if mode == _EB_MEAN:
        out = out / xp.maximum(counts, 1)[:, None].astype(ct)
        return out.astype(weight.dtype), offset2bag, counts, counts.copy()
    return out.astype(weight.dtype), offset2bag, xp.zeros(b, np.int64), xp.zeros(b, np.int64)


def _segment(xp: Any, ufunc: Any, values: Array, seg: Any, size: Any, fill: Any) -> Any:
    """``out[s] = ufunc.reduce(values[seg == s])`` for s in range(size), ``fill`` for empty segments (``seg``
    non-decreasing)."""
    out = xp.full((size,) + values.shape[1:], fill, values.dtype)
    if values.shape[0] == 0:
        return out
    if xp is np:
        uniq, starts = np.unique(seg, return_index=True)
        out[uniq] = getattr(np, ufunc).reduceat(values, starts, axis=0)
    else:
        if ufunc != "add":
            out[...] = values.min() if ufunc == "maximum" else values.max()
        getattr(xp, ufunc).at(out, seg, values)
        if ufunc != "add":
            out[xp.bincount(seg, minlength=size)[:size] == 0] = fill
    return out




# ------------------------------------------------------------------------------ embedding_renorm_ (Embedding.cpp)
def _embedding_renorm_checks(xp: Any, self: Array, indices: Array, max_norm: float, norm_type: float) -> Any:
    if self.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {self.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for embedding_renorm_)")
    if indices.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {type_name(indices.dtype)} instead (while checking arguments for "
                           f"embedding_renorm_)")
    return self


@meta_kernel(_embedding_renorm_checks)
def embedding_renorm_(xp: Any, self: Array, indices: Array, max_norm: float, norm_type: float) -> Any:
    """In place: rows of ``self`` named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` are scaled down
    by ``max_norm / (norm + 1e-7)`` (each row once)."""
    _embedding_renorm_checks(xp, self, indices, max_norm, norm_type)
    rows = xp.unique(indices.reshape(-1))
    ct = compute_dtype(self.dtype)
    w = self[rows].astype(ct)
    with np.errstate(all="ignore"):
        if norm_type == 1:
            norms = xp.abs(w).sum(axis=1)
        elif norm_type == 2:
            norms = xp.sqrt((w * w).sum(axis=1))
        elif norm_type == float("inf"):
            norms = xp.abs(w).max(axis=1) if w.shape[1] else xp.zeros(w.shape[0], ct)
        else:
            norms = (xp.abs(w) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        norms = norms.astype(np.float64)         # PyTorch: the norm as a double, ``row *= max_norm / (norm + 1e-7)``
        scale = compiled.where(xp, norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(ct)
    self[rows] = (w * scale[:, None]).astype(self.dtype)
    return self
