"""Discrete Fourier transforms (``aten/src/ATen/native/mkl/SpectralOps.cpp``): the three kernels every
``torch.fft`` function is written in.

* ``_fft_c2c(self, dim, normalization, forward)``: complex to complex over ``dim``;
* ``_fft_r2c(self, dim, normalization, onesided)``: real to complex, forward; ``onesided`` keeps only the
  ``n // 2 + 1`` non-redundant outputs of the last dim of ``dim`` (the rest are their complex conjugates);
* ``_fft_c2r(self, dim, normalization, last_dim_size)``: the inverse of a onesided transform: complex
  Hermitian-symmetric input to a real output whose last transformed dim has ``last_dim_size`` points.

``normalization`` is PyTorch's ``fft_norm_mode``: 0 none, 1 divide by sqrt(n), 2 divide by n, where n is the
product of the signal sizes.  The work is done by pocketfft, through ``scipy.fft`` when SciPy is installed
(several times faster than ``numpy.fft`` for complex float32 data, and multithreaded: measured in
``docs/fft.md``), else ``numpy.fft``; on CUDA by ``cupy.fft`` (cuFFT).

As PyTorch's CPU kernels do, the transformed dims are moved innermost before the transform, so the result is
laid out with them last in memory and viewed back in the input's dim order (``fft(x, dim=1)`` of a contiguous
``(3, 4, 5)`` input has strides ``(20, 1, 4)``, as in PyTorch).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten import parallel
from ember.aten.kernels._common import Array, meta_shape, type_name

__all__ = ["_fft_c2c", "_fft_r2c", "_fft_c2r"]

# the norm= of the transform functions that scales like fft_norm_mode on a forward / an inverse transform
_FORWARD_NORM = ("backward", "ortho", "forward")
_INVERSE_NORM = ("forward", "ortho", "backward")

_scipy_fft: Any = None


def fft_library(xp: Any) -> tuple[Any, dict[str, Any]]:
    """The FFT module for ``xp`` and the keyword arguments its transforms take (SciPy's ``workers``)."""
    global _scipy_fft
    if xp is not np:
        return xp.fft, {}
    if _scipy_fft is None:
        try:
            import scipy.fft as sf  # type: ignore[import-untyped, unused-ignore]  # optional: numpy.fft serves without it
            _scipy_fft = sf
        except ImportError:
            _scipy_fft = False
    if _scipy_fft is False:
        return np.fft, {}
    return _scipy_fft, {"workers": parallel.get_num_threads()}


def _innermost(xp: Any, x: Array, dim: Any) -> tuple[Array, tuple[int, ...], list[int]]:
    """``x`` with the dims of ``dim`` moved last (in ``dim``'s order), the axes they now have, and the
    permutation that restores the input's dim order."""
    nd = x.ndim
    dims = [d % nd for d in dim]
    rest = [d for d in range(nd) if d not in dims]
    order = rest + dims
    if order == list(range(nd)):
        return x, tuple(range(nd - len(dims), nd)), order
    inverse = [0] * nd
    for i, d in enumerate(order):
        inverse[d] = i
    return xp.transpose(x, order), tuple(range(len(rest), nd)), inverse


def _restore(xp: Any, r: Array, inverse: list[int]) -> Any:
    return r if inverse == list(range(r.ndim)) else xp.transpose(r, inverse)


def _complex_dtype(npdt: Any) -> Any:
    return np.dtype(np.complex128 if npdt == np.float64 else np.complex64)


def _real_dtype(npdt: Any) -> Any:
    return np.dtype(np.float64 if npdt == np.complex128 else np.float32)


def _check_real(self: Array, name: str) -> None:
    if self.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}: Unsupported dtype {type_name(self.dtype)}")


def _check_complex(self: Array, name: str) -> None:
    if self.dtype not in (np.complex64, np.complex128):
        raise RuntimeError(f"{name}: expected a complex input tensor, but got {type_name(self.dtype)}")


def _c2c_shape(self: Any, dim: Any, normalization: Any, forward: Any) -> Any:
    return self.shape, self.dtype


def _r2c_shape(self: Any, dim: Any, normalization: Any, onesided: Any) -> Any:
    shape = list(self.shape)
    if onesided and dim:
        last = dim[-1] % self.ndim
        shape[last] = shape[last] // 2 + 1
    return tuple(shape), _complex_dtype(self.dtype)


def _c2r_shape(self: Any, dim: Any, normalization: Any, last_dim_size: Any) -> Any:
    shape = list(self.shape)
    shape[dim[-1] % self.ndim] = last_dim_size
    return tuple(shape), _real_dtype(self.dtype)


@meta_shape(_c2c_shape)
def _fft_c2c(xp: Any, self: Array, dim: Any, normalization: Any, forward: Any) -> Any:
    _check_complex(self, "_fft_c2c")
    if not dim or self.size == 0:
        return self.copy()
    lib, kw = fft_library(xp)
    x, axes, inverse = _innermost(xp, self, dim)
    if forward:
        r = lib.fftn(x, axes=axes, norm=_FORWARD_NORM[normalization], **kw)
    else:
        r = lib.ifftn(x, axes=axes, norm=_INVERSE_NORM[normalization], **kw)
    return _restore(xp, r.astype(self.dtype, copy=False), inverse)


@meta_shape(_r2c_shape)
def _fft_r2c(xp: Any, self: Array, dim: Any, normalization: Any, onesided: Any) -> Any:
    _check_real(self, "_fft_r2c")
    shape, cdt = _r2c_shape(self, dim, normalization, onesided)
    if not dim or self.size == 0:
        return xp.zeros(shape, cdt) if self.size == 0 else self.astype(cdt)
    lib, kw = fft_library(xp)
    x, axes, inverse = _innermost(xp, self, dim)
    transform = lib.rfftn if onesided else lib.fftn
    r = transform(x, axes=axes, norm=_FORWARD_NORM[normalization], **kw)
    return _restore(xp, r.astype(cdt, copy=False), inverse)


@meta_shape(_c2r_shape)
def _fft_c2r(xp: Any, self: Array, dim: Any, normalization: Any, last_dim_size: Any) -> Any:
    _check_complex(self, "_fft_c2r")
    shape, rdt = _c2r_shape(self, dim, normalization, last_dim_size)
    if self.size == 0 or last_dim_size == 0:
        return xp.zeros(shape, rdt)
    lib, kw = fft_library(xp)
    x, axes, inverse = _innermost(xp, self, dim)
    s = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    r = lib.irfftn(x, s=s, axes=axes, norm=_INVERSE_NORM[normalization], **kw)
    return _restore(xp, r.astype(rdt, copy=False), inverse)
