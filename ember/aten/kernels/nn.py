"""Kernels of the ``torch.nn`` ops (``aten/src/ATen/native/{SoftMax,Activation,layer_norm,Convolution*,
DilatedMaxPool*,Embedding,PadNd}.cpp``).

Convolution works on the windows of the zero-padded input: ``sliding_window_view`` exposes, without a
copy, an array of shape (N, C, out..., k...) whose contraction with the weight over (C, k...) is one
BLAS GEMM per group (im2col + GEMM; the window array is materialised by ``tensordot`` as the column
matrix). The gradient with respect to the input is the transposed operation, done as one GEMM per
kernel offset whose result is added into a strided slice of the padded input gradient (col2im).
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any, Callable

import math

import numpy as np

from ember.aten.kernels import compiled, conv_algos
from ember.aten.kernels._common import (asdtype, chunked, compute_dtype, elementwise, meta_kernel, result_np_dtype,
                                       shape_str, type_name, wrap_dim)
from ember.aten.kernels.conv_algos import _windows
from ember.aten.kernels.random import _gen, bernoulli_p, uniform_bits
from ember.aten.meta import pooling_output_size
from ember.c10.dtype import BF16_NP

__all__ = ["softmax", "log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "gelu", "gelu_backward",
           "tanh_backward", "sigmoid_backward", "threshold_backward", "silu_backward", "mse_loss_backward",
           "native_layer_norm", "native_layer_norm_backward",
           "native_batch_norm", "native_batch_norm_backward", "convolution", "convolution_backward",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "constant_pad_nd", "embedding", "mse_loss",
           "nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward", "nll_loss2d_backward", "avg_pool2d",
           "avg_pool3d", "avg_pool2d_backward", "avg_pool3d_backward"]


# ------------------------------------------------------------------------------ softmax
# exp(x - max) / sum, with max taken as it is: a row whose maximum is not finite (NaN, +inf, or -inf throughout)
# comes out NaN throughout, as in PyTorch. float32 along the last dim runs numba's one-pass-per-stage row loops.
def _last_dim_rows(xp: Any, *arrays: Array, d: int) -> bool:
    """Whether the compiled row kernels apply: float32 NumPy arrays of one shape, reduced along their last dim."""
    a = arrays[0]
    return (a.ndim >= 1 and d == a.ndim - 1 and a.size > 0 and all(b.shape == a.shape for b in arrays)
            and compiled.usable(xp, *arrays))


def softmax(xp: Any, self: Array, dim: Any, half_to_float: Any = False) -> Any:
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.ones_like(self)
    if _last_dim_rows(xp, x, d=d):
        r = compiled.softmax(x.reshape(-1, x.shape[-1]), log=False).reshape(x.shape)
        return r.astype(self.dtype, copy=False)
    with np.errstate(all="ignore"):
        e = xp.exp(x - xp.max(x, axis=d, keepdims=True))
        r = e / xp.sum(e, axis=d, keepdims=True)
    return r.astype(self.dtype, copy=False)


def _safe_softmax(xp: Any, self: Array, dim: Any, dtype: Any = None) -> Any:
    """softmax, with 0 (not NaN) in the rows that are -inf throughout (attention rows masked entirely)."""
    x = self if dtype is None else self.astype(dtype.np, copy=False)
    r = softmax(xp, x, dim)
    if x.ndim == 0:
        return r
    masked = xp.all(x == -np.inf, axis=wrap_dim(dim, x.ndim), keepdims=True)
    return xp.where(masked, xp.zeros((), r.dtype), r)


def log_softmax(xp: Any, self: Array, dim: Any, half_to_float: Any = False) -> Any:
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.zeros_like(self)
    if _last_dim_rows(xp, x, d=d):
        r = compiled.softmax(x.reshape(-1, x.shape[-1]), log=True).reshape(x.shape)
        return r.astype(self.dtype, copy=False)
    with np.errstate(all="ignore"):
        s = x - xp.max(x, axis=d, keepdims=True)
        r = s - xp.log(xp.sum(xp.exp(s), axis=d, keepdims=True))
    return r.astype(self.dtype, copy=False)


def _softmax_backward_checks(name: str, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> int:
    d = wrap_dim(dim, max(output.ndim, 1))
    if name == "softmax" and grad_output.shape != output.shape:
        raise RuntimeError(f"Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
                           f"'output'; but {list(grad_output.shape)} does not equal {list(output.shape)} (while "
                           f"checking arguments for softmax_backward)")
    if grad_output.dtype.kind != "f" and grad_output.dtype != BF16_NP:
        kind = "_lastdim" if d == max(output.ndim, 1) - 1 else ""
        raise NotImplementedError(f"\"{name}_backward{kind}_kernel_impl\" not implemented for "
                                  f"'{type_name(grad_output.dtype)}'")
    if output.dtype != grad_output.dtype:
        raise RuntimeError(f"expected scalar type {type_name(grad_output.dtype)} but found {type_name(output.dtype)}")
    if grad_output.dtype == np.float32 and input_dtype.np == np.float16:     # half_to_float: not on the CPU
        raise RuntimeError("expected scalar type Float but found Half")
    return d


def _softmax_backward(name: str, xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    d = _softmax_backward_checks(name, grad_output, output, dim, input_dtype)
    log = name == "log_softmax"
    ct = compute_dtype(grad_output.dtype)
    g, y = asdtype(xp, grad_output, ct), asdtype(xp, output, ct)
    if g.ndim and _last_dim_rows(xp, g, y, d=d):
        n = g.shape[-1]
        r = compiled.softmax_backward(g.reshape(-1, n), y.reshape(-1, n), log=log).reshape(g.shape)
    else:
        with np.errstate(all="ignore"):
            total = (g if log else g * y).sum(axis=d, keepdims=True) if g.ndim else (g if log else g * y)
            r = g - xp.exp(y) * total if log else y * (g - total)
    return xp.ascontiguousarray(r).astype(grad_output.dtype, copy=False)


def _softmax_backward_data(xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    """softmax's input gradient from its output y: y * (grad - sum(grad * y)) along dim."""
    return _softmax_backward("softmax", xp, grad_output, output, dim, input_dtype)


def _log_softmax_backward_data(xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    """log_softmax's input gradient from its output y: grad - exp(y) * sum(grad) along dim."""
    return _softmax_backward("log_softmax", xp, grad_output, output, dim, input_dtype)


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
        r = compiled.elementwise("gelu_tanh" if approximate == "tanh" else "gelu_erf", x)
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
        return compiled.elementwise("threshold_backward", grad_output, self, scalars=(float(threshold),))
    g = grad_output if grad_output.dtype == npdt else grad_output.astype(npdt)
    return xp.where(self <= threshold, xp.zeros((), npdt), g)   # NumPy's where is exact but slow (a branch each)


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
    from ember.aten.kernels.unary import _sigmoid
    if compiled.usable(xp, grad_output, self) and grad_output.shape == self.shape:
        return compiled.elementwise("silu_backward", grad_output, self)

    def derivative(x: Any) -> Any:
        with np.errstate(over="ignore", invalid="ignore"):
            s = _sigmoid(xp, x)
            return s * (1 + x * (1 - s))
    return _backward_of_output(xp, grad_output, self, derivative)


@elementwise
def mse_loss_backward(xp: Any, grad_output: Array, self: Array, target: Array, reduction: Any) -> Any:
    """d mse_loss / d self: ``2 (self - target) grad``, over ``numel`` for the mean."""
    npdt = result_np_dtype(grad_output, self, target)
    cdt = compute_dtype(npdt)
    norm = 2.0 / self.size if reduction == 1 else 2.0
    g, x, t = asdtype(xp, grad_output, cdt), asdtype(xp, self, cdt), asdtype(xp, target, cdt)
    return ((x - t) * norm * g).astype(npdt, copy=False)


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
        r = compiled.elementwise("gelu_tanh_backward" if approximate == "tanh" else "gelu_erf_backward", g, x)
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


# ------------------------------------------------------------------------------ layer norm
def native_layer_norm(xp: Any, input: Array, normalized_shape: Any, weight: Array, bias: Array, eps: Any) -> Any:
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in normalized_shape)}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(normalized_shape)}")
    x = asdtype(xp, input, compute_dtype(input.dtype))
    n = int(np.prod(normalized_shape))
    if x.size and compiled.usable(xp, x):
        params = [None if t is None else asdtype(xp, t, np.float32) for t in (weight, bias)]
        out, mean, rstd = compiled.layer_norm(x.reshape(-1, n), params[0], params[1], eps)
        stat_shape = input.shape[:input.ndim - k] + (1,) * k
        return (out.reshape(input.shape).astype(input.dtype, copy=False),
                mean.reshape(stat_shape).astype(input.dtype, copy=False),
                rstd.reshape(stat_shape).astype(input.dtype, copy=False))
    axes = tuple(range(input.ndim - k, input.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=axes, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + eps)
    out = xc * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    stat_dt = input.dtype
    return out.astype(input.dtype, copy=False), mean.astype(stat_dt), rstd.astype(stat_dt)


def native_layer_norm_backward(xp: Any, grad_out: Array, input: Array, normalized_shape: Any, mean: Array,  # noqa: A002
                               rstd: Array, weight: Array, bias: Array, output_mask: Any) -> Any:
    """PyTorch's layer_norm_backward in a few array passes: with xhat = (x - mean) * rstd and g = grad * weight,
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the normalised dims; dweight = sum(grad * xhat),
    dbias = sum(grad) over the leading dims."""
    k = len(normalized_shape)
    axes = tuple(range(input.ndim - k, input.ndim))
    lead = tuple(range(input.ndim - k))
    ct = compute_dtype(input.dtype)
    x, g = asdtype(xp, input, ct), asdtype(xp, grad_out, ct)
    mean, rstd = asdtype(xp, mean, ct), asdtype(xp, rstd, ct)
    empty = xp.empty((0,), input.dtype)
    if x.size and g.shape == x.shape and compiled.usable(xp, x, g, mean, rstd):
        n = int(np.prod(normalized_shape))
        w = None if weight is None else asdtype(xp, weight, np.float32)
        gx, sw, sb = compiled.layer_norm_backward(g.reshape(-1, n), x.reshape(-1, n), mean, rstd, w)
        return (gx.reshape(input.shape).astype(input.dtype, copy=False) if output_mask[0] else empty,
                sw.reshape(weight.shape).astype(weight.dtype) if output_mask[1] and weight is not None else empty,
                sb.reshape(bias.shape).astype(bias.dtype) if output_mask[2] and bias is not None else empty)
    xhat = x - mean
    xhat *= rstd
    gi = gw = gb = empty
    if output_mask[0]:
        gg = g * asdtype(xp, weight, ct) if weight is not None else g
        c1 = (gg * xhat).mean(axis=axes, keepdims=True)
        c0 = gg.mean(axis=axes, keepdims=True)
        gi = xhat * c1
        xp.subtract(gg, gi, out=gi)
        gi -= c0
        gi *= rstd
        gi = gi.astype(input.dtype, copy=False)
    if output_mask[1] and weight is not None:
        gw = (g * xhat).sum(axis=lead).astype(weight.dtype, copy=False) if lead else (g * xhat).astype(weight.dtype)
    if output_mask[2] and bias is not None:
        gb = g.sum(axis=lead).astype(bias.dtype, copy=False) if lead else g.astype(bias.dtype)
    return gi, gw, gb


# ------------------------------------------------------------------------------ batch norm
def _batch_norm_checks(input: Array, weight: Array, bias: Array, running_mean: Array, running_var: Array,  # noqa: A002
                       training: Any) -> Any:
    if input.ndim < 2:
        wrap_dim(1, input.ndim)
    if input.dtype.kind != "f" and input.dtype != BF16_NP:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{type_name(input.dtype)}'")
    C = input.shape[1]
    params = (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var))
    for name, t in params:
        if t is not None and t.size != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.size}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")
    defined = [t for _, t in params if t is not None]
    if not defined or all(t.dtype == input.dtype for t in defined):
        return
    first = defined[0].dtype
    low = input.dtype.itemsize == 2
    if low and first == np.float32:            # bfloat16 / half input with float parameters: PyTorch's mixed type
        if any(t.dtype != np.float32 for t in defined):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        return
    if first != input.dtype:
        if input.dtype == np.float64:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    bad = next(t.dtype for t in defined if t.dtype != input.dtype)
    raise RuntimeError(f"expected scalar type {type_name(input.dtype)} but found {type_name(bad)}")


def _channel(a: Array, ndim: Any) -> Any:
    """A per-channel vector shaped to broadcast against (N, C, *)."""
    return a.reshape((1, -1) + (1,) * (ndim - 2))


def _stats_dtype(input: Array, weight: Array, bias: Array, running_mean: Array, running_var: Array) -> Any:
    """The dtype of save_mean / save_invstd: the parameters' for bfloat16 / half input with float parameters,
    else the input's."""
    for t in (weight, bias, running_mean, running_var):
        if t is not None:
            return t.dtype if input.dtype.itemsize == 2 else input.dtype
    return input.dtype


def _batch_norm_meta(xp: Any, input: Array, weight: Array, bias: Array, running_mean: Array, running_var: Array,
                     training: Any, momentum: Any, eps: Any) -> Any:  # noqa: A002
    _batch_norm_checks(input, weight, bias, running_mean, running_var, training)
    sd = _stats_dtype(input, weight, bias, running_mean, running_var)
    n = input.shape[1] if training else 0
    stat = np.broadcast_to(np.ones((), sd), (n,))
    return np.broadcast_to(np.ones((), input.dtype), input.shape), stat, stat


@meta_kernel(_batch_norm_meta)
def native_batch_norm(xp: Any, input: Array, weight: Array, bias: Array, running_mean: Array, running_var: Array,
                      training: Any, momentum: Any, eps: Any) -> Any:  # noqa: A002
    """PyTorch's batch_norm_cpu: normalise over every dim but the channel dim (1) with the batch's statistics
    (training, updating running_mean / running_var in place with ``momentum``, the variance unbiased) or with
    the running ones; returns (output, save_mean, save_invstd) -- the last two empty in evaluation mode.
    The output is ``x * alpha + beta`` with per-channel alpha = invstd * weight, beta = bias - mean * alpha."""
    _batch_norm_checks(input, weight, bias, running_mean, running_var, training)
    sd = _stats_dtype(input, weight, bias, running_mean, running_var)
    ct = compute_dtype(input.dtype)
    C, nd = input.shape[1], input.ndim
    axes = (0,) + tuple(range(2, nd))
    x = asdtype(xp, input, ct)
    fast = _bn_compiled(xp, input)
    if training:
        if input.size == 0:
            raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = "
                               f"{shape_str(input.shape)}")
        if fast:         # one compiled pass per statistic, float64 sums
            mean, var = (s.astype(ct) for s in compiled.batch_norm_stats(x))
        else:
            mean = x.mean(axis=axes)
            xc = x - _channel(mean, nd)
            xp.multiply(xc, xc, out=xc)
            var = xc.mean(axis=axes)
            del xc
        invstd = 1.0 / xp.sqrt(var + eps)
        if running_mean is not None or running_var is not None:
            n = input.size // C
            for run, stat in ((running_mean, mean), (running_var, var * (n / max(n - 1, 1)))):
                if run is not None:
                    upd = momentum * stat + (1 - momentum) * asdtype(xp, run, ct)
                    run[...] = upd.astype(run.dtype, copy=False)
        save_mean, save_invstd = mean.astype(sd, copy=False), invstd.astype(sd, copy=False)
    else:
        mean = asdtype(xp, running_mean, ct)
        invstd = 1.0 / xp.sqrt(asdtype(xp, running_var, ct) + eps)
        save_mean = save_invstd = xp.empty((0,), sd)
    alpha = invstd * asdtype(xp, weight, ct) if weight is not None else invstd
    beta = -mean * alpha
    if bias is not None:
        beta = beta + asdtype(xp, bias, ct)
    if fast and input.size:
        return compiled.batch_norm_apply(x, alpha, beta), save_mean, save_invstd
    out = x * _channel(alpha, nd)
    out += _channel(beta, nd)
    return out.astype(input.dtype, copy=False), save_mean, save_invstd


