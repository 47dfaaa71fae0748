"""Kernels of activations and their backward: GELU, SiLU, the shrink / threshold family, GLU, log-sigmoid, PReLU,
RReLU (``aten/src/ATen/native/Activation.cpp``)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import (Array, asdtype, chunked, compute_dtype, elementwise, meta_array, meta_kernel,
                                        result_np_dtype, shape_str, type_name, wrap_dim)
from ember.aten.kernels.random import _gen, uniform_bits
from ember.aten.kernels.unary import _sigmoid
from ember.c10.dtype import BF16_NP

__all__ = ["gelu", "gelu_backward", "tanh_backward", "sigmoid_backward", "threshold_backward", "silu_backward",
           "log_sigmoid_forward", "glu", "threshold", "softshrink", "hardshrink", "_prelu_kernel", "rrelu_with_noise"]

# ------------------------------------------------------------------------------ gelu
# float32 (and the half types, computed in float32) run numba's one-pass loops of compiled.py; float64 and the
# fallback evaluate the same formulas in NumPy passes (Cody's erf in float64, the float32 erf otherwise).
_SQRT1_2 = 1 / math.sqrt(2.0)
_TANH_BETA = math.sqrt(2.0 / math.pi)
_TANH_KAPPA = 0.044715


def _check_approximate(approximate: Any) -> None:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh. (got {approximate})")


def _erf(xp: Any, v: Array) -> Any:
    from ember.aten.kernels.special_math import erf
    return chunked(xp, lambda u: erf(xp, u), v)


def gelu(xp: Any, self: Array, approximate: Any = 'none') -> Any:
    _check_approximate(approximate)
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if compiled.usable(xp, x):
        r = compiled.elementwise(loops.activation.gelu_tanh if approximate == "tanh" else loops.activation.gelu_erf, x)
        return r.astype(self.dtype, copy=False)
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            r = 0.5 * x * (1.0 + xp.tanh(_TANH_BETA * (x + _TANH_KAPPA * x * x * x)))
        else:
            r = 0.5 * x * (1.0 + _erf(xp, x * _SQRT1_2))
    return r.astype(self.dtype, copy=False)


@elementwise
def threshold_backward(xp: Any, grad_output: Array, self: Array, threshold: Any) -> Any:
    """The gradient where ``self > threshold``, zero elsewhere (relu's backward with ``self`` its result)."""
    npdt = result_np_dtype(grad_output, self)
    if compiled.usable(xp, grad_output, self) and grad_output.shape == self.shape and \
            isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        return compiled.elementwise(loops.activation.threshold_backward, grad_output, self, scalars=(float(threshold),),
                                    grain=compiled.CHEAP_GRAIN)     # a select: one memory pass
    g = grad_output if grad_output.dtype == npdt else grad_output.astype(npdt)
    return compiled.where(xp, self <= threshold, xp.zeros((), npdt), g)


def _backward_of_output(xp: Any, grad_output: Array, output: Array, derivative: Callable[[Any], Any]) -> Any:
    """``grad * derivative(y)`` for ``y`` the op's output (tanh, sigmoid) or input (silu), conjugated when complex
    (as PyTorch's kernels), computed in the dtype's compute precision."""
    npdt = result_np_dtype(grad_output, output)
    cdt = compute_dtype(npdt)
    g, y = asdtype(xp, grad_output, cdt), asdtype(xp, output, cdt)
    if y.dtype.kind == "c":
        y = y.conj()
    return (g * derivative(y)).astype(npdt, copy=False)


@elementwise
def silu_backward(xp: Any, grad_output: Array, self: Array) -> Any:
    """grad * silu'(x) = grad * s (1 + x (1 - s)), s = sigmoid(x)."""
    if compiled.usable(xp, grad_output, self) and grad_output.shape == self.shape:
        return compiled.elementwise(loops.activation.silu_backward, grad_output, self)

    def derivative(x: Any) -> Any:
        with np.errstate(over="ignore", invalid="ignore"):
            s = _sigmoid(xp, x)
            return s * (1 + x * (1 - s))
    return _backward_of_output(xp, grad_output, self, derivative)


@elementwise
def tanh_backward(xp: Any, grad_output: Array, output: Array) -> Any:
    """grad * (1 - y^2), y = tanh(x)."""
    return _backward_of_output(xp, grad_output, output, lambda y: 1 - y * y)


@elementwise
def sigmoid_backward(xp: Any, grad_output: Array, output: Array) -> Any:
    """grad * y (1 - y), y = sigmoid(x)."""
    return _backward_of_output(xp, grad_output, output, lambda y: (1 - y) * y)


def gelu_backward(xp: Any, grad_output: Array, self: Array, approximate: Any = 'none') -> Any:
    """grad * gelu'(x): Phi(x) + x phi(x), or for the tanh form, with t = tanh(beta (x + kappa x^3)),
    (1 + t) / 2 + x / 2 (1 - t^2) beta (1 + 3 kappa x^2)."""
    _check_approximate(approximate)
    npdt = result_np_dtype(grad_output, self)
    cdt = compute_dtype(npdt)
    g, x = asdtype(xp, grad_output, cdt), asdtype(xp, self, cdt)
    if compiled.usable(xp, g, x) and g.shape == x.shape:
        r = compiled.elementwise(loops.activation.gelu_tanh_backward if approximate == "tanh" else
                                 loops.activation.gelu_erf_backward, g, x)
        return r.astype(npdt, copy=False)
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            x_sq = x * x
            t = xp.tanh(_TANH_BETA * (x + _TANH_KAPPA * x_sq * x))
            d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_TANH_BETA * (1.0 + 3.0 * _TANH_KAPPA * x_sq))
        else:
            cdf = 0.5 * (1.0 + _erf(xp, x * _SQRT1_2))
            d = cdf + x * (xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi)))
        r = g * d
    return r.astype(npdt, copy=False)


