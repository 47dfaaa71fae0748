"""More of ``torch.special`` (``aten/src/ATen/native/Math.h``): the scaled complementary error function,
the log of the normal CDF and its inverse, Hurwitz's zeta function, and the orthogonal polynomials
(Chebyshev T / U / V / W and their shifted forms, Hermite H / He, Laguerre L, Legendre P) by their three-term
recurrences with PyTorch's special cases.  Evaluated in float64 on the host, cast to the result dtype."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.aten.kernels._common import Array, elementwise, float_result, result_np_dtype
from ember.aten.kernels.special_math import _bessel_scaled, _calerf, _host, erfinv, hurwitz_zeta

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _unary(xp: Any, self: Array, fn: Any) -> Any:
    out_dt = float_result(self.dtype)
    with np.errstate(all="ignore"):
        r = fn(np.atleast_1d(_host(xp, self))).reshape(self.shape)
    return xp.asarray(r.astype(out_dt))


def _erfcx64(x: np.ndarray) -> Any:
    """exp(x^2) erfc(x): the product below 5, Laplace's continued fraction above, and the reflection
    ``2 exp(x^2) - erfcx(-x)`` for negative x."""
    out = np.empty_like(x)
    a = np.abs(x)
    mid = a <= 5
    out[mid] = np.exp(a[mid] * a[mid]) * _calerf(a[mid], True)
    big = ~mid & ~np.isnan(a)
    if big.any():
        z = a[big]
        f = np.zeros_like(z)
        for k in range(60, 0, -1):  # erfc(z) exp(z^2) = 1/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))
            f = (k / 2) / (z + f)
        out[big] = 1 / (_SQRT_PI * (z + f))
    out[np.isnan(a)] = np.nan
    neg = x < 0
    out[neg] = 2 * np.exp(x[neg] * x[neg]) - out[neg]
    return out


@elementwise
def special_erfcx(xp: Any, self: Array) -> Any:
    return _unary(xp, self, _erfcx64)


def _log_ndtr64(x: np.ndarray) -> Any:
    """log(ndtr(x)): through erfcx in the left tail (no underflow), log1p of the upper tail elsewhere."""
    t = x / math.sqrt(2)
    left = x < -1
    out = np.empty_like(x)
    out[left] = np.log(_erfcx64(-t[left]) / 2) - t[left] * t[left]
    out[~left] = np.log1p(-_calerf(t[~left], True) / 2)
    return out


@elementwise
def special_log_ndtr(xp: Any, self: Array) -> Any:
    return _unary(xp, self, _log_ndtr64)


def _ndtri64(p: np.ndarray) -> Any:
    """The inverse of the standard normal CDF: sqrt(2) erfinv(2p - 1) (or the tail's asymptote) as a start,
    then Newton steps on log(ndtr(x)) - log(q) for the lower-tail probability q (the upper tail by symmetry)."""
    upper = p > 0.5
    q = np.where(upper, 1 - p, p)
    x = math.sqrt(2) * erfinv(np, np.clip(2 * q - 1, -1.0, 1.0)).astype(np.float64)
    far = (q < 1e-8) | ~np.isfinite(x)
    x = np.where(far, -np.sqrt(-2 * np.log(np.maximum(q, 1e-320))), x)
    logq = np.log(np.maximum(q, 1e-320))
    ok = (q > 0) & (q <= 0.5)
    for _ in range(8):
        xs = np.where(ok, x, 0.0)
        lcdf = _log_ndtr64(xs)
        step = (lcdf - logq) * np.exp(lcdf + xs * xs / 2) * _SQRT_2PI  # f / f' with f' = pdf / cdf
        x = np.where(ok, x - step, x)
    x = np.where(upper, -x, x)
    x = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, x))
    return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, x)


@elementwise
def special_ndtri(xp: Any, self: Array) -> Any:
    return _unary(xp, self, _ndtri64)


# Cephes' Euler-Maclaurin coefficients (2k)! / B_2k, for the arguments outside the usual domain (q <= 0)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16


def _zeta_negative_q(x: float, q: float) -> Any:
    """zeta(x, q) for q <= 0 and integer x (Cephes: direct terms until the argument passes 9, then the
    Euler-Maclaurin tail)."""
    s = q ** -x
    a, b, i = q, 0.0, 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -x
        s += b
        if abs(b / s) < _MACHEP:
            return s
    w = a
    s += b * w / (x - 1) - 0.5 * b
    a, k = 1.0, 0.0
    for coef in _ZETA_A:
        a *= x + k
        b /= w
        t = a * b / coef
        s += t
        if abs(t / s) < _MACHEP:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


def _zeta(x: Any, q: Any) -> Any:
    """Hurwitz's zeta with PyTorch's values outside the domain: inf at x = 1 and at non-positive integer q,
    NaN for x < 1 and for a non-integer x with q <= 0."""
    out = np.full(x.shape, np.nan)
    usual = (x > 1) & (q > 0)
    out[usual] = hurwitz_zeta(x[usual], q[usual])
    out[x == 1] = np.inf
    pole = (x > 1) & (q <= 0) & (q == np.floor(q))
    out[pole] = np.inf
    other = (x > 1) & (q <= 0) & (q != np.floor(q)) & (x == np.floor(x))
    for i in np.flatnonzero(other.reshape(-1)):
        out.reshape(-1)[i] = _zeta_negative_q(float(x.reshape(-1)[i]), float(q.reshape(-1)[i]))
    return out


def _binary(xp: Any, x: Any, y: Any, fn: Any) -> Any:
    out_dt = float_result(result_np_dtype(x, y))
    a, b = np.broadcast_arrays(_host(xp, x), _host(xp, y))
    with np.errstate(all="ignore"):
        r = np.asarray(fn(a, b), dtype=np.float64)
    return xp.asarray(r.astype(out_dt))


@elementwise
def special_zeta(xp: Any, self: Array, other: Array) -> Any:
    """Hurwitz's zeta function sum_k (k + other)^-self (Euler-Maclaurin summation, Cephes' algorithm)."""
    return _binary(xp, self, other, _zeta)


# -- orthogonal polynomials -------------------------------------------------------------------------------------
def _recurrence(x: np.ndarray, n: np.ndarray, p0: Any, p1: Any, step: Any) -> Any:
    """P_n(x) from P_0, P_1 and ``P_{k+1} = step(k, x, P_k, P_{k-1})``, vectorised up to the largest n."""
    out = np.where(n == 0, p0(x), p1(x))
    top = int(n.max()) if n.size else 0
    p, q = p0(x), p1(x)
    for k in range(1, top):
        p, q = q, step(k, x, q, p)
        out = np.where(n == k + 1, q, out)
    return out


def _poly(x: np.ndarray, nf: np.ndarray, p0: Any, p1: Any, step: Any, special: Any = None) -> Any:
    n = np.where(np.isfinite(nf), nf, -1).astype(np.int64)  # PyTorch casts n to int64
    r = _recurrence(x, np.maximum(n, 0), p0, p1, step)
    if special is not None:
        r = special(x, n, r)
    return np.where(n < 0, 0.0, r)


def _ones(x: np.ndarray) -> Any:
    return np.ones_like(x)


def _cheb_step(k: int, x: np.ndarray, q: np.ndarray, p: np.ndarray) -> Any:
    return (x + x) * q - p


def _cheb_t(x: np.ndarray, n: np.ndarray) -> Any:
    def special(x: np.ndarray, n: np.ndarray, r: np.ndarray) -> Any:
        r = np.where((n > 6) & (np.abs(x) < 1), np.cos(n * np.arccos(np.clip(x, -1, 1))), r)
        return np.where(np.abs(x) == 1, np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), r)
    return _poly(x, n, _ones, lambda x: x, _cheb_step, special)


def _cheb_u(x: np.ndarray, n: np.ndarray) -> Any:
    def special(x: np.ndarray, n: np.ndarray, r: np.ndarray) -> Any:
        t = np.arccos(np.clip(x, -1, 1))
        s = np.sin(t)
        trig = np.where(s != 0, np.sin((n + 1) * t) / np.where(s != 0, s, 1), (n + 1) * np.cos((n + 1) * t) / x)
        r = np.where((n > 8) & (np.abs(x) < 1), trig, r)
        return np.where(np.abs(x) == 1, np.where((x > 0) | (n % 2 == 0), n + 1.0, -(n + 1.0)), r)
    return _poly(x, n, _ones, lambda x: x + x, _cheb_step, special)


def _cheb_v(x: np.ndarray, n: np.ndarray) -> Any:
    def special(x: np.ndarray, n: np.ndarray, r: np.ndarray) -> Any:
        t = np.arccos(np.clip(x, -1, 1))
        odd_sign = np.where(n % 2 == 0, n + n + 1.0, -(n + n + 1.0))
        ok = np.sin(t / 2) != 1
        trig = np.where(ok, np.cos((n + 0.5) * t) / np.where(ok, np.cos(t / 2), 1), odd_sign)
        r = np.where((n > 8) & (np.abs(x) < 1), trig, r)
        return np.where(np.abs(x) == 1, np.where(x > 0, 1.0, odd_sign), r)
    return _poly(x, n, _ones, lambda x: x + x - 1, _cheb_step, special)


def _cheb_w(x: np.ndarray, n: np.ndarray) -> Any:
    def special(x: np.ndarray, n: np.ndarray, r: np.ndarray) -> Any:
        t = np.arccos(np.clip(x, -1, 1))
        at_one = np.where(x > 0, n + n + 1.0, np.where(n % 2 == 0, 1.0, -1.0))
        ok = np.cos(t / 2) != 1
        trig = np.where(ok, np.sin((n + 0.5) * t) / np.where(ok, np.sin(t / 2), 1), at_one)
        r = np.where((n > 8) & (np.abs(x) < 1), trig, r)
        return np.where(np.abs(x) == 1, at_one, r)
    return _poly(x, n, _ones, lambda x: x + x + 1, _cheb_step, special)


def _hermite_h(x: np.ndarray, n: np.ndarray) -> Any:
    return _poly(x, n, _ones, lambda x: x + x, lambda k, x, q, p: (x + x) * q - (2 * k) * p)


def _hermite_he(x: np.ndarray, n: np.ndarray) -> Any:
    return _poly(x, n, _ones, lambda x: x, lambda k, x, q, p: x * q - k * p)


def _laguerre_l(x: np.ndarray, n: np.ndarray) -> Any:
    r = _poly(x, n, _ones, lambda x: 1 - x, lambda k, x, q, p: (((k + k) + (1 - x)) * q - k * p) / (k + 1))
    n_int = np.where(np.isfinite(n), n, -1).astype(np.int64)
    return np.where((x == 0) & (n_int >= 0), 1.0, r)


def _legendre_p(x: np.ndarray, n: np.ndarray) -> Any:
    def special(x: np.ndarray, n: np.ndarray, r: np.ndarray) -> Any:
        return np.where(np.abs(x) == 1, np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), r)
    return _poly(x, n, _ones, lambda x: x, lambda k, x, q, p: ((k + k + 1) * x * q - k * p) / (k + 1), special)


def _shifted(fn: Any) -> Any:
    return lambda x, n: fn(x + x - 1, n)


_POLYNOMIALS = {
    "special_chebyshev_polynomial_t": _cheb_t, "special_chebyshev_polynomial_u": _cheb_u,
    "special_chebyshev_polynomial_v": _cheb_v, "special_chebyshev_polynomial_w": _cheb_w,
    "special_shifted_chebyshev_polynomial_t": _shifted(_cheb_t),
    "special_shifted_chebyshev_polynomial_u": _shifted(_cheb_u),
    "special_shifted_chebyshev_polynomial_v": _shifted(_cheb_v),
    "special_shifted_chebyshev_polynomial_w": _shifted(_cheb_w),
    "special_hermite_polynomial_h": _hermite_h, "special_hermite_polynomial_he": _hermite_he,
    "special_laguerre_polynomial_l": _laguerre_l, "special_legendre_polynomial_p": _legendre_p,
}


def _polynomial_kernel(name: str, fn: Any) -> Any:
    @elementwise
    def kernel(xp: Any, x: Any, n: Any) -> Any:
        return _binary(xp, x, n, fn)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"``{name[8:]}(x, n)`` (n cast to an integer; 0 for n < 0)."
    return kernel


for _name, _fn in _POLYNOMIALS.items():
    globals()[_name] = _polynomial_kernel(_name, _fn)

__all__ = ["special_erfcx", "special_log_ndtr", "special_ndtri", "special_zeta", *_POLYNOMIALS]


# -- Bessel and Airy functions (Cephes' approximations, the tables in _cephes.py) -----------------------------
def _polevl(z: np.ndarray, coefs: Any) -> Any:
    r = np.zeros_like(z)
    for c in coefs:
        r = r * z + c
    return r


def _chbevl(y: np.ndarray, coefs: Any) -> Any:
    """Clenshaw's sum of a Chebyshev series in the variable y (Cephes' chbevl: half the first term)."""
    a, p, q = np.full_like(y, coefs[0]), np.zeros_like(y), np.zeros_like(y)
    for c in coefs[1:]:
        p, q = q, a
        a = y * q - p + c
    return 0.5 * (a - p)


def _table(name: str) -> Any:
    from ember.aten.kernels._cephes import COEFFICIENTS
    return COEFFICIENTS[name]


_PIO4, _THPIO4, _SQ2OPI = 0.785398163397448309615660845819875721, 2.356194490192344928846982537459627163, \
    0.797884560802865355879892119868763737
_TWOOPI = 0.636619772367581343075535053490057448


def _hankel(x: np.ndarray, c: Any, shift: float, sine: bool) -> Any:
    """The large-argument form sqrt(2 / (pi x)) (P cos(x - shift) - (5 / x) Q sin(x - shift)) (sin / cos
    swapped for the second kind)."""
    w = 25.0 / (x * x)
    p = _polevl(w, c["PP"]) / _polevl(w, c["PQ"])
    q = _polevl(w, c["QP"]) / _polevl(w, c["QQ"])
    xn = x - shift
    if sine:
        return (p * np.sin(xn) + 5.0 / x * q * np.cos(xn)) * _SQ2OPI / np.sqrt(x)
    return (p * np.cos(xn) - 5.0 / x * q * np.sin(xn)) * _SQ2OPI / np.sqrt(x)


def _bessel_j0_64(x: np.ndarray) -> Any:
    c = _table("bessel_j0")
    x = np.abs(x)
    z = x * x
    small = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * _polevl(z, c["RP"]) / \
        _polevl(z, c["RQ"])
    small = np.where(x < 1e-5, 1.0 - z / 4.0, small)
    return np.where(x <= 5.0, small, _hankel(np.where(x > 5, x, 6.0), c, _PIO4, False))


def _bessel_j1_64(x: np.ndarray) -> Any:
    c = _table("bessel_j1")
    a = np.abs(x)
    z = a * a
    small = _polevl(z, c["RP"]) / _polevl(z, c["RQ"]) * a * (z - 1.46819706421238932572e+01) * \
        (z - 4.92184563216946036703e+01)
    r = np.where(a <= 5.0, small, _hankel(np.where(a > 5, a, 6.0), c, _THPIO4, False))
    return np.where(x < 0, -r, r)


def _bessel_y0_64(x: np.ndarray) -> Any:
    c = _table("bessel_y0")
    xs = np.where(x > 0, x, 1.0)
    z = xs * xs
    small = _polevl(z, c["YP"]) / _polevl(z, c["YQ"]) + _TWOOPI * np.log(xs) * _bessel_j0_64(xs)
    small = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, small))
    return np.where(x <= 5.0, small, _hankel(np.where(x > 5, x, 6.0), c, _PIO4, True))


def _bessel_y1_64(x: np.ndarray) -> Any:
    c = _table("bessel_y1")
    xs = np.where(x > 0, x, 1.0)
    z = xs * xs
    small = xs * (_polevl(z, c["YP"]) / _polevl(z, c["YQ"])) + _TWOOPI * (_bessel_j1_64(xs) * np.log(xs) - 1.0 / xs)
    small = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, small))
    return np.where(x <= 5.0, small, _hankel(np.where(x > 5, x, 6.0), c, _THPIO4, True))


def _modified_bessel_i0_64(x: Any) -> Any:
    return np.exp(np.abs(x)) * _bessel_scaled(x, 0)


def _modified_bessel_i1_64(x: Any) -> Any:
    return np.exp(np.abs(x)) * np.sign(x) * _bessel_scaled(x, 1)


def _k_scaled(x: np.ndarray, order: int) -> Any:
    """exp(x) K_order(x) for x > 0: a Chebyshev series in x^2 with the logarithmic term up to 2, in 8/x above."""
    c = _table(f"modified_bessel_k{order}")
    xs = np.where(x > 0, x, 1.0)
    lo = np.minimum(xs, 2.0)
    series = _chbevl(lo * lo - 2.0, c["A"])
    if order == 0:
        small = (series - np.log(0.5 * lo) * _modified_bessel_i0_64(lo)) * np.exp(lo)
    else:
        small = (np.log(0.5 * lo) * _modified_bessel_i1_64(lo) + series / lo) * np.exp(lo)
    hi = np.maximum(xs, 2.0)
    large = _chbevl(8.0 / hi - 2.0, c["B"]) / np.sqrt(hi)
    r = np.where(xs <= 2.0, small, large)
    return np.where(x == 0, np.inf, np.where(x < 0, np.nan, r))


def _modified_bessel_k0_64(x: np.ndarray) -> Any:
    return np.where(x > 0, _k_scaled(x, 0) * np.exp(-np.where(x > 0, x, 0.0)), _k_scaled(x, 0))


def _modified_bessel_k1_64(x: np.ndarray) -> Any:
    return np.where(x > 0, _k_scaled(x, 1) * np.exp(-np.where(x > 0, x, 0.0)), _k_scaled(x, 1))


def _spherical_bessel_j0_64(x: np.ndarray) -> Any:
    z = x * x
    series = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0 + z * (
        -1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))))
    r = np.where(np.abs(x) < 0.5, series, np.sin(x) / np.where(x != 0, x, 1.0))
    return np.where(np.isinf(x), 0.0, r)


def _airy_ai_64(x: np.ndarray) -> Any:
    """Ai(x): an asymptotic expansion far left (x < -2.09), another right of 2.09 (exact from 8.32), the
    power series of its two fundamental solutions between."""
    c = _table("airy_ai")
    out = np.full_like(x, np.nan)
    left = x < -2.09
    if left.any():
        xl = x[left]
        t0 = -2.0 * xl * np.sqrt(-xl) / 3.0
        z = 1.0 / t0
        zz = z * z
        afn, afd = _polevl(zz, c["AFN"]), _polevl(zz, c["AFD"])
        agn, agd = _polevl(zz, c["AGN"]), _polevl(zz, c["AGD"])
        t = t0 + 0.25 * math.pi
        out[left] = 5.64189583547756286948e-01 / np.sqrt(np.sqrt(-xl)) * (
            np.sin(t) * (1.0 + zz * afn / afd) - np.cos(t) * (z * agn / agd))
    right = x >= 2.09
    if right.any():
        xr = x[right]
        zeta = 2.0 * xr * np.sqrt(xr) / 3.0
        inv = 1.0 / zeta
        out[right] = 5.64189583547756286948e-01 * (_polevl(inv, c["AN"]) / _polevl(inv, c["AD"])) / (
            2.0 * np.sqrt(np.sqrt(xr)) * np.exp(zeta))
    mid = ~left & ~(x > 8.3203353) & ~np.isnan(x) & (x >= -2.09)
    if mid.any():
        xm = x[mid]
        f, g, k = np.ones_like(xm), xm.copy(), np.ones_like(xm)
        m, n = np.ones_like(xm), xm.copy()
        z = xm * xm * xm
        for _ in range(200):
            m = m * z
            k = k + 1
            m = m / k
            n = n * z
            k = k + 1
            n = n / k
            m = m / k
            f = f + m
            k = k + 1
            n = n / k
            g = g + n
            if not (np.abs(m / f) > np.finfo(np.float64).eps).any():
                break
        series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
        keep = xm < 2.09
        out[mid] = np.where(keep, series, out[mid])
    out = np.where(x > 103.892, 0.0, out)
    return np.where(np.isinf(x), np.nan, out)


_BESSEL = {"special_bessel_j0": _bessel_j0_64, "special_bessel_j1": _bessel_j1_64, "special_bessel_y0": _bessel_y0_64,
           "special_bessel_y1": _bessel_y1_64, "special_modified_bessel_i0": _modified_bessel_i0_64,
           "special_modified_bessel_i1": _modified_bessel_i1_64, "special_modified_bessel_k0": _modified_bessel_k0_64,
           "special_modified_bessel_k1": _modified_bessel_k1_64,
           "special_scaled_modified_bessel_k0": lambda x: _k_scaled(x, 0),
           "special_scaled_modified_bessel_k1": lambda x: _k_scaled(x, 1),
           "special_spherical_bessel_j0": _spherical_bessel_j0_64, "special_airy_ai": _airy_ai_64}


def _bessel_kernel(name: str, fn: Any) -> Any:
    @elementwise
    def kernel(xp: Any, x: Any) -> Any:
        return _unary(xp, x, lambda v: np.where(np.isnan(v), v, fn(v)))
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


for _name, _fn in _BESSEL.items():
    globals()[_name] = _bessel_kernel(_name, _fn)

__all__ += list(_BESSEL)
