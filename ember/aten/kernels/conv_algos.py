"""Convolution algorithms (the role of ``aten/src/ATen/native/ConvUtils.h`` / cuDNN's algorithm choice).

Each pass of a convolution -- forward, input gradient, weight gradient -- has two algorithms, a third for
convolutions of stride 1 and a fourth for 3x3 ones:

* ``"gemm"``: the columns matrix (im2col) ``(C*k, N*P)`` -- a row per (channel, kernel offset), a column per
  (sample, output position) -- so that each pass is one GEMM per group over the whole batch: the forward
  ``W @ cols`` (then (O, N, P) -> NCHW), the weight gradient ``grad @ cols^T``, the input gradient
  ``W^T @ grad`` followed by col2im (each column entry added back where it was read).  im2col and col2im
  run as compiled loops (``compiled.im2col`` / ``col2im``) for float32 / float64 NumPy arrays, as sliding-window
  copies and one strided add per kernel offset otherwise.  Fast, but the columns take ``k`` times the input's
  memory.
* ``"offset"``: one GEMM per kernel offset over channels-last slices of the input, accumulated; no columns
  matrix, so it suits large inputs and big kernels where im2col would not fit in memory or cache.

* ``"direct"``: for stride 1 (1-d and 2-d, float32 on NumPy), the direct loops of ``loops/convolution.py`` (Note
  [Direct convolution]): blocks of 4 output channels x 16 outputs accumulated in registers over the kernel's
  taps, read straight from the padded input -- no columns matrix and no BLAS call. The input gradient is the
  same loop on the flipped kernel, the weight gradient a loop of 8 running sums per block.

* ``"winograd"``: Winograd's F(2x2, 3x3) (2-d, 3x3, stride 1, one group, float32 on NumPy): each 2x2 block of
  outputs from a 4x4 input tile with 16 products per channel pair instead of 36, as 16 GEMMs over all tiles; the
  tile transforms are compiled loops (``loops/convolution.py``). The input gradient is the same algorithm on the
  flipped kernel, the weight gradient 16 GEMMs of transformed gradient and input tiles. Its rounding differs
  from a GEMM's by a few float32 ulps of the largest term.

``run`` picks one: with ``benchmark`` on (``ember.backends.cudnn.benchmark = True``, as in PyTorch) it
times every algorithm that applies once for each new (pass, shapes, dtype, stride, padding, dilation, groups,
array module) key and caches the fastest; otherwise a heuristic takes ``"winograd"`` where it applies, both channel
counts are at least ``WINOGRAD_MIN_CHANNELS`` and the batch has at least ``WINOGRAD_MIN_TILES`` output tiles, else
``"direct"`` where it applies and a group has at most ``DIRECT_MAX_CHANNEL_PAIRS`` (input, output) channel pairs,
else ``"gemm"`` unless its columns would exceed ``GEMM_MAX_COLUMN_BYTES``."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any, Callable

import threading
import time

import numpy as np

from ember.aten.context import global_context
from ember.aten.kernels import compiled, loops
from ember.aten.kernels.linalg import stacked_matmul

ALGORITHMS = ("gemm", "offset", "winograd", "direct")
GEMM_MAX_COLUMN_BYTES = 1 << 30
WORKSPACE_MAX_BYTES = 256 << 20    # columns up to this size are built in a per-thread buffer kept between calls
_workspace = threading.local()
_cache: dict[Any, str] = {}                  # key -> algorithm name chosen by benchmarking
_last: dict[str, str] = {}                   # pass -> algorithm used by the latest call (for tests and learners)
force = None                       # an algorithm name to use everywhere (tests), or None
_COMPILED_DTYPES = (np.float32, np.float64)   # the dtypes whose im2col / col2im run compiled


def _windows(xp: Any, x: Array, ksize: Any, stride: Any, dilation: Any) -> Any:
    """(N, C, out..., k...) view of x's windows (x already padded)."""
    nd = len(ksize)
    span = tuple(d * (k - 1) + 1 for k, d in zip(ksize, dilation))
    w = xp.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride) + \
        tuple(slice(None, None, d) for d in dilation)
    return w[sl]


