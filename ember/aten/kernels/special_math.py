"""Special functions NumPy lacks: erf, erfc, erfinv, lgamma, digamma (``aten/src/ATen/native/Math.h``).

erf and erfc are W. J. Cody's rational Chebyshev approximations (CALERF, netlib specfun; about 1e-16
relative error in float64), evaluated vectorised over three ranges of |x| — what GELU's forward and
backward call on every element, so it must not be a Python loop.  erf of float32 (and of float16 /
bfloat16, computed in float32) has its own cheaper evaluation in float32 (``_erf_float32``: 37 array passes
instead of ~80 in float64, within 1.8 ulp, like PyTorch's vectorised erff); lgamma evaluates C's libm (through
Python's ``math``) element by element in float64; erfinv refines a closed-form start with Newton steps on
erf; digamma shifts the argument above 6 with the recurrence and sums the asymptotic series, reflecting
negative arguments.
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import math

import numpy as np

from ember.c10.dtype import BF16_NP

# Cody's coefficients: |x| <= 0.46875 (a, b), 0.46875 < |x| <= 4 (c, d), |x| > 4 (p, q)
_A = (3.1611237438705656, 113.864154151050156, 377.485237685302021, 3209.37758913846947, 0.185777706184603153)
_B = (23.6012909523441209, 244.024637934444173, 1282.61652607737228, 2844.23683343917062)
_C = (0.564188496988670089, 8.88314979438837594, 66.1191906371416295, 298.635138197400131, 881.95222124176909,
      1712.04761263407058, 2051.07837782607147, 1230.33935479799725, 2.15311535474403846e-8)
_D = (15.7449261107098347, 117.693950891312499, 537.181101862009858, 1621.38957456669019, 3290.79923573345963,
      4362.61909014324716, 3439.36767414372164, 1230.33935480374942)
_P = (0.305326634961232344, 0.360344899949804439, 0.125781726111229246, 0.0160837851487422766,
      6.58749161529837803e-4, 0.0163153871373020978)
_Q = (2.56852019228982242, 1.87295284992346047, 0.527905102951428412, 0.0605183413124413191,
      0.00233520497626869185)
_SQRPI = 0.56418958354775628695  # 1 / sqrt(pi)


def _rational(v: Any, num_c: Any, den_c: Any, lead_num: Any) -> Any:
    """Cody's ``((lead * v + n0) * v + n1) ... / ((v + d0) * v + d1) ...`` loop, in place (large
    temporaries cost a page-faulting allocation each)."""
    num = v * lead_num
    den = v.copy()
    for a, b in zip(num_c[:-1], den_c[:-1]):
        num += a
        num *= v
        den += b
        den *= v
    num += num_c[-1]
    den += den_c[-1]
    num /= den
    return num


def _exp_neg_square(y: Any) -> Any:
    """exp(-y*y) as exp(-ys*ys) * exp(-(y-ys)(y+ys)) with ys = y rounded down to 1/16 (Cody's accuracy
    trick: y*y itself would lose the low bits)."""
    ys = np.trunc(y * 16.0)
    ys /= 16.0
    d = y - ys
    d *= y + ys
    np.negative(d, out=d)
    np.exp(d, out=d)
    ys *= ys
    np.negative(ys, out=ys)
    np.exp(ys, out=ys)
    ys *= d
    return ys


def _calerf(x: Array, complement: bool) -> Any:
    """erf(x) (or erfc(x)) of a float64 array.  The two common ranges are evaluated over the whole array
    and blended with one ``where`` (boolean-mask gathers on random data cost more than the arithmetic);
    only the rare |x| > 4 elements are gathered."""
    shape = np.shape(x)
    x = np.asarray(x, dtype=np.float64).reshape(-1)   # (0-d arrays would turn into NumPy scalars)
    return _calerf_flat(x, complement).reshape(shape)


def _calerf_flat(x: Array, complement: bool) -> Any:
    y = np.abs(x)
    with np.errstate(all="ignore"):
        e_small = _rational(x * x, _A[:3] + _A[3:4], _B, _A[4])
        e_small *= x                                              # erf(x) for |x| <= 0.46875 (signed)
        ym = np.minimum(y, 4.0)
        r = _rational(ym, _C[:7] + _C[7:8], _D, _C[8])
        r *= _exp_neg_square(ym)                                  # erfc(|x|) for 0.46875 < |x| <= 4
        big = np.flatnonzero(y > 4.0)
        if big.size:
            yb = y[big]
            z = 1.0 / (yb * yb)
            tail = z * _rational(z, _P[:4] + _P[4:5], _Q, _P[5])
            tail = (_SQRPI - tail) / yb
            tail *= _exp_neg_square(yb)
            tail[np.isinf(yb)] = 0.0
            r[big] = tail                                         # erfc(|x|) for |x| > 4
        small = y <= 0.46875
        if complement:
            r = np.where(x < 0, 2.0 - r, r)
            return np.where(small, 1.0 - e_small, r)
        r = np.subtract(0.5, r, out=r)
        r += 0.5
        np.copysign(r, x, out=r)
        return np.where(small, e_small, r)


# erf in float32: |x| <= 0.9: erf(x) = x + x * Q(x^2); 0.9 < |x| (clamped to 4, where erf rounds to 1):
# erf(|x|) = -expm1(L(|x|)) with L(a) ~ log(erfc(a)).  Minimax-style fits (iteratively reweighted least squares
# against mpmath's erf, done once offline), coefficients highest degree first; evaluated in float32 the
# result is within 1.4 ulp (small range) and 1.8 ulp (large range) of the exact value over a dense grid.
_ERF32_SPLIT = 0.9
_ERF32_Q = (-0.0006090651731938124, 0.005012028384953737, -0.026778962463140488, 0.11282142996788025,
            -0.3761252462863922, 0.12837915122509003)
_ERF32_LOG_ERFC = (-1.8357837916482822e-08, 2.0160500753263477e-06, -4.940045619150624e-05,
                   0.0006132349371910095, -0.004808728117495775, 0.02651255391538143, -0.11018344014883041,
                   -0.631760835647583, -1.1302515268325806, 0.00032066399580799043)


def _horner32(xp: Any, v: Any, coeffs: Any) -> Any:
    """sum(c_k v^k) (highest first) in v's dtype, in place on one temporary."""
    r = v * v.dtype.type(coeffs[0])
    for c in coeffs[1:-1]:
        r += v.dtype.type(c)
        r *= v
    r += v.dtype.type(coeffs[-1])
    return r


