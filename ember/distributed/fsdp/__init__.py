"""``torch.distributed.fsdp``: fully sharded data parallelism is not implemented in ember yet. The policy classes
are the plain configuration values PyTorch's are; ``FullyShardedDataParallel`` and ``fully_shard`` say that FSDP is
missing when used."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ember.distributed._not_yet import Refused, refusing

__all__ = ["CPUOffloadPolicy", "FullyShardedDataParallel", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (the base of the offload policies)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    pin_memory: bool = True


class FullyShardedDataParallel(Refused):
    _name = "FullyShardedDataParallel (FSDP)"


fully_shard = refusing("fully_shard (FSDP2)")
