"""Randomized low-rank SVD and PCA (``torch.svd_lowrank`` / ``pca_lowrank``; Halko, Martinsson and Tropp 2009,
Algorithm 4.4: an orthonormal basis of A's range from A times a Gaussian matrix, refined by ``niter`` rounds of
subspace iteration, then the exact SVD of the small projected matrix). The Gaussian matrix is drawn with
``randn`` on the default generator, so a seed gives PyTorch's factors."""
from __future__ import annotations

from typing import Any

import ember

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating(A: Any) -> Any:
    return A.dtype if A.is_floating_point() or A.is_complex() else ember.float32


def _approximate_basis(A: Any, q: int, niter: int, M: Any = None) -> Any:
    """Q (n x q, orthonormal columns) whose span approximates the range of A - M."""
    R = ember.randn(A.shape[-1], q, dtype=_floating(A), device=A.device)

    def times(X: Any, B: Any, N: Any) -> Any:
        return X @ B if N is None else X @ B - N @ B

    Q = ember.linalg.qr(times(A, R, M)).Q
    for _ in range(niter):
        Q = ember.linalg.qr(times(A.mH, Q, None if M is None else M.mH)).Q
        Q = ember.linalg.qr(times(A, Q, M)).Q
    return Q


def _svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2, M: Any = None) -> tuple[Any, Any, Any]:
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    wide = m < n
    if wide:  # work on the tall transpose
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2, M: Any = None) -> tuple[Any, Any, Any]:
    """(U, S, V) with A - M ~ U diag(S) V^H, of rank ``q`` (``q`` should exceed the rank sought a little)."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Any, q: int | None = None, center: bool = True, niter: int = 2) -> tuple[Any, Any, Any]:
    """(U, S, V) of the (column-centred, unless ``center`` is False) data matrix A: V's columns are the
    principal directions, S**2 / (m - 1) the variances along them."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter)