def _bn_compiled(xp: Any, *arrays: Array) -> bool:
    """Whether batch norm's compiled channel loops apply: C-contiguous float32 NumPy arrays of 2+ dims."""
    return compiled.usable(xp, *arrays, dtypes=(np.float32,)) and all(
        a.ndim >= 2 and a.flags.c_contiguous for a in arrays)


def native_batch_norm_backward(xp: Any, grad_out: Array, input: Array, weight: Array, running_mean: Array,  # noqa: A002
                               running_var: Array, save_mean: Array, save_invstd: Array, train: Any, eps: Any,
                               output_mask: Any) -> Any:
    """PyTorch's batch_norm_backward_cpu.  Training, per channel over M = numel / C elements:
    dx = weight * invstd * (g - sum(g) / M - (x - mean) * invstd^2 * sum(g * (x - mean)) / M),
    evaluation (statistics are constants): dx = g * weight * invstd_running; dweight = sum(g * xhat),
    dbias = sum(g)."""
    ct = compute_dtype(input.dtype)
    sd = _stats_dtype(input, weight, None, running_mean, running_var)
    C, nd = input.shape[1], input.ndim
    axes = (0,) + tuple(range(2, nd))
    x, g = asdtype(xp, input, ct), asdtype(xp, grad_out, ct)
    if train:
        mean, invstd = asdtype(xp, save_mean, ct), asdtype(xp, save_invstd, ct)
    else:
        mean = asdtype(xp, running_mean, ct)
        invstd = 1.0 / xp.sqrt(asdtype(xp, running_var, ct) + eps)
    w = asdtype(xp, weight, ct) if weight is not None else xp.ones((C,), ct)
    M = input.size // C if C else 0
    train_gi = output_mask[0] and train and M
    fast = M and _bn_compiled(xp, x, g)
    sum_g: Any = None
    xc: Any = None
    tmp: Any = None
    dot: Any = None
    if fast and (output_mask[1] or output_mask[2] or train_gi):     # both sums in one compiled pass
        sum_g, dot = (s.astype(ct) for s in compiled.batch_norm_backward_sums(g, x, mean))
    else:
        sum_g = g.sum(axis=axes) if output_mask[2] or train_gi else None
        if output_mask[1] or train_gi:
            xc = x - _channel(mean, nd)
            tmp = g * xc
            dot = tmp.sum(axis=axes)
    empty = xp.empty((0,), input.dtype)
    gi = gw = gb = empty
    if output_mask[0]:
        k1 = invstd * w
        if train_gi:
            k2 = -(invstd * invstd * invstd) * w * dot / M
            k3 = -k1 * sum_g / M
            if fast:
                gi = compiled.batch_norm_backward_input(g, x, mean, k1, k2, k3)
            else:
                xp.multiply(xc, _channel(k2, nd), out=xc)          # xc is ours: reuse it for the result
                xp.multiply(g, _channel(k1, nd), out=tmp)
                xc += tmp
                xc += _channel(k3, nd)
                gi = xc
        else:
            gi = g * _channel(k1, nd)
        gi = gi.astype(input.dtype, copy=False)
    if output_mask[1]:
        gw = (dot * invstd).astype(weight.dtype if weight is not None else sd, copy=False)
    if output_mask[2]:
        gb = sum_g.astype(weight.dtype if weight is not None else sd, copy=False)
    return gi, gw, gb


# ------------------------------------------------------------------------------ convolution
def _conv_forward(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    return conv_algos.run("forward", xp, x, w, None, stride, padding, dilation, groups)


def _conv_input_grad(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any,
                     groups: Any) -> Any:
    """Gradient of the convolution with respect to its input (the transposed convolution of gout)."""
    return conv_algos.run("input_grad", xp, gout, w, tuple(in_shape), stride, padding, dilation, groups)


def _conv_weight_grad(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any,
                      groups: Any) -> Any:
    return conv_algos.run("weight_grad", xp, gout, x, tuple(w_shape), stride, padding, dilation, groups)


def _conv_out_size(in_sp: Any, ksize: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(in_sp, ksize, stride, padding,
                                                                                dilation))


def _expand(v: Any, nd: Any, name: Any) -> Any:
    v = tuple(v)
    if len(v) == 1:
        v = v * nd
    if len(v) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


def _check_conv(input: Array, weight: Array, bias: Array, stride: Any, padding: Any, dilation: Any,  # noqa: A002
                transposed: Any, output_padding: Any, groups: Any) -> Any:
    nd = weight.ndim - 2
    if input.ndim != weight.ndim:
        raise RuntimeError(f"Expected {weight.ndim}D (unbatched) or {weight.ndim + 1}D (batched) input to "
                           f"conv{nd}d, but got input of size: {list(input.shape)}")
    stride, padding = _expand(stride, nd, "stride"), _expand(padding, nd, "padding")
    dilation, output_padding = _expand(dilation, nd, "dilation"), _expand(output_padding, nd, "output_padding")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    C = input.shape[1]
    if not transposed:
        if weight.shape[1] * groups != C:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                               f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {C} channels "
                               "instead")
        if weight.shape[0] % groups != 0:
            raise RuntimeError("Given groups=" + str(groups) + ", expected weight to be divisible by " + str(groups) +
                               " at dimension 0, but got weight of size " + str(list(weight.shape)) + " instead")
        eff = tuple(d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:]))
        padded = tuple(i + 2 * p for i, p in zip(input.shape[2:], padding))
        if any(e > q for e, q in zip(eff, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                               f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input "
                               "size")
    else:
        if weight.shape[0] != C:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                               f"{list(input.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if bias is not None:
        out_c = weight.shape[0] if not transposed else weight.shape[1] * groups
        if bias.ndim != 1 or bias.shape[0] != out_c:
            raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                               f"{out_c} elements, but got bias of size {list(bias.shape)} instead")
    return stride, padding, dilation, output_padding


def convolution(xp: Any, input: Array, weight: Array, bias: Array, stride: Any, padding: Any, dilation: Any,
                transposed: Any, output_padding: Any, groups: Any) -> Any:  # noqa: A002
    stride, padding, dilation, output_padding = _check_conv(input, weight, bias, stride, padding, dilation,
                                                            transposed, output_padding, groups)
    rdt = np.result_type(input.dtype, weight.dtype)
    cdt = compute_dtype(rdt)         # half precision: float32 GEMMs, the result rounded once
    x, w = input.astype(cdt, copy=False), weight.astype(cdt, copy=False)
    if not transposed:
        out = _conv_forward(xp, x, w, stride, padding, dilation, groups)
    else:
        # weight (C_in, C_out/g, k...): the transposed conv is the input-gradient of a conv with that weight
        in_sp = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                      zip(x.shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
        out = _conv_input_grad(xp, x, w, (x.shape[0], w.shape[1] * groups) + in_sp, stride, padding, dilation, groups)
    if bias is not None:
        out = out + bias.astype(cdt, copy=False).reshape((1, -1) + (1,) * (out.ndim - 2))
    return xp.ascontiguousarray(out).astype(rdt, copy=False)


def convolution_backward(xp: Any, grad_output: Array, input: Array, weight: Array, bias_sizes: Any, stride: Any,
                         padding: Any, dilation: Any, transposed: Any, output_padding: Any, groups: Any,
                         output_mask: Any) -> Any:  # noqa: A002
    stride, padding, dilation, output_padding = _check_conv(input, weight, None, stride, padding, dilation,
                                                            transposed, output_padding, groups)
    cdt = compute_dtype(grad_output.dtype)     # half precision: float32 GEMMs and sums, rounded once
    g, x, w = (a.astype(cdt, copy=False) for a in (grad_output, input, weight))
    gi = gw = gb = None
    if not transposed:
        if output_mask[0]:
            gi = _conv_input_grad(xp, g, w, x.shape, stride, padding, dilation, groups)
        if output_mask[1]:
            gw = _conv_weight_grad(xp, g, x, w.shape, stride, padding, dilation, groups)
    else:
        if output_mask[0]:  # the transposed conv's input gradient is a plain convolution of grad
            gi = _conv_forward(xp, g, w, stride, padding, dilation, groups)
            gi = gi[(slice(None), slice(None)) + tuple(slice(0, n) for n in x.shape[2:])]
        if output_mask[1]:  # roles of input and grad swap
            gw = _conv_weight_grad(xp, x, g, w.shape, stride, padding, dilation, groups)
    if output_mask[2]:
        gb = g.sum(axis=(0,) + tuple(range(2, g.ndim)))
    rdt = grad_output.dtype
    empty = xp.empty((0,), rdt)
    return (xp.ascontiguousarray(gi).astype(rdt, copy=False) if gi is not None else empty,
            xp.ascontiguousarray(gw).astype(rdt, copy=False) if gw is not None else empty,
            gb.astype(rdt, copy=False) if gb is not None else empty)


# ------------------------------------------------------------------------------ pooling
def max_pool2d_with_indices(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: Any = False) -> Any:
    return _max_pool(xp, self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: Any = False) -> Any:
    return _max_pool(xp, self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool(xp: Any, self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: Any) -> Any:
    if self.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    batched = self.ndim == nd + 2
    x = self if batched else self[None]
    k = _expand(kernel_size, nd, "kernel_size")
    s = _expand(stride, nd, "stride") if len(tuple(stride)) else k
    p = _expand(padding if not isinstance(padding, int) else (padding,), nd, "padding")
    d = _expand(dilation if not isinstance(dilation, int) else (dilation,), nd, "dilation")
    s = tuple(s)
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={d[0]}")
    out_sp = tuple(pooling_output_size(i, kk, ss, pp, dd, ceil_mode)
                   for i, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[1],) + out_sp))}). Output size is too small")
    in_sp = x.shape[2:]
    if compiled.usable(xp, x, dtypes=(np.float32, np.float64)):
        # one pass per plane: windows clipped to the input (Note in _numba_kernels.max_pool3d)
        one = (1,) * (3 - nd)
        planes = x.reshape((-1,) + one + tuple(in_sp))
        vals, idx = compiled.max_pool(planes, one + tuple(k), one + s, (0,) * (3 - nd) + tuple(p),
                                      one + tuple(d), one + out_sp)
        vals, idx = vals.reshape(x.shape[:2] + out_sp), idx.reshape(x.shape[:2] + out_sp)
        return (vals, idx) if batched else (vals[0], idx[0])
    # pad with -inf on the left by p and on the right enough for every (ceil-mode) window
    right = tuple(max(0, (o - 1) * ss + dd * (kk - 1) + 1 - i - pp) for o, ss, dd, kk, i, pp in
                  zip(out_sp, s, d, k, in_sp, p))
    floating = x.dtype.kind == "f" or x.dtype == BF16_NP
    fill = -np.inf if floating else np.iinfo(x.dtype).min
    xpad = xp.pad(x, [(0, 0), (0, 0)] + [(pp, rr) for pp, rr in zip(p, right)], constant_values=fill)
    win = _windows(xp, xpad, k, s, d)
    win = win[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_sp)]
    flat = win.reshape(win.shape[:2 + nd] + (-1,))
    # NaN wins, the last one of a window, as in PyTorch's kernel; among equal maxima the first one
    isnan = xp.isnan(flat) if floating else None
    arg = xp.argmax(flat, axis=-1)
    if isnan is not None and bool(isnan.any()):
        nan_arg = flat.shape[-1] - 1 - xp.argmax(isnan[..., ::-1], axis=-1)
        arg = xp.where(isnan.any(axis=-1), nan_arg, arg)
    vals = xp.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    # flat index into the (unpadded) input's spatial dims
    koff = np.unravel_index(np.asarray(arg.get() if hasattr(arg, "get") else arg), k)
    idx = 0
    for ax in range(nd):
        pos = xp.arange(out_sp[ax]).reshape((1, 1) + tuple(-1 if a == ax else 1 for a in range(nd))) * s[ax] \
            - p[ax] + xp.asarray(koff[ax]) * d[ax]
        idx = idx * in_sp[ax] + pos
    idx = xp.broadcast_to(idx, vals.shape).astype(np.int64)
    if not batched:
        vals, idx = vals[0], idx[0]
    return xp.ascontiguousarray(vals), xp.ascontiguousarray(idx)


# ------------------------------------------------------------------------------ padding
def constant_pad_nd(xp: Any, self: Array, pad: Any, value: Array = 0) -> Any:
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals " + str(len(pad)))
    if len(pad) // 2 > self.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)} while the input has {self.ndim} dimensions.")
    out = self
    for i in range(len(pad) // 2):
        ax = self.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0:
            out = out[(slice(None),) * ax + (slice(-lo, None),)]
            lo = 0
        if hi < 0:
            out = out[(slice(None),) * ax + (slice(0, out.shape[ax] + hi),)]
            hi = 0
        if lo or hi:
            widths = [(0, 0)] * self.ndim
            widths[ax] = (lo, hi)
            out = xp.pad(out, widths, constant_values=value)
    return xp.ascontiguousarray(out) if out is not self else out.copy()


# ------------------------------------------------------------------------------ embedding
def embedding(xp: Any, weight: Array, indices: Array, padding_idx: Any = -1, scale_grad_by_freq: Any = False,
              sparse: Any = False) -> Any:
    if indices.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {'torch.' + {'f': 'Float', 'b': 'Bool'}.get(indices.dtype.kind, '')}"
                           "Tensor instead (while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight.shape[0]
    if indices.size and (int(indices.max()) >= n or int(indices.min()) < 0):
        raise IndexError("index out of range in self")
    return weight[indices]


# ------------------------------------------------------------------------------ losses
_MEAN, _SUM = 1, 2  # at::Reduction (None is 0)


def mse_loss(xp: Any, self: Array, target: Array, reduction: Any = _MEAN) -> Any:
    """``(self - target) ** 2``, then the mean, the sum or nothing (``aten/src/ATen/native/Loss.cpp``). The
    Python layer broadcasts ``self`` and ``target`` first, as PyTorch's ``F.mse_loss`` does."""
    npdt = result_np_dtype(self, target)
    if npdt.kind not in "fc":
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{type_name(npdt)}'")
    cdt = compute_dtype(npdt)
    with np.errstate(all="ignore"):
        d = xp.subtract(self, target, dtype=cdt)
        loss = xp.multiply(d, d, out=d)
        if reduction == _SUM:
            loss = xp.add.reduce(loss.reshape(-1))
        elif reduction == _MEAN:
            loss = xp.add.reduce(loss.reshape(-1)) / loss.size if loss.size else xp.asarray(np.nan, cdt)
    return xp.asarray(loss).astype(npdt, copy=False)


def _meta_array(dtype: Any, shape: Any) -> Any:
    """A metadata-only result for a meta_kernel: ``shape`` and ``dtype``, no memory."""
    return np.broadcast_to(np.empty((), dtype), shape)


# ------------------------------------------------------------------------------ nll_loss
# ``aten/src/ATen/native/LossNLL.cpp`` and ``LossNLL2d.cpp``: scores of shape (N, C) (or (C,) without a batch) or
# (N, C, H, W) with one class index per row / pixel. Both kernels move the class dim last and work on (M, C).
def _nll_dtypes(self: Array, target: Array, weight: Array) -> Any:
    if self.dtype.kind != "f" and self.dtype != BF16_NP:
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for '{type_name(self.dtype)}'")
    if target.dtype != np.int64 and target.dtype != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {type_name(target.dtype)}")
    if weight is not None and weight.dtype != self.dtype:
        raise RuntimeError(f"expected scalar type {type_name(self.dtype)} but found {type_name(weight.dtype)}")


def _nll_checks(self: Array, target: Array, weight: Array, spatial: Any) -> Any:
    """The shape checks of PyTorch's nll_loss_forward meta function / ``check_inputs_nll_loss2d``."""
    if spatial:
        if target.ndim != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                               f"{target.ndim}")
        if self.ndim != 4:
            raise RuntimeError(f"only batches of spatial inputs supported (4D tensors), but got input of dimension: "
                               f"{self.ndim}")
        if weight is not None and weight.size != self.shape[1]:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        if (self.shape[0], self.shape[2], self.shape[3]) != target.shape:
            raise RuntimeError(f"size mismatch (got input: {shape_str(self.shape)} , target: {shape_str(target.shape)}")
    else:
        if not 0 < self.ndim <= 2:
            raise RuntimeError("input tensor should be 1D or 2D")
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if self.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        if self.ndim == 2:
            if target.ndim == 0:
                raise IndexError("Dimension specified as 0 but tensor has no dimensions")
            if self.shape[0] != target.shape[0]:
                raise RuntimeError(f"size mismatch (got input: {shape_str(self.shape)}, target: "
                                   f"{shape_str(target.shape)})")
        c = self.shape[-1]
        if weight is not None and (weight.ndim != 1 or weight.size != c):
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {shape_str(weight.shape)}")
    _nll_dtypes(self, target, weight)


