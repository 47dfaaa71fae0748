"""Recurrent layers (``aten/src/ATen/native/RNN.cpp``): one kernel runs one layer in one direction over a
whole sequence, and one kernel runs backpropagation through time for it.

The sequence is given packed, as ``PackedSequence`` stores it: ``input`` is ``(sum(batch_sizes), I)``, the
rows of time step ``t`` are the ``batch_sizes[t]`` rows after those of the earlier steps, and batch sizes
never grow (an unpacked ``(T, B, I)`` input is the packed input with ``batch_sizes = [B] * T``).  A sequence
that ends early keeps its hidden state in its row of the state, which becomes its ``h_n``; in the reverse
direction sequences join as the batch grows, starting from their row of ``h0``.  This is what PyTorch's
``FullLayer`` / ``PackedLayer`` / ``ReversedPackedLayer`` do, with one difference of mechanism: the input
projection of every step is one GEMM up front (as PyTorch does on the CPU), and the backward pass computes
the gate gradients step by step, then every weight gradient with one GEMM over all steps.

Gate order and formulas are PyTorch's: LSTM ``i, f, g, o`` with ``c' = f*c + i*g``, ``h' = o*tanh(c')`` and,
with ``w_hr``, ``h' = (o*tanh(c')) @ w_hr^T``; GRU ``r, z, n`` with ``n = tanh(W_in x + b_in + r*(W_hn h +
b_hn))`` and ``h' = n + z*(h - n)``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``.

``workspace`` keeps per packed row what the backward pass needs: LSTM the activated gates and ``c'``; GRU
``r, z, n`` and ``W_hn h + b_hn``; RNN nothing (its derivative comes from the output)."""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

from ember.aten.kernels import compiled, loops
from ember.aten.kernels._common import asdtype, compute_dtype
from ember.aten.kernels.unary import _sigmoid

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")


def _steps(batch_sizes: Array, reverse: Any) -> Any:
    offs = np.concatenate([[0], np.cumsum(batch_sizes)]).astype(int)
    order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    return offs, list(order)


def _check(input: Array, batch_sizes: Array, h0: Array, c0: Array, w_ih: Array, mode: Any) -> Any:  # noqa: A002
    if mode not in MODES:
        raise ValueError(f"Unknown mode '{mode}'")
    if input.ndim != 2:
        raise RuntimeError(f"_rnn_layer: input must be 2-D (packed rows, features), got {input.ndim}-D")
    if int(sum(batch_sizes)) != input.shape[0]:
        raise RuntimeError(f"_rnn_layer: batch_sizes sum to {int(sum(batch_sizes))} but input has "
                           f"{input.shape[0]} rows")
    if any(b2 > b1 for b1, b2 in zip(batch_sizes, batch_sizes[1:])):
        raise RuntimeError("_rnn_layer: batch_sizes must be non-increasing")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {w_ih.shape[1]}, got "
                           f"{input.shape[1]}")
    if batch_sizes and h0.shape[0] != batch_sizes[0]:
        raise RuntimeError(f"Expected hidden size ({batch_sizes[0]}, {h0.shape[1]}), got {list(h0.shape)}")
    if mode == "LSTM" and c0 is None:
        raise RuntimeError("_rnn_layer: LSTM needs an initial cell state")


