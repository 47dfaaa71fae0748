"""The loops of ember's fused kernels, compiled by numba (imported only through ``compiled.py``, on first use).

The math kernels (GELU, the softmax and layer-norm rows, attention's rows) make one pass per stage over
C-contiguous float32 arrays: they read each input element once, compute in float64 registers and write one
float32 result, where the NumPy kernel they replace makes a dozen passes with as many temporaries. The sections
further down say where a family differs: index work (pooling, scatter, im2col / col2im), the optimizers'
updates (float32 rounding op by op, no fast-math) and the Mersenne Twister (integer arithmetic).

The math loops are written so that LLVM vectorizes them (4 float64 lanes with AVX2): no calls into libm, no
branches but selects, and ``error_model="numpy"`` (numba's default Python error model checks every division for
zero, which keeps a loop scalar). The fast-math flags allow contraction into FMAs and reassociation, never the
assumption that no value is NaN or infinite, so NaN and inf propagate as in PyTorch. ``nogil`` lets the
intra-op threads run chunks of one array side by side.

The special functions are evaluated from their textbook series, in float64:

- ``_exp_le1(u)`` = e^u for u <= 1: (e^(u/128))^128, the inner power by its Taylor polynomial of degree 12
  (|u/128| <= 0.86, truncation 2e-11 relative), then seven squarings (relative error 3e-9 at worst);
  below -110 the result is 0 (e^-110 already underflows float32);
- ``_erfc_ge0(z)`` = erfc(z) for z >= 0: Numerical Recipes' Chebyshev fit t * exp(-z^2 + P(t)),
  t = 1 / (1 + z/2), fractional error below 1.2e-7 everywhere -- so GELU's tail 0.5 x erfc(-x/sqrt 2) keeps
  its relative accuracy far out, where 1 + erf(x) would cancel;
- ``_one_plus_tanh(u)`` = 1 + tanh(u) from e^(-2|u|), without the cancellation of 1 + tanh(u) for u << 0.
"""
from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.extending import intrinsic

_FLAGS = {"contract", "arcp", "reassoc", "afn", "nsz"}  # fast math without nnan / ninf
_helper = numba.njit(inline="always", error_model="numpy", fastmath=_FLAGS)
_kernel = numba.njit(nogil=True, cache=True, error_model="numpy", fastmath=_FLAGS)

_SQRT1_2 = 0.7071067811865476            # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327       # 1 / sqrt(2 pi)
_TANH_BETA = 0.7978845608028654          # sqrt(2 / pi)
_TANH_KAPPA = 0.044715


@_helper
def _exp_le1(u: float) -> float:
    v = max(u, -110.0) * 0.0078125
    p = 1.0 + v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (
        1.0 / 720 + v * (1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (
            1.0 / 39916800 + v * (1.0 / 479001600))))))))))))
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return p if u >= -110.0 else 0.0


@_helper
def _erfc_ge0(z: float) -> float:
    t = 1.0 / (1.0 + 0.5 * z)
    return t * _exp_le1(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))


@_helper
def _two_phi(x: float) -> float:
    """2 Phi(x) = erfc(-x / sqrt 2) = 1 + erf(x / sqrt 2)."""
    z = x * _SQRT1_2
    e = _erfc_ge0(abs(z))
    return 2.0 - e if z >= 0.0 else e


@_helper
def _one_plus_tanh(u: float) -> float:
    """1 + tanh(u) = 2 / (1 + e^(-2u)), evaluated with e^(-2|u|) <= 1 on either side of 0 (for u < 0 it is
    2 e^(2u) / (1 + e^(2u))), so GELU's far negative tail keeps its relative accuracy."""
    e = _exp_le1(-2.0 * abs(u))
    return 2.0 / (1.0 + e) if u >= 0.0 else 2.0 * e / (1.0 + e)


@_kernel
def gelu_erf(x: Any, out: Any) -> None:
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = 0.5 * v * _two_phi(v)


@_kernel
def gelu_tanh(x: Any, out: Any) -> None:
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = 0.5 * v * _one_plus_tanh(_TANH_BETA * (v + _TANH_KAPPA * v * v * v))


