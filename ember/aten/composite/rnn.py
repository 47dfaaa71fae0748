"""The recurrent-network ops of native_functions.yaml (``lstm.input``, ``gru.data``, ``lstm_cell``, ...;
``aten/src/ATen/native/RNN.cpp``): layers and directions stacked over ``_rnn_layer``, and the single-step
cells written over ordinary ops (so they support double backward, as PyTorch's CPU cells do).

Note [Observed recurrent layers]
ember runs a layer as one fused operator, ``_rnn_layer``, which PyTorch does not have. When something observes
the operators (a dispatch mode, ``make_fx``, a tensor subclass: ``is_tensor_subclass_like``), the layers run as
PyTorch's CPU code runs them instead, so that what is seen is PyTorch's: a float32 LSTM without projections
through oneDNN's ``mkldnn_rnn_layer`` per layer and direction (``mkldnn_rnn``), everything else step by step over
PyTorch's cells (``FullLayer`` / ``FullBidirectionalLayer`` / ``PackedLayer`` / ``ReversedPackedLayer`` /
``PackedBidirectionalLayer`` of RNN.cpp: the input projection of all steps first, then per step the hidden
projection and the gate arithmetic in place). The values are the same either way; the fused layer is faster.
Two observers keep the fused layer: ``ember.compile``'s capture, whose graphs only ember's own backends compile
(measured: a compiled GRU 128 x 35 steps training step takes 5.1 ms with the fused layer, 14.4 ms over the cells),
and the ONNX exporter, since ONNX's LSTM / GRU / RNN operators take the layer whole.
"""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.aten.context import global_context
from ember.aten.dispatcher import is_tensor_subclass_like
from ember.c10 import compile_state
from ember.c10.dtype import float32
from ember.c10.exceptions import warn_once


def _layer_stack(x: Any, num_layers: int, D: int, dropout_p: Any, train: Any, run: Any) -> Any:
    """Layers of ``D`` directions: ``run(x, k, reverse)`` gives layer-direction ``k``'s (output, h_n, c_n); a
    layer's directions' outputs are concatenated, with dropout between layers. Returns the last output and every
    layer-direction's h_n and c_n, in order."""
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            out, hn, cn = run(x, layer * D + d, d == 1)
            outs.append(out)
            hs.append(hn)
            cs.append(cn)
        x = outs[0] if D == 1 else aten.cat(outs, -1)
        if dropout_p and train and layer < num_layers - 1:
            x = aten.dropout(x, dropout_p, True)
    return x, hs, cs


def _stack(mode: Any, data: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any,
           dropout_p: Any, train: Any, bidirectional: Any) -> Any:
    D = 2 if bidirectional else 1
    h0 = hx[0]
    c0 = hx[1] if mode == "LSTM" else None
    has_proj = c0 is not None and h0.size(-1) != c0.size(-1)
    per = 2 + 2 * bool(has_biases) + int(has_proj)
    if len(params) != per * num_layers * D:
        raise RuntimeError(f"Expected {per * num_layers * D} parameters for a {num_layers}-layer "
                           f"{'bidirectional ' if bidirectional else ''}{mode} with has_biases={has_biases}, "
                           f"got {len(params)}")

    def run(x: Any, k: int, reverse: bool) -> Any:
        p = params[k * per:(k + 1) * per]
        b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
        return aten._rnn_layer(x, batch_sizes, h0[k], None if c0 is None else c0[k], p[0], p[1], b_ih, b_hh,
                               p[-1] if has_proj else None, mode, reverse)[:3]
    layer_input, hs, cs = _layer_stack(data, num_layers, D, dropout_p, train, run)
    return layer_input, aten.stack(hs), (aten.stack(cs) if mode == "LSTM" else None)


# ------------------------------------------------------------------------------ PyTorch's CPU layers, observed
def _linear(x: Any, w: Any, b: Any) -> Any:
    return aten.linear(x, w, b)


