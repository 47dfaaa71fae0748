"""``ember.nn`` (mirrors ``torch.nn``): ``Module``, ``Parameter``, the layers, ``functional``, ``init``
and ``utils``."""
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn import attention, functional, init, utils  # noqa: F401