@_kernel
def threshold_backward(g: Any, x: Any, threshold: float, out: Any) -> None:
    """0 where x <= threshold, else g (relu's backward): a select, so an inf or NaN gradient where x <= threshold
    gives 0, as PyTorch's kernel (a product with the mask would give NaN)."""
    t = np.float32(threshold)
    for i in range(x.size):
        out[i] = np.float32(0.0) if x[i] <= t else g[i]


@_kernel
def gelu_erf_backward(g: Any, x: Any, out: Any) -> None:
    """g * (Phi(x) + x phi(x))."""
    for i in range(x.size):
        v = np.float64(x[i])
        out[i] = np.float64(g[i]) * (0.5 * _two_phi(v) + v * _INV_SQRT_2PI * _exp_le1(-0.5 * v * v))


@_kernel
def gelu_tanh_backward(g: Any, x: Any, out: Any) -> None:
    """g * d/dx [x/2 (1 + tanh(beta (x + kappa x^3)))] = g * ((1 + t)/2 + x/2 (1 - t^2) beta (1 + 3 kappa x^2)),
    with 1 - t^2 = (1 + t)(1 - t) = (1 + tanh(u))(1 + tanh(-u))."""
    for i in range(x.size):
        v = np.float64(x[i])
        v2 = v * v
        u = _TANH_BETA * (v + _TANH_KAPPA * v2 * v)
        p, m = _one_plus_tanh(u), _one_plus_tanh(-u)
        out[i] = np.float64(g[i]) * (0.5 * p + 0.5 * v * p * m * _TANH_BETA * (1.0 + 3.0 * _TANH_KAPPA * v2))


# PyTorch's float32 SiLU divides by 1 + e^-x, which overflows to inf below -ln(FLT_MAX): there its sigmoid is 0
# and silu(x) = x / inf is -0 where the float64 value would be a float32 subnormal.
_SILU_FLOOR = -88.72283935546875


@_kernel
def silu(x: Any, out: Any) -> None:
    """x * sigmoid(x)."""
    for i in range(x.size):
        v = np.float64(x[i])
        s = _sigmoid(v) if v >= _SILU_FLOOR else 0.0
        out[i] = v * s


@_kernel
def silu_backward(g: Any, x: Any, out: Any) -> None:
    """g * s (1 + x (1 - s)), s = sigmoid(x) (NaN at x = inf, as PyTorch's: 1 + inf * 0)."""
    for i in range(x.size):
        v = np.float64(x[i])
        s = _sigmoid(v) if v >= _SILU_FLOOR else 0.0
        out[i] = np.float64(g[i]) * s * (1.0 + v * (1.0 - s))


@_kernel
def max_pool3d(x: Any, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int, pd: int, ph: int, pw: int, dd: int,
               dh: int, dw: int, out: Any, idx: Any) -> None:
    """Max pooling of planes x (P, D, H, W) into out / idx (P, OD, OH, OW), idx flat over (D, H, W). PyTorch's
    CPU rule: the first in-bounds element of the window starts as the index with value -inf; an element
    replaces the maximum when it is greater or NaN (so the last NaN of a window wins, and an all -inf window
    answers its first element). Windows are clipped to the input (padding never wins)."""
    P, D, H, W = x.shape
    OD, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    for p in range(P):
        for od in range(OD):
            z0 = od * sd - pd
            for oh in range(OH):
                y0 = oh * sh - ph
                for ow in range(OW):
                    x0 = ow * sw - pw
                    best = -np.inf
                    at = -1
                    for a in range(kd):
                        z = z0 + a * dd
                        if z < 0 or z >= D:
                            continue
                        for b in range(kh):
                            y = y0 + b * dh
                            if y < 0 or y >= H:
                                continue
                            for c in range(kw):
                                xx = x0 + c * dw
                                if xx < 0 or xx >= W:
                                    continue
                                v = x[p, z, y, xx]
                                i = (z * H + y) * W + xx
                                if at < 0:
                                    at = i
                                if v > best or v != v:
                                    best = v
                                    at = i
                    out[p, od, oh, ow] = best
                    idx[p, od, oh, ow] = at