def _rows(xp: Any, self: Array, target: Array, spatial: Any) -> Any:
    """Scores as (M, C) rows and targets as (M,) int64."""
    if spatial:
        x = xp.moveaxis(self, 1, -1).reshape(-1, self.shape[1])
    else:
        x = self.reshape(-1, self.shape[-1])
    return x, target.reshape(-1).astype(np.int64, copy=False)


def _picked_weights(xp: Any, x: Array, t: Array, weight: Array, ignore_index: Any, ct: Any) -> Any:
    """Per row: the target's score, its class weight (0 where the target is ignore_index) and the valid mask;
    PyTorch's "Target k is out of bounds." for the first invalid target in order."""
    valid = t != ignore_index
    c = x.shape[1]
    bad = valid & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe = xp.where(valid, t, 0)
    picked = x[xp.arange(x.shape[0]), safe].astype(ct, copy=False)
    w = valid.astype(ct) if weight is None else xp.where(valid, weight.astype(ct, copy=False)[safe], 0)
    return picked, w, valid


def _nll_forward_meta(xp: Any, self: Array, target: Array, weight: Array, reduction: Any, ignore_index: Any,
                      spatial: Any = False) -> Any:
    _nll_checks(self, target, weight, spatial)
    if reduction == 0 and (spatial or self.ndim == 2):
        shape = target.shape
    else:
        shape = ()
    return _meta_array(self.dtype, shape), np.empty((), self.dtype)


@meta_kernel(_nll_forward_meta)
def nll_loss_forward(xp: Any, self: Array, target: Array, weight: Array, reduction: Any, ignore_index: Any,
                     spatial: Any = False) -> Any:
    """(output, total_weight): ``-weight[t] * self[i, t]`` per row (0 where ``t == ignore_index``), kept per row for
    reduction None with a batch, else summed, and for Mean divided by the summed weights (NaN for no rows)."""
    _nll_checks(self, target, weight, spatial)
    ct = compute_dtype(self.dtype)
    x, t = _rows(xp, self, target, spatial)
    picked, w, valid = _picked_weights(xp, x, t, weight, ignore_index, ct)
    with np.errstate(all="ignore"):
        loss = xp.where(valid, -(picked * w), 0)
        if reduction == 0 and (spatial or self.ndim == 2):
            return loss.reshape(target.shape).astype(self.dtype), xp.zeros((), self.dtype)
        if t.size == 0:
            out = np.nan if reduction == _MEAN else 0.0
            return xp.asarray(out, self.dtype), xp.zeros((), self.dtype)
        total = xp.add.reduce(w)
        out = xp.add.reduce(loss)
        if reduction == _MEAN:
            out = out / total
    return xp.asarray(out).astype(self.dtype), xp.asarray(total).astype(self.dtype)


def nll_loss2d_forward(xp: Any, self: Array, target: Array, weight: Array, reduction: Any, ignore_index: Any) -> Any:
    return nll_loss_forward(xp, self, target, weight, reduction, ignore_index, spatial=True)


setattr(nll_loss2d_forward, "meta_kernel",
        lambda xp, s, t, w, r, i: _nll_forward_meta(xp, s, t, w, r, i, spatial=True))


def _nll_backward_checks(grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                         total_weight: Array, spatial: Any) -> Any:
    if spatial:
        _nll_checks(self, target, weight, True)
    else:
        if not 0 < self.ndim <= 2:
            raise RuntimeError("input tensor should be 1D or 2D")
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if self.ndim == 2 and (target.ndim == 0 or self.shape[0] != target.shape[0]):
            raise RuntimeError(f"size mismatch (got input: {shape_str(self.shape)}, target: {shape_str(target.shape)})")
    if total_weight.size != 1:
        raise RuntimeError(f"expected total_weight to be a  single element tensor, got: "
                           f"{shape_str(total_weight.shape)} ({total_weight.size} elements)")
    if not spatial and weight is not None and weight.size != self.shape[-1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    if reduction == 0 and spatial:
        if grad_output.ndim != 3:
            raise RuntimeError(f"grad_output must have same dimension as target (3) but got dimension: "
                               f"{shape_str(grad_output.shape)}")
        if grad_output.shape != target.shape:
            raise RuntimeError(f"size mismatch (got grad_output: {shape_str(grad_output.shape)} target: "
                               f"{shape_str(target.shape)}")
    elif reduction == 0 and self.ndim == 2:
        if grad_output.ndim != 1 or grad_output.shape[0] != self.shape[0]:
            raise RuntimeError(f"Expected a tensor of dimension 1 and tensor.size[0] == {self.shape[0]} but got: "
                               f"dimension {grad_output.ndim} and tensor.size[0] = "
                               f"{grad_output.shape[0] if grad_output.ndim else 1}")
    elif grad_output.ndim > 1 or grad_output.size != 1:
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: {shape_str(grad_output.shape)}")
    _nll_dtypes(self, target, weight)


def _nll_backward_meta(xp: Any, grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                       ignore_index: Any, total_weight: Array, spatial: Any = False) -> Any:
    _nll_backward_checks(grad_output, self, target, weight, reduction, total_weight, spatial)
    return _meta_array(self.dtype, self.shape)


@meta_kernel(_nll_backward_meta)
def nll_loss_backward(xp: Any, grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                      ignore_index: Any, total_weight: Array, spatial: Any = False) -> Any:
    """The gradient of nll_loss_forward with respect to ``self``: ``-weight[t] * grad`` at each row's target
    (divided by total_weight for Mean), zero elsewhere and on ignored rows."""
    _nll_backward_checks(grad_output, self, target, weight, reduction, total_weight, spatial)
    ct = compute_dtype(self.dtype)
    x, t = _rows(xp, self, target, spatial)
    valid = t != ignore_index
    c = x.shape[1]
    bad = valid & ((t < 0) | (t >= c))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe = xp.where(valid, t, 0)
    w = valid.astype(ct) if weight is None else xp.where(valid, weight.astype(ct, copy=False)[safe], 0)
    g = grad_output.astype(ct, copy=False)
    with np.errstate(all="ignore"):
        if reduction == 0 and (spatial or self.ndim == 2):
            g = g.reshape(-1)
        else:
            g = g.reshape(())
            if reduction == _MEAN:
                g = g / total_weight.reshape(()).astype(ct)
        vals = xp.where(valid, -(w * g), 0)
    gi = xp.zeros(x.shape, ct)
    gi[xp.arange(x.shape[0]), safe] = vals
    if spatial:
        n, _, h, wd = self.shape
        gi = xp.moveaxis(gi.reshape(n, h, wd, c), -1, 1)
    return xp.ascontiguousarray(gi.reshape(self.shape)).astype(self.dtype, copy=False)


def nll_loss2d_backward(xp: Any, grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                        ignore_index: Any, total_weight: Array) -> Any:
    return nll_loss_backward(xp, grad_output, self, target, weight, reduction, ignore_index, total_weight, spatial=True)


setattr(nll_loss2d_backward, "meta_kernel",
        lambda xp, g, s, t, w, r, i, tw: _nll_backward_meta(xp, g, s, t, w, r, i, tw, spatial=True))


# ------------------------------------------------------------------------------ avg_pool
# ``AveragePool2d.cpp`` / ``AveragePool3d.cpp``: each output is the sum of its window of the zero-padded input over
# a divisor — ``divisor_override``, else the window clipped to input + padding (``count_include_pad``) or to the
# input alone; a window wholly in the padding gives 0. The sum runs over kernel offsets: one strided slice of the
# padded input per offset, added into the output (the backward adds the scaled gradient back the same way).
def _avg_pool_args(self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
                   divisor_override: Any) -> Any:
    name, either = f"avg_pool{nd}d", "either " if nd == 2 else ""
    kernel_size, stride, padding = ((v,) if isinstance(v, int) else tuple(v) for v in (kernel_size, stride, padding))
    if len(kernel_size) not in (1, nd):
        raise RuntimeError(f"{name}: kernel_size must {either}be a single int, or a tuple of {_NUMS[nd]} ints")
    if len(stride) not in (0, 1, nd):
        raise RuntimeError(f"{name}: stride must {either}be omitted, a single int, or a tuple of {_NUMS[nd]} ints")
    if len(padding) not in (1, nd):
        raise RuntimeError(f"{name}: padding must {either}be a single int, or a tuple of {_NUMS[nd]} ints")
    k = kernel_size * nd if len(kernel_size) == 1 else kernel_size
    s = k if not stride else stride * nd if len(stride) == 1 else stride
    p = padding * nd if len(padding) == 1 else padding
    if nd == 3 and self.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if nd == 2:
        if self.ndim < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(self.ndim, 1)}, "
                             f"{max(self.ndim, 1) - 1}], but got -3)")
    for ss in s:
        if ss == 0:
            raise RuntimeError("stride should not be zero")
    for kk, pp in zip(k, p):
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > kk // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation=1")
    in_sp = self.shape[-nd:]
    out_sp = tuple(pooling_output_size(i, kk, ss, pp, 1, ceil_mode) for i, kk, ss, pp in zip(in_sp, k, s, p))
    planes = self.shape[-nd - 1]
    if nd == 2:
        if not ((self.ndim == 3 and self.shape[0] and self.shape[1] and self.shape[2]) or
                (self.ndim == 4 and self.shape[1] and self.shape[2] and self.shape[3])):
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{shape_str(self.shape)}")
        if any(kk <= 0 for kk in k):
            raise RuntimeError(f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}")
        if any(ss < 0 for ss in s):
            raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    else:
        for i in range(self.ndim):
            if not (self.ndim == 5 and i == 0) and self.shape[i] <= 0:
                raise RuntimeError(f"avg_pool3d(): Expected input's non-batch dimensions to have positive length, but "
                                   f"input has a shape of {shape_str(self.shape)} and non-batch dimension "
                                   f"{self.shape[i]} has length zero!")
        if any(i < kk for i, kk in zip(in_sp, k)):
            raise RuntimeError(f"input image (T: {in_sp[0]} H: {in_sp[1]} W: {in_sp[2]}) smaller than kernel size "
                               f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(o < 1 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (planes,) + tuple(in_sp)))}). Calculated output "
                           f"size: ({'x'.join(map(str, (planes,) + out_sp))}). Output size is too small")
    return k, s, p, out_sp


_NUMS = {1: "one", 2: "two", 3: "three"}


def _avg_pool_divisor(xp: Any, in_sp: Any, out_sp: Any, k: Any, s: Any, p: Any, count_include_pad: Any,
                      divisor_override: Any, dtype: Any) -> Any:
    """Per output position (broadcast over the spatial dims): the divisor of its window."""
    if divisor_override is not None:
        return xp.asarray(divisor_override, dtype)
    nd = len(k)
    div: Any = None
    for ax, (i, o, kk, ss, pp) in enumerate(zip(in_sp, out_sp, k, s, p)):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, i + pp)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, i)
        n = (end - start).reshape(tuple(-1 if a == ax else 1 for a in range(nd)))
        div = n if div is None else div * n
    return xp.asarray(div.astype(dtype))


def _window_slices(out_sp: Any, s: Any, offset: Any) -> Any:
    return tuple(slice(off, off + (o - 1) * ss + 1, ss) for o, ss, off in zip(out_sp, s, offset))


def _avg_pool_meta(xp: Any, self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
                   count_include_pad: Any, divisor_override: Any) -> Any:
    _, _, _, out_sp = _avg_pool_args(self, nd, kernel_size, stride, padding, ceil_mode, divisor_override)
    return _meta_array(self.dtype, self.shape[:-nd] + out_sp)


def _avg_pool(xp: Any, self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
              count_include_pad: Any, divisor_override: Any) -> Any:
    k, s, p, out_sp = _avg_pool_args(self, nd, kernel_size, stride, padding, ceil_mode, divisor_override)
    in_sp = self.shape[-nd:]
    lead = self.shape[:-nd]
    ct = compute_dtype(self.dtype) if self.dtype.kind != "i" and self.dtype.kind != "u" else np.dtype(np.float64)
    right = tuple(max(0, (o - 1) * ss + kk - i - pp) for o, ss, kk, i, pp in zip(out_sp, s, k, in_sp, p))
    x = asdtype(xp, self, ct)
    x = xp.pad(x, [(0, 0)] * len(lead) + [(pp, rr) for pp, rr in zip(p, right)])
    out = xp.zeros(lead + out_sp, ct)
    for offset in np.ndindex(*k):
        out += x[(Ellipsis,) + _window_slices(out_sp, s, offset)]
    div = _avg_pool_divisor(xp, in_sp, out_sp, k, s, p, count_include_pad, divisor_override, ct)
    with np.errstate(all="ignore"):
        out = xp.where(div != 0, out / div, 0)
    if ct != self.dtype and self.dtype.kind in "iu":
        out = xp.trunc(out)
    return out.astype(self.dtype, copy=False)


def _avg_pool_backward(xp: Any, grad_output: Array, self: Array, nd: Any, kernel_size: Any, stride: Any,
                       padding: Any, ceil_mode: Any, count_include_pad: Any, divisor_override: Any) -> Any:
    k, s, p, out_sp = _avg_pool_args(self, nd, kernel_size, stride, padding, ceil_mode, divisor_override)
    in_sp = self.shape[-nd:]
    lead = self.shape[:-nd]
    if grad_output.shape != lead + out_sp:
        for ax in range(self.ndim - nd - 1, self.ndim):
            want = (lead + out_sp)[ax]
            if grad_output.ndim != self.ndim or grad_output.shape[ax] != want:
                raise RuntimeError(f"Expected a tensor of dimension {self.ndim} and tensor.size[{ax}] == {want} but "
                                   f"got: dimension {grad_output.ndim} and tensor.size[{ax}] = "
                                   f"{grad_output.shape[ax] if ax < grad_output.ndim else 1}")
    ct = compute_dtype(self.dtype)
    right = tuple(max(0, (o - 1) * ss + kk - i - pp) for o, ss, kk, i, pp in zip(out_sp, s, k, in_sp, p))
    div = _avg_pool_divisor(xp, in_sp, out_sp, k, s, p, count_include_pad, divisor_override, ct)
    with np.errstate(all="ignore"):
        g = xp.where(div != 0, asdtype(xp, grad_output, ct) / div, 0)
    gi = xp.zeros(lead + tuple(i + pp + rr for i, pp, rr in zip(in_sp, p, right)), ct)
    for offset in np.ndindex(*k):
        gi[(Ellipsis,) + _window_slices(out_sp, s, offset)] += g
    gi = gi[(Ellipsis,) + tuple(slice(pp, pp + i) for pp, i in zip(p, in_sp))]
    return xp.ascontiguousarray(gi).astype(self.dtype, copy=False)


def _avg_pool_backward_meta(xp: Any, grad_output: Array, self: Array, *args: Any) -> Any:
    return _meta_array(self.dtype, self.shape)


