"""What the compiled loops share (Note [Compiled loops] in ``__init__.py``): numba's options -- fast math
without ``nnan`` / ``ninf``, and the exact form for loops that must round as PyTorch's op-by-op code does -- and
the scalar math helpers, in float64. ``ember/_inductor/fusion.py``'s generated loops call the helpers too."""
from __future__ import annotations

import numba

_FLAGS = {"contract", "arcp", "reassoc", "afn", "nsz"}  # fast math without nnan / ninf
_helper = numba.njit(inline="always", error_model="numpy", fastmath=_FLAGS)
_kernel = numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_FLAGS)
_exact = numba.njit(nogil=True, cache=True, error_model="numpy")   # no fast math: every rounding as written

_SQRT1_2 = 0.7071067811865476            # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327       # 1 / sqrt(2 pi)
_TANH_BETA = 0.7978845608028654          # sqrt(2 / pi)
_TANH_KAPPA = 0.044715


@_helper
def _exp_le1(u: float) -> float:
    v = max(u, -110.0) * 0.0078125
    p = 1.0 + v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (
        1.0 / 720 + v * (1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (
            1.0 / 39916800 + v * (1.0 / 479001600))))))))))))
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return p if u >= -110.0 else 0.0


@_helper
def _erfc_ge0(z: float) -> float:
    t = 1.0 / (1.0 + 0.5 * z)
    return t * _exp_le1(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))


@_helper
def _two_phi(x: float) -> float:
    """2 Phi(x) = erfc(-x / sqrt 2) = 1 + erf(x / sqrt 2)."""
    z = x * _SQRT1_2
    e = _erfc_ge0(abs(z))
    return 2.0 - e if z >= 0.0 else e


@_helper
def _one_plus_tanh(u: float) -> float:
    """1 + tanh(u) = 2 / (1 + e^(-2u)), evaluated with e^(-2|u|) <= 1 on either side of 0 (for u < 0 it is
    2 e^(2u) / (1 + e^(2u))), so GELU's far negative tail keeps its relative accuracy."""
    e = _exp_le1(-2.0 * abs(u))
    return 2.0 / (1.0 + e) if u >= 0.0 else 2.0 * e / (1.0 + e)



@_helper
def _expm1_le0(u: float) -> float:
    """e^u - 1 for u <= 0 with relative accuracy near 0: m = e^(u/128) - 1 by its Taylor polynomial, then seven
    times (1 + m)^2 - 1 = m (2 + m), which keeps the relative error of m (no cancellation)."""
    v = max(u, -110.0) * 0.0078125
    m = v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (1.0 / 720 + v * (
        1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (1.0 / 39916800 + v * (
            1.0 / 479001600 + v * (1.0 / 6227020800)))))))))))))
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    return m


@_helper
def _sigmoid(x: float) -> float:
    """1 / (1 + e^-x), from e^(-|x|) <= 1 on either side of 0 (e / (1 + e) for x < 0); NaN stays NaN."""
    e = _exp_le1(-abs(x))
    s = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    return s if x == x else x


@_helper
def _tanh(u: float) -> float:
    """tanh(u) = -m / (2 + m) * sign(u) with m = e^(-2|u|) - 1, relative accuracy kept near 0; NaN stays NaN."""
    m = _expm1_le0(-2.0 * abs(u))
    t = -m / (2.0 + m)
    t = t if u >= 0.0 else -t
    return t if u == u else u

