"""``torch.ao.nn.intrinsic.qat``: fused modules for quantization-aware training."""
from ember.ao.nn.intrinsic.qat.modules import *  # noqa: F401,F403
