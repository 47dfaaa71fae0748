"""Arithmetic on large float32 arrays: add, sub, mul, div of two same-shaped arrays or of an array and a number,
exp and sigmoid, one pass each; clamping (relu, clamp, hardtanh) and selecting (``where``) on float32 and float64
arrays; split over the intra-op threads by the loops' parallel drivers (callers: ``kernels/binary.py``,
``kernels/unary.py``, ``kernels/activation.py``, ``compiled.where``).

NumPy's own loops are as fast on one core; what they lack is the second core. An array that does not fit one
core's L2 cache (262144 float32 values for two operands and a result: 3 MB) is read from the shared cache at its
bandwidth, about 25 GB/s here, while split in two it stays in the two cores' caches: ``a + b`` on 262144 values
takes 124 us in NumPy, 28 us here, 32 us in PyTorch. Smaller arrays stay with NumPy (a range per thread must pay
for the launch, ``compiled.split``'s grain).

No fast math: add, sub, mul and div round once, as NumPy's and PyTorch's do, so the results are theirs bit for
bit; exp is ``_expf`` (within 1 ulp), sigmoid PyTorch's 1 / (1 + e^-x) on it.

Note [Selects]
NumPy has no fast path for a maximum against a number or for ``where``: ``np.maximum(x, 0)`` on 2^19 float32
values takes 270 us where ``x * y`` takes 60 (its vector loop wants two contiguous operands), ``np.clip`` the
same, and ``np.where`` 2.2 ms on a random mask (it branches on every element; 340 us on a sorted one) -- so
relu, clamp, hardtanh, leaky_relu and every kernel built on ``where`` ran 5-50 times slower than PyTorch's
(2-core AMD EPYC, AVX2). ``clamp`` and ``select`` are one pass of compares and blends, which vectorize. ``clamp``
is PyTorch's ``min(max(x, lo), hi)`` as its kernels order it: x where it equals a bound (relu(-0.0) is -0.0), NaN
kept, ``hi`` where lo > hi."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import (_F1, _bits_of, _driver, _exact, _exact_driver, _expf, _half_bits,
                                              _half_value, _kernel, chunk)

ADD, SUB, MUL, DIV, RSUB, RDIV = range(6)   # RSUB / RDIV: the number on the left (``2 - x``, ``2 / x``)


@_exact
def binary(x: Any, y: Any, op: int, out: Any, b: int, e: int) -> None:
    """out = x (op) y over the range [b, e) of flat same-sized arrays."""
    x, y, out = x[b:e], y[b:e], out[b:e]
    if op == ADD:
        for i in range(x.size):
            out[i] = x[i] + y[i]
    elif op == SUB:
        for i in range(x.size):
            out[i] = x[i] - y[i]
    elif op == MUL:
        for i in range(x.size):
            out[i] = x[i] * y[i]
    else:
        for i in range(x.size):
            out[i] = x[i] / y[i]


@_exact
def binary_number(x: Any, s: Any, op: int, out: Any, b: int, e: int) -> None:
    """out = x (op) s over the range [b, e) of a flat array, s a float32 number."""
    x, out = x[b:e], out[b:e]
    if op == ADD:
        for i in range(x.size):
            out[i] = x[i] + s
    elif op == SUB:
        for i in range(x.size):
            out[i] = x[i] - s
    elif op == MUL:
        for i in range(x.size):
            out[i] = x[i] * s
    elif op == DIV:
        for i in range(x.size):
            out[i] = x[i] / s
    elif op == RSUB:
        for i in range(x.size):
            out[i] = s - x[i]
    else:
        for i in range(x.size):
            out[i] = s / x[i]


@_kernel
def exp(x: Any, out: Any, b: int, e: int) -> None:
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = _expf(x[i])


@_kernel
def sigmoid(x: Any, out: Any, b: int, e: int) -> None:
    """1 / (1 + e^-x), PyTorch's float32 formula (0 below -88.7, where e^-x overflows)."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = _F1 / (_F1 + _expf(-x[i]))


