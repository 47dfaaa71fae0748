"""``ember.nn.attention`` (``torch/nn/attention``): which implementation ``scaled_dot_product_attention`` may use
(``SDPBackend``, ``sdpa_kernel``), and ``flex_attention``.

ember has one implementation of scaled dot-product attention, PyTorch's math path (BLAS matrix products and a
softmax), which serves every backend choice: ``sdpa_kernel`` records the choice for the block, as PyTorch does,
and refuses an empty list."""
from __future__ import annotations

import contextlib
from enum import IntEnum
from typing import Any, Iterator

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
    try:
        yield
    finally:
        _enabled.pop()
