"""Elementwise binary and ternary kernels (``aten/src/ATen/native/BinaryOps.cpp``, ``TernaryOps``).

Each kernel computes PyTorch's result dtype (Note [Type promotion]) and evaluates in it; half-precision
types evaluate in float32 and round back, as PyTorch's CPU kernels do.
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

from ember.c10.dtype import BF16_NP as _BF16

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import (asdtype, compute_dtype, elementwise, float_result, is_integral,
                                        result_np_dtype, type_name)

_NUM = (bool, int, float, complex)
_INT_FLOAT = (int, float)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_REAL = (np.float32, np.float64)
_ND = np.ndarray
_SPLIT = compiled.SPLIT_MIN      # (a module global: read on every float32 add)
_POINTWISE = {np.add: 0, np.subtract: 1, np.multiply: 2, np.true_divide: 3}   # loops.pointwise's ADD .. DIV
_SWAPPED = (0, 4, 2, 5)                                                       # the number on the left: RSUB, RDIV


def _pointwise(ufunc: Any, a: Any, b: Any) -> Any:
    """``ufunc`` of float32 operands of at least ``_SPLIT`` elements through ``loops.pointwise``, which splits them
    over the threads: two C-contiguous arrays of one shape, or one and a real number; None where it does not
    apply. The choice depends on the size alone, never on the thread count (whose results must not differ)."""
    op = _POINTWISE[ufunc]
    if type(a) is _ND and a.ndim == 0 and a.dtype == _F32:     # a number the binding wrapped (``3 * x``)
        a = a.item()
    if type(b) is _ND and b.ndim == 0 and b.dtype == _F32:
        b = b.item()
    if type(a) is not _ND:
        if type(a) not in (int, float):
            return None
        a, b, op = b, a, _SWAPPED[op]
    if a.dtype != _F32 or not a.flags.c_contiguous or a.size < _SPLIT or not compiled.is_enabled():
        return None
    if type(b) is _ND:
        if b.shape != a.shape or b.dtype != _F32 or not b.flags.c_contiguous:
            return None
    elif type(b) not in (int, float):
        return None
    return loops.pointwise.arithmetic(op, a, b)


def _check_alpha(npdt: Any, alpha: Any) -> Any:
    if isinstance(alpha, bool):
        if npdt.kind != "b":
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and npdt.kind in "biu":
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    elif isinstance(alpha, complex) and npdt.kind != "c":
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


def _wrapped_int(v: Any, npdt: Any) -> Any:
    """A Python int operand of an integer op, converted to the op's dtype as PyTorch converts a Scalar: wrapping
    around (``uint8 & -32`` is ``uint8 & 224``), where NumPy 2 refuses an int its dtype cannot hold."""
    if type(v) is int and npdt.kind in "iu":
        info = np.iinfo(npdt)
        if not info.min <= v <= info.max:
            return np.array(v & ((1 << (8 * npdt.itemsize)) - 1), dtype=np.uint64).astype(npdt)
    return v


def _binop(xp: Any, ufunc: Any, a: Array, b: Array, npdt: Any) -> Any:
    """``ufunc`` evaluated in PyTorch's result dtype (half types in float32), quietly."""
    a, b = _wrapped_int(a, npdt), _wrapped_int(b, npdt)
    cdt = compute_dtype(npdt)
    with np.errstate(all="ignore"):
        r = ufunc(a, b, dtype=cdt, casting="unsafe")
    return r if r.dtype == npdt else r.astype(npdt)


def _arith(xp: Any, ufunc: Any, a: Array, b: Array, npdt: Any) -> Any:
    """``_binop`` for add/sub/mul, the hottest ops: no ``errstate`` (1 µs a call), so an overflow to inf
    may print NumPy's RuntimeWarning; the values are PyTorch's."""
    if npdt.itemsize == 2 and npdt.kind == "f" or npdt == _BF16:
        return _binop(xp, ufunc, a, b, npdt)
    if npdt.kind in "iu":
        a, b = _wrapped_int(a, npdt), _wrapped_int(b, npdt)
    elif npdt is _F32 and (a.size >= _SPLIT if type(a) is _ND and a.ndim else type(b) is _ND and b.size >= _SPLIT):
        r = _pointwise(ufunc, a, b)
        if r is not None:
            return r
    return ufunc(a, b, dtype=npdt, casting="unsafe")


