"""``torch.sparse``: products, sums and softmax over sparse tensors, and the sparse constructors of the ``torch``
namespace (``sparse_coo_tensor``; PyTorch writes those in C++, ``torch/csrc/utils/tensor_new.cpp``).

What a sparse tensor is and how its operators run: Note [Sparse tensors] in ember/aten/sparse/__init__.py."""
from __future__ import annotations

from typing import Any

import functools

import ember
from ember._generated import aten
from ember.aten.sparse.compressed import inferred_size
from ember.aten.sparse.coo import InvariantChecks, should_check
from ember.aten.sparse.tensor import LAYOUT_NAMES
from ember.c10 import dtype as _dt

__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax", "sampled_addmm",
           "spdiags", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
           "sparse_bsr_tensor", "sparse_bsc_tensor"]


def _as_tensor(data: Any, dtype: Any = None) -> Any:
    if isinstance(data, ember.Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    return ember.tensor(data, dtype=dtype)


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      pin_memory: bool = False, requires_grad: bool = False, check_invariants: Any = None,
                      is_coalesced: Any = None) -> Any:
    """Constructs a sparse tensor in COO format with ``values`` at the given ``indices``.

    Args:
        indices (array_like): ``[sparse_dim, nnz]`` coordinates (made int64).
        values (array_like): ``[nnz, *dense_sizes]`` values.
        size (list, tuple or ``Size``, optional): the tensor's sizes; inferred as ``indices.max(1) + 1`` followed
            by ``values``' dense sizes when omitted.
        check_invariants (bool, optional): check that the indices are in range (and coalesced when
            ``is_coalesced=True``); default: ``torch.sparse.check_sparse_tensor_invariants.is_enabled()``.
        is_coalesced (bool, optional): declare the indices sorted and unique.

    The tensor holds ``indices`` and ``values`` themselves (no copy) when they are tensors of the right dtype.

    Example::

        >>> i = torch.tensor([[0, 1, 1], [2, 0, 2]])
        >>> torch.sparse_coo_tensor(i, torch.tensor([3., 4., 5.]), (2, 3)).to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    idx = _as_tensor(indices)
    if idx.dtype != _dt.int64:
        idx = idx.to(_dt.int64)
    vals = _as_tensor(values, dtype)
    if size is None:
        if idx.dim() != 2:
            raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
        sparse_sizes = (idx.amax(1) + 1).tolist() if idx.shape[1] else [0] * idx.shape[0]
        size = [int(s) for s in sparse_sizes] + list(vals.shape[1:])
    size = [int(s) for s in size]
    if should_check(check_invariants):
        aten._validate_sparse_coo_tensor_args(idx, vals, size, is_coalesced)
    dev = ember.device(device) if device is not None else None
    t = aten._sparse_coo_tensor_unsafe(idx, vals, size, dtype=dtype, device=dev, is_coalesced=is_coalesced)
    if requires_grad:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _index_pair(compressed: Any, plain: Any) -> tuple[Any, Any]:
    """The index tensors of a compressed constructor: int32 kept when both are int32, otherwise int64."""
    c, p = _as_tensor(compressed), _as_tensor(plain)
    if c.dtype == p.dtype and c.dtype in (_dt.int32, _dt.int64):
        return c, p
    return c.to(_dt.int64), p.to(_dt.int64)


def sparse_compressed_tensor(compressed_indices: Any, plain_indices: Any, values: Any, size: Any = None, *,
                             dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool = False,
                             requires_grad: bool = False, check_invariants: Any = None) -> Any:
    """Constructs a sparse tensor in a compressed layout (``torch.sparse_csr``, ``sparse_csc``, ``sparse_bsr`` or
    ``sparse_bsc``): for each row (CSR / BSR) or column (CSC / BSC), ``compressed_indices[i]:compressed_indices[i +
    1]`` are the positions in ``plain_indices`` (the other coordinate) and ``values`` of its elements (blocks for
    BSR / BSC). Leading dims of the index tensors are batch dims; trailing dims of ``values`` are dense dims.

    The size is inferred from the indices when omitted. ``check_invariants`` checks the offsets and indices, as
    ``sparse_coo_tensor``'s does."""
    if layout is None:
        raise RuntimeError("sparse_compressed_tensor: layout argument must be specified")
    c, p = _index_pair(compressed_indices, plain_indices)
    vals = _as_tensor(values, dtype)
    if size is None:
        size = inferred_size(c, p, vals, layout)
    size = [int(s) for s in size]
    if should_check(check_invariants):
        aten._validate_sparse_compressed_tensor_args(c, p, vals, size, layout)
    dev = ember.device(device) if device is not None else None
    t = aten._sparse_compressed_tensor_unsafe(c, p, vals, size, dtype=dtype, layout=layout, device=dev)
    if requires_grad:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _compressed_factory(layout_name: str, compressed_name: str, plain_name: str) -> Any:
    def factory(compressed_indices: Any, plain_indices: Any, values: Any, size: Any = None, *, dtype: Any = None,
                device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
                check_invariants: Any = None) -> Any:
        return sparse_compressed_tensor(compressed_indices, plain_indices, values, size, dtype=dtype,
                                        layout=getattr(ember, layout_name), device=device, pin_memory=pin_memory,
                                        requires_grad=requires_grad, check_invariants=check_invariants)
    factory.__name__ = factory.__qualname__ = f"{layout_name}_tensor"
    factory.__doc__ = (f"Constructs a sparse tensor in {layout_name[7:].upper()} format from ``{compressed_name}``, "
                       f"``{plain_name}`` and ``values`` (``sparse_compressed_tensor`` with "
                       f"``layout=torch.{layout_name}``).")
    return factory