@_exact
def clamp(x: Any, lo: Any, hi: Any, out: Any, b: int, e: int) -> None:
    """out = min(max(x, lo), hi) over the range [b, e) of a flat array (Note [Selects]); lo and hi numbers of its
    dtype, -inf / inf for a missing bound."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        v = lo if v < lo else v
        out[i] = hi if v > hi else v


@_exact
def select(c: Any, x: Any, y: Any, out: Any, b: int, e: int) -> None:
    """out = x where c else y over the range [b, e) of flat same-sized arrays (c boolean)."""
    c, x, y, out = c[b:e], x[b:e], y[b:e], out[b:e]
    for i in range(c.size):
        u, v = x[i], y[i]                   # both loaded first: a load under the condition keeps the loop scalar
        out[i] = u if c[i] else v


@_exact
def select_number(c: Any, x: Any, s: Any, number_if: bool, out: Any, b: int, e: int) -> None:
    """out = s where c == number_if else x, over the range [b, e) of flat same-sized arrays, s a number."""
    c, x, out = c[b:e], x[b:e], out[b:e]
    for i in range(c.size):
        v = x[i]
        out[i] = s if c[i] == number_if else v


@_exact
def select_numbers(c: Any, s: Any, t: Any, out: Any, b: int, e: int) -> None:
    """out = s where c else t over the range [b, e), s and t numbers."""
    c, out = c[b:e], out[b:e]
    for i in range(c.size):
        out[i] = s if c[i] else t


@_kernel
def lerp(x: Any, y: Any, coeff: Any, from_end: bool, out: Any, b: int, e: int) -> None:
    """out = base + coeff (y - x) in one rounding (contracted into a fused multiply-add, as PyTorch's vectorized
    lerp computes it): base x and coeff w for a weight under 0.5 in magnitude, else base y and coeff w - 1."""
    x, y, out = x[b:e], y[b:e], out[b:e]
    if from_end:
        for i in range(x.size):
            out[i] = y[i] + coeff * (y[i] - x[i])
    else:
        for i in range(x.size):
            out[i] = x[i] + coeff * (y[i] - x[i])


@compiled.parallel_of(lerp)
@_driver
def _lerp_parallel(x: Any, y: Any, coeff: Any, from_end: bool, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        lerp(x, y, coeff, from_end, out, b, e)


@_exact
def to_half(x: Any, out: Any, b: int, e: int) -> None:
    """float32 ``x`` to the bits of float16 ``out`` (a uint16 view), rounded as NumPy and PyTorch round."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        out[i] = _half_bits(x[i])


@_exact
def from_half(h: Any, out: Any, b: int, e: int) -> None:
    """float16 bits ``h`` (a uint16 view) to float32 ``out``, exactly."""
    h, out = h[b:e], out[b:e]
    for i in range(h.size):
        out[i] = _half_value(h[i])


@_exact
def to_bfloat16(x: Any, out: Any, b: int, e: int) -> None:
    """float32 ``x`` to the bits of bfloat16 ``out`` (a uint16 view): PyTorch's rounding, to nearest, ties to even,
    on the bits; every NaN as its CPU kernels write it, 0xFFFF."""
    x, out = x[b:e], out[b:e]
    for i in range(x.size):
        v = x[i]
        u = np.int64(_bits_of(v)) & 0xFFFFFFFF
        r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        out[i] = np.uint16(r if v == v else 0xFFFF)


@compiled.parallel_of(to_half)
@_exact_driver
def _to_half_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        to_half(x, out, b, e)


