"""Linear-algebra ops written in other ops (``LinearAlgebra.cpp``): matmul's decomposition into dot / mv /
mm / bmm, inner, cross, pinverse, linalg.norm."""
from __future__ import annotations

from typing import Any, Callable

from ember._generated import aten
from ember.aten.kernels.linalg import _matmul_check
from ember.aten.meta import broadcast_shapes


def linalg_norm(self: Any, ord: Any = None, dim: Any = None, keepdim: Any = False, dtype: Any = None) -> Any:
    if isinstance(ord, str) or (ord is not None and dim is not None and len(dim) == 2) or \
            (ord is not None and dim is None and self.dim() == 2):
        matrix_norm: Callable[..., Any] = aten.linalg_matrix_norm_str_ord if isinstance(ord, str) else \
            aten.linalg_matrix_norm
        return matrix_norm(self, ord, (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
    return aten.linalg_vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def inner(self: Any, other: Any) -> Any:
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    return aten.tensordot(self, other, (-1 % self.dim(),), (-1 % other.dim(),))


def cross(self: Any, other: Any, dim: Any = None) -> Any:
    if dim is None:
        dim = next((i for i, s in enumerate(self.shape) if s == 3), -1)
    return aten.linalg_cross(self, other, dim=dim)


def pinverse(self: Any, rcond: Any = 1e-15) -> Any:
    return aten.linalg_pinv(self, rtol=rcond)


def matmul(self: Any, other: Any) -> Any:
    """PyTorch's matmul decomposition: dot, mv, mm, or a batched bmm over broadcast batch dims."""
    _matmul_check(self._data, other._data)  # PyTorch's errors for every rank combination
    da, db = self.dim(), other.dim()
    if da == 1 and db == 1:
        return self.dot(other)
    if da == 2 and db == 1:
        return self.mv(other)
    if da == 1 and db == 2:
        return self.unsqueeze(0).mm(other).squeeze(0)
    if da == 2 and db == 2:
        return self.mm(other)
    if da >= 3 and db <= 2:  # fold the batch into the rows: one mm
        o = other.unsqueeze(-1) if db == 1 else other
        out = self.reshape(-1, self.shape[-1]).mm(o)
        return out.view(tuple(self.shape[:-1]) + ((o.shape[-1],) if db == 2 else ()))
    a = self.unsqueeze(0) if da == 1 else self
    b = other.unsqueeze(-1) if db == 1 else other
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = a.expand(batch + (n, k)).reshape(-1, n, k)
    b3 = b.expand(batch + (k, m)).reshape(-1, k, m)
    out = a3.bmm(b3).view(batch + (n, m))
    if da == 1:
        out = out.squeeze(-2)
    if db == 1:
        out = out.squeeze(-1)
    return out