def _pad(xp: Any, x: Array, padding: Any, scratch: Any = False) -> Any:
    """x with ``padding`` zeros on both sides of each spatial dim (only the border is zero-filled); in the
    padding scratch buffer if ``scratch`` (for a copy that dies inside the caller)."""
    if not any(padding):
        return x
    shape = x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    out = _scratch(xp, shape, x.dtype, "pad") if scratch else xp.empty(shape, dtype=x.dtype)
    lead = (slice(None), slice(None))
    for d, p in enumerate(padding):
        if p:
            before = (slice(None),) * d
            out[lead + before + (slice(0, p),)] = 0
            out[lead + before + (slice(out.shape[2 + d] - p, None),)] = 0
    out[lead + tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:]))] = x
    return out


def _scratch(xp: Any, shape: Any, dtype: Any, slot: Any = 'columns') -> Any:
    """An uninitialised array for a temporary that dies inside the calling kernel (the columns matrix).

    Like cuDNN's workspace: the same per-thread buffer serves every call, so a large columns matrix does not
    cost a fresh allocation each time -- above glibc's mmap threshold (32 MiB at most) every ``empty`` is a
    new mapping whose pages fault in one by one, which took as long as filling them (a 75 MB im2col: 7.1 ms
    fresh, 3.7 ms into a reused buffer, ``docs/performance.md``).  CuPy has its own caching pool."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if xp is not np or nbytes > WORKSPACE_MAX_BYTES:
        return xp.empty(shape, dtype=dtype)
    bufs = _workspace.__dict__.setdefault("bufs", {})
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(max(nbytes, 1), dtype=np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def release_workspace() -> Any:
    """Frees this thread's scratch buffers; the next convolution allocates new ones."""
    _workspace.__dict__.pop("bufs", None)


def _offset_slice(off: Any, dilation: Any, stride: Any, out_sp: Any) -> Any:
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dilation, stride, out_sp))


def _columns(xp: Any, x: Array, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any) -> Any:
    """(C * K, N * P) contiguous columns of x's windows -- rows (channel, kernel offset), columns (sample, output
    position), so group g's rows are one block and a GEMM's result is (O, N, P) -- truncated to ``out_sp``
    output positions, in the columns scratch buffer."""
    N, C = x.shape[:2]
    K, P = int(np.prod(ksize)), int(np.prod(out_sp))
    buf = _scratch(xp, (C * K, N * P), x.dtype)
    if compiled.usable(xp, x, dtypes=_COMPILED_DTYPES):
        return loops.convolution.im2col(x, ksize, stride, padding, dilation, out_sp, buf)
    nd = len(ksize)
    cols = _windows(xp, _pad(xp, x, padding, scratch=True), ksize, stride, dilation)      # N, C, out..., k...
    cols = cols[(slice(None), slice(None)) + tuple(slice(0, n) for n in out_sp)]
    cols = cols.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))  # C, k, N, out
    buf.reshape(cols.shape)[...] = cols
    return buf


def _col2im(xp: Any, gc: Any, in_shape: Any, ksize: Any, stride: Any, padding: Any, dilation: Any,
            out_sp: Any) -> Any:
    """The input-shaped sum of a (C * K, N * P) columns matrix: each entry added where ``_columns`` read it."""
    if compiled.usable(xp, gc, dtypes=_COMPILED_DTYPES):
        return loops.convolution.col2im(gc, in_shape, ksize, stride, padding, dilation, out_sp)
    N, C = in_shape[:2]
    gc = gc.reshape((C,) + tuple(ksize) + (N,) + tuple(out_sp))
    padded = tuple(s + 2 * p for s, p in zip(in_shape[2:], padding))
    gx = xp.zeros((N, C) + padded, dtype=gc.dtype)
    for off in np.ndindex(*ksize):
        gx[(slice(None), slice(None)) + _offset_slice(off, dilation, stride, out_sp)] += \
            xp.moveaxis(gc[(slice(None),) + off], 1, 0)
    return _crop(gx, padding, in_shape)


