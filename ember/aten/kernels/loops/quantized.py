"""Dynamic quantization of rows and the AVX2 int8 GEMM of quantized linear layers (caller:
``aten/quantized/gemm.py``)."""
from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.extending import intrinsic

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _exact, _helper

# ------------------------------------------------------------------------------ dynamic quantization
# The float input of a dynamically quantized linear layer to the centred integers its exact GEMM multiplies (Note
# [Exact integer GEMM] in ember/aten/quantized/gemm.py), in one pass instead of the ten of the NumPy form, with its
# rounding: the float64 product of two float32 plus the zero point, rounded to float32, then to the nearest integer
# (ties to even), NaN to the top of the range, clipped. No fast-math: every rounding is the reference's.

@_helper
def _quantize_one(v: float, inv64: float, z: float, flo: float, fhi: float) -> float:
    """One float32 value to its quantized integer (as a float64): the reference's roundings, see above."""
    q = np.rint(np.float64(np.float32(np.float64(v) * inv64 + z)))
    return fhi if q != q else min(max(q, flo), fhi)


@_exact
def _quantize_rows_centred(x: Any, inv: float, zp: int, lo: int, hi: int, out: Any, l1: Any, r0: int,
                          r1: int) -> None:
    """Rows r0..r1-1 of the float32 (R, K) ``x`` quantized with ``1 / scale = inv`` (a float32) and ``zp``, minus
    ``zp``, into the float32 ``out``; ``l1`` (float64, R) gets each row's sum of magnitudes."""
    inv64 = np.float64(np.float32(inv))
    z = np.float64(zp)
    flo, fhi = np.float64(lo), np.float64(hi)
    for r in range(r0, r1):
        s = 0.0
        for k in range(x.shape[1]):
            c = _quantize_one(x[r, k], inv64, z, flo, fhi) - z
            out[r, k] = c
            s += abs(c)
        l1[r] = s


@_exact
def _quantize_rows_u8(x: Any, inv: float, zp: int, lo: int, hi: int, out: Any, sums: Any, r0: int, r1: int) -> None:
    """Rows r0..r1-1 of the float32 (R, K) ``x`` quantized as above into the uint8 (R', K') ``out`` (K' >= K, the
    columns past K zero), ``sums`` (int32, R) getting each row's sum of integers."""
    inv64 = np.float64(np.float32(inv))
    z = np.float64(zp)
    flo, fhi = np.float64(lo), np.float64(hi)
    K = x.shape[1]
    for r in range(r0, r1):
        s = np.int64(0)
        for k in range(K):
            q = np.int64(_quantize_one(x[r, k], inv64, z, flo, fhi))
            out[r, k] = q
            s += q
        for k in range(K, out.shape[1]):
            out[r, k] = 0
        sums[r] = s


# ------------------------------------------------------------------------------ int8 GEMM (x86 AVX2)
# NumPy has no integer BLAS and LLVM's vectorizer does not find the 8-bit multiply-adds, so the micro-kernel of a
# dynamically quantized linear layer is written in LLVM IR (a numba intrinsic), the instructions fbgemm's AVX2
# kernels use: vpmaddubsw multiplies 32 unsigned bytes of activations by 32 signed bytes of weights and adds
# adjacent products to 16 int16 (saturating), vpmaddwd by ones adds adjacent int16 to 8 int32 accumulators. The
# int16 sums are exact while |a0 w0 + a1 w1| <= 32767: activations in [0, 127] (fbgemm's reduce_range, the reason it
# exists) against any int8 weights reach 2 * 127 * 128 = 32512. One tile is _MR rows of activations by _NR rows of
# weights, _MR * _NR ymm accumulators over the reduction in steps of 32 bytes; rows are padded with zeros to a
# multiple of 32 bytes. Measured on a 2-core AMD EPYC (Zen 3, AVX2): twice as fast as OpenBLAS's float32 GEMM on
# the same shapes. Callers check ``int8_gemm_usable()`` (an x86 host with AVX2, numba compiling for it)
# before calling: LLVM cannot lower these instructions anywhere else.

_MR, _NR = 2, 4


