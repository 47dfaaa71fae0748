"""Samplers and reparameterised gradients behind ``torch.distributions`` (``native/Distributions.h`` and
``Distributions.cpp``): ``_standard_gamma``, ``_sample_dirichlet`` and ``binomial`` draw PyTorch's CPU
numbers for a seed, ``_standard_gamma_grad`` and ``_dirichlet_grad`` give the implicit derivatives of a
Gamma / Beta sample with respect to its concentration.

Note [PyTorch's gamma and binomial samplers]
* Every element is drawn in turn (``cpu_serial_kernel``, elements in the output's C order) from one
  stream: uniforms are ``uniform_real_distribution<double>`` draws (53 bits of one 64-bit draw), normals
  are ``normal_distribution<double>`` draws, which use (and refill) the generator's cached second
  Box-Muller value.
* Gamma is Marsaglia and Tsang's rejection method, boosted below ``alpha = 1`` by ``u ** (1 / alpha)``;
  the arithmetic on ``alpha`` itself happens in the tensor's dtype, the rest in double, and the float
  literals of the C++ source (``1.0f / 3.0f``, ``0.0331f``) keep their float rounding.  Results are
  clamped below at the dtype's smallest normal number.
* Binomial is the inversion of a geometric sum when ``count * min(p, 1 - p) < 10``, else Hoermann's
  transformed rejection (BTRS) with Stirling's tail terms; ``p > 1/2`` samples the complement.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.aten.kernels._common import Array, meta_shape, type_name
from ember.aten.kernels.random import _gen, normal_scalar_path, uniform_bits

_F32_THIRD = float(np.float32(1.0) / np.float32(3.0))
_F32_00331 = float(np.float32(0.0331))
_F32_08, _F32_09, _F32_11 = (float(np.float32(v)) for v in (0.8, 0.9, 1.1))


def _host(xp: Any, a: Array) -> Any:
    return np.asarray(a if xp is np else a.get())


def _floating_only(a: Array, name: str) -> None:
    if a.dtype.kind != "f" or a.dtype.itemsize == 2:
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(a.dtype)}'")


def _log(v: float) -> float:
    return math.log(v) if v > 0 else -math.inf


def _uniform(gen: Any) -> float:
    return float(uniform_bits(gen, 1, np.dtype(np.float64))[0])


def _normal(gen: Any) -> float:
    return float(normal_scalar_path(gen, 1, 0.0, 1.0)[0])


def _sample_gamma(gen: Any, alpha: Any, single: bool) -> float:
    """One Gamma(alpha, 1) draw; ``alpha`` is a float32 scalar when ``single``."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inv = np.float32(1.0) / alpha if single else 1.0 / alpha
        scale *= math.pow(1.0 - _uniform(gen), float(inv))
        alpha = alpha + (np.float32(1.0) if single else 1.0)
    d = float(alpha - np.float32(_F32_THIRD)) if single else alpha - _F32_THIRD
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = _normal(gen)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - _uniform(gen)
        xx = x * x
        if u < 1.0 - _F32_00331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


@meta_shape(lambda self, generator=None: (self.shape, self.dtype))
def _standard_gamma(xp: Any, self: Array, generator: Any = None) -> Any:
    """Gamma(alpha, 1) draws, one per element of ``self`` (the concentrations)."""
    _floating_only(self, "gamma_cpu")
    gen = _gen(generator)
    single = self.dtype == np.float32
    alphas = np.ascontiguousarray(_host(xp, self)).reshape(-1)
    alphas = alphas.astype(np.float32) if single else alphas.astype(np.float64)
    out = np.empty(alphas.size, self.dtype)
    tiny = np.finfo(self.dtype).tiny
    for i in range(alphas.size):
        a = alphas[i] if single else float(alphas[i])
        out[i] = max(tiny, self.dtype.type(_sample_gamma(gen, a, single)))
    return xp.asarray(out.reshape(self.shape))


@meta_shape(lambda self, generator=None: (self.shape, self.dtype))
def _sample_dirichlet(xp: Any, self: Array, generator: Any = None) -> Any:
    """Gamma draws in double, normalised over the last dimension, clamped to (tiny, 1)."""
    _floating_only(self, "dirichlet")
    gen = _gen(generator)
    alphas = np.ascontiguousarray(_host(xp, self)).astype(np.float64)
    flat = alphas.reshape(-1)
    draws = np.empty(flat.size, np.float64)
    tiny64 = np.finfo(np.float64).tiny
    for i in range(flat.size):
        draws[i] = max(tiny64, _sample_gamma(gen, float(flat[i]), False))
    gamma: Any = draws.reshape(alphas.shape)
    total = gamma.sum(-1, keepdims=True) if gamma.ndim else gamma
    ratio = (gamma / total).astype(self.dtype)
    ratio = np.clip(ratio, np.finfo(self.dtype).tiny, np.nextafter(self.dtype.type(1), self.dtype.type(0)))
    return xp.asarray(ratio)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _binomial_inversion(gen: Any, count: Any, prob: Any, t: Any) -> Any:
    logprob = float(np.log1p(t(-prob)))
    geom_sum, num = 0.0, t(0)
    while True:
        geom = math.ceil(_log(_uniform(gen)) / logprob) if logprob != 0 else math.inf
        geom_sum += geom
        if geom_sum > count:
            return num
        num = t(num + t(1))


