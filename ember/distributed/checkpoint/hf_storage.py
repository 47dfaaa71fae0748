"""``torch.distributed.checkpoint.hf_storage``: not implemented in ember yet."""
from ember.distributed._not_yet import Refused


class HuggingFaceStorageReader(Refused):
    _name = "HuggingFaceStorageReader (torch.distributed.checkpoint)"


class HuggingFaceStorageWriter(Refused):
    _name = "HuggingFaceStorageWriter (torch.distributed.checkpoint)"
