"""Array kernels of torchvision's operators: ``(xp, arrays, Python scalars) -> arrays``.

The per-box geometry (where each roi's bins start, their sizes, the sampling grid) is computed here with array
operations in the input's dtype, as torchvision computes it in ``T``; the loops over bins, channels and sampling
points run in ``_loops`` (compiled by numba; Note [torchvision's arithmetic]). Deformable convolution is written
with array operations only: a bilinear "im2col" of the offset sampling points followed by one GEMM per group, and
its backward the transposed steps. On CUDA (CuPy arrays) the loop-based operators copy their inputs to the host,
run the same loops and copy the results back.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.backends import compiled_loops_enabled


def _loop(name: str) -> Any:
    """The compiled loop ``name``, or the same function run as Python when compiled kernels are off."""
    from ember.extensions.torchvision import _loops
    fn = getattr(_loops, name)
    if compiled_loops_enabled():
        return fn
    return getattr(fn, "py_func", fn)


def _host(xp: Any, a: Any) -> Any:
    return a if xp is np else xp.asnumpy(a)


def _device(xp: Any, a: Any) -> Any:
    return a if xp is np else xp.asarray(a)


def _round_half_away(v: Any) -> Any:
    """C's ``round``: halves away from zero (NumPy's ``round`` goes to the even neighbour)."""
    return np.sign(v) * np.floor(np.abs(v) + v.dtype.type(0.5))


# ------------------------------------------------------------------------------------------------------ nms
def nms(xp: Any, dets: Any, scores: Any, iou_threshold: float) -> Any:
    """Indices of the boxes kept by greedy non-maximum suppression, by decreasing score (int64)."""
    dets, scores = _host(xp, dets), _host(xp, scores)
    if dets.size == 0:
        return _device(xp, np.empty((0,), np.int64))
    x1, y1, x2, y2 = (np.ascontiguousarray(dets[:, i]) for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    order = _descending_order(scores)
    keep = np.empty(dets.shape[0], np.int64)
    n = _loop("nms")(x1, y1, x2, y2, areas, order, float(iou_threshold), keep)
    return _device(xp, keep[:n].copy())


def qnms(xp: Any, dets: Any, scores: Any, iou_threshold: float) -> Any:
    """``nms`` on the integer representations of quantized boxes and scores (areas in float32: the scale cancels)."""
    dets = _host(xp, dets).astype(np.int64)
    x1, y1, x2, y2 = (np.ascontiguousarray(dets[:, i]).astype(np.float32) for i in range(4))
    areas = ((dets[:, 2] - dets[:, 0]) * (dets[:, 3] - dets[:, 1])).astype(np.float32)
    order = _descending_order(_host(xp, scores).astype(np.int64))
    keep = np.empty(dets.shape[0], np.int64)
    n = _loop("nms")(x1, y1, x2, y2, areas, order, float(iou_threshold), keep)
    return _device(xp, keep[:n].copy())


def _descending_order(scores: Any) -> Any:
    """``scores.sort(descending=True)``'s indices: stable among equal scores, NaN first."""
    key = -scores.astype(np.float64) if scores.dtype.kind in "iu" else -scores
    if key.dtype.kind == "f":
        key = np.where(np.isnan(key), -np.inf, key)
    return np.argsort(key, kind="stable")


# -------------------------------------------------------------------------------------------- roi geometry
def _roi_batch(rois: Any) -> Any:
    return rois[:, 0].astype(np.int64)        # C's (int) conversion truncates


def _align_geometry(rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int, sampling_ratio: int,
                    offset: float, clamp: bool) -> tuple[Any, ...]:
    """Per roi: batch index, bin origin (h, w), bin size (h, w) and sampling grid (h, w), as RoIAlign computes them
    in the rois' dtype. ``offset`` is subtracted from the scaled corners; ``clamp`` forces rois to at least 1x1."""
    t = rois.dtype.type
    scale, off = t(spatial_scale), t(offset)
    start_w, start_h = rois[:, 1] * scale - off, rois[:, 2] * scale - off
    end_w, end_h = rois[:, 3] * scale - off, rois[:, 4] * scale - off
    roi_w, roi_h = end_w - start_w, end_h - start_h
    if clamp:
        roi_w, roi_h = np.maximum(roi_w, t(1)), np.maximum(roi_h, t(1))
    bin_h, bin_w = roi_h / t(pooled_h), roi_w / t(pooled_w)
    n = rois.shape[0]
    if sampling_ratio > 0:
        grid_h = grid_w = np.full(n, sampling_ratio, np.int64)
    else:
        with np.errstate(invalid="ignore"):
            grid_h = np.ceil(roi_h / t(pooled_h)).astype(np.int64)
            grid_w = np.ceil(roi_w / t(pooled_w)).astype(np.int64)
    return (_roi_batch(rois), np.ascontiguousarray(start_h), np.ascontiguousarray(start_w), np.ascontiguousarray(bin_h),
            np.ascontiguousarray(bin_w), grid_h, grid_w)