def _one_float_dtype(a: Any, b: Any) -> bool:
    """a an array of float32 / float64 below the threaded loops' size, b an array of its dtype or a Python int /
    float: the common case, whose result type (PyTorch's, and NumPy's for a Python number too) is a's, so the ufunc
    needs no ``dtype=`` / ``casting=`` (type promotion, the checks of the other dtypes and those keywords cost add /
    sub / mul of small tensors as much as the ufunc)."""
    dt = getattr(a, "dtype", None)
    return (dt is _F32 or dt is _F64) and (getattr(b, "dtype", None) is dt or type(b) in _INT_FLOAT) and \
        (dt is _F64 or a.size < _SPLIT > getattr(b, "size", 0))


@elementwise
def add(xp: Any, self: Array, other: Array, alpha: Any = 1) -> Any:
    if _one_float_dtype(self, other) and type(alpha) is int and alpha == 1:
        return xp.add(self, other)
    npdt = result_np_dtype(self, other)
    if alpha != 1 or type(alpha) is not int:
        _check_alpha(npdt, alpha)
        if alpha != 1:
            other = asdtype(xp, other, compute_dtype(npdt)) * alpha
    if npdt.kind == "b":
        return xp.logical_or(self, other)
    return _arith(xp, xp.add, self, other, npdt)


@elementwise
def sub(xp: Any, self: Array, other: Array, alpha: Any = 1) -> Any:
    if _one_float_dtype(self, other) and type(alpha) is int and alpha == 1:
        return xp.subtract(self, other)
    npdt = result_np_dtype(self, other)
    if npdt.kind == "b" or (getattr(self, "dtype", None) == np.bool_ and getattr(other, "dtype", None) == np.bool_):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if alpha != 1 or type(alpha) is not int:
        _check_alpha(npdt, alpha)
        if alpha != 1:
            other = asdtype(xp, other, compute_dtype(npdt)) * alpha
    return _arith(xp, xp.subtract, self, other, npdt)


@elementwise
def rsub(xp: Any, self: Array, other: Array, alpha: Any = 1) -> Any:
    return sub(xp, other, self, alpha)


@elementwise
def mul(xp: Any, self: Array, other: Array) -> Any:
    if _one_float_dtype(self, other):
        return xp.multiply(self, other)
    npdt = result_np_dtype(self, other)
    if npdt.kind == "b":
        return xp.logical_and(self, other)
    return _arith(xp, xp.multiply, self, other, npdt)


def _zero_division_check(xp: Any, other: Array) -> Any:
    if isinstance(other, _NUM):
        if other == 0:
            raise RuntimeError("ZeroDivisionError")
    elif bool((other == 0).any()):
        raise RuntimeError("ZeroDivisionError")


@elementwise
def div(xp: Any, self: Array, other: Array, rounding_mode: Any = None) -> Any:
    npdt = result_np_dtype(self, other)
    if rounding_mode is None:
        npdt = float_result(npdt)
        if npdt is _F32 and (self.size >= _SPLIT if type(self) is _ND and self.ndim else type(other) is _ND and
                             other.size >= _SPLIT):
            r = _pointwise(np.true_divide, self, other)
            if r is not None:
                return r
        return _binop(xp, xp.true_divide, self, other, npdt)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    if npdt.kind in "iub":
        _zero_division_check(xp, other)
        if rounding_mode == "floor":
            return _binop(xp, xp.floor_divide, self, other, npdt)
        a, b = asdtype(xp, self, npdt), asdtype(xp, other, npdt)
        q = xp.floor_divide(a, b)
        fix = (q < 0) & (q * b != a)
        return (q + fix).astype(npdt)
    cdt = compute_dtype(npdt)
    with np.errstate(all="ignore"):
        a, b = asdtype(xp, self, cdt), asdtype(xp, other, cdt)
        if rounding_mode == "trunc":
            r = xp.trunc(a / b)
        else:
            r = _floor_div_float(xp, a, b)
    return r.astype(npdt, copy=False)


def _floor_div_float(xp: Any, a: Array, b: Array) -> Any:
    # Python's floor division, as PyTorch's div_floor_floating: uses fmod to avoid rounding surprises
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    adjust = (mod != 0) & ((b < 0) != (mod < 0))
    div = compiled.where(xp, adjust, div - 1, div)
    floordiv = xp.floor(div)
    floordiv = compiled.where(xp, div - floordiv > 0.5, floordiv + 1, floordiv)
    r = compiled.where(xp, div == 0, xp.copysign(xp.zeros_like(div), a / b), floordiv)
    return compiled.where(xp, b == 0, a / b, r)