def _erf_float32(xp: Any, x: Array) -> Any:
    """erf of a float32 array, evaluated in float32 on NumPy or CuPy.  Both ranges are evaluated on
    u = min(|x|, 4) over the whole array and blended by multiplying with a 0/1 mask (exact, as both are finite;
    ``where`` and masked gathers on random data cost 5-10x an arithmetic pass); the sign is copied bitwise."""
    f = np.float32
    with np.errstate(all="ignore"):
        u = xp.abs(x)
        xp.minimum(u, f(4.0), out=u)                       # NaN stays NaN
        sq = u * u
        small = _horner32(xp, sq, _ERF32_Q)
        small *= u
        small += u                                          # u + u * Q(u^2)
        big = _horner32(xp, u, _ERF32_LOG_ERFC)
        xp.expm1(big, out=big)
        xp.negative(big, out=big)                           # -expm1(L(u))
        m = (u <= f(_ERF32_SPLIT)).astype(np.float32)
        small *= m
        xp.subtract(f(1.0), m, out=m)
        big *= m
        big += small
        bits = big.view(np.uint32)
        xp.bitwise_or(bits, xp.bitwise_and(x.view(np.uint32), np.uint32(0x80000000)), out=bits)
        return big


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf if not math.isnan(v) else v


_lgamma = np.frompyfunc(_lgamma_scalar, 1, 1)


def _host(xp: Any, x: Array) -> Any:
    """float64 NumPy copy of x (CuPy arrays come to the host for these few functions)."""
    return np.asarray(x.get() if hasattr(x, "get") else x, dtype=np.float64)


def _back(xp: Any, r: Any, like: Any) -> Any:
    return xp.asarray(np.asarray(r, dtype=np.float64)).astype(like.dtype, copy=False)


def erf(xp: Any, x: Array) -> Any:
    if x.dtype.kind == "f" and x.dtype.itemsize <= 4 or x.dtype == BF16_NP:
        r = _erf_float32(xp, x.astype(np.float32, copy=False).reshape(-1))   # 1-d: 0-d ops give scalars
        return r.reshape(x.shape).astype(x.dtype, copy=False)
    return _back(xp, _calerf(_host(xp, x), False), x)



def erfc(xp: Any, x: Array) -> Any:
    return _back(xp, _calerf(_host(xp, x), True), x)


