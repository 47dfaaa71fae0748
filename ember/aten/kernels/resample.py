"""Resampling with a filter, one spatial dim at a time (``UpSampleKernel.cpp``'s separable path, after PIL's
``Resample.c``): antialiased bilinear, bicubic and Lanczos interpolation, and uint8 bilinear / bicubic
interpolation with or without antialiasing.

Note [Filtered resampling]
Output pixel ``i`` of a dim is a weighted sum of the input pixels ``xmin[i] .. xmin[i] + xsize[i] - 1``: the filter
(triangle for bilinear, Keys' cubic for bicubic, Lanczos-3) evaluated at each input pixel's distance from the output
pixel's centre ``scale * (i + 0.5)``, widened by ``scale`` when downsampling (that is the antialiasing), and
normalised to sum to 1. Floating inputs are computed in their own precision, in PyTorch's order: the weights and
window bounds as PyTorch's ``scalar_t`` arithmetic gives them (``center`` is a ``scalar_t`` product of a double,
``xmin`` a truncation of a double sum), then the sum over the window from its first pixel on; the width first, then
the height, a dim of unchanged size skipped. uint8 inputs follow PIL's integer arithmetic: double weights turned into
int16 with the most bits of precision that keep them below 2^15, a 32-bit sum started at half a unit, shifted back
and clamped to 0..255 -- after the width pass too, which is why uint8 results differ from rounding a float resize.
Without antialiasing the uint8 path uses the plain support for bilinear (one pixel each side; with ``align_corners``,
half-pixel-shifted centres), and for bicubic the float kernel's four taps (Keys' ``A = -0.75``) with the taps past
the border folded onto the border pixel, as the float kernel's clamped reads do.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import Array, shape_str

__all__ = ["_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa_backward", "_upsample_bicubic2d_aa",
           "_upsample_bicubic2d_aa_backward", "_upsample_lanczos2d_aa", "_upsample_lanczos2d_aa_backward",
           "resample_uint8"]

_INTERP_SIZE = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _filter(kind: str, x: Array, t: Any, antialias: bool) -> Array:
    """The filter at ``x`` (an array of type ``t``), computed in ``t`` as PyTorch's ``aa_filter<scalar_t>``."""
    ax = np.abs(x)
    if kind == "bilinear":
        return np.where(ax < 1.0, (1.0 - ax.astype(np.float64)).astype(t), t(0))
    if kind == "bicubic":
        a = t(-0.5 if antialias else -0.75)
        c1 = ((a + t(2)) * ax - (a + t(3))) * ax * ax + t(1)
        c2 = ((a * ax - t(5) * a) * ax + t(8) * a) * ax - t(4) * a
        return np.where(ax < 1.0, c1, np.where(ax < 2.0, c2, t(0))).astype(t)
    xd = x.astype(np.float64)     # lanczos: sinc(x) * sinc(x / 3) inside (-3, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        px = np.pi * xd
        s1 = np.where(xd == 0, 1.0, np.sin(px) / px)
        s3 = np.where(xd == 0, 1.0, np.sin(px / 3.0) / (px / 3.0))
    return np.where((xd >= -3.0) & (xd < 3.0), s1 * s3, 0.0).astype(t)


def _scale(in_size: int, out_size: int, align_corners: bool, opt_scale: Any, t: Any) -> Any:
    """``area_pixel_compute_scale<scalar_t>``."""
    if align_corners:
        return t(in_size - 1) / t(out_size - 1) if out_size > 1 else t(0)
    if opt_scale is not None and opt_scale > 0:
        return t(1.0 / opt_scale)
    return t(in_size) / t(out_size)


def window_weights(kind: str, in_size: int, out_size: int, align_corners: bool, opt_scale: Any, antialias: bool,
                   t: Any) -> tuple[Array, Array, Array]:
    """Per output pixel: the first input pixel, the window size and the normalised weights (``out_size`` x the
    widest window, zeros past each window), in type ``t`` (Note [Filtered resampling])."""
    scale = _scale(in_size, out_size, align_corners, opt_scale, t)
    delta = 0.5 if align_corners and not antialias else 0.0
    interp = _INTERP_SIZE[kind]
    if antialias:
        support = t(interp * 0.5) * scale if scale >= 1.0 else t(interp * 0.5)
        width = int(np.ceil(support)) * 2 + 1
    else:
        support, width = t(interp * 0.5), interp
    invscale = t(1.0 / float(scale)) if (scale >= 1.0 and antialias) else t(1.0)
    i = np.arange(out_size, dtype=np.float64)
    center = (float(scale) * (i + 0.5 - delta)).astype(t)
    xmin = np.maximum(((center - support).astype(np.float64) + 0.5 + delta).astype(np.int64), 0)
    xend = np.minimum(((center + support).astype(np.float64) + 0.5 + delta).astype(np.int64), in_size)
    xsize = np.clip(xend - xmin, 0, width)
    j = np.arange(width)
    arg = ((((j[None, :] + xmin[:, None]).astype(t) - center[:, None]).astype(np.float64) + 0.5 - delta)
           * float(invscale)).astype(t)
    w = np.where(j[None, :] < xsize[:, None], _filter(kind, arg, t, antialias), t(0))
    total = np.zeros(out_size, t)
    for k in range(width):                        # PyTorch's running sum, in t
        total = total + w[:, k]
    w = np.where(total[:, None] != 0, w / np.where(total == 0, t(1), total)[:, None], w).astype(t)
    return xmin, xsize, w