@elementwise
def floor_divide(xp: Any, self: Array, other: Array) -> Any:
    return div(xp, self, other, "floor")


@elementwise
def true_divide(xp: Any, self: Array, other: Array) -> Any:
    return div(xp, self, other, None)


@elementwise
def remainder(xp: Any, self: Array, other: Array) -> Any:
    npdt = result_np_dtype(self, other)
    if npdt.kind in "iu":
        _zero_division_check(xp, other)
    if npdt.kind == "b":
        raise RuntimeError("\"remainder_cpu\" not implemented for 'Bool'")
    return _binop(xp, xp.remainder, self, other, npdt)


@elementwise
def fmod(xp: Any, self: Array, other: Array) -> Any:
    npdt = result_np_dtype(self, other)
    if npdt.kind in "iu":
        _zero_division_check(xp, other)
    if npdt.kind == "b":
        raise RuntimeError("\"fmod_cpu\" not implemented for 'Bool'")
    return _binop(xp, xp.fmod, self, other, npdt)


@elementwise
def pow(xp: Any, self: Array, exponent: Array) -> Any:  # noqa: A001
    npdt = result_np_dtype(self, exponent)
    if npdt.kind in "iu":
        e: Any = exponent
        neg = (e < 0) if isinstance(e, (bool, int, float)) else bool((e < 0).any())
        if neg:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    if npdt.kind == "b":
        return _binop(xp, xp.power, asdtype(xp, self, np.int64), asdtype(xp, exponent, np.int64),
                      np.dtype(np.int64)).astype(bool)
    if type(exponent) in (int, float) and exponent == 2 and npdt.kind in "fciu":
        # x * x: the same correctly rounded (or, for integers, wrapped) square as pow, at a product's cost
        # (``square`` is ``pow(x, 2)``); CuPy's int8 power gave 1 for a 0-dim 2 ** 2 on an H200
        return _binop(xp, xp.multiply, self, self, npdt)
    if type(exponent) in (int, float) and exponent in _POW_SPECIAL and npdt in _REAL and self.dtype == npdt:
        # PyTorch's float / double pow by a number takes these exponents as the cheaper ops (sqrt(-0.0) is -0.0
        # there, as in PyTorch; its half types keep pow's +0)
        with np.errstate(all="ignore"):
            return _POW_SPECIAL[exponent](xp, self)
    return _binop(xp, xp.power, self, exponent, npdt)


_POW_SPECIAL = {0.5: lambda xp, x: xp.sqrt(x), -0.5: lambda xp, x: 1 / xp.sqrt(x), 3: lambda xp, x: x * x * x,
                -1: lambda xp, x: 1 / x, -2: lambda xp, x: 1 / (x * x)}


def _float_binary(ufunc_name: Any) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = float_result(result_np_dtype(self, other))
        return _binop(xp, getattr(xp, ufunc_name), self, other, npdt)
    return kernel


atan2 = _float_binary("arctan2")
atan2.__name__ = "atan2"
hypot = _float_binary("hypot")
logaddexp = _float_binary("logaddexp")
logaddexp2 = _float_binary("logaddexp2")
copysign = _float_binary("copysign")
nextafter = _float_binary("nextafter")


def _x_log(xp: Any, self: Array, other: Array, log: Any) -> Any:
    """``self * log(other)`` in the floating result dtype, 0 where ``self`` is 0 (NaN where ``other`` is)."""
    npdt = float_result(result_np_dtype(self, other))
    cdt = compute_dtype(npdt)
    a, b = asdtype(xp, self, cdt), asdtype(xp, other, cdt)
    with np.errstate(all="ignore"):
        r = compiled.where(xp, a == 0, xp.zeros((), cdt), a * log(b))
        r = compiled.where(xp, xp.isnan(b), b + a * 0, r)
    return r.astype(npdt, copy=False)


@elementwise
def xlogy(xp: Any, self: Array, other: Array) -> Any:
    return _x_log(xp, self, other, xp.log)


@elementwise
def special_xlog1py(xp: Any, self: Array, other: Array) -> Any:
    return _x_log(xp, self, other, xp.log1p)


