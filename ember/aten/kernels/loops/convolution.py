"""The column matrix of a convolution (im2col) and its adjoint (col2im), 1 to 3 spatial dims; the
Winograd F(2x2, 3x3) tile transforms; the direct convolution of stride 1 and its weight gradient (callers:
``kernels/conv_algos.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten import parallel
from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _driver, _fma_4x16, _helper, _kernel, _registers, chunk

@_helper
def _inside(start: int, step: int, count: int, size: int) -> tuple[int, int]:
    """The taps u in [lo, hi) of start + u * step (0 <= u < count) that fall inside [0, size)."""
    lo = min(count, max(0, (step - 1 - start) // step))
    return lo, max(lo, min(count, (size - 1 - start) // step + 1))


@_helper
def _offset3(k: int, kh: int, kw: int) -> tuple[int, int, int]:
    """Kernel offset k (flat over kd x kh x kw) as (a, b, e)."""
    return k // (kh * kw), (k // kw) % kh, k % kw


@_kernel
def _im2col(x: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int,
           pd: int, ph: int, pw: int, dd: int, dh: int, dw: int, od: int, oh: int, ow: int, cols: Any, q0: int,
           q1: int) -> None:
    """The columns matrix of a convolution: cols[(c, a, b, e), (n, z, y, u)] = x[n, c, z sd - pd + a dd,
    y sh - ph + b dh, u sw - pw + e dw], 0 where that falls in the padding; x (N, C, D, H, W) and cols
    (C kd kh kw, N od oh ow) passed flat. Fills the (row, sample) pairs q0..q1-1, q = row * N + n, each a
    contiguous run of od oh ow values. The in-bounds run of each output line is found once, and the copy loops
    index with unsigned integers: numba tests a signed index for wrap-around on every element, which keeps a
    loop scalar (3-4x slower here)."""
    K = kd * kh * kw
    P = od * oh * ow
    usw = np.uint64(sw)
    for q in range(q0, q1):
        r = q // N
        n = q - r * N
        c = r // K
        a, b, e = _offset3(r - c * K, kh, kw)
        x0 = e * dw - pw
        lo, hi = _inside(x0, sw, ow, W)
        for oz in range(od):
            z = oz * sd - pd + a * dd
            for oy in range(oh):
                y = oy * sh - ph + b * dh
                o = np.uint64((r * N + n) * P + (oz * oh + oy) * ow)
                if z < 0 or z >= D or y < 0 or y >= H:
                    for u in range(np.uint64(ow)):
                        cols[o + u] = 0
                    continue
                for u in range(np.uint64(lo)):
                    cols[o + u] = 0
                src = np.uint64((((n * C + c) * D + z) * H + y) * W + x0 + lo * sw)
                dst = o + np.uint64(lo)
                if sw == 1:                       # unit stride: a loop LLVM turns into vector moves
                    for u in range(np.uint64(hi - lo)):
                        cols[dst + u] = x[src + u]
                else:
                    for u in range(np.uint64(hi - lo)):
                        cols[dst + u] = x[src + u * usw]
                for u in range(np.uint64(hi), np.uint64(ow)):
                    cols[o + u] = 0


@_kernel
def _col2im(cols: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int,
           pd: int, ph: int, pw: int, dd: int, dh: int, dw: int, od: int, oh: int, ow: int, gx: Any, q0: int,
           q1: int) -> None:
    """The adjoint of ``_im2col``: gx[n, c, ...] = the sum of the columns entries that read it (entries that read
    the padding are dropped); gx (N, C, D, H, W) flat. The planes q0..q1-1, q = n * C + c, are zeroed and filled
    (planes are independent, so ranges of them can run side by side)."""
    K = kd * kh * kw
    P = od * oh * ow
    plane = D * H * W
    usw = np.uint64(sw)
    for q in range(q0, q1):
        n = q // C
        c = q - n * C
        start = np.uint64(q * plane)
        for i in range(np.uint64(plane)):
            gx[start + i] = 0
        for k in range(K):
            r = c * K + k
            a, b, e = _offset3(k, kh, kw)
            x0 = e * dw - pw
            lo, hi = _inside(x0, sw, ow, W)
            for oz in range(od):
                z = oz * sd - pd + a * dd
                if z < 0 or z >= D:
                    continue
                for oy in range(oh):
                    y = oy * sh - ph + b * dh
                    if y < 0 or y >= H:
                        continue
                    src = np.uint64((r * N + n) * P + (oz * oh + oy) * ow + lo)
                    dst = np.uint64(((q * D + z) * H + y) * W + x0 + lo * sw)
                    if sw == 1:
                        for u in range(np.uint64(hi - lo)):
                            gx[dst + u] += cols[src + u]
                    else:
                        for u in range(np.uint64(hi - lo)):
                            gx[dst + u * usw] += cols[src + u]

# ------------------------------------------------------------------------------ Winograd F(2x2, 3x3) transforms
# A 3x3 convolution of stride 1 computes each 2x2 block of outputs from a 4x4 tile of the input with 16
# products per channel pair instead of 36 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
# 2016): Y = A^T [(G g G^T) * (B^T d B)] A, the products as 16 GEMMs over all tiles at once (conv_algos.py). These
# loops are the transforms: B^T d B of every input tile, A^T m A back to outputs, and A g A^T of the gradient's
# 2x2 tiles for the weight gradient. The tile index t = (n th + ty) tw + tx runs over samples and tile rows and
# columns; a transformed array is (16, channels, tiles), passed flat. The entries of B, A and G are 0, +-1 and
# 1/2, so a transform adds and subtracts only (G's halves are applied to the 3x3 weights, in float64). A loop
# keeps four output streams at a time and indexes with unsigned integers (see _im2col), so that LLVM vectorizes
# it; each takes its channel range last.

@_kernel
def _winograd_input(x: Any, N: int, C: int, H: int, W: int, p: int, th: int, tw: int, V: Any, c0: int,
                   c1: int) -> None:
    """V[4a + b, c, t] = (B^T d B)[a, b], d the 4x4 tile of x (N, C, H, W) at rows 2 ty - p.., columns
    2 tx - p.., zero outside x; B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]. Row a of B^T d
    combines two rows of the tile, so for each a the loop sweeps every tile of the channel, writing four streams
    from start to end (the channel's rows are re-read from cache for each a)."""
    T = N * th * tw
    L = 2 * tw + 2
    u = np.zeros(L, x.dtype)            # the tile row combination of B^T's row a, zero-padded to whole tiles
    uW, up, uL, utw = np.uint64(W), np.uint64(p), np.uint64(L), np.uint64(tw)
    for c in range(c0, c1):
        for a in range(4):
            # B^T's row a: +r0 - r2, +r1 + r2, -r1 + r2, +r1 - r3 (rows of the tile)
            ra = 0 if a == 0 else 1
            rb = 2 if a < 3 else 3
            sa = 1.0 if a != 2 else -1.0
            sb = -1.0 if a == 0 or a == 3 else 1.0
            b0 = np.uint64(((4 * a) * C + c) * T)
            S = np.uint64(C * T)
            for n in range(N):
                for ty in range(th):
                    ya = 2 * ty - p + ra
                    yb = 2 * ty - p + rb
                    ina = 0 <= ya < H
                    inb = 0 <= yb < H
                    for q in range(up):
                        u[q] = 0.0
                    if ina and inb:
                        srca = np.uint64(((n * C + c) * H + ya) * W)
                        srcb = np.uint64(((n * C + c) * H + yb) * W)
                        for v in range(uW):
                            u[v + up] = sa * x[srca + v] + sb * x[srcb + v]
                    elif ina:
                        srca = np.uint64(((n * C + c) * H + ya) * W)
                        for v in range(uW):
                            u[v + up] = sa * x[srca + v]
                    elif inb:
                        srcb = np.uint64(((n * C + c) * H + yb) * W)
                        for v in range(uW):
                            u[v + up] = sb * x[srcb + v]
                    else:
                        for v in range(uW):
                            u[v + up] = 0.0
                    for q in range(uW + up, uL):
                        u[q] = 0.0
                    o = b0 + np.uint64((n * th + ty) * tw)
                    for tx in range(utw):      # times B: four output streams
                        q = tx + tx
                        e0, e1, e2, e3 = u[q], u[q + 1], u[q + 2], u[q + 3]
                        V[o + tx] = e0 - e2
                        V[o + S + tx] = e1 + e2
                        V[o + 2 * S + tx] = e2 - e1
                        V[o + 3 * S + tx] = e1 - e3


@_kernel
def _winograd_output(M: Any, N: int, O: int, H: int, W: int, th: int, tw: int, y: Any, o0: int, o1: int) -> None:
    """y (N, O, H, W) from M (16, O, tiles): each tile's 2x2 block A^T m A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]],
    the last row and column of tiles cut at y's edge."""
    T = N * th * tw
    A = np.empty((4, tw), y.dtype)
    B = np.empty((4, tw), y.dtype)
    utw, S, half = np.uint64(tw), np.uint64(O * T), np.uint64(W // 2)
    for o in range(o0, o1):
        for n in range(N):
            for ty in range(th):
                k0 = np.uint64(o * T + (n * th + ty) * tw)
                for a in range(4):          # m A for each row a of the tiles
                    i0 = k0 + np.uint64(4 * a) * S
                    Aa, Ba = A[a], B[a]
                    for tx in range(utw):
                        i = i0 + tx
                        m1, m2 = M[i + S], M[i + 2 * S]
                        Aa[tx] = M[i] + m1 + m2
                        Ba[tx] = m1 - m2 - M[i + 3 * S]
                yy = 2 * ty
                dst = np.uint64(((n * O + o) * H + yy) * W)
                for tx in range(half):
                    y[dst + tx + tx] = A[0, tx] + A[1, tx] + A[2, tx]
                    y[dst + tx + tx + 1] = B[0, tx] + B[1, tx] + B[2, tx]
                if W % 2:
                    y[dst + half + half] = A[0, half] + A[1, half] + A[2, half]
                if yy + 1 < H:
                    dst = dst + np.uint64(W)
                    for tx in range(half):
                        y[dst + tx + tx] = A[1, tx] - A[2, tx] - A[3, tx]
                        y[dst + tx + tx + 1] = B[1, tx] - B[2, tx] - B[3, tx]
                    if W % 2:
                        y[dst + half + half] = A[1, half] - A[2, half] - A[3, half]


@_kernel
def _winograd_grad_output(g: Any, N: int, O: int, H: int, W: int, th: int, tw: int, Gt: Any, o0: int,
                         o1: int) -> None:
    """Gt[4a + b, o, t] = (A e A^T)[a, b], e the 2x2 tile of g (N, O, H, W) at (2 ty, 2 tx), zero beyond g's
    edge: the gradient of the products of Y = A^T [U * V] A with respect to U * V."""
    T = N * th * tw
    E = np.zeros((2, tw), g.dtype)         # even and odd columns of the tile's two rows
    D = np.zeros((2, tw), g.dtype)
    utw, S, half = np.uint64(tw), np.uint64(O * T), np.uint64(W // 2)
    for o in range(o0, o1):
        for n in range(N):
            for ty in range(th):
                yy = 2 * ty
                for a in range(2):
                    Ea, Da = E[a], D[a]
                    if yy + a < H:
                        src = np.uint64(((n * O + o) * H + yy + a) * W)
                        for tx in range(half):
                            Ea[tx] = g[src + tx + tx]
                            Da[tx] = g[src + tx + tx + 1]
                        if W % 2:
                            Ea[half] = g[src + half + half]
                            Da[half] = 0.0
                    else:
                        for tx in range(utw):
                            Ea[tx] = 0.0
                            Da[tx] = 0.0
                k0 = np.uint64(o * T + (n * th + ty) * tw)
                for a in range(4):          # row a of A e = [e0, e0 + e1, e0 - e1, -e1], then times A^T
                    i0 = k0 + np.uint64(4 * a) * S
                    for tx in range(utw):
                        if a == 0:
                            u, v = E[0, tx], D[0, tx]
                        elif a == 1:
                            u, v = E[0, tx] + E[1, tx], D[0, tx] + D[1, tx]
                        elif a == 2:
                            u, v = E[0, tx] - E[1, tx], D[0, tx] - D[1, tx]
                        else:
                            u, v = -E[1, tx], -D[1, tx]
                        i = i0 + tx
                        Gt[i] = u
                        Gt[i + S] = u + v
                        Gt[i + 2 * S] = u - v
                        Gt[i + 3 * S] = -v


@compiled.parallel_of(_im2col)
@_driver
def _im2col_parallel(x: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int,
                     sw: int, pd: int, ph: int, pw: int, dd: int, dh: int, dw: int, od: int, oh: int, ow: int,
                     cols: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _im2col(x, N, C, D, H, W, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow, cols, b, e)


@compiled.parallel_of(_col2im)
@_driver
def _col2im_parallel(cols: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int,
                     sw: int, pd: int, ph: int, pw: int, dd: int, dh: int, dw: int, od: int, oh: int, ow: int, gx: Any,
                     work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _col2im(cols, N, C, D, H, W, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow, gx, b, e)


@compiled.parallel_of(_winograd_input)
@_driver
def _winograd_input_parallel(x: Any, N: int, C: int, H: int, W: int, p: int, th: int, tw: int, V: Any, work: int,
                             chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _winograd_input(x, N, C, H, W, p, th, tw, V, b, e)


@compiled.parallel_of(_winograd_output)
@_driver
def _winograd_output_parallel(M: Any, N: int, O: int, H: int, W: int, th: int, tw: int, y: Any, work: int,
                              chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _winograd_output(M, N, O, H, W, th, tw, y, b, e)


@compiled.parallel_of(_winograd_grad_output)
@_driver
def _winograd_grad_output_parallel(g: Any, N: int, O: int, H: int, W: int, th: int, tw: int, Gt: Any, work: int,
                                   chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _winograd_grad_output(g, N, O, H, W, th, tw, Gt, b, e)


# ------------------------------------------------------------------------------ direct convolution (stride 1)
# Note [Direct convolution]
# A convolution of stride 1 with few channels spends im2col + GEMM's time on the columns matrix (k times the input,
# written and read back through memory) and on a GEMM too thin for BLAS (LeNet's 6 output channels). The direct loop
# reads the input where it is. Each sample's input is padded once into rows of width Wp = W + 2 pw, and the output
# is computed on the same grid: output position (oy, ox) is j = oy Wp + ox, and kernel tap t = (c, a, b) reads
# the input at j + off_t, off_t = c Hp Wp + a dh Wp + b dw -- for every j, so the output is a sum over taps of
# shifted contiguous runs (the "wide" output; its columns ox >= OW read past the row and are dropped). A block of
# 4 output channels x 16 consecutive j is 8 vectors of accumulators held in registers (``_registers``) across all
# the taps; each tap loads 2 vectors of input and broadcasts 4 weights into 8 FMAs. The weight gradient is the
# same grid the other way: dW[o, t] = sum over samples and j of g[n, o, j] x[n, j + off_t] with g laid out wide
# (zeros in the dropped columns), blocks of 4 channels x 2 taps in 8 running sums over every (n, j), which LLVM
# vectorizes over j (as stack accumulators indexed by lane it gathered instead). The input gradient is the direct
# convolution of the gradient with the flipped kernel (``conv_algos.py``), padded by the kernel's reach, so a block
# skips the kernel rows whose input rows are all padding for the output rows it holds. A block's sums run in a
# fixed order whatever the thread count.

DIRECT_LANES = 16          # consecutive outputs of a block (two float32 vectors)
DIRECT_CHANNELS = 4        # output channels of a block


@_kernel
def _direct(x: Any, S: int, Cplane: int, offs: Any, Cg: int, kh: int, kw: int, dh: int, top: int, bottom: int,
            wt: Any, G: int, nob: int, Og: int, J: int, OH: int, OW: int, Wp: int, out: Any, q0: int,
            q1: int) -> None:
    """out[n, g Og + o, oy, ox] = sum over taps t of wt[g, o // 4, t, o % 4] x[n S + g Cplane + offs[t] + oy Wp + ox]
    for the (sample, group, block of 4 channels) triples q = (n G + g) nob + ob in [q0, q1); x is the padded input
    (N samples of S values, with slack past the last row), out (N, G Og, OH, OW), both flat; the taps t = (c, a, b)
    over Cg x kh x kw. A block skips the kernel rows a that read only padding rows (outside [top, bottom)) for
    every output row it holds: the input gradient's full correlation pads by the kernel's reach."""
    acc = _registers(64)
    T = Cg * kh * kw
    Jp = (J + 15) // 16 * 16
    wide = np.empty(4 * Jp, np.float32)
    O = G * Og
    for q in range(q0, q1):
        ob = q % nob
        ng = q // nob
        g = ng % G
        n = ng // G
        base = np.uint64(n * S + g * Cplane)
        wb = np.uint64((g * nob + ob) * T * 4)
        for j0 in range(0, Jp, 16):
            for i in range(64):
                acc[i] = np.float32(0.0)
            oy0 = j0 // Wp
            oy1 = min(OH - 1, (j0 + 15) // Wp)
            a0 = max(0, (top - oy1 + dh - 1) // dh)      # the kernel rows some output row here reads inside
            a1 = min(kh, (bottom - 1 - oy0) // dh + 1)
            for c in range(Cg):
                for a in range(a0, a1):
                    t0 = (c * kh + a) * kw
                    for t in range(t0, t0 + kw):
                        u = base + np.uint64(offs[t] + j0)
                        wi = wb + np.uint64(4 * t)
                        _fma_4x16(acc, x, u, wt[wi], wt[wi + np.uint64(1)], wt[wi + np.uint64(2)],
                                  wt[wi + np.uint64(3)])
            for k in range(4):
                for lane in range(16):
                    wide[np.uint64(k * Jp + j0 + lane)] = acc[16 * k + lane]
        for k in range(min(4, Og - ob * 4)):
            o = g * Og + ob * 4 + k
            for oy in range(OH):
                src = np.uint64(k * Jp + oy * Wp)
                dst = np.uint64(((n * O + o) * OH + oy) * OW)
                for ox in range(np.uint64(OW)):
                    out[dst + ox] = wide[src + ox]


@compiled.parallel_of(_direct)
@_driver
def _direct_parallel(x: Any, S: int, Cplane: int, offs: Any, Cg: int, kh: int, kw: int, dh: int, top: int,
                     bottom: int, wt: Any, G: int, nob: int, Og: int, J: int, OH: int, OW: int, Wp: int, out: Any,
                     work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _direct(x, S, Cplane, offs, Cg, kh, kw, dh, top, bottom, wt, G, nob, Og, J, OH, OW, Wp, out, b, e)


@_kernel
def _direct_weight_grad(g: Any, Jp: int, x: Any, S: int, Cplane: int, offs: Any, T: int, G: int, N: int, Og: int,
                        nob: int, gw: Any, q0: int, q1: int) -> None:
    """gw[g Og + o, t] = sum over n and j of g[n, g, o, j] x[n S + g Cplane + offs[t] + j] for the (group, block
    of 4 channels, pair of taps) triples q = (g nob + ob) ntb + tb in [q0, q1); g is the output gradient laid out
    wide, (N, G, 4 nob, Jp) with zeros in the dropped columns, the padded channels and past J; gw (G Og, T). The
    eight sums are scalars that LLVM turns into eight vector accumulators over j (a reduction: fast math)."""
    ntb = (T + 1) // 2
    for q in range(q0, q1):
        tb = q % ntb
        gb = q // ntb
        ob = gb % nob
        grp = gb // nob
        t0 = 2 * tb
        t1 = min(t0 + 1, T - 1)
        s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = np.float32(0.0)
        for n in range(N):
            a0 = np.uint64(n * S + grp * Cplane + offs[t0])
            a1 = np.uint64(n * S + grp * Cplane + offs[t1])
            r0 = np.uint64(((n * G + grp) * nob + ob) * 4 * Jp)
            r1 = r0 + np.uint64(Jp)
            r2 = r0 + np.uint64(2 * Jp)
            r3 = r0 + np.uint64(3 * Jp)
            for j in range(np.uint64(Jp)):
                v0 = x[a0 + j]
                v1 = x[a1 + j]
                e0 = g[r0 + j]
                e1 = g[r1 + j]
                e2 = g[r2 + j]
                e3 = g[r3 + j]
                s00 += e0 * v0
                s01 += e1 * v0
                s02 += e2 * v0
                s03 += e3 * v0
                s10 += e0 * v1
                s11 += e1 * v1
                s12 += e2 * v1
                s13 += e3 * v1
        o = grp * Og + ob * 4
        k = Og - ob * 4              # channels of the block that exist
        gw[o * T + t0] = s00
        gw[o * T + t1] = s10
        if k > 1:
            gw[(o + 1) * T + t0] = s01
            gw[(o + 1) * T + t1] = s11
        if k > 2:
            gw[(o + 2) * T + t0] = s02
            gw[(o + 2) * T + t1] = s12
        if k > 3:
            gw[(o + 3) * T + t0] = s03
            gw[(o + 3) * T + t1] = s13


@compiled.parallel_of(_direct_weight_grad)
@_driver
def _direct_weight_grad_parallel(g: Any, Jp: int, x: Any, S: int, Cplane: int, offs: Any, T: int, G: int, N: int,
                                 Og: int, nob: int, gw: Any, work: int, chunks: int) -> None:
    for c in prange(chunks):
        b, e = chunk(work, chunks, c)
        _direct_weight_grad(g, Jp, x, S, Cplane, offs, T, G, N, Og, nob, gw, b, e)


# ------------------------------------------------------------------------------ runners
def _conv_geometry(x_shape: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any) -> tuple[Any, ...]:
    """A 1-, 2- or 3-d convolution's (N, C, D, H, W) shape and its 3-d window arguments (leading spatial dims of
    size 1 with a window of 1)."""
    lead = 3 - len(ksize)
    shape = tuple(x_shape[:2]) + (1,) * lead + tuple(x_shape[2:])
    args = ((1,) * lead + tuple(ksize) + (1,) * lead + tuple(stride) + (0,) * lead + tuple(padding) +
            (1,) * lead + tuple(dilation) + (1,) * lead + tuple(out_sp))
    return shape, args


def im2col(x: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any, cols: Any) -> Any:
    """Fills ``cols`` (C * prod(ksize), N * prod(out_sp)), C-contiguous, with the windows of x (N, C, *spatial),
    1 to 3 spatial dims, zero padding; (row, sample) runs split over the intra-op threads."""
    kernel = _im2col
    shape, args = _conv_geometry(x.shape, ksize, stride, padding, dilation, out_sp)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = cols.reshape(-1)
    work = cols.shape[0] * shape[0]
    compiled.split(kernel, work, parallel.GRAIN_SIZE * work // max(cols.size, 1), flat, *shape, *args, out)
    return cols


def col2im(cols: Any, in_shape: Any, ksize: Any, stride: Any, padding: Any, dilation: Any, out_sp: Any) -> Any:
    """The input-shaped sum of the columns matrix ``cols`` (the adjoint of :func:`im2col`): a new array of
    ``in_shape`` and cols' dtype; (sample, channel) planes split over the intra-op threads."""
    kernel = _col2im
    shape, args = _conv_geometry(in_shape, ksize, stride, padding, dilation, out_sp)
    gx = np.empty(shape, cols.dtype)
    flat, out = np.ascontiguousarray(cols).reshape(-1), gx.reshape(-1)
    work = shape[0] * shape[1]
    compiled.split(kernel, work, parallel.GRAIN_SIZE * work // max(cols.size, 1), flat, *shape, *args, out)
    return gx.reshape(tuple(in_shape))


def winograd_input(x: Any, pad: int, th: int, tw: int, V: Any) -> Any:
    """Fills ``V`` (16, C, N th tw) with the Winograd F(2x2, 3x3) transforms of x's (N, C, H, W) 4x4 tiles at
    (2 ty - pad, 2 tx - pad); channels split over the intra-op threads."""
    N, C, H, W = x.shape
    flat = np.ascontiguousarray(x).reshape(-1)
    compiled.split(_winograd_input, C, compiled.row_grain(16 * N * th * tw), flat, N, C, H, W, pad, th, tw,
                   V.reshape(-1))
    return V


def winograd_output(M: Any, y: Any, th: int, tw: int) -> Any:
    """Fills ``y`` (N, O, H, W), C-contiguous, from the tile products M (16, O, N th tw); channels split over the
    intra-op threads."""
    N, O, H, W = y.shape
    compiled.split(_winograd_output, O, compiled.row_grain(16 * N * th * tw), np.ascontiguousarray(M).reshape(-1), N,
                   O, H, W, th, tw, y.reshape(-1))
    return y


def winograd_grad_output(g: Any, th: int, tw: int, Gt: Any) -> Any:
    """Fills ``Gt`` (16, O, N th tw) with the transforms of g's (N, O, H, W) 2x2 tiles; channels split over the
    intra-op threads."""
    N, O, H, W = g.shape
    flat = np.ascontiguousarray(g).reshape(-1)
    compiled.split(_winograd_grad_output, O, compiled.row_grain(16 * N * th * tw), flat, N, O, H, W, th, tw,
                   Gt.reshape(-1))
    return Gt


def _direct_geometry(x_shape: Any, w_shape: Any, padding: Any, dilation: Any, groups: int) -> tuple[Any, ...]:
    """The padded grid of a 2-d direct convolution: (Hp, Wp, OH, OW, S, taps' offsets) -- S the values a padded
    sample takes (its channels' planes and the slack the last block's wide rows read past them)."""
    N, C, H, W = x_shape
    kh, kw = w_shape[2:]
    (ph, pw), (dh, dw) = padding, dilation
    Hp, Wp = H + 2 * ph, W + 2 * pw
    OH, OW = Hp - dh * (kh - 1), Wp - dw * (kw - 1)
    Cg = C // groups
    c, a, b = np.unravel_index(np.arange(Cg * kh * kw), (Cg, kh, kw))
    offs = (c * (Hp * Wp) + a * dh * Wp + b * dw).astype(np.int64)
    S = C * Hp * Wp + dw * (kw - 1) + DIRECT_LANES
    return Hp, Wp, OH, OW, S, offs


def direct_padded(x: Any, padding: Any, S: int) -> Any:
    """x (N, C, H, W) zero-padded by ``padding`` into N rows of S float32 values (the slack past the planes zero)."""
    N, C, H, W = x.shape
    ph, pw = padding
    Hp, Wp = H + 2 * ph, W + 2 * pw
    xp = np.zeros((N, S), np.float32)
    xp[:, :C * Hp * Wp].reshape(N, C, Hp, Wp)[:, :, ph:ph + H, pw:pw + W] = x
    return xp


def direct(x: Any, w: Any, padding: Any, dilation: Any, groups: int) -> Any:
    """The 2-d convolution of stride 1 of float32 x (N, C, H, W) with w (O, C / groups, kh, kw): Note [Direct
    convolution]; blocks of samples and channels split over the intra-op threads."""
    N, C = x.shape[:2]
    O, Cg, kh, kw = w.shape
    Og = O // groups
    Hp, Wp, OH, OW, S, offs = _direct_geometry(x.shape, w.shape, padding, dilation, groups)
    xp = direct_padded(x, padding, S)
    nob = (Og + DIRECT_CHANNELS - 1) // DIRECT_CHANNELS
    T = Cg * kh * kw
    wt = np.zeros((groups, nob * DIRECT_CHANNELS, T), np.float32)   # (G, nob, T, 4): a tap's 4 weights together
    wt[:, :Og] = w.reshape(groups, Og, T)
    wt = np.ascontiguousarray(wt.reshape(groups, nob, DIRECT_CHANNELS, T).transpose(0, 1, 3, 2))
    out = np.empty((N, O, OH, OW), np.float32)
    work = N * groups * nob
    compiled.split(_direct, work, compiled.row_grain(2 * DIRECT_CHANNELS * T * OH * Wp), xp.reshape(-1), S,
                   Cg * Hp * Wp, offs, Cg, kh, kw, dilation[0], padding[0], padding[0] + x.shape[2], wt.reshape(-1),
                   groups, nob, Og, OH * Wp, OH, OW, Wp, out.reshape(-1))
    return out


def direct_weight_grad(gout: Any, x: Any, w_shape: Any, padding: Any, dilation: Any, groups: int) -> Any:
    """The weight gradient (O, C / groups, kh, kw) of ``direct``'s convolution from its output gradient gout
    (N, O, OH, OW), float32: Note [Direct convolution]."""
    N, O, OH, OW = gout.shape
    Cg, kh, kw = w_shape[1:]
    Og = O // groups
    Hp, Wp, OH_, OW_, S, offs = _direct_geometry(x.shape, w_shape, padding, dilation, groups)
    xp = direct_padded(x, padding, S)
    nob = (Og + DIRECT_CHANNELS - 1) // DIRECT_CHANNELS
    Jp = (OH * Wp + 7) // 8 * 8
    gwide = np.zeros((N, groups, nob * DIRECT_CHANNELS, Jp), np.float32)
    gwide[:, :, :Og, :OH * Wp].reshape(N, groups, Og, OH, Wp)[..., :OW] = gout.reshape(N, groups, Og, OH, OW)
    T = Cg * kh * kw
    gw = np.empty((O, T), np.float32)
    work = groups * nob * ((T + 1) // 2)
    compiled.split(_direct_weight_grad, work, compiled.row_grain(4 * N * Jp), gwide.reshape(-1), Jp, xp.reshape(-1),
                   S, Cg * Hp * Wp, offs, T, groups, N, Og, nob, gw.reshape(-1))
    return gw.reshape(tuple(w_shape))
