"""SparseCPU arithmetic (mirrors ``native/sparse/SparseTensorMath.cpp``, ``SparseUnaryOps.cpp``, ``SparseMatMul.cpp``):
elementwise ops that keep zeros zero, sums, masks and the products of a sparse and a dense or sparse matrix.

Note [Sparse elementwise ops run the dense op on the values]
A function ``f`` with ``f(0) == 0`` maps a sparse tensor to one with the same indices and ``f(values)``. The
kernel calls the dense operator itself on the values tensor, so dtypes, promotion and errors are the dense op's.
A nonlinear ``f`` needs each position's whole value, so the input is coalesced first (``sqrt(a) + sqrt(b)`` is not
``sqrt(a + b)``); a linear one (``neg``, a product with a number) keeps the input's indices as they are. An op whose
``f(0)`` is not 0 (``exp``, ``cos``) has no SparseCPU kernel and refuses sparse tensors, as in PyTorch.

Products go through SciPy's compressed-row kernels when SciPy is present, otherwise through a row gather
(``_coo_matmul``); both take the coalesced COO parts.
"""
from __future__ import annotations

from typing import Any, Sequence

import importlib.util

import numpy as np

from ember._generated import aten
from ember.aten.backends import composite_kernel
from ember.aten.dispatcher import Dispatcher
from ember.aten.kernels import compiled, loops
from ember.c10.dispatch_key import DispatchKey
from ember.c10.dtype import from_numpy_dtype, promote_types
from ember.aten.sparse.tensor import (coalesce_arrays, coalesced_parts, dense, dense_dim_of, is_sparse_layout,
                                      linear_index, new_coo, parts, sparse_dim_of, to_dense_array)

__all__ = ["sampled_dot", "bmm_sparse", "add_sparse", "add_sparse_", "add_scalar_sparse", "sub_sparse",
           "mul_scalar_sparse", "div_scalar_sparse", "mul_scalar_sparse_", "div_scalar_sparse_", "mul_sparse",
           "mul_sparse_", "div_sparse", "div_sparse_", "pow_sparse_scalar", "mm_sparse", "addmm_sparse",
           "mv_sparse", "sparse_addmm", "sparse_mm", "sparse_mask_sparse", "sparse_sum", "sparse_sum_dim",
           "sparse_sum_dtype", "sparse_sum_dim_dtype", "sum_dim_sparse", "sparse_sum_backward",
           "softmax_sparse_cpu", "log_softmax_sparse_cpu", "softmax_backward_sparse_cpu",
           "log_softmax_backward_sparse_cpu", "UNARY_SPARSE_OPS", "register_unary_kernels"]


def _sizes_differ(op: str, a: Any, b: Any) -> RuntimeError:
    return RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has size {list(a.shape)} "
                        f"while other has size {list(b.shape)} (FYI: dense-sparse addition does not currently "
                        f"support broadcasting)")


def _result_dtype(a: Any, b: Any) -> Any:
    return promote_types(a.dtype, b.dtype).np


def _alpha_times(vals: Any, alpha: Any) -> Any:
    return vals if alpha == 1 else vals * alpha


# -- add ------------------------------------------------------------------------------------------------------------
def add_sparse(self: Any, other: Any, alpha: Any = 1) -> Any:
    """sparse + sparse (indices joined; coalesced when both are) and dense + sparse (a dense result)."""
    if not is_sparse_layout(self):
        if tuple(self.shape) != tuple(other.shape):
            raise _sizes_differ("add", self, other)
        out = self._data.astype(_result_dtype(self, other), copy=True)
        p = parts(other)
        np.add.at(out, tuple(p.indices), _alpha_times(p.values, alpha))
        return dense(out, self._device)
    if not is_sparse_layout(other):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if tuple(self.shape) != tuple(other.shape):
        raise _sizes_differ("add", self, other)
    if sparse_dim_of(self) != sparse_dim_of(other):
        raise RuntimeError(f"Expected self and other to have the same sparse dimension, but got {sparse_dim_of(self)}"
                           f" and {sparse_dim_of(other)}")
    dtype = _result_dtype(self, other)
    a, b = parts(self), parts(other)
    idx = np.concatenate([a.indices, b.indices], axis=1)
    vals = np.concatenate([a.values.astype(dtype), _alpha_times(b.values, alpha).astype(dtype)], axis=0)
    if a.coalesced and b.coalesced:
        idx, vals = coalesce_arrays(idx, vals, self._data.shape[:a.indices.shape[0]])
        return new_coo(idx, vals, self._data.shape, True, self._device)
    return new_coo(idx, vals, self._data.shape, False, self._device)