@meta_kernel(lambda xp, self, *a: _avg_pool_meta(xp, self, 2, *a))
def avg_pool2d(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = (0,),
               ceil_mode: Any = False, count_include_pad: Any = True, divisor_override: Any = None) -> Any:
    return _avg_pool(xp, self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


@meta_kernel(lambda xp, self, *a: _avg_pool_meta(xp, self, 3, *a))
def avg_pool3d(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = (0,),
               ceil_mode: Any = False, count_include_pad: Any = True, divisor_override: Any = None) -> Any:
    return _avg_pool(xp, self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


@meta_kernel(_avg_pool_backward_meta)
def avg_pool2d_backward(xp: Any, grad_output: Array, self: Array, kernel_size: Any, stride: Any, padding: Any,
                        ceil_mode: Any, count_include_pad: Any, divisor_override: Any) -> Any:
    return _avg_pool_backward(xp, grad_output, self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override)


@meta_kernel(_avg_pool_backward_meta)
def avg_pool3d_backward(xp: Any, grad_output: Array, self: Array, kernel_size: Any, stride: Any, padding: Any,
                        ceil_mode: Any, count_include_pad: Any, divisor_override: Any) -> Any:
    return _avg_pool_backward(xp, grad_output, self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override)


# ------------------------------------------------------------------------------ upsample
# ``UpSample.h`` / ``UpSample*.cpp``: each output position of a spatial dim reads input positions at PyTorch's
# source coordinates (``area_pixel_compute_source_index``); nearest / nearest-exact take one, linear modes two and
# bicubic four (Keys' cubic convolution, A = -0.75), separably one dim at a time. The backward scatters the
# weighted gradient back to those positions.
_UPSAMPLE_DIM_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


def _source_weights(in_size: Any, out_size: Any, scale: Any, mode: Any, align_corners: Any) -> Any:
    """For one spatial dim: [(index array, weight array or None)] with ``out[o] = sum_k w_k[o] * in[idx_k[o]]``."""
    dst = np.arange(out_size, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        s = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
        src = np.floor((dst + 0.5) * s) if mode == "nearest-exact" else np.floor(dst * s)
        return [(np.minimum(src.astype(np.int64), in_size - 1), None)]
    if align_corners:
        src = ((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0) * dst
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
        src = s * (dst + 0.5) - 0.5
    if mode == "cubic":
        f = np.floor(src)
        t = src - f
        a = -0.75

        def c1(x: Array) -> Any:
            return ((a + 2) * x - (a + 3)) * x * x + 1

        def c2(x: Array) -> Any:
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        ws = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]
        return [(np.clip(f.astype(np.int64) + k - 1, 0, in_size - 1), ws[k]) for k in range(4)]
    if not align_corners:
        src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    l1 = src - i0
    return [(i0, 1.0 - l1), (i1, l1)]


def _upsample_check(name: Any, in_shape: Any, output_size: Any, nd: Any) -> Any:
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise RuntimeError(f"It is expected output_size equals to {nd}, but got size {len(output_size)}")
    if len(in_shape) != nd + 2:
        raise RuntimeError(f"It is expected input_size equals to {nd + 2}, but got size {len(in_shape)}")
    ins = tuple(in_shape[2:])
    if any(s <= 0 for s in ins + output_size):
        names = _UPSAMPLE_DIM_NAMES[nd]
        def fmt(v: Any) -> str:
            return ", ".join(f"{n}: {s}" for n, s in zip(names, v))
        sep = " and " if nd == 1 else " "
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(ins)}){sep}output "
                           f"({fmt(output_size)})")
    return output_size


def _upsample_dtype(self: Array, mode: Any, name: Any) -> Any:
    dt = self.dtype
    if dt.kind == "f" or dt == BF16_NP or (mode in ("nearest", "nearest-exact") and dt == np.uint8):
        return
    kernel = f"{name}_channels_last" if self.ndim == 4 else \
        f"compute_indices_weights_{'nearest' if mode.startswith('nearest') else mode}"
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(dt)}'")


def _upsample(xp: Any, self: Array, output_size: Any, scales: Any, mode: Any, align_corners: Any, name: Any) -> Any:
    nd = len(scales)
    output_size = _upsample_check(name, self.shape, output_size, nd)
    if self.shape[1] == 0:
        raise RuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with sizes "
                           f"{shape_str(self.shape)}")
    if self.dtype == np.uint8 and nd == 2 and mode in ("linear", "cubic"):
        # PyTorch resamples uint8 images in PIL's integer arithmetic (Note [Filtered resampling])
        from ember.aten.kernels.resample import resample_uint8
        return resample_uint8(xp, self, output_size, align_corners, scales, "bilinear" if mode == "linear" else
                              "bicubic", False)
    _upsample_dtype(self, mode, name)
    ct = compute_dtype(self.dtype) if self.dtype.kind != "u" else self.dtype
    x = self
    for i in reversed(range(nd)):
        axis = 2 + i
        out = None
        for idx, w in _source_weights(self.shape[axis], output_size[i], scales[i], mode, align_corners):
            picked = xp.take(x, xp.asarray(idx), axis=axis)
            if w is not None:
                shape = [1] * x.ndim
                shape[axis] = output_size[i]
                picked = asdtype(xp, picked, ct) * xp.asarray(w.reshape(shape).astype(ct))
            out = picked if out is None else out + picked
        x = out
    return xp.ascontiguousarray(x).astype(self.dtype, copy=False)


def _scatter_rows(xp: Any, g: Any, idx: Any, in_size: Any) -> Any:
    """``out[idx[o]] += g[o]`` along the first axis (``idx`` non-decreasing)."""
    out = xp.zeros((in_size,) + g.shape[1:], g.dtype)
    if xp is np:
        uniq, starts = np.unique(idx, return_index=True)
        out[uniq] = np.add.reduceat(g, starts, axis=0)
    else:
        xp.add.at(out, xp.asarray(idx), g)
    return out


def _upsample_backward(xp: Any, grad_output: Array, output_size: Any, input_size: Any, scales: Any, mode: Any,
                       align_corners: Any, name: Any) -> Any:
    nd = len(scales)
    output_size = tuple(output_size)
    if len(tuple(input_size)) != nd + 2:
        raise RuntimeError(f"It is expected input_size equals to {nd + 2}, but got size {len(tuple(input_size))}")
    output_size = _upsample_check(name, tuple(input_size), output_size, nd)
    want = tuple(input_size[:2]) + output_size
    if grad_output.shape != want:
        for d in range(nd + 2):
            got = grad_output.shape[d] if d < grad_output.ndim else 1
            if got != want[d] or grad_output.ndim != nd + 2:
                if nd == 1:
                    raise RuntimeError(f"Expected a tensor of dimension {nd + 2} and tensor.size[{d}] == {want[d]} but "
                                       f"got: dimension {grad_output.ndim} and tensor.size[{d}] = {got}")
                raise RuntimeError(f"Expected grad_output to have the same shape as output; output.size({d}) = "
                                   f"{want[d]} but got grad_output.size({d}) = {got}")
    ct = compute_dtype(grad_output.dtype)
    g = asdtype(xp, grad_output, ct)
    for i in range(nd):
        axis = 2 + i
        gm = xp.moveaxis(g, axis, 0)
        acc = None
        for idx, w in _source_weights(input_size[axis], output_size[i], scales[i], mode, align_corners):
            term = gm if w is None else gm * xp.asarray(w.astype(ct)).reshape((-1,) + (1,) * (gm.ndim - 1))
            part = _scatter_rows(xp, term, idx, input_size[axis])
            acc = part if acc is None else acc + part
        g = xp.moveaxis(acc, 0, axis)
    return xp.ascontiguousarray(g).astype(grad_output.dtype, copy=False)


def _def_upsample(name: Any, mode: Any, nd: Any, interp: Any) -> Any:
    """The forward and backward kernels of one upsample op (PyTorch's argument lists: ``align_corners`` for the
    interpolating modes, one optional scale per spatial dim)."""
    fwd: Callable[..., Any]
    bwd: Callable[..., Any]
    if interp:
        def fwd(xp: Any, self: Array, output_size: Any, align_corners: Any, *scales: Any) -> Any:
            return _upsample(xp, self, output_size, (scales + (None,) * nd)[:nd], mode, align_corners, name)

        def bwd(xp: Any, grad_output: Array, output_size: Any, input_size: Any, align_corners: Any,
                *scales: Any) -> Any:
            return _upsample_backward(xp, grad_output, output_size, input_size, (scales + (None,) * nd)[:nd], mode,
                                      align_corners, name)
    else:
        def fwd(xp: Any, self: Array, output_size: Any, *scales: Any) -> Any:
            return _upsample(xp, self, output_size, (scales + (None,) * nd)[:nd], mode, False, name)

        def bwd(xp: Any, grad_output: Array, output_size: Any, input_size: Any, *scales: Any) -> Any:
            return _upsample_backward(xp, grad_output, output_size, input_size, (scales + (None,) * nd)[:nd], mode,
                                      False, name)
    fwd.__name__ = fwd.__qualname__ = name
    bwd.__name__ = bwd.__qualname__ = name + "_backward"
    globals()[name], globals()[name + "_backward"] = fwd, bwd
    __all__.extend([name, name + "_backward"])


for _nd in (1, 2, 3):
    _def_upsample(f"upsample_nearest{_nd}d", "nearest", _nd, False)
    _def_upsample(f"_upsample_nearest_exact{_nd}d", "nearest-exact", _nd, False)
_def_upsample("upsample_linear1d", "linear", 1, True)
_def_upsample("upsample_bilinear2d", "linear", 2, True)
_def_upsample("upsample_bicubic2d", "cubic", 2, True)
_def_upsample("upsample_trilinear3d", "linear", 3, True)


# ------------------------------------------------------------------------------ adaptive pooling
# ``AdaptiveAveragePooling*.cpp`` / ``AdaptiveMaxPooling*.cpp``: output cell j of a spatial dim of size i pooled to o
# covers ``[floor(j * i / o), ceil((j + 1) * i / o))``. Averages are separable: one (o, i) averaging matrix per dim.
# Maxima gather each cell's window (padded to the longest by repeating its last element, which changes neither the
# maximum nor which element is first) and reduce it; a NaN wins, the last one in scan order, as PyTorch's loop.
def _adaptive_windows(i: Any, o: Any) -> Any:
    j = np.arange(o)
    return (j * i) // o, -((-(j + 1) * i) // o)


def _adaptive_checks(self: Array, output_size: Any, nd: Any, name: Any, avg: Any) -> Any:
    output_size = tuple(output_size)
    if avg and len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if self.ndim not in (nd + 1, nd + 2):
        colon = ":" if not avg else ""
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{colon} {shape_str(self.shape)}")
    dims = range(self.ndim - nd, self.ndim) if avg else range(1, self.ndim)
    for d in dims:
        if self.shape[d] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shape_str(self.shape)} with dimension {d} being empty")
    if not avg and len(output_size) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
    dt = self.dtype
    if not (dt.kind == "f" or dt == BF16_NP):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(dt)}'")
    return output_size


def _window_table(i: Any, o: Any) -> Any:
    """(o, L) input indices of each output cell's window, padded to the longest by repeating its last element, and
    the (o, L) mask of real (non-padding) entries."""
    s, e = _adaptive_windows(i, o)
    length = int((e - s).max()) if o else 1
    idx = s[:, None] + np.arange(length)[None, :]
    return np.minimum(idx, (e - 1)[:, None]).astype(np.int64), idx < e[:, None]


def _divisor(shape: Any, output_size: Any, in_sp: Any, ct: Any, xp: Any) -> Any:
    """The window sizes of the output cells (their product over the spatial dims), broadcast against the output."""
    nd = len(output_size)
    div = np.ones((1,) * nd)
    for k in range(nd):
        s, e = _adaptive_windows(in_sp[k], output_size[k])
        div = div * (e - s).reshape(tuple(-1 if a == k else 1 for a in range(nd)))
    return xp.asarray(div.astype(ct))


def _adaptive_avg(xp: Any, self: Array, output_size: Any, nd: Any, name: Any) -> Any:
    """Window sums one dim at a time (masked, so a NaN or inf reaches only the cells whose window holds it), then
    the division by the window size, as PyTorch's ``sum / (kh * kw)``."""
    output_size = _adaptive_checks(self, output_size, nd, name, True)
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct)
    in_sp = self.shape[-nd:]
    for k in range(nd):
        axis = self.ndim - nd + k
        idx, mask = _window_table(in_sp[k], output_size[k])
        g = xp.take(x, xp.asarray(idx.reshape(-1)), axis=axis)
        g = g.reshape(g.shape[:axis] + idx.shape + g.shape[axis + 1:])
        m = xp.asarray(mask.reshape(mask.shape + (1,) * (x.ndim - axis - 1)))
        x = xp.where(m, g, 0).sum(axis=axis + 1)
    with np.errstate(all="ignore"):
        x = x / _divisor(x.shape, output_size, in_sp, ct, xp)
    return xp.ascontiguousarray(x).astype(self.dtype, copy=False)


def _adaptive_avg_backward(xp: Any, grad_output: Array, self: Array, nd: Any, name: Any) -> Any:
    for d in range(1, grad_output.ndim):
        if grad_output.shape[d] == 0:
            raise RuntimeError(f"{name}_backward(): Expected grad_output to have non-zero size for non-batch "
                               f"dimensions, but grad_output has sizes {shape_str(grad_output.shape)} with dimension "
                               f"{d} being empty")
    ct = compute_dtype(self.dtype)
    in_sp = self.shape[-nd:]
    out_sp = grad_output.shape[-nd:]
    with np.errstate(all="ignore"):
        g = asdtype(xp, grad_output, ct) / _divisor(grad_output.shape, out_sp, in_sp, ct, xp)
    for k in range(nd):
        axis = self.ndim - nd + k
        idx, mask = _window_table(in_sp[k], out_sp[k])
        gm = xp.moveaxis(g, axis, 0)
        acc = xp.zeros((in_sp[k],) + gm.shape[1:], ct)
        for j in range(idx.shape[1]):
            keep = xp.asarray(mask[:, j].reshape((-1,) + (1,) * (gm.ndim - 1)))
            acc = acc + _scatter_rows(xp, xp.where(keep, gm, 0), idx[:, j], in_sp[k])
        g = xp.moveaxis(acc, 0, axis)
    return xp.ascontiguousarray(g).astype(self.dtype, copy=False)


def _adaptive_max(xp: Any, self: Array, output_size: Any, nd: Any, name: Any) -> Any:
    output_size = _adaptive_checks(self, output_size, nd, name, False)
    lead, in_sp = self.shape[:-nd], self.shape[-nd:]
    tables, lens = [], []
    x = self
    for k in range(nd):
        idx, _ = _window_table(in_sp[k], output_size[k])
        tables.append(idx)
        lens.append(idx.shape[1])
        axis = len(lead) + 2 * k
        x = xp.take(x, xp.asarray(idx.reshape(-1)), axis=axis)
        x = x.reshape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])
    # lead + (o1, L1, o2, L2, ...) -> lead + (o1, o2, ...) + (L1 * L2 * ...)
    n = len(lead)
    x = xp.transpose(x, tuple(range(n)) + tuple(n + 2 * k for k in range(nd)) + tuple(n + 2 * k + 1 for k in range(nd)))
    x = x.reshape(lead + tuple(output_size) + (-1,))
    arg = xp.argmax(x, axis=-1)
    if x.dtype.kind == "f" or x.dtype == BF16_NP:
        nan = xp.isnan(x)
        if bool(nan.any()):
            last = x.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            arg = xp.where(nan.any(axis=-1), last, arg)
    vals = xp.take_along_axis(x, arg[..., None], axis=-1)[..., 0]
    # window position -> the input's flat spatial index
    flat = 0
    rem = arg
    coords = []
    for k in reversed(range(nd)):
        coords.append(rem % lens[k])
        rem = rem // lens[k]
    coords = coords[::-1]
    for k in range(nd):
        shape = [1] * nd
        shape[k] = output_size[k]
        rows = xp.asarray(tables[k]).reshape(tuple(shape) + (lens[k],))
        pos = xp.take_along_axis(xp.broadcast_to(rows, lead + rows.shape[:-1] + (lens[k],)),
                                 xp.broadcast_to(coords[k], lead + tuple(output_size))[..., None], axis=-1)[..., 0]
        flat = flat * in_sp[k] + pos
    return xp.ascontiguousarray(vals), xp.ascontiguousarray(xp.broadcast_to(flat, vals.shape)).astype(np.int64)