@_kernel
def scatter_add_rows(out: Any, idx: Any, src: Any) -> None:
    """out[r, idx[r, j]] += src[r, j] for every row r, in order (max pooling's backward: indices flat over
    each plane)."""
    for r in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            out[r, idx[r, j]] += src[r, j]


@_kernel
def index_add_rows(out: Any, index: Any, src: Any) -> None:
    """out[index[i], :] += src[i, :] for every i, in order (``index_add`` along dim 0 of 2-d row blocks:
    embedding's backward)."""
    for i in range(index.shape[0]):
        row = index[i]
        for j in range(src.shape[1]):
            out[row, j] += src[i, j]


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
def im2col(x: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int,
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
def col2im(cols: Any, N: int, C: int, D: int, H: int, W: int, kd: int, kh: int, kw: int, sd: int, sh: int, sw: int,
           pd: int, ph: int, pw: int, dd: int, dh: int, dw: int, od: int, oh: int, ow: int, gx: Any, q0: int,
           q1: int) -> None:
    """The adjoint of ``im2col``: gx[n, c, ...] = the sum of the columns entries that read it (entries that read
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


# ------------------------------------------------------------------------------ batch norm over channels
# x (N, C, S) C-contiguous, passed flat (first, then its sizes): channel c is N runs of S values. Each loop takes its
# channel range last; sums are float64.

@_kernel
def batch_norm_stats(x: Any, N: int, C: int, S: int, mean: Any, var: Any, c0: int, c1: int) -> None:
    """Per channel: the mean and the biased variance over its N S values, in two passes (mean, then the squared
    deviations from it)."""
    uS = np.uint64(S)
    count = N * S
    for c in range(c0, c1):
        s = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                s += x[base + i]
        m = s / count
        q = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                d = x[base + i] - m
                q += d * d
        mean[c] = m
        var[c] = q / count


@_kernel
def batch_norm_apply(x: Any, N: int, C: int, S: int, alpha: Any, beta: Any, out: Any, c0: int, c1: int) -> None:
    """out = x alpha[c] + beta[c]."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        a, b = np.float64(alpha[c]), np.float64(beta[c])
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                out[base + i] = x[base + i] * a + b


@_kernel
def batch_norm_backward_sums(g: Any, N: int, C: int, S: int, x: Any, mean: Any, sum_g: Any, dot: Any, c0: int,
                             c1: int) -> None:
    """Per channel: sum(g) and sum(g (x - mean)), one pass."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        m = np.float64(mean[c])
        s = 0.0
        d = 0.0
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                gv = np.float64(g[base + i])
                s += gv
                d += gv * (x[base + i] - m)
        sum_g[c] = s
        dot[c] = d


@_kernel
def batch_norm_backward_input(g: Any, N: int, C: int, S: int, x: Any, mean: Any, k1: Any, k2: Any, k3: Any,
                              out: Any, c0: int, c1: int) -> None:
    """out = g k1[c] + (x - mean[c]) k2[c] + k3[c]."""
    uS = np.uint64(S)
    for c in range(c0, c1):
        m, a, b, e = np.float64(mean[c]), np.float64(k1[c]), np.float64(k2[c]), np.float64(k3[c])
        for n in range(N):
            base = np.uint64((n * C + c) * S)
            for i in range(uS):
                out[base + i] = g[base + i] * a + (x[base + i] - m) * b + e


# ------------------------------------------------------------------------------ Winograd F(2x2, 3x3) transforms
# A 3x3 convolution of stride 1 computes each 2x2 block of outputs from a 4x4 tile of the input with 16
# products per channel pair instead of 36 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
# 2016): Y = A^T [(G g G^T) * (B^T d B)] A, the products as 16 GEMMs over all tiles at once (conv_algos.py). These
# loops are the transforms: B^T d B of every input tile, A^T m A back to outputs, and A g A^T of the gradient's
# 2x2 tiles for the weight gradient. The tile index t = (n th + ty) tw + tx runs over samples and tile rows and
# columns; a transformed array is (16, channels, tiles), passed flat. The entries of B, A and G are 0, +-1 and
# 1/2, so a transform adds and subtracts only (G's halves are applied to the 3x3 weights, in float64). A loop
# keeps four output streams at a time and indexes with unsigned integers (see im2col), so that LLVM vectorizes
# it; each takes its channel range last.

@_kernel
def winograd_input(x: Any, N: int, C: int, H: int, W: int, p: int, th: int, tw: int, V: Any, c0: int,
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
def winograd_output(M: Any, N: int, O: int, H: int, W: int, th: int, tw: int, y: Any, o0: int, o1: int) -> None:
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
def winograd_grad_output(g: Any, N: int, O: int, H: int, W: int, th: int, tw: int, Gt: Any, o0: int,
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


# ------------------------------------------------------------------------------ row kernels (softmax, layer norm)
# Each takes a C-contiguous float32 (R, n) array and the rows r0..r1-1 to do, so that ranges of rows run on the
# intra-op threads side by side; sums are float64.

@_kernel
def softmax_rows(x: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """softmax (or log_softmax) of each row: m = max, e = exp(x - m), out = e / sum(e) (or x - m - log(sum(e))).
    A row whose maximum is not finite (a NaN, +inf, or -inf throughout) is NaN throughout, as PyTorch's
    x - max makes it. exp runs on arguments <= 0 there, the domain of ``_exp_le1``."""
    n = x.shape[1]
    for r in range(r0, r1):
        m = -np.inf
        for j in range(n):
            v = x[r, j]
            m = v if (v > m or v != v) else m
        if not (m > -np.inf and m < np.inf):
            for j in range(n):
                out[r, j] = np.nan
            continue
        m64 = np.float64(m)
        s = 0.0
        if log:
            for j in range(n):
                s += _exp_le1(np.float64(x[r, j]) - m64)
            shift = m64 + np.log(s)
            for j in range(n):
                out[r, j] = np.float64(x[r, j]) - shift
        else:
            for j in range(n):
                e = _exp_le1(np.float64(x[r, j]) - m64)
                out[r, j] = e
                s += e
            inv = 1.0 / s
            for j in range(n):
                out[r, j] = np.float64(out[r, j]) * inv


@_kernel
def softmax_backward_rows(g: Any, y: Any, out: Any, log: bool, r0: int, r1: int) -> None:
    """PyTorch's _softmax_backward_data per row, out = y (g - sum(g y)); or _log_softmax_backward_data,
    out = g - exp(y) sum(g). exp(y) goes through ``_exp_le1`` when the row's y are <= 1 (log-probabilities
    are <= 0), through libm's exp otherwise (a caller's arbitrary ``output``, NaN)."""
    n = g.shape[1]
    for r in range(r0, r1):
        s = 0.0
        if log:
            top = -np.inf
            for j in range(n):
                s += np.float64(g[r, j])
                v = y[r, j]
                top = v if (v > top or v != v) else top
            if top <= 1.0:
                for j in range(n):
                    out[r, j] = np.float64(g[r, j]) - _exp_le1(np.float64(y[r, j])) * s
            else:
                for j in range(n):
                    out[r, j] = np.float64(g[r, j]) - np.exp(np.float64(y[r, j])) * s
        else:
            for j in range(n):
                s += np.float64(g[r, j]) * np.float64(y[r, j])
            for j in range(n):
                out[r, j] = np.float64(y[r, j]) * (np.float64(g[r, j]) - s)


@_kernel
def layer_norm_rows(x: Any, w: Any, b: Any, eps: float, out: Any, mean: Any, rstd: Any, r0: int, r1: int) -> None:
    """Layer norm of each row: mean, biased variance of x - mean (two passes, float64), rstd = 1/sqrt(var + eps),
    out = (x - mean) rstd w + b (``w`` / ``b`` of length n; ones / zeros stand in for absent ones)."""
    n = x.shape[1]
    for r in range(r0, r1):
        s = 0.0
        for j in range(n):
            s += np.float64(x[r, j])
        mu = s / n
        q = 0.0
        for j in range(n):
            d = np.float64(x[r, j]) - mu
            q += d * d
        rs = 1.0 / np.sqrt(q / n + eps)
        for j in range(n):
            out[r, j] = (np.float64(x[r, j]) - mu) * rs * np.float64(w[j]) + np.float64(b[j])
        mean[r] = mu
        rstd[r] = rs


@_kernel
def layer_norm_backward_rows(g: Any, x: Any, mean: Any, rstd: Any, w: Any, gx: Any, gw: Any, gb: Any, r0: int,
                             r1: int) -> None:
    """native_layer_norm_backward over rows: with xhat = (x - mean) rstd and gg = g w, gx = rstd (gg - mean(gg)
    - xhat mean(gg xhat)); the rows' g xhat and g are added into the float64 accumulators gw / gb (this range's
    own: the caller sums them)."""
    n = x.shape[1]
    for r in range(r0, r1):
        mu = np.float64(mean[r])
        rs = np.float64(rstd[r])
        c0 = 0.0
        c1 = 0.0
        for j in range(n):
            xh = (np.float64(x[r, j]) - mu) * rs
            gj = np.float64(g[r, j])
            gg = gj * np.float64(w[j])
            c0 += gg
            c1 += gg * xh
            gw[j] += gj * xh
            gb[j] += gj
        c0 /= n
        c1 /= n
        for j in range(n):
            xh = (np.float64(x[r, j]) - mu) * rs
            gx[r, j] = rs * (np.float64(g[r, j]) * np.float64(w[j]) - c0 - xh * c1)


@_kernel
def attention_softmax_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """Attention probabilities in place over the scores s (R, S) (rows r = (batch, head, query i), i = r % L):
    x = s * scale, causal masking of keys j > i (top-left aligned, as PyTorch's ``is_causal``) done inline,
    p = exp(x - max) / sum and lse = max + log(sum). A row with every key masked (max -inf) gives p = 0 and
    lse = 0, as PyTorch's CPU flash kernel does; a row with a NaN, or a +inf, is NaN throughout."""
    S = s.shape[1]
    for r in range(r0, r1):
        n = min(S, r % L + 1) if causal else S
        m = -np.inf
        for j in range(n):
            v = np.float64(s[r, j]) * scale
            m = v if (v > m or v != v) else m
        for j in range(n, S):
            s[r, j] = 0
        if m == -np.inf:
            for j in range(n):
                s[r, j] = 0
            lse[r] = 0
            continue
        if not (m < np.inf):
            for j in range(n):
                s[r, j] = np.nan
            lse[r] = np.nan
            continue
        t = 0.0
        for j in range(n):
            e = _exp_le1(np.float64(s[r, j]) * scale - m)
            s[r, j] = e
            t += e
        inv = 1.0 / t
        for j in range(n):
            s[r, j] = np.float64(s[r, j]) * inv
        lse[r] = m + np.log(t)


@_kernel
def attention_probs_rows(s: Any, L: int, scale: float, causal: bool, lse: Any, r0: int, r1: int) -> None:
    """The probabilities again from the scores and the forward's lse (the backward recomputes them rather than
    keep them): p = exp(s * scale - lse) in place, 0 for causally masked keys. exp's argument is <= 0 up to
    rounding (lse >= every x of its row), the domain of ``_exp_le1``."""
    S = s.shape[1]
    for r in range(r0, r1):
        n = min(S, r % L + 1) if causal else S
        top = np.float64(lse[r])
        if top != top:                  # a NaN row of the forward: NaN gradients
            for j in range(S):
                s[r, j] = np.nan
            continue
        for j in range(n):
            s[r, j] = _exp_le1(np.float64(s[r, j]) * scale - top)
        for j in range(n, S):
            s[r, j] = 0


@_kernel
def attention_score_grad_rows(p: Any, dp: Any, d: Any, scale: float, r0: int, r1: int) -> None:
    """The scores' gradient in place over dp: ds = p (dp - d) scale, d = sum(grad_out * out) per row (the
    softmax backward's sum(dp * p), computed from the output)."""
    S = p.shape[1]
    for r in range(r0, r1):
        dr = np.float64(d[r])
        for j in range(S):
            dp[r, j] = np.float64(p[r, j]) * (np.float64(dp[r, j]) - dr) * scale


# ------------------------------------------------------------------------------ recurrent cells (LSTM, GRU)
# One time step's pointwise work, rows (batch) x H columns, the gate blocks side by side as PyTorch orders them.


@_helper
def _expm1_le0(u: float) -> float:
    """e^u - 1 for u <= 0 with relative accuracy near 0: m = e^(u/128) - 1 by its Taylor polynomial, then seven
    times (1 + m)^2 - 1 = m (2 + m), which keeps the relative error of m (no cancellation)."""
    v = max(u, -110.0) * 0.0078125
    m = v * (1.0 + v * (1.0 / 2 + v * (1.0 / 6 + v * (1.0 / 24 + v * (1.0 / 120 + v * (1.0 / 720 + v * (
        1.0 / 5040 + v * (1.0 / 40320 + v * (1.0 / 362880 + v * (1.0 / 3628800 + v * (1.0 / 39916800 + v * (
            1.0 / 479001600 + v * (1.0 / 6227020800)))))))))))))
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    m = m * (2.0 + m)
    return m


@_helper
def _sigmoid(x: float) -> float:
    """1 / (1 + e^-x), from e^(-|x|) <= 1 on either side of 0 (e / (1 + e) for x < 0); NaN stays NaN."""
    e = _exp_le1(-abs(x))
    s = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    return s if x == x else x


@_helper
def _tanh(u: float) -> float:
    """tanh(u) = -m / (2 + m) * sign(u) with m = e^(-2|u|) - 1, relative accuracy kept near 0; NaN stays NaN."""
    m = _expm1_le0(-2.0 * abs(u))
    t = -m / (2.0 + m)
    t = t if u >= 0.0 else -t
    return t if u == u else u


@_kernel
def lstm_cell(xw: Any, hw: Any, c: Any, ws: Any, h: Any) -> None:
    """One LSTM step: pre-activations xw + hw (rows x 4H: i, f, g, o), c (rows x H) updated in place to
    c' = f c + i g; ws (rows x 5H) gets i, f, g, o, c'; h (rows x H) gets o tanh(c')."""
    H = c.shape[1]
    for r in range(c.shape[0]):
        a, b, w, cr, hr = xw[r], hw[r], ws[r], c[r], h[r]
        wi, wf, wg, wo, wc = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:4 * H], w[4 * H:]
        for j in range(2 * H):
            w[j] = _sigmoid(np.float64(a[j]) + np.float64(b[j]))
        for j in range(2 * H, 3 * H):
            w[j] = _tanh(np.float64(a[j]) + np.float64(b[j]))
        for j in range(3 * H, 4 * H):
            w[j] = _sigmoid(np.float64(a[j]) + np.float64(b[j]))
        for j in range(H):
            cn = np.float64(wf[j]) * np.float64(cr[j]) + np.float64(wi[j]) * np.float64(wg[j])
            cr[j] = cn
            wc[j] = cn
        for j in range(H):
            hr[j] = np.float64(wo[j]) * _tanh(np.float64(cr[j]))


