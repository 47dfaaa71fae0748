"""Products of stacks of matrices as one BLAS call per matrix, made from compiled code (callers:
``kernels/linalg.py``: bmm, baddbmm, matmul, addmm; ``kernels/attention.py``; ``kernels/conv_algos.py``).

Note [Batched GEMM]
NumPy's ``matmul`` over a stack of matrices calls BLAS once per matrix, one after the other, and each call is
too small for OpenBLAS to thread (it threads from 2^18 multiply-adds up; 64 x (64x32 @ 32x64), the attention
products of a small GPT, is 2^17 each); with a transposed operand (``k.transpose(-1, -2)``) it takes a loop of
its own, twice as slow. PyTorch runs the matrices of a ``bmm`` side by side on its threads. Here they are split
over the intra-op threads by a parallel driver (Note [Splitting a loop over threads] in ``compiled.py``), and
each thread calls NumPy's own OpenBLAS ``cblas_?gemm`` through its address (``_cblas_gemm``: an LLVM call
through a pointer, so the loop is cached like any other), the operands' layouts passed as transpose flags and
leading dimensions, not copied. While the threads run, OpenBLAS computes on its calling thread
(``OpenBLAS.single_threaded`` in ``ember/aten/parallel.py``): a GEMM that threaded itself inside the parallel
loop would oversubscribe the cores (32 x (128x64 @ 64x128): 7.6 ms instead of 0.26, measured). OpenBLAS's
``openblas_set_num_threads_local`` sets its global count in the pthreads build NumPy ships, so the count is set
around the loop, for all callers at once.

One matrix stays NumPy's product, which OpenBLAS threads itself: splitting its rows or columns over ember's
threads measured no faster alone (1024x128 @ 128x384: 319 us against 326) and slower in a GPT training step.
``matmul(..., alpha, beta)`` is also addmm's and baddbmm's GEMM, C = alpha A B + beta C on a copy of ``self``,
as PyTorch's CPU kernels compute them: one pass over the result instead of three.

Measured on a 2-core Xeon (AVX-512, 2 threads; ``np.matmul`` -> here, PyTorch's ``bmm``): 64 x (64x32 @ 32x64)
116 -> 72 us (45); the same with the second operand transposed 204 -> 114 (54); 32 x (128x64 @ 64x128)
717 -> 334 (166). OpenBLAS's small-matrix kernel for a transposed second operand is the slow one (256 x
(16x16 @ 16x16): 108 us against 27 untransposed).

OpenBLAS 0.3.31's own ``cblas_sgemm_batch_strided`` was tried first: in the scipy-openblas wheel NumPy 2.4
ships, it crashes (segmentation fault) on every matrix of at most 10^6 multiply-adds, the size from which it
takes its small-matrix kernels, and works above; so it is not used.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import prange, types
from numba.extending import intrinsic

from ember.aten import parallel
from ember.c10.exceptions import warn_once
from ember.aten.kernels.loops._common import _exact, _exact_driver, chunk

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
MACS_PER_RANGE = 1 << 16      # multiply-adds below which a range would cost more to hand over than to compute


def _cblas_gemm_typed(typingctx: Any, fn: Any, width: Any, ta: Any, tb: Any, m: Any, n: Any, k: Any, alpha: Any,
                      a: Any, lda: Any, b: Any, ldb: Any, beta: Any, c: Any, ldc: Any) -> Any:
    """``cblas_?gemm(RowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`` through the function's
    address ``fn``; the matrices are addresses too, the sizes are passed as integers of ``width``'s type (the
    library's: int32 or int64), alpha and beta as floats of their own type (float32 for sgemm)."""
    sig = types.void(fn, width, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i32, idx = ir.IntType(32), ir.IntType(signature.args[1].bitwidth)
        flt = context.get_value_type(signature.args[7])
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, idx, idx, idx, flt, ptr, idx, ptr, idx, flt, ptr, idx])

        def size(v: Any, t: Any) -> Any:
            return builder.trunc(v, idx) if t.bitwidth > idx.width else builder.sext(v, idx) \
                if t.bitwidth < idx.width else v
        a_ = list(args)
        t_ = list(signature.args)
        call = [ir.Constant(i32, _ROW_MAJOR), builder.trunc(a_[2], i32), builder.trunc(a_[3], i32),
                size(a_[4], t_[4]), size(a_[5], t_[5]), size(a_[6], t_[6]), a_[7],
                builder.inttoptr(a_[8], ptr), size(a_[9], t_[9]), builder.inttoptr(a_[10], ptr), size(a_[11], t_[11]),
                a_[12], builder.inttoptr(a_[13], ptr), size(a_[14], t_[14])]
        builder.call(builder.inttoptr(a_[0], fnty.as_pointer()), call)
        return context.get_dummy_value()
    return sig, codegen