def cubic_windows(in_size: int, out_size: int, align_corners: bool, opt_scale: Any) -> tuple[Array, Array, Array]:
    """The non-antialiased bicubic taps of the uint8 path, as windows: four Keys (A = -0.75) weights at the source
    index's neighbours, indices past the border clamped and their weights added to the border pixel."""
    scale = float(_scale(in_size, out_size, align_corners, opt_scale, np.float64))
    i = np.arange(out_size, dtype=np.float64)
    src = scale * i if align_corners else scale * (i + 0.5) - 0.5
    idx = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    t = np.clip(src - idx, 0.0, 1.0)
    a = -0.75

    def c1(x: Array) -> Array:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x: Array) -> Array:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    taps = np.stack([c2(t + 1), c1(t), c1(1 - t), c2(2 - t)], 1)
    pos = np.clip(idx[:, None] - 1 + np.arange(4)[None, :], 0, in_size - 1)
    xmin = pos[:, 0]
    xsize = pos[:, 3] - xmin + 1
    w = np.zeros((out_size, 4))
    np.add.at(w, (np.arange(out_size)[:, None].repeat(4, 1), pos - xmin[:, None]), taps)
    return xmin, xsize, w


def _resample_dim_float(xp: Any, x: Array, axis: int, xmin: Array, xsize: Array, w: Array) -> Array:
    """One dim of the float path: the weighted window sums, accumulated from each window's first pixel."""
    in_size = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = len(xmin)
    out = None
    for k in range(w.shape[1]):
        idx = xp.asarray(np.minimum(xmin + k, in_size - 1))
        term = xp.take(x, idx, axis=axis) * xp.asarray(w[:, k].reshape(shape))
        if out is None:
            out = term
        else:
            out = compiled.where(xp, xp.asarray((k < xsize).reshape(shape)), out + term, out)
    return out


def _weight_matrix(in_size: int, xmin: Array, xsize: Array, w: Array) -> Array:
    """The dense (out, in) matrix of one dim's weights (for the backward)."""
    m = np.zeros((len(xmin), in_size), w.dtype)
    for k in range(w.shape[1]):
        rows = np.nonzero(k < xsize)[0]
        m[rows, xmin[rows] + k] += w[rows, k]
    return m


def _check_4d(name: str, shape: Any, output_size: Any) -> tuple[int, int]:
    output_size = tuple(output_size)
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    if len(shape) != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {len(shape)}")
    if min(tuple(shape[2:]) + output_size) <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: {shape[2]}, W: "
                           f"{shape[3]}) output (H: {output_size[0]}, W: {output_size[1]})")
    return int(output_size[0]), int(output_size[1])


def _aa_forward(kind: str, xp: Any, self: Array, output_size: Any, align_corners: bool, scales_h: Any,
                scales_w: Any) -> Array:
    oh, ow = _check_4d(f"_upsample_{kind}2d_aa", self.shape, output_size)
    if self.shape[1] == 0:
        raise RuntimeError(f"Non-empty 4D data tensor expected but got a tensor with sizes {shape_str(self.shape)}")
    if self.dtype == np.uint8:
        return resample_uint8(xp, self, (oh, ow), align_corners, (scales_h, scales_w), kind, True)
    if self.dtype.kind != "f":
        raise NotImplementedError(f"\"_upsample_{kind}2d_aa\" not implemented for '{self.dtype.name}'")
    t = self.dtype.type if self.dtype in (np.float32, np.float64) else np.float32
    x = self.astype(t, copy=False)
    h, w_in = self.shape[2], self.shape[3]
    if ow != w_in:
        x = _resample_dim_float(xp, x, 3, *window_weights(kind, w_in, ow, align_corners, scales_w, True, t))
    if oh != h:
        x = _resample_dim_float(xp, x, 2, *window_weights(kind, h, oh, align_corners, scales_h, True, t))
    return xp.ascontiguousarray(x).astype(self.dtype, copy=False)