@_kernel
def lstm_cell_backward(ws: Any, cprev: Any, dm: Any, dc: Any, d: Any) -> None:
    """Backward of one LSTM step from its workspace row (i, f, g, o, c'), the previous cell state, dm (the
    gradient reaching o tanh(c')) and dc (reaching c', updated in place to the gradient reaching the previous
    cell state): d (rows x 4H) gets the gradient of the pre-activations."""
    H = dc.shape[1]
    for r in range(dc.shape[0]):
        w, cp, g, cr, dr = ws[r], cprev[r], dm[r], dc[r], d[r]
        wi, wf, wg, wo, wc = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:4 * H], w[4 * H:]
        di, df, dg, do = dr[:H], dr[H:2 * H], dr[2 * H:3 * H], dr[3 * H:]
        for j in range(H):                             # dc += dm o (1 - tanh(c')^2); the o gate's gradient
            t = _tanh(np.float64(wc[j]))
            go = np.float64(wo[j])
            gj = np.float64(g[j])
            cr[j] = np.float64(cr[j]) + gj * go * (1.0 - t * t)
            do[j] = gj * t * go * (1.0 - go)
        for j in range(H):
            gi = np.float64(wi[j])
            di[j] = np.float64(cr[j]) * np.float64(wg[j]) * gi * (1.0 - gi)
        for j in range(H):
            gf = np.float64(wf[j])
            df[j] = np.float64(cr[j]) * np.float64(cp[j]) * gf * (1.0 - gf)
        for j in range(H):
            gg = np.float64(wg[j])
            dg[j] = np.float64(cr[j]) * np.float64(wi[j]) * (1.0 - gg * gg)
        for j in range(H):
            cr[j] = np.float64(cr[j]) * np.float64(wf[j])


