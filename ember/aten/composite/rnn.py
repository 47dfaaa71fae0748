"""The recurrent-network ops of native_functions.yaml (``lstm.input``, ``gru.data``, ``lstm_cell``, ...;
``aten/src/ATen/native/RNN.cpp``): layers and directions stacked over ``_rnn_layer``, and the single-step
cells written over ordinary ops (so they support double backward, as PyTorch's CPU cells do)."""
from __future__ import annotations

from typing import Any

from ember._generated import aten


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
    layer_input = data
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            p = params[k * per:(k + 1) * per]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            out, hn, cn, _ = aten._rnn_layer(layer_input, batch_sizes, h0[k], None if c0 is None else c0[k], p[0],
                                             p[1], b_ih, b_hh, p[-1] if has_proj else None, mode, d == 1)
            outs.append(out)
            hs.append(hn)
            cs.append(cn)
        layer_input = outs[0] if D == 1 else aten.cat(outs, -1)
        if dropout_p and train and layer < num_layers - 1:
            layer_input = aten.dropout(layer_input, dropout_p, train)
    return layer_input, aten.stack(hs), (aten.stack(cs) if mode == "LSTM" else None)


def _run_input(mode: Any, input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout_p: Any,
               train: Any, bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
    x = input.transpose(0, 1) if batch_first else input
    T, B = x.size(0), x.size(1)
    out, h, c = _stack(mode, x.reshape(T * B, x.size(2)), [B] * T, hx, params, has_biases, num_layers,
                       dropout_p, train, bidirectional)
    out = out.reshape(T, B, out.size(-1))
    return (out.transpose(0, 1) if batch_first else out), h, c


def _run_data(mode: Any, data: Any, batch_sizes: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any,
              dropout_p: Any, train: Any, bidirectional: Any) -> Any:
    bs = [int(b) for b in batch_sizes.tolist()]
    return _stack(mode, data, bs, hx, params, has_biases, num_layers, dropout_p, train, bidirectional)


def lstm_input(input: Any, hx: Any, params: Any, has_biases: Any, num_layers: Any, dropout: Any, train: Any,
               bidirectional: Any, batch_first: Any) -> Any:  # noqa: A002
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
