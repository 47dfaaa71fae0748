"""GELU (erf and tanh forms), SiLU and their gradients, the threshold gradient (ReLU's), softplus, ELU, log-sigmoid,
Mish, tanh and erf: one pass per op over
same-shaped float32 arrays in float32 vectors (Note [float32 math]), run by ``compiled.elementwise`` (callers:
``kernels/activation.py``). Each takes flat arrays and the range [b, e) of elements to do, as slices: a loop over
range(b, e) would index with a value numba cannot prove non-negative, and the wrap-around select it adds halves
the loop's speed."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import (_F0, _F1, _FHALF, _TANH_BETA, _TANH_KAPPA, _driver,
                                              _erf, _exact, _exact_driver, _expf, _expm1_le0, _kernel, _one_plus_tanhf,
                                              _phif, _sigmoid, _softplus, _tanh, _two_phif, chunk)


@_kernel
def gelu_erf(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        out[i] = _FHALF * v * _two_phif(v)


@_kernel
def gelu_tanh(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        d = np.float64(v)
        out[i] = _FHALF * v * _one_plus_tanhf(_TANH_BETA * (d + _TANH_KAPPA * d * d * d))


@_kernel
def threshold_backward(g: Any, x: Any, threshold: float, out: Any, b: int, e: int) -> None:
    """0 where x <= threshold, else g (relu's backward): a select, so an inf or NaN gradient where x <= threshold
    gives 0, as PyTorch's kernel (a product with the mask would give NaN)."""
    g, x, out = g[b:e], x[b:e], out[b:e]
    t = np.float32(threshold)
    for i in range(x.size):
        out[i] = _F0 if x[i] <= t else g[i]


@_kernel
def gelu_erf_backward(g: Any, x: Any, out: Any, b: int, e: int) -> None:
    """g * (Phi(x) + x phi(x))."""
    g, x, out = g[b:e], x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        out[i] = g[i] * (_FHALF * _two_phif(v) + v * _phif(v))


@_kernel
def gelu_tanh_backward(g: Any, x: Any, out: Any, b: int, e: int) -> None:
    """g * d/dx [x/2 (1 + tanh(beta (x + kappa x^3)))] = g * ((1 + t)/2 + x/2 (1 - t^2) beta (1 + 3 kappa x^2)),
    with 1 - t^2 = (1 + t)(1 - t) = (1 + tanh(u))(1 + tanh(-u)); the polynomials in float64, where x^2 of a
    large x stays finite (1e30: 0, not inf * 0)."""
    g, x, out = g[b:e], x[b:e], out[b:e]
    for i in range(x.size):
        d = np.float64(x[i])
        d2 = d * d
        u = _TANH_BETA * (d + _TANH_KAPPA * d2 * d)
        p, m = _one_plus_tanhf(u), _one_plus_tanhf(-u)
        out[i] = g[i] * (0.5 * p + 0.5 * d * p * m * _TANH_BETA * (1.0 + 3.0 * _TANH_KAPPA * d2))


# PyTorch's float32 SiLU is x / (1 + e^-x): below -ln(FLT_MAX) e^-x overflows to inf and silu(x) = x / inf is
# -0 where the exact value would be a float32 subnormal. The forward takes the same form; the gradient keeps the
# floor for its sigmoid.
_SILU_FLOOR = -88.72283935546875


@_kernel
def silu(x: Any, out: Any, b: int, e: int) -> None:
    """x / (1 + e^-x)."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        out[i] = v / (_F1 + _expf(-v))


@_kernel
def silu_backward(g: Any, x: Any, out: Any, b: int, e: int) -> None:
    """g * s (1 + x (1 - s)), s = sigmoid(x) (NaN at x = inf, as PyTorch's: 1 + inf * 0). In float64: the factor
    1 + x (1 - s) crosses 0 near x = -1.28, where a float32 s would leave it only absolute accuracy."""
    g, x, out = g[b:e], x[b:e], out[b:e]
    for i in range(x.size):
        v = np.float64(x[i])
        s = _sigmoid(v) if v >= _SILU_FLOOR else 0.0
        out[i] = np.float64(g[i]) * s * (1.0 + v * (1.0 - s))


# Softplus, ELU, log-sigmoid, Mish, tanh and erf keep float64 registers (the ``_common`` float64 helpers): NumPy's
# float32 log1p, expm1 and erf have no vector loop (16 ns a value: softplus of 2^19 values took 9 ms, PyTorch's 1 ms),
# and a float64 evaluation rounded once stays within an ulp of the float32 result without float32 log helpers.


@_kernel
def softplus(x: Any, beta: float, threshold: float, out: Any, b: int, e: int) -> None:
    """x where x beta > threshold (compared in float32, as PyTorch's), else log(1 + e^(x beta)) / beta."""
    x, out = x[b:e], out[b:e]
    bt, th = np.float32(beta), np.float32(threshold)
    for i in range(x.size):
        v = x[i]
        u = v * bt
        r = np.float32(_softplus(np.float64(u)) / beta)
        out[i] = v if u > th else r


@_kernel
def elu(x: Any, alpha: float, scale: float, input_scale: float, out: Any, b: int, e: int) -> None:
    """x scale for x > 0, else (e^(x input_scale) - 1) alpha scale; NaN stays NaN."""
    x, out = x[b:e], out[b:e]
    neg, pos, isc = alpha * scale, np.float32(scale), np.float32(input_scale)
    for i in range(x.size):
        v = x[i]
        u = np.float64(v * isc)
        r = np.float32(_expm1_le0(u if u < 0.0 else 0.0) * neg)
        out[i] = r if v <= _F0 else v * pos


@_kernel
def log_sigmoid(x: Any, out: Any, b: int, e: int) -> None:
    """log(1 / (1 + e^-x)) = -softplus(-x)."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = np.float32(-_softplus(-np.float64(x[i])))


@_kernel
def mish(x: Any, out: Any, b: int, e: int) -> None:
    """x tanh(softplus(x))."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        d = np.float64(x[i])
        out[i] = np.float32(d * _tanh(_softplus(d)))


@_kernel
def erf(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = np.float32(_erf(np.float64(x[i])))


@compiled.parallel_of(erf)
@_driver
def _erf_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        erf(x, out, b, e)


@_kernel
def tanh(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = np.float32(_tanh(np.float64(x[i])))


# Leaky ReLU, hardsigmoid and hardswish: compares, selects and PyTorch's roundings as its kernels order them (no fast
# math), NaN kept where its vector maximum / minimum keep it.
_F3, _F6 = np.float32(3.0), np.float32(6.0)


@_exact
def leaky_relu(x: Any, slope: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        w = v * slope
        out[i] = v if v > _F0 else w


@_exact
def hardsigmoid(x: Any, out: Any, b: int, e: int) -> None:
    """min(max(x + 3, 0), 6) / 6."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        c = x[i] + _F3
        c = _F0 if c < _F0 else c
        c = _F6 if c > _F6 else c
        out[i] = c / _F6


@_exact
def hardswish(x: Any, out: Any, b: int, e: int) -> None:
    """x min(max(x + 3, 0), 6) / 6."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        c = v + _F3
        c = _F0 if c < _F0 else c
        c = _F6 if c > _F6 else c
        out[i] = v * c / _F6


@compiled.parallel_of(leaky_relu)
@_exact_driver
def _leaky_relu_parallel(x: Any, slope: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        leaky_relu(x, slope, out, b, e)


@compiled.parallel_of(hardsigmoid)
@_exact_driver
def _hardsigmoid_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        hardsigmoid(x, out, b, e)


@compiled.parallel_of(hardswish)
@_exact_driver
def _hardswish_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        hardswish(x, out, b, e)


@compiled.parallel_of(softplus)
@_driver
def _softplus_parallel(x: Any, beta: float, threshold: float, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        softplus(x, beta, threshold, out, b, e)


@compiled.parallel_of(elu)
@_driver
def _elu_parallel(x: Any, alpha: float, scale: float, input_scale: float, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        elu(x, alpha, scale, input_scale, out, b, e)


@compiled.parallel_of(log_sigmoid)
@_driver
def _log_sigmoid_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        log_sigmoid(x, out, b, e)


@compiled.parallel_of(mish)
@_driver
def _mish_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        mish(x, out, b, e)


@compiled.parallel_of(tanh)
@_driver
def _tanh_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        tanh(x, out, b, e)


# ------------------------------------------------------------------------------ parallel drivers


@compiled.parallel_of(gelu_erf)
@_driver
def _gelu_erf_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        gelu_erf(x, out, b, e)


@compiled.parallel_of(gelu_tanh)
@_driver
def _gelu_tanh_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        gelu_tanh(x, out, b, e)


@compiled.parallel_of(threshold_backward)
@_driver
def _threshold_backward_parallel(g: Any, x: Any, threshold: float, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        threshold_backward(g, x, threshold, out, b, e)


@compiled.parallel_of(gelu_erf_backward)
@_driver
def _gelu_erf_backward_parallel(g: Any, x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        gelu_erf_backward(g, x, out, b, e)


@compiled.parallel_of(gelu_tanh_backward)
@_driver
def _gelu_tanh_backward_parallel(g: Any, x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        gelu_tanh_backward(g, x, out, b, e)


@compiled.parallel_of(silu)
@_driver
def _silu_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        silu(x, out, b, e)


@compiled.parallel_of(silu_backward)
@_driver
def _silu_backward_parallel(g: Any, x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        silu_backward(g, x, out, b, e)
