from ember.ao.nn.intrinsic.quantized.modules import *  # noqa: F401,F403
