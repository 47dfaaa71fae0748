"""Window functions for spectral analysis (``aten/src/ATen/native/TensorFactories.cpp``): ``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``.

Each is computed as PyTorch computes it, in the requested dtype (default: the default dtype), from
``arange``: a *periodic* window of length N is the first N points of the symmetric window of length N + 1
(what ``stft`` wants); a window of length 1 is ``[1]``, of length 0 empty. As in PyTorch's Python API, they
take no ``out=``.
"""
from __future__ import annotations

import math
from typing import Any

from ember._generated import aten
from ember.c10.dtype import cpp_type_name
from ember.c10 import dtype as _dt

__all__ = [f"{name}{overload}" for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                            "kaiser_window") for overload in ("", "_periodic")]
__all__ += ["hamming_window_periodic_alpha", "hamming_window_periodic_alpha_beta", "kaiser_window_beta"]


def _checks(name: str, window_length: int, dtype: Any, device: Any) -> Any:
    """``window_function_checks``: a floating (or complex) dtype and a non-negative length."""
    dtype = dtype or _dt.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions("
                           f"dtype={cpp_type_name(dtype.name)}, device={device or 'cpu'}, layout=Strided (default), "
                           "requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    return dtype


def _window(name: str, window_length: int, periodic: bool, dtype: Any, device: Any, body: Any) -> Any:
    """The shared shape of every window: the edge cases, the periodic extension, ``body(n, arange(n))``."""
    dtype = _checks(name, window_length, dtype, device)
    if window_length == 0:
        return aten.empty_memory_format((0,), dtype=dtype, device=device)
    if window_length == 1:
        return aten.ones((1,), dtype=dtype, device=device)
    n = window_length + 1 if periodic else window_length
    w = body(n, aten.arange_start_step(0, n, 1, dtype=dtype, device=device))
    return aten.narrow(w, 0, 0, n - 1) if periodic else w


def _hamming(n: int, k: Any, alpha: float, beta: float) -> Any:
    return k.mul_(math.pi * 2.0 / (n - 1)).cos_().mul_(-beta).add_(alpha)


def hamming_window_periodic_alpha_beta(window_length: int, periodic: bool, alpha: float, beta: float,
                                       dtype: Any = None, layout: Any = None, device: Any = None,
                                       pin_memory: Any = None) -> Any:
    """``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device,
                   lambda n, k: _hamming(n, k, alpha, beta))


def hamming_window_periodic_alpha(window_length: int, periodic: bool, alpha: float, dtype: Any = None,
                                  layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    return hamming_window_periodic_alpha_beta(window_length, periodic, alpha, 0.46, dtype, layout, device)


def hamming_window_periodic(window_length: int, periodic: bool, dtype: Any = None, layout: Any = None,
                            device: Any = None, pin_memory: Any = None) -> Any:
    return hamming_window_periodic_alpha_beta(window_length, periodic, 0.54, 0.46, dtype, layout, device)


def hamming_window(window_length: int, dtype: Any = None, layout: Any = None, device: Any = None,
                   pin_memory: Any = None) -> Any:
    return hamming_window_periodic_alpha_beta(window_length, True, 0.54, 0.46, dtype, layout, device)


def hann_window_periodic(window_length: int, periodic: bool, dtype: Any = None, layout: Any = None,
                         device: Any = None, pin_memory: Any = None) -> Any:
    """The Hamming window with ``alpha = beta = 1/2``."""
    return _window("hann_window", window_length, periodic, dtype, device, lambda n, k: _hamming(n, k, 0.5, 0.5))


def hann_window(window_length: int, dtype: Any = None, layout: Any = None, device: Any = None,
                pin_memory: Any = None) -> Any:
    return hann_window_periodic(window_length, True, dtype, layout, device)


def _blackman(n: int, k: Any) -> Any:
    k = k.mul_(math.pi / (n - 1))
    return (k * 4).cos_().mul_(0.08) - (k * 2).cos_().mul_(0.5) + 0.42


def blackman_window_periodic(window_length: int, periodic: bool, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: Any = None) -> Any:
    """``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, _blackman)


def blackman_window(window_length: int, dtype: Any = None, layout: Any = None, device: Any = None,
                    pin_memory: Any = None) -> Any:
    return blackman_window_periodic(window_length, True, dtype, layout, device)


def _bartlett(n: int, k: Any) -> Any:
    k = k.mul_(2.0 / (n - 1))
    first_half = ((n - 1) >> 1) + 1
    aten.narrow(k, 0, first_half, n - first_half).mul_(-1).add_(2)
    return k


def bartlett_window_periodic(window_length: int, periodic: bool, dtype: Any = None, layout: Any = None,
                             device: Any = None, pin_memory: Any = None) -> Any:
    """The triangle ``1 - |2k / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, _bartlett)


def bartlett_window(window_length: int, dtype: Any = None, layout: Any = None, device: Any = None,
                    pin_memory: Any = None) -> Any:
    return bartlett_window_periodic(window_length, True, dtype, layout, device)


def kaiser_window_beta(window_length: int, periodic: bool, beta: float, dtype: Any = None, layout: Any = None,
                       device: Any = None, pin_memory: Any = None) -> Any:
    """``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)`` with ``a = (N - 1) / 2``."""
    def body(n: int, k: Any) -> Any:
        a = (n - 1) / 2.0
        inside = aten.rsub_Scalar(((k - a) / a).pow(2), 1).abs().sqrt() * beta
        return aten.i0(inside) / aten.i0(aten.full((), beta, dtype=k.dtype, device=k.device))
    return _window("kaiser_window", window_length, periodic, dtype, device, body)


def kaiser_window_periodic(window_length: int, periodic: bool, dtype: Any = None, layout: Any = None,
                           device: Any = None, pin_memory: Any = None) -> Any:
    return kaiser_window_beta(window_length, periodic, 12.0, dtype, layout, device)


def kaiser_window(window_length: int, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> Any:
    return kaiser_window_beta(window_length, True, 12.0, dtype, layout, device)

