"""Kernels of convolution and its backward, im2col / col2im
(``aten/src/ATen/native/{Convolution,Im2Col,Col2Im}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import conv_algos
from ember.aten.kernels._common import Array, compute_dtype, meta_array, meta_kernel, shape_str, type_name
from ember.aten.kernels.conv_algos import _windows
from ember.c10.dtype import BF16_NP

__all__ = ["convolution", "convolution_backward", "im2col", "col2im"]

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
    return meta_array(self.dtype, lead + (self.shape[-3] * k[0] * k[1], blocks[0] * blocks[1]))


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
    return meta_array(self.dtype, self.shape[:-2] + (self.shape[-2] // (k[0] * k[1]),) + o)


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
