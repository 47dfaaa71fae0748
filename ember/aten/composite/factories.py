"""Factory overloads written in other factories (``TensorFactories.cpp``): arange without start or step,
``new_*`` and ``*_like`` (dtype and device from ``self`` unless given), ``random_`` defaults."""
from __future__ import annotations

from typing import Any

from ember._generated import aten


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
def empty_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    return aten.empty_memory_format(tuple(self.shape), **_new_kw(self, dtype, device))


def zeros_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
               memory_format: Any = None) -> Any:
    return aten.zeros(tuple(self.shape), **_new_kw(self, dtype, device))


def ones_like(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
              memory_format: Any = None) -> Any:
    return aten.ones(tuple(self.shape), **_new_kw(self, dtype, device))


def full_like(self: Any, fill_value: Any, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None, memory_format: Any = None) -> Any:
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