def _cell_step(mode: Any, gi: Any, hidden: Any, p: Any) -> Any:
    """One step of RNN.cpp's cell with the input projection ``gi`` already computed (``pre_compute_input``)."""
    w_hh, b_hh, w_hr = p[1], p[3], p[4]
    if mode == "LSTM":
        hx, cx = hidden
        gates = aten.add__Tensor(_linear(hx, w_hh, b_hh), gi)
        i, f, g, o = aten.unsafe_chunk(gates, 4, 1)
        i, f, g, o = aten.sigmoid_(i), aten.sigmoid_(f), aten.tanh_(g), aten.sigmoid_(o)
        cy = aten.add__Tensor(f * cx, i * g)
        hy = o * cy.tanh()
        return (aten.matmul(hy, aten.t(w_hr)) if w_hr is not None else hy), cy
    if mode == "GRU":
        ig = aten.unsafe_chunk(gi, 3, 1)
        hg = aten.unsafe_chunk(_linear(hidden, w_hh, b_hh), 3, 1)
        r = aten.sigmoid_(aten.add__Tensor(hg[0], ig[0]))
        z = aten.sigmoid_(aten.add__Tensor(hg[1], ig[1]))
        n = aten.tanh_(ig[2] + aten.mul__Tensor(hg[2], r))
        return aten.add__Tensor(aten.mul__Tensor(hidden - n, z), n)
    pre = aten.add__Tensor(_linear(hidden, w_hh, b_hh), gi)
    return aten.tanh(pre) if mode == "RNN_TANH" else aten.relu(pre)


def _as_output(mode: Any, hidden: Any) -> Any:
    return hidden[0] if mode == "LSTM" else hidden


def _slice(mode: Any, hidden: Any, start: int, end: int) -> Any:
    if mode == "LSTM":
        return tuple(aten.narrow(h, 0, start, end - start) for h in hidden)
    return aten.narrow(hidden, 0, start, end - start)


def _concat(mode: Any, hiddens: Any) -> Any:
    if mode == "LSTM":
        return aten.cat([h[0] for h in hiddens], 0), aten.cat([h[1] for h in hiddens], 0)
    return aten.cat(list(hiddens), 0)


def _steps_layer(mode: Any, steps: Any, hidden: Any, p: Any) -> Any:
    outputs = []
    for gi in steps:
        hidden = _cell_step(mode, gi, hidden, p)
        outputs.append(_as_output(mode, hidden))
    return outputs, hidden


def _full_layer(mode: Any, x: Any, hidden: Any, p: Any) -> Any:
    outputs, hidden = _steps_layer(mode, aten.unbind_int(_linear(x, p[0], p[2]), 0), hidden, p)
    return aten.stack(outputs, 0), hidden


def _full_bidirectional_layer(mode: Any, x: Any, hidden: Any, p: Any) -> Any:
    fw_out, fw_h = _steps_layer(mode, aten.unbind_int(_linear(x, p[0][0], p[0][2]), 0), hidden[0], p[0])
    fw = aten.stack(fw_out, 0)
    rev_out, rev_h = _steps_layer(mode, aten.unbind_int(_linear(x, p[1][0], p[1][2]), 0)[::-1], hidden[1], p[1])
    rev = aten.stack(rev_out[::-1], 0)
    return aten.cat([fw, rev], fw.dim() - 1), (fw_h, rev_h)


def _packed_layer(mode: Any, data: Any, batch_sizes: Any, hidden: Any, p: Any) -> Any:
    xw = _linear(data, p[0], p[2])
    outputs, finals = [], []
    offset, last = 0, batch_sizes[0]
    for bs in batch_sizes:
        step = aten.narrow(xw, 0, offset, bs)
        offset += bs
        if last - bs > 0:
            finals.append(_slice(mode, hidden, bs, last))
            hidden = _slice(mode, hidden, 0, bs)
        last = bs
        hidden = _cell_step(mode, step, hidden, p)
        outputs.append(_as_output(mode, hidden))
    finals.append(hidden)
    return aten.cat(outputs, 0), _concat(mode, finals[::-1])


