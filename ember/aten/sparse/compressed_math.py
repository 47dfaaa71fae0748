"""SparseCsrCPU arithmetic (mirrors ``native/sparse/SparseCsrTensorMath.cpp``): products with a number, sums and
products of compressed tensors, matrix products through SciPy's compressed kernels, ``sampled_addmm``, masks, and
the zero-preserving elementwise ops (Note [Compressed layouts] in compressed.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember._generated import aten
from ember.aten.backends import composite_kernel
from ember.aten.dispatcher import Dispatcher
from ember.aten.sparse.compressed import (_batch_shape, _blocksize, _coordinates, _index_dtype, _is_row, _like,
                                          compressed_to_dense, to_compressed, values_compressed)
from ember.aten.sparse.math import UNARY_SPARSE_OPS, _compute_dtype, _scipy_sparse, sampled_dot
from ember.aten.sparse.tensor import (BLOCKED_LAYOUTS, COMPRESSED_LAYOUTS, LAYOUT_NAMES, dense, dense_dim_of,
                                      is_sparse_layout, layout_of, new_compressed, parts)
from ember.c10.dispatch_key import DispatchKey
from ember.c10.memory_format import sparse_csc, sparse_csr

__all__ = ["mul_scalar_compressed", "div_scalar_compressed", "mul_compressed", "add_compressed", "mm_compressed",
           "mv_compressed", "addmm_compressed", "sampled_addmm_compressed", "sparse_mask_compressed",
           "register_unary_kernels"]


# -- arithmetic ------------------------------------------------------------------------------------------------------
def mul_scalar_compressed(self: Any, other: Any) -> Any:
    out = aten.mul_Scalar(values_compressed(self), other)
    return _like(self, out._data)


def div_scalar_compressed(self: Any, other: Any) -> Any:
    """PyTorch's structured ``div`` kernel has no compressed form (``x * (1 / c)`` is the way it allows)."""
    raise RuntimeError(f"unsupported tensor layout: {LAYOUT_NAMES[layout_of(self)]}")


def mul_compressed(self: Any, other: Any) -> Any:
    """A compressed tensor times a 0-dim tensor keeps its pattern (either order); times a tensor of its shape (dense
    or sparse), the product of both as COO, in the compressed tensor's layout (PyTorch's result layout)."""
    comp, factor = (self, other) if layout_of(self) in COMPRESSED_LAYOUTS else (other, self)
    if factor.dim() == 0 and not is_sparse_layout(factor):
        return _like(comp, aten.mul_Tensor(values_compressed(comp), factor)._data)
    a = self.to_sparse() if layout_of(self) in COMPRESSED_LAYOUTS else self
    b = other.to_sparse() if layout_of(other) in COMPRESSED_LAYOUTS else other
    return to_compressed(aten.mul_Tensor(a, b), layout_of(comp))


def add_compressed(self: Any, other: Any, alpha: Any = 1) -> Any:
    """compressed + compressed of one layout (its layout), dense + compressed (dense)."""
    if not is_sparse_layout(self):
        d = compressed_to_dense(other)
        return aten.add_Tensor(self, d, alpha=alpha)
    if layout_of(self) != layout_of(other):
        raise RuntimeError(f"add(sparse_compressed, ...): expected both operands in the layout "
                           f"{LAYOUT_NAMES[layout_of(self)]}, got {LAYOUT_NAMES[layout_of(other)]}")
    total = aten.add_Tensor(self.to_sparse(), other.to_sparse(), alpha=alpha)
    return to_compressed(total, layout_of(self), _blocksize(self) if layout_of(self) in BLOCKED_LAYOUTS else None)




def _scipy_matrix(t: Any) -> Any:
    """A 2-D CSR / CSC tensor as the SciPy matrix over its arrays (no copy)."""
    p = parts(t)
    sps = _scipy_sparse()
    vals = p.values.astype(_compute_dtype(p.values), copy=False)
    cls = sps.csr_matrix if _is_row(p.layout) else sps.csc_matrix
    return cls((vals, p.plain, p.compressed), shape=t._data.shape)


def _product_operand(t: Any) -> Any:
    if layout_of(t) in BLOCKED_LAYOUTS or len(_batch_shape(t)) or dense_dim_of(t):
        raise NotImplementedError(f"products with a {LAYOUT_NAMES[layout_of(t)]} tensor of batch or dense dims: "
                                  f"only 2-D CSR and CSC matrices go to the product kernels")
    return _scipy_matrix(t)