sparse_csr_tensor = _compressed_factory("sparse_csr", "crow_indices", "col_indices")
sparse_csc_tensor = _compressed_factory("sparse_csc", "ccol_indices", "row_indices")
sparse_bsr_tensor = _compressed_factory("sparse_bsr", "crow_indices", "col_indices")
sparse_bsc_tensor = _compressed_factory("sparse_bsc", "ccol_indices", "row_indices")


class check_sparse_tensor_invariants:
    """Whether sparse constructors check their invariants (indices in range, compressed indices ordered) when not
    told with ``check_invariants=``: off by default, as in PyTorch.

    A context manager and a decorator (``with check_sparse_tensor_invariants():``), or global switches
    (``enable()`` / ``disable()`` / ``is_enabled()``)."""

    @staticmethod
    def is_enabled() -> bool:
        return InvariantChecks.enabled

    @staticmethod
    def enable() -> None:
        InvariantChecks.enabled = InvariantChecks.chosen = True

    @staticmethod
    def disable() -> None:
        InvariantChecks.enabled = False
        InvariantChecks.chosen = True

    def __init__(self, enable: bool = True) -> None:
        self.state = enable
        self.saved: Any = None

    def __enter__(self) -> None:
        if self.saved is not None:
            raise RuntimeError("This context manager instance is already activated. Use a different context manager "
                               "instance for context nesting.")
        self.saved = (InvariantChecks.enabled, InvariantChecks.chosen)
        InvariantChecks.enabled, InvariantChecks.chosen = self.state, True

    def __exit__(self, *exc: Any) -> None:
        InvariantChecks.enabled, InvariantChecks.chosen = self.saved
        self.saved = None

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return wrapped


def mm(mat1: Any, mat2: Any, reduce: Any = None) -> Any:
    """The matrix product of a sparse ``mat1`` with a sparse or dense ``mat2``.

    The gradient for a sparse ``mat1`` has its (coalesced) pattern: ``torch.sparse.mm`` computes the derivative
    only where ``mat1`` holds values, unlike ``torch.mm``, whose gradient is dense."""
    if reduce is not None:
        raise NotImplementedError("torch.sparse.mm(..., reduce=...) is not supported by ember yet")
    return aten._sparse_mm(mat1, mat2)


def addmm(mat: Any, mat1: Any, mat2: Any, *, beta: float = 1.0, alpha: float = 1.0) -> Any:
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse COO ``mat1`` (gradient masked as ``torch.sparse.mm``'s)."""
    return aten._sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Any, dim: Any = None, dtype: Any = None) -> Any:
    """The sum of a COO tensor over ``dim`` (all dims by default): a dense tensor when every sparse dim is summed,
    otherwise a coalesced COO tensor over the rest."""
    if dim is None:
        return aten._sparse_sum(input) if dtype is None else aten._sparse_sum_dtype(input, dtype=dtype)
    dims = [dim] if isinstance(dim, int) else list(dim)
    return aten._sparse_sum_dim(input, dims) if dtype is None else aten._sparse_sum_dim_dtype(input, dims, dtype=dtype)


def sampled_addmm(input: Any, mat1: Any, mat2: Any, *, beta: float = 1.0, alpha: float = 1.0,
                  out: Any = None) -> Any:
    """``beta * input + alpha * (mat1 @ mat2)`` computed only at the stored positions of the CSR ``input`` (a CSR
    result with its pattern)."""
    if out is not None:
        raise NotImplementedError("torch.sparse.sampled_addmm(..., out=) is not supported by ember")
    return aten.sparse_sampled_addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def spdiags(diagonals: Any, offsets: Any, shape: Any, layout: Any = None) -> Any:
    """A sparse matrix of ``shape`` with the rows of ``diagonals`` on the diagonals ``offsets`` (0 the main one, > 0
    above it): element ``(i, i + offsets[k])`` is ``diagonals[k, i + offsets[k]]``, as SciPy's ``spdiags``."""
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if layout not in (None, ember.sparse_coo, ember.sparse_csr, ember.sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, got "
                           f"{LAYOUT_NAMES.get(layout, layout)}")
    diags = diagonals if diagonals.dim() == 2 else diagonals.unsqueeze(0)
    offs = [int(o) for o in offsets.reshape(-1).tolist()]
    if diags.dim() != 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    if diags.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diags.shape[0]}) does not match the number of offsets "
                           f"({len(offs)})")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    rows, cols = int(shape[0]), int(shape[1])
    rs, cs, ks = [], [], []
    for k, o in enumerate(offs):
        first, last = max(0, -o), min(rows, cols - o, diags.shape[1] - o)
        for i in range(first, max(first, last)):
            rs.append(i)
            cs.append(i + o)
            ks.append(k)
    idx = ember.tensor([rs, cs], dtype=_dt.int64).reshape(2, -1)
    vals = diags[ember.tensor(ks, dtype=_dt.int64), idx[1]]
    out = aten._sparse_coo_tensor_unsafe(idx, vals, (rows, cols))
    return out if layout in (None, ember.sparse_coo) else out.to_sparse(layout=layout)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """Softmax over the stored elements along ``dim`` (absent elements count as ``-inf``: they stay absent)."""
    x = input if dtype is None else input.to(dtype)
    return aten._sparse_softmax(x, dim, False)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """Log-softmax over the stored elements along ``dim`` (absent elements stay absent)."""
    x = input if dtype is None else input.to(dtype)
    return aten._sparse_log_softmax(x, dim, False)

