"""Factory kernels: tensors made from sizes and values (``aten/src/ATen/native/TensorFactories.cpp``)."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import math

import numpy as np

from ember.aten.kernels import compiled
from ember.aten.kernels._common import meta_shape, shape_str
from ember.c10.checked_convert import checked_convert
from ember.aten.context import fill_empty_deterministic
from ember.c10 import dtype as dt
from ember.c10 import memory_format as mf
from ember.c10.exceptions import warn_user


def _np_dtype(dtype: Any, default: Any = None) -> Any:
    if dtype is not None:
        return dtype.np
    return (default or dt.get_default_dtype()).np


def check_size(size: Any) -> Any:
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {shape_str(size)}")
    return tuple(size)


def _factory_shape(size: Any, dtype: Any = None, *rest: Any, **_k: Any) -> Any:
    return check_size(size), _np_dtype(dtype)


@meta_shape(_factory_shape)
def empty(xp: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
          memory_format: Any = None) -> Any:
    """Uninitialized memory, row-major or, for ``channels_last(_3d)``, channels innermost."""
    if memory_format is None or memory_format is mf.contiguous_format:
        return fill_empty_deterministic(xp, xp.empty(check_size(size), _np_dtype(dtype)))
    if memory_format is mf.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    size = check_size(size)
    return empty_strided(xp, size, mf.channels_last_strides(size, memory_format), dtype)


@meta_shape(lambda size, stride, dtype=None, *rest, **_k: (check_size(size), _np_dtype(dtype)))
def empty_strided(xp: Any, size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> Any:
    """Uninitialized memory laid out with ``stride`` (in elements): just enough of it for the largest offset."""
    size, stride = check_size(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    npdt = _np_dtype(dtype)
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    buf = fill_empty_deterministic(xp, xp.empty(n, npdt))
    if xp is np:
        return np.lib.stride_tricks.as_strided(buf, size, tuple(st * npdt.itemsize for st in stride))
    return xp.lib.stride_tricks.as_strided(buf, size, tuple(st * npdt.itemsize for st in stride))


@meta_shape(_factory_shape)
def zeros(xp: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return xp.zeros(check_size(size), _np_dtype(dtype))


@meta_shape(_factory_shape)
def ones(xp: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return xp.ones(check_size(size), _np_dtype(dtype))


def _full_dtype(fill_value: Any, dtype: Any) -> Any:
    if dtype is not None:
        return dtype.np
    return dt.scalar_dtype(fill_value).np


@meta_shape(lambda size, fill_value, dtype=None, *rest, **_k: (check_size(size), _full_dtype(fill_value, dtype)))
def full(xp: Any, size: Any, fill_value: Any, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: Any = None) -> Any:
    npdt = _full_dtype(fill_value, dtype)
    size = check_size(size)
    return xp.full(size, checked_convert(fill_value, npdt, half_saturates=math.prod(size) == 1), npdt)


@meta_shape(lambda s, dtype=None, *rest, **_k: ((), _full_dtype(s, dtype)))
def scalar_tensor(xp: Any, s: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> Any:
    return xp.asarray(s, dtype=_np_dtype(dtype))


def _arange_dtype(start: Any, end: Array, step: Any, dtype: Any) -> Any:
    if dtype is not None:
        return dtype.np
    if all(isinstance(v, (int, bool)) for v in (start, end, step)):
        return np.dtype(np.int64)
    return dt.get_default_dtype().np


def _check_range(start: Any, end: Any, step: Any, other_bound: str) -> None:
    """arange's and range's argument checks (arange's message says "larger bound", range's "lower bound")."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(float(v)) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError(f"upper bound and {other_bound} bound inconsistent with step sign")