def add_scalar_sparse(self: Any, other: Any, alpha: Any = 1) -> Any:
    """A number added to a sparse tensor would fill it: PyTorch's refusal."""
    raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")


def sub_sparse(self: Any, other: Any, alpha: Any = 1) -> Any:
    if self._data.dtype == np.bool_ and other._data.dtype == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    return add_sparse(self, other, -alpha)


def add_sparse_(self: Any, other: Any, alpha: Any = 1) -> Any:
    if not is_sparse_layout(self):
        if tuple(self.shape) != tuple(other.shape):
            raise _sizes_differ("add_", self, other)
        p = parts(other)
        np.add.at(self._data, tuple(p.indices), _alpha_times(p.values, alpha).astype(self._data.dtype, copy=False))
        self._bump_version()
        return self
    result = add_sparse(self, other, alpha)
    rp, p = parts(result), parts(self)
    p.indices, p.values, p.coalesced = rp.indices, rp.values.astype(p.values.dtype, copy=False), rp.coalesced
    self._bump_version()
    return self


# -- mul / div ---------------------------------------------------------------------------------------------------------
def _scalar_of(t: Any) -> Any:
    """A 0-dim dense tensor's value (a wrapped number)."""
    return t._data[()]


def _intersect(a: Any, b: Any) -> tuple[Any, Any, Any]:
    """The positions both coalesced COO tensors hold: (indices, a's values there, b's values there)."""
    ai, av = coalesced_parts(a)
    bi, bv = coalesced_parts(b)
    sizes = a._data.shape[:ai.shape[0]]
    la, lb = linear_index(ai, sizes), linear_index(bi, sizes)
    common, ia, ib = np.intersect1d(la, lb, assume_unique=True, return_indices=True)
    return ai[:, ia], av[ia], bv[ib]


def mul_sparse(self: Any, other: Any) -> Any:
    """sparse * sparse: the positions both hold; sparse * dense (either order): the sparse positions, times the dense
    value there (a 0-dim dense tensor is a number)."""
    if is_sparse_layout(self) and is_sparse_layout(other):
        if tuple(self.shape) != tuple(other.shape):
            raise RuntimeError(f"mul(sparse, sparse): expected 'self' and 'other' to have same size, but "
                               f"{list(self.shape)} != {list(other.shape)}")
        idx, av, bv = _intersect(self, other)
        return new_coo(np.ascontiguousarray(idx), np.ascontiguousarray(av * bv).astype(_result_dtype(self, other)),
                       self._data.shape, True, self._device)
    sp, dn = (self, other) if is_sparse_layout(self) else (other, self)
    p = parts(sp)
    vals_t = dense(p.values, sp._device)
    if dn.dim() == 0:
        out = aten.mul_Tensor(vals_t, dn)
        return new_coo(p.indices.copy(), out._data, sp._data.shape, p.coalesced, sp._device)
    idx, vals = coalesced_parts(sp)
    full = np.broadcast_to(dn._data, sp._data.shape) if tuple(dn.shape) != tuple(sp.shape) else dn._data
    try:
        np.broadcast_shapes(dn._data.shape, sp._data.shape)
    except ValueError:
        raise RuntimeError(f"mul(sparse, dense): the dense operand's size {list(dn.shape)} does not broadcast to "
                           f"the sparse operand's {list(sp.shape)}") from None
    gathered = full[tuple(idx)]
    out = aten.mul_Tensor(dense(vals, sp._device), dense(np.ascontiguousarray(gathered), sp._device))
    return new_coo(idx.copy(), out._data, sp._data.shape, True, sp._device)


def mul_sparse_(self: Any, other: Any) -> Any:
    if not is_sparse_layout(self):
        raise RuntimeError("mul_(dense, sparse) is not supported: the result would be sparse")
    result = mul_sparse(self, other)
    rp, p = parts(result), parts(self)
    p.indices, p.values, p.coalesced = rp.indices, rp.values.astype(p.values.dtype, copy=False), rp.coalesced
    self._bump_version()
    return self


