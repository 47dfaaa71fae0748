"""``torch.fft`` written in the three transform kernels ``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r``
(``aten/src/ATen/native/SpectralOps.cpp``): argument checks and defaults, dtype promotion, signal lengths
(``n`` / ``s``: the input is cut or zero-padded to them), the ``norm`` modes, and the Hermitian transforms
(``hfft``, ``ihfft``) built from the others with conjugations.  Also ``fftfreq``, ``rfftfreq``, ``fftshift`` and
``ifftshift``.

Note [FFT norm modes]: ``norm`` names which direction is scaled: "backward" (the default) leaves the forward
transform unscaled and divides the inverse by n, "forward" the opposite, "ortho" divides both by sqrt(n).  The
kernels take PyTorch's ``fft_norm_mode`` integer for what the transform at hand must do: 0 nothing, 1 divide by
sqrt(n), 2 divide by n.
"""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.aten.kernels._common import wrap_dim
from ember.aten.math_bits import values_of
from ember.aten.wrap import write_out
from ember.c10.dtype import scalar_type_name as _dt_name
from ember.c10 import dtype as _dt
from ember.c10.exceptions import warn_once

__all__ = [f"fft_{k}{s}{o}" for k in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") for s in ("", "2", "n")
           for o in ("", "_out")]
