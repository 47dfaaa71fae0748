"""Factory overloads written in other factories (``TensorFactories.cpp``): arange without start or step,
``new_*`` and ``*_like`` (dtype and device from ``self`` unless given), ``random_`` defaults."""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.c10 import memory_format as mf


def arange_end(end: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return aten.arange_start_step(0, end, 1, dtype=dtype, device=device)


def arange_start(start: Any, end: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                 pin_memory: Any = None) -> Any:
    return aten.arange_start_step(start, end, 1, dtype=dtype, device=device)


def _new_kw(self: Any, dtype: Any, device: Any) -> Any:
    return dict(dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)


def new_empty(self: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> Any:
    return aten.empty_memory_format(tuple(size), **_new_kw(self, dtype, device))


def new_empty_strided(self: Any, size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                      pin_memory: Any = None) -> Any:
    return aten.empty_strided(tuple(size), tuple(stride), **_new_kw(self, dtype, device))


def new_zeros(self: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> Any:
    return aten.zeros(tuple(size), **_new_kw(self, dtype, device))


def new_ones(self: Any, size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> Any:
    return aten.ones(tuple(size), **_new_kw(self, dtype, device))


def new_full(self: Any, size: Any, fill_value: Any, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> Any:
    return aten.full(tuple(size), fill_value, **_new_kw(self, dtype, device))


# the *_like factories: ``self``'s shape, its dtype and device unless given (a meta tensor's twin made on the CPU
# is how libraries materialize a model built on the meta device)
def lift_fresh(self: Any) -> Any:
    """The tensor ``torch.tensor`` just made, as it is: an operator only so that a dispatch mode sees the new
    constant (``ember/_creation.py`` calls it while one is active)."""
    return self


def _like_strides(self: Any, memory_format: Any) -> Any:
    """The strides of a tensor made like ``self`` (``empty_like``'s rule), None for row-major. A row-major ``self``
    asks nothing more (the common call, the engine's gradient of a loss among them)."""
    if memory_format is None or memory_format is mf.preserve_format:
        a = self._data
        if self._device.type == "meta" or (a.flags.c_contiguous and 1 not in a.shape):
            return None     # (NumPy's flag ignores the strides of size-1 dims, which PyTorch keeps)
        return mf.preserved_strides(a.shape, tuple(st // a.itemsize for st in a.strides))
    if memory_format is mf.channels_last or memory_format is mf.channels_last_3d:
        return mf.channels_last_strides(tuple(self.shape), memory_format)
    return None


def _empty_like(self: Any, strides: Any, dtype: Any, device: Any) -> Any:
    return aten.empty_strided(tuple(self.shape), strides, **_new_kw(self, dtype, device))


def empty_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    strides = _like_strides(self, memory_format)
    if strides is not None:
        return _empty_like(self, strides, dtype, device)
    return aten.empty_memory_format(tuple(self.shape), **_new_kw(self, dtype, device))


def zeros_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    strides = _like_strides(self, memory_format)
    if strides is not None:
        return _empty_like(self, strides, dtype, device).zero_()
    return aten.zeros(tuple(self.shape), **_new_kw(self, dtype, device))


def ones_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
              memory_format: Any = None) -> Any:
    strides = _like_strides(self, memory_format)
    if strides is not None:
        return _empty_like(self, strides, dtype, device).fill_(1)
    return aten.ones(tuple(self.shape), **_new_kw(self, dtype, device))


def full_like(self: Any, fill_value: Any, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None, memory_format: Any = None) -> Any:
    strides = _like_strides(self, memory_format)
    if strides is not None:
        return _empty_like(self, strides, dtype, device).fill_(fill_value)
    return aten.full(tuple(self.shape), fill_value, **_new_kw(self, dtype, device))


def randint_high(high: Any, size: Any, generator: Any = None, dtype: Any = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> Any:
    return aten.randint_low(0, high, tuple(size), generator=generator, dtype=dtype, device=device)


def rand_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
              memory_format: Any = None) -> Any:
    return aten.rand(tuple(self.shape), **_new_kw(self, dtype, device))


def randn_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    return aten.randn(tuple(self.shape), **_new_kw(self, dtype, device))


def random_to(self: Any, to: Any, generator: Any = None) -> Any:
    return self.random_(0, to, generator=generator)


def random_default(self: Any, generator: Any = None) -> Any:
    return aten.random__from(self, 0, None, generator=generator)


def empty_permuted(size: Any, physical_layout: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                   pin_memory: Any = None) -> Any:
    """An uninitialized tensor of ``size`` whose dimensions lie in memory in the order ``physical_layout`` (outermost
    first)."""
    size, perm = tuple(size), tuple(physical_layout)
    if len(size) != len(perm):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(perm))):
        raise RuntimeError("Duplicate dim not allowed" if len(set(perm)) != len(perm) else
                           f"Dimension out of range (expected to be in range of [{-len(perm)}, {len(perm) - 1}], "
                           f"but got {max(perm, key=abs)})")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return aten.empty_memory_format(tuple(size[p] for p in perm), dtype=dtype, device=device).permute(inverse)


# randint_like: ``self``'s shape, values in [low, high) drawn as ``random_(low, high)`` on a tensor like it
def randint_like_low_generator_dtype(self: Any, low: Any, high: Any, generator: Any = None, dtype: Any = None,
                                     layout: Any = None, device: Any = None, pin_memory: Any = None,
                                     memory_format: Any = None) -> Any:
    out = aten.empty_memory_format(tuple(self.shape), **_new_kw(self, dtype, device))
    return aten.random__from(out, int(low), int(high), generator=generator)


def randint_like(self: Any, high: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                 pin_memory: Any = None, memory_format: Any = None) -> Any:
    return randint_like_low_generator_dtype(self, 0, high, None, dtype, device=device)


def randint_like_generator(self: Any, high: Any, generator: Any = None, dtype: Any = None, layout: Any = None,
                           device: Any = None, pin_memory: Any = None, memory_format: Any = None) -> Any:
    return randint_like_low_generator_dtype(self, 0, high, generator, dtype, device=device)


def _tensor_high(high: Any) -> int:
    if high.numel() != 1 or high.dim() > 1:
        raise RuntimeError("high must be a scalar tensor and on CPU")
    return int(high.item())


def randint_like_tensor(self: Any, high: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                        pin_memory: Any = None, memory_format: Any = None) -> Any:
    return randint_like_low_generator_dtype(self, 0, _tensor_high(high), None, dtype, device=device)


def randint_like_tensor_generator(self: Any, high: Any, generator: Any = None, dtype: Any = None, layout: Any = None,
                                  device: Any = None, pin_memory: Any = None, memory_format: Any = None) -> Any:
    return randint_like_low_generator_dtype(self, 0, _tensor_high(high), generator, dtype, device=device)


def randint_like_low_dtype(self: Any, low: Any, high: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                           pin_memory: Any = None, memory_format: Any = None) -> Any:
    return randint_like_low_generator_dtype(self, low, high, None, dtype, device=device)
