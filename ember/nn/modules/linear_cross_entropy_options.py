"""``LinearCrossEntropyOptions``: how ``F.linear_cross_entropy`` runs its chunked path, which processes the batch
in pieces so that the (batch x classes) logits are never held whole (a language model's vocabulary head).

``batch_chunk_size`` fixes the piece size; ``chunking_method`` ``"aspect_ratio[:f]"`` derives it from the shapes
(about ``batch * in_features / classes`` rows, rounded up to a power of two, divided by ``f``); ``acc_dtype`` is
the dtype the logits and gradients are accumulated in (float32 for half-precision inputs under ``"auto"``);
``allow_retain_graph`` keeps the gradients the forward precomputed so that backward may run twice."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import ember

__all__ = ["LinearCrossEntropyOptions"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# PyTorch's measured choices per (device type, dtype); anything else takes the fallback
_AUTO_DEFAULTS: dict[tuple[str, Any], _AutoDefault] = {
    ("cuda", ember.bfloat16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cuda", ember.float16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", ember.bfloat16): _AutoDefault("accurate", "aspect_ratio"),
    ("cpu", ember.float16): _AutoDefault("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")
_ACC_DTYPES = (ember.float16, ember.bfloat16, ember.float32, ember.float64)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError("acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")

    @staticmethod
    def _chunk_size(num_batches: int, in_features: int, num_classes: int, method: str) -> int:
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        inc = -(-num_classes // in_features)
        target = -(-num_batches // inc)
        power = 1 << (target - 1).bit_length()  # the next power of two >= target
        return min(power // factor, num_batches)

    def _adjust(self, num_batches: int, in_features: int, num_classes: int, dtype: Any,
                device: Any = None) -> LinearCrossEntropyOptions:
        """The options with every "auto" and None resolved for these shapes, dtype and device."""
        acc_policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        if acc_policy == "auto" or method == "auto":
            picks = _AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK) if device is not None else _AUTO_FALLBACK
            acc_policy = picks.acc_policy if acc_policy == "auto" else acc_policy
            method = picks.chunking_method if method == "auto" else method
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            size = self._chunk_size(num_batches, in_features, num_classes, method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != size:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') give "
                                 f"different chunk sizes ({self.batch_chunk_size} vs {size}); pass only one.")
        if self.acc_dtype is None:
            half = dtype in (ember.float16, ember.bfloat16) and device is not None and device.type in ("cpu", "cuda")
            acc_dtype = ember.float32 if self.acc_policy == "auto" and half else dtype
        else:
            acc_dtype = self.acc_dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=method,
                                   batch_chunk_size=max(1, size), acc_dtype=acc_dtype)
