"""Kernels of max / average / adaptive pooling and max unpooling (``aten/src/ATen/native/
{DilatedMaxPool2d,AveragePool2d,AdaptiveAveragePooling,AdaptiveMaxPooling2d,MaxUnpooling}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import Array, asdtype, compute_dtype, meta_array, meta_kernel, shape_str, type_name
from ember.aten.kernels.conv_algos import _windows
from ember.aten.kernels.convolution import _expand
from ember.aten.kernels.indexing import scatter_add
from ember.aten.kernels.upsample import _scatter_rows
from ember.aten.meta import pooling_output_size
from ember.c10.dtype import BF16_NP, cpp_type_name

__all__ = ["max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool2d_with_indices_backward",
           "max_pool3d_with_indices_backward", "avg_pool2d", "avg_pool3d", "avg_pool2d_backward",
           "avg_pool3d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "_adaptive_avg_pool2d_backward",
           "_adaptive_avg_pool3d_backward", "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool2d",
           "max_unpool3d"]

# ------------------------------------------------------------------------------ pooling
def max_pool2d_with_indices(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: Any = False) -> Any:
    return _max_pool(xp, self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(xp: Any, self: Array, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: Any = False) -> Any:
    return _max_pool(xp, self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool_args(x: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                   ceil_mode: Any) -> Any:
    """The window (kernel, stride, padding, dilation) and output size of a max pool of the batched x."""
    kernel_size, stride, padding, dilation = _window_lengths(f"max_pool{nd}d", nd, "either ", kernel_size, stride,
                                                             padding, dilation)
    k = _expand(kernel_size, nd, "kernel_size")
    s = tuple(_expand(stride, nd, "stride")) if stride else k
    p = _expand(padding, nd, "padding")
    d = _expand(dilation, nd, "dilation")
    for kk, pp in zip(k, p):
        if pp > kk // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={d[0]}")
    out_sp = tuple(pooling_output_size(i, kk, ss, pp, dd, ceil_mode)
                   for i, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[1],) + out_sp))}). Output size is too small")
    return k, s, p, d, out_sp


def _max_pool(xp: Any, self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: Any) -> Any:
    if self.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    batched = self.ndim == nd + 2
    x = self if batched else self[None]
    k, s, p, d, out_sp = _max_pool_args(x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    in_sp = x.shape[2:]
    if compiled.usable(xp, x, dtypes=(np.float32, np.float64)):
        # one pass per plane: windows clipped to the input (Note in loops/pooling.py's max_pool3d)
        one = (1,) * (3 - nd)
        planes = x.reshape((-1,) + one + tuple(in_sp))
        vals, idx = loops.pooling.max_pool(planes, one + tuple(k), one + s, (0,) * (3 - nd) + tuple(p),
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
        arg = compiled.where(xp, isnan.any(axis=-1), nan_arg, arg)
    vals = xp.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    lost = vals == fill          # a window of nothing but -inf (the fill) may have named a padding position
    if bool(lost.any()):         # PyTorch's kernel answers the window's first element inside the input
        inside = xp.pad(xp.ones(in_sp, bool), [(pp, rr) for pp, rr in zip(p, right)], constant_values=False)
        first = xp.argmax(_windows(xp, inside[None, None], k, s, d)[(slice(None), slice(None)) + tuple(
            slice(0, o) for o in out_sp)].reshape((1, 1) + out_sp + (-1,)), axis=-1)
        arg = compiled.where(xp, lost, xp.broadcast_to(first, arg.shape), arg)
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


def _max_pool_backward(xp: Any, grad_output: Array, self: Array, nd: int, kernel_size: Any, stride: Any,
                       padding: Any, dilation: Any, ceil_mode: Any, indices: Array) -> Any:
    """``max_pool{nd}d_with_indices_backward`` (``DilatedMaxPool2d.cpp`` / ``DilatedMaxPool3d.cpp``): each output's
    gradient added to the input element its index names (flat over the plane), in a zeroed input-shaped gradient;
    an index of -1 (no element) adds nothing, as in PyTorch's loop. PyTorch does not check the other indices (one
    past the plane writes past its buffer); here they raise."""
    if self.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if grad_output.dtype != self.dtype:
        raise RuntimeError(f"expected dtype {cpp_type_name(self.dtype.name)} for `gradOutput` but got dtype "
                           f"{cpp_type_name(grad_output.dtype.name)}")
    batched = self.ndim == nd + 2
    x = self if batched else self[None]
    k, s, p, d, out_sp = _max_pool_args(x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    want = self.shape[:self.ndim - nd] + out_sp
    _check_sizes(grad_output, want, self.ndim - nd - 1)
    _check_sizes(indices, want, self.ndim - nd - 1)
    if indices.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {type_name(indices.dtype)}")
    if self.dtype.kind not in "fc" and self.dtype != BF16_NP:
        raise NotImplementedError(f'"max_pool{nd}d_backward" not implemented for \'{type_name(self.dtype)}\'')
    in_sp = self.shape[self.ndim - nd:]
    n_in, n_out = int(np.prod(in_sp)), int(np.prod(out_sp))
    planes = int(np.prod(self.shape[:self.ndim - nd]))
    ct = compute_dtype(self.dtype)
    g = asdtype(xp, grad_output, ct).reshape(planes, n_out)
    idx = indices.reshape(planes, n_out)
    if compiled.usable(xp, g, dtypes=(np.float32, np.float64)):
        gx, bad = loops.pooling.max_pool_backward(g, idx, n_in)
    else:                                           # scatter_add along the plane, the -1 entries adding 0 at 0
        outside = (idx != -1) & ((idx < 0) | (idx >= n_in))
        bad = idx[outside][:1]
        gx = xp.zeros((planes, n_in), ct)
        if not bad.size and idx.size:
            none = idx == -1
            gx = scatter_add(xp, gx, 1, compiled.where(xp, none, 0, idx), compiled.where(xp, none, 0, g))
    if len(bad):
        raise RuntimeError(f"Found an invalid max index: {int(bad[0])} (input volumes are of size "
                           f"{'x'.join(str(v) for v in in_sp)})")
    return gx.reshape(self.shape).astype(self.dtype, copy=False)


def _max_pool_backward_meta(xp: Any, grad_output: Array, self: Array, *args: Any) -> Any:
    return meta_array(self.dtype, self.shape)


@meta_kernel(_max_pool_backward_meta)
def max_pool2d_with_indices_backward(xp: Any, grad_output: Array, self: Array, kernel_size: Any, stride: Any,
                                     padding: Any, dilation: Any, ceil_mode: Any, indices: Array) -> Any:
    return _max_pool_backward(xp, grad_output, self, 2, kernel_size, stride, padding, dilation, ceil_mode, indices)


@meta_kernel(_max_pool_backward_meta)
def max_pool3d_with_indices_backward(xp: Any, grad_output: Array, self: Array, kernel_size: Any, stride: Any,
                                     padding: Any, dilation: Any, ceil_mode: Any, indices: Array) -> Any:
    return _max_pool_backward(xp, grad_output, self, 3, kernel_size, stride, padding, dilation, ceil_mode, indices)


# ------------------------------------------------------------------------------ avg_pool
# ``AveragePool2d.cpp`` / ``AveragePool3d.cpp``: each output is the sum of its window of the zero-padded input over
# a divisor — ``divisor_override``, else the window clipped to input + padding (``count_include_pad``) or to the
# input alone; a window wholly in the padding gives 0. The sum runs over kernel offsets: one strided slice of the
# padded input per offset, added into the output (the backward adds the scaled gradient back the same way).
def _avg_pool_args(self: Array, nd: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
                   divisor_override: Any) -> Any:
    kernel_size, stride, padding, _ = _window_lengths(f"avg_pool{nd}d", nd, "either " if nd == 2 else "",
                                                      kernel_size, stride, padding, 1)
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


def _window_lengths(name: str, nd: int, either: str, *window: Any) -> list[tuple[int, ...]]:
    """A pool's kernel_size, stride, padding and dilation as tuples, with PyTorch's error for a wrong length (one or
    ``nd`` values; stride may be empty); ``either`` is "either " where PyTorch's message has it."""
    kernel_size, stride, padding, dilation = ((v,) if isinstance(v, int) else tuple(v) for v in window)
    count = _NUMS[nd]
    if len(kernel_size) not in (1, nd):
        raise RuntimeError(f"{name}: kernel_size must {either}be a single int, or a tuple of {count} ints")
    if len(stride) not in (0, 1, nd):
        raise RuntimeError(f"{name}: stride must {either}be omitted, a single int, or a tuple of {count} ints")
    if len(padding) not in (1, nd):
        raise RuntimeError(f"{name}: padding must {either}be a single int, or a tuple of {count} ints")
    if len(dilation) not in (1, nd):
        raise RuntimeError(f"{name}: dilation must be either a single int, or a tuple of {count} ints")
    return [kernel_size, stride, padding, dilation]


