"""Linear-algebra ops written in other ops (``LinearAlgebra.cpp``): matmul's decomposition into dot / mv /
mm / bmm, inner, cross, pinverse, linalg.norm."""
from __future__ import annotations

import math

import numpy as np
from typing import Any, Callable

from ember import return_types
from ember._generated import aten
from ember.aten.kernels._common import wrap_dim
from ember.aten.kernels.linalg import _matmul_check
from ember.aten.meta import broadcast_shapes
from ember.aten.backends import CPU_BACKEND, CUDA_BACKEND
from ember.aten.dispatcher import is_tensor_subclass_like, tls
from ember.aten.wrap import new_tensor
from ember.c10.dtype import scalar_type_name
from ember.aten.math_bits import values_of
from ember.c10.dispatch_key import DispatchKey
from ember.c10.dtype import bool_, finfo, float64, int64
from ember.c10 import forward_mode as _fw
from ember.c10.memory_format import contiguous_format
from ember.c10.exceptions import _LinAlgError, warn_once
from ember.aten.kernels.linalg import _LINALG_FAILURES, _LU_ERROR, _raise_first_failure


def linalg_norm(self: Any, ord: Any = None, dim: Any = None, keepdim: Any = False, dtype: Any = None) -> Any:
    if isinstance(ord, str) or (ord is not None and dim is not None and len(dim) == 2) or \
            (ord is not None and dim is None and self.dim() == 2):
        matrix_norm: Callable[..., Any] = aten.linalg_matrix_norm_str_ord if isinstance(ord, str) else \
            aten.linalg_matrix_norm
        return matrix_norm(self, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
    return aten.linalg_vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def _sumproduct_pair(left: Any, right: Any, sum_dims: list[int], keepdim: bool) -> Any:
    """``(left * right).sum(sum_dims)`` of two operands of equal rank (broadcast dims of size 1), as one ``bmm``:
    both permuted to (kept by both, kept by one, summed) and reshaped to 3-d, the product viewed back and
    permuted to the original dim order (Linear.cpp's sumproduct_pair)."""
    if not sum_dims:
        return aten.mul_Tensor(left, right)
    dim = left.dim()
    summed = set(sum_dims)
    lro: list[int] = []
    lo: list[int] = []
    ro: list[int] = []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(dim):
        sl, sr = left.shape[i] != 1, right.shape[i] != 1
        if i in summed:
            if sl and sr:
                if left.shape[i] != right.shape[i]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= left.shape[i]
            elif sl:  # in one operand only: summed right away
                left = left.sum(i, True)
            elif sr:
                right = right.sum(i, True)
        elif sl and sr:
            if left.shape[i] != right.shape[i]:
                raise RuntimeError("non-broadcast dimensions must match")
            lro.append(i)
            lro_size *= left.shape[i]
        elif sl:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    out_size = ([left.shape[d] for d in lro] + [left.shape[d] for d in lo] + [1] * len(sum_dims)
                + [right.shape[d] for d in ro])
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [0] * len(out_size)
    for i, d in enumerate(lro + lo + list(sum_dims) + ro):
        operm[d] = i
    left = aten.reshape(left.permute(lperm), (lro_size, lo_size, sum_size))
    right = aten.reshape(right.permute(rperm), (lro_size, sum_size, ro_size))
    result = aten.bmm(left, right).view(out_size).permute(operm)
    if not keepdim:
        result = result.view([n for i, n in enumerate(result.shape) if i not in summed])
    return result


_LETTERS = 26


def _subscript(label: str) -> int:
    return ord(label) - ord("A") if label.isupper() else ord(label) - ord("a") + _LETTERS


def einsum(equation: str, tensors: Any, path: Any = None) -> Any:
    """Einstein summation as PyTorch's Linear.cpp computes it: the labels parsed; each operand's repeated labels
    taken as diagonals, its missing labels unsqueezed and its dims permuted to (output labels, contracted labels);
    the operands contracted pairwise, left to right (or in ``path``'s order), each pair by one ``bmm`` after
    summing the dims no later operand shares; the contracted dims dropped at the end."""
    n_ops = len(tensors)
    if n_ops == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    if path is not None:
        want = 1 if n_ops == 1 else (n_ops - 1) * 2
        if len(path) != want:
            raise RuntimeError(f"einsum(): expected contraction path given in path parameter to have size {want} but "
                               f"got {len(path)}")
    ellipsis = 2 * _LETTERS
    lhs, arrow, rhs = equation.partition("->")
    op_labels: list[list[int]] = [[] for _ in range(n_ops)]
    current, ell_in_input, i = 0, False, 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if ell_in_input:
                raise RuntimeError(f"einsum(): found '.' for operand {current} for which an ellipsis was already "
                                   "found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {current} that is not part of any ellipsis")
            i += 2
            op_labels[current].append(ellipsis)
            ell_in_input = True
        elif c == ",":
            current += 1
            if current >= n_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            ell_in_input = False
        else:
            if not (c.isascii() and c.isalpha()):
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            op_labels[current].append(_subscript(c))
        i += 1
    if current != n_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    label_count = [0] * ellipsis
    ell_num_dim = 0
    for k, (op, labels) in enumerate(zip(tensors, op_labels)):
        nlabels = len(labels) - (ellipsis in labels)
        if ellipsis in labels:
            ell_num_dim = max(ell_num_dim, op.dim() - nlabels)
        for s in labels:
            if s != ellipsis:
                label_count[s] += 1
        has_ell = ellipsis in labels
        if (nlabels > op.dim()) if has_ell else (nlabels != op.dim()):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlabels}) "
                               + ("is more than the number of dimensions" if has_ell else
                                  "does not match the number of dimensions")
                               + f" ({op.dim()}) for operand {k}" + ("" if has_ell else " and no ellipsis was given"))
    perm_of = [-1] * ellipsis
    perm_index = ell_index = 0
    ell_in_output = False
    if not arrow:  # implicit output: the ellipsis, then the labels seen once, in order
        perm_index, ell_in_output = ell_num_dim, True
        for s in range(ellipsis):
            if label_count[s] == 1:
                perm_of[s] = perm_index
                perm_index += 1
    else:
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == ".":
                if ell_in_output:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
                i += 2
                ell_index, ell_in_output = perm_index, True
                perm_index += ell_num_dim
            elif c != " ":
                if not (c.isascii() and c.isalpha()):
                    raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the "
                                       "equation string, subscripts must be in [a-zA-Z]")
                s = _subscript(c)
                if not (label_count[s] > 0 and perm_of[s] == -1):
                    raise RuntimeError(f"einsum(): output subscript {c}" + (
                        " appears more than once in the output" if perm_of[s] > -1 else
                        " does not appear in the equation for any input operand"))
                perm_of[s] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for s in range(ellipsis):
        if label_count[s] > 0 and perm_of[s] == -1:
            perm_of[s] = perm_index
            perm_index += 1
    if _einsum_unobserved(tensors, op_labels, ellipsis):
        return _einsum_direct(equation, tensors)
    label_size = [1] * ellipsis
    ell_sizes = [1] * ell_num_dim
    dim_counts = [0] * perm_index
    ops: list[Any] = []
    for k, (op, labels) in enumerate(zip(tensors, op_labels)):
        permutation = [-1] * perm_index
        dim = 0
        for s in labels:
            if s == ellipsis:
                ndim = tensors[k].dim() - (len(labels) - 1)
                for j in range(ell_num_dim - ndim, ell_num_dim):
                    if op.shape[dim] != 1:
                        if ell_sizes[j] not in (1, op.shape[dim]):
                            raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {k}has size "
                                               f"{op.shape[dim]} which does not broadcast with previously seen "
                                               f"ellipsis with size {ell_sizes[j]} for the respective dimension")
                        ell_sizes[j] = op.shape[dim]
                        dim_counts[ell_index + j] += 1
                    permutation[ell_index + j] = dim
                    dim += 1
            elif permutation[perm_of[s]] == -1:
                if op.shape[dim] != 1:
                    if label_size[s] not in (1, op.shape[dim]):
                        label = chr(s + ord("A")) if s < _LETTERS else chr(s - _LETTERS + ord("a"))
                        raise RuntimeError(f"einsum(): subscript {label} has size {op.shape[dim]} for operand {k} "
                                           f"which does not broadcast with previously seen size {label_size[s]}")
                    label_size[s] = op.shape[dim]
                    dim_counts[perm_of[s]] += 1
                permutation[perm_of[s]] = dim
                dim += 1
            else:  # a repeated label: its diagonal
                prev = permutation[perm_of[s]]
                if op.shape[dim] != op.shape[prev]:
                    label = chr(s + ord("A")) if s < _LETTERS else chr(s - _LETTERS + ord("a"))
                    raise RuntimeError(f"einsum(): subscript {label} is repeated for operand {k} but the sizes don't "
                                       f"match, {op.shape[dim]} != {op.shape[prev]}")
                op = op.diagonal(0, prev, dim).movedim(-1, prev)
        for idx, val in enumerate(permutation):
            if val == -1:
                op = op.unsqueeze(dim)
                permutation[idx] = dim
                dim += 1
        ops.append(op.permute(permutation))
    steps = list(path) if path is not None else []
    while len(ops) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = steps.pop(0), steps.pop(0)
            if j < i:
                i, j = j, i
            if not (i != j and i >= 0 and j < len(ops)):
                raise RuntimeError(f"einsum(): invalid contraction ({i}, {j})" + (
                    " cannot contract an operand with itself" if i == j else " operand index is out of bounds"))
        a, b = ops[i], ops[j]
        del ops[j]
        del ops[i]
        sum_dims: list[int] = []
        a_sum: list[int] = []
        b_sum: list[int] = []
        for d in range(out_num_dim, perm_index):
            if a.shape[d] != 1 and b.shape[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if a.shape[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif b.shape[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = a.sum(a_sum, True)
        if b_sum:
            b = b.sum(b_sum, True)
        pair = _sumproduct_pair(a, b, sum_dims, True)
        if path is not None:
            ops.append(pair)
        else:
            ops.insert(0, pair)
    if perm_index - out_num_dim > 0:
        if n_ops > 1:
            return ops[0].view(list(ops[0].shape[:out_num_dim]))
        return ops[0].sum(list(range(out_num_dim, perm_index)))
    return ops[0]


_AUTOCAST_BITS = (1 << DispatchKey.AutocastCPU) | (1 << DispatchKey.AutocastCUDA)


def _einsum_unobserved(tensors: Any, op_labels: list[list[int]], ellipsis: int) -> bool:
    """Whether nothing can tell how einsum computes its result: no dispatch mode or tensor subclass to see the
    operators, no gradient to record, no autocast to cast them, one dtype and device, and no label broadcast from
    size 1 (which NumPy's einsum does not do). Then one ``einsum`` of the array library gives the values the
    operators would (to rounding), without their dispatch overhead."""
    if is_tensor_subclass_like(*tensors) or tls.keys[1] & _AUTOCAST_BITS:
        return False
    first = tensors[0]
    if _fw.may_differentiate(*tensors):
        return False
    if any(t.dtype is not first.dtype or t.device != first.device for t in tensors) or first.device.type == "meta":
        return False
    sizes: dict[int, int] = {}
    for t, labels in zip(tensors, op_labels):
        if ellipsis in labels:
            return False
        for s, n in zip(labels, t.shape):
            if sizes.setdefault(s, n) != n:
                return False
    return True


def _einsum_direct(equation: str, tensors: Any) -> Any:
    be = CPU_BACKEND if tensors[0].device.type == "cpu" else CUDA_BACKEND
    arrays = [values_of(t)._data for t in tensors]      # (a lazy conjugate's values; Note [Math bits])
    out = be.xp.asarray(be.xp.einsum(equation.replace(" ", ""), *arrays, optimize=True))
    return new_tensor(out.astype(arrays[0].dtype, copy=False), be.ks, tensors[0].device)


def tensordot(self: Any, other: Any, dims_self: Any, dims_other: Any) -> Any:
    """The sum over the paired dims of the product, as one ``mm`` of the two permuted into (kept, contracted) and
    (contracted, kept) matrices; a contracted dim of size 1 on one side is summed on the other first (Linear.cpp)."""
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    if self.dtype != other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    t1, t2, csize = self, other, 1
    for d1, d2 in zip(dims_self, dims_other):
        s1, s2 = self.size(d1), other.size(d2)
        if s2 == 1:             # a broadcast dim: summed right away
            t1 = aten.sum_dim_IntList(t1, (d1,), True, dtype=t1.dtype)
        elif s1 == 1:
            t2 = aten.sum_dim_IntList(t2, (d2,), True, dtype=t2.dtype)
        elif s1 != s2:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in dim {d1} and second "
                               f"has size {s2} in dim {d2}")
        else:
            csize *= s1
    c1 = {d % self.dim() for d in dims_self} if self.dim() else set(dims_self)
    c2 = {d % other.dim() for d in dims_other} if other.dim() else set(dims_other)
    kept1 = [i for i in range(self.dim()) if i not in c1]
    kept2 = [i for i in range(other.dim()) if i not in c2]
    size1 = math.prod(t1.shape[i] for i in kept1)
    size2 = math.prod(t2.shape[i] for i in kept2)
    rsizes = [t1.shape[i] for i in kept1] + [t2.shape[i] for i in kept2]
    t1 = t1.permute(kept1 + list(dims_self)).reshape(size1, csize)
    t2 = t2.permute(list(dims_other) + kept2).reshape(csize, size2)
    return aten.mm(t1, t2).reshape(rsizes)


def kron(self: Any, other: Any) -> Any:
    """The Kronecker product: each operand viewed with its dims interleaved with size-1 ones, multiplied by
    broadcasting, the product viewed back (LinearAlgebra.cpp's KronImpl)."""
    maxdim = max(self.dim(), other.dim())
    pad_self, pad_other = maxdim - self.dim(), maxdim - other.dim()
    a_shape, b_shape, out_shape = [], [], []
    for i in range(maxdim):
        a = self.shape[i - pad_self] if i >= pad_self else 1
        b = other.shape[i - pad_other] if i >= pad_other else 1
        a_shape += [a, 1]
        b_shape += [1, b]
        out_shape.append(a * b)
    product = aten.mul_Tensor(aten._unsafe_view(self, tuple(a_shape)), aten._unsafe_view(other, tuple(b_shape)))
    return aten._unsafe_view(product, tuple(out_shape))


def cdist(x1: Any, x2: Any, p: float = 2.0, compute_mode: Any = None) -> Any:
    """The p-norm distance of every row of ``x1`` to every row of ``x2`` (batched): ``_cdist_forward``, or for
    p = 2 on large inputs (or ``compute_mode=1``) the matrix-product form ``_euclidean_dist`` on the inputs
    expanded to one batch dimension (Distance.cpp)."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    r1, r2, c = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    mode = 0 if compute_mode is None else compute_mode
    if x1.numel() == 0 or x2.numel() == 0 or not (p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))):
        return aten._cdist_forward(x1, x2, p, compute_mode)
    batch = list(broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    nbatch = math.prod(batch)
    out_shape = tuple(batch) + (r1, r2)
    if c == 0:
        return aten.zeros(out_shape, dtype=x1.dtype, device=x1.device)
    if nbatch == 1:
        return aten._euclidean_dist(x1, x2).view(out_shape)
    a = x1.expand(tuple(batch) + (r1, c)).reshape(nbatch, r1, c)
    b = x2.expand(tuple(batch) + (r2, c)).reshape(nbatch, r2, c)
    return aten._euclidean_dist(a, b).view(out_shape)


def linalg_eigh(self: Any, UPLO: str = "L") -> Any:
    return return_types.linalg_eigh(*aten._linalg_eigh(self, UPLO, True))


def linalg_eigvalsh(self: Any, UPLO: str = "L") -> Any:
    """The eigenvalues; the eigenvectors are computed too when a gradient may be asked for (its formula needs
    them), as PyTorch's ``_may_require_fw_or_bw_grad``."""
    return aten._linalg_eigh(self, UPLO, _fw.may_differentiate(self))[0]


def pdist_forward(self: Any, p: float = 2.0) -> Any:
    """The p-norm distances between the rows, pair by pair (i < j), row-major."""
    n = self.shape[0]
    i, j = aten.triu_indices(n, n, 1, device=self.device).unbind(0)
    return aten.linalg_vector_norm(self.index_select(0, i) - self.index_select(0, j), p, (-1,), False)


def inner(self: Any, other: Any) -> Any:
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    return aten.tensordot(self, other, (-1,), (-1,))


def cross(self: Any, other: Any, dim: Any = None) -> Any:
    if dim is None:
        dim = next((i for i, s in enumerate(self.shape) if s == 3), -1)
    return aten.linalg_cross(self, other, dim=dim)


def pinverse(self: Any, rcond: Any = 1e-15) -> Any:
    return aten.linalg_pinv(self, rcond, False)


def _tolerances_from_floats(A: Any, atol: Any, rtol: Any) -> Any:
    """PyTorch's get_atol_rtol for Python tolerances, as double 0-dim tensors: atol 0 when not given; rtol
    eps * max(m, n) when not given, 0 when only a positive atol is."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else finfo(A.dtype.to_real()).eps * max(A.shape[-2], A.shape[-1])
    atol = 0.0 if atol is None else atol
    return (aten.full((), atol, dtype=float64, device=A.device), aten.full((), rtol, dtype=float64, device=A.device))


def _tolerances_from_tensors(A: Any, atol: Any, rtol: Any, api: str) -> Any:
    """PyTorch's get_atol_rtol for tensor tolerances: atol zeros({}) when not given; rtol eps * max(m, n) when not
    given, or where(atol > 0, 0, that) when atol is."""
    given = atol
    atol = aten.zeros((), dtype=float64, device=A.device) if atol is None else atol
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if tol is not None and tol.is_complex():
            raise RuntimeError(f"{api}: {name} tensor of complex type is not supported.")
    if rtol is None:
        default = aten.full((), finfo(A.dtype.to_real()).eps * max(A.shape[-2], A.shape[-1]), dtype=float64,
                            device=A.device)
        rtol = default if given is None else aten.where_self(given > 0, aten.zeros((), dtype=float64,
                                                                                    device=A.device), default)
    return atol, rtol


def linalg_pinv_atol_rtol_float(self: Any, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Any:
    atol_t, rtol_t = _tolerances_from_floats(self, atol, rtol)
    return aten.linalg_pinv_atol_rtol_tensor(self, atol=atol_t, rtol=rtol_t, hermitian=hermitian)


def linalg_pinv_rcond(self: Any, rcond: float, hermitian: bool = False) -> Any:
    """``linalg.pinv(A, rcond)``: rcond is the relative tolerance (NumPy's meaning)."""
    return aten.linalg_pinv_atol_rtol_float(self, atol=0.0, rtol=rcond, hermitian=hermitian)


def linalg_pinv_rcond_tensor(self: Any, rcond: Any, hermitian: bool = False) -> Any:
    if rcond.is_complex():
        raise RuntimeError("torch.linalg.pinv: rcond tensor of complex type is not supported.")
    return aten.linalg_pinv_atol_rtol_tensor(self, atol=aten.zeros((), dtype=float64, device=self.device),
                                             rtol=rcond, hermitian=hermitian)


def outer(self: Any, vec2: Any) -> Any:
    """``self[:, None] * vec2`` (PyTorch's ``outer``: a ``view`` and a ``mul``)."""
    if self.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {self.dim()}-D" if self.dim() != 1 else
                           f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    return aten.mul_Tensor(aten.reshape(self, (self.shape[0], 1)), vec2)


def _should_fold(t1: Any, t2: Any) -> bool:
    """PyTorch's ``should_fold``: whether ``matmul`` folds the larger operand (3-d or more, against a matrix or a
    vector) into a matrix and calls ``mm`` / ``mv`` instead of ``bmm``. It does when the folding is a view, and
    always when the smaller operand requires grad (a copy then saves a batch-sized tensor in the backward)."""
    larger_first = t1.dim() >= t2.dim()
    big = t1 if larger_first else aten.transpose_int(t2, -2, -1)
    small_dim = t2.dim() if larger_first else t1.dim()
    if not (big.dim() >= 3 and small_dim <= 2):
        return False
    if (t2 if larger_first else t1).requires_grad:
        return True
    if t1.dim() == 2:
        return False
    if big.numel() == 0:
        return True
    shape, strides = big.shape, big.stride()
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(big.dim() - 2))


def matmul(self: Any, other: Any) -> Any:
    """PyTorch's ``matmul`` decomposition (``_matmul_impl``): ``dot``, ``mv``, ``mm``; a folded ``mm`` / ``mv``
    when one operand is a batch against a matrix or vector (``_should_fold``); else both operands expanded to the
    broadcast batch, flattened to one batch dimension and multiplied by ``bmm``. Results that were computed into a
    fresh tensor are reshaped through ``_unsafe_view``, as PyTorch's are."""
    da, db = self._data.ndim, other._data.ndim
    if da == 2 and db == 2:                 # mm's checks word matmul's errors for two matrices
        return aten.mm(self, other)
    _matmul_check(self._data, other._data)  # PyTorch's errors for every rank combination
    if da == 1 and db == 1:
        return aten.dot(self, other)
    if da == 2 and db == 1:
        return aten.mv(self, other)
    if da == 1 and db == 2:
        return aten.squeeze__dim(aten.mm(aten.unsqueeze(self, 0), other), 0)
    if _should_fold(self, other):
        transpose = db > da
        t1 = aten.transpose_int(other, -2, -1) if transpose else self
        t2 = (aten.t(self) if da == 2 else self) if transpose else other
        out_shape = tuple(t1.shape[:-1])
        folded = aten.reshape(t1, (math.prod(out_shape), t1.shape[-1]))
        if t2.dim() == 2:
            out = aten._unsafe_view(aten.mm(folded, t2), out_shape + (t2.shape[1],))
            return aten.clone(aten.transpose_int(out, -2, -1), memory_format=contiguous_format) if transpose else out
        return aten._unsafe_view(aten.mv(folded, t2), out_shape)
    n = self.shape[-2] if da > 1 else 1
    m1 = self.shape[-1]
    m2 = other.shape[-2] if db > 1 else other.shape[0]
    p = other.shape[-1] if db > 1 else 1
    batch = broadcast_shapes(tuple(self.shape[:max(da - 2, 0)]), tuple(other.shape[:max(db - 2, 0)]))
    b = math.prod(batch)
    a3 = aten.reshape(aten.expand(self, batch + (n, m1)), (b, n, m1))
    if db == 1:
        b3 = aten.unsqueeze(aten.reshape(aten.expand(other, batch + (m2,)), (b, m2)), 2)
    else:
        b3 = aten.reshape(aten.expand(other, batch + (m2, p)), (b, m2, p))
    out_shape = batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ())
    prod = aten.bmm(a3, b3)
    return aten._unsafe_view(aten.squeeze_dim(prod, -1) if db == 1 else prod, out_shape)


# ---- the operators PyTorch writes as an *_ex operator followed by ``_linalg_check_errors`` (BatchLinearAlgebra.cpp)
# the message of a positive ``info`` by the API's name (PyTorch's order of checks), and the error it raises; the
# kernels' own table words inv, solve and cholesky
_CHECK_MESSAGES = (("inv", _LINALG_FAILURES["inv"][2], _LinAlgError),
                   ("solve", _LINALG_FAILURES["solve"][2], _LinAlgError),
                   ("cholesky", _LINALG_FAILURES["cholesky"][2], _LinAlgError),
                   ("svd", "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                           "many repeated singular values (error code: {info}).", _LinAlgError),
                   ("eig", "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                           "many repeated eigenvalues (error code: {info}).", _LinAlgError),
                   ("lstsq", "The least squares solution could not be computed because the input matrix does not "
                             "have full rank (error code: {info}).", _LinAlgError),
                   ("lu_factor", _LU_ERROR, RuntimeError))


def _linalg_check_errors(info: Any, api_name: str, is_matrix: bool) -> None:
    """PyTorch's error for the first nonzero LAPACK ``info`` (the batch element named unless ``is_matrix``), worded
    by the API (``linalg.inv``: a zero pivot; ``cholesky``: the failing leading minor; ...); a code no API words
    (an LDL factorization's singular D) is reported as unknown."""
    if info.device.type == "meta" or info.numel() == 0:
        return None
    codes = np.asarray(info._data.get() if hasattr(info._data, "get") else info._data)
    codes = codes.reshape(()) if is_matrix else codes
    bad = np.flatnonzero(codes)
    if not bad.size:
        return None
    code = int(codes.reshape(-1)[bad[0]])
    found = next(((m, e) for key, m, e in _CHECK_MESSAGES if key in api_name), None)
    if code < 0 or found is None:
        raise RuntimeError(f"{api_name}: Argument {-code} has illegal value. Most certainly there is a bug in the "
                           "implementation calling the backend library." if code < 0 else
                           f"{api_name}: Unknown error code: {code}.")
    _raise_first_failure(api_name, codes, found[0], found[1])


def linalg_inv(A: Any) -> Any:
    inverse, info = aten.linalg_inv_ex(A)
    aten._linalg_check_errors(info, "linalg.inv", is_matrix=A.dim() == 2)
    return inverse


def inverse(self: Any) -> Any:
    return aten.linalg_inv(self)


def linalg_det(A: Any) -> Any:
    """The determinant, from ``_linalg_det`` (which keeps the LU factors its derivative reuses)."""
    return aten._linalg_det(A)[0]


def det(self: Any) -> Any:
    return aten.linalg_det(self)


def linalg_slogdet(A: Any) -> Any:
    sign, logabsdet, _, _ = aten._linalg_slogdet(A)
    return return_types.linalg_slogdet(sign, logabsdet)


def slogdet(self: Any) -> Any:
    return return_types.slogdet(*aten.linalg_slogdet(self))


def linalg_svd(A: Any, full_matrices: bool = True, driver: Any = None) -> Any:
    return return_types.linalg_svd(*aten._linalg_svd(A, full_matrices, True, driver=driver))


def linalg_svdvals(A: Any, driver: Any = None) -> Any:
    """The singular values; the vectors are computed too when a gradient may be asked for (its formula needs
    them)."""
    return aten._linalg_svd(A, False, _fw.may_differentiate(A), driver=driver)[1]


def _dims_last(d0: int, d1: int, ndim: int) -> list[int]:
    """PyTorch's create_dim_backshift_permutation: the other dims in order, then d0, d1."""
    return [i for i in range(ndim) if i not in (d0, d1)] + [d0, d1]


def _inverse_permutation(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _matrix_norm_checks(A: Any, dim: Any, dtype: Any, low_precision: bool) -> list[int]:
    """PyTorch's _linalg_matrix_norm_checks: A a (batch of) floating or complex matrices, two different dims; the
    dims wrapped."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_type_name(A.dtype)}")
    if not low_precision and A.dtype.itemsize == 2 and not A.is_complex():
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {scalar_type_name(A.dtype)}")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {', '.join(map(str, dim))}")
    d = [wrap_dim(x, A.dim()) for x in dim]
    if d[0] == d[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d[0]}, {d[1]})")
    return d


def _cpp_double(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and x == int(x) else str(x)


def linalg_matrix_norm(self: Any, ord: Any, dim: Any = (-2, -1), keepdim: bool = False,  # noqa: A002
                       dtype: Any = None) -> Any:
    """The 2-norms from the singular values (their largest / smallest), the 1- and inf-norms as the largest /
    smallest column / row sum of |A| (a vector 1-norm then amax / amin), as LinearAlgebra.cpp writes them."""
    o = float(ord)
    if abs(o) not in (1.0, 2.0, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_cpp_double(o)} not supported.")
    d = _matrix_norm_checks(self, dim, dtype, abs(o) != 2.0)

    def max_min(x: Any, along: int) -> Any:
        return x.amax(along, keepdim) if o > 0 else x.amin(along, keepdim)
    if abs(o) == 2.0:
        perm = _dims_last(d[0], d[1], self.dim())
        A = self.to(dtype) if dtype is not None else self
        result = max_min(aten.linalg_svdvals(A.permute(perm)), -1)
        return result.unsqueeze(-1).permute(_inverse_permutation(perm)) if keepdim else result
    if abs(o) == math.inf:
        d = [d[1], d[0]]
    if not keepdim and d[0] < d[1]:
        d[1] -= 1
    return max_min(aten.linalg_vector_norm(self, 1.0, (d[0],), keepdim, dtype=dtype), d[1])


def linalg_matrix_norm_str_ord(self: Any, ord: str = "fro", dim: Any = (-2, -1), keepdim: bool = False,  # noqa: A002
                               dtype: Any = None) -> Any:
    """'fro': the vector 2-norm over both dims; 'nuc': the sum of the singular values."""
    if ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d = _matrix_norm_checks(self, dim, dtype, ord != "nuc")
    if ord == "fro":
        return aten.linalg_vector_norm(self, 2, tuple(d), keepdim, dtype=dtype)
    A = self.to(dtype) if dtype is not None else self
    perm = _dims_last(d[0], d[1], A.dim())
    result = aten.linalg_svdvals(A.permute(perm)).sum(-1, keepdim)
    return result.unsqueeze(-1).permute(_inverse_permutation(perm)) if keepdim else result


def linalg_cholesky(self: Any, upper: bool = False) -> Any:
    L, info = aten.linalg_cholesky_ex(self, upper=upper)
    aten._linalg_check_errors(info, "linalg.cholesky", is_matrix=self.dim() == 2)
    return L


# ---- the rest of torch.linalg that is written in other ops (LinearAlgebra.cpp, BatchLinearAlgebra.cpp)
def linalg_diagonal(A: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    return aten.diagonal(A, offset, dim1, dim2)


def linalg_matmul(self: Any, other: Any) -> Any:
    return aten.matmul(self, other)


def linalg_vecdot(x: Any, y: Any, dim: int = -1) -> Any:
    """``sum(conj(x) * y, dim)``."""
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{scalar_type_name(x.dtype)} and y of type {scalar_type_name(y.dtype)} instead")
    return (x.conj() * y).sum(dim)


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The cheapest parenthesization of a matrix chain (the textbook dynamic programme PyTorch uses): ``split[i][j]``
    is where to split the product of matrices i..j."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] == -1 or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def linalg_multi_dot(tensors: Any) -> Any:
    """The product of a chain of matrices (the first may be a row vector, the last a column vector), multiplied
    in the order that costs the fewest multiplications."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    if first.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.dim()}D")
    if last.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    mats = [first.unsqueeze(0) if first.dim() == 1 else first] + list(tensors[1:-1]) + \
        [last.unsqueeze(-1) if last.dim() == 1 else last]
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {_shape(tensors[i])} and "
                               f"{_shape(tensors[i + 1])} cannot be multiplied")
    out_shape = ([first.shape[0]] if first.dim() == 2 else []) + ([last.shape[1]] if last.dim() == 2 else [])
    if n == 2:
        out = mats[0].mm(mats[1])
    elif n == 3:        # the cheaper of the two orders (the left one on a tie)
        a, b, c, d = mats[0].shape[0], mats[1].shape[0], mats[2].shape[0], mats[2].shape[1]
        out = mats[0].mm(mats[1].mm(mats[2])) if (a * c) * (b + d) > (b * d) * (a + c) else \
            mats[0].mm(mats[1]).mm(mats[2])
    else:
        split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

        def product(i: int, j: int) -> Any:
            if i == j:
                return mats[i]
            k = split[i][j]
            return product(i, k).mm(product(k + 1, j))
        out = product(0, n - 1)
    return out.view(out_shape)


def _shape(t: Any) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def linalg_vander(x: Any, N: Any = None) -> Any:
    """The Vandermonde matrix ``x[..., i] ** j`` for ``j < N`` (powers by repeated products, as PyTorch's cumprod)."""
    if x.dtype.name == "bool":
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    x_ = x.unsqueeze(-1) if x.dim() == 0 else x
    shape = list(x_.shape)
    n = shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = aten.cumprod(x_.unsqueeze(-1).expand(tuple(shape) + (n - 1,)), -1)
    return aten.cat([powers.new_ones(tuple(shape) + (1,)), powers], -1)


def linalg_tensorinv(self: Any, ind: int = 2) -> Any:
    """The inverse of ``self`` seen as a linear map from its last dims (from ``ind`` on) to its first ``ind``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    head, tail = tuple(self.shape[:ind]), tuple(self.shape[ind:])
    p_head, p_tail = _prod(head), _prod(tail)
    if p_head != p_tail:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), "
                           f"but got {p_tail} != {p_head}")
    return aten.linalg_inv(self.reshape(p_head, p_tail)).reshape(tail + head)


def _prod(shape: Any) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def linalg_tensorsolve(self: Any, other: Any, dims: Any = None) -> Any:
    """``x`` with ``tensordot(self, x, x.dim()) == other`` (``dims`` of ``self`` are moved to the end first)."""
    a = self
    if dims is not None:
        nd = self.dim()
        moved = [d % nd for d in dims]
        a = a.permute([d for d in range(nd) if d not in moved] + moved)
    result_shape = tuple(a.shape[other.dim():])
    p_res, p_other = _prod(result_shape), _prod(tuple(a.shape[:other.dim()]))
    if p_res != p_other:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {p_res} != {p_other}")
    return aten.linalg_solve(a.reshape(p_other, p_res), other.reshape(p_other)).reshape(result_shape)


def _matrix_rank_result(A: Any) -> Any:
    """The int64 result PyTorch allocates first (its out= form's shape check)."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    return aten.empty_memory_format(tuple(A.shape[:-2]), dtype=int64, device=A.device)


def _matrix_rank(A: Any, result: Any, atol: Any, rtol: Any, hermitian: bool) -> Any:
    """The number of singular values (|eigenvalues| when ``hermitian``) above max(atol, rtol * the largest)."""
    atol, rtol = _tolerances_from_tensors(A, atol, rtol, "torch.linalg.matrix_rank")
    if A.numel() == 0:
        return result.fill_(0)
    if hermitian:
        S = aten.linalg_eigvalsh(A).abs()
        max_S = S.amax(-1, keepdim=True)
    else:
        S = aten.linalg_svdvals(A)
        max_S = S.narrow(-1, 0, 1)  # (in descending order)
    scaled = rtol.unsqueeze(-1) * max_S
    tol = aten.maximum(atol.unsqueeze(-1), scaled)
    return aten.sum_dim_IntList(S > tol, (-1,))


def linalg_matrix_rank_atol_rtol_tensor(input: Any, atol: Any = None, rtol: Any = None,  # noqa: A002
                                        hermitian: bool = False) -> Any:
    return _matrix_rank(input, _matrix_rank_result(input), atol, rtol, hermitian)


def linalg_matrix_rank_atol_rtol_float(self: Any, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Any:
    result = _matrix_rank_result(self)
    atol_t, rtol_t = _tolerances_from_floats(self, atol, rtol)
    return _matrix_rank(self, result, atol_t, rtol_t, hermitian)


def linalg_matrix_rank(self: Any, tol: float, hermitian: bool = False) -> Any:
    """The deprecated ``tol=``: an absolute tolerance (NumPy's meaning)."""
    result = _matrix_rank_result(self)
    atol_t, rtol_t = _tolerances_from_floats(self, tol, 0.0)
    return _matrix_rank(self, result, atol_t, rtol_t, hermitian)


def linalg_matrix_rank_tol_tensor(input: Any, tol: Any, hermitian: bool = False) -> Any:  # noqa: A002
    result = _matrix_rank_result(input)
    return _matrix_rank(input, result, tol, aten.zeros((), dtype=tol.dtype, device=tol.device), hermitian)


def dist(self: Any, other: Any, p: Any = 2) -> Any:
    """The ``p``-norm of ``self - other`` (broadcast)."""
    return aten.linalg_vector_norm(self - other, p)


def logdet(self: Any) -> Any:
    """``log det``: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabsdet = aten.linalg_slogdet(self)
    if self.is_complex():
        return sign.log() + logabsdet
    return aten.where_self(sign == -1, aten.scalar_tensor(float("nan"), dtype=logabsdet.dtype,
                                                          device=logabsdet.device), logabsdet)


def linalg_matrix_power(self: Any, n: int) -> Any:
    """``A^n`` by repeated squaring (LinearAlgebra.cpp): the identity for 0 (in the graph through a copy), the
    inverse's power for a negative ``n``, two products at most for ``n`` up to 3."""
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if self.shape[-1] != self.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{self.shape[-2]} by {self.shape[-1]} matrices")
    if n == 0:
        return self.clone(memory_format=contiguous_format).copy_(
            aten.eye(self.shape[-2], dtype=self.dtype, device=self.device))
    if n == 1:
        return self.clone(memory_format=contiguous_format)
    if n == -1:
        return aten.linalg_inv(self)
    a = aten.linalg_inv(self) if n < 0 else self
    n = abs(n)
    if n == 2:
        return aten.matmul(a, a)
    if n == 3:
        return aten.matmul(aten.matmul(a, a), a)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else aten.matmul(z, z)
        if bit:
            result = z if result is None else aten.matmul(result, z)
    return result


def matrix_power(self: Any, n: int) -> Any:
    return aten.linalg_matrix_power(self, n)


def addr(self: Any, vec1: Any, vec2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * self + alpha * outer(vec1, vec2)`` (``self`` not read when ``beta`` is 0)."""
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D" if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    outer = aten.outer(vec1, vec2)
    if alpha != 1:
        outer = outer * alpha
    if beta == 0:  # self's values are not read (NaNs in it do not show), but it stays in the graph (zero gradient)
        never = aten.zeros((), dtype=bool_, device=outer.device)
        return aten.where_self(never, self, outer)
    return self * beta + outer if beta != 1 else self + outer


def addr_(self: Any, vec1: Any, vec2: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    return self.copy_(addr(self, vec1, vec2, beta, alpha))



def linalg_lu_factor(A: Any, pivot: bool = True) -> Any:
    LU, pivots, info = aten.linalg_lu_factor_ex(A, pivot=pivot)
    aten._linalg_check_errors(info, "torch.linalg.lu_factor", is_matrix=A.dim() == 2)
    return return_types.linalg_lu_factor(LU, pivots)


def _lu_with_info(self: Any, pivot: bool = True, check_errors: bool = True) -> Any:
    return return_types._lu_with_info(*aten.linalg_lu_factor_ex(self, pivot=pivot, check_errors=check_errors))


def lu_solve(self: Any, LU_data: Any, LU_pivots: Any) -> Any:
    """The deprecated ``torch.lu_solve(b, LU_data, LU_pivots)``."""
    warn_once("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed "
                     "in a future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
                     "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
                     "X = torch.linalg.lu_solve(LU, pivots, B)")
    return aten.linalg_lu_solve(LU_data, LU_pivots, self)


def linalg_solve_ex(A: Any, B: Any, left: bool = True, check_errors: bool = False) -> Any:
    """(result, info): ``linalg.solve`` that reports a singular matrix in ``info`` instead of raising."""
    result, _, _, info = aten._linalg_solve_ex(A, B, left=left, check_errors=check_errors)
    return return_types.linalg_solve_ex(result, info)


def linalg_solve(A: Any, B: Any, left: bool = True) -> Any:
    result, LU, _, info = aten._linalg_solve_ex(A, B, left=left)
    aten._linalg_check_errors(info, "torch.linalg.solve", is_matrix=LU.dim() == 2)
    return result


def matrix_exp(self: Any) -> Any:
    return aten.linalg_matrix_exp(self)


def linalg_eigvals(self: Any) -> Any:
    """The eigenvalues of ``linalg.eig`` (differentiable through it)."""
    return aten.linalg_eig(self)[0]


def orgqr(self: Any, input2: Any) -> Any:
    return aten.linalg_householder_product(self, input2)


def linalg_cond(self: Any, p: Any = None) -> Any:
    """The condition number: for p in (None, 2, -2) the ratio of the largest and smallest singular values, else
    ``norm(A, p) norm(A^-1, p)`` (inf for a singular matrix); 0 for an empty matrix (LinearAlgebra.cpp)."""
    if self.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if isinstance(p, str):
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    elif p is not None and float(p) not in (2.0, -2.0, 1.0, -1.0, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {_cpp_double(float(p))}")
    if self.numel() == 0:
        return aten.zeros(tuple(self.shape[:-2]), dtype=self.dtype.to_real(), device=self.device)
    if p is None or (not isinstance(p, str) and abs(float(p)) == 2.0):
        S = aten.linalg_svdvals(self)
        s_max, s_min = S.narrow(-1, 0, 1), S.narrow(-1, -1, 1)
        result = aten.div_Tensor(s_min, s_max) if p is not None and float(p) == -2.0 else \
            aten.div_Tensor(s_max, s_min)
        return result.squeeze(-1)
    name = p if isinstance(p, str) else (_cpp_double(float(p)) if not math.isinf(float(p)) else str(float(p)))
    if self.shape[-1] != self.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={name}): A must be batches of square matrices, but they are "
                           f"{self.shape[-2]} by {self.shape[-1]} matrices")
    inverse, info = aten.linalg_inv_ex(self)
    matrix_norm = aten.linalg_matrix_norm_str_ord if isinstance(p, str) else aten.linalg_matrix_norm
    result = matrix_norm(self, p, (-2, -1), False) * matrix_norm(inverse, p, (-2, -1), False)
    return aten.where_self(info > 0, aten.full_like(result, float("inf")), result)


# ---------------------------------------------------------------- the deprecated svd / qr / triangular_solve
def svd(self: Any, some: Any = True, compute_uv: Any = True) -> Any:
    """``torch.svd``: V rather than Vh; without ``compute_uv`` U and V are zero matrices of the full sizes."""
    if self.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {self.dim()} dimensions "
                           "instead")
    if compute_uv:
        U, S, Vh = aten.linalg_svd(self, full_matrices=not some)
    else:
        S = aten.linalg_svdvals(self)
        m, n = self.shape[-2], self.shape[-1]
        batch = tuple(self.shape[:-2])
        U = aten.zeros(batch + (m, m), dtype=self.dtype, device=self.device)
        Vh = aten.zeros(batch + (n, n), dtype=self.dtype, device=self.device)
    return return_types.svd(U, S, Vh.mH)


def qr(self: Any, some: Any = True) -> Any:
    warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                     "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = "
                     "torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else "
                     "'complete')")
    return return_types.qr(*aten.linalg_qr(self, "reduced" if some else "complete"))


def vander(x: Any, N: Any = None, increasing: Any = False) -> Any:
    """The Vandermonde matrix, as LinearAlgebra.cpp fills it: a column of ones, then x copied into the other
    columns and replaced by its cumulative product (so the gradient flows), in x's dtype promoted with int64;
    flipped to decreasing powers unless ``increasing``."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    result = aten.empty_memory_format((x.shape[0], n), dtype=aten.promote_types(x.dtype, int64), device=x.device)
    if n > 0:
        result.select(1, 0).fill_(1)
        if n > 1:
            result.narrow(1, 1, n - 1).copy_(x.unsqueeze(1))
            result.narrow(1, 1, n - 1).copy_(aten.cumprod(result.narrow(1, 1, n - 1), 1))
    return result if increasing else aten.flip(result, (1,))


def linalg_ldl_factor(self: Any, hermitian: Any = False) -> Any:
    LD, pivots, info = aten.linalg_ldl_factor_ex(self, hermitian=hermitian)
    aten._linalg_check_errors(info, "torch.linalg.ldl_factor", is_matrix=self.dim() == 2)
    return return_types.linalg_ldl_factor(LD, pivots)