_cblas_gemm: Any = intrinsic(_cblas_gemm_typed)


# The parameters of one batched product, packed in an int64 array (one argument: numba's dispatcher pays for each)
_TA, _TB, _M, _N, _K, _PA, _LDA, _PB, _LDB, _PC, _LDC = range(11)


@_exact
def gemm_items(fn: int, width: Any, alpha: Any, beta: Any, q: Any, off: Any, i0: int, i1: int) -> None:
    """Matrices i0..i1 of a batched product: C_i = alpha op(A_i) @ op(B_i) + beta C_i (beta 0: C is not read).
    ``q`` holds the parameters (``_TA`` ...); matrix i of A is at address q[_PA] + off[0, i] (bytes), B's at
    q[_PB] + off[1, i], C's at q[_PC] + off[2, i]."""
    for i in range(i0, i1):
        _cblas_gemm(fn, width, q[_TA], q[_TB], q[_M], q[_N], q[_K], alpha, q[_PA] + off[0, i], q[_LDA],
                    q[_PB] + off[1, i], q[_LDB], beta, q[_PC] + off[2, i], q[_LDC])


@_exact_driver
def _gemm_items_driver(fn: int, width: Any, alpha: Any, beta: Any, q: Any, off: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        i0, i1 = chunk(work, chunks, c)
        gemm_items(fn, width, alpha, beta, q, off, i0, i1)


def _layout(x: Any) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) of the matrices of x (..., rows, cols) as BLAS reads them: rows
    contiguous (not transposed) or columns contiguous (transposed); None if neither (the caller copies)."""
    r, c = x.shape[-2:]
    isz = x.itemsize
    s1, s2 = x.strides[-2:]
    if not x.flags.aligned or s1 % isz or s2 % isz:
        return None
    if (s2 == isz or c == 1) and (r == 1 or s1 >= c * isz):
        return _NO_TRANS, max(s1 // isz if r > 1 else c, c, 1)
    if (s1 == isz or r == 1) and (c == 1 or s2 >= r * isz):
        return _TRANS, max(s2 // isz if c > 1 else r, r, 1)
    return None


def _offsets(x: Any, batch: tuple[int, ...]) -> Any:
    """The byte offsets of x's matrices, for x broadcast to ``batch`` + its matrix shape, in C order (int64)."""
    strides = np.broadcast_to(x, batch + x.shape[-2:]).strides[:len(batch)]
    off = np.zeros(1, np.int64)
    for d, s in zip(batch, strides):
        if d > 1:
            off = (off[:, None] + np.arange(d, dtype=np.int64) * s).reshape(-1)
    return off


_offset_cache: dict[Any, Any] = {}


def _all_offsets(a: Any, b: Any, out: Any, batch: tuple[int, ...]) -> Any:
    """(3, items) int64: the offsets of A's, B's and C's matrices (kept for the 64 latest layouts: a training step
    repeats its shapes)."""
    key = (batch, a.shape[:-2], a.strides[:-2], b.shape[:-2], b.strides[:-2], out.strides[:-2])
    off = _offset_cache.get(key)
    if off is None:
        if len(_offset_cache) >= 64:
            _offset_cache.clear()
        off = _offset_cache[key] = np.stack([_offsets(a, batch), _offsets(b, batch), _offsets(out, batch)])
    return off


_checked: dict[Any, bool] = {}


def available(dtype: Any) -> bool:
    """Whether the batched GEMM runs for ``dtype`` (float32 / float64) in this process: NumPy's BLAS is an
    OpenBLAS whose ``cblas_?gemm`` ember found, and products through it (operands transposed or not, a batch
    broadcast, alpha and beta) equal NumPy's -- checked once per dtype."""
    dtype = np.dtype(dtype)
    ok = _checked.get(dtype)
    if ok is None:
        blas = parallel.numpy_openblas()
        name = f"cblas_{_NAME[dtype == np.float32]}gemm"
        ok = blas is not None and blas.gemm[_NAME[dtype == np.float32]] != 0
        if blas is not None and ok and not _self_check(dtype):    # a library ember misreads: say so, use NumPy's
            warn_once(f"gemm-{dtype}", f"ember: products through {name} of {blas.path} disagree with NumPy's; "
                      f"stacked matrix products use NumPy's matmul")
            ok = False
        _checked[dtype] = ok
    return ok