@_kernel
def gru_cell(xi: Any, hw: Any, hp: Any, ws: Any, h: Any) -> None:
    """One GRU step: input pre-activations xi and hidden ones hw (both rows x 3H: r, z, n, hw with b_hh), the
    previous state hp; ws (rows x 4H) gets r, z, n and hw's n block; h gets n + z (hp - n)."""
    H = hp.shape[1]
    for r in range(hp.shape[0]):
        a, b, p, w, hr = xi[r], hw[r], hp[r], ws[r], h[r]
        wr, wz, wn, wh = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:]
        an, bn = a[2 * H:], b[2 * H:]
        for j in range(2 * H):
            w[j] = _sigmoid(np.float64(a[j]) + np.float64(b[j]))
        for j in range(H):
            wh[j] = bn[j]
            wn[j] = _tanh(np.float64(an[j]) + np.float64(wr[j]) * np.float64(bn[j]))
        for j in range(H):
            n = np.float64(wn[j])
            hr[j] = n + np.float64(wz[j]) * (np.float64(p[j]) - n)


@_kernel
def gru_cell_backward(ws: Any, hp: Any, dht: Any, di: Any, dhh: Any, dh: Any) -> None:
    """Backward of one GRU step from its workspace row (r, z, n, hw_n), the previous state hp and dht (the
    gradient reaching h'): di / dhh (rows x 3H) get the gradients of the input-side and hidden-side
    pre-activations, dh the direct part dht z (the caller adds dhh @ w_hh)."""
    H = hp.shape[1]
    for r in range(hp.shape[0]):
        w, p, g, a, b, e = ws[r], hp[r], dht[r], di[r], dhh[r], dh[r]
        wr, wz, wn, wh = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:]
        ar, az, an = a[:H], a[H:2 * H], a[2 * H:]
        br, bz, bn = b[:H], b[H:2 * H], b[2 * H:]
        for j in range(H):
            gz, gn = np.float64(wz[j]), np.float64(wn[j])
            an[j] = np.float64(g[j]) * (1.0 - gz) * (1.0 - gn * gn)
        for j in range(H):
            gr = np.float64(wr[j])
            ar[j] = np.float64(an[j]) * np.float64(wh[j]) * gr * (1.0 - gr)
        for j in range(H):
            gz = np.float64(wz[j])
            az[j] = np.float64(g[j]) * (np.float64(p[j]) - np.float64(wn[j])) * gz * (1.0 - gz)
        for j in range(H):
            br[j] = ar[j]
            bz[j] = az[j]
        for j in range(H):
            bn[j] = np.float64(an[j]) * np.float64(wr[j])
        for j in range(H):
            e[j] = np.float64(g[j]) * np.float64(wz[j])


