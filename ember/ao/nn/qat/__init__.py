"""``torch.ao.nn.qat``: layers for quantization-aware training."""
from ember.ao.nn.qat.modules import *  # noqa: F401,F403
