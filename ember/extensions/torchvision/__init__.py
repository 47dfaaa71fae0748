"""torchvision's compiled operators, defined by ember (Note [Stand-in operator libraries] in ``ember/extensions``).

``torchvision/_C.so`` defines the ``torchvision::`` operators with the schemas below and registers their CPU and CUDA
kernels; torchvision's Python then registers their fake functions (``_meta_registrations.py``), their autograd and
autocast kernels (``_autograd_registrations.py``). Importing this module does what loading ``_C.so`` does, so
torchvision's own Python registrations run unchanged on top: the forward and backward operators' kernels are
ember's (``kernels.py``), with torchvision's argument checks and messages.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ember.aten.backends import BACKEND, ON_CUDA
from ember.aten.wrap import new_tensor
from ember.extensions.torchvision import kernels as K
from ember.library import Library

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, float rois_scale, "
    "int rois_zero_point, float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
    "bool aligned) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) "
    "-> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, "
    "SymInt groups, SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_cuda_version() -> int",
)


def _check(cond: bool, message: Any) -> None:
    """torchvision's TORCH_CHECK; ``message`` may be a function, called only when the check fails."""
    if not cond:
        raise RuntimeError(message() if callable(message) else message)


def _xp(t: Any) -> Any:
    return BACKEND[t._ks & ON_CUDA].xp


def _wrap(arr: Any, like: Any) -> Any:
    """A result array as a tensor on ``like``'s device."""
    be = BACKEND[like._ks & ON_CUDA]
    return new_tensor(arr, be.ks, like._device)


def _float_data(t: Any) -> Any:
    """The array of a floating tensor, in float32 when its type is narrower (half precision is computed in float32
    and rounded once at the end)."""
    a = t._data
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float32)


def _same_dtype(out: Any, like: Any) -> Any:
    return out if out.dtype == like._data.dtype else out.astype(like._data.dtype)


def _check_rois(input: Any, rois: Any, what: str = "input") -> None:  # noqa: A002
    _check(rois.dim() == 2 and rois.size(1) == 5, "rois must have shape as Tensor[K, 5]")
    _check(input.dtype == rois.dtype, f"{what} should have the same type as rois")
    _check(input.dtype.is_floating_point, f"\"{_KERNEL_NAMES.get(what, 'kernel')}\" not implemented for "
                                          f"'{input.dtype.name.capitalize()}'")


_KERNEL_NAMES = {"input": "roi_align_forward_kernel", "grad": "roi_align_backward_kernel"}


# ------------------------------------------------------------------------------------------------ kernels
def _check_nms_shapes(dets: Any, scores: Any) -> None:
    _check(dets.dim() == 2, f"boxes should be a 2d tensor, got {dets.dim()}D")
    _check(dets.size(1) == 4, f"boxes should have 4 elements in dimension 1, got {dets.size(1)}")
    _check(scores.dim() == 1, f"scores should be a 1d tensor, got {scores.dim()}D")
    _check(dets.size(0) == scores.size(0), "boxes and scores should have same number of elements in dimension 0, "
                                           f"got {dets.size(0)} and {scores.size(0)}")


def _nms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    _check_nms_shapes(dets, scores)
    _check(dets.dtype == scores.dtype, "dets should have the same type as scores")
    _check(dets.dtype.is_floating_point, f"\"nms_kernel\" not implemented for '{dets.dtype.name.capitalize()}'")
    return _wrap(K.nms(_xp(dets), _float_data(dets), _float_data(scores), iou_threshold), dets)


def _qnms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    _check_nms_shapes(dets, scores)
    return _wrap(K.qnms(_xp(dets), dets._data, scores._data, iou_threshold), dets)


