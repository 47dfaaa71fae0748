"""Kernels of upsampling in every mode and its backward (``aten/src/ATen/native/UpSample*.cpp``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ember.aten.kernels._common import Array, asdtype, compute_dtype, shape_str, type_name
from ember.c10.dtype import BF16_NP

__all__ = []

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