# ------------------------------------------------------------------------------ optimizer updates
# PyTorch's single-tensor optimizers, element by element in one pass, with the rounding of its op-by-op form:
# float32 scalars (PyTorch rounds a Python scalar to the tensor's dtype), one float32 rounding per tensor op, in
# its order -- and no fast-math flags, which would let LLVM contract a * b + c into an FMA with one rounding.
_exact = numba.njit(nogil=True, cache=True, error_model="numpy")


@_exact
def sgd_step(p: Any, g: Any, buf: Any, wd: Any, momentum: Any, alpha: Any, neg_lr: Any, use_wd: bool,
             use_momentum: bool, fresh: bool, nesterov: bool) -> None:
    """g += wd p; buf = g (the first step) or buf = buf momentum + alpha g; g = g + momentum buf (Nesterov) or
    buf; p += -lr g -- each product and sum rounded to float32 as the NumPy kernel rounds it."""
    for i in range(p.size):
        gi = g[i]
        if use_wd:
            gi = gi + p[i] * wd
        if use_momentum:
            if fresh:
                b = gi
            else:
                b = buf[i] * momentum
                b = b + gi * alpha
            buf[i] = b
            gi = gi + b * momentum if nesterov else b
        p[i] = p[i] + gi * neg_lr


@_exact
def adam_step(p: Any, g: Any, m: Any, v: Any, vmax: Any, decay: Any, wd: Any, w1: Any, one_minus_w1: Any,
              small_w1: bool, beta2: Any, one_minus_beta2: Any, bc2_sqrt: Any, eps: Any, neg_step: Any,
              mode_wd: int, amsgrad: bool) -> None:
    """Adam / AdamW: weight decay (mode 1: p *= 1 - lr wd; mode 2: g += wd p), exp_avg.lerp_(g, w1),
    exp_avg_sq = exp_avg_sq beta2 + (g (1 - beta2)) g, amsgrad's running max, denom = sqrt(v) / bc2_sqrt + eps,
    p += (exp_avg (-step_size)) / denom."""
    for i in range(p.size):
        gi = g[i]
        pi = p[i]
        if mode_wd == 1:
            pi = pi * decay
        elif mode_wd == 2:
            gi = gi + pi * wd
        mi = m[i]
        d = gi - mi
        mi = mi + d * w1 if small_w1 else gi - d * one_minus_w1
        m[i] = mi
        vi = v[i] * beta2
        vi = vi + (gi * one_minus_beta2) * gi
        v[i] = vi
        if amsgrad:
            top = vmax[i]
            top = top if (top > vi or top != top) else vi
            vmax[i] = top
            vi = top
        den = np.sqrt(vi) / bc2_sqrt
        den = den + eps
        p[i] = pi + (mi * neg_step) / den