def _box_iou_rotated(boxes1: Any, boxes2: Any) -> Any:
    _check(boxes1.dim() == 2 and boxes1.size(1) == 5, f"boxes1 should have shape (N, 5), got {list(boxes1.shape)}")
    _check(boxes2.dim() == 2 and boxes2.size(1) == 5, f"boxes2 should have shape (M, 5), got {list(boxes2.shape)}")
    _check(boxes1.dtype == boxes2.dtype, "boxes1 and boxes2 must have the same dtype")
    return _wrap(K.box_iou_rotated(_xp(boxes1), _float_data(boxes1), _float_data(boxes2)), boxes1)


def _roi_align(input: Any, rois: Any, spatial_scale: float, pooled_height: int, pooled_width: int,  # noqa: A002
               sampling_ratio: int, aligned: bool) -> Any:
    _check_rois(input, rois)
    _check(input.dim() == 4, f"input must be a 4d tensor (N, C, H, W), got {input.dim()}D")
    out = K.roi_align(_xp(input), _float_data(input), _float_data(rois), spatial_scale, pooled_height, pooled_width,
                      sampling_ratio, aligned)
    return _wrap(_same_dtype(out, input), input)


def _roi_align_backward(grad: Any, rois: Any, spatial_scale: float, pooled_height: int, pooled_width: int,
                        batch_size: int, channels: int, height: int, width: int, sampling_ratio: int,
                        aligned: bool) -> Any:
    _check(grad.dtype == rois.dtype, "grad should have the same type as rois")
    out = K.roi_align_backward(_xp(grad), _float_data(grad), _float_data(rois), spatial_scale, pooled_height,
                               pooled_width, batch_size, channels, height, width, sampling_ratio, aligned)
    return _wrap(_same_dtype(out, grad), grad)


def _qroi_align(input: Any, rois: Any, input_scale: float, input_zero_point: int, rois_scale: float,  # noqa: A002
                rois_zero_point: int, spatial_scale: float, pooled_height: int, pooled_width: int,
                sampling_ratio: int, aligned: bool) -> Any:
    _check(rois.dim() == 2 and rois.size(1) == 5, "rois must have shape as Tensor[K, 5]")
    _check(input.size(0) == 1, "Only one image per batch is allowed in qroi_align.")
    return _wrap(K.qroi_align(_xp(input), input._data, rois._data, input_scale, input_zero_point, rois_scale,
                              rois_zero_point, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned),
                 input)


def _roi_pool(input: Any, rois: Any, spatial_scale: float, pooled_height: int,  # noqa: A002
              pooled_width: int) -> Any:
    _check(rois.dim() == 2 and rois.size(1) == 5, "rois must have shape as Tensor[K, 5]")
    _check(input.dtype == rois.dtype, "input and rois must have the same dtype")
    out, argmax = K.roi_pool(_xp(input), _float_data(input), _float_data(rois), spatial_scale, pooled_height,
                             pooled_width)
    return _wrap(_same_dtype(out, input), input), _wrap(argmax, input)


def _roi_pool_backward(grad: Any, rois: Any, argmax: Any, spatial_scale: float, pooled_height: int,
                       pooled_width: int, batch_size: int, channels: int, height: int, width: int) -> Any:
    _check(rois.dim() == 2 and rois.size(1) == 5, "Tensor rois should have shape as Tensor[K, 5]")
    _check(grad.dtype == rois.dtype, "grad and rois must have the same dtype")
    out = K.roi_pool_backward(_xp(grad), _float_data(grad), _float_data(rois), argmax._data, spatial_scale,
                              pooled_height, pooled_width, batch_size, channels, height, width)
    return _wrap(_same_dtype(out, grad), grad)


def _ps_check(input: Any, rois: Any, pooled_height: int, pooled_width: int, same: str) -> None:  # noqa: A002
    _check(rois.dim() == 2 and rois.size(1) == 5, "Tensor rois should have shape as Tensor[K, 5]")
    _check(input.dtype == rois.dtype, same)
    _check(input.size(1) % (pooled_height * pooled_width) == 0,
           "input channels must be a multiple of pooling height * pooling width")