def _check_sizes(t: Array, want: tuple[int, ...], first: int) -> None:
    """PyTorch's check of a pool backward's gradient (and indices): t has want's dims, and want's sizes from dim
    ``first`` on."""
    for ax in range(first, len(want)):
        if t.ndim != len(want) or t.shape[ax] != want[ax]:
            raise RuntimeError(f"Expected a tensor of dimension {len(want)} and tensor.size[{ax}] == {want[ax]} but "
                               f"got: dimension {t.ndim} and tensor.size[{ax}] = {t.shape[ax] if ax < t.ndim else 1}")


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
    return meta_array(self.dtype, self.shape[:-nd] + out_sp)


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
        out = compiled.where(xp, div != 0, out / div, 0)
    if ct != self.dtype and self.dtype.kind in "iu":
        out = xp.trunc(out)
    return out.astype(self.dtype, copy=False)


def _avg_pool_backward(xp: Any, grad_output: Array, self: Array, nd: Any, kernel_size: Any, stride: Any,
                       padding: Any, ceil_mode: Any, count_include_pad: Any, divisor_override: Any) -> Any:
    k, s, p, out_sp = _avg_pool_args(self, nd, kernel_size, stride, padding, ceil_mode, divisor_override)
    in_sp = self.shape[-nd:]
    lead = self.shape[:-nd]
    _check_sizes(grad_output, lead + out_sp, self.ndim - nd - 1)
    ct = compute_dtype(self.dtype)
    right = tuple(max(0, (o - 1) * ss + kk - i - pp) for o, ss, kk, i, pp in zip(out_sp, s, k, in_sp, p))
    div = _avg_pool_divisor(xp, in_sp, out_sp, k, s, p, count_include_pad, divisor_override, ct)
    with np.errstate(all="ignore"):
        g = compiled.where(xp, div != 0, asdtype(xp, grad_output, ct) / div, 0)
    gi = xp.zeros(lead + tuple(i + pp + rr for i, pp, rr in zip(in_sp, p, right)), ct)
    for offset in np.ndindex(*k):
        gi[(Ellipsis,) + _window_slices(out_sp, s, offset)] += g
    gi = gi[(Ellipsis,) + tuple(slice(pp, pp + i) for pp, i in zip(p, in_sp))]
    return xp.ascontiguousarray(gi).astype(self.dtype, copy=False)


