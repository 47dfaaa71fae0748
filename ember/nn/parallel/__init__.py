"""``ember.nn.parallel`` (``torch/nn/parallel``): ``DataParallel`` and ``DistributedDataParallel``."""
from ember.nn.parallel.data_parallel import DataParallel, data_parallel  # noqa: F401
from ember.nn.parallel.distributed import DistributedDataParallel  # noqa: F401