def _ps_roi_align(input: Any, rois: Any, spatial_scale: float, pooled_height: int, pooled_width: int,  # noqa: A002
                  sampling_ratio: int) -> Any:
    _ps_check(input, rois, pooled_height, pooled_width, "input should have the same type as rois")
    out, mapping = K.ps_roi_align(_xp(input), _float_data(input), _float_data(rois), spatial_scale, pooled_height,
                                  pooled_width, sampling_ratio)
    return _wrap(_same_dtype(out, input), input), _wrap(mapping, input)


def _ps_roi_align_backward(grad: Any, rois: Any, channel_mapping: Any, spatial_scale: float, pooled_height: int,
                           pooled_width: int, sampling_ratio: int, batch_size: int, channels: int, height: int,
                           width: int) -> Any:
    _check(grad.dtype == rois.dtype, "grad should have the same type as rois")
    out = K.ps_roi_align_backward(_xp(grad), _float_data(grad), _float_data(rois), channel_mapping._data,
                                  spatial_scale, pooled_height, pooled_width, sampling_ratio, batch_size, channels,
                                  height, width)
    return _wrap(_same_dtype(out, grad), grad)


def _ps_roi_pool(input: Any, rois: Any, spatial_scale: float, pooled_height: int,  # noqa: A002
                 pooled_width: int) -> Any:
    _ps_check(input, rois, pooled_height, pooled_width, "input and rois must have the same dtype")
    out, mapping = K.ps_roi_pool(_xp(input), _float_data(input), _float_data(rois), spatial_scale, pooled_height,
                                 pooled_width)
    return _wrap(_same_dtype(out, input), input), _wrap(mapping, input)


def _ps_roi_pool_backward(grad: Any, rois: Any, channel_mapping: Any, spatial_scale: float, pooled_height: int,
                          pooled_width: int, batch_size: int, channels: int, height: int, width: int) -> Any:
    _check(grad.dtype == rois.dtype, "grad and rois must have the same dtype")
    out = K.ps_roi_pool_backward(_xp(grad), _float_data(grad), _float_data(rois), channel_mapping._data,
                                 spatial_scale, pooled_height, pooled_width, batch_size, channels, height, width)
    return _wrap(_same_dtype(out, grad), grad)


def _deform_check(input: Any, weight: Any, offset: Any, mask: Any, stride_h: int, stride_w: int,  # noqa: A002
                  pad_h: int, pad_w: int, dil_h: int, dil_w: int, groups: int, offset_groups: int,
                  use_mask: bool) -> None:
    _check(input.dim() == 4, "Expected input_c.ndimension() == 4 to be true, but got false.")
    _check(offset.dim() == 4, "Expected offset_c.ndimension() == 4 to be true, but got false.")
    _check(not use_mask or mask.dim() == 4, "Expected !use_mask || mask_c.ndimension() == 4 to be true, but got "
                                            "false.")
    _check(weight.dim() == 4, "Expected weight_c.ndimension() == 4 to be true, but got false.")
    kh, kw = weight.size(2), weight.size(3)
    _check(kh > 0 and kw > 0, f"weight_h: {kh} weight_w: {kw}")
    _check(stride_h > 0 and stride_w > 0, f"stride_h: {stride_h} stride_w: {stride_w}")
    _check(pad_h >= 0 and pad_w >= 0, f"pad_h: {pad_h} pad_w: {pad_w}")
    _check(dil_h > 0 and dil_w > 0, f"dilation_h: {dil_h} dilation_w: {dil_w}")
    _check(weight.size(1) * groups == input.size(1), "Expected weight_c.size(1) * n_weight_grps == input_c.size(1) "
                                                     "to be true, but got false.")
    _check(weight.size(0) % groups == 0, "Expected weight_c.size(0) % n_weight_grps == 0 to be true, but got false.")
    _check(offset.size(1) == offset_groups * 2 * kh * kw,
           f"offset.shape[1] is not valid: got: {offset.size(1)} expected: {offset_groups * 2 * kh * kw}")
    _check(not use_mask or mask.size(1) == offset_groups * kh * kw,
           lambda: f"mask.shape[1] is not valid: got: {mask.size(1)} expected: {offset_groups * kh * kw}")
    _check(input.size(1) % offset_groups == 0, "Expected input_c.size(1) % n_offset_grps == 0 to be true, but got "
                                               "false.")
    _check(offset.size(0) == input.size(0), "invalid batch size of offset")
    out_h = K.out_size(input.size(2), pad_h, dil_h, kh, stride_h)
    out_w = K.out_size(input.size(3), pad_w, dil_w, kw, stride_w)
    _check(offset.size(2) == out_h and offset.size(3) == out_w,
           lambda: f"offset output dims: ({offset.size(2)}, {offset.size(3)}) - computed output dims: "
                   f"({out_h}, {out_w})")
    _check(mask.size(0) == input.size(0), "invalid batch size of mask")
    _check(not use_mask or (mask.size(2) == out_h and mask.size(3) == out_w),
           lambda: f"mask output dims: ({mask.size(2)}, {mask.size(3)}) - computed output dims: ({out_h}, {out_w})")
    _check(out_h > 0 and out_w > 0, f"Calculated output size too small - out_h: {out_h} out_w: {out_w}")


