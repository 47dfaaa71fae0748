"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``) and fused (``intrinsic``) modules."""
from ember.ao.nn import intrinsic, quantized  # noqa: F401
