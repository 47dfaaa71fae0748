"""Copies, conversions and fills (``aten/src/ATen/native/Copy.cpp``, ``Fill.cpp``, ``TensorConversions.cpp``)."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import elementwise, type_name
from ember.c10.checked_convert import checked_convert
from ember.c10 import memory_format as mf
from ember.c10.dtype import from_numpy_dtype
from ember.aten.kernels.factory import empty_strided
from ember.aten.wrap import make_writeable


def clone(xp: Any, self: Array, memory_format: Any = None) -> Any:
    """A copy laid out by ``memory_format``: row-major for ``contiguous_format``; channels innermost for
    ``channels_last(_3d)``; by default (``preserve_format``) PyTorch's rule (``memory_format.preserved_strides``) -- the
    same strides for a dense, non-overlapping tensor, else the order of its strides made dense."""
    name = getattr(memory_format, "name", "preserve_format")
    if name == "contiguous_format":
        return _row_major_copy(xp, self)
    if name in ("channels_last", "channels_last_3d") and self.ndim in (4, 5):
        to_last = (0,) + tuple(range(2, self.ndim)) + (1,)
        back = (0, self.ndim - 1) + tuple(range(1, self.ndim - 1))
        return self.transpose(to_last).copy(order="C").transpose(back)
    if self.flags.c_contiguous and 1 not in self.shape:
        return self.copy()
    strides = mf.preserved_strides(self.shape, tuple(st // self.itemsize for st in self.strides))
    if strides is None:
        return _row_major_copy(xp, self)
    out = empty_strided(xp, self.shape, strides, from_numpy_dtype(self.dtype))
    out[...] = self
    return out


def _row_major_copy(xp: Any, a: Array) -> Any:
    """A row-major copy. An innermost broadcast axis of a few elements (``x.unsqueeze(-1).expand(..., k)``, what
    ``repeat_interleave`` copies) is filled one slice at a time: NumPy's own copy would run its inner loop over
    those few elements (3-5x slower at 256x256x2)."""
    if a.ndim >= 2 and a.strides[-1] == 0 and 1 < a.shape[-1] <= 16 and a.size > 4096:
        out = xp.empty(a.shape, a.dtype)
        base = a[..., 0]
        for i in range(a.shape[-1]):
            out[..., i] = base
        return out
    return a.copy(order="C")


def contiguous_copy(xp: Any, self: Array) -> Any:
    return xp.ascontiguousarray(self)


def copy_(xp: Any, self: Array, src: Array, non_blocking: Any = False) -> Any:
    """Write ``src`` into ``self`` (broadcasting ``src``), converting dtype and device. The destination's array
    module does the copy: a CUDA ``copy_`` may write a CPU tensor (``.cpu()``) or read one (``.cuda()``)."""
    if src.dtype.names is not None:    # a quantized source (Note [Quantized dtypes]): its values are not numbers
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
                           "dequantize to get a float Tensor from a quantized Tensor")
    xp = np if isinstance(self, np.ndarray) else xp
    if type(src) is not type(self):
        src = src.get() if hasattr(src, "get") else xp.asarray(src)
    ok = src.shape == self.shape
    if not ok:
        try:
            ok = np.broadcast_shapes(src.shape, self.shape) == self.shape
        except ValueError:
            pass
    if not ok:
        from ember.aten.kernels._common import shape_str
        raise RuntimeError(f"The size of tensor a ({self.shape[-1] if self.ndim else 1}) must match the size of "
                           f"tensor b ({src.shape[-1] if src.ndim else 1}) at non-singleton dimension "
                           f"{max(self.ndim - 1, 0)}" if src.ndim <= self.ndim else
                           f"output with shape {shape_str(self.shape)} doesn't match the broadcast shape "
                           f"{shape_str(np.broadcast_shapes(src.shape, self.shape))}")
    make_writeable(self)
    if src.dtype == self.dtype:
        xp.copyto(self, src)
        return
    if (src.size >= compiled.SELECT_MIN and src.shape == self.shape and {src.itemsize, self.itemsize} == {2, 4}
            and src.flags.c_contiguous and self.flags.c_contiguous and xp is np and compiled.is_enabled()
            and loops.pointwise.convert(src, self)):      # float32 <-> float16 / bfloat16
        return
    with np.errstate(all="ignore"):
        if src.dtype.kind == "c" and self.dtype.kind != "c":
            src = src.real
        xp.copyto(self, src, casting="unsafe")


def fill_(xp: Any, self: Array, value: Array) -> Any:
    if hasattr(value, "ndim"):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        value = value[()]
    else:  # a Python number: PyTorch's checked conversion to the tensor's dtype
        value = checked_convert(value, self.dtype, half_saturates=self.size == 1)
    make_writeable(self)
    self[...] = value


def zero_(xp: Any, self: Array) -> Any:
    make_writeable(self)
    self[...] = 0


@elementwise
def masked_fill(xp: Any, self: Array, mask: Array, value: Array) -> Any:
    if mask.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{type_name(mask.dtype)}")
    if hasattr(value, "ndim"):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value[()]
    with np.errstate(all="ignore"):
        return compiled.where(xp, mask, xp.asarray(value).astype(self.dtype), self)
