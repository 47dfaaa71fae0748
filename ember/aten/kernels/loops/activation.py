"""GELU (erf and tanh forms), SiLU and their gradients, the threshold gradient (ReLU's): one pass
per op over same-shaped float32 arrays, run by ``compiled.elementwise`` (callers: ``kernels/activation.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels.loops._common import (_INV_SQRT_2PI, _TANH_BETA, _TANH_KAPPA, _exp_le1, _kernel, _one_plus_tanh,
                                              _sigmoid, _two_phi)

@_kernel
def gelu_erf(x: Any, out: Any) -> None:
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = 0.5 * v * _two_phi(v)


@_kernel
def gelu_tanh(x: Any, out: Any) -> None:
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = 0.5 * v * _one_plus_tanh(_TANH_BETA * (v + _TANH_KAPPA * v * v * v))


@_kernel
def threshold_backward(g: Any, x: Any, threshold: float, out: Any) -> None:
    """0 where x <= threshold, else g (relu's backward): a select, so an inf or NaN gradient where x <= threshold
    gives 0, as PyTorch's kernel (a product with the mask would give NaN)."""
    t = np.float32(threshold)
    for i in range(x.size):
        out[i] = np.float32(0.0) if x[i] <= t else g[i]


@_kernel
def gelu_erf_backward(g: Any, x: Any, out: Any) -> None:
    """g * (Phi(x) + x phi(x))."""
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = np.float64(g[i]) * (0.5 * _two_phi(v) + v * _INV_SQRT_2PI * _exp_le1(-0.5 * v * v))


@_kernel
def gelu_tanh_backward(g: Any, x: Any, out: Any) -> None:
    """g * d/dx [x/2 (1 + tanh(beta (x + kappa x^3)))] = g * ((1 + t)/2 + x/2 (1 - t^2) beta (1 + 3 kappa x^2)),
    with 1 - t^2 = (1 + t)(1 - t) = (1 + tanh(u))(1 + tanh(-u))."""
    for i in range(x.size):
        v = np.float64(x[i])
        v2 = v * v
        u = _TANH_BETA * (v + _TANH_KAPPA * v2 * v)
        p, m = _one_plus_tanh(u), _one_plus_tanh(-u)
        out[i] = np.float64(g[i]) * (0.5 * p + 0.5 * v * p * m * _TANH_BETA * (1.0 + 3.0 * _TANH_KAPPA * v2))


# PyTorch's float32 SiLU divides by 1 + e^-x, which overflows to inf below -ln(FLT_MAX): there its sigmoid is 0
# and silu(x) = x / inf is -0 where the float64 value would be a float32 subnormal.
_SILU_FLOOR = -88.72283935546875


@_kernel
def silu(x: Any, out: Any) -> None:
    """x * sigmoid(x)."""
    for i in range(x.size):
        v = np.float64(x[i])
        s = _sigmoid(v) if v >= _SILU_FLOOR else 0.0
        out[i] = v * s


@_kernel
def silu_backward(g: Any, x: Any, out: Any) -> None:
    """g * s (1 + x (1 - s)), s = sigmoid(x) (NaN at x = inf, as PyTorch's: 1 + inf * 0)."""
    for i in range(x.size):
        v = np.float64(x[i])
        s = _sigmoid(v) if v >= _SILU_FLOOR else 0.0
        out[i] = np.float64(g[i]) * s * (1.0 + v * (1.0 - s))
