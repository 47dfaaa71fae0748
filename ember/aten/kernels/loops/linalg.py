"""LU factorization with partial pivoting of many small matrices (caller: ``kernels/linalg.py``)."""
from __future__ import annotations

from typing import Any


from ember.aten.kernels.loops._common import _exact

# ------------------------------------------------------------------------------ LU factorization of many small matrices
@_exact
def lu_batched(A: Any, piv: Any, info: Any) -> None:
    """LAPACK's getf2 on each matrix of A (b, m, n), in place: partial pivoting on the largest |re| + |im| of the
    column (LAPACK's i?amax), the multipliers scaled by the pivot, the trailing block updated; ``piv`` (b, min(m, n))
    gets the 1-based pivot rows, ``info`` (b,) the first zero pivot (1-based), 0 if none. A zero pivot column is
    left unscaled."""
    b, m, n = A.shape
    k = min(m, n)
    for s in range(b):
        M = A[s]
        for j in range(k):
            p, best = j, abs(M[j, j].real) + abs(M[j, j].imag)
            for i in range(j + 1, m):
                size = abs(M[i, j].real) + abs(M[i, j].imag)
                if size > best:
                    p, best = i, size
            piv[s, j] = p + 1
            if M[p, j] != 0:
                if p != j:
                    for c in range(n):
                        M[j, c], M[p, c] = M[p, c], M[j, c]
                pivot = M[j, j]
                for i in range(j + 1, m):
                    M[i, j] = M[i, j] / pivot
            elif info[s] == 0:
                info[s] = j + 1
            for i in range(j + 1, m):
                factor = M[i, j]
                if factor != 0:
                    for c in range(j + 1, n):
                        M[i, c] -= factor * M[j, c]