def lgamma(xp: Any, x: Array) -> Any:
    return _back(xp, _lgamma(_host(xp, x)), x)


def erfinv(xp: Any, x: Array) -> Any:
    y = np.atleast_1d(_host(xp, x))
    with np.errstate(all="ignore"):
        # Giles' single-precision approximation as a start, then Newton on erf in float64.
        w = -np.log((1.0 - y) * (1.0 + y))
        small = w < 5.0
        ws = w - 2.5
        wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
        ps: Any = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            ps = c + ps * ws
        pl: Any = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            pl = c + pl * wl
        r = np.where(small, ps, pl) * y
        two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
        for _ in range(3):
            err = _calerf(r, False) - y
            r = r - err / (two_over_sqrt_pi * np.exp(-r * r))
        r = np.where(y == 1.0, np.inf, np.where(y == -1.0, -np.inf, r))
        r = np.where(np.abs(y) > 1.0, np.nan, r)
    return _back(xp, r.reshape(np.shape(x)), x)


def digamma(xp: Any, x: Array) -> Any:
    v = _host(xp, x)
    with np.errstate(all="ignore"):
        out = np.empty_like(v)
        neg = v < 0
        # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        z = np.where(neg, 1.0 - v, v)
        acc = np.zeros_like(z)
        for _ in range(6):
            m = z < 6.0
            acc = acc - np.where(m, 1.0 / z, 0.0)
            z = np.where(m, z + 1.0, z)
        inv2 = 1.0 / (z * z)
        series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132)))))
        res = np.log(z) - 0.5 / z - series + acc
        refl = res - np.pi / np.tan(np.pi * v)
        out = np.where(neg, refl, res)
        out = np.where(v == 0, -np.inf, out)  # PyTorch: digamma(0) = -inf
        out = np.where(neg & (v == np.floor(v)), np.nan, out)
    return _back(xp, out, x)


def i0(xp: Any, x: Array) -> Any:
    return _back(xp, np.i0(_host(xp, x)), x)


def _bessel_scaled(v: Any, order: int) -> Any:
    """exp(-|x|) I_order(|x|) for order 0 or 1, in float64: the power series (all terms positive, so
    no cancellation) up to |x| = 30, Hankel's asymptotic expansion beyond it (its terms fall below
    1e-17 within 25 terms there)."""
    a = np.abs(v)
    small = a <= 30.0
    xs = np.where(small, a, 0.0)
    h2 = (xs / 2) ** 2
    term = np.ones_like(xs) if order == 0 else xs / 2
    total = term.copy()
    for k in range(1, 90):
        term = term * h2 / (k * (k + order))
        total += term
    series = total * np.exp(-xs)
    xl = np.where(small, 60.0, a)
    mu = 4.0 * order * order
    t = np.ones_like(xl)
    acc = t.copy()
    for k in range(1, 26):
        t = t * -(mu - (2 * k - 1) ** 2) / (k * 8.0 * xl)
        acc += t
    asym = acc / np.sqrt(2 * np.pi * xl)
    return np.where(small, series, asym)


def special_i0e(xp: Any, x: Array) -> Any:
    v = _host(xp, x)
    with np.errstate(all="ignore"):
        r = np.where(np.isnan(v), v, _bessel_scaled(v, 0))
    return _back(xp, r, x)


def special_i1e(xp: Any, x: Array) -> Any:
    v = _host(xp, x)
    with np.errstate(all="ignore"):
        r = np.where(np.isnan(v), v, np.sign(v) * _bessel_scaled(v, 1))
    return _back(xp, r, x)


def special_i1(xp: Any, x: Array) -> Any:
    v = _host(xp, x)
    with np.errstate(all="ignore"):
        r = np.sign(v) * _bessel_scaled(v, 1) * np.exp(np.abs(v))  # +-inf gives nan, as PyTorch's
    return _back(xp, r, x)


# Bernoulli numbers B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta function
_ZETA_B = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000, 1 / 74724249600,
           -3617 / 10670622842880000, 43867 / 5109094217170944000, -174611 / 802857662698291200000)


def hurwitz_zeta(s: float, q: Any) -> Any:
    """zeta(s, q) = sum_k (q + k)^-s for q > 0, by Euler-Maclaurin summation (float64)."""
    q = np.asarray(q, dtype=np.float64)
    n = 9
    total = np.zeros_like(q)
    for k in range(n):
        total += (q + k) ** -s
    a = q + n
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    fac = s * a ** (-s - 1)  # s (s+1) ... (s+2j-2) a^(-s-2j+1), built term by term
    for j, b in enumerate(_ZETA_B):
        total += b * fac
        fac = fac * (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a)
    return total


