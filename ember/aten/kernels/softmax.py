"""Kernels of softmax, log_softmax and their backward (``aten/src/ATen/native/SoftMax.cpp``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import Array, asdtype, compute_dtype, type_name, wrap_dim
from ember.c10.dtype import BF16_NP

__all__ = ["softmax", "log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "_safe_softmax"]

# ------------------------------------------------------------------------------ softmax
# exp(x - max) / sum, with max taken as it is: a row whose maximum is not finite (NaN, +inf, or -inf throughout)
# comes out NaN throughout, as in PyTorch. float32 along the last dim runs numba's one-pass-per-stage row loops.
def _last_dim_rows(xp: Any, *arrays: Array, d: int) -> bool:
    """Whether the compiled row kernels apply: float32 NumPy arrays of one shape, reduced along their last dim."""
    a = arrays[0]
    return (a.ndim >= 1 and d == a.ndim - 1 and a.size > 0 and all(b.shape == a.shape for b in arrays)
            and compiled.usable(xp, *arrays))


def softmax(xp: Any, self: Array, dim: Any, half_to_float: Any = False) -> Any:
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.ones_like(self)
    if _last_dim_rows(xp, x, d=d):
        r = loops.softmax.softmax(x.reshape(-1, x.shape[-1]), log=False).reshape(x.shape)
        return r.astype(self.dtype, copy=False)
    with np.errstate(all="ignore"):
        e = xp.exp(x - xp.max(x, axis=d, keepdims=True))
        r = e / xp.sum(e, axis=d, keepdims=True)
    return r.astype(self.dtype, copy=False)


def _safe_softmax(xp: Any, self: Array, dim: Any, dtype: Any = None) -> Any:
    """softmax, with 0 (not NaN) in the rows that are -inf throughout (attention rows masked entirely)."""
    x = self if dtype is None else self.astype(dtype.np, copy=False)
    r = softmax(xp, x, dim)
    if x.ndim == 0:
        return r
    masked = xp.all(x == -np.inf, axis=wrap_dim(dim, x.ndim), keepdims=True)
    return compiled.where(xp, masked, xp.zeros((), r.dtype), r)


def log_softmax(xp: Any, self: Array, dim: Any, half_to_float: Any = False) -> Any:
    d = wrap_dim(dim, max(self.ndim, 1))
    x = asdtype(xp, self, compute_dtype(self.dtype))
    if x.ndim == 0:
        return xp.zeros_like(self)
    if _last_dim_rows(xp, x, d=d):
        r = loops.softmax.softmax(x.reshape(-1, x.shape[-1]), log=True).reshape(x.shape)
        return r.astype(self.dtype, copy=False)
    with np.errstate(all="ignore"):
        s = x - xp.max(x, axis=d, keepdims=True)
        r = s - xp.log(xp.sum(xp.exp(s), axis=d, keepdims=True))
    return r.astype(self.dtype, copy=False)


def _softmax_backward_checks(name: str, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> int:
    d = wrap_dim(dim, max(output.ndim, 1))
    if name == "softmax" and grad_output.shape != output.shape:
        raise RuntimeError(f"Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
                           f"'output'; but {list(grad_output.shape)} does not equal {list(output.shape)} (while "
                           f"checking arguments for softmax_backward)")
    if grad_output.dtype.kind != "f" and grad_output.dtype != BF16_NP:
        kind = "_lastdim" if d == max(output.ndim, 1) - 1 else ""
        raise NotImplementedError(f"\"{name}_backward{kind}_kernel_impl\" not implemented for "
                                  f"'{type_name(grad_output.dtype)}'")
    if output.dtype != grad_output.dtype:
        raise RuntimeError(f"expected scalar type {type_name(grad_output.dtype)} but found {type_name(output.dtype)}")
    if grad_output.dtype == np.float32 and input_dtype.np == np.float16:     # half_to_float: not on the CPU
        raise RuntimeError("expected scalar type Float but found Half")
    return d


def _softmax_backward(name: str, xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    d = _softmax_backward_checks(name, grad_output, output, dim, input_dtype)
    log = name == "log_softmax"
    ct = compute_dtype(grad_output.dtype)
    g, y = asdtype(xp, grad_output, ct), asdtype(xp, output, ct)
    if g.ndim and _last_dim_rows(xp, g, y, d=d):
        n = g.shape[-1]
        r = loops.softmax.softmax_backward(g.reshape(-1, n), y.reshape(-1, n), log=log).reshape(g.shape)
    else:
        with np.errstate(all="ignore"):
            total = (g if log else g * y).sum(axis=d, keepdims=True) if g.ndim else (g if log else g * y)
            r = g - xp.exp(y) * total if log else y * (g - total)
    return xp.ascontiguousarray(r).astype(grad_output.dtype, copy=False)


def _softmax_backward_data(xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    """softmax's input gradient from its output y: y * (grad - sum(grad * y)) along dim."""
    return _softmax_backward("softmax", xp, grad_output, output, dim, input_dtype)


def _log_softmax_backward_data(xp: Any, grad_output: Array, output: Array, dim: Any, input_dtype: Any) -> Any:
    """log_softmax's input gradient from its output y: grad - exp(y) * sum(grad) along dim."""
    return _softmax_backward("log_softmax", xp, grad_output, output, dim, input_dtype)
