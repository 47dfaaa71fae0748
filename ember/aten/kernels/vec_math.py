"""float32 log and sin/cos as PyTorch's vectorized normal sampler computes them.

PyTorch's CPU ``normal_`` for float32 tensors of 16+ elements runs Box-Muller with the Cephes-derived
single-precision ``log`` and ``sincos`` of ``avx_mathfun.h`` (Julien Pommier's SSE/AVX port of Cephes),
not libm.  Reproducing its random stream bit for bit needs the same polynomials evaluated in the same
float32 operation order; this module is that evaluation over NumPy arrays.  ``fma`` selects whether a
multiply followed by an add rounds once where PyTorch's compiled kernel contracts them into an FMA
instruction; which ones it contracts was established by comparing 160,000 samples bit for bit.
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

f32 = np.float32


def _fma(a: Array, b: Array, c: Any) -> Any:
    """a * b + c rounded once to float32 (the float64 product of two floats is exact)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + c).astype(f32)


def log_f32(x: Array) -> Any:
    x = np.asarray(x, f32)
    invalid = x <= 0
    x = np.maximum(x, f32(1.17549435e-38))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(f32) + f32(1.0)
    x = ((bits & ~0x7F800000) | 0x3F000000).view(f32)
    mask = x < f32(0.707106781186547524)
    tmp = np.where(mask, x, f32(0))
    x = x - f32(1.0)
    e = e - np.where(mask, f32(1.0), f32(0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, f32(7.0376836292e-2))
    for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
              2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        y = _fma(y, x, f32(c))
    y = y * x
    y = _fma(y, z, e * f32(-2.12194440e-4))
    y = _fma(z, f32(-0.5), y)
    x = x + y
    x = _fma(e, f32(0.693359375), x)
    return np.where(invalid, f32(np.nan), x).astype(f32)


def sincos_f32(x: Array) -> Any:
    x = np.asarray(x, f32)
    sign_sin = np.signbit(x)
    x = np.abs(x)
    y = x * f32(1.27323954473516)
    j = y.astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(f32)
    swap_sign_sin = (j & 4) != 0
    poly_mask = (j & 2) == 0
    x = _fma(y, f32(-0.78515625), x)
    x = _fma(y, f32(-2.4187564849853515625e-4), x)
    x = _fma(y, f32(-3.77489497744594108e-8), x)
    sign_cos = ((~(j - 2)) & 4) != 0
    sign_sin = sign_sin ^ swap_sign_sin
    z = x * x
    yc = np.full_like(x, f32(2.443315711809948e-5))
    yc = _fma(yc, z, f32(-1.388731625493765e-3))
    yc = _fma(yc, z, f32(4.166664568298827e-2))
    yc = yc * z
    yc = _fma(yc, z, -(z * f32(0.5)))
    yc = yc + f32(1.0)
    ys = np.full_like(x, f32(-1.9515295891e-4))
    ys = _fma(ys, z, f32(8.3321608736e-3))
    ys = _fma(ys, z, f32(-1.6666654611e-1))
    ys = ys * z
    ys = _fma(ys, x, x)
    sin = np.where(poly_mask, ys, yc)
    cos = np.where(poly_mask, yc, ys)
    sin = np.where(sign_sin, -sin, sin)
    cos = np.where(sign_cos, -cos, cos)
    return sin.astype(f32), cos.astype(f32)
