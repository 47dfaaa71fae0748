"""``torch.distributed.checkpoint`` (sharded, distributed checkpoints): not implemented in ember yet; its names
refuse when used. A DDP program saves ``model.module.state_dict()`` from rank 0 with ``ember.save`` instead."""
from ember.distributed._not_yet import refusing

save = refusing("torch.distributed.checkpoint.save")
load = refusing("torch.distributed.checkpoint.load")
async_save = refusing("torch.distributed.checkpoint.async_save")
