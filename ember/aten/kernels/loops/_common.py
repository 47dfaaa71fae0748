"""What the compiled loops share (Note [Compiled loops] in ``__init__.py``): numba's options -- fast math
without ``nnan`` / ``ninf``, and the exact form for loops that must round as PyTorch's op-by-op code does -- and
the scalar math helpers: in float32 for the hot kernels (8 or 16 lanes a vector), in float64 for the loops that
keep float64 registers (``ember/_inductor/fusion.py``'s generated loops call those too)."""
from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_FLAGS = {"contract", "arcp", "reassoc", "afn", "nsz"}  # fast math without nnan / ninf
_helper = numba.njit(inline="always", error_model="numpy", fastmath=_FLAGS)
_kernel = numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_FLAGS)
_exact = numba.njit(nogil=True, cache=True, error_model="numpy")   # no fast math: every rounding as written
# A loop's parallel driver (Note [Splitting a loop over threads] in ``compiled.py``): a ``prange`` over ranges. The
# loop it calls is compiled with the driver's fast-math flags (numba's ``prange`` body passes them on), so an
# ``_exact`` loop has an ``_exact_driver``: with fast math, ``x / s`` became ``x * (1 / s)``, 1 ulp off. Each loop's
# driver is written out beside it: one driver taking the loop as an argument is compiled again in every process
# (numba does not cache a function with a function argument: 1 s a loop, measured).
_driver = numba.njit(parallel=True, nogil=True, cache=True, error_model="numpy", fastmath=_FLAGS)
_exact_driver = numba.njit(parallel=True, nogil=True, cache=True, error_model="numpy")


@numba.njit(inline="always")
def chunk(work: int, chunks: int, c: int) -> tuple[int, int]:
    """The c-th of ``chunks`` near-equal consecutive ranges [b, e) of ``work`` items."""
    step = (work + chunks - 1) // chunks
    return min(work, c * step), min(work, (c + 1) * step)

_SQRT1_2 = 0.7071067811865476            # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327       # 1 / sqrt(2 pi)
_TANH_BETA = 0.7978845608028654          # sqrt(2 / pi)
_TANH_KAPPA = 0.044715


@_helper
def _exp_le1(u: float) -> float:
    v = max(u, -110.0) * 0.0078125
    p = 1.0 + v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (
        1.0 / 720 + v * (1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (
            1.0 / 39916800 + v * (1.0 / 479001600))))))))))))
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return p if u >= -110.0 else 0.0


@_helper
def _erfc_ge0(z: float) -> float:
    t = 1.0 / (1.0 + 0.5 * z)
    return t * _exp_le1(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))


@_helper
def _erf(x: float) -> float:
    """erf(x): for |x| < 1 its Taylor series to x^29 (error below 1e-12), beyond 1 - erfc(|x|) with x's sign, where
    ``_erfc_ge0``'s fractional error (1.2e-7) times erfc(1) / erf(1) stays under 2.3e-8; NaN stays NaN."""
    a = abs(x)
    z = x * x
    p = 4.4632242632864775e-13
    p = p * z + -6.711366855164111e-12
    p = p * z + 9.422759064650411e-11
    p = p * z + -1.2290555301717928e-09
    p = p * z + 1.480719281587922e-08
    p = p * z + -1.6365844691234924e-07
    p = p * z + 1.6462114365889248e-06
    p = p * z + -1.4925650358406252e-05
    p = p * z + 0.00012055332981789665
    p = p * z + -0.0008548327023450853
    p = p * z + 0.005223977625442188
    p = p * z + -0.026866170645131252
    p = p * z + 0.11283791670955128
    p = p * z + -0.37612638903183754
    p = p * z + 1.1283791670955126
    big = 1.0 - _erfc_ge0(a)
    r = x * p if a < 1.0 else (big if x >= 0.0 else -big)
    return r if x == x else x


@_helper
def _two_phi(x: float) -> float:
    """2 Phi(x) = erfc(-x / sqrt 2) = 1 + erf(x / sqrt 2)."""
    z = x * _SQRT1_2
    e = _erfc_ge0(abs(z))
    return 2.0 - e if z >= 0.0 else e


@_helper
def _one_plus_tanh(u: float) -> float:
    """1 + tanh(u) = 2 / (1 + e^(-2u)), evaluated with e^(-2|u|) <= 1 on either side of 0 (for u < 0 it is
    2 e^(2u) / (1 + e^(2u))), so GELU's far negative tail keeps its relative accuracy."""
    e = _exp_le1(-2.0 * abs(u))
    return 2.0 / (1.0 + e) if u >= 0.0 else 2.0 * e / (1.0 + e)



