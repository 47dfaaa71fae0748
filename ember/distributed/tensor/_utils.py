"""``torch.distributed.tensor._utils``: the shard arithmetic of DTensor, which ember does not have yet."""
from ember.distributed._not_yet import refusing

compute_local_shape_and_global_offset = refusing("compute_local_shape_and_global_offset (DTensor)")