def mul_scalar_sparse(self: Any, other: Any) -> Any:
    p = parts(self)
    out = aten.mul_Scalar(dense(p.values, self._device), other)
    return new_coo(p.indices.copy(), out._data, self._data.shape, p.coalesced, self._device)


def div_scalar_sparse(self: Any, other: Any) -> Any:
    p = parts(self)
    out = aten.div_Scalar(dense(p.values, self._device), other)
    return new_coo(p.indices.copy(), out._data, self._data.shape, p.coalesced, self._device)


def _values_in_place(self: Any, result: Any) -> Any:
    """``self`` takes the values of ``result`` (same indices), in its own dtype: an in-place op's write."""
    p = parts(self)
    rv = parts(result).values
    if rv.dtype != p.values.dtype and not np.can_cast(rv.dtype, p.values.dtype, "same_kind"):
        raise RuntimeError(f"result type {from_numpy_dtype(rv.dtype)} can't be cast to the desired output type "
                           f"{from_numpy_dtype(p.values.dtype)}")
    p.values = rv.astype(p.values.dtype, copy=False)
    self._bump_version()
    return self


def mul_scalar_sparse_(self: Any, other: Any) -> Any:
    return _values_in_place(self, mul_scalar_sparse(self, other))


def div_scalar_sparse_(self: Any, other: Any) -> Any:
    return _values_in_place(self, div_scalar_sparse(self, other))


def div_sparse(self: Any, other: Any, rounding_mode: Any = None) -> Any:
    if is_sparse_layout(other) or other.dim() != 0:
        raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                           f"{list(other.shape)} for divisor)")
    p = parts(self)
    out = aten.div_Tensor_mode(dense(p.values, self._device), other, rounding_mode=rounding_mode) \
        if rounding_mode is not None else aten.div_Tensor(dense(p.values, self._device), other)
    return new_coo(p.indices.copy(), out._data, self._data.shape, p.coalesced, self._device)


def div_sparse_(self: Any, other: Any, rounding_mode: Any = None) -> Any:
    return _values_in_place(self, div_sparse(self, other, rounding_mode))


def pow_sparse_scalar(self: Any, exponent: Any) -> Any:
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor "
                           "dense")
    idx, vals = coalesced_parts(self)
    out = aten.pow_Tensor_Scalar(dense(vals, self._device), exponent)
    return new_coo(idx.copy(), out._data, self._data.shape, True, self._device)


# -- unary ops: Note [Sparse elementwise ops run the dense op on the values] ----------------------------------------
# op name -> linear (keeps uncoalesced indices)
UNARY_SPARSE_OPS = {"neg": True, "abs": False, "sgn": False, "sign": False, "sqrt": False, "sin": False,
                    "sinh": False, "tan": False, "tanh": False, "asin": False, "asinh": False, "atan": False,
                    "atanh": False, "relu": False, "log1p": False, "expm1": False, "erf": False, "erfinv": False,
                    "floor": False, "ceil": False, "round": False, "trunc": False, "frac": False,
                    "deg2rad": True, "rad2deg": True, "signbit": False, "isnan": False, "isinf": False,
                    "isposinf": False, "isneginf": False, "conj_physical": True, "angle": False,
                    "nan_to_num": False}


def _unary_kernel(op: Any, linear: bool) -> Any:
    def kernel(self: Any, *args: Any) -> Any:
        p = parts(self)
        idx, vals = (p.indices, p.values) if linear else coalesced_parts(self)
        out = op(dense(vals, self._device), *args)
        return new_coo(idx.copy(), out._data, self._data.shape, p.coalesced or not linear, self._device)
    kernel.__name__ = kernel.__qualname__ = f"{op.__name__}_sparse"
    return kernel


def _unary_kernel_(op: Any, linear: bool) -> Any:
    functional = _unary_kernel(op, linear)

    def kernel(self: Any, *args: Any) -> Any:
        result = functional(self, *args)
        rp, p = parts(result), parts(self)
        if rp.values.dtype != p.values.dtype:
            raise RuntimeError(f"result type {rp.values.dtype} can't be cast to the desired output type "
                               f"{p.values.dtype}")
        p.indices, p.values, p.coalesced = rp.indices, rp.values, rp.coalesced
        self._bump_version()
        return self
    kernel.__name__ = kernel.__qualname__ = f"{op.__name__}_sparse_"
    return kernel


