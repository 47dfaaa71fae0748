"""Global switches of the operator library (mirrors ``aten/src/ATen/Context.h``, ``at::globalContext()``):
what ``ember.backends`` sets and the kernels read."""
from __future__ import annotations

from typing import Any


class Context:
    __slots__ = ("benchmark_cudnn", "deterministic_cudnn", "deterministic_algorithms", "deterministic_warn_only",
                 "fill_uninitialized_memory", "sdp_enabled", "user_enabled_mkldnn",
                 "rnn_layers_as_pytorch_when_observed")

    def __init__(self) -> None:
        self.benchmark_cudnn = False      # ember.backends.cudnn.benchmark: convolutions time their algorithms
        self.deterministic_cudnn = False  # ember.backends.cudnn.deterministic
        self.deterministic_algorithms = False   # ember.use_deterministic_algorithms
        self.deterministic_warn_only = False
        self.fill_uninitialized_memory = True  # ember.utils.deterministic.fill_uninitialized_memory
        # the scaled_dot_product_attention backends allowed (at::SDPBackend values; ember.nn.attention.sdpa_kernel)
        self.sdp_enabled: frozenset[int] = frozenset({0, 1, 2, 3, 4})
        # ember.backends.mkldnn.enabled: where PyTorch's choice between its oneDNN and native CPU kernels changes a
        # result's dtype (LSTM under autocast, ember/amp/autocast_kernels.py), ember follows the same switch
        self.user_enabled_mkldnn = True
        # recurrent layers run as PyTorch's CPU code runs them while a mode observes them (Note [Observed recurrent
        # layers]); the ONNX exporter turns this off: ONNX has whole LSTM / GRU / RNN operators for the fused layer
        self.rnn_layers_as_pytorch_when_observed = True


def fill_empty_deterministic(xp: Any, a: Any) -> Any:
    """Under deterministic algorithms (with ``fill_uninitialized_memory``), memory a factory leaves uninitialized
    is filled so results cannot depend on it: NaN for floating and complex dtypes, the largest value for integers
    (True for bool), as PyTorch's ``fill_empty_deterministic_``."""
    if not (global_context.deterministic_algorithms and global_context.fill_uninitialized_memory) or a.size == 0:
        return a
    import numpy as np
    kind = np.dtype(a.dtype).kind
    if kind in "fcV" or a.dtype.name == "bfloat16":
        a[...] = np.nan
    elif kind == "b":
        a[...] = True
    else:
        a[...] = np.iinfo(a.dtype).max
    return a


global_context = Context()
