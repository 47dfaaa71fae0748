"""``torch.nn.quantized.dynamic``: the older path of ``ember.ao.nn.quantized.dynamic``."""
from ember.ao.nn.quantized.dynamic import *  # noqa: F401,F403
