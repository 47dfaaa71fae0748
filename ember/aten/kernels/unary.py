"""Elementwise unary kernels (``aten/src/ATen/native/UnaryOps.cpp``)."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

from ember.c10.dtype import BF16_NP as _BF16

from ember.aten.kernels import compiled, loops
from ember.aten.kernels import special_math as sm
from ember.aten.kernels._common import chunked, compute_dtype, elementwise, float_result, is_integral, type_name

__all__ = []


def _float_unary(name: Any, fn_of_xp: Any, compiled_loop: Any = None) -> Any:
    """exp-like: integral/bool inputs give the default float dtype; half types compute in float32. A float32 array
    large enough to split over the threads runs ``compiled_loop()`` (a ``loops`` kernel) if the op has one, on
    any number of threads (a result must not depend on it)."""
    @elementwise
    def kernel(xp: Any, self: Array) -> Any:
        out_dt = float_result(self.dtype)
        cdt = compute_dtype(out_dt)
        x = self if self.dtype == cdt else self.astype(cdt)
        if compiled_loop is not None and x.size >= compiled.SPLIT_MIN and compiled.usable(xp, x):
            return compiled.elementwise(compiled_loop(), x)
        with np.errstate(all="ignore"):
            r = chunked(xp, fn_of_xp(xp), x)
        return r if r.dtype == out_dt else r.astype(out_dt)
    kernel.__name__ = kernel.__qualname__ = name
    globals()[name] = kernel
    __all__.append(name)


for _name, _f in {
    "exp": lambda xp: xp.exp, "exp2": lambda xp: xp.exp2, "expm1": lambda xp: xp.expm1,
    "log": lambda xp: xp.log, "log2": lambda xp: xp.log2, "log10": lambda xp: xp.log10,
    "log1p": lambda xp: xp.log1p, "sqrt": lambda xp: xp.sqrt,
    "rsqrt": lambda xp: (lambda x: 1 / xp.sqrt(x)),
    "sin": lambda xp: xp.sin, "cos": lambda xp: xp.cos, "tan": lambda xp: xp.tan,
    "asin": lambda xp: xp.arcsin, "acos": lambda xp: xp.arccos, "atan": lambda xp: xp.arctan,
    "sinh": lambda xp: xp.sinh, "cosh": lambda xp: xp.cosh, "tanh": lambda xp: xp.tanh,
    "asinh": lambda xp: xp.arcsinh, "acosh": lambda xp: xp.arccosh, "atanh": lambda xp: xp.arctanh,
    "sigmoid": lambda xp: (lambda x: _sigmoid(xp, x)),
    "reciprocal": lambda xp: (lambda x: 1 / x),
    "erf": lambda xp: (lambda x: sm.erf(xp, x)), "erfc": lambda xp: (lambda x: sm.erfc(xp, x)),
    "erfinv": lambda xp: (lambda x: sm.erfinv(xp, x)), "lgamma": lambda xp: (lambda x: sm.lgamma(xp, x)),
    "digamma": lambda xp: (lambda x: sm.digamma(xp, x)), "i0": lambda xp: (lambda x: sm.i0(xp, x)),
    "special_i0e": lambda xp: (lambda x: sm.special_i0e(xp, x)),
    "special_i1": lambda xp: (lambda x: sm.special_i1(xp, x)),
    "special_i1e": lambda xp: (lambda x: sm.special_i1e(xp, x)),
    "sinc": lambda xp: xp.sinc, "deg2rad": lambda xp: xp.deg2rad, "rad2deg": lambda xp: xp.rad2deg,
}.items():
    _float_unary(_name, _f, {"exp": lambda: loops.pointwise.exp, "sigmoid": lambda: loops.pointwise.sigmoid,
                             "tanh": lambda: loops.activation.tanh, "erf": lambda: loops.activation.erf}.get(_name))


def _sigmoid(xp: Any, x: Array) -> Any:
    # 1 / (1 + exp(-x)) without overflow warnings for large |x|
    return 1 / (1 + xp.exp(-x))


def _same_unary(name: Any, fn_of_xp: Any, bool_ok: Any = True, int_identity: Any = False,
                bool_error: Any = None) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array) -> Any:
        if self.dtype.kind == "b" and bool_error:
            raise RuntimeError(bool_error)
        if int_identity and is_integral(self.dtype):
            return self.copy()
        cdt = compute_dtype(self.dtype)
        x = self if self.dtype == cdt else self.astype(cdt)
        with np.errstate(all="ignore"):
            r = fn_of_xp(xp)(x)
        return r if r.dtype == self.dtype else r.astype(self.dtype)
    kernel.__name__ = kernel.__qualname__ = name
    globals()[name] = kernel
    __all__.append(name)


_same_unary("neg", lambda xp: xp.negative, bool_error="Negation, the `-` operator, on a bool tensor is not "
            "supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
_same_unary("conj_physical", lambda xp: xp.conj)
_same_unary("floor", lambda xp: xp.floor, int_identity=True)
_same_unary("ceil", lambda xp: xp.ceil, int_identity=True)
_same_unary("trunc", lambda xp: xp.trunc, int_identity=True)
_same_unary("frac", lambda xp: (lambda x: x - xp.trunc(x)))
_same_unary("square", lambda xp: xp.square)
_same_unary("positive", lambda xp: (lambda x: x))


@elementwise
def abs(xp: Any, self: Array) -> Any:  # noqa: A001 - PyTorch's name
    if self.dtype.kind == "b":
        return self.copy()
    if self.dtype.kind == "c":
        return xp.abs(self)
    return xp.abs(self)


@elementwise
def sign(xp: Any, self: Array) -> Any:
    if self.dtype.kind == "b":
        return self.copy()
    if self.dtype.kind == "c":
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                           "torch.sgn instead.")
    cdt = compute_dtype(self.dtype)
    return xp.sign(self.astype(cdt, copy=False)).astype(self.dtype, copy=False)


@elementwise
def sgn(xp: Any, self: Array) -> Any:
    if self.dtype.kind != "c":
        return sign(xp, self)
    a = xp.abs(self)
    with np.errstate(all="ignore"):
        return compiled.where(xp, a == 0, 0, self / compiled.where(xp, a == 0, 1, a)).astype(self.dtype)


@elementwise
def round(xp: Any, self: Array, decimals: Any = 0) -> Any:  # noqa: A001
    if is_integral(self.dtype):
        return self.copy()
    cdt = compute_dtype(self.dtype)
    return xp.round(self.astype(cdt, copy=False), decimals).astype(self.dtype, copy=False)


@elementwise
def relu(xp: Any, self: Array) -> Any:
    if self.dtype.kind == "b":
        raise RuntimeError('"clamp_min_scalar_cpu" not implemented for \'Bool\'')
    # x kept where it equals 0, as PyTorch keeps it (relu(-0.0) is -0.0); np.maximum may return either zero
    zero = _ZERO.get(self.dtype) if xp is np else None
    if zero is None:
        zero = xp.zeros((), self.dtype)
    if self.size < compiled.SELECT_MIN:
        return xp.where(xp.less(self, zero), zero, self)
    r = compiled.clamped(xp, self, 0, None)
    return r if r is not None else compiled.where(xp, xp.less(self, zero), zero, self)


# 0-d zeros of the float dtypes, read-only: comparing with a Python 0 resolves its type on every call
_ZERO = {np.dtype(t): np.zeros((), t) for t in (np.float32, np.float64)}
for _z in _ZERO.values():
    _z.flags.writeable = False


@elementwise
def bitwise_not(xp: Any, self: Array) -> Any:
    if self.dtype.kind == "b":
        return xp.logical_not(self)
    if not is_integral(self.dtype):
        raise RuntimeError(f"\"bitwise_not_cpu\" not implemented for '{type_name(self.dtype)}'")
    return xp.invert(self)


@elementwise
def logical_not(xp: Any, self: Array) -> Any:
    return xp.logical_not(self)


@elementwise
def isnan(xp: Any, self: Array) -> Any:
    if is_integral(self.dtype):
        return xp.zeros(self.shape, bool)
    return xp.isnan(self)


@elementwise
def isinf(xp: Any, self: Array) -> Any:
    if is_integral(self.dtype):
        return xp.zeros(self.shape, bool)
    return xp.isinf(self)


@elementwise
def isfinite(xp: Any, self: Array) -> Any:
    if is_integral(self.dtype):
        return xp.ones(self.shape, bool)
    return xp.isfinite(self)


@elementwise
def isposinf(xp: Any, self: Array) -> Any:
    return xp.isposinf(self) if not is_integral(self.dtype) else xp.zeros(self.shape, bool)


@elementwise
def isneginf(xp: Any, self: Array) -> Any:
    return xp.isneginf(self) if not is_integral(self.dtype) else xp.zeros(self.shape, bool)


@elementwise
def signbit(xp: Any, self: Array) -> Any:
    if self.dtype.kind == "b":
        return xp.zeros(self.shape, bool)
    return xp.signbit(self.astype(compute_dtype(self.dtype), copy=False))


@elementwise
def nan_to_num(xp: Any, self: Array, nan: Any = None, posinf: Any = None, neginf: Any = None) -> Any:
    if is_integral(self.dtype):
        return self.copy()
    import ml_dtypes
    # the element type's own extremes (float16's 65504, not float32's)
    info: Any = np.finfo(self.dtype) if self.dtype != _BF16 else ml_dtypes.finfo(self.dtype)  # type: ignore[no-untyped-call, unused-ignore]
    x = self if self.dtype != _BF16 else self.astype(np.float32)   # NumPy's nan_to_num knows no bfloat16
    with np.errstate(over="ignore"):
        r = xp.nan_to_num(x, nan=0.0 if nan is None else nan,
                          posinf=float(info.max) if posinf is None else posinf,
                          neginf=float(info.min) if neginf is None else neginf)
    return r.astype(self.dtype, copy=False)


@elementwise
def logit(xp: Any, self: Array, eps: Any = None) -> Any:
    out_dt = float_result(self.dtype)
    x = self.astype(compute_dtype(out_dt), copy=False)
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    with np.errstate(all="ignore"):
        return xp.log(x / (1 - x)).astype(out_dt, copy=False)


__all__ += ["abs", "sign", "sgn", "round", "relu", "bitwise_not", "logical_not", "isnan", "isinf", "isfinite",
            "isposinf", "isneginf", "signbit", "nan_to_num", "logit"]


@elementwise
def polygamma(xp: Any, n: Any, self: Array) -> Any:
    out_dt = float_result(self.dtype)
    x = self.astype(compute_dtype(out_dt), copy=False)
    return sm.polygamma(xp, n, x).astype(out_dt, copy=False)


__all__ += ["polygamma"]


@elementwise
def angle(xp: Any, self: Array) -> Any:
    """The argument of each element: ``atan2(imag, real)`` for complex inputs; for real ones pi where negative,
    0 elsewhere (-0.0 included) and NaN kept (``angle_impl`` of ``UnaryOps``)."""
    if self.dtype.kind == "c":
        return xp.angle(self)
    out_dt = float_result(self.dtype)
    cdt = compute_dtype(out_dt)
    x = self.astype(cdt) if self.dtype != cdt else self
    r = compiled.where(xp, x < 0, xp.asarray(np.pi, cdt), xp.zeros((), cdt))
    if out_dt.kind == "f":
        r = compiled.where(xp, xp.isnan(x), x, r)
    return r.astype(out_dt) if r.dtype != out_dt else r


__all__.append("angle")


@elementwise
def special_entr(xp: Any, self: Array) -> Any:
    """``-x log x``: 0 at 0, -inf below 0, NaN for NaN (``entr`` of UnaryOps)."""
    out_dt = float_result(self.dtype)
    cdt = compute_dtype(out_dt)
    x = self.astype(cdt) if self.dtype != cdt else self
    with np.errstate(all="ignore"):
        r = compiled.where(xp, x == 0, xp.zeros((), cdt), xp.asarray(-np.inf, cdt))
        r = compiled.where(xp, x > 0, -x * xp.log(x), r)
        r = compiled.where(xp, xp.isnan(x), x, r)
    return r.astype(out_dt, copy=False)


@elementwise
def special_ndtr(xp: Any, self: Array) -> Any:
    """The standard normal CDF, ``(1 + erf(x / sqrt 2)) / 2`` (PyTorch's formula: 0 in the far left tail)."""
    out_dt = float_result(self.dtype)
    cdt = compute_dtype(out_dt)
    x = (self.astype(cdt) if self.dtype != cdt else self) * cdt.type(np.sqrt(0.5))
    with np.errstate(all="ignore"):
        r = (1 + sm.erf(xp, x)) * cdt.type(0.5)
    return r.astype(out_dt, copy=False)


__all__ += ["special_entr", "special_ndtr"]
