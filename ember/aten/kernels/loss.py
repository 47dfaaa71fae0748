"""Kernels of the losses: MSE, NLL, smooth L1 / Huber, binary cross entropy, the margin losses
(``aten/src/ATen/native/{Loss,LossNLL,LossMultiMargin,LossMultiLabelMargin}.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import (Array, asdtype, compute_dtype, elementwise, meta_array, meta_kernel,
                                        result_np_dtype, shape_str, type_name)
from ember.c10.dtype import BF16_NP

__all__ = ["mse_loss_backward", "mse_loss", "nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward",
           "nll_loss2d_backward", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "soft_margin_loss", "multi_margin_loss",
           "multilabel_margin_loss_forward"]


# ------------------------------------------------------------------------------ losses
@elementwise
def mse_loss_backward(xp: Any, grad_output: Array, self: Array, target: Array, reduction: Any) -> Any:
    """d mse_loss / d self: ``2 (self - target) grad``, over ``numel`` for the mean."""
    npdt = result_np_dtype(grad_output, self, target)
    cdt = compute_dtype(npdt)
    norm = 2.0 / self.size if reduction == 1 else 2.0
    g, x, t = asdtype(xp, grad_output, cdt), asdtype(xp, self, cdt), asdtype(xp, target, cdt)
    return ((x - t) * norm * g).astype(npdt, copy=False)


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


def _out_of_bounds(target: Any) -> IndexError:
    return IndexError(f"Target {int(target)} is out of bounds.")


def _target_weights(xp: Any, t: Array, n_classes: Any, weight: Array, ignore_index: Any, ct: Any) -> Any:
    """Per row: the target's class weight (0 where the target is ignore_index), the valid mask and the target with
    ignored rows set to class 0; PyTorch's "Target k is out of bounds." for the first invalid target in order."""
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise _out_of_bounds(t[bad][0])
    safe = compiled.where(xp, valid, t, 0)
    w = valid.astype(ct) if weight is None else compiled.where(xp, valid, weight.astype(ct, copy=False)[safe], 0)
    return w, valid, safe


def _picked_weights(xp: Any, x: Array, t: Array, weight: Array, ignore_index: Any, ct: Any) -> Any:
    """Per row: the target's score, its class weight (0 where the target is ignore_index) and the valid mask."""
    w, valid, safe = _target_weights(xp, t, x.shape[1], weight, ignore_index, ct)
    picked = x[xp.arange(x.shape[0]), safe].astype(ct, copy=False)
    return picked, w, valid


def _nll_forward_meta(xp: Any, self: Array, target: Array, weight: Array, reduction: Any, ignore_index: Any,
                      spatial: Any = False) -> Any:
    _nll_checks(self, target, weight, spatial)
    if reduction == 0 and (spatial or self.ndim == 2):
        shape = target.shape
    else:
        shape = ()
    return meta_array(self.dtype, shape), np.empty((), self.dtype)


@meta_kernel(_nll_forward_meta)
def nll_loss_forward(xp: Any, self: Array, target: Array, weight: Array, reduction: Any, ignore_index: Any,
                     spatial: Any = False) -> Any:
    """(output, total_weight): ``-weight[t] * self[i, t]`` per row (0 where ``t == ignore_index``), kept per row for
    reduction None with a batch, else summed, and for Mean divided by the summed weights (NaN for no rows)."""
    _nll_checks(self, target, weight, spatial)
    ct = compute_dtype(self.dtype)
    x, t = _rows(xp, self, target, spatial)
    if not spatial and _nll_loop_usable(xp, x, weight):
        return _nll_forward_loop(x, t, weight, reduction, ignore_index, self.ndim == 2, target.shape)
    picked, w, valid = _picked_weights(xp, x, t, weight, ignore_index, ct)
    with np.errstate(all="ignore"):
        loss = compiled.where(xp, valid, -(picked * w), 0)
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


_NLL_DTYPES = (np.float32, np.float64)


def _nll_loop_usable(xp: Any, x: Array, weight: Array) -> bool:
    """Whether ``loops.loss`` takes these (M, C) scores: float32 / float64 NumPy arrays (weights of their dtype)."""
    return compiled.usable(xp, x, dtypes=_NLL_DTYPES) and (weight is None or weight.dtype == x.dtype)


def _nll_weight(x: Array, weight: Array) -> Any:
    return np.empty(0, x.dtype) if weight is None else np.ascontiguousarray(weight).reshape(-1)