def mm_compressed(self: Any, mat2: Any) -> Any:
    if self.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError("mm: expected 2-D operands")
    if self.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    dt = (self if is_sparse_layout(self) else mat2)._data.dtype
    a = _product_operand(self) if is_sparse_layout(self) else self._data
    b = _product_operand(mat2) if is_sparse_layout(mat2) else mat2._data
    if is_sparse_layout(self) and is_sparse_layout(mat2):
        prod = (a @ b).tocsr() if _is_row(layout_of(self)) else (a @ b).tocsc()
        prod.sort_indices()
        lay = sparse_csr if _is_row(layout_of(self)) else sparse_csc
        return new_compressed(lay, prod.indptr.astype(_index_dtype(self)), prod.indices.astype(_index_dtype(self)),
                              prod.data.astype(dt), (self.shape[0], mat2.shape[1]), self._device)
    out = a @ b if is_sparse_layout(self) else (b.T @ a.T).T
    return dense(np.ascontiguousarray(np.asarray(out)).astype(dt, copy=False), self._device)


def mv_compressed(self: Any, vec: Any) -> Any:
    out = _product_operand(self) @ vec._data
    return dense(np.asarray(out).astype(self._data.dtype, copy=False), self._device)


def addmm_compressed(self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    prod = mm_compressed(mat1, mat2)
    if is_sparse_layout(prod):
        prod = compressed_to_dense(prod)
    res = prod._data * alpha if alpha != 1 else prod._data
    if beta != 0:
        base = compressed_to_dense(self)._data if is_sparse_layout(self) else self._data
        res = res + (base * beta if beta != 1 else base)
    return dense(np.ascontiguousarray(res).astype(prod._data.dtype, copy=False), prod._device)


def sampled_addmm_compressed(self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    """``torch.sparse.sampled_addmm``: ``beta * self + alpha * (mat1 @ mat2)`` at ``self``'s stored positions only
    (a CSR result with ``self``'s pattern; one dot product per stored element)."""
    if layout_of(self) is not sparse_csr:
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got "
                           f"{LAYOUT_NAMES[layout_of(self)]}")
    if mat1.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied ({mat1.shape[-2]}x"
                           f"{mat1.shape[-1]} and {mat2.shape[-2]}x{mat2.shape[-1]})")
    coords, vals = _coordinates(self)
    r, c = coords[-2], coords[-1]
    a, b = mat1._data, mat2._data
    if coords.shape[0] > 2:        # batched: the batch index picks the matrices
        bi = np.ravel_multi_index(tuple(coords[:-2]), _batch_shape(self))
        prod = np.einsum("nk,nk->n", a.reshape(-1, *a.shape[-2:])[bi, r], b.reshape(-1, *b.shape[-2:])[bi, :, c])
    else:
        prod = sampled_dot(a, b.T, r, c)
    out = alpha * prod + (beta * vals if beta != 0 else 0)
    return _like(self, out.astype(self._data.dtype).reshape(parts(self).values.shape))


def sparse_mask_compressed(self: Any, mask: Any) -> Any:
    """``self`` (dense) at ``mask``'s stored positions, in ``mask``'s layout and pattern."""
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} but "
                           f"mask has size {list(mask.shape)}")
    src = compressed_to_dense(self)._data if is_sparse_layout(self) else self._data
    coords, _ = _coordinates(mask)
    vals = src[tuple(coords)].reshape(parts(mask).values.shape)
    return _like(mask, np.ascontiguousarray(vals))


# -- unary ops: Note [Sparse elementwise ops run the dense op on the values] in ember/aten/sparse/math.py ----------
def _unary_kernel(op: Any) -> Any:
    def kernel(self: Any, *args: Any) -> Any:
        return _like(self, op(values_compressed(self), *args)._data)
    kernel.__name__ = kernel.__qualname__ = f"{op.__name__}_sparse_csr"
    return kernel


def _unary_kernel_(op: Any) -> Any:
    def kernel(self: Any, *args: Any) -> Any:
        op(values_compressed(self), *args)      # the values array itself
        self._bump_version()
        return self
    kernel.__name__ = kernel.__qualname__ = f"{op.__name__}_sparse_csr_"
    return kernel


def register_unary_kernels() -> None:
    """SparseCsrCPU kernels of the zero-preserving elementwise ops (the values of a compressed tensor are always
    coalesced, so every op maps them directly)."""
    for name in UNARY_SPARSE_OPS:
        op = Dispatcher.ops.get("aten::" + name)
        if op is None:
            continue
        op.register(DispatchKey.SparseCsrCPU, composite_kernel(_unary_kernel(getattr(aten, name))))
        inplace = Dispatcher.ops.get("aten::" + name + "_")
        if inplace is not None:
            inplace.register(DispatchKey.SparseCsrCPU, composite_kernel(_unary_kernel_(getattr(aten, name + "_"))))