def _btrs(gen: Any, count: Any, prob: Any, t: Any) -> Any:
    """Transformed rejection; expressions on (count, prob) alone are evaluated in the tensor's dtype."""
    one = t(1)
    stddev = float(np.sqrt(t(t(count * prob) * t(one - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(t(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(t(prob / t(one - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float(t(t(count + one) * prob)))
    countf = float(count)
    while True:
        u = _uniform(gen) - 0.5
        v = _uniform(gen)
        us = 0.5 - abs(u)
        k = t(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (a / (us * us) + b))
        ck1 = float(t(t(count - k) + one))
        kf = float(k)
        upper = ((m + 0.5) * math.log((m + 1) / (r * (countf - m + 1)))
                 + float(t(count + one)) * math.log((countf - m + 1) / ck1)
                 + (kf + 0.5) * math.log(r * ck1 / float(t(k + one)))
                 + _stirling_tail(m) + _stirling_tail(countf - m) - _stirling_tail(kf)
                 - _stirling_tail(float(t(count - k))))
        if v <= upper:
            return k


def _sample_binomial(gen: Any, count: Any, prob: Any, t: Any) -> Any:
    if count <= 0.0 or prob <= 0.0:
        return t(0)
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if float(t(count * prob)) >= 10.0:
            return _btrs(gen, count, prob, t)
        return _binomial_inversion(gen, count, prob, t)
    if prob > 0.5:
        q = t(t(1) - prob)
        if float(t(count * q)) >= 10.0:
            return t(count - _btrs(gen, count, q, t))
        return t(count - _binomial_inversion(gen, count, q, t))
    return t(math.nan)


@meta_shape(lambda count, prob, generator=None: (count.shape, count.dtype))
def binomial(xp: Any, count: Array, prob: Array, generator: Any = None) -> Any:
    """Binomial(count, prob) draws, one per element of ``count`` (``prob`` broadcast to it)."""
    if count.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {type_name(count.dtype)}")
    if prob.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {type_name(prob.dtype)}")
    _floating_only(count, "binomial_cpu")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {type_name(prob.dtype)} but expected {type_name(count.dtype)}")
    try:
        probs = np.broadcast_to(_host(xp, prob), count.shape)
    except ValueError:
        raise RuntimeError(f"output with shape {list(count.shape)} doesn't match the broadcast shape "
                           f"{list(np.broadcast_shapes(count.shape, prob.shape))}") from None
    gen = _gen(generator)
    t = count.dtype.type
    counts = np.ascontiguousarray(_host(xp, count)).reshape(-1)
    probs = np.ascontiguousarray(probs).reshape(-1)
    out = np.empty(counts.size, count.dtype)
    for i in range(counts.size):
        out[i] = _sample_binomial(gen, counts[i], probs[i], t)
    return xp.asarray(out.reshape(count.shape))


# -- reparameterised gradients (evaluated elementwise in double, as PyTorch's CPU kernels do) ------
def _polevl(x: Array, coefs: Any) -> Any:
    r = np.zeros_like(x)
    for c in coefs:
        r = r * x + c
    return r


_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)
_PSI_10 = 2.25175258906672110764


def _digamma_one(x: Array) -> Any:
    """Cephes' digamma for positive arguments: recurse up to 10, then the asymptotic series (PyTorch's
    ``digamma_one``, kept for the gradients' last digits: ember's ``digamma`` kernel differs by about 1e-11)."""
    x = np.array(x, np.float64, copy=True)
    result = np.zeros_like(x)
    small = x < 10
    while small.any():
        result[small] -= 1.0 / x[small]
        x[small] += 1.0
        small = x < 10
    z = 1.0 / (x * x)
    y = np.where(x < 1.0e17, z * _polevl(z, _PSI_A), 0.0)
    out = np.where(x == 10, result + _PSI_10, result + np.log(x) - 0.5 / x - y)
    return np.where(x == 0, np.inf, out)


_GAMMA_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07]])


def _gamma_grad(alpha: Array, x: Array) -> Any:
    """-(d/dalpha cdf(x; alpha)) / pdf(x; alpha): a Taylor series for small x, Rice's saddle-point
    expansion for large alpha, a bivariate rational approximation between."""
    near, lo, hi = _F32_08, _F32_09, _F32_11
    numer = np.ones_like(x)
    denom = alpha.copy()
    s1, s2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        s1 = s1 + numer / denom
        s2 = s2 + numer / (denom * denom)
    pxa = np.power(x, alpha)
    pdf = np.power(x, alpha - 1) * np.exp(-x)
    cdf_alpha = (np.log(x) - _digamma_one(alpha)) * (pxa * s1) - pxa * s2
    small = -cdf_alpha / pdf
    small = np.where(np.isnan(small), 0.0, small)
    n1 = 1 + 24 * alpha * (1 + 12 * alpha)
    n2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    mid = n1 * n2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    den = np.sqrt(8 * alpha)
    term2 = den / (alpha - x)
    term3 = np.power(x - alpha - alpha * np.log(x / alpha), -1.5)
    term23 = np.where(x < alpha, term2 - term3, term2 + term3)
    term1 = np.log(x / alpha) * term23 - np.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    large = -stirling * (x * term1) / den
    u, v = np.log(x / alpha), np.log(alpha)
    cv = [_GAMMA_UV[0, i] + u * (_GAMMA_UV[1, i] + u * _GAMMA_UV[2, i]) for i in range(8)]
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    rational = np.exp(p / q)
    big = np.where((lo * alpha <= x) & (x <= hi * alpha), mid, large)
    return np.where(x < near, small, np.where(alpha > 8.0, big, rational))


@meta_shape(lambda self, output: (self.shape, self.dtype))
def _standard_gamma_grad(xp: Any, self: Array, output: Array) -> Any:
    """d(sample)/d(alpha) of Gamma(alpha, 1) samples ``output`` drawn with concentrations ``self``."""
    _floating_only(self, "_standard_gamma_grad_cpu")
    a, x = np.broadcast_arrays(_host(xp, self).astype(np.float64), _host(xp, output).astype(np.float64))
    with np.errstate(all="ignore"):
        g = _gamma_grad(a, x)
    return xp.asarray(g.astype(self.dtype))


def _beta_grad_alpha_small(x: Array, alpha: Array, beta: Array) -> Any:
    factor = _digamma_one(alpha) - _digamma_one(alpha + beta) - np.log(x)
    numer = np.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    r = x * np.power(1 - x, -beta) * series
    return np.where(np.isnan(r), 0.0, r)


def _beta_grad_beta_small(x: Array, alpha: Array, beta: Array) -> Any:
    factor = _digamma_one(alpha + beta) - _digamma_one(beta)
    numer, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    r = -np.power(1 - x, 1 - beta) * series
    return np.where(np.isnan(r), 0.0, r)


def _beta_grad_alpha_mid(x: Array, alpha: Array, beta: Array) -> Any:
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1)) / total
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
    pre_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    pre_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    at_mean = pre_num / (1 - x) * poly / pre_den
    prefactor = -x / np.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    t1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    t1 = t1_num / (np.sqrt(2 * alpha / beta) * np.power(total, 1.5) * axbx * axbx)
    t2 = 0.5 * np.log(alpha / (total * x))
    t3 = np.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    t4 = np.power(beta * np.log(beta / (total * (1 - x))) + alpha * np.log(alpha / (total * x)), -1.5)
    away = stirling * prefactor * (t1 + t2 * (t3 + np.where(x < mean, t4, -t4)))
    return np.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), at_mean, away)


