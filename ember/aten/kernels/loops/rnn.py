"""One time step of the LSTM and GRU cells and their gradients, and the LSTM's whole step with its recurrent
product (callers: ``kernels/rnn.py``, ``aten/quantized/nn_ops.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from ember.aten.kernels import compiled
from ember.aten.kernels.loops._common import _F1, _driver, _fma_4x16, _kernel, _registers, _sigmoid, _sigmoidf, \
    _tanh, _tanhf, chunk

# ------------------------------------------------------------------------------ recurrent cells (LSTM, GRU)
# One time step's pointwise work, rows (batch) x H columns, the gate blocks side by side as PyTorch orders them.

@_kernel
def lstm_cell(xw: Any, hw: Any, c: Any, ws: Any, h: Any) -> None:
    """One LSTM step in float32, as PyTorch's oneDNN kernel computes it: pre-activations xw + hw (rows x 4H: i, f,
    g, o), c (rows x H) updated in place to c' = f c + i g; ws (rows x 5H) gets i, f, g, o, c'; h (rows x H) gets
    o tanh(c'). The gates' sigmoid and tanh are ``_sigmoidf`` / ``_tanhf`` (within 2.5 ulps)."""
    H = c.shape[1]
    for r in range(c.shape[0]):
        a, b, w, cr, hr = xw[r], hw[r], ws[r], c[r], h[r]
        wi, wf, wg, wo, wc = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:4 * H], w[4 * H:]
        for j in range(2 * H):
            w[j] = _sigmoidf(a[j] + b[j])
        for j in range(2 * H, 3 * H):
            w[j] = _tanhf(a[j] + b[j])
        for j in range(3 * H, 4 * H):
            w[j] = _sigmoidf(a[j] + b[j])
        for j in range(H):
            cn = wf[j] * cr[j] + wi[j] * wg[j]
            cr[j] = cn
            wc[j] = cn
        for j in range(H):
            hr[j] = wo[j] * _tanhf(cr[j])


@_kernel
def lstm_cell_backward(ws: Any, cprev: Any, dm: Any, dc: Any, d: Any) -> None:
    """Backward of one LSTM step (float32) from its workspace row (i, f, g, o, c'), the previous cell state, dm
    (the gradient reaching o tanh(c')) and dc (reaching c', updated in place to the gradient reaching the previous
    cell state): d (rows x 4H) gets the gradient of the pre-activations."""
    H = dc.shape[1]
    for r in range(dc.shape[0]):
        w, cp, g, cr, dr = ws[r], cprev[r], dm[r], dc[r], d[r]
        wi, wf, wg, wo, wc = w[:H], w[H:2 * H], w[2 * H:3 * H], w[3 * H:4 * H], w[4 * H:]
        di, df, dg, do = dr[:H], dr[H:2 * H], dr[2 * H:3 * H], dr[3 * H:]
        for j in range(H):                             # dc += dm o (1 - tanh(c')^2); the o gate's gradient
            t = _tanhf(wc[j])
            go = wo[j]
            gj = g[j]
            cr[j] = cr[j] + gj * go * (_F1 - t * t)
            do[j] = gj * t * go * (_F1 - go)
        for j in range(H):
            gi = wi[j]
            di[j] = cr[j] * wg[j] * gi * (_F1 - gi)
        for j in range(H):
            gf = wf[j]
            df[j] = cr[j] * cp[j] * gf * (_F1 - gf)
        for j in range(H):
            gg = wg[j]
            dg[j] = cr[j] * wi[j] * (_F1 - gg * gg)
        for j in range(H):
            cr[j] = cr[j] * wf[j]


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


# ------------------------------------------------------------------------------ the LSTM step with its product
# Note [The LSTM step in one region]
# Each time step of an LSTM layer is a GEMM h @ W_hh^T (batch x K by K x 4H: 20 x 256 x 1024 in the suite's model)
# and the cell's pointwise work. As a BLAS call the GEMM wakes OpenBLAS's threads, asleep again by the next step
# (they spin 2^16 cycles, section 6 of docs/performance.md) and then the cell runs on one thread: the layer took
# twice PyTorch's time. Here a step is one parallel region over blocks of 16 hidden units: a block computes its
# units' four gate columns for 4 batch rows at a time, 4 rows x 16 columns held in 8 vector registers
# (``_registers``) over the K products (2 loads of W^T's row and 4 broadcasts of h per 8 FMAs, as the direct
# convolution's block), then runs the cell on them and writes the workspace, c' and h'. The products of one output
# sum over k in order, the same on any thread count.

LSTM_UNITS = 16            # hidden units of a block


@_kernel
def _lstm_step(xw: Any, h: Any, wp: Any, c: Any, ws: Any, hn: Any, gates: int, b0: int, b1: int) -> None:
    """Hidden-unit blocks b0..b1-1 of one LSTM step (float32): pre-activations xw (rows x 4H) + h @ W_hh^T (h: rows
    x K; wp: W_hh^T packed in panels of 16 columns, ``lstm_panels``), c (rows x H) updated to c' = f c + i g, ws
    (rows x 5H) gets i, f, g, o, c', hn (rows x H) gets o tanh(c'); ``gates`` is 4."""
    acc = _registers(64)
    rows, K = h.shape
    H = c.shape[1]
    R = (rows + 3) // 4 * 4
    pre = np.empty(4 * R * 16, np.float32)            # gate x row x lane of the block's products
    hf = h.reshape(-1)
    wf = wp.reshape(-1)
    for blk in range(b0, b1):
        u = blk * 16
        for gate in range(gates):                   # (a count LLVM cannot unroll: one copy of the block's loop)
            panel = np.uint64((gate * (H // 16) + blk) * K * 16)
            for r0 in range(0, rows, 4):            # the panel (K x 16, 16 kB at K = 256) stays in L1
                h0 = np.uint64(r0 * K)
                h1 = np.uint64(min(r0 + 1, rows - 1) * K)   # rows past the batch repeat its last row
                h2 = np.uint64(min(r0 + 2, rows - 1) * K)
                h3 = np.uint64(min(r0 + 3, rows - 1) * K)
                for i in range(64):
                    acc[i] = np.float32(0.0)
                for k in range(np.uint64(K)):
                    _fma_4x16(acc, wf, panel + k * np.uint64(16), hf[h0 + k], hf[h1 + k], hf[h2 + k], hf[h3 + k])
                p0 = (gate * R + r0) * 16
                for i in range(64):
                    pre[p0 + i] = acc[i]
        for r in range(rows):                       # the cell, a loop per gate as lstm_cell's (they vectorize)
            a, w, cr, hr = xw[r], ws[r], c[r], hn[r]
            q = r * 16
            for lane in range(16):
                w[u + lane] = _sigmoidf(a[u + lane] + pre[q + lane])
            q += R * 16
            for lane in range(16):
                w[H + u + lane] = _sigmoidf(a[H + u + lane] + pre[q + lane])
            q += R * 16
            for lane in range(16):
                w[2 * H + u + lane] = _tanhf(a[2 * H + u + lane] + pre[q + lane])
            q += R * 16
            for lane in range(16):
                w[3 * H + u + lane] = _sigmoidf(a[3 * H + u + lane] + pre[q + lane])
            for lane in range(16):
                j = u + lane
                cn = w[H + j] * cr[j] + w[j] * w[2 * H + j]
                cr[j] = cn
                w[4 * H + j] = cn
            for lane in range(16):
                j = u + lane
                hr[j] = w[3 * H + j] * _tanhf(cr[j])


@compiled.parallel_of(_lstm_step)
@_driver
def _lstm_step_parallel(xw: Any, h: Any, wp: Any, c: Any, ws: Any, hn: Any, gates: int, work: int,
                        chunks: int) -> None:
    for t in prange(chunks):
        b, e = chunk(work, chunks, t)
        _lstm_step(xw, h, wp, c, ws, hn, gates, b, e)


def lstm_panels(w_hh: Any) -> Any:
    """W_hh (4H x K) as the step's panels: (4H / 16, K, 16), panel p holding columns 16 p .. 16 p + 15 of W_hh^T
    row after row, so that a block's loads run through consecutive memory (rows of W_hh^T 4H apart would all fall
    in the same few L1 sets: 2.5x slower, measured)."""
    G, K = w_hh.shape
    return np.ascontiguousarray(w_hh.reshape(G // LSTM_UNITS, LSTM_UNITS, K).transpose(0, 2, 1))


def lstm_step(xw: Any, h: Any, wp: Any, c: Any, ws: Any, hn: Any) -> None:
    """One LSTM step with its recurrent product (Note [The LSTM step in one region]); H a multiple of
    ``LSTM_UNITS``, float32, wp from ``lstm_panels``; the blocks of hidden units split over the intra-op threads."""
    rows, K = h.shape
    compiled.split(_lstm_step, c.shape[1] // LSTM_UNITS, compiled.row_grain(4 * rows * K * LSTM_UNITS), xw,
                   np.ascontiguousarray(h), wp, c, ws, hn, 4)
