"""``torch.distributed._composable.fsdp``: the same names as ``ember.distributed.fsdp``."""
from ember.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard  # noqa: F401
