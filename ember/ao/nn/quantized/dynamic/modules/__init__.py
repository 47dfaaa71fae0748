from ember.ao.nn.quantized.dynamic.modules.linear import Linear  # noqa: F401
from ember.ao.nn.quantized.dynamic.modules.rnn import GRU, LSTM  # noqa: F401

__all__ = ["Linear", "LSTM", "GRU"]