def register_unary_kernels() -> None:
    """SparseCPU kernels of the zero-preserving elementwise ops and their in-place forms (called once the operator
    table is registered)."""
    for name, linear in UNARY_SPARSE_OPS.items():
        op = Dispatcher.ops.get("aten::" + name)
        if op is None:
            continue
        dense_fn = getattr(aten, name)
        op.register(DispatchKey.SparseCPU, composite_kernel(_unary_kernel(dense_fn, linear)))
        inplace = Dispatcher.ops.get("aten::" + name + "_")
        if inplace is not None:
            inplace.register(DispatchKey.SparseCPU, composite_kernel(_unary_kernel_(dense_fn, linear)))


# -- products --------------------------------------------------------------------------------------------------------
def _check_matrix(t: Any, what: str) -> None:
    if t.dim() != 2:
        raise RuntimeError(f"{what} must be a matrix")
    if is_sparse_layout(t) and dense_dim_of(t) != 0:
        raise RuntimeError(f"{what}: a sparse matrix with dense dimensions is not supported (dense_dim = "
                           f"{dense_dim_of(t)})")


def _compute_dtype(a: Any) -> Any:
    return np.float32 if a.dtype in (np.float16,) or a.dtype.name == "bfloat16" else a.dtype


def _scipy_sparse() -> Any:
    """SciPy's sparse module (optional: loaded on the first product; ``pip install ember[sparse]``)."""
    try:
        import scipy.sparse  # type: ignore[import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError("products of sparse tensors need SciPy, which is not installed: pip install scipy "
                          "(or the ember[sparse] extra)") from e
    return scipy.sparse


def _csr(t: Any) -> Any:
    """The 2-D COO tensor ``t`` as a SciPy matrix over its arrays (no validation pass): CSR when coalesced; CSC
    when its indices are sorted column-major (a transposed coalesced matrix: no sort needed); else CSR of its
    coalesced parts."""
    sps = _scipy_sparse()
    p = parts(t)
    n, m = t._data.shape
    idx, vals = p.indices, p.values
    major = 0
    if not p.coalesced:
        lin = idx[1] * n + idx[0]
        if lin.size > 1 and bool(np.all(lin[1:] > lin[:-1])):
            major = 1
        else:
            idx, vals = coalesced_parts(t)
    count = n if major == 0 else m
    indptr = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(idx[major], minlength=count), out=indptr[1:])
    vals = vals.astype(_compute_dtype(vals), copy=False)
    cls = sps.csr_matrix if major == 0 else sps.csc_matrix
    return cls((vals, idx[1 - major], indptr), shape=(n, m))