@compiled.parallel_of(from_half)
@_exact_driver
def _from_half_parallel(h: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        from_half(h, out, b, e)


@compiled.parallel_of(to_bfloat16)
@_exact_driver
def _to_bfloat16_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        to_bfloat16(x, out, b, e)


@compiled.parallel_of(clamp)
@_exact_driver
def _clamp_parallel(x: Any, lo: Any, hi: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        clamp(x, lo, hi, out, b, e)


@compiled.parallel_of(select)
@_exact_driver
def _select_parallel(c: Any, x: Any, y: Any, out: Any, work: int, chunks: int) -> None:
    for k in prange(chunks):
        b, e = chunk(work, chunks, k)
        select(c, x, y, out, b, e)


@compiled.parallel_of(select_number)
@_exact_driver
def _select_number_parallel(c: Any, x: Any, s: Any, number_if: bool, out: Any, work: int, chunks: int) -> None:
    for k in prange(chunks):
        b, e = chunk(work, chunks, k)
        select_number(c, x, s, number_if, out, b, e)


@compiled.parallel_of(select_numbers)
@_exact_driver
def _select_numbers_parallel(c: Any, s: Any, t: Any, out: Any, work: int, chunks: int) -> None:
    for k in prange(chunks):
        b, e = chunk(work, chunks, k)
        select_numbers(c, s, t, out, b, e)


@compiled.parallel_of(binary)
@_exact_driver
def _binary_parallel(x: Any, y: Any, op: int, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        binary(x, y, op, out, b, e)


@compiled.parallel_of(binary_number)
@_exact_driver
def _binary_number_parallel(x: Any, s: Any, op: int, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        binary_number(x, s, op, out, b, e)


@compiled.parallel_of(exp)
@_driver
def _exp_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        exp(x, out, b, e)


@compiled.parallel_of(sigmoid)
@_driver
def _sigmoid_parallel(x: Any, out: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        sigmoid(x, out, b, e)


# ------------------------------------------------------------------------------ runners
def arithmetic(op: int, a: Any, b: Any) -> Any:
    """a (op) b for C-contiguous float32 arrays of one shape, or a float32 array ``a`` and a number ``b`` (then
    op may be RSUB or RDIV), into a new float32 array."""
    out = np.empty(a.shape, np.float32)
    flat = a.reshape(-1)
    if isinstance(b, np.ndarray):
        compiled.split(binary, flat.size, parallel.GRAIN_SIZE, flat, b.reshape(-1), op, out.reshape(-1))
    else:
        compiled.split(binary_number, flat.size, parallel.GRAIN_SIZE, flat, np.float32(b), op, out.reshape(-1))
    return out


def clamped(a: Any, lo: float, hi: float) -> Any:
    """min(max(a, lo), hi) for a C-contiguous float32 or float64 array ``a`` (Note [Selects]), into a new array
    of its dtype; ``lo`` / ``hi`` -inf / inf where there is no bound, neither NaN."""
    out = np.empty(a.shape, a.dtype)
    t = a.dtype.type
    compiled.split(clamp, a.size, compiled.CHEAP_GRAIN, a.reshape(-1), t(lo), t(hi), out.reshape(-1))
    return out


def selected(c: Any, x: Any, y: Any, dtype: Any) -> Any:
    """``np.where(c, x, y)`` into a new array of ``dtype`` (float32 or float64), for a C-contiguous boolean ``c``
    and ``x``, ``y`` each a C-contiguous array of c's shape and that dtype or a number (cast to it)."""
    out = np.empty(c.shape, dtype)
    flat, o, t = c.reshape(-1), out.reshape(-1), dtype.type
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        compiled.split(select, flat.size, compiled.CHEAP_GRAIN, flat, x.reshape(-1), y.reshape(-1), o)
    elif isinstance(x, np.ndarray):
        compiled.split(select_number, flat.size, compiled.CHEAP_GRAIN, flat, x.reshape(-1), t(y), False, o)
    elif isinstance(y, np.ndarray):
        compiled.split(select_number, flat.size, compiled.CHEAP_GRAIN, flat, y.reshape(-1), t(x), True, o)
    else:
        compiled.split(select_numbers, flat.size, compiled.CHEAP_GRAIN, flat, t(x), t(y), o)
    return out


def lerped(x: Any, y: Any, weight: float) -> Any:
    """PyTorch's lerp(x, y, weight) of same-shaped C-contiguous float32 or float64 arrays and a real weight (one
    of its two forms by the weight, each a fused multiply-add), into a new array."""
    out = np.empty(x.shape, x.dtype)
    t = x.dtype.type
    w = t(weight)
    from_end = not abs(w) < 0.5
    coeff = w - t(1) if from_end else w
    compiled.split(lerp, x.size, compiled.CHEAP_GRAIN, x.reshape(-1), y.reshape(-1), coeff, from_end,
                   out.reshape(-1))
    return out


_half: bool | None = None


def half_usable() -> bool:
    """Whether the host has F16C, so that ``to_half`` / ``from_half`` compile to its conversions (without it LLVM
    would call a runtime routine numba does not link)."""
    global _half
    if _half is None:
        import llvmlite.binding as llvm  # type: ignore[import-untyped]  # (numba's; only when first asked)
        _half = "+f16c" in llvm.get_host_cpu_features().flatten()
    return _half


def convert(src: Any, dst: Any) -> bool:
    """Write float32 ``src`` into ``dst`` of float16 or bfloat16, or float16 ``src`` into float32 ``dst`` (both
    C-contiguous, one shape) with a conversion loop, split over the threads; False where no loop applies. NumPy's
    float16 casts are scalar: 1.7 ms for 2^19 values to float16, 1.0 ms back; bfloat16's (ml_dtypes) 250 us."""
    f32 = np.dtype(np.float32)
    kernel: Any
    if src.dtype == f32 and dst.dtype == np.float16 and half_usable():
        kernel, a, out = to_half, src, dst.view(np.uint16)
    elif src.dtype == np.float16 and dst.dtype == f32 and half_usable():
        kernel, a, out = from_half, src.view(np.uint16), dst
    elif src.dtype == f32 and dst.dtype.name == "bfloat16":
        kernel, a, out = to_bfloat16, src, dst.view(np.uint16)
    else:
        return False
    compiled.split(kernel, a.size, compiled.CHEAP_GRAIN, a.reshape(-1), out.reshape(-1))
    return True
