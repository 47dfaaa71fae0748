"""``RNN``, ``LSTM``, ``GRU`` and their cells (mirrors ``torch/nn/modules/rnn.py``).

The multi-layer modules hand their weights, in PyTorch's flat order, to the ``lstm`` / ``gru`` /
``rnn_tanh`` / ``rnn_relu`` ops (``ember/aten/composite/rnn.py``), which run each layer and direction as
one ``_rnn_layer`` kernel; the cells call ``lstm_cell`` & co., written over ordinary ops."""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

import math
import numbers
import warnings

import ember
from ember.nn import init
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence


if TYPE_CHECKING:
    from ember._tensor import Tensor

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: Any, input_size: Any, hidden_size: Any, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        fk = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                sfx = "_reverse" if direction == 1 else ""
                shapes = [(f"weight_ih_l{layer}{sfx}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{sfx}", (gate_size, real_hidden))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{sfx}", (gate_size,)), (f"bias_hh_l{layer}{sfx}", (gate_size,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{sfx}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(ember.empty(shape, **fk)))
                self._flat_weights_names.extend(n for n, _ in shapes)
                self._all_weights.append([n for n, _ in shapes])
        self.reset_parameters()

    @property
    def _flat_weights(self) -> Any:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> Any:
        return [[getattr(self, w) for w in ws] for ws in self._all_weights]

    def flatten_parameters(self) -> None:
        """Packs the weights into one buffer for cuDNN; nothing to do for ember's kernels."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # -------------------------------------------------------------- argument checks (PyTorch's messages)
    def check_input(self, input: Tensor, batch_sizes: Any) -> Any:  # noqa: A002
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Any) -> Any:  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        h = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, h)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Any,
                          msg: str = 'Expected hidden size {}, got {}') -> Any:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Any) -> Any:  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Any) -> Any:
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def __setstate__(self, d: Any) -> None:
        super().__setstate__(d)
        self.__dict__.setdefault("proj_size", 0)

    # -------------------------------------------------------------- forward (RNN and GRU; LSTM overrides)
    def _unpack(self, input: Tensor, name: Any) -> Any:  # noqa: A002
        """(data, batch_sizes, sorted_indices, unsorted_indices, is_batched) of a tensor or PackedSequence."""
        if isinstance(input, PackedSequence):
            return (*input, True)
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name == 'RNN' else ''}instead")
        return input, None, None, None, input.dim() == 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:  # noqa: A002
        name = type(self).__name__ if type(self).__name__ in ("RNN", "GRU") else "RNN"
        data, batch_sizes, sorted_indices, unsorted_indices, is_batched = self._unpack(input, name)
        packed = batch_sizes is not None
        batch_dim = 0 if self.batch_first else 1
        if not packed and not is_batched:
            data = data.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif not packed and hx is not None and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        if hx is None:
            hx = ember.zeros(self.get_expected_hidden_size(data, batch_sizes), dtype=data.dtype, device=data.device)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(data, hx, batch_sizes)
        op = {"RNN_TANH": ember.rnn_tanh, "RNN_RELU": ember.rnn_relu, "GRU": ember.gru}[self.mode]
        args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        if packed:
            output, hidden = op(data, batch_sizes, hx, *args)
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        output, hidden = op(data, hx, *args, self.batch_first)
        if not is_batched:
            output, hidden = output.squeeze(batch_dim), hidden.squeeze(1)
        return output, hidden


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Any) -> Any:  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Any) -> Any:  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Tensor, permutation: Any) -> Any:
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:  # noqa: A002
        data, batch_sizes, sorted_indices, unsorted_indices, is_batched = self._unpack(input, "LSTM")
        packed = batch_sizes is not None
        batch_dim = 0 if self.batch_first else 1
        if not packed and not is_batched:
            data = data.unsqueeze(batch_dim)
            if hx is not None:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        elif not packed and hx is not None and (hx[0].dim() != 3 or hx[1].dim() != 3):
            raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        # (PyTorch's order: a packed input's sizes are not checked, and its batch size stays a tensor each zeros reads)
        if hx is None:
            z = dict(dtype=data.dtype, device=data.device)
            layers = self.num_layers * (2 if self.bidirectional else 1)
            max_batch_size = batch_sizes[0] if packed else data.size(batch_dim)
            hx = (ember.zeros(layers, max_batch_size, self.proj_size or self.hidden_size, **z),
                  ember.zeros(layers, max_batch_size, self.hidden_size, **z))
            if not packed:
                self.check_forward_args(data, hx, batch_sizes)
        elif packed:
            hx = self.permute_hidden(hx, sorted_indices)
        else:
            self.check_forward_args(data, hx, batch_sizes)
            hx = self.permute_hidden(hx, sorted_indices)
        args = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        if packed:
            output, h, c = ember.lstm(data, batch_sizes, list(hx), *args)
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden((h, c), unsorted_indices))
        output, h, c = ember.lstm(data, list(hx), *args, self.batch_first)
        if not is_batched:
            output, h, c = output.squeeze(batch_dim), h.squeeze(1), c.squeeze(1)
        return output, (h, c)


# ------------------------------------------------------------------------------ cells
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: Any, hidden_size: Any, bias: Any, num_chunks: Any, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        fk = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input: Tensor, hx: Tensor, name: Any) -> Any:  # noqa: A002
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for h in (hx if isinstance(hx, (tuple, list)) else (hx,)):
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D instead")
        return input.dim() == 2

    def _single_state(self, input: Tensor, hx: Tensor, name: Any) -> Any:  # noqa: A002
        """(batched input, checked batched hidden state, is_batched) for the one-state cells."""
        is_batched = self._batched(input, hx, name)
        if not is_batched:
            input = input.unsqueeze(0)  # noqa: A001
        if hx is None:
            hx = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        return input, hx, is_batched


class RNNCell(RNNCellBase):
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: Any, hidden_size: Any, bias: bool = True, nonlinearity: str = 'tanh',
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:  # noqa: A002
        input, hx, is_batched = self._single_state(input, hx, "RNNCell")  # noqa: A001
        if self.nonlinearity == "tanh":
            ret = ember.rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = ember.rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: Any, hidden_size: Any, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:  # noqa: A002
        is_batched = self._batched(input, hx, "LSTMCell")
        if not is_batched:
            input = input.unsqueeze(0)  # noqa: A001
        if hx is None:
            z = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = ember.lstm_cell(input, list(hx), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size: Any, hidden_size: Any, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Any:  # noqa: A002
        input, hx, is_batched = self._single_state(input, hx, "GRUCell")  # noqa: A001
        ret = ember.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