_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def _dirichlet_grad_one(x: Array, alpha: Array, total: Array) -> Any:
    """-(d/dalpha cdf(x; alpha, total - alpha)) / pdf(x; alpha, total - alpha) / (1 - x) for Beta samples:
    Taylor series near 0 and 1, a saddle-point expansion for two large parameters, else a rational
    correction to an analytic approximation."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    u = np.log(x)
    a = np.log(alpha) - u
    b = np.log(total) - a
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    pow_u, pow_a = (1.0, u, u * u), (1.0, a, a * a)
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            c0, c1 = _DIRICHLET_C[0, i, j], _DIRICHLET_C[1, i, j]
            p = p + ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3])))
            q = q + ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3])))
    rational = p / q * (x * (_digamma_one(total) - _digamma_one(alpha)) / beta)
    out = np.where((alpha > 6) & (beta > 6), _beta_grad_alpha_mid(x, alpha, beta), rational)
    out = np.where((x >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1 - x, beta, alpha), out)
    return np.where((x <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x, alpha, beta), out)


@meta_shape(lambda x, alpha, total: (x.shape, x.dtype))
def _dirichlet_grad(xp: Any, x: Array, alpha: Array, total: Array) -> Any:
    """The reparameterised gradient of Dirichlet samples ``x`` (concentrations ``alpha`` summing to ``total``)."""
    _floating_only(x, "_dirichlet_grad_cpu")
    if x.shape != alpha.shape:
        raise RuntimeError("_dirichlet_grad: expected x and alpha to have the same shape")
    if x.shape != total.shape:
        raise RuntimeError("_dirichlet_grad: expected x and total to have the same shape")
    args = [_host(xp, v).astype(np.float64) for v in (x, alpha, total)]
    with np.errstate(all="ignore"):
        g = _dirichlet_grad_one(*args)
    return xp.asarray(g.astype(x.dtype))


__all__ = ["binomial", "_standard_gamma", "_sample_dirichlet", "_standard_gamma_grad", "_dirichlet_grad"]
