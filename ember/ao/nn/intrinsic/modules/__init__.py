from ember.ao.nn.intrinsic.modules.fused import *  # noqa: F401,F403
