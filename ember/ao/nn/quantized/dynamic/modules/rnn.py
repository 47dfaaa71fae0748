"""Dynamically quantized ``LSTM`` / ``GRU`` (mirrors ``torch/ao/nn/quantized/dynamic/modules/rnn.py``): int8
weights; at every time step the input and the hidden state are quantized on the fly for the two gate products
(dynamic ``linear``, 7-bit range; the inputs of a whole sequence at once, as PyTorch's CPU layers do), and the gates
are computed in float, as PyTorch's ``quantized_lstm`` / ``quantized_gru`` cells do.

PyTorch keeps each layer's weights in a TorchScript object (``CellParamsBase``), so its state_dicts of these
modules hold TorchScript objects that ember cannot read; ember saves the quantized weights and float biases instead
(``_all_weight_values.<i>.param`` = (w_ih, w_hh, b_ih, b_hh)).
"""
from __future__ import annotations

from typing import Any

import ember
from ember.ao.nn.quantized.modules.utils import _quantize_weight
from ember.nn.modules.module import Module

__all__ = ["LSTM", "GRU"]


class PackedParameter(Module):
    def __init__(self, param: Any) -> None:
        super().__init__()
        self.param = param

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.param

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any, strict: bool,
                              missing_keys: Any, unexpected_keys: Any, error_msgs: Any) -> None:
        self.param = state_dict.pop(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)


class RNNBase(Module):
    _FLOAT_MODULE: Any = None
    _GATES = 1
    _version = 2

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype: Any = ember.qint8) -> None:
        super().__init__()
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.dtype = float(dropout), bidirectional, dtype
        self.version = 2
        self.training = False
        dirs = 2 if bidirectional else 1
        gate = self._GATES * hidden_size
        values = []
        for layer in range(num_layers):
            inp = input_size if layer == 0 else hidden_size * dirs
            for _ in range(dirs):
                w_ih = ember.quantize_per_tensor(ember.randn(gate, inp), 0.1, 0, ember.qint8)
                w_hh = ember.quantize_per_tensor(ember.randn(gate, hidden_size), 0.1, 0, ember.qint8)
                b = ember.randn(gate) if bias else None
                values.append(PackedParameter((w_ih, w_hh, b, None if b is None else ember.randn(gate))))
        self._all_weight_values = ember.nn.ModuleList(values)

    def _get_name(self) -> str:
        return "DynamicQuantizedRNN"

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def __repr__(self) -> str:
        return self._get_name() + "(" + self.extra_repr() + ")"


    def _run(self, x: Any, hx: Any) -> tuple[Any, Any]:
        """x (T, B, F) float; hx a list of (layer*dir) states (each a tensor, or (h, c) for LSTM)."""
        dirs = 2 if self.bidirectional else 1
        out = x
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh = self._all_weight_values[k].param
                h0, c0 = hx[k] if isinstance(hx[k], tuple) else (hx[k], None)
                y, h_n, c_n = ember._quantized_rnn_layer_dynamic(out, h0, c0, w_ih, w_hh, b_ih, b_hh, self.mode, d == 1,
                                                                 _REDUCE_RANGE)
                state = (h_n, c_n) if c0 is not None else h_n
                outs.append(y)
                finals.append(state)
            out = outs[0] if dirs == 1 else ember.cat(outs, 2)
        return out, finals

    def _forward(self, input: Any, hx: Any, zeros: Any, states: Any, finals: Any) -> Any:  # noqa: A002
        """``nn.LSTM`` / ``nn.GRU``'s calling convention around ``_run``: ``batch_first``, a zero initial state
        (``zeros(shape)``), per-layer states (``states(hx)``) and the final ones stacked (``finals(list)``).
        Inputs must be batched (3-D), as PyTorch's dynamically quantized RNNs require."""
        _refuse_packed(input)
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        x = _batch_first(input, self.batch_first).float()
        if hx is None:
            n = self.num_layers * (2 if self.bidirectional else 1)
            hx = zeros((n, x.shape[1], self.hidden_size))
        out, last = self._run(x, states(hx))
        return _batch_first(out, self.batch_first), finals(last)

    @classmethod
    def from_float(cls, mod: Any, use_precomputed_fake_quant: bool = False) -> Any:
        """Quantize a float ``nn.LSTM`` / ``nn.GRU``'s weights to qint8 (its ``qconfig``'s weight observer)."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for nn.LSTM and nn.GRU")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        from ember.ao.quantization.qconfig import default_dynamic_qconfig
        weight_observer_method = mod.qconfig.weight if mod.qconfig is not None else default_dynamic_qconfig.weight
        dtype = weight_observer_method().dtype
        if dtype is not ember.qint8:
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("dynamic quantization of an LSTM with projections is not supported")
        qmod = cls(mod.input_size, mod.hidden_size, num_layers=mod.num_layers, bias=mod.bias,  # type: ignore[call-arg]
                   batch_first=mod.batch_first, dropout=mod.dropout, bidirectional=mod.bidirectional, dtype=dtype)
        values = []
        for layer in range(mod.num_layers):
            for suffix in ("", "_reverse") if mod.bidirectional else ("",):
                ws = []
                for kind in ("ih", "hh"):
                    w = getattr(mod, f"weight_{kind}_l{layer}{suffix}")
                    obs = weight_observer_method()
                    obs(w)
                    ws.append(_quantize_weight(w.float(), obs))
                b_ih = getattr(mod, f"bias_ih_l{layer}{suffix}").detach() if mod.bias else None
                b_hh = getattr(mod, f"bias_hh_l{layer}{suffix}").detach() if mod.bias else None
                values.append(PackedParameter((ws[0], ws[1], b_ih, b_hh)))
        qmod._all_weight_values = ember.nn.ModuleList(values)
        return qmod


_REDUCE_RANGE = True     # fbgemm: 7-bit activations


def _batch_first(x: Any, batch_first: bool) -> Any:
    return x.transpose(0, 1) if batch_first else x


def _refuse_packed(x: Any) -> None:
    from ember.nn.utils.rnn import PackedSequence
    if isinstance(x, PackedSequence):
        raise NotImplementedError("dynamically quantized LSTM / GRU over a PackedSequence is not supported by ember")


class LSTM(RNNBase):
    """A dynamically quantized ``nn.LSTM`` (``quantize_dynamic`` makes it from a float one).

    Inputs and outputs are as ``nn.LSTM``'s: ``output, (h_n, c_n) = lstm(input, (h_0, c_0))``."""

    _GATES = 4

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"


    def forward(self, input: Any, hx: Any = None) -> Any:  # noqa: A002
        def states(h: Any) -> list[Any]:
            return [(h[0][k], h[1][k]) for k in range(h[0].shape[0])]

        def finals(fs: list[Any]) -> Any:
            return ember.stack([s[0] for s in fs]), ember.stack([s[1] for s in fs])

        def zeros(shape: tuple[int, ...]) -> Any:
            return ember.zeros(shape), ember.zeros(shape)
        return self._forward(input, hx, zeros, states, finals)


class GRU(RNNBase):
    """A dynamically quantized ``nn.GRU``: ``output, h_n = gru(input, h_0)``."""

    _GATES = 3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedGRU"


    def forward(self, input: Any, hx: Any = None) -> Any:  # noqa: A002
        def states(h: Any) -> list[Any]:
            return [h[k] for k in range(h.shape[0])]
        return self._forward(input, hx, ember.zeros, states, ember.stack)


def _set_float_modules() -> None:
    from ember import nn
    LSTM._FLOAT_MODULE = nn.LSTM
    GRU._FLOAT_MODULE = nn.GRU


_set_float_modules()
