"""``ember.nn.parallel`` (``torch/nn/parallel``): ``DataParallel``. ``DistributedDataParallel`` comes with
``ember.distributed`` (issue 19)."""
from ember.nn.parallel.data_parallel import DataParallel, data_parallel  # noqa: F401