def _avg_pool_backward_meta(xp: Any, grad_output: Array, self: Array, *args: Any) -> Any:
    return meta_array(self.dtype, self.shape)


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
        x = compiled.where(xp, m, g, 0).sum(axis=axis + 1)
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
            acc = acc + _scatter_rows(xp, compiled.where(xp, keep, gm, 0), idx[:, j], in_sp[k])
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
            arg = compiled.where(xp, nan.any(axis=-1), last, arg)
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
        v = meta_array(self.dtype, self.shape[:-nd] + tuple(out))
        return v if avg else (v, meta_array(np.int64, v.shape))
    return meta


@meta_kernel(_adaptive_meta(2, True, "adaptive_avg_pool2d"))
def _adaptive_avg_pool2d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_avg(xp, self, output_size, 2, "adaptive_avg_pool2d")


@meta_kernel(_adaptive_meta(3, True, "adaptive_avg_pool3d"))
def _adaptive_avg_pool3d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_avg(xp, self, output_size, 3, "adaptive_avg_pool3d")


@meta_kernel(lambda xp, grad_output, self: meta_array(self.dtype, self.shape))
def _adaptive_avg_pool2d_backward(xp: Any, grad_output: Array, self: Array) -> Any:
    return _adaptive_avg_backward(xp, grad_output, self, 2, "adaptive_avg_pool2d")


@meta_kernel(lambda xp, grad_output, self: meta_array(self.dtype, self.shape))
def _adaptive_avg_pool3d_backward(xp: Any, grad_output: Array, self: Array) -> Any:
    return _adaptive_avg_backward(xp, grad_output, self, 3, "adaptive_avg_pool3d")


@meta_kernel(_adaptive_meta(2, False, "adaptive_max_pool2d"))
def adaptive_max_pool2d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_max(xp, self, output_size, 2, "adaptive_max_pool2d")


@meta_kernel(_adaptive_meta(3, False, "adaptive_max_pool3d"))
def adaptive_max_pool3d(xp: Any, self: Array, output_size: Any) -> Any:
    return _adaptive_max(xp, self, output_size, 3, "adaptive_max_pool3d")




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
