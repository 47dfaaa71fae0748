"""``torch.ao.nn.quantized.dynamic``: layers with int8 weights whose activations are quantized on the fly."""
from ember.ao.nn.quantized.dynamic.modules import *  # noqa: F401,F403
from ember.ao.nn.quantized.dynamic.modules import __all__  # noqa: F401
