"""``torch.ao.nn.intrinsic``: fused modules (``modules``) and their quantized versions (``quantized``)."""
from ember.ao.nn.intrinsic.modules.fused import *  # noqa: F401,F403
from ember.ao.nn.intrinsic import quantized  # noqa: F401,E402