# ------------------------------------------------------------------------------ activations
# ``Activation.cpp``: elementwise, computed in the opmath type (float32 for half types).
def _activation(name: Any, f: Any) -> Any:
    """An elementwise activation kernel ``f(xp, x, *args)`` on floating inputs, with PyTorch's dtype error."""
    @elementwise
    def kernel(xp: Any, self: Array, *args: Any) -> Any:
        if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
            raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")
        ct = compute_dtype(self.dtype)
        with np.errstate(all="ignore"):
            return xp.asarray(f(xp, asdtype(xp, self, ct), *args)).astype(self.dtype, copy=False)
    kernel.__name__ = kernel.__qualname__ = name
    globals()[name] = kernel
    __all__.append(name)


def _softplus(xp: Any, x: Array, beta: Any = 1.0, threshold: Any = 20.0) -> Any:
    if compiled.usable(xp, x):
        return compiled.elementwise(loops.activation.softplus, x, scalars=(float(beta), float(threshold)))
    bx = x * beta
    return compiled.where(xp, bx > threshold, x, xp.log1p(xp.exp(xp.minimum(bx, threshold))) / beta)


_activation("silu", lambda xp, x: compiled.elementwise(loops.activation.silu, x) if compiled.usable(xp, x) else
            x * _sigmoid(xp, x))
_activation("mish", lambda xp, x: compiled.elementwise(loops.activation.mish, x) if compiled.usable(xp, x) else
            x * xp.tanh(_softplus(xp, x)))
_activation("hardswish", lambda xp, x: compiled.elementwise(loops.activation.hardswish, x, grain=compiled.CHEAP_GRAIN)
            if compiled.usable(xp, x) else x * xp.clip(x + 3, 0, 6) / 6)
_activation("hardsigmoid", lambda xp, x: compiled.elementwise(loops.activation.hardsigmoid, x,
                                                              grain=compiled.CHEAP_GRAIN)
            if compiled.usable(xp, x) else xp.clip(x + 3, 0, 6) / 6)
_activation("leaky_relu", lambda xp, x, negative_slope=0.01: compiled.elementwise(
    loops.activation.leaky_relu, x, scalars=(np.float32(negative_slope),), grain=compiled.CHEAP_GRAIN)
    if compiled.usable(xp, x) else compiled.where(xp, x > 0, x, x * negative_slope))
def _elu(xp: Any, x: Array, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0) -> Any:
    if compiled.usable(xp, x):
        return compiled.elementwise(loops.activation.elu, x, scalars=(float(alpha), float(scale), float(input_scale)))
    return compiled.where(xp, x > 0, x * scale, xp.expm1(x * input_scale) * alpha * scale)


_activation("elu", _elu)
_activation("celu", lambda xp, x, alpha=1.0: _elu(xp, x, alpha, 1.0, 1.0 / alpha) if compiled.usable(xp, x) else
            compiled.where(xp, x > 0, x, xp.expm1(x / alpha) * alpha))
def _hardtanh(xp: Any, x: Array, min_val: Any = -1.0, max_val: Any = 1.0) -> Any:
    """clamp(x, min_val, max_val) in PyTorch's order (x kept where it equals a bound: Note [Selects])."""
    r = compiled.clamped(xp, x, min_val, max_val)
    if r is None:
        r = compiled.where(xp, x < min_val, xp.asarray(min_val, x.dtype), x)
        r = compiled.where(xp, r > max_val, xp.asarray(max_val, x.dtype), r)
    return r


_activation("hardtanh", _hardtanh)
_activation("softplus", _softplus)


