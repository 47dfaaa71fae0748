"""``torch.ao``: architecture optimization -- quantization (``ember.ao.quantization``) and its modules
(``ember.ao.nn``)."""
from ember.ao import nn  # noqa: F401
from ember.ao import quantization  # noqa: F401