def _pool_geometry(rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int, plus_one: int) -> tuple[Any, ...]:
    """Per roi: batch index, rounded start (h, w) and bin size (h, w), as RoIPool (``plus_one=1``) and PSRoIPool
    (``plus_one=0``) compute them."""
    t = rois.dtype.type
    scale = t(spatial_scale)
    corners = _round_half_away(rois[:, 1:5] * scale).astype(np.int64)
    start_w, start_h, end_w, end_h = (np.ascontiguousarray(corners[:, i]) for i in range(4))
    roi_w = np.maximum(end_w - start_w + plus_one, 1)
    roi_h = np.maximum(end_h - start_h + plus_one, 1)
    return (_roi_batch(rois), start_h, start_w, roi_h.astype(rois.dtype) / t(pooled_h),
            roi_w.astype(rois.dtype) / t(pooled_w))


def _planes(a: Any) -> Any:
    n, c, h, w = a.shape
    return a.reshape(n * c, h * w)


# --------------------------------------------------------------------------------------------- roi_align
def roi_align(xp: Any, inp: Any, rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int,
              sampling_ratio: int, aligned: bool) -> Any:
    inp, rois = np.ascontiguousarray(_host(xp, inp)), np.ascontiguousarray(_host(xp, rois))
    n, c, h, w = inp.shape
    out = np.zeros((rois.shape[0], c, pooled_h, pooled_w), inp.dtype)
    if out.size:
        geo = _align_geometry(rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, 0.5 if aligned else 0.0,
                              not aligned)
        _loop("roi_align_forward")(_planes(inp), h, w, *geo, out)
    return _device(xp, out)


def roi_align_backward(xp: Any, grad: Any, rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int,
                       batch_size: int, channels: int, height: int, width: int, sampling_ratio: int,
                       aligned: bool) -> Any:
    grad, rois = np.ascontiguousarray(_host(xp, grad)), np.ascontiguousarray(_host(xp, rois))
    grad_input = np.zeros((batch_size, channels, height, width), grad.dtype)
    if grad.size:
        geo = _align_geometry(rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, 0.5 if aligned else 0.0,
                              not aligned)
        _loop("roi_align_backward")(grad, *geo, _planes(grad_input), height, width)
    return _device(xp, grad_input)