def _nll_forward_loop(x: Array, t: Array, weight: Array, reduction: Any, ignore_index: Any, batched: bool,
                      shape: Any) -> Any:
    """nll_loss_forward's (output, total_weight) by ``loops.loss``: PyTorch's loops and its cascade sum (Note
    [NLL's cascade sum])."""
    dt = x.dtype
    w = _nll_weight(x, weight)
    if reduction == 0 and batched:
        out = np.empty(x.shape[0], dt)
        bad = loops.loss.nll_rows(x, t, w, weight is not None, ignore_index, out)
        if bad >= 0:
            raise _out_of_bounds(t[bad])
        return out.reshape(shape), np.zeros((), dt)
    n = x.shape[0]
    if n == 0:
        return np.asarray(np.nan if reduction == _MEAN else 0.0, dt), np.zeros((), dt)
    ceil_log2 = 1 if n <= 2 else (n - 1).bit_length()
    out, total, bad, ignored = loops.loss.nll_sum(x, t, w, weight is not None, ignore_index, max(4, ceil_log2 // 8))
    if bad >= 0:
        raise _out_of_bounds(t[bad])
    if weight is None:
        total = dt.type(n - ignored)
    out, total = dt.type(out), dt.type(total)     # (numba returns Python floats, the exact values)
    if reduction == _MEAN:
        if total:
            out = out / total
        else:
            with np.errstate(all="ignore"):     # 0 / 0 (every row ignored): NaN, as PyTorch's
                out = out / total
    return np.asarray(out, dt), np.asarray(total, dt)


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
    return meta_array(self.dtype, self.shape)


@meta_kernel(_nll_backward_meta)
def nll_loss_backward(xp: Any, grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                      ignore_index: Any, total_weight: Array, spatial: Any = False) -> Any:
    """The gradient of nll_loss_forward with respect to ``self``: ``-weight[t] * grad`` at each row's target
    (divided by total_weight for Mean), zero elsewhere and on ignored rows."""
    _nll_backward_checks(grad_output, self, target, weight, reduction, total_weight, spatial)
    ct = compute_dtype(self.dtype)
    x, t = _rows(xp, self, target, spatial)
    if not spatial and _nll_loop_usable(xp, x, weight) and grad_output.dtype == x.dtype \
            and total_weight.dtype == x.dtype:
        return _nll_backward_loop(grad_output, x, t, weight, reduction, ignore_index, total_weight, self.ndim == 2,
                                  self.shape)
    c = x.shape[1]
    w, valid, safe = _target_weights(xp, t, c, weight, ignore_index, ct)
    g = grad_output.astype(ct, copy=False)
    with np.errstate(all="ignore"):
        if reduction == 0 and (spatial or self.ndim == 2):
            g = g.reshape(-1)
        else:
            g = g.reshape(())
            if reduction == _MEAN:
                g = g / total_weight.reshape(()).astype(ct)
        vals = compiled.where(xp, valid, -(w * g), 0)
    gi = xp.zeros(x.shape, ct)
    gi[xp.arange(x.shape[0]), safe] = vals
    if spatial:
        n, _, h, wd = self.shape
        gi = xp.moveaxis(gi.reshape(n, h, wd, c), -1, 1)
    return xp.ascontiguousarray(gi.reshape(self.shape)).astype(self.dtype, copy=False)


def _nll_backward_loop(grad_output: Array, x: Array, t: Array, weight: Array, reduction: Any, ignore_index: Any,
                       total_weight: Array, batched: bool, shape: Any) -> Any:
    """nll_loss_backward by ``loops.loss``: PyTorch's loop (the reduced gradient -(grad / total_weight) for Mean, in
    the scores' dtype)."""
    dt = x.dtype
    per_row = reduction == 0 and batched
    if per_row:
        g = np.ascontiguousarray(grad_output).reshape(-1)
    else:
        go = grad_output.reshape(-1)[0]
        with np.errstate(all="ignore"):
            g = np.asarray([-(go / total_weight.reshape(-1)[0] if reduction == _MEAN else go)], dt)
    gi = np.zeros(x.shape, dt)
    bad = loops.loss.nll_grad_rows(t, _nll_weight(x, weight), weight is not None, ignore_index, g, per_row, gi)
    if bad >= 0:
        raise _out_of_bounds(t[bad])
    return gi.reshape(shape)


def nll_loss2d_backward(xp: Any, grad_output: Array, self: Array, target: Array, weight: Array, reduction: Any,
                        ignore_index: Any, total_weight: Array) -> Any:
    return nll_loss_backward(xp, grad_output, self, target, weight, reduction, ignore_index, total_weight, spatial=True)


setattr(nll_loss2d_backward, "meta_kernel",
        lambda xp, g, s, t, w, r, i, tw: _nll_backward_meta(xp, g, s, t, w, r, i, tw, spatial=True))


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
        loss = compiled.where(xp, z < beta, 0.5 * z * z / beta if beta else z, z - 0.5 * beta)
    return _reduce_loss(xp, loss, reduction, npdt)


def huber_loss(xp: Any, self: Array, target: Array, reduction: Any = _MEAN, delta: Any = 1.0) -> Any:
    npdt, ct = _loss_dtype(self, target, "huber_cpu")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    with np.errstate(all="ignore"):
        z = xp.abs(xp.subtract(self, target, dtype=ct))
        loss = compiled.where(xp, z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
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
    if compiled.usable(xp, x):
        return compiled.elementwise(loops.activation.log_sigmoid, x)
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
        h = compiled.where(xp, z > 0, z * z if p == 2 else z, 0)
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
    tc = compiled.where(xp, valid, t, 0)
    is_target = xp.zeros((nframe, dim), bool)
    rows = xp.broadcast_to(xp.arange(nframe)[:, None], t.shape)
    is_target[rows[valid], tc[valid]] = True
    with np.errstate(all="ignore"):
        z = 1 - xp.take_along_axis(x, tc, 1)[:, :, None] + x[:, None, :]
        active = (z > 0) & valid[:, :, None] & ~is_target[:, None, :]
        loss = compiled.where(xp, active, z, 0).sum(axis=(1, 2)) / dim
    is_target = is_target.astype(self.dtype).reshape(target.shape)
    if reduction == 0:
        return loss.reshape(() if self.ndim <= 1 else (nframe,)).astype(self.dtype), is_target
    return _reduce_loss(xp, loss, reduction, self.dtype), is_target