def _rnn_layer(xp: Any, input: Array, batch_sizes: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array,  # noqa: A002
               b_ih: Array, b_hh: Array, w_hr: Array, mode: Any, reverse: Any) -> Any:
    batch_sizes = [int(b) for b in batch_sizes]
    _check(input, batch_sizes, h0, c0, w_ih, mode)
    dt = compute_dtype(np.result_type(input.dtype, w_ih.dtype))
    x, wih, whh = asdtype(xp, input, dt), asdtype(xp, w_ih, dt), asdtype(xp, w_hh, dt)
    whr = asdtype(xp, w_hr, dt) if w_hr is not None else None
    H = w_ih.shape[0] // {"LSTM": 4, "GRU": 3}.get(mode, 1)
    offs, order = _steps(batch_sizes, reverse)
    xw = x @ wih.T                                     # every step's input projection in one GEMM
    if b_ih is not None:
        xw += asdtype(xp, b_ih, dt)
    bhh = asdtype(xp, b_hh, dt) if b_hh is not None else None
    if mode == "LSTM" and bhh is not None:             # both biases land on the same pre-activations
        xw += bhh
    h = asdtype(xp, h0, dt).copy()
    c: Any = asdtype(xp, c0, dt).copy() if mode == "LSTM" else None
    out = xp.empty((x.shape[0], h.shape[1]), dtype=dt)
    ws = xp.empty((x.shape[0], {"LSTM": 5 * H, "GRU": 4 * H}.get(mode, 0)), dtype=dt)
    cell = {"LSTM": loops.rnn.lstm_cell, "GRU": loops.rnn.gru_cell}.get(mode) if compiled.usable(xp, x) else None
    whh_t = whh.T
    # a float32 LSTM step over whole blocks of hidden units: its product and cell in one region (Note [The LSTM
    # step in one region] in loops/rnn.py); else each step's h @ w_hh.T into one buffer kept for all steps
    fused = mode == "LSTM" and cell is not None and dt == np.float32 and H % loops.rnn.LSTM_UNITS == 0
    panels = loops.rnn.lstm_panels(whh) if fused else None
    hw_rows: Any = None if fused else xp.empty((h.shape[0], whh.shape[0]), dtype=dt)
    for t in order:
        bs = batch_sizes[t]
        r0, r1 = offs[t], offs[t] + bs
        hp = h[:bs]
        hw: Any = None if fused else xp.matmul(hp, whh_t, out=hw_rows[:bs])
        if cell is not None:                           # the step's pointwise work in one compiled pass
            if mode == "GRU" and bhh is not None:
                hw += bhh
            hn = xp.empty((bs, H), dtype=dt)
            if mode == "LSTM":
                if fused:
                    loops.rnn.lstm_step(xw[r0:r1], hp, panels, c[:bs], ws[r0:r1], hn)
                else:
                    cell(xw[r0:r1], hw, c[:bs], ws[r0:r1], hn)
                if whr is not None:
                    hn = hn @ whr.T
            else:
                cell(xw[r0:r1], hw, hp, ws[r0:r1], hn)
        elif mode == "LSTM":
            g = xw[r0:r1] + hw
            gi = _sigmoid(xp, g[:, :H])
            gf = _sigmoid(xp, g[:, H:2 * H])
            gg = xp.tanh(g[:, 2 * H:3 * H])
            go = _sigmoid(xp, g[:, 3 * H:])
            cn = gf * c[:bs] + gi * gg
            hn = go * xp.tanh(cn)
            if whr is not None:
                hn = hn @ whr.T
            c[:bs] = cn
            w = ws[r0:r1]
            w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:4 * H], w[:, 4 * H:] = gi, gf, gg, go, cn
        elif mode == "GRU":
            if bhh is not None:
                hw = hw + bhh
            xi = xw[r0:r1]
            gr = _sigmoid(xp, xi[:, :H] + hw[:, :H])
            gz = _sigmoid(xp, xi[:, H:2 * H] + hw[:, H:2 * H])
            hn_lin = hw[:, 2 * H:]
            gn = xp.tanh(xi[:, 2 * H:] + gr * hn_lin)
            hn = gn + gz * (hp - gn)
            w = ws[r0:r1]
            w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:] = gr, gz, gn, hn_lin
        else:
            pre = xw[r0:r1] + hw
            if bhh is not None:
                pre += bhh
            hn = xp.tanh(pre) if mode == "RNN_TANH" else xp.maximum(pre, 0)
        h[:bs] = hn
        out[r0:r1] = hn
    odt = input.dtype
    c_out = c.astype(odt, copy=False) if c is not None else xp.empty((0,), dtype=odt)
    return out.astype(odt, copy=False), h.astype(odt, copy=False), c_out, ws


def _previous(xp: Any, states: Any, init: Any, batch_sizes: Array, offs: Any, reverse: Any) -> Any:
    """Each packed row's state before its step: the same batch row one step earlier in processing order,
    or the initial state where the sequence starts there."""
    prev = xp.empty((offs[-1], init.shape[1]), dtype=states.dtype)
    T = len(batch_sizes)
    for t in range(T):
        bs = batch_sizes[t]
        r0 = offs[t]
        s = t + 1 if reverse else t - 1
        if 0 <= s < T:
            k = min(bs, batch_sizes[s])
            prev[r0:r0 + k] = states[offs[s]:offs[s] + k]
            if k < bs:
                prev[r0 + k:r0 + bs] = init[k:bs]
        else:
            prev[r0:r0 + bs] = init[:bs]
    return prev


