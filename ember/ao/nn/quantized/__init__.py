"""``torch.ao.nn.quantized``: modules over quantized tensors (and ``dynamic``: int8 weights, float activations)."""
from ember.ao.nn.quantized.modules import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules import __all__  # noqa: F401
from ember.ao.nn.quantized import dynamic  # noqa: F401,E402
