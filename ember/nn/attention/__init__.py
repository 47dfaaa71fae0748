"""``ember.nn.attention`` (``torch/nn/attention``): which implementation ``scaled_dot_product_attention`` may use
(``SDPBackend``, ``sdpa_kernel``), and ``flex_attention``.

ember has two implementations of scaled dot-product attention on the CPU, as PyTorch has: the fused op
``_scaled_dot_product_flash_attention_for_cpu`` (``FLASH_ATTENTION``: 4-d inputs of one head size, no dropout,
no mask that needs a gradient) and the math path (BLAS matrix products and a softmax), which serves every other
case and every other backend choice. ``sdpa_kernel`` sets the allowed backends for the block (the dispatcher
layer reads them from ``ember.aten.context.global_context.sdp_enabled``) and refuses an empty list."""
from __future__ import annotations

import contextlib
from enum import IntEnum
from typing import Any, Iterator

from ember.aten.context import global_context

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """The implementations of ``scaled_dot_product_attention`` PyTorch knows (``at::SDPBackend``)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_enabled: list[list[SDPBackend]] = [list(SDPBackend)[1:]]


def _current_backends() -> list[SDPBackend]:
    return list(_enabled[-1])


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """Allow only ``backends`` for ``scaled_dot_product_attention`` inside the block."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    if not all(isinstance(b, SDPBackend) for b in backends):
        raise AssertionError("Backend must be an instance of SDPBackend")
    if not backends:
        raise RuntimeError("sdpa_kernel: at least one backend must be given")
    _enabled.append(backends)
    global_context.sdp_enabled = frozenset(int(b) for b in backends)
    try:
        yield
    finally:
        _enabled.pop()
        global_context.sdp_enabled = frozenset(int(b) for b in _enabled[-1])