def _aa_backward(kind: str, xp: Any, grad_output: Array, output_size: Any, input_size: Any, align_corners: bool,
                 scales_h: Any, scales_w: Any) -> Array:
    oh, ow = _check_4d(f"_upsample_{kind}2d_aa_backward", tuple(input_size), output_size)
    n, c, h, w_in = input_size
    if tuple(grad_output.shape) != (n, c, oh, ow):
        for d, want in enumerate((n, c, oh, ow)):
            if grad_output.shape[d] != want:
                raise RuntimeError(f"Expected grad_output to have the same shape as output; output.size({d}) = "
                                   f"{want} but got grad_output.size({d}) = {grad_output.shape[d]}")
    t = grad_output.dtype.type if grad_output.dtype in (np.float32, np.float64) else np.float32
    g = grad_output.astype(t, copy=False)
    mh = _weight_matrix(h, *window_weights(kind, h, oh, align_corners, scales_h, True, t))
    mw = _weight_matrix(w_in, *window_weights(kind, w_in, ow, align_corners, scales_w, True, t))
    g = xp.matmul(xp.matmul(xp.asarray(mh.T), g), xp.asarray(mw))      # (h, oh) @ g @ (ow, w)
    return xp.ascontiguousarray(g).astype(grad_output.dtype, copy=False)


def _int16_weights(w: Array) -> tuple[Array, int]:
    """PIL's integer weights: the precision (bits) that keeps the largest weight below 2^15, and the weights
    rounded half away from zero at that precision."""
    w_max = float(w.max()) if w.size else 0.0
    precision = 0
    while precision < 22 and int(0.5 + w_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = w * float(1 << precision)
    return np.where(w < 0, (-0.5 + scaled).astype(np.int64), (0.5 + scaled).astype(np.int64)), precision


def _resample_dim_uint8(xp: Any, x: Array, axis: int, xmin: Array, xsize: Array, w: Array) -> Array:
    k16, precision = _int16_weights(w)
    in_size = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = len(xmin)
    acc = xp.full(tuple(x.shape[:axis]) + (len(xmin),) + tuple(x.shape[axis + 1:]), 1 << (precision - 1)
                  if precision else 0, dtype=np.int64)
    for k in range(w.shape[1]):
        idx = xp.asarray(np.minimum(xmin + k, in_size - 1))
        coef = xp.asarray(np.where(k < xsize, k16[:, k], 0).reshape(shape))
        acc = acc + xp.take(x, idx, axis=axis).astype(np.int64) * coef
    return xp.clip(acc >> precision, 0, 255).astype(np.uint8)


def resample_uint8(xp: Any, self: Array, output_size: Any, align_corners: bool, scales: Any, kind: str,
                   antialias: bool) -> Array:
    """uint8 bilinear / bicubic / Lanczos resampling of (N, C, H, W) in PIL's integer arithmetic
    (Note [Filtered resampling]): the width pass, then the height pass, each rounded to uint8."""
    oh, ow = output_size
    h, w_in = self.shape[2], self.shape[3]

    def windows(in_size: int, out_size: int, scale: Any) -> tuple[Array, Array, Array]:
        if kind == "bicubic" and not antialias:
            return cubic_windows(in_size, out_size, align_corners, scale)
        return window_weights(kind, in_size, out_size, align_corners, scale, antialias, np.float64)
    x = self
    if ow != w_in:
        x = _resample_dim_uint8(xp, x, 3, *windows(w_in, ow, scales[1]))
    if oh != h:
        x = _resample_dim_uint8(xp, x, 2, *windows(h, oh, scales[0]))
    return xp.ascontiguousarray(x) if x is not self else x.copy()


def _def(kind: str) -> tuple[Any, Any]:
    def fwd(xp: Any, self: Array, output_size: Any, align_corners: bool, scales_h: Any = None,
            scales_w: Any = None) -> Array:
        return _aa_forward(kind, xp, self, output_size, align_corners, scales_h, scales_w)

    def bwd(xp: Any, grad_output: Array, output_size: Any, input_size: Any, align_corners: bool,
            scales_h: Any = None, scales_w: Any = None) -> Array:
        return _aa_backward(kind, xp, grad_output, output_size, input_size, align_corners, scales_h, scales_w)
    name = f"_upsample_{kind}2d_aa"
    fwd.__name__ = fwd.__qualname__ = name
    bwd.__name__ = bwd.__qualname__ = name + "_backward"
    return fwd, bwd


_upsample_bilinear2d_aa, _upsample_bilinear2d_aa_backward = _def("bilinear")
_upsample_bicubic2d_aa, _upsample_bicubic2d_aa_backward = _def("bicubic")
_upsample_lanczos2d_aa, _upsample_lanczos2d_aa_backward = _def("lanczos")