@_helper
def _expm1_le0(u: float) -> float:
    """e^u - 1 for u <= 0 with relative accuracy near 0: m = e^(u/128) - 1 by its Taylor polynomial, then seven
    times (1 + m)^2 - 1 = m (2 + m), which keeps the relative error of m (no cancellation)."""
    v = max(u, -110.0) * 0.0078125
    m = v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (1.0 / 720 + v * (
        1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (1.0 / 39916800 + v * (
            1.0 / 479001600 + v * (1.0 / 6227020800)))))))))))))
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    return m


@_helper
def _log1p_le1(e: float) -> float:
    """log(1 + e) for 0 <= e <= 1: 2 atanh(s) with s = e / (2 + e) <= 1/3, by its series to s^25 (relative error
    below 1e-13): no log to call, so it vectorizes."""
    s = e / (2.0 + e)
    z = s * s
    p = 1.0 / 25
    p = p * z + 1.0 / 23
    p = p * z + 1.0 / 21
    p = p * z + 1.0 / 19
    p = p * z + 1.0 / 17
    p = p * z + 1.0 / 15
    p = p * z + 1.0 / 13
    p = p * z + 1.0 / 11
    p = p * z + 1.0 / 9
    p = p * z + 1.0 / 7
    p = p * z + 1.0 / 5
    p = p * z + 1.0 / 3
    p = p * z + 1.0
    return 2.0 * s * p


@_helper
def _softplus(x: float) -> float:
    """log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), finite for every finite x; NaN stays NaN."""
    r = (x if x > 0.0 else 0.0) + _log1p_le1(_exp_le1(-abs(x)))
    return r if x == x else x


@_helper
def _sigmoid(x: float) -> float:
    """1 / (1 + e^-x), from e^(-|x|) <= 1 on either side of 0 (e / (1 + e) for x < 0); NaN stays NaN."""
    e = _exp_le1(-abs(x))
    s = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    return s if x == x else x


@_helper
def _tanh(u: float) -> float:
    """tanh(u) = -m / (2 + m) * sign(u) with m = e^(-2|u|) - 1, relative accuracy kept near 0; NaN stays NaN."""
    m = _expm1_le0(-2.0 * abs(u))
    t = -m / (2.0 + m)
    t = t if u >= 0.0 else -t
    return t if u == u else u



# ------------------------------------------------------------------------------ float32
# The float32 helpers (Note [float32 math] in ``__init__.py``). They are compiled apart, with their own fast-math
# flags, and LLVM inlines them into the loop that calls them with those flags kept per instruction: contraction
# into FMAs but no reassociation, which would fold the two halves of ln 2 in exp's argument reduction into one
# and lose its accuracy. Every constant is a float32 one: a Python float next to a float32 value would make
# numba compute in float64.
_f32 = numba.njit(error_model="numpy", fastmath={"contract", "nsz"})

_F0, _F1, _F2, _FHALF = np.float32(0.0), np.float32(1.0), np.float32(2.0), np.float32(0.5)
_FINF = np.float32(np.inf)
_SQRT1_2F = np.float32(0.7071067811865476)
_INV_SQRT_2PIF = np.float32(0.3989422804014327)
_LOG2EF = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)             # ln 2 = _LN2_HI + _LN2_LO; n * _LN2_HI is exact for |n| <= 2^9
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_MAX = np.float32(88.72283)               # the largest float32 x with e^x finite; the next one overflows
_TWO_M64 = np.float32(2.0 ** -64)


def _as_float32_typed(typingctx: Any, bits: Any) -> Any:
    """The float32 whose bits are the int32 ``bits`` (a bit cast, which vectorizes)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


def _bits_of_typed(typingctx: Any, x: Any) -> Any:
    """The bits of the float32 ``x`` as an int32."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


def _half_bits_typed(typingctx: Any, x: Any) -> Any:
    """The float16 nearest the float32 ``x`` (ties to even; NaN, inf, subnormals as IEEE), as its uint16 bits: an
    LLVM fptrunc, one vcvtps2ph with F16C (``loops.pointwise.half_usable`` checks the host has it)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


def _half_value_typed(typingctx: Any, h: Any) -> Any:
    """The float32 value of the float16 whose bits are the uint16 ``h`` (exact)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