def qroi_align(xp: Any, inp: Any, rois: Any, input_scale: float, input_zero_point: int, rois_scale: float,
               rois_zero_point: int, spatial_scale: float, pooled_h: int, pooled_w: int, sampling_ratio: int,
               aligned: bool) -> Any:
    """RoIAlign of a quantized input given as its integers (and quantized rois): computed on the dequantized
    values, the result requantized with the input's scale and zero point into the input's integer type."""
    inp, rois = _host(xp, inp), _host(xp, rois)
    x = ((inp.astype(np.float32) - np.float32(input_zero_point)) * np.float32(input_scale))
    r = ((rois.astype(np.float32) - np.float32(rois_zero_point)) * np.float32(rois_scale))
    out = roi_align(np, x, r, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
    info = np.iinfo(inp.dtype)
    q = np.rint(out * np.float32(1.0 / np.float32(input_scale))) + input_zero_point
    return _device(xp, np.clip(q, info.min, info.max).astype(inp.dtype))


def ps_roi_align(xp: Any, inp: Any, rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int,
                 sampling_ratio: int) -> tuple[Any, Any]:
    inp, rois = np.ascontiguousarray(_host(xp, inp)), np.ascontiguousarray(_host(xp, rois))
    n, c, h, w = inp.shape
    c_out = c // (pooled_h * pooled_w)
    out = np.zeros((rois.shape[0], c_out, pooled_h, pooled_w), inp.dtype)
    mapping = np.zeros(out.shape, np.int32)
    if out.size:
        geo = _align_geometry(rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, 0.5, False)
        _loop("ps_roi_align_forward")(_planes(inp), c, h, w, *geo, out, mapping)
    return _device(xp, out), _device(xp, mapping)


def ps_roi_align_backward(xp: Any, grad: Any, rois: Any, mapping: Any, spatial_scale: float, pooled_h: int,
                          pooled_w: int, sampling_ratio: int, batch_size: int, channels: int, height: int,
                          width: int) -> Any:
    grad, rois = np.ascontiguousarray(_host(xp, grad)), np.ascontiguousarray(_host(xp, rois))
    mapping = np.ascontiguousarray(_host(xp, mapping)).astype(np.int64)
    grad_input = np.zeros((batch_size, channels, height, width), grad.dtype)
    if grad.size:
        geo = _align_geometry(rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, 0.5, False)
        _loop("ps_roi_align_backward")(grad, mapping, *geo, _planes(grad_input), channels, height, width)
    return _device(xp, grad_input)


# ---------------------------------------------------------------------------------------------- roi_pool
def roi_pool(xp: Any, inp: Any, rois: Any, spatial_scale: float, pooled_h: int, pooled_w: int) -> tuple[Any, Any]:
    inp, rois = np.ascontiguousarray(_host(xp, inp)), np.ascontiguousarray(_host(xp, rois))
    out = np.zeros((rois.shape[0], inp.shape[1], pooled_h, pooled_w), inp.dtype)
    argmax = np.zeros(out.shape, np.int32)
    if out.size:
        _loop("roi_pool_forward")(inp, *_pool_geometry(rois, spatial_scale, pooled_h, pooled_w, 1), out, argmax)
    return _device(xp, out), _device(xp, argmax)


def roi_pool_backward(xp: Any, grad: Any, rois: Any, argmax: Any, spatial_scale: float, pooled_h: int,
                      pooled_w: int, batch_size: int, channels: int, height: int, width: int) -> Any:
    grad, rois = np.ascontiguousarray(_host(xp, grad)), np.ascontiguousarray(_host(xp, rois))
    grad_input = np.zeros((batch_size, channels, height, width), grad.dtype)
    if grad.size:
        argmax = np.ascontiguousarray(_host(xp, argmax)).astype(np.int64)
        _loop("roi_pool_backward")(grad, argmax, _roi_batch(rois), _planes(grad_input))
    return _device(xp, grad_input)


def ps_roi_pool(xp: Any, inp: Any, rois: Any, spatial_scale: float, pooled_h: int,
                pooled_w: int) -> tuple[Any, Any]:
    inp, rois = np.ascontiguousarray(_host(xp, inp)), np.ascontiguousarray(_host(xp, rois))
    c_out = inp.shape[1] // (pooled_h * pooled_w)
    out = np.zeros((rois.shape[0], c_out, pooled_h, pooled_w), inp.dtype)
    mapping = np.zeros(out.shape, np.int32)
    if out.size:
        _loop("ps_roi_pool_forward")(inp, *_pool_geometry(rois, spatial_scale, pooled_h, pooled_w, 0), out, mapping)
    return _device(xp, out), _device(xp, mapping)


def ps_roi_pool_backward(xp: Any, grad: Any, rois: Any, mapping: Any, spatial_scale: float, pooled_h: int,
                         pooled_w: int, batch_size: int, channels: int, height: int, width: int) -> Any:
    grad, rois = np.ascontiguousarray(_host(xp, grad)), np.ascontiguousarray(_host(xp, rois))
    grad_input = np.zeros((batch_size, channels, height, width), grad.dtype)
    if grad.size:
        mapping = np.ascontiguousarray(_host(xp, mapping)).astype(np.int64)
        _loop("ps_roi_pool_backward")(grad, mapping, *_pool_geometry(rois, spatial_scale, pooled_h, pooled_w, 0),
                                      grad_input)
    return _device(xp, grad_input)


# -------------------------------------------------------------------------------------- box_iou_rotated
def box_iou_rotated(xp: Any, boxes1: Any, boxes2: Any) -> Any:
    """IoU of every pair of rotated boxes ``(cx, cy, w, h, angle in degrees)``, float32 (N, M)."""
    b1, b2 = np.ascontiguousarray(_host(xp, boxes1)), np.ascontiguousarray(_host(xp, boxes2))
    out = np.empty((b1.shape[0], b2.shape[0]), np.float32)
    if out.size:
        _loop("box_iou_rotated")(b1, b2, out)
    return _device(xp, out)


# ---------------------------------------------------------------------------------------- deform_conv2d
def out_size(size: int, pad: int, dilation: int, k: int, stride: int) -> int:
    return (size + 2 * pad - (dilation * (k - 1) + 1)) // stride + 1


def _sample_points(xp: Any, offset: Any, kh: int, kw: int, out_h: int, out_w: int, stride: tuple[int, int],
                   pad: tuple[int, int], dilation: tuple[int, int]) -> tuple[Any, Any]:
    """Where each kernel tap of each output pixel reads: y, x of shape (B, G, kh*kw, out_h, out_w)."""
    t = offset.dtype.type
    b, og = offset.shape[0], offset.shape[1] // (2 * kh * kw)
    off = offset.reshape(b, og, kh * kw, 2, out_h, out_w)
    i, j = xp.divmod(xp.arange(kh * kw), kw)
    base_y = (xp.arange(out_h)[None, :, None] * stride[0] - pad[0]) + i[:, None, None] * dilation[0]
    base_x = (xp.arange(out_w)[None, None, :] * stride[1] - pad[1]) + j[:, None, None] * dilation[1]
    return base_y.astype(t) + off[:, :, :, 0], base_x.astype(t) + off[:, :, :, 1]


def _corners(xp: Any, y: Any, x: Any, height: int, width: int) -> tuple[Any, ...]:
    """Bilinear corners of sampling points: (flat index, weight, valid) for the four neighbours; a point at or
    beyond one pixel outside the map reads nothing (deformable convolution's bilinear_interpolate)."""
    t = y.dtype.type
    inside = ~((y <= -1) | (y >= height) | (x <= -1) | (x >= width))
    y0, x0 = xp.floor(y), xp.floor(x)
    ly, lx = y - y0, x - x0
    hy, hx = t(1) - ly, t(1) - lx
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    out = []
    for dy, dx, wgt in ((0, 0, hy * hx), (0, 1, hy * lx), (1, 0, ly * hx), (1, 1, ly * lx)):
        yy, xx = y0 + dy, x0 + dx
        valid = inside & (yy >= 0) & (yy <= height - 1) & (xx >= 0) & (xx <= width - 1)
        out.append((xp.where(valid, yy * width + xx, 0), wgt, valid))
    return tuple(out)


def _bilinear(xp: Any, planes: Any, corners: Any) -> Any:
    """Interpolated values: ``planes`` (B, G, Cg, H*W) read at the corners' points (B, G, K, oh, ow) ->
    (B, G, Cg, K, oh, ow)."""
    b, g, cg, hw = planes.shape
    val = None
    for idx, wgt, valid in corners:
        flat = idx.reshape(b, g, 1, -1)
        v = xp.take_along_axis(planes, xp.broadcast_to(flat, (b, g, cg, flat.shape[-1])), axis=3)
        v = v.reshape((b, g, cg) + idx.shape[2:]) * xp.where(valid, wgt, 0)[:, :, None]
        val = v if val is None else val + v
    return val


def _columns(xp: Any, inp: Any, offset: Any, mask: Any, kh: int, kw: int, out_h: int, out_w: int, stride: Any,
             pad: Any, dilation: Any, use_mask: bool) -> Any:
    """The deformable im2col: (B, C, kh*kw, out_h, out_w) -- each input channel read at its offset group's points,
    times the mask."""
    b, c, h, w = inp.shape
    og = offset.shape[1] // (2 * kh * kw)
    y, x = _sample_points(xp, offset, kh, kw, out_h, out_w, stride, pad, dilation)
    cols = _bilinear(xp, inp.reshape(b, og, c // og, h * w), _corners(xp, y, x, h, w))
    if use_mask:
        cols = cols * mask.reshape(b, og, 1, kh * kw, out_h, out_w)
    return cols.reshape(b, c, kh * kw, out_h, out_w)


def deform_conv2d(xp: Any, inp: Any, weight: Any, offset: Any, mask: Any, bias: Any, stride_h: int, stride_w: int,
                  pad_h: int, pad_w: int, dil_h: int, dil_w: int, groups: int, offset_groups: int,
                  use_mask: bool) -> Any:
    b, c, h, w = inp.shape
    out_c, _, kh, kw = weight.shape
    out_h, out_w = out_size(h, pad_h, dil_h, kh, stride_h), out_size(w, pad_w, dil_w, kw, stride_w)
    out = xp.zeros((b, out_c, out_h, out_w), inp.dtype)
    if b == 0:
        return out
    wg = weight.reshape(groups, out_c // groups, -1)
    for start in range(0, b, _images_per_chunk(c, kh * kw, out_h * out_w)):
        sl = slice(start, start + _images_per_chunk(c, kh * kw, out_h * out_w))
        cols = _columns(xp, inp[sl], offset[sl], mask[sl] if use_mask else None, kh, kw, out_h, out_w,
                        (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w), use_mask)
        nb = cols.shape[0]
        cols = cols.reshape(nb, groups, (c // groups) * kh * kw, out_h * out_w)
        res = xp.matmul(wg[None], cols)                   # (nb, groups, out_c / groups, oh*ow)
        out[sl] = res.reshape(nb, out_c, out_h, out_w)
    return out + bias.reshape(1, out_c, 1, 1)


def _images_per_chunk(c: int, k: int, pixels: int) -> int:
    """Images whose columns fit in about 64 MB of gathered values at once."""
    return max(1, (64 << 20) // max(1, 16 * c * k * pixels))


def deform_conv2d_backward(xp: Any, grad: Any, inp: Any, weight: Any, offset: Any, mask: Any, bias: Any,
                           stride_h: int, stride_w: int, pad_h: int, pad_w: int, dil_h: int, dil_w: int, groups: int,
                           offset_groups: int, use_mask: bool) -> tuple[Any, Any, Any, Any, Any]:
    """Gradients for input, weight, offset, mask and bias (torchvision's: the mask's is zero without ``use_mask``,
    the bias's is the output gradient summed over batch and pixels)."""
    t = inp.dtype.type
    b, c, h, w = inp.shape
    out_c, _, kh, kw = weight.shape
    k = kh * kw
    out_h, out_w = grad.shape[2], grad.shape[3]
    grad_input, grad_offset = xp.zeros_like(inp), xp.zeros_like(offset)
    grad_mask, grad_weight = xp.zeros_like(mask), xp.zeros_like(weight)
    grad_bias = xp.ones_like(bias) * grad.sum(axis=(0, 2, 3))
    if b == 0:
        return grad_input, grad_weight, grad_offset, grad_mask, grad_bias
    og = offset.shape[1] // (2 * k)
    cg = c // og
    wg = weight.reshape(groups, out_c // groups, -1)
    step = _images_per_chunk(c, k, out_h * out_w)
    for start in range(0, b, step):
        sl = slice(start, start + step)
        x_, off_, g_ = inp[sl], offset[sl], grad[sl]
        m_ = mask[sl] if use_mask else None
        nb = x_.shape[0]
        g2 = g_.reshape(nb, groups, out_c // groups, out_h * out_w)
        # columns of the output gradient: (nb, C, K, oh, ow)
        gcols = xp.matmul(xp.swapaxes(wg, 1, 2)[None], g2).reshape(nb, og, cg, k, out_h, out_w)
        y, xx = _sample_points(xp, off_, kh, kw, out_h, out_w, (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w))
        mval = m_.reshape(nb, og, k, out_h, out_w) if use_mask else None
        corners = _corners(xp, y, xx, h, w)
        # input: scatter each column value, times mask and bilinear weight, to the four neighbours
        gi = xp.zeros((nb, og, cg, h * w), inp.dtype)
        scale = gcols * mval[:, :, None] if use_mask else gcols
        for idx, wgt, valid in _scatter_corners(xp, y, xx, h, w):
            contrib = scale * xp.where(valid, wgt, 0)[:, :, None]
            flat = xp.broadcast_to(idx[:, :, None], contrib.shape).reshape(nb, og, cg, -1)
            _add_at(xp, gi, flat, contrib.reshape(nb, og, cg, -1))
        grad_input[sl] = gi.reshape(nb, c, h, w)
        # offsets: the derivative of the bilinear read along y and x, summed over the group's channels
        planes = x_.reshape(nb, og, cg, h * w)
        dy, dx = _coordinate_weights(xp, planes, y, xx, h, w)
        mscale = mval[:, :, None] if use_mask else t(1)
        gy = (mscale * dy * gcols).sum(axis=2)
        gx = (mscale * dx * gcols).sum(axis=2)
        goff = xp.stack([gy, gx], axis=3)               # (nb, og, K, 2, oh, ow)
        grad_offset[sl] = goff.reshape(nb, og * 2 * k, out_h, out_w)
        if use_mask:
            vals = _bilinear(xp, planes, corners)
            grad_mask[sl] = (gcols * vals).sum(axis=2).reshape(nb, og * k, out_h, out_w)
        # weight: output gradient times the (masked) columns
        cols = _columns(xp, x_, off_, m_, kh, kw, out_h, out_w, (stride_h, stride_w), (pad_h, pad_w),
                        (dil_h, dil_w), use_mask).reshape(nb, groups, (c // groups) * k, out_h * out_w)
        gw = xp.matmul(g2, xp.swapaxes(cols, 2, 3)).sum(axis=0)
        grad_weight += gw.reshape(weight.shape)
    return grad_input, grad_weight, grad_offset, grad_mask, grad_bias


def _scatter_corners(xp: Any, y: Any, x: Any, height: int, width: int) -> tuple[Any, ...]:
    """The pixels a sampling point's gradient reaches (deformable col2im): those within one pixel of it, weighted
    ``(1 - |y - yp|) * (1 - |x - xp|)`` -- no cut-off at the map's border beyond the pixel being inside."""
    t = y.dtype.type
    y0, x0 = xp.floor(y), xp.floor(x)
    out = []
    for dy in (0, 1):
        for dx in (0, 1):
            yp, xpix = y0 + dy, x0 + dx
            wy, wx = t(1) - xp.abs(y - yp), t(1) - xp.abs(x - xpix)
            yi, xi = yp.astype(np.int64), xpix.astype(np.int64)
            valid = (yi >= 0) & (yi < height) & (xi >= 0) & (xi < width) & (wy > 0) & (wx > 0)
            out.append((xp.where(valid, yi * width + xi, 0), wy * wx, valid))
    return tuple(out)


def _coordinate_weights(xp: Any, planes: Any, y: Any, x: Any, height: int, width: int) -> tuple[Any, Any]:
    """d(bilinear read)/dy and /dx at each point for every channel (get_coordinate_weight: neighbours outside the
    map read 0, and no cut-off for points far outside)."""
    t = y.dtype.type
    b, g, cg, hw = planes.shape
    y0, x0 = xp.floor(y), xp.floor(x)
    fy, fx = y - y0, x - x0
    yi, xi = y0.astype(np.int64), x0.astype(np.int64)

    def read(yy: Any, xx: Any) -> Any:
        valid = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        flat = xp.where(valid, yy * width + xx, 0).reshape(b, g, 1, -1)
        v = xp.take_along_axis(planes, xp.broadcast_to(flat, (b, g, cg, flat.shape[-1])), axis=3)
        return v.reshape((b, g, cg) + yy.shape[2:]) * valid[:, :, None]

    v_yx, v_yX, v_Yx, v_YX = read(yi, xi), read(yi, xi + 1), read(yi + 1, xi), read(yi + 1, xi + 1)
    fx_, fy_ = fx[:, :, None], fy[:, :, None]
    d_y = fx_ * (v_YX - v_yX) + (t(1) - fx_) * (v_Yx - v_yx)
    d_x = fy_ * (v_YX - v_Yx) + (t(1) - fy_) * (v_yX - v_yx)
    return d_y, d_x


def _add_at(xp: Any, target: Any, index: Any, values: Any) -> None:
    """``target[..., index] += values`` along the last axis, duplicates accumulated."""
    b, g, cg, n = target.shape
    rows = (xp.arange(b * g * cg) * n).reshape(b, g, cg, 1)
    flat = (index + rows).ravel()
    acc = xp.bincount(flat, weights=values.ravel().astype(np.float64), minlength=target.size) if xp is np else None
    if acc is not None:
        target += acc.reshape(target.shape).astype(target.dtype)
    else:
        xp.add.at(target.reshape(-1), flat, values.ravel())


def cuda_version() -> int:
    """torchvision's ``_cuda_version``: -1, no CUDA build of its kernels (ember's CUDA path is CuPy's)."""
    return -1