__all__ += ["fft_fftfreq", "fft_fftfreq_out", "fft_rfftfreq", "fft_rfftfreq_out", "fft_fftshift", "fft_ifftshift",
            "stft", "stft_center", "istft"]

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _norm_mode(norm: Any, forward: bool) -> int:
    """Note [FFT norm modes]."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x: Any, require_complex: bool = False) -> Any:
    """Integral inputs compute in the default float dtype; only float and double (and their complex types)
    have CPU kernels (``promote_tensor_fft``)."""
    t = x.dtype
    if t.is_complex:
        return x
    if not t.is_floating_point:
        t = _dt.get_default_dtype()
    if t not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"Unsupported dtype {_dt_name(t)}")
    if require_complex:
        t = t.to_complex()
    return x if t is x.dtype else x.to(t)


def _resize(x: Any, dims: Any, sizes: Any) -> Any:
    """Cut or zero-pad ``x`` along each of ``dims`` to its size in ``sizes`` (-1: leave it)
    (``resize_fft_input``)."""
    pad = [0] * (2 * x.dim())
    must_pad = False
    for d, n in zip(dims, sizes):
        if n == -1:
            continue
        have = x.shape[d]
        if have < n:
            must_pad = True
            pad[len(pad) - 2 * d - 1] = n - have
        elif have > n:
            x = aten.slice_Tensor(x, d, 0, n, 1)
    return aten.constant_pad_nd(x, tuple(pad), 0) if must_pad else x


def _write(out: Any, result: Any) -> Any:
    """``out=``: the result copied into ``out``, resized as PyTorch resizes outputs."""
    return write_out(out, values_of(result)._data, "fft")


# the transform kernels, writing into ``out`` when one is given (``fft_*_maybe_out``)
def _c2c_maybe_out(out: Any, x: Any, dims: Any, mode: int, forward: bool) -> Any:
    if out is not None:
        return aten._fft_c2c_out(x, tuple(dims), mode, forward, out=out)
    return aten._fft_c2c(x, tuple(dims), mode, forward)


def _r2c_maybe_out(out: Any, x: Any, dims: Any, mode: int, onesided: bool) -> Any:
    if out is not None:
        return aten._fft_r2c_out(x, tuple(dims), mode, onesided, out=out)
    return aten._fft_r2c(x, tuple(dims), mode, onesided)


def _c2r_maybe_out(out: Any, x: Any, dims: Any, mode: int, last_dim_size: int) -> Any:
    if out is not None:
        return aten._fft_c2r_out(x, tuple(dims), mode, last_dim_size, out=out)
    return aten._fft_c2r(x, tuple(dims), mode, last_dim_size)


def _conj_maybe_out(out: Any, x: Any) -> Any:
    return aten.conj_physical_out(x, out=out) if out is not None else aten.conj(x)   # (a lazy conjugate)


# ---- one-dimensional transforms (fft_c2c / fft_r2c / fft_c2r of SpectralOps.cpp)
def _c2c(name: str, out: Any, x: Any, n: Any, dim: int, norm: Any, forward: bool) -> Any:
    if not x.is_complex():
        raise RuntimeError(f"{name} expects a complex input tensor, but got {_dt_name(x.dtype)}")
    d = wrap_dim(dim, x.dim()) if x.dim() else _no_dim(dim)
    n_ = x.shape[d] if n is None else n
    if n_ < 1:
        raise RuntimeError(f"Invalid number of data points ({n_}) specified")
    if n is not None:
        x = _resize(x, (d,), (n,))
    mode = _norm_mode(norm, forward)
    return _c2c_maybe_out(out, x, (d,), mode, forward)


def _no_dim(dim: int) -> int:
    raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _r2c(name: str, out: Any, x: Any, n: Any, dim: int, norm: Any, forward: bool, onesided: bool) -> Any:
    if x.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got {_dt_name(x.dtype)}")
    if out is not None and not out.is_complex():
        raise RuntimeError(f"{name} expects a complex output tensor, but got {_dt_name(out.dtype)}")
    x = _promote(x)
    d = wrap_dim(dim, x.dim()) if x.dim() else _no_dim(dim)
    n_ = x.shape[d] if n is None else n
    if n_ < 1:
        raise RuntimeError(f"Invalid number of data points ({n_}) specified")
    if n is not None:
        x = _resize(x, (d,), (n,))
    mode = _norm_mode(norm, forward)
    if forward:
        return _r2c_maybe_out(out, x, (d,), mode, onesided)
    # an inverse real-to-complex transform is the conjugate of the forward one
    return _conj_maybe_out(out, aten._fft_r2c(x, (d,), mode, onesided))


def _c2r(name: str, out: Any, x: Any, n: Any, dim: int, norm: Any, forward: bool) -> Any:
    if out is not None and not out.is_floating_point():
        raise RuntimeError(f"{name} expects a floating point output tensor, but got {_dt_name(out.dtype)}")
    x = _promote(x, require_complex=True)
    d = wrap_dim(dim, x.dim()) if x.dim() else _no_dim(dim)
    n_ = 2 * (x.shape[d] - 1) if n is None else n
    if n_ < 1:
        raise RuntimeError(f"Invalid number of data points ({n_}) specified")
    if n is not None:
        x = _resize(x, (d,), (n_ // 2 + 1,))
    mode = _norm_mode(norm, forward)
    if forward:  # a forward complex-to-real transform is the inverse one of the conjugate
        x = aten.conj(x)
    return _c2r_maybe_out(out, x, (d,), mode, n_)


def fft_fft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    if self.is_complex():
        return _c2c("fft", out, self, n, dim, norm, True)
    return _r2c("fft", out, self, n, dim, norm, True, False)


def fft_ifft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    if self.is_complex():
        return _c2c("ifft", out, self, n, dim, norm, False)
    return _r2c("ifft", out, self, n, dim, norm, False, False)


def fft_rfft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    return _r2c("rfft", out, self, n, dim, norm, True, True)


def fft_irfft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    return _c2r("irfft", out, self, n, dim, norm, False)


def fft_hfft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    return _c2r("hfft", out, self, n, dim, norm, True)


def fft_ihfft(self: Any, n: Any = None, dim: int = -1, norm: Any = None, out: Any = None) -> Any:
    return _r2c("ihfft", out, self, n, dim, norm, False, True)


# ---- n-dimensional transforms
def _shape_and_dims(x: Any, s: Any, dim: Any) -> tuple[list[int], list[int]]:
    """The signal sizes and transformed dims of an n-dim transform (``canonicalize_fft_shape_and_dim_args``):
    ``dim`` defaults to the last ``len(s)`` dims, or to every dim; -1 in ``s`` means the input's size."""
    ndim = x.dim()
    dims: list[int] = []
    if dim is not None:
        dims = _wrap_dims(dim, ndim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dim is None:
        dims = list(range(ndim))
        shape = list(x.shape)
    else:
        shape = [x.shape[d] for d in dims]
    for n in shape:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return shape, dims


def _wrap_dims(dim: Any, ndim: int) -> list[int]:
    """Each of ``dim`` wrapped (duplicates allowed: the callers say what they make of them)."""
    return [wrap_dim(d, ndim) for d in dim]


def _c2r_shape_and_dims(name: str, x: Any, s: Any, dim: Any) -> tuple[list[int], list[int], int]:
    """As ``_shape_and_dims``, plus the output length of the last (Hermitian) dim; the input is then taken
    at ``last // 2 + 1`` points along it (``canonicalize_fft_c2r_shape_and_dim_args``)."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _fftn_c2c(out: Any, x: Any, s: Any, dim: Any, norm: Any, forward: bool) -> Any:
    shape, dims = _shape_and_dims(x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    mode = _norm_mode(norm, forward)
    return _c2c_maybe_out(out, x, dims, mode, forward)


def _rfftn(out: Any, x: Any, s: Any, dim: Any, norm: Any) -> Any:
    if x.is_complex():
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {_dt_name(x.dtype)}")
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(x), dims, shape)
    mode = _norm_mode(norm, True)
    return _r2c_maybe_out(out, x, dims, mode, True)


def _irfftn(out: Any, x: Any, s: Any, dim: Any, norm: Any) -> Any:
    shape, dims, last = _c2r_shape_and_dims("irfftn", x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    mode = _norm_mode(norm, False)
    return _c2r_maybe_out(out, x, dims, mode, last)


def _hfftn(out: Any, x: Any, s: Any, dim: Any, norm: Any) -> Any:
    """A Hermitian-symmetric signal to its real spectrum: forward c2c over all but the last dim, then the
    conjugate through c2r over the last."""
    shape, dims, last = _c2r_shape_and_dims("hfftn", x, s, dim)
    x = _resize(_promote(x, require_complex=True), dims, shape)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = aten._fft_c2c(x, tuple(dims[:-1]), mode, True)
    x = aten.conj(x)
    return _c2r_maybe_out(out, x, (dims[-1],), mode, last)


def _ihfftn(out: Any, x: Any, s: Any, dim: Any, norm: Any) -> Any:
    """The inverse of ``hfftn``: a onesided r2c over the last dim, conjugated (an inverse transform of a real
    signal), then the inverse c2c over the rest."""
    if x.is_complex():
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {_dt_name(x.dtype)}")
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(x), dims, shape)
    mode = _norm_mode(norm, False)
    r = aten._fft_r2c(x, (dims[-1],), mode, True)
    if len(dims) == 1:
        return _conj_maybe_out(out, r)
    r = aten.conj_physical(r)
    return _c2c_maybe_out(out, r, dims[:-1], mode, False)


def fft_fftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _fftn_c2c(out, self, s, dim, norm, True)


def fft_ifftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _fftn_c2c(out, self, s, dim, norm, False)


def fft_rfftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _rfftn(out, self, s, dim, norm)


def fft_irfftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _irfftn(out, self, s, dim, norm)


def fft_hfftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _hfftn(out, self, s, dim, norm)


def fft_ihfftn(self: Any, s: Any = None, dim: Any = None, norm: Any = None, out: Any = None) -> Any:
    return _ihfftn(out, self, s, dim, norm)


# the 2-dim transforms are the n-dim ones over dim=(-2, -1) by default
def fft_fft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _fftn_c2c(out, self, s, dim, norm, True)


def fft_ifft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _fftn_c2c(out, self, s, dim, norm, False)


def fft_rfft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _rfftn(out, self, s, dim, norm)


def fft_irfft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _irfftn(out, self, s, dim, norm)


def fft_hfft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _hfftn(out, self, s, dim, norm)


def fft_ihfft2(self: Any, s: Any = None, dim: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    return _ihfftn(out, self, s, dim, norm)


# the out= overloads: the same computation, the result written into ``out``
def _out_of(fn: Any) -> Any:
    def with_out(self: Any, s: Any, dim: Any, norm: Any, out: Any) -> Any:
        return fn(self, s, dim, norm, out)
    with_out.__name__ = with_out.__qualname__ = fn.__name__ + "_out"
    return with_out


for _fn in (fft_fft, fft_ifft, fft_rfft, fft_irfft, fft_hfft, fft_ihfft, fft_fftn, fft_ifftn, fft_rfftn,
            fft_irfftn, fft_hfftn, fft_ihfftn, fft_fft2, fft_ifft2, fft_rfft2, fft_irfft2, fft_hfft2, fft_ihfft2):
    globals()[_fn.__name__ + "_out"] = _out_of(_fn)


# ---- sample frequencies and shifts
def _check_freq_dtype(dtype: Any) -> None:
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("fftfreq requires a floating point or complex dtype")


def _fftfreq(n: int, d: float, dtype: Any, device: Any) -> Any:
    r = aten.arange_start_step(0, n, 1, dtype=dtype, device=device)
    r[(n + 1) // 2:] = aten.arange_start_step(-(n // 2), 0, 1, dtype=dtype, device=device)
    return r.mul_(1.0 / (n * d))


def fft_fftfreq(n: int, d: float = 1.0, dtype: Any = None, layout: Any = None, device: Any = None,
                pin_memory: Any = None) -> Any:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``: ``[0, 1, ..., -(n // 2),
    ..., -1] / (d * n)``."""
    dtype = dtype or _dt.get_default_dtype()
    _check_freq_dtype(dtype)
    return _fftfreq(n, d, dtype, device)


def fft_fftfreq_out(n: int, d: float = 1.0, out: Any = None) -> Any:
    _check_freq_dtype(out.dtype)
    return _write(out, _fftfreq(n, d, out.dtype, out.device))


def _rfftfreq(n: int, d: float, dtype: Any, device: Any) -> Any:
    return aten.arange_start_step(0, n // 2 + 1, 1, dtype=dtype, device=device).mul_(1.0 / (n * d))


def fft_rfftfreq(n: int, d: float = 1.0, dtype: Any = None, layout: Any = None, device: Any = None,
                 pin_memory: Any = None) -> Any:
    """The sample frequencies of ``rfft`` on ``n`` points: ``[0, 1, ..., n // 2] / (d * n)``."""
    dtype = dtype or _dt.get_default_dtype()
    _check_freq_dtype(dtype)
    return _rfftfreq(n, d, dtype, device)


def fft_rfftfreq_out(n: int, d: float = 1.0, out: Any = None) -> Any:
    _check_freq_dtype(out.dtype)
    return _write(out, _rfftfreq(n, d, out.dtype, out.device))


def _shift(x: Any, dim: Any, inverse: bool) -> Any:
    dims = list(range(x.dim())) if dim is None else _wrap_dims(dim, x.dim())
    shifts = tuple((x.shape[d] + 1) // 2 if inverse else x.shape[d] // 2 for d in dims)
    return aten.roll(x, shifts, tuple(dims))


def fft_fftshift(self: Any, dim: Any = None) -> Any:
    """The zero-frequency term moved to the centre: a roll by ``n // 2`` along each of ``dim`` (all dims)."""
    return _shift(self, dim, False)


def fft_ifftshift(self: Any, dim: Any = None) -> Any:
    """The inverse of ``fftshift``: a roll by ``(n + 1) // 2``."""
    return _shift(self, dim, True)


# ---- the short-time Fourier transform (stft / istft of SpectralOps.cpp)

_NO_WINDOW = {
    "stft": "A window was not provided. A rectangular window will be applied,which is known to cause spectral "
            "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
            "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
            "`window=torch.ones(n_fft, device=<device>)`.",
    "istft": "A window was not provided. A rectangular window will be applied.Please provide the same window used by "
             "stft to make the inversion lossless.To suppress this warning and use a rectangular window, explicitly "
             "set `window=torch.ones(n_fft, device=<device>)`.",
}


def _opt(v: Any) -> str:
    return "None" if v is None else str(int(v) if isinstance(v, bool) else v)


def _sizes(t: Any) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _window_repr(window: Any) -> str:
    return "None" if window is None else f"torch.{_dt_name(window.dtype)}Tensor{{{_sizes(window)}}}"


def stft_center(self: Any, n_fft: int, hop_length: Any = None, win_length: Any = None, window: Any = None,
                center: bool = True, pad_mode: str = "reflect", normalized: bool = False, onesided: Any = None,
                return_complex: Any = None, align_to_window: Any = None) -> Any:
    """``torch.stft``: with ``center``, the signal is first padded by ``n_fft // 2`` on both sides (``pad_mode``),
    so frame t is centred on sample ``t * hop_length``."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        nd = self.dim()
        pad = n_fft // 2
        x = aten.pad(self.view((1,) * (3 - nd) + tuple(self.shape)), (pad, pad), pad_mode, None)
        self = x.view(tuple(x.shape[-nd:]))
    return stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex, align_to_window)


def stft(self: Any, n_fft: int, hop_length: Any = None, win_length: Any = None, window: Any = None,
         normalized: bool = False, onesided: Any = None, return_complex: Any = None,
         align_to_window: Any = None) -> Any:
    """Fourier transforms of the frames ``self[..., t * hop : t * hop + n_fft]`` times the window (zero-padded to
    ``n_fft`` in its centre), as ``(batch?, n_fft // 2 + 1 or n_fft, frames)``."""
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        warn_once("stft", _NO_WINDOW["stft"])
    complex_out = self.is_complex() or (window is not None and window.is_complex())
    if return_complex is None and not complex_out:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    want_complex = complex_out if return_complex is None else return_complex
    if not want_complex:
        warn_once("stft_real", "stft with return_complex=False is deprecated. In a future pytorch release, stft "
                   "will return complex tensors for all inputs, and return_complex=False will raise an error.\nNote: "
                   "you can still call torch.view_as_real on the complex output to recover the old return format.")

    def fail(msg: str) -> Any:
        raise RuntimeError(
            f"stft(torch.{_dt_name(self.dtype)}Tensor{_sizes(self)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, normalized={int(normalized)}, "
            f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
            f"align_to_window={_opt(align_to_window)}) : {msg}")
    if not (self.is_floating_point() or self.is_complex()):
        fail("expected a tensor of floating point or complex values")
    if self.dim() not in (1, 2):
        fail("expected a 1D or 2D tensor")
    x = self.unsqueeze(0) if self.dim() == 1 else self
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{_sizes(window)}")
    left = (n_fft - win) // 2
    if align_to_window:  # frames of win_length samples, each placed at the centre of its n_fft points
        frames = aten.unfold(x, 1, win, hop)
        if window is not None:
            frames = frames * window
        frames = aten.constant_pad_nd(frames, (left, n_fft - win - left), 0)
    else:
        if win < n_fft:
            w = aten.zeros((n_fft,), dtype=(window if window is not None else x).dtype, device=x.device)
            inner = aten.narrow(w, 0, left, win)
            if window is not None:
                inner.copy_(window)
            else:
                inner.fill_(1.0)
            window = w
        n_frames = 1 + (length - n_fft) // hop  # the frames as one strided view (PyTorch's as_strided)
        st = x.stride()
        frames = aten.as_strided(x, (x.shape[0], n_frames, n_fft), (st[0], hop * st[1], st[1]), x.storage_offset())
        if window is not None:
            frames = frames * window
    complex_fft = frames.is_complex()
    sided = (not complex_fft) if onesided is None else onesided
    mode = _BY_ROOT_N if normalized else _NONE
    if complex_fft:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = aten._fft_c2c(frames, (frames.dim() - 1,), mode, True)
    else:
        out = aten._fft_r2c(frames, (frames.dim() - 1,), mode, sided)
    out.transpose_(1, 2)
    if self.dim() == 1:
        out.squeeze_(0)
    return out if want_complex else aten.view_as_real(out)


def istft(self: Any, n_fft: int, hop_length: Any = None, win_length: Any = None, window: Any = None,
          center: bool = True, normalized: bool = False, onesided: Any = None, length: Any = None,
          return_complex: bool = False) -> Any:
    """The inverse of ``stft``: inverse transforms of the frames, overlap-added and divided by the summed squared
    window (the least-squares estimate of Griffin and Lim)."""
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not self.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")

    def fail(msg: str) -> Any:
        raise RuntimeError(
            f"istft(CPU{_dt_name(self.dtype)}Type{_sizes(self)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_repr(window)}, center={int(center)}, normalized={int(normalized)}, "
            f"onesided={_opt(onesided)}, length={_opt(length)}, return_complex={int(return_complex)}) "
            + (msg if msg.startswith("window overlap") else f": {msg}"))
    if self.numel() == 0:
        fail("input tensor cannot be empty.")
    if self.dim() not in (2, 3):
        fail(f"expected a tensor with 3 or 4 dimensions of complex values, but got {self.dim() + 1}")
    if window is None:
        warn_once("istft", _NO_WINDOW["istft"])
    n_frames, fft_size = self.shape[-1], self.shape[-2]
    sided = fft_size != n_fft if onesided is None else onesided
    if sided and n_fft // 2 + 1 != fft_size:
        fail("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
             f"onesided=True, but got {fft_size}")
    if not sided and n_fft != fft_size:
        fail("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        fail("expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail("Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = _dt.float64 if self.dtype is _dt.complex128 else _dt.float32
    # PyTorch works on the real view (of the values: a lazy conjugate is resolved), then views it as complex again
    x = aten.view_as_real(aten.resolve_conj(self))
    w = window if window is not None else aten.ones((win,), dtype=real_dtype, device=self.device)
    if win != n_fft:
        left = (n_fft - win) // 2
        w = aten.constant_pad_nd(w, (left, n_fft - win - left), 0)
    x = x.unsqueeze(0) if self.dim() == 2 else x
    x = aten.view_as_complex(x.transpose(1, 2))  # (channel, frames, fft_size)
    mode = _BY_ROOT_N if normalized else _BY_N
    if return_complex:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = aten._fft_c2c(x, (x.dim() - 1,), mode, False)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not sided:
            x = aten.narrow(x, -1, 0, n_fft // 2 + 1)
        frames = aten._fft_c2r(x, (x.dim() - 1,), mode, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    frames = frames * w.view((1, 1, n_fft))
    y = aten.unfold_backward(frames, (frames.shape[0], expected), 1, n_fft, hop)  # overlap-add of the frames
    envelope = aten.unfold_backward(w.pow(2).expand((1, n_frames, n_fft)), (1, expected), 1, n_fft, hop)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = -(n_fft // 2) if center else expected
    y = aten.slice_Tensor(y, 1, start, end, 1)
    envelope = aten.slice_Tensor(envelope, 1, start, end, 1)
    lowest = envelope.abs().min().lt(1e-11)
    if aten.equal(lowest, lowest.new_ones(())):
        fail("window overlap add min: 1")
    y = y / envelope
    if self.dim() == 2:
        y = y.squeeze(0)
    if end > expected:
        warn_once("istft_length", "The length of signal is shorter than the length parameter. Result is being padded "
                   "with zeros in the tail. Please check your center and hop_length settings.")
        y = aten.constant_pad_nd(y, (0, end - expected), 0)
    return y
