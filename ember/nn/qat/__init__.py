"""``torch.nn.qat``: the older path of ``ember.ao.nn.qat`` (layers for quantization-aware training)."""
from ember.ao.nn.qat import *  # noqa: F401,F403