def _rnn_layer_backward(xp: Any, input: Array, batch_sizes: Array, h0: Array, c0: Array, w_ih: Array,  # noqa: A002
                        w_hh: Array, b_ih: Array, b_hh: Array, w_hr: Array, mode: Any, reverse: Any,
                        output: Array, workspace: Any, grad_output: Array, grad_hn: Any, grad_cn: Any) -> Any:
    batch_sizes = [int(b) for b in batch_sizes]
    dt = workspace.dtype
    x, wih, whh = asdtype(xp, input, dt), asdtype(xp, w_ih, dt), asdtype(xp, w_hh, dt)
    whr = asdtype(xp, w_hr, dt) if w_hr is not None else None
    H = w_ih.shape[0] // {"LSTM": 4, "GRU": 3}.get(mode, 1)
    offs, order = _steps(batch_sizes, reverse)
    N = x.shape[0]
    out = asdtype(xp, output, dt)
    hinit = asdtype(xp, h0, dt)
    hprev = _previous(xp, out, hinit, batch_sizes, offs, reverse)
    gout = asdtype(xp, grad_output, dt) if grad_output is not None else None
    dh = asdtype(xp, grad_hn, dt).copy() if grad_hn is not None else xp.zeros_like(hinit)
    G = {"LSTM": 4, "GRU": 3}.get(mode, 1) * H
    dgi = xp.empty((N, G), dtype=dt)                   # gradient of the input-side pre-activations
    dgh = xp.empty((N, G), dtype=dt) if mode == "GRU" else dgi
    dwhr: Any = xp.zeros_like(whr) if whr is not None else None
    if mode == "LSTM":
        cinit = asdtype(xp, c0, dt)
        cprev = _previous(xp, workspace[:, 4 * H:], cinit, batch_sizes, offs, reverse)
        dc = asdtype(xp, grad_cn, dt).copy() if grad_cn is not None else xp.zeros_like(cinit)
    cell = ({"LSTM": loops.rnn.lstm_cell_backward, "GRU": loops.rnn.gru_cell_backward}.get(mode)
            if compiled.usable(xp, workspace) else None)
    dht_rows: Any = xp.empty_like(dh) if gout is not None else None
    for t in reversed(order):
        bs = batch_sizes[t]
        r0, r1 = offs[t], offs[t] + bs
        dht = dh[:bs] if gout is None else xp.add(dh[:bs], gout[r0:r1], out=dht_rows[:bs])
        w = workspace[r0:r1]
        if cell is not None and mode == "LSTM":        # the step's pointwise work in one compiled pass
            if whr is not None:
                dwhr += dht.T @ (w[:, 3 * H:4 * H] * xp.tanh(w[:, 4 * H:]))
                dm = dht @ whr
            else:
                dm = dht
            cell(w, cprev[r0:r1], dm, dc[:bs], dgi[r0:r1])
            xp.matmul(dgi[r0:r1], whh, out=dh[:bs])    # (dm, read by the cell, may be dh's rows)
        elif cell is not None:
            direct = xp.empty_like(dht)
            cell(w, hprev[r0:r1], dht, dgi[r0:r1], dgh[r0:r1], direct)
            dh[:bs] = direct + dgh[r0:r1] @ whh
        elif mode == "LSTM":
            gi, gf, gg, go, cn = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:4 * H], w[:, 4 * H:]
            tc = xp.tanh(cn)
            if whr is not None:
                dwhr += dht.T @ (go * tc)
                dm = dht @ whr
            else:
                dm = dht
            dct = dc[:bs] + dm * go * (1 - tc * tc)
            d = dgi[r0:r1]
            d[:, :H] = dct * gg * gi * (1 - gi)
            d[:, H:2 * H] = dct * cprev[r0:r1] * gf * (1 - gf)
            d[:, 2 * H:3 * H] = dct * gi * (1 - gg * gg)
            d[:, 3 * H:] = dm * tc * go * (1 - go)
            dc[:bs] = dct * gf
            dh[:bs] = d @ whh
        elif mode == "GRU":
            gr, gz, gn, hn_lin = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
            hp = hprev[r0:r1]
            dn = dht * (1 - gz) * (1 - gn * gn)
            dr = dn * hn_lin * gr * (1 - gr)
            dz = dht * (hp - gn) * gz * (1 - gz)
            di, dhh = dgi[r0:r1], dgh[r0:r1]
            di[:, :H] = dr
            di[:, H:2 * H] = dz
            di[:, 2 * H:] = dn
            dhh[:, :2 * H] = di[:, :2 * H]
            dhh[:, 2 * H:] = dn * gr
            dh[:bs] = dht * gz + dhh @ whh
        else:
            o = out[r0:r1]
            d = dht * (1 - o * o) if mode == "RNN_TANH" else dht * (o > 0)
            dgi[r0:r1] = d
            dh[:bs] = d @ whh
    odt = input.dtype
    empty = xp.empty((0,), dtype=odt)
    g_input = (dgi @ wih).astype(odt, copy=False)
    g_wih = (dgi.T @ x).astype(w_ih.dtype, copy=False)
    g_whh = (dgh.T @ hprev).astype(w_hh.dtype, copy=False)
    g_bih = dgi.sum(0).astype(w_ih.dtype, copy=False) if b_ih is not None else empty
    g_bhh = dgh.sum(0).astype(w_hh.dtype, copy=False) if b_hh is not None else empty
    g_whr = dwhr.astype(w_hr.dtype, copy=False) if whr is not None else empty
    g_c0 = dc.astype(odt, copy=False) if mode == "LSTM" else empty
    return g_input, dh.astype(odt, copy=False), g_c0, g_wih, g_whh, g_bih, g_bhh, g_whr


