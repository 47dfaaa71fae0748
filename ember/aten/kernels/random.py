"""Random kernels reproducing PyTorch's CPU generator stream (``native/cpu/DistributionTemplates.h``,
``core/DistributionsHelper.h``, ``core/TransformationHelper.h``).

Note [PyTorch's CPU random transforms]
* uniform on a float type with ``d`` mantissa digits (float 24, double 53, half 11, bfloat16 8) takes
  one 32-bit draw (two for double, joined high word first), keeps its low ``d`` bits and scales by
  ``2**-d``; ``from + x * (to - from)`` is then computed in float (double for double).
* normal on a contiguous tensor of 16 or more elements fills it with uniforms, then transforms each
  block of 16 with Box-Muller, pairing element ``j`` with ``j + 8``; when the size is not a multiple
  of 16 the last 16 are redrawn and transformed again.  Smaller or strided tensors draw each element
  from ``normal_distribution<double>``, which caches the second Box-Muller value in the generator.
* random integers in ``[low, high)`` are ``draw % range + low`` with one 32-bit draw, or a 64-bit draw
  when the range is 2**32 or more.
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import math

import numpy as np

from ember.c10.dtype import BF16_NP as _BF16, cpp_type_name

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import meta_shape, type_name
from ember.aten.kernels.factory import _np_dtype, check_size
from ember.c10 import dtype as dt
from ember.c10.generator import default_generator

_DIGITS = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}
_COMPILED_MIN_DRAWS = 4096     # below this, NumPy's random_raw and the array transforms cost less than the state copy


def _gen(generator: Any) -> Any:
    if generator is None:
        return default_generator
    if generator.device.type != "cpu":
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found '{generator.device.type}'")
    return generator


def uniform_bits(gen: Any, n: int, npdt: Any) -> np.ndarray:
    """``n`` uniforms in [0, 1) of the accumulate type (float32 or float64), PyTorch's transform."""
    d = _DIGITS.get(npdt.name)
    if d is None:
        raise RuntimeError(f"uniform_ not implemented for '{npdt.name}'")
    if n >= _COMPILED_MIN_DRAWS and compiled.is_enabled():     # the same words, transformed in one compiled pass
        out = np.empty(n, np.float64 if d == 53 else np.float32)
        key, pos = gen.engine_state()
        gen.set_engine_state(key, loops.random.mt_uniform(key, pos, out, d))
        return out
    if d == 53:
        r = gen.random64(n)
        r64: np.ndarray = (r & np.uint64((1 << 53) - 1)).astype(np.float64) * (1.0 / (1 << 53))
        return r64
    r = gen.random(n)
    r32: np.ndarray = (r & np.uint64((1 << d) - 1)).astype(np.float32) * np.float32(1.0 / (1 << d))
    return r32


def _uniform_values(gen: Any, n: Any, npdt: Any, low: Any = 0.0, high: Any = 1.0) -> Any:
    """``x * (to - from) + from``, fused into one rounding as PyTorch's compiled kernel does."""
    x = uniform_bits(gen, n, npdt)
    if low == 0.0 and high == 1.0:
        return x
    if x.dtype == np.float32:
        lo = np.float32(np.asarray(low, npdt).astype(np.float32))
        hi = np.float32(np.asarray(high, npdt).astype(np.float32))
        return _fma_f32(x, hi - lo, lo)
    return fma_f64(x, float(high) - float(low), float(low))


def _memory_order(a: Array) -> Any:
    """A view of ``a`` whose C order is its memory order: serial kernels fill elements in the order
    PyTorch's TensorIterator visits them (innermost = smallest stride)."""
    if a.ndim <= 1 or a.flags.c_contiguous:
        return a
    perm = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))
    return a.transpose(perm)


def _fill(xp: Any, self: Array, values: Array) -> Any:
    dst = _memory_order(self)
    dst[...] = xp.asarray(values.reshape(dst.shape)).astype(self.dtype, copy=False)


def uniform_(xp: Any, self: Array, from_: Any = 0.0, to: Any = 1.0, generator: Any = None) -> Any:
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    if self.dtype.kind not in "f" and self.dtype != _BF16:
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{self.dtype.name}'")
    _fill(xp, self, _uniform_values(_gen(generator), self.size, self.dtype, from_, to))