def _contiguous_arrays(xp: Any, *ts: Any) -> list[Any]:
    return [xp.ascontiguousarray(_float_data(t)) for t in ts]


def _deform_conv2d(input: Any, weight: Any, offset: Any, mask: Any, bias: Any, stride_h: int,  # noqa: A002
                   stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int, groups: int,
                   offset_groups: int, use_mask: bool) -> Any:
    _deform_check(input, weight, offset, mask, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups,
                  offset_groups, use_mask)
    xp = _xp(input)
    out = K.deform_conv2d(xp, *_contiguous_arrays(xp, input, weight, offset, mask, bias), stride_h, stride_w, pad_h,
                          pad_w, dilation_h, dilation_w, groups, offset_groups, use_mask)
    return _wrap(_same_dtype(out, input), input)


def _deform_conv2d_backward(grad: Any, input: Any, weight: Any, offset: Any, mask: Any, bias: Any,  # noqa: A002
                            stride_h: int, stride_w: int, pad_h: int, pad_w: int, dilation_h: int, dilation_w: int,
                            groups: int, offset_groups: int, use_mask: bool) -> Any:
    xp = _xp(input)
    grads = K.deform_conv2d_backward(xp, *_contiguous_arrays(xp, grad, input, weight, offset, mask, bias), stride_h,
                                     stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups, use_mask)
    likes = (input, weight, offset, mask, bias)
    return tuple(_wrap(_same_dtype(g, like), like) for g, like in zip(grads, likes))


def _cuda_version() -> int:
    return K.cuda_version()


KERNELS: dict[str, Callable[..., Any]] = {
    "nms": _nms, "qnms": _qnms, "box_iou_rotated": _box_iou_rotated,
    "roi_align": _roi_align, "_roi_align_backward": _roi_align_backward, "qroi_align": _qroi_align,
    "roi_pool": _roi_pool, "_roi_pool_backward": _roi_pool_backward,
    "ps_roi_align": _ps_roi_align, "_ps_roi_align_backward": _ps_roi_align_backward,
    "ps_roi_pool": _ps_roi_pool, "_ps_roi_pool_backward": _ps_roi_pool_backward,
    "deform_conv2d": _deform_conv2d, "_deform_conv2d_backward": _deform_conv2d_backward,
}
_CPU_ONLY = frozenset({"qnms", "qroi_align"})

_lib = Library("torchvision", "DEF")
for _schema in SCHEMAS:
    _name = _lib.define(_schema)
    if _name == "_cuda_version":
        _lib.impl(_name, _cuda_version, "CompositeExplicitAutograd")
        continue
    _lib.impl(_name, KERNELS[_name], "CPU")
    if _name not in _CPU_ONLY:
        _lib.impl(_name, KERNELS[_name], "CUDA")
