"""Factory overloads written in other factories (``TensorFactories.cpp``): arange without start or step,
``new_*`` (dtype and device from ``self``), ``*_like`` random tensors, ``random_`` defaults."""
from __future__ import annotations

from ember._generated import aten


def arange_end(end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange_start_step(0, end, 1, dtype=dtype, device=device)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange_start_step(start, end, 1, dtype=dtype, device=device)


def _new_kw(self, dtype, device):
    return dict(dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty_memory_format(tuple(size), **_new_kw(self, dtype, device))


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.zeros(tuple(size), **_new_kw(self, dtype, device))


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.ones(tuple(size), **_new_kw(self, dtype, device))


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full(tuple(size), fill_value, **_new_kw(self, dtype, device))


def randint_high(high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.randint_low(0, high, tuple(size), generator=generator, dtype=dtype, device=device)


def rand_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.rand(tuple(self.shape), **_new_kw(self, dtype, device))


def randn_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.randn(tuple(self.shape), **_new_kw(self, dtype, device))


def random_to(self, to, generator=None):
    return self.random_(0, to, generator=generator)


def random_default(self, generator=None):
    return aten.random__from(self, 0, None, generator=generator)