_libm_log = np.frompyfunc(math.log, 1, 1)
_libm_cos = np.frompyfunc(math.cos, 1, 1)
_libm_sin = np.frompyfunc(math.sin, 1, 1)


def _box_muller_16(u: Any, npdt: Any) -> Any:
    """Transform blocks of 16 uniforms in place (float64 math for double, float32 otherwise)."""
    blocks = u.reshape(-1, 16)
    if npdt == np.float64:
        # libm's log/cos/sin (through Python's math), as PyTorch's scalar double loop calls them:
        # NumPy's own vectorized versions differ in the last bit for about 0.2% of arguments.
        u1 = 1.0 - blocks[:, :8]
        u2 = blocks[:, 8:]
        radius = np.sqrt(-2.0 * _libm_log(u1).astype(np.float64))
        theta = 2.0 * math.pi * u2
        return np.concatenate([radius * _libm_cos(theta).astype(np.float64),
                               radius * _libm_sin(theta).astype(np.float64)], axis=1).reshape(-1)
    return _box_muller_16_f32(blocks).reshape(-1)


def _box_muller_16_f32(blocks: Any) -> Any:
    from ember.aten.kernels.vec_math import log_f32, sincos_f32
    if compiled.usable(np, blocks):
        return loops.random.box_muller16_f32(blocks)
    u1 = np.float32(1.0) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(np.float32(-2.0) * log_f32(u1))
    theta = np.float32(2.0 * math.pi) * u2
    s, c = sincos_f32(theta)
    return np.concatenate([radius * c, radius * s], axis=1)


def normal_fill(gen: Any, n: Any, npdt: Any, mean: Array, std: Any) -> Any:
    """PyTorch's ``normal_fill`` (Note [PyTorch's CPU random transforms])."""
    data = uniform_bits(gen, n, npdt)
    full = n - n % 16
    data[:full] = _box_muller_16(data[:full], npdt)
    if n % 16:
        data[n - 16:] = _box_muller_16(uniform_bits(gen, 16, npdt), npdt)
    if data.dtype == np.float32:
        return _fma_f32(data, std, mean)
    return fma_f64(data, float(std), float(mean))


def _fma_f32(x: Array, std: Any, mean: Array) -> Any:
    """``fmadd(x, std, mean)`` in float32, as the vectorized kernel stores its results."""
    if compiled.usable(np, x) and x.ndim == 1 and np.ndim(mean) == 0:
        return loops.random.scale_shift_f32(x, float(np.float32(std)), float(np.float32(mean)))
    return (x.astype(np.float64) * np.float64(np.float32(std)) + np.float64(np.float32(mean))).astype(np.float32)


