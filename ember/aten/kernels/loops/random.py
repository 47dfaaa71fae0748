"""The Mersenne Twister's uniform and Bernoulli draws, PyTorch's float32 Box-Muller (callers:
``kernels/random.py``)."""
from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _helper

# ------------------------------------------------------------------------------ the Mersenne Twister
# PyTorch's CPU generator is mt19937 (ember/c10/generator.py keeps its state in NumPy's MT19937 bit generator).
# Drawing millions of words through NumPy's random_raw and then masking, converting and scaling them in array
# passes took 6 ms for a 0.5 M-element dropout mask; these loops run the same recurrence and the same transforms
# in one pass, on the engine's own words and position, which the caller writes back. Arithmetic is in uint64 with
# explicit masks, so numba never mixes signed and unsigned integers (which it would turn into floats).
_U32 = np.uint64(0xFFFFFFFF)
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_MATRIX_A = np.uint64(0x9908B0DF)


@_helper
def _mt_word(key: Any, i: int, j: int, k: int) -> Any:
    """key[k] ^ (y >> 1) ^ (A if y odd), y = the top bit of key[i] and the low 31 of key[j]."""
    y = (np.uint64(key[i]) & _UPPER) | (np.uint64(key[j]) & _LOWER)
    v = np.uint64(key[k]) ^ (y >> np.uint64(1)) ^ (_MATRIX_A * (y & np.uint64(1)))
    return v & _U32


@_helper
def _mt_twist(key: Any) -> None:
    """The recurrence over all 624 words, in NumPy's three loops (mt19937_gen, the reference algorithm)."""
    for i in range(227):
        key[i] = _mt_word(key, i, i + 1, i + 397)
    for i in range(227, 623):
        key[i] = _mt_word(key, i, i + 1, i - 227)
    key[623] = _mt_word(key, 623, 0, 396)


@_helper
def _mt_temper(y: Any) -> Any:
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    y ^= y >> np.uint64(18)
    return y & _U32


@_helper
def _mt_words(key: Any, pos: int, words: Any) -> int:
    """Fills ``words`` with the engine's next tempered words, a block of up to 624 at a time; the new position."""
    n = words.size
    i = 0
    while i < n:
        if pos == 624:
            _mt_twist(key)
            pos = 0
        m = min(624 - pos, n - i)
        src = key[pos:pos + m]
        dst = words[i:i + m]
        for j in range(m):
            dst[j] = _mt_temper(np.uint64(src[j]))
        i += m
        pos += m
    return pos


@numba.njit(nogil=True, cache=True, error_model="numpy")
def mt_uniform(key: Any, pos: int, out: Any, digits: int) -> int:
    """Fills ``out`` with PyTorch's uniforms in [0, 1) from the engine (``key`` updated in place), returning the
    new position: float64 from two words (the first the high half) masked to 53 bits, times 2^-53; otherwise
    (``out`` float32) one word masked to ``digits`` bits times 2^-digits (exact, as the NumPy form)."""
    n = out.size
    mask = (np.uint64(1) << np.uint64(digits)) - np.uint64(1)
    scale = 1.0 / (np.uint64(1) << np.uint64(digits))
    if digits == 53:
        words = np.empty(2 * n, np.uint32)
        pos = _mt_words(key, pos, words)
        for i in range(n):
            w = (np.uint64(words[2 * i]) << np.uint64(32)) | np.uint64(words[2 * i + 1])
            out[i] = np.float64(w & mask) * scale
    else:
        words = np.empty(n, np.uint32)
        pos = _mt_words(key, pos, words)
        s32 = np.float32(scale)
        for i in range(n):
            out[i] = np.float32(np.uint64(words[i]) & mask) * s32
    return pos


@numba.njit(nogil=True, cache=True, error_model="numpy")
def mt_bernoulli(key: Any, pos: int, out: Any, p: float) -> int:
    """``bernoulli(p)`` as PyTorch draws it on the CPU: one float64 uniform u per element (two words, 53 bits)
    and u < p, into the bool array ``out``; returns the engine's new position (``key`` updated in place)."""
    n = out.size
    mask = (np.uint64(1) << np.uint64(53)) - np.uint64(1)
    scale = 1.0 / (np.uint64(1) << np.uint64(53))
    words = np.empty(2 * n, np.uint32)
    pos = _mt_words(key, pos, words)
    for i in range(n):
        w = (np.uint64(words[2 * i]) << np.uint64(32)) | np.uint64(words[2 * i + 1])
        out[i] = np.float64(w & mask) * scale < p
    return pos


# ------------------------------------------------------------------------------ float32 Box-Muller
# PyTorch's float32 normal_ transforms blocks of 16 uniforms with avx_mathfun.h's log and sincos
# (ember/aten/kernels/vec_math.py holds the same evaluation over NumPy arrays, and says where PyTorch's kernel
# contracts a multiply and an add into an FMA). Here each element's chain runs in registers in the same float32
# operation order, no fast-math (contraction would change the rounding); an FMA is the float64 product (exact)
# plus the addend rounded to float32, as the NumPy form computes it.
_F32 = np.float32