def log_sigmoid_forward(xp: Any, self: Array) -> Any:
    """(log(sigmoid(x)), buffer): ``min(x, 0) - log1p(exp(-|x|))``; the buffer is empty on the CPU, as PyTorch's."""
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{type_name(self.dtype)}'")
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct)
    if compiled.usable(xp, x):
        out = compiled.elementwise(loops.activation.log_sigmoid, x).astype(self.dtype, copy=False)
    else:
        out = (xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))).astype(self.dtype, copy=False)
    return out, xp.empty((0,), self.dtype)


setattr(log_sigmoid_forward, "meta_kernel",
        lambda xp, self: (meta_array(self.dtype, self.shape), meta_array(self.dtype, (0,))))


def glu(xp: Any, self: Array, dim: Any = -1) -> Any:
    if self.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, self.ndim)
    if self.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {self.shape[d]}")
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"glu\" not implemented for '{type_name(self.dtype)}'")
    ct = compute_dtype(self.dtype)
    a, b = xp.split(asdtype(xp, self, ct), 2, axis=d)
    with np.errstate(all="ignore"):
        return (a * _sigmoid(xp, b)).astype(self.dtype, copy=False)




@elementwise
def threshold(xp: Any, self: Array, threshold: Any, value: Array) -> Any:
    """``value`` where ``x <= threshold``, else x (any real dtype, as PyTorch's)."""
    if self.dtype.kind == "b":
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    return compiled.where(xp, self <= threshold, xp.asarray(value).astype(self.dtype), self)


def _shrink_check(self: Array, lambd: Any, name: Any) -> Any:
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")


@elementwise
def softshrink(xp: Any, self: Array, lambd: Any = 0.5) -> Any:
    _shrink_check(self, lambd, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, {float(np.finfo(np.float32).max):g}] for input dtype "
                           f"{type_name(self.dtype)}, but found {lambd:g}")
    with np.errstate(invalid="ignore"):
        inner = compiled.where(xp, self < -lambd, self + lambd, self - self)   # +0, and NaN for NaN as PyTorch's
        return compiled.where(xp, self > lambd, self - lambd, inner).astype(self.dtype)


@elementwise
def hardshrink(xp: Any, self: Array, lambd: Any = 0.5) -> Any:
    _shrink_check(self, lambd, "hardshrink_cpu")
    return compiled.where(xp, (self >= -lambd) & (self <= lambd), 0, self).astype(self.dtype)




# ------------------------------------------------------------------------------ prelu, rrelu (Activation.cpp)
@elementwise
def _prelu_kernel(xp: Any, self: Array, weight: Array) -> Any:
    npdt = result_np_dtype(self, weight)
    if npdt.kind != "f" and npdt != BF16_NP:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{type_name(npdt)}'")
    return compiled.where(xp, self > 0, self, weight * self).astype(npdt, copy=False)


def _rrelu_checks(self: Array, noise: Array) -> Any:
    if self.dtype.kind != "f" and self.dtype != BF16_NP:
        raise NotImplementedError(f"\"rrelu_with_noise_out_cpu\" not implemented for '{type_name(self.dtype)}'")
    if noise.shape != self.shape:
        raise RuntimeError(f"noise tensor shape must match self tensor shape. Got self.shape = "
                           f"{shape_str(self.shape)} noise.shape = {shape_str(noise.shape)}")


def _rrelu_meta(xp: Any, self: Array, noise: Array, lower: Any = 0.125, upper: Any = 1.0 / 3,
                training: Any = False, generator: Any = None) -> Any:
    _rrelu_checks(self, noise)
    return xp.empty(self.shape, self.dtype)


@meta_kernel(_rrelu_meta)
def rrelu_with_noise(xp: Any, self: Array, noise: Array, lower: Any = 0.125, upper: Any = 1.0 / 3,
                     training: Any = False, generator: Any = None) -> Any:
    """Training: each element ``x <= 0`` (in index order) draws ``r ~ U(lower, upper)`` from one 64-bit number
    (PyTorch's ``uniform_real_distribution<double>``), gives ``x * r`` and writes ``r`` to ``noise`` (1 elsewhere).
    Evaluation: leaky_relu with slope ``(lower + upper) / 2``, ``noise`` untouched."""
    _rrelu_checks(self, noise)
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct)
    if not training:
        return compiled.where(xp, x > 0, x, x * ct.type((lower + upper) / 2)).astype(self.dtype, copy=False)
    neg = x <= 0
    n = int(neg.sum())
    u = uniform_bits(_gen(generator), n, np.dtype(np.float64))
    r = np.ones(x.shape, ct)
    r[np.asarray(neg.get() if hasattr(neg, "get") else neg)] = (u * (float(upper) - float(lower)) + float(lower))
    r = xp.asarray(r)
    noise[...] = r.astype(noise.dtype, copy=False)
    return compiled.where(xp, neg, x * r, x).astype(self.dtype, copy=False)