def _arange_len(start: Any, end: Array, step: Any) -> Any:
    _check_range(start, end, step, "larger")
    if all(isinstance(v, int) for v in (start, end, step)):
        return max(0, -((start - end) // step))
    return max(0, math.ceil((end - start) / step))


@meta_shape(lambda start, end, step=1, dtype=None, *r, **_k: ((_arange_len(start, end, step),),
                                                          _arange_dtype(start, end, step, dtype)))
def arange(xp: Any, start: Any, end: Array, step: Any = 1, dtype: Any = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None) -> Any:
    npdt = _arange_dtype(start, end, step, dtype)
    n = _arange_len(start, end, step)
    if npdt.kind in "iu" and all(isinstance(v, int) for v in (start, end, step)):
        return (xp.arange(n, dtype=np.int64) * step + start).astype(npdt)
    # PyTorch computes start + i * step in double (accscalar) for float outputs
    return (start + xp.arange(n, dtype=np.float64) * step).astype(npdt)


def _lin_dtype(start: Any, end: Array, dtype: Any) -> Any:
    if dtype is not None:
        return dtype.np
    return dt.get_default_dtype().np


# Note [linspace's rounding]
# PyTorch's CPU linspace computes ``start + step * i`` for the first half and ``end - step * (steps - 1 - i)`` for the
# second, ``step`` being ``(end - start) / (steps - 1)`` in the output's type (in double for integer outputs, which
# truncate). Built for AVX2 / AVX-512 its kernel contracts each into a fused multiply-add, rounding once, so its
# results differ from the twice-rounded formula in the last bit here and there -- bits programs see (torchmetrics'
# IoU and recall thresholds). ember rounds as that kernel does (float32 through double, float64 through long double).
@meta_shape(lambda start, end, steps, dtype=None, *r, **_k: ((steps,), _lin_dtype(start, end, dtype)))
def linspace(xp: Any, start: Any, end: Array, steps: Any, dtype: Any = None, layout: Any = None,
             device: Any = None, pin_memory: Any = None) -> Any:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    npdt = _lin_dtype(start, end, dtype)
    if steps == 0:
        return xp.empty(0, npdt)
    if steps == 1:
        return xp.full(1, start, npdt)
    if xp is np and (npdt in (np.float32, np.float64) or npdt.kind in "iu"):
        return _linspace_cpu(start, end, steps, npdt)
    # PyTorch: step = (end - start) / (steps - 1); first half from start, second half from end
    step = (end - start) / (steps - 1)
    i = xp.arange(steps, dtype=np.float64)
    half = steps // 2
    r = compiled.where(xp, i < half, start + step * i, end - step * (steps - i - 1))
    return r.astype(npdt)


def _fma(a: Any, k: Any, c: Any, t: Any) -> Any:
    """``a * k + c`` rounded once to ``t`` (``k`` integers): float32 through double, where it is exact; float64
    through Dekker's exact product and Knuth's exact sum."""
    if t is np.float32:
        return (np.float64(a) * k + np.float64(c)).astype(np.float32)
    kf = k.astype(np.float64)
    p = a * kf
    split = 134217729.0 * a
    ah = split - (split - a)
    al = a - ah
    split_k = 134217729.0 * kf
    kh = split_k - (split_k - kf)
    kl = kf - kh
    p_err = ((ah * kh - p) + ah * kl + al * kh) + al * kl
    total = c + p
    bb = total - c
    s_err = (c - (total - bb)) + (p - bb)
    return total + (s_err + p_err)


def _linspace_cpu(start: Any, end: Any, steps: int, npdt: Any) -> Any:
    """PyTorch's CPU ``linspace``, rounding included (Note [linspace's rounding])."""
    from ember.c10.cpu_capability import get_cpu_capability
    integral = npdt.kind in "iu"
    t = np.float64 if integral else npdt.type
    s, e = (t(int(start)), t(int(end))) if integral else (t(start), t(end))
    step = (e - s) / t(steps - 1)
    i = np.arange(steps)
    back = steps - 1 - i
    if get_cpu_capability() != "DEFAULT" and not integral:     # fused multiply-add: one rounding
        first, second = _fma(step, i, s, t), _fma(-step, back, e, t)
    else:
        first, second = s + step * i.astype(t), e - step * back.astype(t)
    v = np.where(i < steps // 2, first, second)
    return np.trunc(v).astype(npdt) if integral else v.astype(npdt)


@meta_shape(lambda start, end, steps, base=10.0, dtype=None, *r, **_k: ((steps,), _lin_dtype(start, end, dtype)))
def logspace(xp: Any, start: Any, end: Array, steps: Any, base: Any = 10.0, dtype: Any = None,
             layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    npdt = _lin_dtype(start, end, dtype)
    lin = linspace(xp, start, end, steps, dt.float64)
    return xp.power(float(base), lin).astype(npdt)


@meta_shape(lambda n, m=None, dtype=None, *r, **_k: ((n, n if m is None else m), _np_dtype(dtype)))
def eye(xp: Any, n: Any, m: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
        pin_memory: Any = None) -> Any:
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return xp.eye(n, n if m is None else m, dtype=_np_dtype(dtype))


def _tri_indices(xp: Any, row: Any, col: Any, offset: Any, upper: Any, dtype: Any) -> Any:
    npdt = _np_dtype(dtype, dt.int64)
    r, c = np.nonzero(np.triu(np.ones((row, col), bool), offset) if upper else
                      np.tril(np.ones((row, col), bool), offset))
    return xp.asarray(np.stack([r, c]).astype(npdt))


def tril_indices(xp: Any, row: Any, col: Any, offset: Any = 0, dtype: Any = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> Any:
    return _tri_indices(xp, row, col, offset, False, dtype)


def triu_indices(xp: Any, row: Any, col: Any, offset: Any = 0, dtype: Any = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> Any:
    return _tri_indices(xp, row, col, offset, True, dtype)


def _range_len(start: Any, end: Any, step: Any) -> int:
    _check_range(start, end, step, "lower")
    return int(math.floor((float(end) - float(start)) / float(step))) + 1


@meta_shape(lambda start, end, step=1, dtype=None, *r, **_k: ((_range_len(start, end, step),), _np_dtype(dtype)))
def range_inclusive(xp: Any, start: Any, end: Any, step: Any = 1, dtype: Any = None, layout: Any = None,
                    device: Any = None, pin_memory: Any = None) -> Any:
    """The deprecated ``torch.range``: ``end`` included, the default float dtype even for integer bounds,
    ``start + i * step`` computed in double."""
    warn_user("torch.range is deprecated and will be removed in a future release because its behavior is "
              "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
              "[start, end).")
    n = _range_len(start, end, step)
    npdt = _np_dtype(dtype)
    if npdt.kind in "iub":
        return (int(start) + xp.arange(n, dtype=np.int64) * int(step)).astype(npdt)
    return (start + xp.arange(n, dtype=np.float64) * step).astype(npdt)
