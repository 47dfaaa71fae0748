"""One time step of the LSTM and GRU cells and their gradients (callers: ``kernels/rnn.py``,
``aten/quantized/nn_ops.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ember.aten.kernels.loops._common import _F1, _kernel, _sigmoid, _sigmoidf, _tanh, _tanhf

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