# ------------------------------------------------------------------------------ LU factorization of many small matrices
@_exact
def lu_batched(A: Any, piv: Any, info: Any) -> None:
    """LAPACK's getf2 on each matrix of A (b, m, n), in place: partial pivoting on the largest |re| + |im| of the
    column (LAPACK's i?amax), the multipliers scaled by the pivot, the trailing block updated; ``piv`` (b, min(m, n))
    gets the 1-based pivot rows, ``info`` (b,) the first zero pivot (1-based), 0 if none. A zero pivot column is
    left unscaled."""
    b, m, n = A.shape
    k = min(m, n)
    for s in range(b):
        M = A[s]
        for j in range(k):
            p, best = j, abs(M[j, j].real) + abs(M[j, j].imag)
            for i in range(j + 1, m):
                size = abs(M[i, j].real) + abs(M[i, j].imag)
                if size > best:
                    p, best = i, size
            piv[s, j] = p + 1
            if M[p, j] != 0:
                if p != j:
                    for c in range(n):
                        M[j, c], M[p, c] = M[p, c], M[j, c]
                pivot = M[j, j]
                for i in range(j + 1, m):
                    M[i, j] = M[i, j] / pivot
            elif info[s] == 0:
                info[s] = j + 1
            for i in range(j + 1, m):
                factor = M[i, j]
                if factor != 0:
                    for c in range(j + 1, n):
                        M[i, c] -= factor * M[j, c]


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
def box_muller16_f32(blocks: Any, out: Any, r0: int, r1: int) -> None:
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
def scale_shift_f32(x: Any, std: float, mean: float, out: Any, b: int, e: int) -> None:
    """out[i] = x[i] * std + mean rounded once to float32 (normal_'s final fmadd; std and mean float32 values)."""
    for i in range(b, e):
        out[i] = _F32(np.float64(x[i]) * std + mean)


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
def quantize_rows_centred(x: Any, inv: float, zp: int, lo: int, hi: int, out: Any, l1: Any, r0: int,
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
def quantize_rows_u8(x: Any, inv: float, zp: int, lo: int, hi: int, out: Any, sums: Any, r0: int, r1: int) -> None:
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
# the same shapes. Callers check ``compiled.int8_gemm_usable()`` (an x86 host with AVX2, numba compiling for it)
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