def _adaptive_meta(nd: Any, avg: Any, name: Any) -> Any:
    def meta(xp: Any, self: Array, output_size: Any) -> Any:
        out = _adaptive_checks(self, output_size, nd, name, avg)
        v = _meta_array(self.dtype, self.shape[:-nd] + tuple(out))
        return v if avg else (v, _meta_array(np.int64, v.shape))
    return meta


@meta_kernel(_adaptive_meta(2, True, "adaptive_avg_pool2d"))
def _adaptive_avg_pool2d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_avg(xp, self, output_size, 2, "adaptive_avg_pool2d")


@meta_kernel(_adaptive_meta(3, True, "adaptive_avg_pool3d"))
def _adaptive_avg_pool3d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_avg(xp, self, output_size, 3, "adaptive_avg_pool3d")


@meta_kernel(lambda xp, grad_output, self: _meta_array(self.dtype, self.shape))
def _adaptive_avg_pool2d_backward(xp: Any, grad_output: Array, self: Array) -> Any:
    return _adaptive_avg_backward(xp, grad_output, self, 2, "adaptive_avg_pool2d")


@meta_kernel(lambda xp, grad_output, self: _meta_array(self.dtype, self.shape))
def _adaptive_avg_pool3d_backward(xp: Any, grad_output: Array, self: Array) -> Any:
    return _adaptive_avg_backward(xp, grad_output, self, 3, "adaptive_avg_pool3d")


@meta_kernel(_adaptive_meta(2, False, "adaptive_max_pool2d"))
def adaptive_max_pool2d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_max(xp, self, output_size, 2, "adaptive_max_pool2d")


@meta_kernel(_adaptive_meta(3, False, "adaptive_max_pool3d"))
def adaptive_max_pool3d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_max(xp, self, output_size, 3, "adaptive_max_pool3d")


__all__ += ["_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "_adaptive_avg_pool2d_backward",
            "_adaptive_avg_pool3d_backward", "adaptive_max_pool2d", "adaptive_max_pool3d"]


# ------------------------------------------------------------------------------ im2col / col2im
# ``Im2Col.cpp`` / ``Col2Im.cpp`` (F.unfold / F.fold): the sliding blocks of a (N, C, H, W) image as the columns of a
# (N, C * kh * kw, L) matrix, and back, summing where blocks overlap.
def _im2col_params(kernel_size: Any, dilation: Any, padding: Any, stride: Any, col2im: Any) -> Any:
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (tuple(v) for v in (kernel_size, dilation, padding, stride))
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}")
    checks = [("dilation", dh, dw, "dilation_height", "dilation_width"),
              ("stride", sh, sw, "stride_height", "stride_width")]
    for what, a, b, na, nb in (checks[::-1] if col2im else checks):
        if a <= 0 or b <= 0:
            raise RuntimeError(f"{what} should be greater than zero, but got {na}: {a} {nb}: {b}")
        if not col2im and what == "dilation" and (ph < 0 or pw < 0):
            raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    if col2im and (ph < 0 or pw < 0):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    return (kh, kw), (dh, dw), (ph, pw), (sh, sw)


def _blocks(size: Any, k: Any, d: Any, p: Any, s: Any) -> Any:
    return tuple((n + 2 * pp - (dd * (kk - 1) + 1)) // ss + 1 for n, kk, dd, pp, ss in zip(size, k, d, p, s))


def _im2col_checks(self: Array, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    k, d, p, s = _im2col_params(kernel_size, dilation, padding, stride, False)
    if self.ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(self.ndim, 1)}, "
                         f"{max(self.ndim, 1) - 1}], but got 2)")
    sh = self.shape
    if not ((self.ndim == 3 and sh[0] and sh[1] and sh[2]) or (self.ndim == 4 and sh[1] and sh[2] and sh[3])):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {shape_str(sh)}")
    size = sh[-2:]
    blocks = _blocks(size, k, d, p, s)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size ({size[0]}, {size[0]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP or self.dtype.kind == "c"):
        raise NotImplementedError(f"\"im2col_out_cpu\" not implemented for '{type_name(self.dtype)}'")
    return k, d, p, s, blocks


def _im2col_meta(xp: Any, self: Array, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    k, d, p, s, blocks = _im2col_checks(self, kernel_size, dilation, padding, stride)
    lead = self.shape[:-3]
    return _meta_array(self.dtype, lead + (self.shape[-3] * k[0] * k[1], blocks[0] * blocks[1]))


@meta_kernel(_im2col_meta)
def im2col(xp: Any, self: Array, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    k, d, p, s, blocks = _im2col_checks(self, kernel_size, dilation, padding, stride)
    x = self if self.ndim == 4 else self[None]
    n, c = x.shape[:2]
    if any(p):
        x = xp.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    win = _windows(xp, x, k, s, d)[:, :, :blocks[0], :blocks[1]]        # (N, C, oh, ow, kh, kw)
    cols = xp.ascontiguousarray(xp.transpose(win, (0, 1, 4, 5, 2, 3))).reshape(n, c * k[0] * k[1], -1)
    return cols if self.ndim == 4 else cols[0]


def _col2im_checks(self: Array, output_size: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    k, d, p, s = _im2col_params(kernel_size, dilation, padding, stride, True)
    o = tuple(output_size)
    sh = self.shape
    if not ((self.ndim == 2 and sh[0] and sh[1]) or (self.ndim == 3 and sh[1] and sh[2])):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {shape_str(sh)}")
    planes, length = sh[-2], sh[-1]
    if planes % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={planes} and kernel_size=({k[0]}, {k[1]}).")
    blocks = _blocks(o, k, d, p, s)
    desc = (f"Given output_size=({o[0]}, {o[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
            f"padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(f"{desc}expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
                           f"{length}.")
    if min(blocks) < 1:
        raise RuntimeError(f"{desc}calculated shape of the array of sliding blocks as ({blocks[0]}, {blocks[1]}), "
                           f"which is too small (non-positive)")
    if min(o) < 1:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: output_size=({o[0]}, {o[1]}).")
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP or self.dtype.kind == "c"):
        raise NotImplementedError(f"\"col2im_out_cpu\" not implemented for '{type_name(self.dtype)}'")
    return o, k, d, p, s, blocks


def _col2im_meta(xp: Any, self: Array, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
                 stride: Any) -> Any:
    o, k, *_ = _col2im_checks(self, output_size, kernel_size, dilation, padding, stride)
    return _meta_array(self.dtype, self.shape[:-2] + (self.shape[-2] // (k[0] * k[1]),) + o)


@meta_kernel(_col2im_meta)
def col2im(xp: Any, self: Array, output_size: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    o, k, d, p, s, blocks = _col2im_checks(self, output_size, kernel_size, dilation, padding, stride)
    x = self if self.ndim == 3 else self[None]
    n = x.shape[0]
    c = x.shape[1] // (k[0] * k[1])
    cols = x.reshape(n, c, k[0], k[1], blocks[0], blocks[1])
    ct = compute_dtype(self.dtype)
    out = xp.zeros((n, c, o[0] + 2 * p[0], o[1] + 2 * p[1]), ct)
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i * d[0]:i * d[0] + s[0] * (blocks[0] - 1) + 1:s[0],
                j * d[1]:j * d[1] + s[1] * (blocks[1] - 1) + 1:s[1]] += cols[:, :, i, j]
    out = xp.ascontiguousarray(out[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]).astype(self.dtype, copy=False)
    return out if self.ndim == 3 else out[0]


__all__ += ["im2col", "col2im"]


# ------------------------------------------------------------------------------ embedding_bag
# ``EmbeddingBag.cpp``: bag b holds the indices from offsets[b] to the next offset (the last bag runs to the end of
# ``indices``, with ``include_last_offset`` too, as PyTorch's CPU kernel reads them); entries equal to padding_idx
# are left out. Returns (output, offset2bag, bag_size, max_indices) with PyTorch's contents: the bag of each
# index, the bag sizes (mean and max; zeros for sum) and the rows that gave each maximum (max; bag_size for mean,
# zeros for sum).
_EB_SUM, _EB_MEAN, _EB_MAX = 0, 1, 2


def _embedding_bag_checks(weight: Array, indices: Array, offsets: Array, mode: Any, per_sample_weights: Array,
                          include_last_offset: Any) -> Any:
    for a, name, pos in ((indices, "indices", 1), (offsets, "offsets", 2)):
        if a.dtype != np.int64 and a.dtype != np.int32:
            raise RuntimeError(f"Expected tensor for argument #{pos} '{name}' to have one of the following scalar "
                               f"types: "
                               f"Long, Int; but got torch.{type_name(a.dtype)}Tensor instead (while checking arguments "
                               "for embedding_bag)")
    if indices.dtype != offsets.dtype:
        raise RuntimeError(f"Expected tensor for argument #2 'offsets' to have the same type as tensor for argument #1 "
                           f"'indices'; but type torch.{type_name(offsets.dtype)}Tensor does not equal "
                           f"torch.{type_name(indices.dtype)}Tensor (while checking arguments for embedding_bag)")
    if not (weight.dtype.kind == "f" or weight.dtype == BF16_NP):
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, "
                           f"BFloat16, Float, Double; but got torch.{type_name(weight.dtype)}Tensor instead (while "
                           "checking arguments for embedding_bag)")
    if offsets.size:
        o0, on = int(offsets[0]), int(offsets[-1])
        if o0 != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {o0}")
        if on > indices.size:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {indices.size} but got "
                               f"offsets[-1] of {on}")
    if per_sample_weights is not None:
        if mode != _EB_SUM:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if per_sample_weights.dtype != weight.dtype:
            raise RuntimeError(f"embedding_bag: Expected per_sample_weights to have the same dtype as weight "
                               f"({type_name(weight.dtype)}), but got {type_name(per_sample_weights.dtype)}")
        if per_sample_weights.ndim != 1 or per_sample_weights.size != indices.size:
            raise RuntimeError("embedding_bag: Expected per_sample_weights to be 1-D with as many entries as indices")
    if include_last_offset and offsets.shape[0] < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")


def _embedding_bag_meta(xp: Any, weight: Array, indices: Array, offsets: Array, scale_grad_by_freq: Any = False,
                        mode: Any = 0, sparse: Any = False, per_sample_weights: Array = None,
                        include_last_offset: Any = False, padding_idx: Any = -1) -> Any:
    b = offsets.shape[0] - (1 if include_last_offset else 0)
    d = weight.shape[1]
    i64 = np.empty((), np.int64)
    return (_meta_array(weight.dtype, (b, d)), np.broadcast_to(i64, (indices.size,)),
            np.broadcast_to(i64, (b,)), np.broadcast_to(i64, (b, d) if mode == _EB_MAX else (b,)))


@meta_kernel(_embedding_bag_meta)
def _embedding_bag(xp: Any, weight: Array, indices: Array, offsets: Array, scale_grad_by_freq: Any = False,
                   mode: Any = 0, sparse: Any = False, per_sample_weights: Array = None,
                   include_last_offset: Any = False, padding_idx: Any = -1) -> Any:
    _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights, include_last_offset)
    num, d = weight.shape
    idx = indices.astype(np.int64, copy=False).reshape(-1)
    n = idx.size
    bad = (idx < 0) | (idx >= num)
    if bool(bad.any()):
        k = int(xp.argmax(bad))
        raise RuntimeError(f"Index {k} of input takes value {int(idx[k])} which is not in the valid range [0, {num})")
    b = offsets.shape[0] - (1 if include_last_offset else 0)
    starts = offsets.astype(np.int64, copy=False)[:b]
    offset2bag = (xp.searchsorted(starts, xp.arange(n), side="right") - 1).astype(np.int64)
    keep = idx != padding_idx if padding_idx >= 0 else xp.ones(n, bool)
    ct = compute_dtype(weight.dtype)
    rows = asdtype(xp, weight, ct)[idx]
    if per_sample_weights is not None:
        rows = rows * asdtype(xp, per_sample_weights, ct)[:, None]
    live = xp.nonzero(keep)[0]
    bags, rows = offset2bag[live], rows[live]
    counts = _segment(xp, "add", xp.ones(bags.shape[0], np.int64), bags, b, 0)
    if mode == _EB_MAX:
        out = _segment(xp, "maximum", rows, bags, b, 0)
        # per column, the first entry of its bag that reaches the maximum (PyTorch's loop keeps the first)
        pos = xp.where(rows == out[bags], xp.arange(bags.shape[0])[:, None], n)
        first = _segment(xp, "minimum", pos, bags, b, n)
        max_indices = xp.where(first < n, idx[live][xp.minimum(first, max(bags.shape[0] - 1, 0))], 0) \
            if bags.shape[0] else xp.zeros((b, d), np.int64)
        return out.astype(weight.dtype), offset2bag, counts, max_indices.astype(np.int64)
    out = _segment(xp, "add", rows, bags, b, 0)
    if mode == _EB_MEAN:
        out = out / xp.maximum(counts, 1)[:, None].astype(ct)
        return out.astype(weight.dtype), offset2bag, counts, counts.copy()
    return out.astype(weight.dtype), offset2bag, xp.zeros(b, np.int64), xp.zeros(b, np.int64)


def _segment(xp: Any, ufunc: Any, values: Array, seg: Any, size: Any, fill: Any) -> Any:
    """``out[s] = ufunc.reduce(values[seg == s])`` for s in range(size), ``fill`` for empty segments (``seg``
    non-decreasing)."""
    out = xp.full((size,) + values.shape[1:], fill, values.dtype)
    if values.shape[0] == 0:
        return out
    if xp is np:
        uniq, starts = np.unique(seg, return_index=True)
        out[uniq] = getattr(np, ufunc).reduceat(values, starts, axis=0)
    else:
        if ufunc != "add":
            out[...] = values.min() if ufunc == "maximum" else values.max()
        getattr(xp, ufunc).at(out, seg, values)
        if ufunc != "add":
            out[xp.bincount(seg, minlength=size)[:size] == 0] = fill
    return out


__all__ += ["_embedding_bag"]


# ------------------------------------------------------------------------------ grid_sampler
# ``GridSampler.cpp`` / ``GridSamplerUtils.h``: each output position samples the input at the grid's normalised
# coordinates (x for W first), unnormalised to pixel positions, then clipped or reflected by the padding mode
# (PyTorch's compute_source_index, with the derivative it tracks for the grid's gradient); bilinear / trilinear
# weights over the 2^nd corners (out-of-range corners read 0) or the nearest pixel (round half to even).
_GRID_BILINEAR, _GRID_NEAREST, _GRID_BICUBIC = 0, 1, 2
_PAD_ZEROS, _PAD_BORDER, _PAD_REFLECTION = 0, 1, 2


def _reflect_with_grad(xp: Any, c: Any, twice_low: Any, twice_high: Any) -> Any:
    if twice_low == twice_high:
        return xp.zeros_like(c), xp.zeros_like(c)
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    c = c - lo
    sign = xp.where(c < 0, -1.0, 1.0)
    c = xp.abs(c)
    extra = xp.fmod(c, span)
    flips = xp.floor(c / span)
    even = xp.fmod(flips, 2) == 0
    return xp.where(even, extra + lo, span - extra + lo), xp.where(even, sign, -sign)


def _clip_with_grad(xp: Any, c: Any, size: Any) -> Any:
    inside = (c > 0) & (c < size - 1)
    return xp.clip(c, 0, size - 1), xp.where(inside, 1.0, 0.0)


def _source_index(xp: Any, coord: Any, size: Any, padding_mode: Any, align_corners: Any) -> Any:
    """PyTorch's grid_sampler_compute_source_index (and its derivative with respect to the grid coordinate)."""
    with np.errstate(all="ignore"):
        if align_corners:
            c, mult = (coord + 1) / 2 * (size - 1), (size - 1) / 2
        else:
            c, mult = ((coord + 1) * size - 1) / 2, size / 2
        mult = xp.full(c.shape, mult, c.dtype)
        if padding_mode == _PAD_BORDER:
            c, g = _clip_with_grad(xp, c, size)
            mult = mult * g
        elif padding_mode == _PAD_REFLECTION:
            c, g = _reflect_with_grad(xp, c, 0, 2 * (size - 1)) if align_corners else \
                _reflect_with_grad(xp, c, -1, 2 * size - 1)
            c, g2 = _clip_with_grad(xp, c, size)
            mult = mult * g * g2
        bad = ~xp.isfinite(c) | (c > 2 ** 31 - 2) | (c < -2 ** 31)   # safe_downgrade_to_int_range
        return xp.where(bad, -100.0, c), mult


def _grid_corners(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    """Yields, per corner: (flat indices into each (N, C) plane, in-range mask, weight, [d weight / d coord_i]),
    plus the per-dim derivative multipliers of the source index."""
    nd = input.ndim - 2
    n = input.shape[0]
    sizes = input.shape[2:]
    ct = compute_dtype(input.dtype)
    src, mults = [], []
    for i in range(nd):
        s, m = _source_index(xp, grid[..., nd - 1 - i].reshape(n, -1).astype(ct), sizes[i], padding_mode,
                             align_corners)
        src.append(s)
        mults.append(m)
    strides = [int(np.prod(sizes[i + 1:])) for i in range(nd)]
    corners = []
    if mode == _GRID_NEAREST:
        idx = [xp.rint(s) for s in src]
        corners.append((idx, xp.ones_like(src[0]), [xp.zeros_like(src[0])] * nd))
    else:
        lows = [xp.floor(s) for s in src]
        fr = [s - lo for s, lo in zip(src, lows)]
        for corner in range(2 ** nd):
            bits = [(corner >> (nd - 1 - i)) & 1 for i in range(nd)]
            ws = [fr[i] if b else 1 - fr[i] for i, b in enumerate(bits)]
            w = ws[0]
            for x in ws[1:]:
                w = w * x
            dws = []
            for i, b in enumerate(bits):
                d = xp.ones_like(src[0]) if b else -xp.ones_like(src[0])
                for j in range(nd):
                    if j != i:
                        d = d * ws[j]
                dws.append(d)
            corners.append(([lo + b for lo, b in zip(lows, bits)], w, dws))
    out = []
    for idx, w, dws in corners:
        mask = None
        lin = 0
        for i, v in enumerate(idx):
            ok = (v >= 0) & (v <= sizes[i] - 1)
            mask = ok if mask is None else mask & ok
            lin = lin + xp.clip(v, 0, sizes[i] - 1).astype(np.int64) * strides[i]
        out.append((lin, mask, w, dws))
    return out, mults


def _grid_checks(input: Array, grid: Array, mode: Any, nd: Any) -> Any:
    if mode == _GRID_BICUBIC:
        raise NotImplementedError("grid_sample(mode='bicubic') is not implemented in ember yet")
    if not (input.dtype.kind == "f" or input.dtype == BF16_NP):
        raise NotImplementedError(f"\"grid_sampler_{nd}d_cpu\" not implemented for '{type_name(input.dtype)}'")


def _grid_sampler(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    nd = input.ndim - 2
    _grid_checks(input, grid, mode, nd)
    n, c = input.shape[:2]
    ct = compute_dtype(input.dtype)
    flat = asdtype(xp, input, ct).reshape(n, c, -1)
    out = 0
    corners, _ = _grid_corners(xp, input, grid, mode, padding_mode, align_corners)
    for lin, mask, w, _dws in corners:
        vals = xp.take_along_axis(flat, xp.broadcast_to(lin[:, None, :], (n, c, lin.shape[1])), axis=2)
        out = out + vals * xp.where(mask, w, 0)[:, None, :]
    out = xp.broadcast_to(out, (n, c, int(np.prod(grid.shape[1:-1]))))
    return xp.ascontiguousarray(out.reshape((n, c) + grid.shape[1:-1])).astype(input.dtype, copy=False)


def _grid_sampler_backward(xp: Any, grad_output: Array, input: Array, grid: Array, mode: Any, padding_mode: Any,
                           align_corners: Any, output_mask: Any) -> Any:
    nd = input.ndim - 2
    _grid_checks(input, grid, mode, nd)
    n, c = input.shape[:2]
    ct = compute_dtype(input.dtype)
    flat = asdtype(xp, input, ct).reshape(n, c, -1)
    g = asdtype(xp, grad_output, ct).reshape(n, c, -1)
    plane = flat.shape[2]
    corners, mults = _grid_corners(xp, input, grid, mode, padding_mode, align_corners)
    gin: Any = xp.zeros(n * c * plane, ct) if output_mask[0] else None
    gsrc = [0] * nd
    base = (xp.arange(n * c) * plane).reshape(n, c, 1)
    for lin, mask, w, dws in corners:
        if output_mask[0]:
            contrib = g * xp.where(mask, w, 0)[:, None, :]
            where = (base + lin[:, None, :]).reshape(-1)
            if xp is np:
                gin += np.bincount(where, weights=contrib.reshape(-1), minlength=gin.size).astype(ct, copy=False)
            else:
                xp.add.at(gin, where, contrib.reshape(-1))
        if output_mask[1] and mode != _GRID_NEAREST:
            vals = xp.take_along_axis(flat, xp.broadcast_to(lin[:, None, :], (n, c, lin.shape[1])), axis=2)
            gv = (xp.where(mask[:, None, :], vals, 0) * g).sum(axis=1)
            for i in range(nd):
                gsrc[i] = gsrc[i] + gv * dws[i]
    grad_input = gin.reshape(input.shape).astype(input.dtype, copy=False) if output_mask[0] else \
        xp.empty((0,), input.dtype)
    if output_mask[1]:
        gg = xp.zeros(grid.shape, ct)
        for i in range(nd):
            gg[..., nd - 1 - i] = (gsrc[i] * mults[i]).reshape(grid.shape[:-1]) if mode != _GRID_NEAREST else 0
        grad_grid = gg.astype(grid.dtype, copy=False)
    else:
        grad_grid = xp.empty((0,), grid.dtype)
    return grad_input, grad_grid


def _grid_meta(xp: Any, input: Array, grid: Array, mode: Any, padding_mode: Any, align_corners: Any) -> Any:
    _grid_checks(input, grid, mode, input.ndim - 2)
    return _meta_array(input.dtype, input.shape[:2] + grid.shape[1:-1])


def _grid_backward_meta(xp: Any, grad_output: Array, input: Array, grid: Array, mode: Any, padding_mode: Any,
                        align_corners: Any, output_mask: Any) -> Any:
    return (_meta_array(input.dtype, input.shape if output_mask[0] else (0,)),
            _meta_array(grid.dtype, grid.shape if output_mask[1] else (0,)))


@meta_kernel(_grid_meta)
def grid_sampler_2d(xp: Any, input: Array, grid: Array, interpolation_mode: Any, padding_mode: Any,  # noqa: A002
                    align_corners: Any) -> Any:
    return _grid_sampler(xp, input, grid, interpolation_mode, padding_mode, align_corners)


@meta_kernel(_grid_meta)
def grid_sampler_3d(xp: Any, input: Array, grid: Array, interpolation_mode: Any, padding_mode: Any,  # noqa: A002
                    align_corners: Any) -> Any:
    return _grid_sampler(xp, input, grid, interpolation_mode, padding_mode, align_corners)


@meta_kernel(_grid_backward_meta)
def grid_sampler_2d_backward(xp: Any, grad_output: Array, input: Array, grid: Array, interpolation_mode: Any,  # noqa
                             padding_mode: Any, align_corners: Any, output_mask: Any) -> Any:
    return _grid_sampler_backward(xp, grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
                                  output_mask)


@meta_kernel(_grid_backward_meta)
def grid_sampler_3d_backward(xp: Any, grad_output: Array, input: Array, grid: Array, interpolation_mode: Any,  # noqa
                             padding_mode: Any, align_corners: Any, output_mask: Any) -> Any:
    return _grid_sampler_backward(xp, grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
                                  output_mask)


# ``AffineGridGenerator.cpp``: the base grid of normalised output coordinates [x, y, (z,) 1] times theta^T.
def affine_base(size: Any, align_corners: Any, dtype: Any) -> Any:
    spatial = tuple(size[2:])
    axes = []
    for n in spatial:
        v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        axes.append(v if align_corners or n <= 1 else v * (n - 1) / n)
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [mesh[i] for i in reversed(range(len(spatial)))] + [np.ones_like(mesh[0])]
    return np.stack(coords, -1).reshape(-1, len(spatial) + 1).astype(dtype), spatial


def affine_grid_generator(xp: Any, theta: Array, size: Any, align_corners: Any) -> Any:
    cdt = compute_dtype(theta.dtype)             # half precision: a float32 product, rounded once
    base, spatial = affine_base(size, align_corners, cdt)
    out = xp.matmul(xp.asarray(base)[None], xp.swapaxes(theta, 1, 2).astype(cdt, copy=False))
    return xp.ascontiguousarray(out.reshape((size[0],) + spatial + (len(spatial),)).astype(theta.dtype, copy=False))


__all__ += ["grid_sampler_2d", "grid_sampler_3d", "grid_sampler_2d_backward", "grid_sampler_3d_backward",
            "affine_grid_generator"]


# ------------------------------------------------------------------------------ CTC
# ``LossCTC.cpp`` (Graves et al. 2006): the negative log-likelihood of each target under all alignments, by the
# alpha recursion (eq. 6-8) over the extended target ``blank, l1, blank, l2, ..., blank`` in log space, vectorised
# over the batch; the backward runs the beta recursion (eq. 10-11) and returns PyTorch's gradient (eq. 16), which
# is the gradient with respect to the logits of a log_softmax: ``exp(lp) - exp(log(sum alpha*beta) + nll - lp)``.
_CTC = "ctc_loss_allocate_outputs"


def _ctc_setup(log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any) -> Any:
    if not (log_probs.dtype.kind == "f"):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{type_name(log_probs.dtype)}'")
    if log_probs.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional tensor for argument "
                           f"#1 'log_probs' (while checking arguments for {_CTC})")
    if targets.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #2 'targets' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{type_name(targets.dtype)}Tensor instead (while checking "
                           f"arguments for {_CTC})")
    t_len, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    il, tl = [int(v) for v in input_lengths], [int(v) for v in target_lengths]
    if len(il) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v} (while checking "
                               f"arguments for {_CTC})")
    s_max = max(tl) if tl else 0
    tg = np.asarray(targets.get() if hasattr(targets, "get") else targets).astype(np.int64)
    labels = np.full((n, max(s_max, 1)), blank, np.int64)
    if tg.ndim == 1:
        if tg.shape[0] != sum(tl):
            raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets' (while checking arguments for {_CTC})")
        off = 0
        for b in range(n):
            labels[b, :tl[b]] = tg[off:off + tl[b]]
            off += tl[b]
    else:
        if tg.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size {tg.shape[0]} for "
                               f"argument #2 'targets' (while checking arguments for {_CTC})")
        if tg.shape[1] < s_max:
            raise RuntimeError(f"Expected tensor to have size at least {s_max} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for {_CTC})")
        for b in range(n):
            labels[b, :tl[b]] = tg[b, :tl[b]]
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {v} (while checking "
                               f"arguments for {_CTC})")
        if v > t_len:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_len}, but got value {v} (while "
                               f"checking arguments for {_CTC})")
    ext = np.full((n, 2 * s_max + 1), blank, np.int64)
    ext[:, 1::2] = labels[:, :s_max]
    skip = np.zeros(ext.shape, bool)                         # s-2 -> s allowed: a label differing from s-2's
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid = np.arange(ext.shape[1])[None, :] <= 2 * np.asarray(tl, np.int64)[:, None]
    return np.asarray(il, np.int64), np.asarray(tl, np.int64), ext, skip, valid