def fma_f64(a: Array, b: float, c: float) -> Any:
    """``a * b + c`` rounded once, as the compiled kernel's fused multiply-add gives it (float64 arrays).

    The product is split exactly (Dekker's TwoProduct) and added with an error-free TwoSum, so the result
    is the correctly rounded one except in double-rounding ties, which need an exact tie to occur."""
    if b == 1.0 and c == 0.0:
        return a
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ah = a * split
    ah = ah - (ah - a)
    al = a - ah
    bh = b * split
    bh = bh - (bh - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def _fma_scalar(a: float, b: float, c: float) -> float:
    from fractions import Fraction
    if b == 1.0 and c == 0.0:
        return a
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def normal_scalar_path(gen: Any, n: Any, mean: Array, std: Any) -> Any:
    """Per-element ``normal_distribution<double>`` with the generator's cached second value."""
    out = np.empty(n, np.float64)
    for i in range(n):
        cached = gen.next_double_normal_sample
        if cached is not None:
            gen.next_double_normal_sample = None
            out[i] = _fma_scalar(cached, std, mean)
            continue
        u = uniform_bits(gen, 2, np.dtype(np.float64))
        u1, u2 = float(u[0]), float(u[1])
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        gen.next_double_normal_sample = r * math.sin(theta)
        out[i] = _fma_scalar(r * math.cos(theta), std, mean)
    return out


def normal_(xp: Any, self: Array, mean: Array = 0.0, std: Any = 1.0, generator: Any = None) -> Any:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if self.dtype.kind == "c":  # the (real, imag) pairs as one real tensor, each part with std / sqrt(2), as PyTorch
        parts = np.empty(self.shape + (2,), np.dtype(f"f{self.dtype.itemsize // 2}"))
        normal_(np, parts, mean, std / math.sqrt(2), generator)
        _fill(xp, self, parts.view(self.dtype)[..., 0])
        return
    if self.dtype.kind != "f" and self.dtype != _BF16:
        raise RuntimeError(f"\"normal_kernel_cpu\" not implemented for '{self.dtype.name}'")
    gen = _gen(generator)
    n = self.size
    if n >= 16 and (self.flags.c_contiguous or self.ndim <= 1 and self.strides[0] == self.itemsize):
        v = normal_fill(gen, n, self.dtype, mean, std)
    else:
        v = normal_scalar_path(gen, n, mean, std)
    _fill(xp, self, v)


def _rand_shape(size: Any, generator: Any = None, dtype: Any = None, *rest: Any, **_k: Any) -> Any:
    return check_size(size), _np_dtype(dtype)


@meta_shape(_rand_shape)
def rand(xp: Any, size: Any, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: Any = None) -> Any:
    out = np.empty(check_size(size), _np_dtype(dtype))
    uniform_(np, out, 0.0, 1.0, generator)
    return xp.asarray(out)


@meta_shape(_rand_shape)
def randn(xp: Any, size: Any, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: Any = None) -> Any:
    out = np.empty(check_size(size), _np_dtype(dtype))
    normal_(np, out, 0.0, 1.0, generator)
    return xp.asarray(out)


def random_from_to(gen: Any, n: Any, low: Any, high: Any, npdt: Any) -> Any:
    rng = high - low
    if rng <= 0:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if rng >= 1 << 32:
        r = gen.random64(n)
        v = (r % np.uint64(rng)).astype(np.int64) + np.int64(low)
    else:
        r = gen.random(n)
        v = (r % np.uint64(rng)).astype(np.int64) + np.int64(low)
    return v.astype(npdt)


@meta_shape(lambda low, high, size, generator=None, dtype=None, *r, **_k:
            (check_size(size), _np_dtype(dtype, dt.int64)))
def randint(xp: Any, low: Any, high: Any, size: Any, generator: Any = None, dtype: Any = None,
            layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    npdt = _np_dtype(dtype, dt.int64)
    n = int(np.prod(check_size(size)))
    return xp.asarray(random_from_to(_gen(generator), n, low, high, npdt).reshape(size))


def random_(xp: Any, self: Array, from_: Any = 0, to: Any = None, generator: Any = None) -> Any:
    if to is None:
        if self.dtype.kind == "f":
            to = (1 << _DIGITS[self.dtype.name]) + 1
        elif self.dtype.kind == "b":
            to = 2
        else:
            to = int(np.iinfo(self.dtype).max) + 1
    _fill(xp, self, random_from_to(_gen(generator), self.size, from_, to, self.dtype))


@meta_shape(lambda n, generator=None, dtype=None, *r, **_k: ((n,), _np_dtype(dtype, dt.int64)))
def randperm(xp: Any, n: Any, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> Any:
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    gen = _gen(generator)
    r = list(range(n))
    if n > 1:
        small = n < (1 << 32) // 20
        draws = gen.random(n - 1) if small else gen.random64(n - 1)
        for i in range(n - 1):
            z = int(draws[i]) % (n - i)
            r[i], r[z + i] = r[z + i], r[i]
    return xp.asarray(np.array(r, dtype=_np_dtype(dtype, dt.int64)))


@meta_shape(lambda self, generator=None, **_k: (self.shape, self.dtype))
def bernoulli(xp: Any, self: Array, generator: Any = None) -> Any:
    """``torch.bernoulli(p)``: one float uniform (double for double p) per element, ``u < p``."""
    p = np.asarray(self.get() if hasattr(self, "get") else self)
    if p.size and (bool((p < 0).any()) or bool((p > 1).any())):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    gen = _gen(generator)
    acc = np.dtype(np.float64) if p.dtype == np.float64 else np.dtype(np.float32)
    u = uniform_bits(gen, p.size, acc).reshape(p.shape)
    return xp.asarray((u < p.astype(acc)).astype(p.dtype))


@meta_shape(lambda self, p=0.5, generator=None, **_k: (self.shape, self.dtype))
def bernoulli_p(xp: Any, self: Array, p: Any = 0.5, generator: Any = None) -> Any:
    """``bernoulli(p)`` with a scalar ``p``: one double uniform per element, ``u < p``, in memory order."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    gen = _gen(generator)
    n = self.size
    if n >= _COMPILED_MIN_DRAWS and compiled.is_enabled():     # the draws and the comparison in one pass
        hits = np.empty(n, bool)
        key, pos = gen.engine_state()
        gen.set_engine_state(key, loops.random.mt_bernoulli(key, pos, hits, float(p)))
    else:
        hits = uniform_bits(gen, n, np.dtype(np.float64)) < p
    out = np.empty_like(np.asarray(self.get() if hasattr(self, "get") else self))  # keeps self's layout
    _fill(np, out, hits)
    return xp.asarray(out)


@meta_shape(lambda self, num_samples, *r, **_k: (self.shape[:-1] + (num_samples,), np.dtype(np.int64)))
def multinomial(xp: Any, self: Array, num_samples: Any, replacement: Any = False, generator: Any = None) -> Any:
    p = np.asarray(self.get() if hasattr(self, "get") else self, dtype=np.float64)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = p.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = p.reshape(-1, n_cat)
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    gen = _gen(generator)
    out = np.empty((rows.shape[0], num_samples), np.int64)
    if replacement and num_samples > 1:
        for r in range(rows.shape[0]):
            cdf = np.cumsum(rows[r].astype(self.dtype if self.dtype.kind == "f" else np.float64))
            cdf = (cdf / cdf[-1]).astype(np.float64)
            u = uniform_bits(gen, num_samples, np.dtype(np.float64))
            idx = np.searchsorted(cdf, u, side="right")
            out[r] = np.minimum(idx, n_cat - 1)
    else:
        # PyTorch's path without replacement, and for a single draw: q ~ Exponential(1) (``exponential_`` on a
        # tensor like the probabilities), the draws are topk(p / q, n) (argmax for one), in the input's dtype
        npdt = self.dtype if self.dtype.kind == "f" else np.dtype(np.float64)
        u = uniform_bits(gen, rows.size, np.dtype(np.float64))
        q = (-_libm(math.log1p, -u)).astype(np.float32 if npdt.itemsize == 2 else npdt).astype(npdt)
        with np.errstate(divide="ignore"):
            key = (rows.astype(npdt) / q.reshape(rows.shape)).astype(npdt)
        if num_samples == 1:
            out[:, 0] = np.argmax(key, axis=-1)
        else:
            out[...] = np.argsort(-key, axis=-1, kind="stable")[:, :num_samples]
    return xp.asarray(out.reshape(p.shape[:-1] + (num_samples,)))


@meta_shape(lambda mean, std, generator=None, **_k: (np.broadcast_shapes(mean.shape, std.shape),
                                               np.result_type(mean.dtype, std.dtype)))
def normal_tensor_tensor(xp: Any, mean: Array, std: Any, generator: Any = None) -> Any:
    shape = np.broadcast_shapes(mean.shape, std.shape)
    npdt = np.result_type(mean.dtype, std.dtype)
    out = np.empty(shape, npdt)
    normal_(np, out, 0.0, 1.0, generator)
    if (np.asarray(std) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    return xp.asarray(out * std + mean).astype(npdt)


@meta_shape(lambda mean, std, size, generator=None, dtype=None, *r, **_k: (check_size(size), _np_dtype(dtype)))
def normal_float_float(xp: Any, mean: Array, std: Any, size: Any, generator: Any = None, dtype: Any = None,
                       layout: Any = None, device: Any = None, pin_memory: Any = None) -> Any:
    out = np.empty(check_size(size), _np_dtype(dtype))
    normal_(np, out, mean, std, generator)
    return xp.asarray(out)


__all__ = ["uniform_", "normal_", "rand", "randn", "randint", "random_", "randperm", "bernoulli", "bernoulli_p",
           "multinomial", "normal_tensor_tensor", "normal_float_float", "exponential_", "cauchy_", "log_normal_",
           "geometric_", "poisson"]


# -- the other distributions of Tensor's in-place random methods (``cpu_serial_kernel`` over one
# ``uniform_real_distribution<double>`` draw per element: 53 bits of a 64-bit draw; the transforms of
# ``TransformationHelper.h`` in double with glibc's functions, then cast to the tensor's dtype)
def _libm(fn: Any, x: Array) -> Any:
    return np.frompyfunc(fn, 1, 1)(x).astype(np.float64)


def _continuous(self: Array, dist: str, cpp_name: bool = False) -> None:
    if self.dtype.kind != "f" and self.dtype != _BF16:
        name = cpp_type_name(self.dtype.name) if cpp_name else type_name(self.dtype)
        raise RuntimeError(f"{dist} distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {name}")


def _fill_via_float(xp: Any, self: Array, values: Array) -> None:
    """Store double results; half types through float, as their C++ constructors from double convert."""
    if self.dtype.itemsize == 2 and self.dtype.kind != "i" and self.dtype.kind != "u":
        values = values.astype(np.float32)
    _fill(xp, self, values)


def _doubles(generator: Any, n: int) -> Any:
    return uniform_bits(_gen(generator), n, np.dtype(np.float64))


def exponential_(xp: Any, self: Array, lambd: Any = 1.0, generator: Any = None) -> Any:
    """``-1 / lambd * log1p(-u)``."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    _continuous(self, "Exponential")
    u = _doubles(generator, self.size)
    _fill_via_float(xp, self, (-1.0 / lambd) * _libm(math.log1p, -u))


def cauchy_(xp: Any, self: Array, median: Any = 0.0, sigma: Any = 1.0, generator: Any = None) -> Any:
    """``median + sigma * tan(pi * (u - 1/2))``."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    _continuous(self, "Cauchy", cpp_name=True)
    u = _doubles(generator, self.size)
    _fill_via_float(xp, self, fma_f64(_libm(math.tan, math.pi * (u - 0.5)), float(sigma), float(median)))


def log_normal_(xp: Any, self: Array, mean: Any = 1.0, std: Any = 2.0, generator: Any = None) -> Any:
    """``exp`` of ``normal_distribution<double>(mean, std)`` draws (two uniforms per pair, the second value
    cached in the generator)."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    if self.dtype.kind != "f" and self.dtype != _BF16:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{type_name(self.dtype)}'")
    v = normal_scalar_path(_gen(generator), self.size, mean, std)
    _fill_via_float(xp, self, _libm(math.exp, v))


def geometric_(xp: Any, self: Array, p: Any, generator: Any = None) -> Any:
    """The number of Bernoulli(p) trials up to the first success: ``ceil(log(u) / log1p(-p))``."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if self.dtype.kind == "b":
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    u = _doubles(generator, self.size)
    _fill_via_float(xp, self, np.ceil(_libm(math.log, u) / math.log1p(-p)))


@meta_shape(lambda self, generator=None: (self.shape, self.dtype))
def poisson(xp: Any, self: Array, generator: Any = None) -> Any:
    """One Poisson(rate) draw per element (``sample_poisson`` of ``Distributions.h``): Knuth's product of
    uniforms below rate 10, Hoermann's transformed rejection from 10 on."""
    if self.dtype.kind != "f" and self.dtype != _BF16:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{type_name(self.dtype)}'")
    gen = _gen(generator)
    # the output is a fresh contiguous tensor: its elements are drawn in C order, whatever the input's strides
    rates = np.ascontiguousarray(np.asarray(self if xp is np else self.get())).reshape(-1).astype(np.float64)
    out = np.empty(rates.size, np.float64)
    for i, lam in enumerate(rates.tolist()):
        out[i] = _sample_poisson(gen, lam)
    return xp.asarray(out.astype(self.dtype).reshape(self.shape))


def _uniform1(gen: Any) -> float:
    return float(uniform_bits(gen, 1, np.dtype(np.float64))[0])


def _sample_poisson(gen: Any, lam: float) -> float:
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = _uniform1(gen) - 0.5
            v = _uniform1(gen)
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return float(k)
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1):
                return float(k)
    if lam == 0:
        return 0.0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= _uniform1(gen)
        if prod > enlam:
            x += 1
        else:
            return float(x)
