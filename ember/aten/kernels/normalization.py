"""Kernels of layer norm, batch norm, group norm
(``aten/src/ATen/native/{layer_norm,Normalization,group_norm}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import (Array, asdtype, compute_dtype, meta_array, meta_kernel, shape_str, type_name,
                                        wrap_dim)
from ember.c10.dtype import BF16_NP

__all__ = ["native_layer_norm", "native_layer_norm_backward", "native_batch_norm", "native_batch_norm_backward",
           "native_group_norm"]

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
        out, mean, rstd = loops.normalization.layer_norm(x.reshape(-1, n), params[0], params[1], eps)
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
        gx, sw, sb = loops.normalization.layer_norm_backward(g.reshape(-1, n), x.reshape(-1, n), mean, rstd, w)
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
            mean, var = (s.astype(ct) for s in loops.normalization.batch_norm_stats(x))
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
        return loops.normalization.batch_norm_apply(x, alpha, beta), save_mean, save_invstd
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
        sum_g, dot = (s.astype(ct) for s in loops.normalization.batch_norm_backward_sums(g, x, mean))
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
                gi = loops.normalization.batch_norm_backward_input(g, x, mean, k1, k2, k3)
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


# ------------------------------------------------------------------------------ group_norm (group_norm_kernel.cpp)
def native_group_norm(xp: Any, input: Array, weight: Array, bias: Array, N: Any, C: Any, HxW: Any, group: Any,
                      eps: Any) -> Any:  # noqa: A002
    """(out, mean, rstd): each sample's channel groups normalised by their mean and biased variance, then scaled and
    shifted per channel; mean / rstd are (N, group)."""
    if not (input.dtype.kind == "f" or input.dtype == BF16_NP):
        raise NotImplementedError(f"\"group_norm\" not implemented for '{type_name(input.dtype)}'")
    ct = compute_dtype(input.dtype)
    if (input.size and compiled.usable(xp, input) and (weight is None or weight.dtype == ct)
            and (bias is None or bias.dtype == ct)):
        return loops.normalization.group_norm(input, weight, bias, N, C, group, eps)
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
    meta_array(input.dtype, input.shape), meta_array(input.dtype, (N, group)), meta_array(input.dtype, (N, group))))
