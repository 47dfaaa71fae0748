"""Functions of ``ember.*`` whose Python signatures are not one schema (``torch/functional.py``)."""
from __future__ import annotations

from ember._generated import functions as _F
from ember._generated.ops import _unique2, unique_dim

__all__ = ["unique", "split", "norm", "chunk_sizes"]


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Unique elements (sorted), optionally with the inverse mapping and the counts."""
    if dim is None:
        out, inv, cnt = _unique2(input, sorted, return_inverse, return_counts)
    else:
        out, inv, cnt = unique_dim(input, dim, sorted, return_inverse, return_counts)
    if return_inverse and return_counts:
        return out, inv, cnt
    if return_inverse:
        return out, inv
    if return_counts:
        return out, cnt
    return out


def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of ``split_size_or_sections`` (an int) or of the given sizes (a list)."""
    if isinstance(split_size_or_sections, (list, tuple)):
        return list(_F.split_with_sizes(tensor, split_size_or_sections, dim))
    return list(_F.split(tensor, split_size_or_sections, dim))


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm``: Frobenius / nuclear / vector p-norms (see ``ember.linalg`` for the new API)."""
    import ember
    if isinstance(dim, int):
        dim = (dim,)
    if p == "fro" and (dim is None or len(dim) <= 2):
        r = ember.linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
    elif p == "nuc":
        r = ember.linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    else:
        r = ember.linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)
    if out is not None:
        out.resize_(r.shape) if hasattr(out, "resize_") else None
        out.copy_(r)
        return out
    return r


def chunk_sizes(n: int, chunks: int) -> list:
    size = (n + chunks - 1) // chunks
    return [min(size, n - i) for i in range(0, n, size)] if size else []