def _logsumexp3(xp: Any, a: Array, b: Array, c: Any) -> Any:
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    with np.errstate(all="ignore"):
        return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _ctc_meta(xp: Any, log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any = 0,
              zero_infinity: Any = False) -> Any:
    t_len, n, _ = log_probs.shape
    s_max = max([int(v) for v in target_lengths], default=0)
    return (_meta_array(log_probs.dtype, (n,)),
            _meta_array(log_probs.dtype, (n, t_len, 2 * s_max + 1)))


@meta_kernel(_ctc_meta)
def _ctc_loss(xp: Any, log_probs: Array, targets: Array, input_lengths: Any, target_lengths: Any, blank: Any = 0,
              zero_infinity: Any = False) -> Any:
    il, tl, ext, skip, valid = _ctc_setup(log_probs, targets, input_lengths, target_lengths, blank)
    t_len, n, _ = log_probs.shape
    lp = log_probs
    width = ext.shape[1]
    ext_x, skip_x, valid_x = xp.asarray(ext), xp.asarray(skip), xp.asarray(valid)
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext_x[None], (t_len, n, width)), axis=2)   # (T, N, 2S+1)
    ninf = xp.asarray(-np.inf, lp.dtype)
    log_alpha = xp.full((n, t_len, width), -np.inf, lp.dtype)
    if t_len:
        a = xp.full((n, width), -np.inf, lp.dtype)
        a[:, 0] = emit[0, :, 0]
        a[:, 1:2] = xp.where(xp.asarray(tl > 0)[:, None], emit[0, :, 1:2], ninf) if width > 1 else a[:, 1:2]
        log_alpha[:, 0] = a
        for t in range(1, t_len):
            a1 = xp.concatenate([xp.full((n, 1), -np.inf, lp.dtype), a[:, :-1]], 1)
            a2 = xp.concatenate([xp.full((n, 2), -np.inf, lp.dtype), a[:, :-2]], 1)[:, :width]
            a2 = xp.where(skip_x, a2, ninf)
            a = xp.where(valid_x, _logsumexp3(xp, a, a1, a2) + emit[t], ninf)
            log_alpha[:, t] = a
    nll = xp.empty(n, lp.dtype)
    for b in range(n):
        if il[b] == 0:
            nll[b] = 0 if tl[b] == 0 else np.inf
            continue
        last = log_alpha[b, il[b] - 1]
        l1 = last[2 * tl[b]]
        l2 = last[2 * tl[b] - 1] if tl[b] > 0 else ninf
        nll[b] = -_logsumexp3(xp, l1, l2, ninf)
    return nll, log_alpha


def _ctc_backward_meta(xp: Any, grad: Array, log_probs: Array, *args: Any, **kwargs: Any) -> Any:
    return _meta_array(log_probs.dtype, log_probs.shape)


