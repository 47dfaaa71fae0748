"""``torch.nn.intrinsic``: the older path of ``ember.ao.nn.intrinsic`` (fused modules)."""
from ember.ao.nn.intrinsic import *  # noqa: F401,F403
from ember.ao.nn.intrinsic import quantized  # noqa: F401
