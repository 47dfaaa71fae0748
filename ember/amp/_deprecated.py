"""The deprecated per-device spellings ``torch.cpu.amp`` / ``torch.cuda.amp`` (``autocast``, ``GradScaler``,
``custom_fwd`` / ``custom_bwd``): thin subclasses and wrappers that warn as PyTorch's do and forward to
``ember.amp``."""
from __future__ import annotations

from typing import Any

import functools
import warnings

from ember.amp import autocast_mode
from ember.amp.grad_scaler import GradScaler
from ember.c10 import dtype as _dt


def _warn(old: str, new: str) -> None:
    warnings.warn(f"`{old}` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def autocast_class(device_type: str, default_dtype: _dt.dtype) -> type:
    class autocast(autocast_mode.autocast):
        def __init__(self, enabled: bool = True, dtype: _dt.dtype = default_dtype, cache_enabled: bool = True) -> None:
            _warn(f"torch.{device_type}.amp.autocast(args...)", f"torch.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    autocast.__module__ = f"ember.{device_type}.amp.autocast_mode"
    autocast.__doc__ = (f"See :class:`ember.autocast`. ``ember.{device_type}.amp.autocast(args...)`` is deprecated: "
                        f"use ``ember.amp.autocast('{device_type}', args...)``.")
    return autocast


def grad_scaler_class(device_type: str) -> type:
    class _GradScaler(GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _warn(f"torch.{device_type}.amp.GradScaler(args...)", f"torch.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    _GradScaler.__name__ = _GradScaler.__qualname__ = "GradScaler"
    _GradScaler.__module__ = f"ember.{device_type}.amp.grad_scaler"
    return _GradScaler


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd`` (deprecated): ``ember.amp.custom_fwd(device_type='cuda')``."""
    _warn("torch.cuda.amp.custom_fwd(args...)", "torch.amp.custom_fwd(args..., device_type='cuda')")
    if fwd is None:
        return functools.partial(autocast_mode.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """``torch.cuda.amp.custom_bwd`` (deprecated): ``ember.amp.custom_bwd(device_type='cuda')``."""
    _warn("torch.cuda.amp.custom_bwd(args...)", "torch.amp.custom_bwd(args..., device_type='cuda')")
    if bwd is None:
        return functools.partial(autocast_mode.custom_bwd, device_type="cuda")
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
