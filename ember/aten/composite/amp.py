"""The ops of gradient scaling (``aten/src/ATen/native/AmpKernels.cpp``): ``_amp_foreach_non_finite_check_and_unscale_``
and ``_amp_update_scale_``, which ``ember.amp.GradScaler`` calls once per step.

CompositeExplicitAutograd kernels over the tensors' arrays (NumPy or CuPy): the scale and the tracker stay tensors
on the gradients' device, as in PyTorch, so a step reads no number back except to decide whether to skip.
"""
from __future__ import annotations

from typing import Any

import math

from ember.aten.kernels._common import compute_dtype
from ember.c10.dtype import scalar_type_name

__all__ = ["_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"]


def _check_one_float(t: Any, name: str) -> None:
    if t.numel() != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")
    if t.dtype.name != "float32":
        raise RuntimeError(f"{name} must be a float tensor.")


def _amp_foreach_non_finite_check_and_unscale_(self: Any, found_inf: Any, inv_scale: Any) -> None:
    """Multiply every gradient of ``self`` by ``inv_scale`` in place; set ``found_inf`` to 1.0 when one of them
    holds an inf or a NaN."""
    _check_one_float(inv_scale, "inv_scale")
    _check_one_float(found_inf, "found_inf")
    if not self:
        return None
    if found_inf._device.type == "meta":
        return None
    inv = float(inv_scale._data.reshape(-1)[0])
    bad = False
    for g in self:
        if g._device != inv_scale._device:
            raise RuntimeError("scaled_grads and inv_scale must be on the same device.")
        a = g._data
        if not g.dtype.is_floating_point:
            raise RuntimeError(f"_amp_foreach_non_finite_check_and_unscale_cpu\" not implemented for "
                               f"'{scalar_type_name(a.dtype)}'")
        cdt = compute_dtype(a.dtype)
        w = a.astype(cdt) if cdt != a.dtype else a
        if not bad and w.size and not _finite(w):
            bad = True
        a[...] = (w * cdt.type(inv)).astype(a.dtype, copy=False)
        g._vc.version += 1
    if bad:
        found_inf._data[...] = 1.0
        found_inf._vc.version += 1
    return None


def _finite(w: Any) -> bool:
    m = type(w).__module__.split(".")[0]
    xp = __import__(m)
    return bool(xp.isfinite(w).all())


def _amp_update_scale_(self: Any, growth_tracker: Any, found_inf: Any, scale_growth_factor: float,
                       scale_backoff_factor: float, growth_interval: int) -> Any:
    """Update the loss scale ``self`` and ``growth_tracker`` (the count of steps without infs) in place: back off
    after an inf/NaN; grow after ``growth_interval`` clean steps in a row, unless the grown scale would overflow."""
    if growth_tracker.numel() != 1 or growth_tracker.dtype.name != "int32":
        raise RuntimeError("growth_tracker must be a 1-element int32 tensor." if growth_tracker.numel() != 1
                           else "growth_tracker must be an int tensor.")
    if self.numel() != 1:
        raise RuntimeError("current_scale must be a 1-element tensor.")
    if self.dtype.name != "float32":
        raise RuntimeError("current_scale must be a float tensor.")
    if found_inf.numel() != 1:
        raise RuntimeError("found_inf must be a 1-element tensor.")
    if found_inf.dtype.name != "float32":
        raise RuntimeError("found_inf must be a float tensor.")
    if self._device.type == "meta":
        return self
    scale = self._data.reshape(-1)
    tracker = growth_tracker._data.reshape(-1)
    if float(found_inf._data.reshape(-1)[0]):
        scale[0] = scale[0] * scale.dtype.type(scale_backoff_factor)     # float32 arithmetic, as PyTorch's
        tracker[0] = 0
    else:
        successful = int(tracker[0]) + 1
        if successful == growth_interval:
            grown = scale[0] * scale.dtype.type(scale_growth_factor)
            if math.isfinite(float(grown)):
                scale[0] = grown
            tracker[0] = 0
        else:
            tracker[0] = successful
    self._vc.version += 1
    growth_tracker._vc.version += 1
    return self