def sampled_dot(a: Any, b: Any, rows: Any, cols: Any) -> Any:
    """``out[i] = a[rows[i]] . b[cols[i]]`` (``a``: n x k, ``b``: m x k): one dot product per stored position of a
    sparse pattern (``loops.sparse``; NumPy's gather-and-sum where no compiled loop applies)."""
    if a.dtype == b.dtype and compiled.usable(np, a, b, dtypes=(np.float32, np.float64)):
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        out = np.empty(len(rows), np.float64)
        grain = max(1, compiled.CHEAP_GRAIN // max(a.shape[1], 1))
        compiled.split(loops.sparse.sampled_dots, len(rows), grain, a, b, np.ascontiguousarray(rows),
                       np.ascontiguousarray(cols), out)
        return out.astype(a.dtype)
    return np.einsum("nk,nk->n", a[rows], b[cols])


def _sparse_times_dense(a: Any, b: Any) -> Any:
    """A (sparse, n x k) times b (dense array, k x m) as a dense array."""
    if importlib.util.find_spec("scipy") is not None:
        out = _csr(a) @ b.astype(_compute_dtype(b), copy=False)
    else:       # without SciPy: each stored element's row of b, added into its output row
        idx, vals = coalesced_parts(a)
        out = np.zeros((a._data.shape[0],) + b.shape[1:], np.result_type(vals.dtype, b.dtype))
        np.add.at(out, idx[0], vals.reshape((-1,) + (1,) * (b.ndim - 1)) * b[idx[1]])
    return np.asarray(out)


def _mm_arrays(a: Any, b: Any) -> tuple[Any, bool]:
    """The product of two matrices, at least one sparse: (array or COO parts, whether the result is sparse)."""
    if is_sparse_layout(a) and is_sparse_layout(b):
        prod = _scipy_sparse().coo_matrix(_csr(a) @ _csr(b))
        prod.sum_duplicates()
        idx = np.vstack([prod.row, prod.col]).astype(np.int64)
        return (idx, prod.data), True
    if is_sparse_layout(a):
        return _sparse_times_dense(a, b._data), False
    # dense @ sparse = (sparse^T @ dense^T)^T
    at = _transposed(b)
    return np.ascontiguousarray(_sparse_times_dense(at, a._data.T).T), False


def _transposed(t: Any) -> Any:
    p = parts(t)
    return new_coo(np.ascontiguousarray(p.indices[::-1]), p.values, t._data.shape[::-1], False, t._device)


def _mm_check(a: Any, b: Any) -> None:
    _check_matrix(a, "self")
    _check_matrix(b, "mat2")
    if a.shape[1] != b.shape[0] and is_sparse_layout(a) and not is_sparse_layout(b):
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {a.shape[1]}, got {b.shape[0]}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: {a.dtype} != {b.dtype}")


def mm_sparse(self: Any, mat2: Any) -> Any:
    _mm_check(self, mat2)
    out, sparse_result = _mm_arrays(self, mat2)
    dt = self._data.dtype
    if sparse_result:
        idx, vals = out
        return new_coo(idx, vals.astype(dt), (self.shape[0], mat2.shape[1]), True, self._device)
    return dense(out.astype(dt, copy=False), self._device)


def bmm_sparse(self: Any, mat2: Any) -> Any:
    """A batch of sparse matrices (COO, 3 sparse dims) times a batch of dense ones: one SciPy product of the
    block-diagonal matrix the batch makes (rows ``b * n + i``, columns ``b * m + j``) with the stacked ``mat2``."""
    if is_sparse_layout(mat2):
        raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
    if self.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(f"bmm_sparse: Expected 3-D tensors, but got {self.dim()}-D and {mat2.dim()}-D")
    nb, n, m = self._data.shape
    if mat2.shape[0] != nb or mat2.shape[1] != m:
        raise RuntimeError(f"bmm_sparse: expected mat2 of size ({nb}, {m}, *), got {list(mat2.shape)}")
    if dense_dim_of(self) != 0:
        raise RuntimeError("bmm_sparse: a sparse batch with dense dimensions is not supported")
    idx, vals = coalesced_parts(self)
    flat = new_coo(np.vstack([idx[0] * n + idx[1], idx[0] * m + idx[2]]), vals, (nb * n, nb * m), True,
                   self._device)
    out = _sparse_times_dense(flat, mat2._data.reshape(nb * m, -1))
    return dense(np.ascontiguousarray(out.reshape(nb, n, -1)).astype(self._data.dtype, copy=False), self._device)


def mv_sparse(self: Any, vec: Any) -> Any:
    if vec.dim() != 1 or self.dim() != 2:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.dim()}, {self.dim()}, {vec.dim()}")
    if self.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), "
                           f"vec ({vec.shape[0]})")
    out = _sparse_times_dense(self, vec._data[:, None])[:, 0]
    return dense(out.astype(self._data.dtype, copy=False), self._device)


