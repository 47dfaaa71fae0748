"""``torch.signal.windows``: SciPy-style window functions of length ``M`` (``sym=False`` gives the periodic window
for spectral analysis), each evaluated with ember's ops on ``linspace`` points as PyTorch evaluates it, so the
values agree in float32 too."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _check(name: str, M: int, dtype: Any, layout: Any) -> Any:
    dtype = ember.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool, ones_at_1: bool = True) -> Any:
    """The windows of length 0 (empty) and, for most, 1 (a single 1)."""
    if M == 0:
        return ember.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1 and ones_at_1:
        return ember.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _points(start: Any, step: Any, M: int, dtype: Any, device: Any, requires_grad: bool) -> Any:
    return ember.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device, requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype: Any = None,
                layout: Any = ember.strided, device: Any = None, requires_grad: bool = False) -> Any:
    """``exp(-|n - center| / tau)``."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
           requires_grad: bool = False) -> Any:
    """``sin(pi (n + 1/2) / M)`` (the sine window)."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return ember.sin(_points(0.5 * step, step, M, dtype, device, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
             device: Any = None, requires_grad: bool = False) -> Any:
    """``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _points(start * step, step, M, dtype, device, requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
           device: Any = None, requires_grad: bool = False) -> Any:
    """``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    b = ember.tensor(beta, dtype=dtype, device=device)
    step = 2.0 * b / (M if not sym else M - 1)
    end = ember.minimum(b, -b + (M - 1) * step)
    k = ember.linspace(-b, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return ember.i0(ember.sqrt(b * b - ember.pow(k, 2))) / ember.i0(b)


def general_cosine(M: int, *, a: Iterable[float], sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
                   device: Any = None, requires_grad: bool = False) -> Any:
    """``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    dtype = _check("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, step, M, dtype, device, requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None, layout: Any = ember.strided,
                    device: Any = None, requires_grad: bool = False) -> Any:
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
            requires_grad: bool = False) -> Any:
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
         requires_grad: bool = False) -> Any:
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
             requires_grad: bool = False) -> Any:
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
            requires_grad: bool = False) -> Any:
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = ember.strided, device: Any = None,
             requires_grad: bool = False) -> Any:
    """The triangular window ``1 - |2n / (M - 1) - 1|``."""
    dtype = _check("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    step = 2 / (M if not sym else M - 1)
    return 1 - ember.abs(_points(-1, step, M, dtype, device, requires_grad))