def _minmax(ufunc_name: Any, nan_ignoring: Any = False) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = result_np_dtype(self, other)
        if npdt.kind == "c":
            raise RuntimeError(f"{kernel.__name__} not implemented for complex tensors.")
        return _binop(xp, getattr(xp, ufunc_name), self, other, npdt)
    return kernel


maximum = _minmax("maximum")
minimum = _minmax("minimum")
fmax = _minmax("fmax")
fmin = _minmax("fmin")


def _bitwise(ufunc_name: Any, opname: Any) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = result_np_dtype(self, other)
        if npdt.kind not in "biu":
            raise RuntimeError(f"\"{opname}_cpu\" not implemented for '{type_name(npdt)}'")
        return _binop(xp, getattr(xp, ufunc_name), self, other, npdt)
    return kernel


bitwise_and = _bitwise("bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor")
bitwise_left_shift = _bitwise("left_shift", "lshift")
bitwise_right_shift = _bitwise("right_shift", "rshift")


def _logical(ufunc_name: Any) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        return getattr(xp, ufunc_name)(self, other)
    return kernel


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def _compare(ufunc_name: Any) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = result_np_dtype(self, other)
        cdt = compute_dtype(npdt)
        with np.errstate(all="ignore"):
            return getattr(xp, ufunc_name)(asdtype(xp, self, cdt), asdtype(xp, other, cdt))
    return kernel


eq = _compare("equal")
ne = _compare("not_equal")
lt = _compare("less")
le = _compare("less_equal")
gt = _compare("greater")
ge = _compare("greater_equal")


# ------------------------------------------------------------------------------ ternary
@elementwise
def where(xp: Any, condition: Array, self: Array, other: Array) -> Any:
    if condition.dtype != np.bool_:
        if condition.dtype == np.uint8:
            condition = condition.astype(bool)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{type_name(condition.dtype)}")
    npdt = result_np_dtype(self, other)
    return compiled.where(xp, condition, asdtype(xp, self, npdt), asdtype(xp, other, npdt))


@elementwise
def clamp(xp: Any, self: Array, min: Array = None, max: Array = None) -> Any:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if self.dtype.kind == "b":
        raise RuntimeError("\"clamp_cpu\" not implemented for 'Bool'")
    ops = [self] + [v for v in (min, max) if v is not None]
    npdt = result_np_dtype(*ops) if len(ops) > 1 else self.dtype
    if npdt == self.dtype:
        r = compiled.clamped(xp, self, min, max)
        if r is not None:
            return r
    cdt = compute_dtype(npdt)
    r = asdtype(xp, self, cdt)
    with np.errstate(invalid="ignore"):
        if min is not None:
            r = _bound(xp, r, asdtype(xp, min, cdt), xp.less, xp.maximum)
        if max is not None:
            r = _bound(xp, r, asdtype(xp, max, cdt), xp.greater, xp.minimum)
    return r.astype(npdt, copy=False)


def _bound(xp: Any, r: Array, m: Array, beyond: Any, extreme: Any) -> Any:
    """r clamped at the bound m (``beyond`` = ``less`` for a lower bound) as PyTorch's kernels clamp, ties
    included: a number keeps r where the two are equal (``clamp(-0.0, min=0)`` is -0.0), a tensor gives the bound
    (its vectorized maximum returns the second operand, as NumPy's does); a NaN bound gives NaN."""
    if m.ndim == 0 and m == m:
        return compiled.where(xp, beyond(r, m), m, r)
    return extreme(r, m)


@elementwise
def clamp_min(xp: Any, self: Array, min: Array) -> Any:  # noqa: A002
    return clamp(xp, self, min, None)


@elementwise
def clamp_max(xp: Any, self: Array, max: Array) -> Any:  # noqa: A002
    return clamp(xp, self, None, max)