def _grad_rows(xp: Any, gout: Any, groups: int) -> Any:
    """grad_output (N, O, out...) as (G, O / G, N * P): the layout of a GEMM against the columns."""
    N, O = gout.shape[:2]
    return xp.ascontiguousarray(gout.reshape(N, O, -1).transpose(1, 0, 2)).reshape(groups, O // groups, -1)


# ------------------------------------------------------------------------------ gemm (im2col)
def _fwd_gemm(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    ksize = w.shape[2:]
    out_sp = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1
                   for i, k, s, p, d in zip(x.shape[2:], ksize, stride, padding, dilation))
    cols = _columns(xp, x, ksize, stride, padding, dilation, out_sp)                  # a scratch buffer
    N, O = x.shape[0], w.shape[0]
    out = stacked_matmul(xp, w.reshape(groups, O // groups, -1), cols.reshape(groups, cols.shape[0] // groups, -1))
    out = xp.ascontiguousarray(out.reshape(O, N, -1).transpose(1, 0, 2))              # G, Og, N*P -> N, O, P
    return out.reshape((N, O) + out_sp)


def _gin_gemm(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    O = w.shape[0]
    g = _grad_rows(xp, gout, groups)                                                    # G, Og, N*P
    wt = w.reshape(groups, O // groups, -1).transpose(0, 2, 1)                          # G, Cg*K, Og
    gc = _scratch(xp, (groups, wt.shape[1], g.shape[2]), np.result_type(wt.dtype, g.dtype))
    stacked_matmul(xp, wt, g, out=gc)
    return _col2im(xp, gc.reshape(-1, g.shape[2]), in_shape, w.shape[2:], stride, padding, dilation, gout.shape[2:])


def _gw_gemm(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    cols = _columns(xp, x, w_shape[2:], stride, padding, dilation, gout.shape[2:])
    g = _grad_rows(xp, gout, groups)                                                    # G, Og, N*P
    gw = stacked_matmul(xp, g, cols.reshape(groups, cols.shape[0] // groups, -1).transpose(0, 2, 1))  # G, Og, Cg*K
    return gw.reshape(w_shape)


# ------------------------------------------------------------------------------ offset (GEMM per kernel offset)
def _fwd_offset(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    ksize = w.shape[2:]
    xpad = _pad(xp, x, padding)
    out_sp = tuple((p - d * (k - 1) - 1) // s + 1 for p, k, s, d in zip(xpad.shape[2:], ksize, stride, dilation))
    xt = xp.moveaxis(xpad, 1, -1)                                            # N, sp..., C (a view)
    N, C = x.shape[:2]
    O = w.shape[0]
    cg, og = C // groups, O // groups
    out = xp.zeros((N,) + out_sp + (O,), dtype=np.result_type(x.dtype, w.dtype))
    for off in np.ndindex(*ksize):
        sl = (slice(None),) + _offset_slice(off, dilation, stride, out_sp)
        for g in range(groups):
            xs = xt[sl + (slice(g * cg, (g + 1) * cg),)]
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]          # Og, Cg
            out[..., g * og:(g + 1) * og] += xs @ wk.T
    return xp.moveaxis(out, -1, 1)


def _gin_offset(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any,
                groups: Any) -> Any:
    N, C = in_shape[:2]
    O = w.shape[0]
    cg, og = C // groups, O // groups
    ksize = w.shape[2:]
    padded = tuple(s + 2 * p for s, p in zip(in_shape[2:], padding))
    gx = xp.zeros((N, C) + padded, dtype=gout.dtype)
    out_sp = gout.shape[2:]
    for off in np.ndindex(*ksize):
        sl = _offset_slice(off, dilation, stride, out_sp)
        for g in range(groups):
            go = gout[:, g * og:(g + 1) * og]                                 # N, Og, out...
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]          # Og, Cg
            contrib = xp.tensordot(go, wk, axes=((1,), (0,)))                 # N, out..., Cg
            gx[(slice(None), slice(g * cg, (g + 1) * cg)) + sl] += xp.moveaxis(contrib, -1, 1)
    return _crop(gx, padding, in_shape)


def _gw_offset(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any,
               groups: Any) -> Any:
    nd = x.ndim - 2
    ksize = w_shape[2:]
    xpad = _pad(xp, x, padding)
    out_sp = gout.shape[2:]
    C, O = x.shape[1], w_shape[0]
    cg, og = C // groups, O // groups
    sp_axes = (0,) + tuple(range(2, 2 + nd))
    gw = xp.empty(w_shape, dtype=np.result_type(gout.dtype, x.dtype))
    for off in np.ndindex(*ksize):
        xs = xpad[(slice(None), slice(None)) + _offset_slice(off, dilation, stride, out_sp)]
        for g in range(groups):
            gw[(slice(g * og, (g + 1) * og), slice(None)) + off] = xp.tensordot(
                gout[:, g * og:(g + 1) * og], xs[:, g * cg:(g + 1) * cg], axes=(sp_axes, sp_axes))
    return gw


# ------------------------------------------------------------------------------ winograd (F(2x2, 3x3))
_WINOGRAD_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
# G g G^T for every 3x3 kernel g at once: entry (a, b) of the transform is sum_ij G[a, i] G[b, j] g[i, j], the row
# a*4+b of kron(G, G) against the 9 kernel entries -- one GEMM (16, 9) x (9, O*C) whose (16, O*C) result is the
# transformed weights already in the layout the 16 products take. (A three-operand einsum took 18 times longer
# for 512x512 channels, more than the convolution's products.) Float64: the result rounds once, to float32.
_WINOGRAD_K = np.kron(_WINOGRAD_G, _WINOGRAD_G)
WINOGRAD_MIN_CHANNELS = 16     # below this the transforms cost more than the products they save
# ... and below this many 2x2 output tiles in the batch: the weights' transform (O*C*16 entries per call) and
# 16 thin GEMMs outweigh the products saved. Measured, 2 threads, Intel Xeon (AVX-512), each pass alone, gemm /
# winograd ms: 512->512 on 16x512x4x4 (64 tiles) forward 9.6 / 17.7, input gradient 7.4 / 23.2; 128->128 on
# 8x128x10x10 (200) 1.9 / 2.2; on 16x128x14x14 (784) 6.2 / 5.3 forward, par backward; 64->64 on 8x64x56x56
# (6272) 18.7 / 13.5 forward.
WINOGRAD_MIN_TILES = 1024


def winograd_applies(xp: Any, dtype: Any, w_shape: Any, stride: Any, padding: Any, dilation: Any,
                     groups: Any) -> bool:
    """Whether the Winograd algorithm computes this convolution: 2-d, 3x3, stride 1, no dilation, one group, the
    same padding of 0 to 2 on both sides of both dims, float32 NumPy arrays with the compiled loops in use."""
    return (len(w_shape) == 4 and tuple(w_shape[2:]) == (3, 3) and tuple(stride) == (1, 1)
            and tuple(dilation) == (1, 1) and groups == 1 and padding[0] == padding[1] and 0 <= padding[0] <= 2
            and np.dtype(dtype) == np.float32 and compiled.usable(xp))


def _tiles(out_hw: Any) -> tuple[int, int]:
    return (out_hw[0] + 1) // 2, (out_hw[1] + 1) // 2


def _fwd_winograd(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    """Y = A^T [(G g G^T) * (B^T d B)] A over every 4x4 input tile d (Note in ``loops/convolution.py``): the 16
    entries of the transformed tiles are 16 GEMMs (O, C) x (C, tiles), 2.25 times fewer products than im2col's."""
    N, C, H, W = x.shape
    O, p = w.shape[0], padding[0]
    out_hw = (H + 2 * p - 2, W + 2 * p - 2)
    th, tw = _tiles(out_hw)
    T = N * th * tw
    V = loops.convolution.winograd_input(x, p, th, tw, _scratch(xp, (16, C, T), x.dtype, "winograd_tiles"))
    U = _WINOGRAD_K @ w.reshape(O * C, 9).T.astype(np.float64)                         # 16, O*C
    M = _scratch(xp, (16, O, T), x.dtype, "winograd_products")
    stacked_matmul(xp, U.astype(x.dtype).reshape(16, O, C), V, out=M)
    return loops.convolution.winograd_output(M, np.empty((N, O) + out_hw, x.dtype), th, tw)


def _gin_winograd(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any,
                  groups: Any) -> Any:
    """The input gradient is the full correlation of the gradient with the flipped kernel, channels swapped:
    a 3x3 convolution with padding 2 - p, by the same algorithm."""
    wt = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    p = 2 - padding[0]
    return _fwd_winograd(xp, gout, wt, stride, (p, p), dilation, groups)


def _gw_winograd(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any,
                 groups: Any) -> Any:
    """dL/dg = G^T [sum over tiles of (A e A^T) * (B^T d B)] G: 16 GEMMs (O, tiles) x (tiles, C) of the gradient's
    and the input's transformed tiles."""
    N, C = x.shape[:2]
    O = gout.shape[1]
    th, tw = _tiles(gout.shape[2:])
    T = N * th * tw
    V = loops.convolution.winograd_input(x, padding[0], th, tw, _scratch(xp, (16, C, T), x.dtype, "winograd_tiles"))
    E = loops.convolution.winograd_grad_output(gout, th, tw, _scratch(xp, (16, O, T), gout.dtype, "winograd_products"))
    gU = stacked_matmul(xp, E, V.transpose(0, 2, 1))                                   # 16, O, C
    gw = gU.reshape(16, O * C).T.astype(np.float64) @ _WINOGRAD_K                       # O*C, 9: G^T gU G
    return gw.astype(x.dtype).reshape(w_shape)


# ------------------------------------------------------------------------------ direct (stride 1)
# The direct loops (no BLAS) take a stride-1 convolution that Winograd's heuristic leaves, up to this many (input,
# output) channel pairs per group; above it a GEMM's blocking reuses each loaded value over more channels than the
# direct loop's 4. Measured, 2-core AMD EPYC (Zen 3, AVX2), each algorithm in its own process, forward / input
# gradient / weight gradient in ms, gemm -> direct: LeNet's 1->6 5x5 on 64x1x28x28 2.0 / 1.2 / 2.2 -> 0.32 / 0.85 /
# 1.05, 6->16 on 64x6x14x14 2.4 / 1.9 / 2.3 -> 0.50 / 1.1 / 0.90, 64->64 3x3 on 8x64x16x16 3.9 / 3.7 / 4.0 -> 1.8 /
# 1.9 / 2.4 (512 tiles: no Winograd), 3->64 3x3 on 32x3x32x32 6.6 / 3.7 / 4.8 -> 1.5 / 2.2 / 2.9; 64->128 1x1 on
# 16x64x16x16 2.1 / 1.8 / 1.7 -> 0.87 / 0.86 / 1.3; but 128->128 3x3 on 16x128x16x16 16.4 / 14.4 / 10.9 -> 12.3 /
# 12.0 / 18.6 and 256->256 on 16x256x8x8 14.6 / 14.1 / 14.9 -> 14.8 / 16.2 / 22.5. Where Winograd applies with
# its tiles it stays ahead: the ResNet stack's 64->64 on 32x64x32x32, timed inside its training step, Winograd
# 24.8 / 23.8 / 26.6 against direct 27.5 / 31.1 / 43.2.
DIRECT_MAX_CHANNEL_PAIRS = 64 * 64


def direct_applies(xp: Any, dtype: Any, pass_name: str, w_shape: Any, a: Array, extra: Any, stride: Any,
                   padding: Any, dilation: Any) -> bool:
    """Whether the direct loops compute this pass (Note [Direct convolution] in ``loops/convolution.py``): 1-d or
    2-d, stride 1, float32 NumPy arrays with the compiled loops in use; for the input gradient (``a`` the output
    gradient, ``extra`` the input's shape), a padding of at most the dilated kernel's reach and the input of the
    size the convolution implies (no output padding)."""
    if not (len(w_shape) in (3, 4) and all(s == 1 for s in stride) and np.dtype(dtype) == np.float32
            and compiled.usable(xp)):
        return False
    if pass_name == "input_grad":
        reach = [d * (k - 1) for d, k in zip(dilation, w_shape[2:])]
        return all(p <= r for p, r in zip(padding, reach)) and \
            tuple(extra[2:]) == tuple(o + r - 2 * p for o, r, p in zip(a.shape[2:], reach, padding))
    return True


def _planar(*arrays: Any) -> list[Any]:
    """1-d convolution arrays (N, C, L) / (O, C, k) as 2-d ones of height 1."""
    return [a if a.ndim == 4 else a.reshape(a.shape[:2] + (1,) + a.shape[2:]) for a in arrays]


def _pair(v: Any, fill: int) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if len(v) == 2 else (fill, int(v[0]))


def _fwd_direct(xp: Any, x: Array, w: Any, stride: Any, padding: Any, dilation: Any, groups: Any) -> Any:
    x4, w4 = _planar(x, w)
    out = loops.convolution.direct(x4, w4, _pair(padding, 0), _pair(dilation, 1), groups)
    return out if x.ndim == 4 else out.reshape(out.shape[:2] + out.shape[3:])


def _gin_direct(xp: Any, gout: Any, w: Any, in_shape: Any, stride: Any, padding: Any, dilation: Any,
                groups: Any) -> Any:
    """The input gradient of a stride-1 convolution is the full correlation of the gradient with the flipped
    kernel, input and output channels swapped within each group: a direct convolution padded by d (k - 1) - p."""
    O, Cg = w.shape[:2]
    Og = O // groups
    ksize = w.shape[2:]
    flipped = w[(slice(None), slice(None)) + (slice(None, None, -1),) * len(ksize)]
    wt = np.ascontiguousarray(flipped.reshape((groups, Og, Cg) + ksize).swapaxes(1, 2)).reshape(
        (groups * Cg, Og) + ksize)
    back = tuple(d * (k - 1) - p for d, k, p in zip(dilation, ksize, padding))
    return _fwd_direct(xp, gout, wt, stride, back, dilation, groups)


def _gw_direct(xp: Any, gout: Any, x: Array, w_shape: Any, stride: Any, padding: Any, dilation: Any,
               groups: Any) -> Any:
    """The direct weight gradient multiplies the zeros of the gradient's dropped columns with input values no
    output reads; an inf or NaN there would turn a 0 into NaN, so an input with one takes the GEMM."""
    if not np.isfinite(x).all():
        return _gw_gemm(xp, gout, x, w_shape, stride, padding, dilation, groups)
    g4, x4 = _planar(gout, x)
    w4 = tuple(w_shape) if len(w_shape) == 4 else tuple(w_shape[:2]) + (1,) + tuple(w_shape[2:])
    gw = loops.convolution.direct_weight_grad(g4, x4, w4, _pair(padding, 0), _pair(dilation, 1), groups)
    return gw.reshape(w_shape)


def _crop(gx: Any, padding: Any, in_shape: Any) -> Any:
    if any(padding):
        return gx[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_shape[2:]))]
    return gx


IMPLS: dict[str, dict[str, Callable[..., Any]]] = {
    "forward": {"gemm": _fwd_gemm, "offset": _fwd_offset, "winograd": _fwd_winograd, "direct": _fwd_direct},
    "input_grad": {"gemm": _gin_gemm, "offset": _gin_offset, "winograd": _gin_winograd, "direct": _gin_direct},
    "weight_grad": {"gemm": _gw_gemm, "offset": _gw_offset, "winograd": _gw_winograd, "direct": _gw_direct}}


def _channels(pass_name: str, a: Array, b: Array, extra: Any) -> tuple[Any, int, int]:
    """(weight shape, input channels, output channels) of a pass's arguments."""
    if pass_name == "forward":
        return b.shape, a.shape[1], b.shape[0]
    if pass_name == "input_grad":
        return b.shape, b.shape[1], b.shape[0]
    return tuple(extra), b.shape[1], a.shape[1]


def _column_bytes(pass_name: Any, a: Array, b: Array, extra: Any) -> Any:
    """Bytes of the gemm algorithm's columns matrix for this call."""
    if pass_name == "forward":
        x, w = a, b
        k = int(np.prod(w.shape[2:]))
        return x.shape[0] * x.shape[1] * k * int(np.prod(x.shape[2:])) * x.itemsize
    if pass_name == "input_grad":
        gout, w = a, b
        return extra[0] * extra[1] * int(np.prod(w.shape[2:])) * int(np.prod(gout.shape[2:])) * gout.itemsize
    gout, x = a, b
    return x.shape[0] * x.shape[1] * int(np.prod(extra[2:])) * int(np.prod(gout.shape[2:])) * x.itemsize


def _tile_count(pass_name: str, a: Array, b: Array, extra: Any, padding: Any) -> int:
    """The Winograd algorithm's 2x2 tiles over the batch for this pass (3x3, stride 1): of the output for the
    forward, of the input for the input gradient, of the gradient for the weight gradient."""
    if pass_name == "forward":
        hw = tuple(s + 2 * p - 2 for s, p in zip(a.shape[2:], padding))
    elif pass_name == "input_grad":
        hw = tuple(extra[2:])
    else:
        hw = tuple(a.shape[2:])
    th, tw = _tiles(hw)
    return int(a.shape[0]) * th * tw


def run(pass_name: Any, xp: Any, a: Array, b: Array, extra: Any, stride: Any, padding: Any, dilation: Any,
        groups: Any) -> Any:
    """Runs ``pass_name`` with the chosen algorithm; ``extra`` is the input shape (input_grad), the weight
    shape (weight_grad) or None (forward)."""
    impls = IMPLS[pass_name]
    w_shape, c_in, c_out = _channels(pass_name, a, b, extra)
    winograd = winograd_applies(xp, a.dtype, w_shape, stride, padding, dilation, groups) and a.dtype == b.dtype
    direct = a.dtype == b.dtype and direct_applies(xp, a.dtype, pass_name, w_shape, a, extra, stride, padding,
                                                   dilation)
    candidates = tuple(n for n in ALGORITHMS if (n != "winograd" or winograd) and (n != "direct" or direct))
    if force is not None:
        algo = force if force in candidates else "gemm"
    elif global_context.benchmark_cudnn:
        key = (pass_name, xp.__name__, tuple(a.shape), tuple(b.shape), None if extra is None else tuple(extra),
               str(a.dtype), str(b.dtype), tuple(stride), tuple(padding), tuple(dilation), groups)
        algo = _cache.get(key)
        if algo is None:                   # time every candidate once, keep the fastest (and its result)
            best: tuple[float, str, Any] | None = None
            for name in candidates:
                t0 = time.perf_counter()
                r = impls[name](xp, a, b, *([] if extra is None else [extra]), stride, padding, dilation, groups)
                if xp is not np:
                    xp.cuda.Device().synchronize()
                dt = time.perf_counter() - t0
                if best is None or dt < best[0]:
                    best = (dt, name, r)
            assert best is not None
            _cache[key] = best[1]
            _last[pass_name] = best[1]
            return best[2]
    elif winograd and min(c_in, c_out) >= WINOGRAD_MIN_CHANNELS and _tile_count(pass_name, a, b, extra, padding) \
            >= WINOGRAD_MIN_TILES:
        algo = "winograd"
    elif direct and (c_in // groups) * (c_out // groups) <= DIRECT_MAX_CHANNEL_PAIRS:
        algo = "direct"
    elif _column_bytes(pass_name, a, b, extra) <= GEMM_MAX_COLUMN_BYTES:
        algo = "gemm"
    else:
        algo = "offset"
    _last[pass_name] = algo
    return impls[algo](xp, a, b, *([] if extra is None else [extra]), stride, padding, dilation, groups)