def _self_check(dtype: Any) -> bool:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 4)).astype(dtype)
    b = rng.standard_normal((3, 4, 6)).astype(dtype)
    c = rng.standard_normal((3, 5, 6)).astype(dtype)
    at, bt = (np.swapaxes(np.swapaxes(x, 1, 2).copy(), 1, 2) for x in (a, b))
    wide = np.matmul(a.astype(np.float64), b.astype(np.float64))
    cases = (((a, b, None, 1, 0), wide), ((at, bt, None, 1, 0), wide),
             ((a, b[:1], None, 1, 0), np.matmul(a.astype(np.float64), b[:1].astype(np.float64))),
             ((a, b, c.copy(), 2, 0.5), 2 * wide + 0.5 * c))
    return all(np.allclose(_run(*args, serial=True), want, rtol=1e-4, atol=1e-4) for args, want in cases)


def matmul(a: Any, b: Any, out: Any = None, alpha: Any = 1, beta: Any = 0) -> Any:
    """``alpha * np.matmul(a, b) + beta * out`` for a (..., M, K) and b (..., K, N) of one dtype with
    ``available(dtype)``, batch dims broadcast, into ``out`` (the result's shape and dtype; read only where beta is
    not 0) or a new C-contiguous array: Note [Batched GEMM]."""
    return _run(a, b, out, alpha, beta, serial=False)


def _rows_writable(out: Any) -> bool:
    """Whether BLAS can write the matrices of ``out`` in place: rows contiguous, aligned."""
    isz = out.itemsize
    M, N = out.shape[-2:]
    return bool(out.flags.aligned) and (out.strides[-1] == isz or N == 1) and \
        (M == 1 or (out.strides[-2] % isz == 0 and out.strides[-2] >= N * isz))


def _run(a: Any, b: Any, out: Any, alpha: Any, beta: Any, *, serial: bool) -> Any:
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    target = None
    if out is None or not _rows_writable(out):
        target, out = out, np.empty(batch + (M, N), a.dtype)      # a temporary, copied back
        if beta != 0:
            out[...] = target
    if out.size:
        if K == 0:
            out *= beta
        else:
            _gemm(a, b, out, batch, alpha, beta, serial)
    if target is not None:
        target[...] = out
        return target
    return out


def _gemm(a: Any, b: Any, out: Any, batch: tuple[int, ...], alpha: Any, beta: Any, serial: bool) -> None:
    la, lb = _layout(a), _layout(b)
    if la is None:
        a = np.ascontiguousarray(a)
        la = _layout(a)
    if lb is None:
        b = np.ascontiguousarray(b)
        lb = _layout(b)
    assert la is not None and lb is not None
    (ta, lda), (tb, ldb) = la, lb
    M, K = a.shape[-2:]
    N = b.shape[-1]
    blas = parallel.numpy_openblas()
    assert blas is not None
    single = a.dtype == np.float32
    off = _all_offsets(a, b, out, batch)
    items = off.shape[1]
    chunks = 1 if serial else min(items, parallel.ranges(items * M * N * K, MACS_PER_RANGE))
    ldc = out.strides[-2] // out.itemsize if M > 1 else max(N, 1)
    q = np.array((ta, tb, M, N, K, a.ctypes.data, lda, b.ctypes.data, ldb, out.ctypes.data, ldc), np.int64)
    scalar = np.float32 if single else np.float64
    args = (blas.gemm[_NAME[single]], _WIDTH[blas.int64], scalar(alpha), scalar(beta), q, off)
    if chunks <= 1:             # one matrix (which OpenBLAS threads itself, when it is large), or little work
        gemm_items(*args, 0, items)
        return
    with blas.single_threaded():
        parallel.run_split(items, max(1, items // chunks), lambda i0, i1: gemm_items(*args, i0, i1),
                           lambda n: _gemm_items_driver(*args, items, n))


_NAME = {True: "s", False: "d"}                     # float32 or not: sgemm / dgemm
_WIDTH = {True: np.int64(0), False: np.int32(0)}    # the library's integers 64-bit or not