# ------------------------------------------------------------------------------ oneDNN's LSTM layer
# PyTorch runs a float32 LSTM on the CPU through oneDNN: one ``mkldnn_rnn_layer`` per layer and direction, on a
# time-major (T, B, I) input, with the biases as two tensors (zeros of the weights' shapes when the layer has none).
# ember's layer kernel computes the same layer; these two give it oneDNN's operator signature. The workspace is
# ember's (the gates its backward reads), not oneDNN's byte buffer.
def mkldnn_rnn_layer(xp: Any, input: Array, weight0: Array, weight1: Array, weight2: Array, weight3: Array,  # noqa: A002
                     hx_: Array, cx_: Array, reverse: Any, batch_sizes: Any, mode: Any, hidden_size: Any,
                     num_layers: Any, has_biases: Any, bidirectional: Any, batch_first: Any, train: Any) -> Any:
    if mode != _ONEDNN_LSTM:
        raise RuntimeError("mkldnn_rnn_layer: ember implements oneDNN's LSTM layer only (mode 2)")
    T, B = input.shape[0], input.shape[1]
    b_ih, b_hh = (weight2, weight3) if has_biases else (None, None)
    out, hy, cy, ws = _rnn_layer(xp, input.reshape(T * B, input.shape[2]), [B] * T, hx_, cx_, weight0, weight1,
                                 b_ih, b_hh, None, "LSTM", reverse)
    return out.reshape(T, B, out.shape[-1]), hy, cy, ws


def mkldnn_rnn_layer_backward(xp: Any, input: Array, weight1: Array, weight2: Array, weight3: Array,  # noqa: A002
                              weight4: Array, hx_: Array, cx_tmp: Array, output: Array, hy_: Array, cy_: Array,
                              grad_output: Any, grad_hy: Any, grad_cy: Any, reverse: Any, mode: Any,
                              hidden_size: Any, num_layers: Any, has_biases: Any, train: Any, bidirectional: Any,
                              batch_sizes: Any, batch_first: Any, workspace: Array) -> Any:
    T, B = input.shape[0], input.shape[1]
    b_ih, b_hh = (weight3, weight4) if has_biases else (None, None)
    go = None if grad_output is None else grad_output.reshape(T * B, grad_output.shape[-1])
    g_in, g_h, g_c, g_wih, g_whh, g_bih, g_bhh, _ = _rnn_layer_backward(
        xp, input.reshape(T * B, input.shape[2]), [B] * T, hx_, cx_tmp, weight1, weight2, b_ih, b_hh, None, "LSTM",
        reverse, output.reshape(T * B, output.shape[-1]), workspace, go, grad_hy, grad_cy)
    if not has_biases:           # the zeros PyTorch passes in their place get zero gradients
        g_bih, g_bhh = xp.zeros_like(weight3), xp.zeros_like(weight4)
    return g_in.reshape(input.shape), g_wih, g_whh, g_bih, g_bhh, g_h, g_c


_ONEDNN_LSTM = 2     # ideep::rnn_kind::LSTM