@intrinsic
def _u8s8_tile(typingctx: Any, a: Any, i0: Any, w: Any, j0: Any, c: Any, ci: Any, cj: Any, kp: Any) -> Any:
    """c[ci + r, cj + q] = sum_k a[i0 + r, k] * w[j0 + q, k] for r < _MR, q < _NR, k < kp (a positive multiple
    of 32): ``a`` uint8, ``w`` int8, ``c`` int32, each contiguous along its rows."""
    from llvmlite import ir  # type: ignore[import-untyped]
    sig = numba.types.void(a, i0, w, j0, c, ci, cj, kp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        arrays = [context.make_array(signature.args[n])(context, builder, value=args[n]) for n in (0, 2, 4)]
        i64, i32 = ir.IntType(64), ir.IntType(32)
        byte_ptr = ir.IntType(8).as_pointer()
        v32i8, v16i16, v8i32 = (ir.VectorType(ir.IntType(8), 32), ir.VectorType(ir.IntType(16), 16),
                                ir.VectorType(i32, 8))

        def declare(name: str, ret: Any, params: list[Any]) -> Any:
            return builder.module.globals.get(name) or ir.Function(builder.module, ir.FunctionType(ret, params), name)
        maddubs = declare("llvm.x86.avx2.pmadd.ub.sw", v16i16, [v32i8, v32i8])
        maddwd = declare("llvm.x86.avx2.pmadd.wd", v8i32, [v16i16, v16i16])

        def rows(arr: Any, first: Any, count: int) -> list[Any]:
            base, stride = builder.bitcast(arr.data, byte_ptr), builder.extract_value(arr.strides, 0)
            return [builder.gep(base, [builder.mul(builder.add(first, ir.Constant(i64, n)), stride)])
                    for n in range(count)]
        a_rows, w_rows = rows(arrays[0], args[1], _MR), rows(arrays[1], args[3], _NR)
        c_rows = rows(arrays[2], args[5], _MR)
        start = builder.block
        loop, done = builder.append_basic_block("u8s8_loop"), builder.append_basic_block("u8s8_done")
        builder.branch(loop)
        builder.position_at_end(loop)
        k = builder.phi(i64)
        k.add_incoming(ir.Constant(i64, 0), start)
        acc = []
        for _ in range(_MR * _NR):
            phi = builder.phi(v8i32)
            phi.add_incoming(ir.Constant(v8i32, [0] * 8), start)
            acc.append(phi)

        def load(row: Any) -> Any:
            return builder.load(builder.bitcast(builder.gep(row, [k]), v32i8.as_pointer()), align=1)
        xs = [load(row) for row in a_rows]
        ones = ir.Constant(v16i16, [1] * 16)
        sums = [None] * (_MR * _NR)
        for q in range(_NR):
            wq = load(w_rows[q])
            for r in range(_MR):
                pairs = builder.call(maddubs, [xs[r], wq])
                sums[r * _NR + q] = builder.add(acc[r * _NR + q], builder.call(maddwd, [pairs, ones]))
        k_next = builder.add(k, ir.Constant(i64, 32))
        k.add_incoming(k_next, builder.block)
        for phi, total in zip(acc, sums):
            phi.add_incoming(total, builder.block)
        builder.cbranch(builder.icmp_signed("<", k_next, args[7]), loop, done)
        builder.position_at_end(done)
        for n, total in enumerate(sums):
            r, q = divmod(n, _NR)
            value = builder.extract_element(total, ir.Constant(i32, 0))
            for lane in range(1, 8):
                value = builder.add(value, builder.extract_element(total, ir.Constant(i32, lane)))
            col = builder.add(args[6], ir.Constant(i64, q))
            at = builder.gep(c_rows[r], [builder.mul(col, ir.Constant(i64, 4))])   # c is int32: 4 bytes a column
            builder.store(value, builder.bitcast(at, i32.as_pointer()))
        return context.get_dummy_value()
    return sig, codegen


_COLS = 16 * _NR     # output columns computed before their output stage runs (while the int32 sums are in cache)


@_exact
def int8_linear_cols(a: Any, a_sums: Any, w: Any, col_offsets: Any, w_zps: Any, scales: Any, bias: Any, y: Any,
                     b0: int, b1: int) -> None:
    """Column blocks b0..b1-1 (of _NR columns) of a quantized linear layer's float output: ``a`` (M', K') uint8 and
    ``w`` (N', K') int8 the padded integers (M' a multiple of _MR, N' of _NR, K' of 32), ``a_sums`` (int32, M') the
    activations' row sums. The centred accumulator ``sum (a - a_zp)(w - w_zp) = S - w_zp sum a + (k a_zp w_zp -
    a_zp sum w)``, the last term the int32 ``col_offsets``, ``w_zps`` (int32) the weights' zero points; it goes to
    float32, times ``scales`` (float32: input scale times weight scale), plus ``bias`` (float32), fbgemm's output
    stage, into the float32 (M, N) ``y``."""
    M, N = y.shape
    kp = a.shape[1]
    sums = np.empty((a.shape[0], _COLS), np.int32)
    for c0 in range(b0, b1, _COLS // _NR):
        c1 = min(b1, c0 + _COLS // _NR)
        for b in range(c0, c1):
            for i0 in range(0, a.shape[0], _MR):
                _u8s8_tile(a, i0, w, b * _NR, sums, i0, (b - c0) * _NR, kp)  # type: ignore[call-arg]
        j0 = c0 * _NR
        width = min(N, c1 * _NR) - j0
        for i in range(M):
            s, yi, ai = sums[i], y[i, j0:j0 + width], a_sums[i]
            off, zp = col_offsets[j0:j0 + width], w_zps[j0:j0 + width]
            sc, bi = scales[j0:j0 + width], bias[j0:j0 + width]
            for j in range(width):
                acc = s[j] + off[j] - zp[j] * ai
                yi[j] = np.float32(np.float32(acc) * sc[j]) + bi[j]


# ------------------------------------------------------------------------------ runners
def quantize_rows_centred(x: Any, inv: float, zero_point: int, lo: int, hi: int) -> tuple[Any, Any]:
    """A 2-d float32 array quantized with ``1 / scale = inv`` and ``zero_point`` to [lo, hi], minus the zero point
    (float32, exact integers), and each row's sum of their magnitudes (float64), rows split over the intra-op
    threads."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    l1 = np.empty(x.shape[0], np.float64)
    compiled.split(_quantize_rows_centred, x.shape[0], compiled.row_grain(x.shape[1]), x, float(inv), int(zero_point),
           int(lo), int(hi), out, l1)
    return out, l1


_int8_gemm: bool | None = None     # whether the host runs the AVX2 int8 micro-kernel (decided once)


def int8_gemm_usable() -> bool:
    """Whether the int8 GEMM of dynamically quantized layers can run: compiled kernels enabled, an x86 host with
    AVX2, and numba compiling for the host (a generic target set by ``NUMBA_CPU_NAME`` lacks the instructions)."""
    global _int8_gemm
    if not compiled.is_enabled():
        return False
    if _int8_gemm is None:
        import numba
        from llvmlite import binding
        features = binding.get_host_cpu_features()
        config = numba.config
        _int8_gemm = (getattr(config, "CPU_NAME", None) in (None, "host") and not getattr(config, "CPU_FEATURES", None)
                      and bool(features.get("avx2", False)))
    return _int8_gemm


def int8_tile() -> tuple[int, int]:
    """(rows of activations, rows of weights) of the int8 micro-kernel's tile: the padding its operands need."""
    return _MR, _NR


def quantize_rows_u8(x: Any, inv: float, zero_point: int, lo: int, hi: int, rows: int, cols: int) -> tuple[Any, Any]:
    """A 2-d float32 array quantized with ``1 / scale = inv`` and ``zero_point`` to [lo, hi] as uint8, padded with
    zeros to (rows, cols), and each row's sum of integers (int32), rows split over the intra-op threads."""
    x = np.ascontiguousarray(x)
    out = np.empty((rows, cols), np.uint8)
    out[x.shape[0]:] = 0
    sums = np.zeros(rows, np.int32)
    compiled.split(_quantize_rows_u8, x.shape[0], compiled.row_grain(x.shape[1]), x, float(inv), int(zero_point),
                   int(lo), int(hi), out, sums)
    return out, sums


def int8_linear(a: Any, a_sums: Any, w: Any, col_offsets: Any, w_zps: Any, scales: Any, bias: Any, m: int,
                n: int) -> Any:
    """The float32 (m, n) output of a quantized linear layer from padded uint8 activations and int8 weights (see
    ``int8_linear_cols`` above), blocks of output columns split over the intra-op threads."""
    y = np.empty((m, n), np.float32)
    blocks = w.shape[0] // _NR
    per_block = a.shape[0] * a.shape[1] * _NR          # multiply-adds of one block of columns
    compiled.split(int8_linear_cols, blocks, parallel.GRAIN_SIZE * 64 // max(per_block, 1), a, a_sums, w, col_offsets,
           w_zps, scales, bias, y)
    return y
