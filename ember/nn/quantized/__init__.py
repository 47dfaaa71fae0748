"""``torch.nn.quantized``: the older path of ``ember.ao.nn.quantized`` (PyTorch keeps it as an alias)."""
from ember.ao.nn.quantized import *  # noqa: F401,F403
from ember.ao.nn.quantized import dynamic  # noqa: F401