def _registers_typed(typingctx: Any, n: Any) -> Any:
    """A float32 array of ``n`` entries (an integer literal) on the stack, as a pointer: the accumulators of a
    register-blocked loop. Where every index into it is a constant once the loops over it are unrolled, LLVM keeps
    it in vector registers (a NumPy array allocated in the loop lives on the heap, and its loads and stores stay)."""
    if not isinstance(n, types.IntegerLiteral):
        return None
    size = n.literal_value

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        block = cgutils.alloca_once(builder, ir.ArrayType(ir.FloatType(), size))  # type: ignore[no-untyped-call]
        return builder.bitcast(block, ir.FloatType().as_pointer())
    return types.CPointer(types.float32)(n), codegen  # type: ignore[no-untyped-call]


def _fmaf_typed(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once (``llvm.fma.f32``: one vfmadd, in vectors too)."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        f = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f], ir.FunctionType(f, [f, f, f]))
        return builder.call(fn, args)
    return types.float32(types.float32, types.float32, types.float32), codegen


_as_float32: Any = intrinsic(_as_float32_typed)
_fmaf: Any = intrinsic(_fmaf_typed)
_bits_of: Any = intrinsic(_bits_of_typed)
_half_bits: Any = intrinsic(_half_bits_typed)
_half_value: Any = intrinsic(_half_value_typed)
_registers: Any = intrinsic(_registers_typed)


@_helper
def _fma_4x16(acc: Any, src: Any, at: Any, s0: Any, s1: Any, s2: Any, s3: Any) -> None:
    """The register block's step (a ``_registers(64)`` block of 4 rows x 16 lanes): row i's lanes += s_i times
    src[at .. at + 15] (``at`` unsigned). Inlined, every index into acc is a constant once the lanes unroll."""
    for lane in range(16):
        v = src[at + np.uint64(lane)]
        acc[lane] += s0 * v
        acc[16 + lane] += s1 * v
        acc[32 + lane] += s2 * v
        acc[48 + lane] += s3 * v


@_f32
def _order_key(x: Any) -> Any:
    """An int32 that orders as the float32 x does (-0 just below +0); a NaN with its sign bit clear orders above
    +inf. An integer max vectorizes where a float max that must keep NaN does not."""
    b = _bits_of(x)
    return b ^ ((b >> 31) & np.int32(0x7FFFFFFF))


@_f32
def _from_order_key(k: Any) -> Any:
    """The float32 of an ``_order_key``."""
    return _as_float32(k ^ ((k >> 31) & np.int32(0x7FFFFFFF)))


@_f32
def _expm1f_reduced(r: Any) -> Any:
    """e^r - 1 for the reduced argument |r| <= ln 2 / 2 of ``_expf``: r + r^2 P(r), Cephes' degree-7 minimax."""
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    return p * (r * r) + r


@_f32
def _expf(x: Any) -> Any:
    """e^x in float32, within 1 ulp (Cephes' expf): x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts), e^r
    by its degree-7 minimax polynomial, 2^n added into the exponent bits -- in two steps where the result is
    subnormal. inf above ``_EXP_MAX``, 0 below -104, NaN for NaN."""
    y = min(max(x, np.float32(-104.0)), np.float32(89.0))
    n = np.floor(y * _LOG2EF + _FHALF)
    r = y - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _expm1f_reduced(r) + _F1
    k = np.int32(n)
    bits = _bits_of(p)
    e = _as_float32(bits + (k << 23)) if k > -126 else _as_float32(bits + ((k + 64) << 23)) * _TWO_M64
    e = _FINF if x > _EXP_MAX else e
    return x if x != x else e


@_f32
def _exp_le0_2p64(s: Any) -> Any:
    """e^s times 2^64 for s <= 0 (below -130 taken as -130), as ``_expf`` builds it: always a normal float32, so
    without ``_expf``'s subnormal, overflow and NaN selects; the caller scales its product back by 2^-64 once."""
    s = s if s > np.float32(-130.0) else np.float32(-130.0)   # (a NaN s gives -130: its caller keeps the NaN)
    n = np.floor(s * _LOG2EF + _FHALF)
    r = s - n * _LN2_HI
    r = r - n * _LN2_LO
    return _as_float32(_bits_of(_expm1f_reduced(r) + _F1) + ((np.int32(n) + np.int32(64)) << 23))


@_f32
def _phif(x: Any) -> Any:
    """phi(x) = e^(-x^2 / 2) / sqrt(2 pi) in float32 (0 where it underflows, which the scaling back keeps: compiled
    apart, so a caller's reassociation cannot move the 2^-64 past its own factors)."""
    return (_INV_SQRT_2PIF * _exp_le0_2p64(-_FHALF * x * x)) * _TWO_M64


@_f32
def _two_phif(x: Any) -> Any:
    """2 Phi(x) = erfc(-x / sqrt 2) in float32, with its relative accuracy kept in the far negative tail.

    erfc(z) = t exp(P(t) - z^2) for z = |x| / sqrt 2 >= 0, t = 1 / (1 + z / 2) (``_erfc_ge0``'s fit). The
    exponent's z^2 = x^2 / 2 reaches 128 where the result is still a subnormal float32, and one rounding of it would
    cost 30 ulps: x^2 / 2 is taken as a + b, a = (x / 2) x rounded and b its exact rounding error (an FMA), and the
    rounding error of (P - b) - a is carried into the result as e^err ~ 1 + err. e^s is built times 2^64 (s <= 0,
    so always a normal float: no subnormal, overflow or NaN cases to select between, which cost the loop 15%) and
    the product scaled back once, where a subnormal result rounds."""
    ax = min(abs(x), np.float32(16.0))          # erfc(16 / sqrt 2) = 0 in float32, and e^s * 2^64 stays normal
    t = _F1 / (_F1 + _FHALF * _SQRT1_2F * ax)
    p = np.float32(0.17087277)
    p = p * t + np.float32(-0.82215223)
    p = p * t + np.float32(1.48851587)
    p = p * t + np.float32(-1.13520398)
    p = p * t + np.float32(0.27886807)
    p = p * t + np.float32(-0.18628806)
    p = p * t + np.float32(0.09678418)
    p = p * t + np.float32(0.37409196)
    p = p * t + np.float32(1.00002368)
    p = p * t + np.float32(-1.26551223)
    h = _FHALF * ax
    a = h * ax
    c = p - _fmaf(h, ax, -a)                    # a + (h ax - a) = x^2 / 2 exactly
    s = c - a
    v = s - c
    err = (c - (s - v)) - (a + v)
    e = (t * (_exp_le0_2p64(s) * (_F1 + err))) * _TWO_M64
    e = e if ax < np.float32(16.0) else _F0     # (a call inside a conditional expression would stop vectorizing)
    return _F2 - e if x >= _F0 else e


@_f32
def _one_plus_tanhf(u: Any) -> Any:
    """1 + tanh(u) in float32 for a float64 u, from e^(-2|u|) <= 1 (``_one_plus_tanh``). u is taken as float32
    hi + lo, e^(-2 u) = e^(-2 hi) (1 - 2 lo): GELU's u = beta (x + kappa x^3) is far from 0 where its result is
    still a normal float32, and a float32 u would carry its rounding (25 ulps at u = -40) into the result."""
    u = min(max(u, -60.0), 60.0)                # tanh(60) = 1 and e^-120 = 0 in float32: the split stays finite
    hi = np.float32(u)
    lo = np.float32(u - np.float64(hi))
    hi, lo = (hi, lo) if hi >= _F0 else (-hi, -lo)
    e = _expf(np.float32(-2.0) * hi) * (_F1 - _F2 * lo)
    return _F2 / (_F1 + e) if u >= 0.0 else _F2 * e / (_F1 + e)


@_f32
def _expm1f_le0(y: Any) -> Any:
    """e^y - 1 in float32 for y <= 0, with its relative accuracy near 0: y = n ln 2 + r as in ``_expf``, e^r - 1 by
    the same polynomial without its leading 1 (no cancellation), then 2^n (e^r - 1) + (2^n - 1), whose second
    term is exact. -1 below -87 (2^n stays a normal float32); NaN stays NaN."""
    v = max(y, np.float32(-87.0))
    n = np.floor(v * _LOG2EF + _FHALF)
    r = v - n * _LN2_HI
    r = r - n * _LN2_LO
    em1 = _expm1f_reduced(r)
    s = _as_float32((np.int32(n) + np.int32(127)) << 23)      # 2^n, n >= -126
    m = s * em1 + (s - _F1)
    return y if y != y else m


@_f32
def _sigmoidf(x: Any) -> Any:
    """1 / (1 + e^-x) in float32 from e = e^(-|x|) <= 1 on either side of 0 (e / (1 + e) for x < 0): within 2
    ulps, the far negative tail included; NaN stays NaN."""
    e = _expf(-abs(x))
    return _F1 / (_F1 + e) if x >= _F0 else e / (_F1 + e)


@_f32
def _tanhf(u: Any) -> Any:
    """tanh(u) in float32: -m / (2 + m) with m = e^(-2|u|) - 1 (``_expm1f_le0``), the sign of u; its relative
    accuracy kept near 0 (no cancellation); NaN stays NaN."""
    m = _expm1f_le0(np.float32(-2.0) * abs(u))
    t = abs(m) / (_F2 + m)
    return t if u > _F0 else (-t if u < _F0 else u)       # u itself for +-0 and NaN