@numba.njit(inline="always", error_model="numpy")
def _fma32(a: Any, b: Any, c: Any) -> Any:
    return _F32(np.float64(a) * np.float64(b) + np.float64(c))


@numba.njit(inline="always", error_model="numpy")
def _log32(x: Any, bits: Any, fbits: Any) -> Any:
    """avx_mathfun's log of a float32 (``bits`` / ``fbits``: a 1-element int32 array and its float32 view)."""
    if not x > _F32(0.0):
        return _F32(np.nan)
    fbits[0] = max(x, _F32(1.17549435e-38))
    b = bits[0]
    e = _F32((b >> 23) - 0x7F) + _F32(1.0)
    bits[0] = (b & ~0x7F800000) | 0x3F000000
    x = fbits[0]
    if x < _F32(0.707106781186547524):
        x = x - _F32(1.0)
        e = e - _F32(1.0)
        x = x + fbits[0]
    else:
        x = x - _F32(1.0)
        x = x + _F32(0.0)
    z = x * x
    y = _F32(7.0376836292e-2)
    y = _fma32(y, x, _F32(-1.1514610310e-1))
    y = _fma32(y, x, _F32(1.1676998740e-1))
    y = _fma32(y, x, _F32(-1.2420140846e-1))
    y = _fma32(y, x, _F32(1.4249322787e-1))
    y = _fma32(y, x, _F32(-1.6668057665e-1))
    y = _fma32(y, x, _F32(2.0000714765e-1))
    y = _fma32(y, x, _F32(-2.4999993993e-1))
    y = _fma32(y, x, _F32(3.3333331174e-1))
    y = y * x
    y = _fma32(y, z, e * _F32(-2.12194440e-4))
    y = _fma32(z, _F32(-0.5), y)
    x = x + y
    return _fma32(e, _F32(0.693359375), x)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _box_muller16_f32(blocks: Any, out: Any, r0: int, r1: int) -> None:
    """Rows r0..r1-1 of (B, 16) float32 uniforms to normals: u1 = 1 - u[:8], u2 = u[8:], radius sqrt(-2 log u1),
    theta = 2 pi u2; out[:8] = radius cos, out[8:] = radius sin."""
    bits = np.empty(1, np.int32)
    fbits = bits.view(np.float32)
    for r in range(r0, r1):
        for k in range(8):
            radius = np.sqrt(_F32(-2.0) * _log32(_F32(1.0) - blocks[r, k], bits, fbits))
            x = _F32(6.283185307179586) * blocks[r, 8 + k]
            sign_sin = x < _F32(0.0)
            x = abs(x)
            j = np.int32(x * _F32(1.27323954473516))
            j = (j + 1) & ~1
            y = _F32(j)
            swap_sign_sin = (j & 4) != 0
            poly = (j & 2) == 0
            x = _fma32(y, _F32(-0.78515625), x)
            x = _fma32(y, _F32(-2.4187564849853515625e-4), x)
            x = _fma32(y, _F32(-3.77489497744594108e-8), x)
            sign_cos = ((~(j - 2)) & 4) != 0
            sign_sin = sign_sin != swap_sign_sin
            z = x * x
            yc = _fma32(_F32(2.443315711809948e-5), z, _F32(-1.388731625493765e-3))
            yc = _fma32(yc, z, _F32(4.166664568298827e-2))
            yc = yc * z
            yc = _fma32(yc, z, -(z * _F32(0.5)))
            yc = yc + _F32(1.0)
            ys = _fma32(_F32(-1.9515295891e-4), z, _F32(8.3321608736e-3))
            ys = _fma32(ys, z, _F32(-1.6666654611e-1))
            ys = ys * z
            ys = _fma32(ys, x, x)
            sin = ys if poly else yc
            cos = yc if poly else ys
            if sign_sin:
                sin = -sin
            if sign_cos:
                cos = -cos
            out[r, k] = radius * cos
            out[r, 8 + k] = radius * sin


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _scale_shift_f32(x: Any, std: float, mean: float, out: Any, b: int, e: int) -> None:
    """out[i] = x[i] * std + mean rounded once to float32 (normal_'s final fmadd; std and mean float32 values)."""
    for i in range(b, e):
        out[i] = _F32(np.float64(x[i]) * std + mean)


# ------------------------------------------------------------------------------ runners
def box_muller16_f32(blocks: Any) -> Any:
    """PyTorch's float32 Box-Muller over (B, 16) uniforms, into a new (B, 16) float32 array (rows split over the
    intra-op threads)."""
    blocks = np.ascontiguousarray(blocks)
    out = np.empty(blocks.shape, np.float32)
    compiled.split(_box_muller16_f32, blocks.shape[0], compiled.row_grain(16), blocks, out)
    return out


def scale_shift_f32(x: Any, std: float, mean: float) -> Any:
    """``x * std + mean`` rounded once to float32, over a 1-d float32 array, into a new one."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    compiled.split(_scale_shift_f32, x.size, parallel.GRAIN_SIZE, x, float(std), float(mean), out)
    return out
