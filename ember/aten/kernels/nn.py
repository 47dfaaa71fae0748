"""Kernels of the ``torch.nn`` ops (``aten/src/ATen/native/{SoftMax,Activation,layer_norm,Convolution*,
DilatedMaxPool*,Embedding,PadNd}.cpp``).

Convolution works on the windows of the zero-padded input: ``sliding_window_view`` exposes, without a
copy, an array of shape (N, C, out..., k...) whose contraction with the weight over (C, k...) is one
BLAS GEMM per group (im2col + GEMM; the window array is materialised by ``tensordot`` as the column
matrix). The gradient with respect to the input is the transposed operation, done as one GEMM per
kernel offset whose result is added into a strided slice of the padded input gradient (col2im).
"""
from __future__ import annotations

import math

import numpy as np

from ember.aten.kernels import conv_algos
from ember.aten.kernels._common import asdtype, compute_dtype, wrap_dim
from ember.aten.kernels.conv_algos import _windows

__all__ = ["softmax", "log_softmax", "gelu", "native_layer_norm", "convolution", "convolution_backward",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "constant_pad_nd", "embedding"]


# ------------------------------------------------------------------------------ softmax
def softmax(xp, self, dim, half_to_float=False):
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.ones_like(self)
    with np.errstate(all="ignore"):
        m = xp.max(x, axis=d, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), x.dtype))
        e = xp.exp(x - m)
        r = e / xp.sum(e, axis=d, keepdims=True)
    return r.astype(self.dtype, copy=False)


def log_softmax(xp, self, dim, half_to_float=False):
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.zeros_like(self)
    with np.errstate(all="ignore"):
        m = xp.max(x, axis=d, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), x.dtype))
        s = x - m
        r = s - xp.log(xp.sum(xp.exp(s), axis=d, keepdims=True))
    return r.astype(self.dtype, copy=False)


# ------------------------------------------------------------------------------ gelu
def gelu(xp, self, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh. (got {approximate})")
    x = asdtype(xp, self, compute_dtype(self.dtype))
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
            r = 0.5 * x * (1.0 + xp.tanh(inner))
        else:
            from ember.aten.kernels.special_math import erf
            r = 0.5 * x * (1.0 + erf(xp, x * (1.0 / math.sqrt(2.0))))
    return r.astype(self.dtype, copy=False)


# ------------------------------------------------------------------------------ layer norm
def native_layer_norm(xp, input, normalized_shape, weight, bias, eps):  # noqa: A002
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


# ------------------------------------------------------------------------------ convolution
def _conv_forward(xp, x, w, stride, padding, dilation, groups):
    return conv_algos.run("forward", xp, x, w, None, stride, padding, dilation, groups)


def _conv_input_grad(xp, gout, w, in_shape, stride, padding, dilation, groups):
    """Gradient of the convolution with respect to its input (the transposed convolution of gout)."""
    return conv_algos.run("input_grad", xp, gout, w, tuple(in_shape), stride, padding, dilation, groups)


def _conv_weight_grad(xp, gout, x, w_shape, stride, padding, dilation, groups):
    return conv_algos.run("weight_grad", xp, gout, x, tuple(w_shape), stride, padding, dilation, groups)


def _conv_out_size(in_sp, ksize, stride, padding, dilation):
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(in_sp, ksize, stride, padding,
                                                                                dilation))


def _expand(v, nd, name):
    v = tuple(v)
    if len(v) == 1:
        v = v * nd
    if len(v) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


def _check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):  # noqa: A002
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


def convolution(xp, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):  # noqa: A002
    stride, padding, dilation, output_padding = _check_conv(input, weight, bias, stride, padding, dilation,
                                                            transposed, output_padding, groups)
    cdt = np.result_type(input.dtype, weight.dtype)
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
    return xp.ascontiguousarray(out).astype(cdt, copy=False)


def convolution_backward(xp, grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,  # noqa: A002
                         output_padding, groups, output_mask):
    stride, padding, dilation, output_padding = _check_conv(input, weight, None, stride, padding, dilation,
                                                            transposed, output_padding, groups)
    g, x, w = grad_output, input, weight
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
    empty = xp.empty((0,), g.dtype)
    return (xp.ascontiguousarray(gi) if gi is not None else empty,
            xp.ascontiguousarray(gw).astype(g.dtype, copy=False) if gw is not None else empty,
            gb if gb is not None else empty)


# ------------------------------------------------------------------------------ pooling
def _pool_out(i, k, s, p, d, ceil_mode):
    num = i + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:  # the last window must start inside the input or left padding
        o -= 1
    return o


def max_pool2d_with_indices(xp, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool(xp, self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(xp, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool(xp, self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool(xp, self, nd, kernel_size, stride, padding, dilation, ceil_mode):
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
    out_sp = tuple(_pool_out(i, kk, ss, pp, dd, ceil_mode) for i, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[1],) + out_sp))}). Output size is too small")
    in_sp = x.shape[2:]
    # pad with -inf on the left by p and on the right enough for every (ceil-mode) window
    right = tuple(max(0, (o - 1) * ss + dd * (kk - 1) + 1 - i - pp) for o, ss, dd, kk, i, pp in
                  zip(out_sp, s, d, k, in_sp, p))
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xpad = xp.pad(x, [(0, 0), (0, 0)] + [(pp, rr) for pp, rr in zip(p, right)], constant_values=fill)
    win = _windows(xp, xpad, k, s, d)
    win = win[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_sp)]
    flat = win.reshape(win.shape[:2 + nd] + (-1,))
    # NaN wins, as in PyTorch's kernel; among equal maxima the first one
    isnan = xp.isnan(flat) if flat.dtype.kind == "f" else None
    arg = xp.argmax(flat, axis=-1)
    if isnan is not None and bool(isnan.any()):
        nan_arg = xp.argmax(isnan, axis=-1)
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
def constant_pad_nd(xp, self, pad, value=0):
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
def embedding(xp, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
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