@meta_kernel(_ctc_backward_meta)
def _ctc_loss_backward(xp: Any, grad: Array, log_probs: Array, targets: Array, input_lengths: Any,
                       target_lengths: Any, neg_log_likelihood: Array, log_alpha: Array, blank: Any,
                       zero_infinity: Any = False) -> Any:
    il, tl, ext, skip, valid = _ctc_setup(log_probs, targets, input_lengths, target_lengths, blank)
    t_len, n, c = log_probs.shape
    lp = log_probs
    width = ext.shape[1]
    ext_x = xp.asarray(ext)
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext_x[None], (t_len, n, width)), axis=2)
    ninf = xp.asarray(-np.inf, lp.dtype)
    # skip into s from s+2 (the mirror of the alpha recursion's s-2 -> s)
    skip_next = np.zeros(ext.shape, bool)
    skip_next[:, :-2] = skip[:, 2:]
    skip_x, valid_x = xp.asarray(skip_next), xp.asarray(valid)
    log_beta = xp.full((n, t_len, width), -np.inf, lp.dtype)
    rows = np.arange(n)
    for t in range(t_len - 1, -1, -1):
        starts = il - 1 == t                                  # the batch elements whose last step is t
        b = xp.full((n, width), -np.inf, lp.dtype)
        if t < t_len - 1:
            nxt = log_beta[:, t + 1]
            b1 = xp.concatenate([nxt[:, 1:], xp.full((n, 1), -np.inf, lp.dtype)], 1)
            b2 = xp.concatenate([nxt[:, 2:], xp.full((n, 2), -np.inf, lp.dtype)], 1)[:, :width]
            b2 = xp.where(skip_x, b2, ninf)
            b = xp.where(valid_x, _logsumexp3(xp, nxt, b1, b2) + emit[t], ninf)
        if starts.any():
            init = xp.full((n, width), -np.inf, lp.dtype)
            init[rows, 2 * tl] = emit[t][rows, 2 * tl]
            has = tl > 0
            init[rows[has], 2 * tl[has] - 1] = emit[t][rows[has], 2 * tl[has] - 1]
            b = xp.where(xp.asarray(starts)[:, None], init, b)
        b = xp.where(xp.asarray(t < il)[:, None], b, ninf)
        log_beta[:, t] = b
    # log of the sum of alpha * beta over the positions of each label (eq. 16), per (t, n, c)
    ab = xp.moveaxis(log_alpha, 1, 0) + xp.moveaxis(log_beta, 1, 0)                       # (T, N, 2S+1)
    flat_idx = (xp.arange(t_len * n).reshape(t_len, n, 1) * c + ext_x[None]).reshape(-1)
    vals = ab.reshape(-1)
    m = xp.full(t_len * n * c, -np.inf, lp.dtype)
    xp.maximum.at(m, flat_idx, vals)
    m0 = xp.where(m == -np.inf, 0, m)
    with np.errstate(all="ignore"):
        acc = xp.zeros(t_len * n * c, lp.dtype)
        xp.add.at(acc, flat_idx, xp.exp(vals - m0[flat_idx]))
        lcab = (xp.log(acc) + m0).reshape(t_len, n, c)
        nll = neg_log_likelihood.reshape(1, n, 1)
        g = (xp.exp(lp) - xp.exp(lcab + nll - lp)) * grad.reshape(1, n, 1)
    live = xp.asarray(np.arange(t_len)[:, None] < il[None, :])[..., None]
    g = xp.where(live, g, 0)
    if zero_infinity:
        g = xp.where(xp.isinf(nll) & (nll > 0), 0, g)
    return g.astype(lp.dtype, copy=False)


__all__ += ["_ctc_loss", "_ctc_loss_backward"]


# ------------------------------------------------------------------------------ pointwise losses
# ``Loss.cpp``: elementwise losses (in the input's opmath type) then the reduction of apply_loss_reduction.
def _reduce_loss(xp: Any, loss: Any, reduction: Any, npdt: Any) -> Any:
    if reduction == _MEAN:
        loss = xp.add.reduce(loss.reshape(-1)) / loss.size if loss.size else xp.asarray(np.nan, loss.dtype)
    elif reduction == _SUM:
        loss = xp.add.reduce(loss.reshape(-1))
    return xp.asarray(loss).astype(npdt, copy=False)


def _loss_dtype(self: Array, target: Array, name: Any) -> Any:
    npdt = result_np_dtype(self, target)
    if not (npdt.kind == "f" or npdt == BF16_NP):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(npdt)}'")
    return npdt, compute_dtype(npdt)


def smooth_l1_loss(xp: Any, self: Array, target: Array, reduction: Any = _MEAN, beta: Any = 1.0) -> Any:
    npdt, ct = _loss_dtype(self, target, "smooth_l1_cpu")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    with np.errstate(all="ignore"):
        z = xp.abs(xp.subtract(self, target, dtype=ct))
        loss = xp.where(z < beta, 0.5 * z * z / beta if beta else z, z - 0.5 * beta)
    return _reduce_loss(xp, loss, reduction, npdt)


def huber_loss(xp: Any, self: Array, target: Array, reduction: Any = _MEAN, delta: Any = 1.0) -> Any:
    npdt, ct = _loss_dtype(self, target, "huber_cpu")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    with np.errstate(all="ignore"):
        z = xp.abs(xp.subtract(self, target, dtype=ct))
        loss = xp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
    return _reduce_loss(xp, loss, reduction, npdt)


def binary_cross_entropy(xp: Any, self: Array, target: Array, weight: Array = None, reduction: Any = _MEAN) -> Any:
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{type_name(self.dtype)}'")
    if target.dtype != self.dtype:
        raise RuntimeError(f"Found dtype {type_name(target.dtype)} but expected {type_name(self.dtype)}")
    ct = compute_dtype(self.dtype)
    x, t = asdtype(xp, self, ct), asdtype(xp, target, ct)
    if bool(((x < 0) | (x > 1) | xp.isnan(x)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if bool(((t < 0) | (t > 1)).any()):
        raise RuntimeError("all elements of target should be between 0 and 1")
    with np.errstate(all="ignore"):
        loss = (t - 1) * xp.maximum(xp.log1p(-x), -100) - t * xp.maximum(xp.log(x), -100)
    if weight is not None:
        if np.broadcast_shapes(weight.shape, loss.shape) != loss.shape:
            raise RuntimeError(f"output with shape {shape_str(loss.shape)} doesn't match the broadcast shape "
                               f"{shape_str(np.broadcast_shapes(weight.shape, loss.shape))}")
        loss = loss * asdtype(xp, weight, ct)
    return _reduce_loss(xp, loss, reduction, self.dtype)


def _log_sigmoid(xp: Any, x: Array) -> Any:
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


def binary_cross_entropy_with_logits(xp: Any, self: Array, target: Array, weight: Array = None,
                                     pos_weight: Any = None, reduction: Any = _MEAN) -> Any:
    npdt, ct = _loss_dtype(self, target, "log_sigmoid_cpu")
    x, t = asdtype(xp, self, ct), asdtype(xp, target, ct)
    with np.errstate(all="ignore"):
        ls = _log_sigmoid(xp, x)
        if pos_weight is not None:
            ls = ls * ((asdtype(xp, pos_weight, ct) - 1) * t + 1)
        loss = (1 - t) * x - ls
        if weight is not None:
            loss = loss * asdtype(xp, weight, ct)
    return _reduce_loss(xp, loss, reduction, npdt)


__all__ += ["smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]


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


def _sigmoid(xp: Any, x: Array) -> Any:
    return 1 / (1 + xp.exp(-x))


def _softplus(xp: Any, x: Array, beta: Any = 1.0, threshold: Any = 20.0) -> Any:
    bx = x * beta
    return xp.where(bx > threshold, x, xp.log1p(xp.exp(xp.minimum(bx, threshold))) / beta)


_activation("silu", lambda xp, x: compiled.elementwise("silu", x) if compiled.usable(xp, x) else x * _sigmoid(xp, x))
_activation("mish", lambda xp, x: x * xp.tanh(_softplus(xp, x)))
_activation("hardswish", lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6)
_activation("hardsigmoid", lambda xp, x: xp.clip(x + 3, 0, 6) / 6)
_activation("leaky_relu", lambda xp, x, negative_slope=0.01: xp.where(x > 0, x, x * negative_slope))
_activation("elu", lambda xp, x, alpha=1.0, scale=1.0, input_scale=1.0:
            xp.where(x > 0, x * scale, xp.expm1(x * input_scale) * alpha * scale))
_activation("celu", lambda xp, x, alpha=1.0: xp.where(x > 0, x, xp.expm1(x / alpha) * alpha))
_activation("hardtanh", lambda xp, x, min_val=-1.0, max_val=1.0: xp.minimum(xp.maximum(x, min_val), max_val))
_activation("softplus", _softplus)


def log_sigmoid_forward(xp: Any, self: Array) -> Any:
    """(log(sigmoid(x)), buffer): ``min(x, 0) - log1p(exp(-|x|))``; the buffer is empty on the CPU, as PyTorch's."""
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{type_name(self.dtype)}'")
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct)
    out = (xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))).astype(self.dtype, copy=False)
    return out, xp.empty((0,), self.dtype)


setattr(log_sigmoid_forward, "meta_kernel",
        lambda xp, self: (_meta_array(self.dtype, self.shape), _meta_array(self.dtype, (0,))))


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


__all__ += ["log_sigmoid_forward", "glu"]


@elementwise
def threshold(xp: Any, self: Array, threshold: Any, value: Array) -> Any:
    """``value`` where ``x <= threshold``, else x (any real dtype, as PyTorch's)."""
    if self.dtype.kind == "b":
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    return xp.where(self <= threshold, xp.asarray(value).astype(self.dtype), self)


def _shrink_check(self: Array, lambd: Any, name: Any) -> Any:
    if not (self.dtype.kind == "f" or self.dtype == BF16_NP):
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")


@elementwise
def softshrink(xp: Any, self: Array, lambd: Any = 0.5) -> Any:
    _shrink_check(self, lambd, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, {float(np.finfo(np.float32).max):g}] for input dtype "
                           f"{type_name(self.dtype)}, but found {lambd:g}")
    return xp.where(self > lambd, self - lambd, xp.where(self < -lambd, self + lambd, 0)).astype(self.dtype)


@elementwise
def hardshrink(xp: Any, self: Array, lambd: Any = 0.5) -> Any:
    _shrink_check(self, lambd, "hardshrink_cpu")
    return xp.where((self >= -lambd) & (self <= lambd), 0, self).astype(self.dtype)


__all__ += ["threshold", "softshrink", "hardshrink"]


