"""``torch.quantization``: the older path of ``ember.ao.quantization``."""
from ember.ao.quantization import *  # noqa: F401,F403