def _reversed_packed_layer(mode: Any, data: Any, batch_sizes: Any, hidden0: Any, p: Any) -> Any:
    xw = _linear(data, p[0], p[2])
    outputs = []
    offset, last = data.size(0), batch_sizes[-1]
    hidden = _slice(mode, hidden0, 0, batch_sizes[-1])
    for bs in reversed(batch_sizes):
        if bs - last > 0:
            hidden = _concat(mode, [hidden, _slice(mode, hidden0, last, bs)])
        step = aten.narrow(xw, 0, offset - bs, bs)
        offset -= bs
        last = bs
        hidden = _cell_step(mode, step, hidden, p)
        outputs.append(_as_output(mode, hidden))
    return aten.cat(outputs[::-1], 0), hidden


def _cell_params(params: Any, has_biases: Any, has_proj: bool) -> list[tuple[Any, ...]]:
    """RNN.cpp's ``gather_params``: per layer and direction (w_ih, w_hh, b_ih, b_hh, w_hr)."""
    per = 2 + 2 * bool(has_biases) + int(has_proj)
    out = []
    for k in range(len(params) // per):
        p = params[k * per:(k + 1) * per]
        b = (p[2], p[3]) if has_biases else (None, None)
        out.append((p[0], p[1], *b, p[-1] if has_proj else None))
    return out


def _layers_observed(mode: Any, x: Any, batch_sizes: Any, hiddens: Any, params: Any, num_layers: Any,
                     dropout_p: Any, train: Any, bidirectional: Any) -> Any:
    """``apply_layer_stack`` over the full (``batch_sizes`` None) or packed layers; returns the last layer's output
    and every layer's and direction's final hidden state in order."""
    if bidirectional:
        hiddens = [(hiddens[2 * i], hiddens[2 * i + 1]) for i in range(len(hiddens) // 2)]
        params = [(params[2 * i], params[2 * i + 1]) for i in range(len(params) // 2)]
    if len(hiddens) != num_layers:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    finals = []
    for layer in range(num_layers):
        h, p = hiddens[layer], params[layer]
        if batch_sizes is None and bidirectional:
            x, hn = _full_bidirectional_layer(mode, x, h, p)
        elif batch_sizes is None:
            x, hn = _full_layer(mode, x, h, p)
        elif bidirectional:
            fw, fw_h = _packed_layer(mode, x, batch_sizes, h[0], p[0])
            rev, rev_h = _reversed_packed_layer(mode, x, batch_sizes, h[1], p[1])
            x, hn = aten.cat([fw, rev], -1), (fw_h, rev_h)
        else:
            x, hn = _packed_layer(mode, x, batch_sizes, h, p)
        finals += list(hn) if bidirectional else [hn]
        if dropout_p != 0 and train and layer < num_layers - 1:
            x = aten.dropout(x, dropout_p, True)
    return x, finals


def _observed(mode: Any, x: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any,
              dropout_p: Any, train: Any, bidirectional: Any) -> Any:
    """RNN.cpp's ``_rnn_impl_with_concat`` / ``_lstm_impl`` (Note [Observed recurrent layers])."""
    if mode == "LSTM":
        has_proj = hx[0].size(2) != hx[1].size(2)
        hs, cs = aten.unbind_int(hx[0], 0), aten.unbind_int(hx[1], 0)
        out, finals = _layers_observed(mode, x, batch_sizes, list(zip(hs, cs)),
                                       _cell_params(params, has_biases, has_proj), num_layers, dropout_p, train,
                                       bidirectional)
        return out, aten.stack([h for h, _ in finals], 0), aten.stack([c for _, c in finals], 0)
    out, finals = _layers_observed(mode, x, batch_sizes, list(aten.unbind_int(hx[0], 0)),
                                   _cell_params(params, has_biases, False), num_layers, dropout_p, train,
                                   bidirectional)
    return out, aten.stack(finals, 0), None


def _observed_as_pytorch(x: Any, hx: Any, params: Any) -> bool:
    return (global_context.rnn_layers_as_pytorch_when_observed and not compile_state.capturing()
            and is_tensor_subclass_like(x, *hx, *params))


def _uses_onednn(input: Any, hx: Any, params: Any) -> bool:  # noqa: A002
    """PyTorch's ``use_mkldnn`` for ember's CPU (float32; its oneDNN LSTM takes no projections)."""
    return (global_context.user_enabled_mkldnn and input.device.type == "cpu" and input.dtype is float32
            and input.numel() != 0
            and all(t.device.type == "cpu" for t in list(params) + list(hx)) and hx[0].size(2) == hx[1].size(2))


def _onednn_lstm(input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout_p: Any, train: Any,
                 bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
    """RNN.cpp's ``mkldnn_rnn``: one ``mkldnn_rnn_layer`` per layer and direction, on a time-major input."""
    x = (input.transpose(0, 1) if batch_first else input).contiguous()
    h, c = hx[0].contiguous(), hx[1].contiguous()
    D = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    hidden_size = h.size(2)

    def run(x: Any, k: int, reverse: bool) -> Any:
        w = params[k * per:(k + 1) * per]
        hk, ck = h[k], c[k]
        b0 = w[2] if has_biases else aten.zeros(tuple(w[0].shape), dtype=w[0].dtype, device=w[0].device)
        b1 = w[3] if has_biases else aten.zeros(tuple(w[1].shape), dtype=w[1].dtype, device=w[1].device)
        return aten.mkldnn_rnn_layer(x, w[0], w[1], b0, b1, hk, ck, reverse, (), 2, hidden_size, num_layers,
                                     has_biases, bidirectional, batch_first, train)[:3]
    x, hy, cy = _layer_stack(x, num_layers, D, dropout_p, train, run)
    hy_t, cy_t = aten.stack(hy, 0), aten.stack(cy, 0)
    return (x.transpose(0, 1) if batch_first else x), hy_t, cy_t


def _run_input(mode: Any, input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout_p: Any,
               train: Any, bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
    if _observed_as_pytorch(input, hx, params):      # Note [Observed recurrent layers]
        if mode == "LSTM" and _uses_onednn(input, hx, params):
            return _onednn_lstm(input, hx, params, has_biases, num_layers, dropout_p, train, bidirectional,
                                batch_first)
        x = input.transpose(0, 1) if batch_first else input
        out, h, c = _observed(mode, x, None, hx, params, has_biases, num_layers, dropout_p, train, bidirectional)
        if batch_first:
            out = aten.transpose_(out, 0, 1) if mode != "LSTM" else out.transpose(0, 1)
        return out, h, c
    x = input.transpose(0, 1) if batch_first else input
    T, B = x.size(0), x.size(1)
    out, h, c = _stack(mode, x.reshape(T * B, x.size(2)), [B] * T, hx, params, has_biases, num_layers,
                       dropout_p, train, bidirectional)
    out = out.reshape(T, B, out.size(-1))
    return (out.transpose(0, 1) if batch_first else out), h, c


def _run_data(mode: Any, data: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any,
              dropout_p: Any, train: Any, bidirectional: Any) -> Any:
    bs = [int(b) for b in batch_sizes.tolist()]
    if _observed_as_pytorch(data, hx, params):       # Note [Observed recurrent layers]
        return _observed(mode, data, bs, hx, params, has_biases, num_layers, dropout_p, train, bidirectional)
    return _stack(mode, data, bs, hx, params, has_biases, num_layers, dropout_p, train, bidirectional)


def lstm_input(input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout: Any, train: Any,
               bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
    if (input.device.type == "cpu" and input.dtype is float32 and input.numel() != 0
            and hx[0].size(2) != hx[1].size(2)):
        warn_once("lstm projections onednn", "LSTM with projections is not supported with oneDNN. Using default "
                  "implementation.")
    return _run_input("LSTM", input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def lstm_data(data: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout: Any,
              train: Any, bidirectional: Any) -> Any:
    return _run_data("LSTM", data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)


def _one_state_ops(mode: Any) -> Any:
    """The ``.input`` and ``.data`` overloads of a recurrent op with one hidden state (GRU, RNN)."""
    def run_input(input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout: Any, train: Any,
                  bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
        return _run_input(mode, input, [hx], params, has_biases, num_layers, dropout, train, bidirectional,
                          batch_first)[:2]

    def run_data(data: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any,
                 dropout: Any, train: Any, bidirectional: Any) -> Any:
        return _run_data(mode, data, batch_sizes, [hx], params, has_biases, num_layers, dropout, train,
                         bidirectional)[:2]
    return run_input, run_data


gru_input, gru_data = _one_state_ops("GRU")
rnn_tanh_input, rnn_tanh_data = _one_state_ops("RNN_TANH")
rnn_relu_input, rnn_relu_data = _one_state_ops("RNN_RELU")


# ------------------------------------------------------------------------------ cells
def _check_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, which: Any) -> Any:  # noqa: A002
    """PyTorch's ``check_rnn_cell_forward_input`` / ``_hidden`` messages."""
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {w_ih.size(1)}")
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{which} batch size {hx.size(0)}")
    if hx.size(1) != w_hh.size(1):
        raise RuntimeError(f"hidden{which} has inconsistent hidden_size: got {hx.size(1)}, expected {w_hh.size(1)}")


def lstm_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:  # noqa: A002
    """PyTorch's LSTMCell (RNN.cpp): the hidden projection plus the input one in place, split without views,
    the gate activations in place."""
    h, c = hx[0], hx[1]
    _check_cell(input, h, w_ih, w_hh, 0)
    _check_cell(input, c, w_ih, w_hh, 1)
    gates = aten.add__Tensor(aten.linear(h, w_hh, b_hh), aten.linear(input, w_ih, b_ih))
    i, f, g, o = aten.unsafe_chunk(gates, 4, 1)
    i, f, g, o = aten.sigmoid_(i), aten.sigmoid_(f), aten.tanh_(g), aten.sigmoid_(o)
    cy = aten.add__Tensor(f * c, i * g)
    return o * cy.tanh(), cy


def gru_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:  # noqa: A002
    """PyTorch's GRUCell (RNN.cpp), its in-place steps included."""
    _check_cell(input, hx, w_ih, w_hh, 0)
    gi = aten.unsafe_chunk(aten.linear(input, w_ih, b_ih), 3, 1)
    gh = aten.unsafe_chunk(aten.linear(hx, w_hh, b_hh), 3, 1)
    r = aten.sigmoid_(aten.add__Tensor(gh[0], gi[0]))
    z = aten.sigmoid_(aten.add__Tensor(gh[1], gi[1]))
    n = aten.tanh_(gi[2] + aten.mul__Tensor(gh[2], r))
    return aten.add__Tensor(aten.mul__Tensor(hx - n, z), n)


def rnn_tanh_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:  # noqa: A002
    _check_cell(input, hx, w_ih, w_hh, 0)
    return aten.add__Tensor(aten.linear(hx, w_hh, b_hh), aten.linear(input, w_ih, b_ih)).tanh()


def rnn_relu_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:  # noqa: A002
    _check_cell(input, hx, w_ih, w_hh, 0)
    return aten.add__Tensor(aten.linear(hx, w_hh, b_hh), aten.linear(input, w_ih, b_ih)).relu()
