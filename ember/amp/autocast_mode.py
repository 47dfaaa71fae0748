"""``torch.autocast``: run regions of a program in mixed precision (mirrors ``torch/amp/autocast_mode.py``).

The context manager only flips thread-local state; the casting is done by the Autocast dispatch keys' kernels
(Note [Autocast] in ember/amp/autocast_kernels.py).
"""
from __future__ import annotations

from typing import Any, Callable, Literal

import collections.abc
import functools
import warnings

import numpy as np

from ember.amp import autocast_kernels as _k
from ember.c10 import dtype as _dt

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _check_device_type(device_type: str) -> None:
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast exists for ``device_type`` ('cpu', 'cuda', ...)."""
    _check_device_type(device_type)
    return device_type in _k.AUTOCAST_DEVICES


# -- the state functions of the ``torch`` namespace (torch/csrc/autograd/init.cpp)
def _device_arg(device_type: Any, fn: str, legacy: str) -> str:
    if device_type is None:
        return legacy
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}(): argument 'device_type' (position 1) must be str, not {type(device_type).__name__}")
    _check_device_type(device_type)
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (without an argument: CUDA's, PyTorch's legacy
    form)."""
    return _k.is_enabled(_device_arg(device_type, "is_autocast_enabled", "cuda"))


def set_autocast_enabled(device_type: Any, enabled: bool | None = None) -> None:
    """``set_autocast_enabled(device_type, enabled)``; the legacy ``set_autocast_enabled(enabled)`` sets CUDA's."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _k.set_enabled(_device_arg(device_type, "set_autocast_enabled", "cuda"), bool(enabled))


def get_autocast_dtype(device_type: str) -> _dt.dtype:
    device_type = _device_arg(device_type, "get_autocast_dtype", "cuda")
    d = _k.state.dtype.get(device_type)
    if d is None:
        if device_type in ("meta",) or device_type not in _k.AUTOCAST_DEVICES:
            raise RuntimeError("unsupported scalarType")
        return _dt.bfloat16 if device_type in ("xla", "hpu") else _dt.float16
    return d


def set_autocast_dtype(device_type: str, dtype: _dt.dtype) -> None:
    _k.state.dtype[_device_arg(device_type, "set_autocast_dtype", "cuda")] = dtype


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return _k.is_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    _k.set_enabled("cpu", bool(enabled))


def get_autocast_cpu_dtype() -> _dt.dtype:
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return _k.state.dtype["cpu"]


def set_autocast_cpu_dtype(dtype: _dt.dtype) -> None:
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    _k.state.dtype["cpu"] = dtype


def get_autocast_gpu_dtype() -> _dt.dtype:
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return _k.state.dtype["cuda"]


def set_autocast_gpu_dtype(dtype: _dt.dtype) -> None:
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    _k.state.dtype["cuda"] = dtype


def is_autocast_cache_enabled() -> bool:
    return _k.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _k.state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _k.clear_cache()


def autocast_increment_nesting() -> int:
    _k.state.nesting += 1
    return _k.state.nesting


def autocast_decrement_nesting() -> int:
    _k.state.nesting -= 1
    return _k.state.nesting


# -- the context manager
def autocast_decorator(autocast_instance: autocast, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    r"""Run the region (or the decorated function) in mixed precision.

    Inside the region, ops on the device's autocast lists run in an op-specific dtype: matrix products,
    convolutions and attention in ``dtype`` (bfloat16 on the CPU and float16 on CUDA by default), losses,
    reductions and numerically sensitive ops in float32, and ops like ``cat`` in the widest input type. Other ops
    run in their inputs' types. Backward passes should run outside the region; they use the dtypes chosen in the
    forward pass. The state is thread-local.

    Args:
        device_type (str): 'cpu' or 'cuda' (PyTorch's other device types are accepted and have no backend here).
        dtype (ember.dtype, optional): the lower precision; ``ember.get_autocast_dtype(device_type)`` if None.
        enabled (bool): whether autocasting is on in the region. Default: True.
        cache_enabled (bool, optional): whether the casts of weights are cached inside the region.

    Example::

        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     y = model(x)          # linear layers run in bfloat16, the loss in float32
        >>> y.dtype
        ember.bfloat16
    """

    def __init__(self, device_type: str, dtype: _dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        supported = [_dt.bfloat16, _dt.float16]
        name = self.device.upper()
        if enabled:
            if self.device == "cuda":
                from ember import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                                  stacklevel=2)
                    enabled = False
                elif self.fast_dtype is _dt.bfloat16 and not cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to "
                                       "float16.")
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of " + ", ".join(map(str, supported))
                              + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> Literal[False]:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            "Did you mean to use autocast as a context manager? For example:\n"
                            "    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")
        return autocast_decorator(self, func)


def _cast(value: Any, device_type: str, dtype: _dt.dtype) -> Any:
    """Cast the floating-point tensors of ``device_type`` (not float64) inside ``value`` to ``dtype``."""
    from ember._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dt.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str,
               cast_inputs: _dt.dtype | None = None) -> Any:
    """Decorate the ``forward`` of a custom ``autograd.Function``: with ``cast_inputs``, inside an autocast region
    the floating-point tensor arguments are cast to it and ``forward`` runs with autocast off; without, ``forward``
    runs in the current autocast state. Outside a region it is a no-op."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    f = fwd

    @functools.wraps(f)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return f(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return f(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return f(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Any:
    """Decorate the ``backward`` of a custom ``autograd.Function``: it runs in the autocast state its ``forward``
    ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    b = bwd

    @functools.wraps(b)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return b(*args, **kwargs)
    return decorate_bwd


def _enter_autocast(*vals: Any) -> autocast:
    """Enter an autocast region without a ``with`` block (what traced graphs call); ``_exit_autocast`` leaves it."""
    mode = autocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode: autocast) -> None:
    mode.__exit__(None, None, None)