# ------------------------------------------------------------------------------ pixel shuffle (PixelShuffle.cpp)
def pixel_shuffle(xp: Any, self: Array, upscale_factor: Any) -> Any:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    if self.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = self.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = self.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = xp.transpose(x, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return xp.ascontiguousarray(x).reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(xp: Any, self: Array, downscale_factor: Any) -> Any:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    if self.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = self.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    n = len(lead)
    x = self.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = xp.transpose(x, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return xp.ascontiguousarray(x).reshape(tuple(lead) + (c * r * r, h // r, w // r))


__all__ += ["pixel_shuffle", "pixel_unshuffle"]


# ------------------------------------------------------------------------------ group_norm (group_norm_kernel.cpp)
def native_group_norm(xp: Any, input: Array, weight: Array, bias: Array, N: Any, C: Any, HxW: Any, group: Any,
                      eps: Any) -> Any:  # noqa: A002
    """(out, mean, rstd): each sample's channel groups normalised by their mean and biased variance, then scaled and
    shifted per channel; mean / rstd are (N, group)."""
    if not (input.dtype.kind == "f" or input.dtype == BF16_NP):
        raise NotImplementedError(f"\"group_norm\" not implemented for '{type_name(input.dtype)}'")
    ct = compute_dtype(input.dtype)
    x = asdtype(xp, input, ct).reshape(N, group, -1)
    mean = x.mean(axis=2) if x.shape[2] else xp.zeros((N, group), ct)
    var = ((x - mean[..., None]) ** 2).mean(axis=2) if x.shape[2] else xp.zeros((N, group), ct)
    with np.errstate(all="ignore"):
        rstd = 1 / xp.sqrt(var + eps)
    out = ((x - mean[..., None]) * rstd[..., None]).reshape(N, C, -1)
    if weight is not None:
        out = out * asdtype(xp, weight, ct).reshape(1, C, 1)
    if bias is not None:
        out = out + asdtype(xp, bias, ct).reshape(1, C, 1)
    return (out.reshape(input.shape).astype(input.dtype, copy=False), mean.astype(input.dtype, copy=False),
            rstd.astype(input.dtype, copy=False))


setattr(native_group_norm, "meta_kernel", lambda xp, input, weight, bias, N, C, HxW, group, eps: (
    _meta_array(input.dtype, input.shape), _meta_array(input.dtype, (N, group)), _meta_array(input.dtype, (N, group))))
__all__ += ["native_group_norm"]


# ------------------------------------------------------------------------------ margin losses (Loss*.cpp)
def soft_margin_loss(xp: Any, self: Array, target: Array, reduction: Any = _MEAN) -> Any:
    """``log(1 + exp(-target * self))``, written into a tensor of ``self``'s shape and dtype as PyTorch's
    ``neg_out(output, self).mul_(target).exp_().add_(1).log_()`` does."""
    if self.dtype.kind != "f" and self.dtype != BF16_NP:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {type_name(self.dtype)}")
    shape = np.broadcast_shapes(self.shape, target.shape)
    if shape != self.shape:
        raise RuntimeError(f"output with shape {shape_str(self.shape)} doesn't match the broadcast shape "
                           f"{shape_str(shape)}")
    ct = compute_dtype(self.dtype)
    with np.errstate(all="ignore"):
        loss = xp.log1p(xp.exp(-asdtype(xp, self, ct) * asdtype(xp, target, ct)))
    return _reduce_loss(xp, loss, reduction, self.dtype)


def _margin_shape_check(self: Array, name: Any) -> Any:
    nd = self.ndim
    if not ((nd == 2 and self.shape[1] != 0) or (nd == 1 and self.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{shape_str(self.shape)}")
    if self.dtype.kind != "f" and self.dtype != BF16_NP:
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(self.dtype)}'")
    if nd <= 1:
        return 1, 1 if nd == 0 else self.shape[0]
    return self.shape


def _check_long(target: Array) -> Any:
    if target.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {type_name(target.dtype)}")


def multi_margin_loss(xp: Any, self: Array, target: Array, p: Any = 1, margin: Any = 1, weight: Array = None,
                      reduction: Any = _MEAN) -> Any:
    """Per sample ``sum_{j != y} max(0, margin - x[y] + x[j])^p * weight[y] / C`` (``LossMultiMargin.cpp``)."""
    nframe, dim = _margin_shape_check(self, "multi_margin_loss_cpu_kernel")
    if p not in (1, 2):
        raise RuntimeError("only p == 1 and p == 2 supported")
    if target.ndim > 1 or target.size != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got "
                           f"{shape_str(target.shape)}. Input has shape {shape_str(self.shape)}.")
    _check_long(target)
    if weight is not None:
        if weight.ndim > 1 or weight.size != dim:
            raise RuntimeError(f"inconsistent weight size, expected {dim} but got {shape_str(weight.shape)}")
        if weight.dtype != self.dtype:
            raise RuntimeError(f"expected scalar type {type_name(self.dtype)} but found {type_name(weight.dtype)}")
    t = target.reshape(nframe)
    if t.size and bool(((t < 0) | (t >= dim)).any()):
        raise RuntimeError("target out of range")
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct).reshape(nframe, dim)
    rows = xp.arange(nframe)
    with np.errstate(all="ignore"):
        z = margin - x[rows, t][:, None] + x
        z[rows, t] = 0
        h = xp.where(z > 0, z * z if p == 2 else z, 0)
        if weight is not None:
            h = h * asdtype(xp, weight, ct).reshape(dim)[t][:, None]
        loss = h.sum(axis=1) / dim
    if reduction == 0:
        return loss.reshape(target.shape if self.ndim <= 1 else (nframe,)).astype(self.dtype)
    return _reduce_loss(xp, loss, reduction, self.dtype)


def multilabel_margin_loss_forward(xp: Any, self: Array, target: Array, reduction: Any) -> Any:
    """(output, is_target): the targets of a row are its indices up to the first -1; per row,
    ``sum_{k target} sum_{j not a target} max(0, 1 - (x[y_k] - x[j])) / C`` (``LossMultiLabelMargin.cpp``)."""
    nframe, dim = _margin_shape_check(self, "multilabel_margin_loss_forward_out_frame")
    if (self.ndim <= 1 and not (target.ndim <= 1 and target.size == dim)) or \
            (self.ndim == 2 and target.shape != (nframe, dim)):
        raise RuntimeError(f"inconsistent target size: {shape_str(target.shape)} for input of size: "
                           f"{shape_str(self.shape)}")
    _check_long(target)
    t = target.reshape(nframe, dim)
    if t.size and bool(((t < -1) | (t >= dim)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    ct = compute_dtype(self.dtype)
    x = asdtype(xp, self, ct).reshape(nframe, dim)
    valid = xp.cumprod(t != -1, axis=1).astype(bool)               # the indices before the first -1
    tc = xp.where(valid, t, 0)
    is_target = xp.zeros((nframe, dim), bool)
    rows = xp.broadcast_to(xp.arange(nframe)[:, None], t.shape)
    is_target[rows[valid], tc[valid]] = True
    with np.errstate(all="ignore"):
        z = 1 - xp.take_along_axis(x, tc, 1)[:, :, None] + x[:, None, :]
        active = (z > 0) & valid[:, :, None] & ~is_target[:, None, :]
        loss = xp.where(active, z, 0).sum(axis=(1, 2)) / dim
    is_target = is_target.astype(self.dtype).reshape(target.shape)
    if reduction == 0:
        return loss.reshape(() if self.ndim <= 1 else (nframe,)).astype(self.dtype), is_target
    return _reduce_loss(xp, loss, reduction, self.dtype), is_target


__all__ += ["soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss_forward"]


# ------------------------------------------------------------------------------ prelu, rrelu (Activation.cpp)
@elementwise
def _prelu_kernel(xp: Any, self: Array, weight: Array) -> Any:
    npdt = result_np_dtype(self, weight)
    if npdt.kind != "f" and npdt != BF16_NP:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{type_name(npdt)}'")
    return xp.where(self > 0, self, weight * self).astype(npdt, copy=False)


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
        return xp.where(x > 0, x, x * ct.type((lower + upper) / 2)).astype(self.dtype, copy=False)
    neg = x <= 0
    n = int(neg.sum())
    u = uniform_bits(_gen(generator), n, np.dtype(np.float64))
    r = np.ones(x.shape, ct)
    r[np.asarray(neg.get() if hasattr(neg, "get") else neg)] = (u * (float(upper) - float(lower)) + float(lower))
    r = xp.asarray(r)
    noise[...] = r.astype(noise.dtype, copy=False)
    return xp.where(neg, x * r, x).astype(self.dtype, copy=False)


# ------------------------------------------------------------------------------ dropout (Dropout.cpp)
def _native_dropout_meta(xp: Any, input: Array, p: Any, train: Any) -> Any:  # noqa: A002
    return xp.empty(input.shape, input.dtype), xp.empty(input.shape, bool)


@meta_kernel(_native_dropout_meta)
def native_dropout(xp: Any, input: Array, p: Any, train: Any) -> Any:  # noqa: A002
    """(output, mask): in training ``mask ~ bernoulli(1 - p)`` (a bool tensor) and ``output = input * mask / (1 - p)``
    (0 for ``p == 1``); otherwise a copy of the input and an all-True mask."""
    if input.size == 0:
        return input.copy(), xp.empty(input.shape, input.dtype)
    if train is None or train:
        p1m = 1.0 - p
        scale = 0.0 if p1m == 0 else 1.0 / p1m
        mask = bernoulli_p(xp, xp.empty(input.shape, bool), p1m)
        return (input * mask * input.dtype.type(scale)).astype(input.dtype, copy=False), mask
    return input.copy(), xp.ones(input.shape, bool)


__all__ += ["_prelu_kernel", "rrelu_with_noise", "native_dropout"]


# ------------------------------------------------------------------------------ channel shuffle (ChanelShuffle.cpp)
def _channel_shuffle_checks(self: Array, groups: Any) -> Any:
    if self.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{self.ndim} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if self.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {self.shape[1]} channels and "
                           f"{groups} groups.")


def channel_shuffle(xp: Any, self: Array, groups: Any) -> Any:
    """(N, g * k, *) -> channels read as a (g, k) grid and written transposed, (k, g)."""
    _channel_shuffle_checks(self, groups)
    n, c = self.shape[:2]
    x = self.reshape((n, groups, c // groups) + self.shape[2:])
    return xp.ascontiguousarray(xp.swapaxes(x, 1, 2)).reshape(self.shape)


__all__ += ["channel_shuffle", "_safe_softmax"]


# ------------------------------------------------------------------------------ reflection / replication padding
_PAD_DIM_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


def pad_source_index(n: int, lo: int, hi: int, reflect: bool) -> np.ndarray:
    """For each output position along a padded dim, the input position it copies: mirrored about the edge
    (reflection: ``-q`` / ``2(n-1) - q``) or clamped to it (replication); negative padding crops."""
    q = np.arange(-lo, n + hi)
    if reflect:
        q = np.abs(q)
        q = np.where(q > n - 1, 2 * (n - 1) - q, q)
        return q
    return np.clip(q, 0, n - 1)


def _pad_checks(self: Array, padding: Any, nd: int, reflect: bool) -> None:
    """PyTorch's checks of reflection_pad{1,2,3}d / replication_pad{1,2,3}d (``ReflectionPad.cpp``,
    ``ReplicationPadding.cpp``)."""
    dim = self.ndim
    if dim not in (nd + 1, nd + 2) or any(s == 0 for s in self.shape[int(dim == nd + 2):]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {shape_str(self.shape)}")
    if len(padding) != 2 * nd:
        raise RuntimeError(f"padding size is expected to be {2 * nd}, but got: {len(padding)}")
    ins = self.shape[dim - nd:]
    outs = []
    for i in range(nd):                      # padding lists the last dim first
        lo, hi = padding[2 * (nd - 1 - i)], padding[2 * (nd - 1 - i) + 1]
        n = ins[i]
        if reflect and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{4 + 2 * (nd - 1 - i)}: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {dim - nd + i} of input "
                               f"{shape_str(self.shape)}")
        outs.append(n + lo + hi)
    if any(o < 1 for o in outs):
        names = _PAD_DIM_NAMES[nd]
        raise RuntimeError(f"input ({', '.join(f'{a}: {n}' for a, n in zip(names, ins))}) is too small. Calculated "
                           f"output {' '.join(f'{a}: {o}' for a, o in zip(names, outs))}")


def _pad_nd(xp: Any, self: Array, padding: Any, nd: int, reflect: bool) -> Any:
    _pad_checks(self, padding, nd, reflect)
    out = self
    for i in range(nd):
        axis = self.ndim - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        out = xp.take(out, xp.asarray(pad_source_index(self.shape[axis], lo, hi, reflect)), axis=axis)
    return xp.ascontiguousarray(out)


def _def_pad(name: str, nd: int, reflect: bool) -> None:
    def kernel(xp: Any, self: Array, padding: Any) -> Any:
        return _pad_nd(xp, self, padding, nd, reflect)
    kernel.__name__ = kernel.__qualname__ = name
    globals()[name] = kernel
    __all__.append(name)


for _nd in (1, 2, 3):
    _def_pad(f"reflection_pad{_nd}d", _nd, True)
    _def_pad(f"replication_pad{_nd}d", _nd, False)


# ------------------------------------------------------------------------------ max unpooling (MaxUnpooling.cpp)
def _max_unpool(xp: Any, self: Array, indices: Array, output_size: Any, nd: int) -> Any:
    if indices.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {type_name(indices.dtype)}")
    if len(output_size) != nd:
        raise RuntimeError(f"There should be exactly {nd} elements but got {len(output_size)} elements")
    if self.shape != indices.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({shape_str(self.shape)}) but got indices tensor with shape: {shape_str(indices.shape)}")
    if self.ndim not in (nd + 1, nd + 2) or any(s <= 0 for s in self.shape[-nd - 1:]):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor with non-zero "
                           f"dimensions, but got a tensor with shape {shape_str(self.shape)}")
    lead = self.shape[:self.ndim - nd]
    n_out = int(np.prod(output_size))
    flat_in = self.reshape(lead + (-1,))
    flat_idx = indices.reshape(lead + (-1,))
    if flat_idx.size and (int(flat_idx.max()) >= n_out or int(flat_idx.min()) < 0):
        bad = int(flat_idx.max()) if int(flat_idx.max()) >= n_out else int(flat_idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(str(v) for v in output_size)}")
    out = xp.zeros(lead + (n_out,), self.dtype)
    xp.put_along_axis(out, flat_idx, flat_in, axis=-1)
    return out.reshape(lead + tuple(output_size))


def max_unpool2d(xp: Any, self: Array, indices: Array, output_size: Any) -> Any:
    return _max_unpool(xp, self, indices, output_size, 2)


def max_unpool3d(xp: Any, self: Array, indices: Array, output_size: Any, stride: Any, padding: Any) -> Any:
    if len(stride) != 3 or len(padding) != 3:
        raise RuntimeError("There should be exactly three elements (depth, height, width) in stride and padding")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {shape_str(stride)}")
    return _max_unpool(xp, self, indices, output_size, 3)


# ------------------------------------------------------------------------------ embedding_renorm_ (Embedding.cpp)
def _embedding_renorm_checks(xp: Any, self: Array, indices: Array, max_norm: float, norm_type: float) -> Any:
    if self.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {self.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for embedding_renorm_)")
    if indices.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {type_name(indices.dtype)} instead (while checking arguments for "
                           f"embedding_renorm_)")
    return self


@meta_kernel(_embedding_renorm_checks)
def embedding_renorm_(xp: Any, self: Array, indices: Array, max_norm: float, norm_type: float) -> Any:
    """In place: rows of ``self`` named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` are scaled down
    by ``max_norm / (norm + 1e-7)`` (each row once)."""
    _embedding_renorm_checks(xp, self, indices, max_norm, norm_type)
    rows = xp.unique(indices.reshape(-1))
    ct = compute_dtype(self.dtype)
    w = self[rows].astype(ct)
    with np.errstate(all="ignore"):
        if norm_type == 1:
            norms = xp.abs(w).sum(axis=1)
        elif norm_type == 2:
            norms = xp.sqrt((w * w).sum(axis=1))
        elif norm_type == float("inf"):
            norms = xp.abs(w).max(axis=1) if w.shape[1] else xp.zeros(w.shape[0], ct)
        else:
            norms = (xp.abs(w) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        norms = norms.astype(np.float64)         # PyTorch: the norm as a double, ``row *= max_norm / (norm + 1e-7)``
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(ct)
    self[rows] = (w * scale[:, None]).astype(self.dtype)
    return self


__all__ += ["max_unpool2d", "max_unpool3d", "embedding_renorm_"]


# ------------------------------------------------------------------------------ attention (the CPU "flash" op)
# PyTorch's _scaled_dot_product_flash_attention_for_cpu: softmax(q k^T * scale + mask) v in one op, returning the
# rows' logsumexp instead of the probabilities; its backward recomputes them from q, k and the logsumexp. ember
# computes the two products with BLAS over all (batch, head) pairs and, for float32, the softmax with its causal
# mask and logsumexp in one compiled pass over the scores (no mask tensor, no separate scale / add / max / exp
# passes); other dtypes run the same steps in NumPy.
def _flash_checks(query: Array, key: Array, value: Array, dropout_p: Any, attn_mask: Array) -> None:
    name = "scaled_dot_product_attention_flash_attention"
    if query.dtype.kind != "f" and query.dtype != BF16_NP:
        raise RuntimeError(f"{name}: Expected data type in FP32, FP64, BF16, FP16, but got "
                           f"{type_name(query.dtype)} instead.")
    if not (query.ndim == key.ndim == value.ndim == 4):
        raise RuntimeError(f"{name}: Accept only 4 dims inputs shape of {{B, H, T, K}}")
    if dropout_p != 0.0:
        raise RuntimeError(f"{name}: Currently do not support dropout > 0")
    if not (query.shape[3] == value.shape[3] and key.shape[3] == value.shape[3]):
        raise RuntimeError(f"{name}: Q/K/V should have the same head size")
    if attn_mask is not None and attn_mask.dtype not in (np.float32, query.dtype):
        raise RuntimeError(f"{name}: Attention mask is the same data type as query")
    if attn_mask is not None and attn_mask.ndim not in (2, 4):
        raise RuntimeError(f"{name}: Attention mask dim in {{2, 4}}")


def _flash_scale(query: Array, scale: Any) -> float:
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)


def _flash_scores(xp: Any, query: Array, key: Array, attn_mask: Array, scale: Any, ct: Any) -> tuple[Any, float]:
    """q k^T in the compute dtype (B, H, L, S), plus the mask when there is one (then already scaled: the factor
    left to apply is returned)."""
    s = _flash_scale(query, scale)
    scores = xp.matmul(asdtype(xp, query, ct), xp.swapaxes(asdtype(xp, key, ct), -1, -2))
    if attn_mask is None:
        return scores, s
    scores *= s
    scores += asdtype(xp, attn_mask, ct)
    return scores, 1.0


def _causal_keep(xp: Any, L: int, S: int) -> Any:
    return xp.tril(xp.ones((L, S), dtype=bool))


def _scaled_dot_product_flash_attention_for_cpu(xp: Any, query: Array, key: Array, value: Array,
                                                dropout_p: Any = 0.0, is_causal: Any = False, attn_mask: Array = None,
                                                scale: Any = None) -> Any:
    _flash_checks(query, key, value, dropout_p, attn_mask)
    ct = compute_dtype(query.dtype)
    B, H, L = query.shape[:3]
    S = key.shape[2]
    scores, s = _flash_scores(xp, query, key, attn_mask, scale, ct)
    if compiled.usable(xp, scores) and scores.size:
        rows = scores.reshape(-1, S)
        lse = compiled.attention_softmax(rows, L, s, bool(is_causal)).reshape(B, H, L)
        p = scores
    else:
        with np.errstate(all="ignore"):
            x = scores * s
            if is_causal:
                x = xp.where(_causal_keep(xp, L, S), x, -np.inf)
            m = x.max(axis=-1, keepdims=True) if S else xp.full(x.shape[:-1] + (1,), -np.inf, ct)
            empty = m == -np.inf                                    # every key masked: p = 0, lse = 0
            e = xp.exp(x - xp.where(empty, 0, m))
            t = e.sum(axis=-1, keepdims=True)
            p = xp.where(empty, 0, e / xp.where(empty, 1, t))
            lse = xp.where(empty, 0, m + xp.log(xp.where(empty, 1, t)))[..., 0].astype(ct)
    # PyTorch's layouts: the output is laid out as the query is (empty_like: a query that is a transposed
    # (B, L, H, E) projection gives an output whose transpose back is contiguous, so the caller's
    # ``.transpose(1, 2).contiguous()`` copies nothing), the logsumexp as (B, L, H) transposed
    out = xp.empty_like(query, dtype=ct, order="K")
    xp.matmul(p, asdtype(xp, value, ct), out=out)
    lse = xp.ascontiguousarray(lse.transpose(0, 2, 1)).transpose(0, 2, 1)
    return out.astype(query.dtype, copy=False), lse


def _scaled_dot_product_flash_attention_for_cpu_backward(xp: Any, grad_out: Array, query: Array, key: Array,
                                                         value: Array, out: Array, logsumexp: Array, dropout_p: Any,
                                                         is_causal: Any, attn_mask: Array = None,
                                                         scale: Any = None) -> Any:
    """With p recomputed from the scores and lse: dv = p^T g, dp = g v^T, ds = p (dp - sum(g * out)) * scale,
    dq = ds k, dk = ds^T q."""
    _flash_checks(query, key, value, dropout_p, attn_mask)
    ct = compute_dtype(query.dtype)
    L, S = query.shape[2], key.shape[2]
    scores, s = _flash_scores(xp, query, key, attn_mask, scale, ct)
    g, o = asdtype(xp, grad_out, ct), asdtype(xp, out, ct)
    q, k, v = (asdtype(xp, t, ct) for t in (query, key, value))
    d = (g * o).sum(axis=-1)
    full = _flash_scale(query, scale)
    dp = xp.matmul(g, xp.swapaxes(v, -1, -2))
    if compiled.usable(xp, scores, g) and scores.size:
        rows = scores.reshape(-1, S)
        compiled.attention_probs(rows, L, s, bool(is_causal), asdtype(xp, logsumexp, np.float32))
        p = scores
        compiled.attention_score_grad(rows, dp.reshape(-1, S), d, full)
        ds = dp
    else:
        with np.errstate(all="ignore"):
            p = xp.exp(scores * s - asdtype(xp, logsumexp, ct)[..., None])
            if is_causal:
                p = xp.where(_causal_keep(xp, L, S), p, 0)
            ds = p * (dp - d[..., None]) * full
    gq = xp.matmul(ds, k)
    gk = xp.matmul(xp.swapaxes(ds, -1, -2), q)
    gv = xp.matmul(xp.swapaxes(p, -1, -2), g)
    return tuple(xp.ascontiguousarray(a).astype(t.dtype, copy=False) for a, t in ((gq, query), (gk, key), (gv, value)))


__all__ += ["_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward"]