def addmm_sparse(self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * self + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` or ``mat2`` and a dense ``self``."""
    _mm_check(mat1, mat2)
    if is_sparse_layout(self):
        raise RuntimeError("addmm: computation on CPU is not implemented for Sparse + Strided @ Strided"
                           if not is_sparse_layout(mat1) else
                           "addmm: computation on CPU is not implemented for Sparse + Sparse @ Strided")
    out, sparse_result = _mm_arrays(mat1, mat2)
    if sparse_result:
        idx, vals = out
        out = to_dense_array(new_coo(idx, vals, (mat1.shape[0], mat2.shape[1]), True, mat1._device))
    shape = (mat1.shape[0], mat2.shape[1])
    base = np.broadcast_to(self._data, shape)
    res = out * alpha if alpha != 1 else out
    if beta != 0:
        res = res + (base * beta if beta != 1 else base)
    return dense(np.ascontiguousarray(res).astype(mat1._data.dtype, copy=False), mat1._device)


def sparse_addmm(self: Any, mat1: Any, mat2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    """``_sparse_addmm`` (``torch.sparse.addmm``): addmm whose gradient for the sparse ``mat1`` keeps its pattern."""
    if not is_sparse_layout(mat1):
        raise RuntimeError("torch.sparse.addmm: mat1 must be a sparse COO tensor")
    return addmm_sparse(self, mat1, mat2, beta, alpha)


def sparse_mm(sparse: Any, dense_: Any) -> Any:
    """``_sparse_mm`` (``torch.sparse.mm``): sparse x sparse is sparse; sparse x dense is ``_sparse_addmm`` onto
    zeros, whose gradient for the sparse operand is masked by its pattern."""
    if is_sparse_layout(sparse) and is_sparse_layout(dense_):
        return aten.mm(sparse, dense_)
    if not is_sparse_layout(sparse):
        return aten.mm(sparse, dense_)
    zeros = aten.zeros((sparse.shape[0], dense_.shape[1]), dtype=dense_.dtype, device=dense_.device)
    return aten._sparse_addmm(zeros, sparse, dense_, beta=0, alpha=1)


# -- masks and sums ------------------------------------------------------------------------------------------------
def sparse_mask_sparse(self: Any, mask: Any) -> Any:
    """``self.sparse_mask(mask)``: ``self``'s values at ``mask``'s indices, as a tensor with ``mask``'s indices."""
    if not is_sparse_layout(mask):
        raise RuntimeError("sparse_mask(): expected mask to be a sparse COO tensor")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} but "
                           f"mask has size {list(mask.shape)}")
    mp = parts(mask)
    if is_sparse_layout(self):
        sd = mp.indices.shape[0]
        si, sv = coalesced_parts(self)
        sizes = self._data.shape[:sd]
        lin_self, lin_mask = linear_index(si, sizes), linear_index(mp.indices, sizes)
        pos = np.searchsorted(lin_self, lin_mask)
        pos_c = np.minimum(pos, max(len(lin_self) - 1, 0))
        found = (pos < len(lin_self)) & (lin_self[pos_c] == lin_mask) if len(lin_self) else \
            np.zeros(len(lin_mask), bool)
        vals = np.zeros((len(lin_mask),) + sv.shape[1:], sv.dtype)
        vals[found] = sv[pos_c[found]]
    else:
        vals = np.ascontiguousarray(self._data[tuple(mp.indices)])
    return new_coo(mp.indices.copy(), vals, self._data.shape, mp.coalesced, self._device)


def sparse_sum(self: Any) -> Any:
    """``torch.sparse.sum(t)``: the sum of the coalesced values (differentiable through ``values``)."""
    return aten.sum(aten.values(aten.coalesce(self)))


def sparse_sum_dtype(self: Any, dtype: Any) -> Any:
    return aten.sum(aten.values(aten.coalesce(self)), dtype=dtype)


def sparse_sum_dim(self: Any, dim: Sequence[int]) -> Any:
    """The sum over ``dim``: dense when every sparse dim is summed, else a coalesced COO tensor over the others."""
    n = self.dim()
    dims = sorted({d % n for d in dim})
    if len(dims) != len(dim):
        raise RuntimeError("dim list has duplicates")   # wording of PyTorch's sparse sum
    p = parts(self)
    sd = p.indices.shape[0]
    sparse_dims = [d for d in dims if d < sd]
    dense_axes = tuple(d - sd + 1 for d in dims if d >= sd)
    vals = p.values.sum(axis=dense_axes) if dense_axes else p.values
    if vals.dtype.kind in "biu":
        vals = vals.astype(np.int64)
    kept = [d for d in range(sd) if d not in sparse_dims]
    out_dense = [self._data.shape[d] for d in range(sd, n) if d not in dims]
    if not kept:
        return dense(np.ascontiguousarray(vals.sum(axis=0)), self._device)
    size = [self._data.shape[d] for d in kept] + out_dense
    idx, vals = coalesce_arrays(p.indices[kept], vals, size[:len(kept)])
    return new_coo(idx, vals, size, True, self._device)


def sparse_sum_dim_dtype(self: Any, dim: Sequence[int], dtype: Any) -> Any:
    return sparse_sum_dim(aten._to_copy(self, dtype=dtype), dim)


def sum_dim_sparse(self: Any, dim: Any, keepdim: bool = False, dtype: Any = None) -> Any:
    """``Tensor.sum(dim)`` of a COO tensor: ``torch.sparse.sum``'s result (PyTorch keeps no dims of a sparse sum)."""
    if keepdim:
        raise RuntimeError("sum(sparse, keepdim=True) is not supported")
    t = aten._to_copy(self, dtype=dtype) if dtype is not None else self
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return sparse_sum(t)
    dims = [dim] if isinstance(dim, int) else list(dim)
    out = sparse_sum_dim(t, dims)
    return out


def sparse_sum_backward(grad: Any, self: Any, dim: Sequence[int]) -> Any:
    """``_sparse_sum_backward``: the gradient of each stored element of ``self`` (coalesced), a COO tensor with its
    indices, read from ``grad`` (dense when every sparse dim was summed, else COO over the kept dims)."""
    n = self.dim()
    dims = sorted({d % n for d in dim})
    idx, _ = coalesced_parts(self)
    sd = idx.shape[0]
    kept = [d for d in range(sd) if d not in dims]
    dense_dims = [d for d in range(sd, n) if d not in dims]
    g = to_dense_array(grad) if is_sparse_layout(grad) else grad._data
    rows = g[tuple(idx[kept])] if kept else np.broadcast_to(g, (idx.shape[1],) + g.shape)
    # rows: [nnz, *kept dense sizes]; broadcast back over the summed dense dims
    shape = [idx.shape[1]] + [self._data.shape[d] for d in range(sd, n)]
    rows = rows.reshape([idx.shape[1]] + [self._data.shape[d] if d in dense_dims else 1 for d in range(sd, n)])
    vals = np.ascontiguousarray(np.broadcast_to(rows, shape))
    return new_coo(idx.copy(), vals, self._data.shape, True, self._device)


# -- softmax over the stored elements --------------------------------------------------------------------------------
def _softmax_lines(self: Any, dim: int) -> tuple[Any, Any, Any, int]:
    """The coalesced parts of ``self`` and, for a sparse ``dim``, each stored element's line: the elements that
    share every sparse index but ``dim`` (None for a dense ``dim``, whose lines lie within each value row)."""
    n = self.dim()
    dim = dim % n
    idx, vals = coalesced_parts(self)
    sd = idx.shape[0]
    if dim >= sd:
        return idx, vals, None, dim - sd + 1
    others = [d for d in range(sd) if d != dim]
    key = linear_index(idx[others], [self._data.shape[d] for d in others])
    return idx, vals, np.unique(key, return_inverse=True)[1].reshape(-1), 0


def _line_sum(x: Any, line: Any, axis: int) -> Any:
    """Each element's line total, broadcast back to the elements."""
    if line is None:
        return x.sum(axis=axis, keepdims=True)
    out = np.zeros((int(line.max()) + 1 if line.size else 0,) + x.shape[1:], x.dtype)
    np.add.at(out, line, x)
    return out[line]


def _sparse_softmax(self: Any, dim: int, log: bool) -> Any:
    idx, vals, line, axis = _softmax_lines(self, dim)
    if line is None:
        top = vals.max(axis=axis, keepdims=True) if vals.size else vals
    else:
        top = np.full((int(line.max()) + 1 if line.size else 0,) + vals.shape[1:], -np.inf, vals.dtype)
        np.maximum.at(top, line, vals)
        top = top[line]
    shifted = vals - top
    e = np.exp(shifted)
    total = _line_sum(e, line, axis)
    out = shifted - np.log(total) if log else e / total
    return new_coo(idx.copy(), out.astype(vals.dtype, copy=False), self._data.shape, True, self._device)


def softmax_sparse_cpu(self: Any, dim: int, half_to_float: bool = False) -> Any:
    return _sparse_softmax(self, dim, False)


def log_softmax_sparse_cpu(self: Any, dim: int, half_to_float: bool = False) -> Any:
    return _sparse_softmax(self, dim, True)


def _softmax_backward(grad_output: Any, output: Any, dim: int, log: bool) -> Any:
    idx, out, line, axis = _softmax_lines(output, dim)
    g = sparse_mask_sparse(grad_output, output)      # the gradient at the output's (coalesced) indices
    gv = parts(g).values
    if log:
        res = gv - np.exp(out) * _line_sum(gv, line, axis)
    else:
        res = out * (gv - _line_sum(gv * out, line, axis))
    return new_coo(idx.copy(), res.astype(out.dtype, copy=False), output._data.shape, True, output._device)


def softmax_backward_sparse_cpu(grad_output: Any, output: Any, dim: int, self: Any) -> Any:
    return _softmax_backward(grad_output, output, dim, False)


def log_softmax_backward_sparse_cpu(grad_output: Any, output: Any, dim: int, self: Any) -> Any:
    return _softmax_backward(grad_output, output, dim, True)