def polygamma(xp: Any, n: int, x: Array) -> Any:
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1 (reflection for x < 0; poles at non-positive
    integers give inf/nan as in PyTorch); n = 0 is digamma."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(xp, x)
    v = _host(xp, x)
    with np.errstate(all="ignore"):
        pos = np.where(v > 0, v, 1.0)
        r = (-1) ** (n + 1) * math.factorial(n) * hurwitz_zeta(n + 1, pos)
        r = np.where(v > 0, r, np.nan)
        r = np.where((v <= 0) & (v == np.floor(v)), np.inf if n % 2 == 1 else np.nan, r)
        if np.any((v < 0) & (v != np.floor(v))):  # psi^(n)(x) for negative non-integers: shift up
            neg = (v < 0) & (v != np.floor(v))
            shift = np.ceil(-v[neg]).astype(np.int64) + 1
            acc = np.zeros(shift.shape)
            xs = v[neg].copy()
            for _ in range(int(shift.max())):
                m = shift > 0
                acc = np.where(m, acc + (-1) ** (n + 1) * math.factorial(n) * xs ** -(n + 1), acc)
                xs = np.where(m, xs + 1, xs)
                shift = shift - 1
            r[neg] = (-1) ** (n + 1) * math.factorial(n) * hurwitz_zeta(n + 1, xs) + acc
    return _back(xp, r, x)


# -- the regularised incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac) --------
def _igamma_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P by its power series ``x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))`` (for x < a + 1)."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    ap = a.copy()
    active = np.ones(x.shape, bool)
    for _ in range(100000):
        ap = ap + 1
        term = np.where(active, term * x / ap, term)
        total = np.where(active, total + term, total)
        active &= np.abs(term) > np.abs(total) * 1e-17
        if not active.any():
            break
    lg = _lgamma(a + 1).astype(np.float64)
    p: np.ndarray = total * np.exp(a * np.log(x) - x - lg)
    return p


def _igammac_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q by its continued fraction (modified Lentz; for x >= a + 1)."""
    tiny = 1e-300
    b = x + 1 - a
    c = np.full_like(x, 1 / tiny)
    d = 1 / np.where(b == 0, tiny, b)
    h = d.copy()
    active = np.ones(x.shape, bool)
    for i in range(1, 100000):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = 1 / np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        delta = d * c
        h = np.where(active, h * delta, h)
        active &= np.abs(delta - 1) > 1e-16
        if not active.any():
            break
    lg = _lgamma(a).astype(np.float64)
    q: np.ndarray = np.exp(a * np.log(x) - x - lg) * h
    return q


def _incomplete_gamma(xp: Any, a: Array, x: Array, upper: bool) -> Any:
    """P(a, x) (``upper`` False) or Q(a, x), with PyTorch's values at the edges of the domain."""
    npdt = np.result_type(a.dtype, x.dtype)
    A, X = np.broadcast_arrays(_host(xp, a).astype(np.float64), _host(xp, x).astype(np.float64))
    A, X = A.ravel(), X.ravel()
    out = np.empty(A.shape, np.float64)
    with np.errstate(all="ignore"):
        nan = (A < 0) | (X < 0) | np.isnan(A) | np.isnan(X) | ((A == 0) & (X == 0)) | (np.isinf(A) & np.isinf(X))
        lower_is_one = ~nan & (((A == 0) & (X > 0)) | (np.isinf(X) & ~np.isinf(A)))
        lower_is_zero = ~nan & ~lower_is_one & ((X == 0) | np.isinf(A))
        general = ~(nan | lower_is_one | lower_is_zero)
        out[nan] = np.nan
        out[lower_is_one] = 0.0 if upper else 1.0
        out[lower_is_zero] = 1.0 if upper else 0.0
        series = general & (X < A + 1)
        fraction = general & ~series
        if series.any():
            p = _igamma_series(A[series], X[series])
            out[series] = 1 - p if upper else p
        if fraction.any():
            q = _igammac_fraction(A[fraction], X[fraction])
            out[fraction] = q if upper else 1 - q
    return xp.asarray(out.reshape(np.broadcast_shapes(a.shape, x.shape)).astype(npdt))