@elementwise
def lerp(xp: Any, self: Array, end: Array, weight: Array) -> Any:
    npdt = result_np_dtype(self, end)
    if npdt.kind not in "fc" and npdt != _BF16:
        raise RuntimeError(f"\"lerp_kernel_scalar\" not implemented for '{type_name(npdt)}'")
    cdt = compute_dtype(npdt)
    a, b = asdtype(xp, self, cdt), asdtype(xp, end, cdt)
    if (type(weight) in (int, float) and a.shape == b.shape and a.dtype == b.dtype
            and a.flags.c_contiguous and b.flags.c_contiguous and compiled.usable(xp, a, b, dtypes=_REAL)):
        return loops.pointwise.lerped(a, b, weight).astype(npdt, copy=False)
    w = asdtype(xp, weight, cdt)
    # PyTorch's formula: weight < 0.5 ? self + weight * (end - self) : end - (end - self) * (1 - weight); a number
    # weight (an EMA's, an optimizer's) takes its one branch instead of both and a select
    d = b - a
    if w.ndim == 0:
        r = a + w * d if abs(w) < 0.5 else b - d * (1 - w)
    else:
        r = compiled.where(xp, xp.abs(w) < 0.5, a + w * d, b - d * (1 - w))
    return r.astype(npdt, copy=False)


@elementwise
def addcmul(xp: Any, self: Array, tensor1: Array, tensor2: Array, value: Array = 1) -> Any:
    npdt = result_np_dtype(self, tensor1, tensor2)
    cdt = compute_dtype(npdt)
    r = asdtype(xp, self, cdt) + value * (asdtype(xp, tensor1, cdt) * asdtype(xp, tensor2, cdt))
    return r.astype(npdt, copy=False)


@elementwise
def addcdiv(xp: Any, self: Array, tensor1: Array, tensor2: Array, value: Array = 1) -> Any:
    if is_integral(tensor1.dtype) and is_integral(tensor2.dtype):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                           "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
                           ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
                           "for float inputs. The future addcdiv behavior is just the latter implementation: "
                           "(input + value * tensor1 / tensor2), for all dtypes.")
    npdt = result_np_dtype(self, tensor1, tensor2)
    cdt = compute_dtype(npdt)
    with np.errstate(all="ignore"):
        r = asdtype(xp, self, cdt) + value * (asdtype(xp, tensor1, cdt) / asdtype(xp, tensor2, cdt))
    return r.astype(npdt, copy=False)


def _integral_only(name: str) -> Any:
    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = result_np_dtype(self, other)
        if npdt.kind not in "iu":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{type_name(npdt)}'")
        return _binop(xp, getattr(xp, name), self, other, npdt)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


gcd = _integral_only("gcd")  # greatest common divisor, >= 0 (PyTorch's and NumPy's convention)
lcm = _integral_only("lcm")  # least common multiple, >= 0


@elementwise
def heaviside(xp: Any, self: Array, values: Array) -> Any:
    """The step function: 0 below zero, 1 above, ``values`` at zero (``heaviside_kernel``)."""
    if self.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if self.dtype.kind == "c":
        raise NotImplementedError(f"\"heaviside_cpu\" not implemented for '{type_name(self.dtype)}'")
    zero = xp.zeros((), self.dtype)
    return compiled.where(xp, self == zero, values, (self > zero).astype(self.dtype)).astype(self.dtype, copy=False)


def frexp(xp: Any, self: Array) -> Any:
    """``self = mantissa * 2**exponent`` with ``0.5 <= |mantissa| < 1`` (0, inf and NaN: mantissa itself,
    exponent 0)."""
    if self.dtype.kind != "f" and self.dtype != _BF16:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    cdt = compute_dtype(self.dtype)
    m, e = xp.frexp(self.astype(cdt, copy=False))
    return m.astype(self.dtype, copy=False), e.astype(np.int32)


@elementwise
def ldexp(xp: Any, self: Array, other: Array) -> Any:
    """``self * 2**other`` in PyTorch's dtype for ``mul(self, pow(2., other))`` (integer exponents: the
    default float dtype)."""
    pdt = float_result(other.dtype)
    with np.errstate(all="ignore"):
        p = xp.exp2(other.astype(compute_dtype(pdt))).astype(pdt, copy=False)
    return _binop(xp, xp.multiply, self, p, result_np_dtype(self, p))


def _incomplete_gamma_kernel(name: str, upper: bool) -> Any:
    from ember.aten.kernels.special_math import _incomplete_gamma

    @elementwise
    def kernel(xp: Any, self: Array, other: Array) -> Any:
        npdt = result_np_dtype(self, other)
        if npdt.kind != "f" or npdt == _BF16:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{type_name(npdt)}'")
        return _incomplete_gamma(xp, asdtype(xp, self, npdt), asdtype(xp, other, npdt), upper)
    kernel.__name__ = name
    return kernel


igamma = _incomplete_gamma_kernel("igamma", False)
igammac = _incomplete_gamma_kernel("igammac", True)
